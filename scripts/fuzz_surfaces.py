"""Fuzz the surfaces round 5 of hostile input added or reopened (issue 43), one mode each, in one process:

- `--pte`: ExecuTorch programs built whole by scripts/pte_writer.py (not mutated bytes: valid programs of
  hostile shape) from the fixtures' payloads: 1-6 methods named from a hostile list (repeated `forward`,
  `/model/ctx_0`, `a/b`, `#`, 300 characters, bidi and format characters, empty), 0-4 delegates each of
  QNN or another backend naming shared, distinct or missing segments, compile specs kept, dropped or
  cut, segments off executorch's alignment. Each case writes a program and a variant of it (one payload
  swapped, or one byte outside the contexts flipped, or the same bytes) and checks: the opener reads or
  refuses (FormatError); every context it lists opens by its label; the diff of the two says identical
  exactly when the files are byte-identical (the hole where differing programs were "Identical", exit 0);
  the terminal, Markdown and HTML views show no raw control or format character from a name.
- `--runtime`: `--runtime` values: ELF libraries written here (32/64-bit, either byte order, the version
  in .rodata, cut at a read's edge, 5,000 digits long, missing, header and section fields set to hostile
  values, a sparse section far past the file) and versions typed (digits, spaces, prefixes). Each reads a
  version (the one written, where one was) or is refused with one line (UnknownRuntime).
- `--api`: the Python API (open, diff, target, will_load, doctor) called with hostile paths (a part over 255
  bytes, the whole over 4096, a NUL, FILE#NAME of hostile names, a folder, a FIFO, /dev/null, /proc files),
  devices and runtimes: a result, or a Q9Error whose message is one line.

Anything else is a fault: another exception (bucketed by type and the innermost q9diff frame), a wrong
verdict, a raw control character shown, a case slower than HANG_S. Every case is reproducible:

    python scripts/fuzz_surfaces.py --pte --cases 2000 --seed 1
    python scripts/fuzz_surfaces.py --runtime --cases 2000 --seed 1
    python scripts/fuzz_surfaces.py --api --cases 1000 --seed 1
    python scripts/fuzz_surfaces.py --pte --seed 1 --replay 17     # one case, with its traceback

Not part of the test suite (minutes); tests/test_hostile_round5.py runs a short round of each mode.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import pte_writer as W  # noqa: E402

from q9diff.errors import FormatError, Q9Error  # noqa: E402
from q9diff.formats import elf as E  # noqa: E402

HANG_S = {"pte": 10.0, "runtime": 2.0, "api": 5.0}  # a case slower than this is a hang
BIN = ROOT / "fixtures" / "variants" / "graphs_1.bin"
PTE = ROOT / "fixtures" / "pte"
NAMES = ("forward", "forward", "forward", "prefill", "/model/ctx_0", "a/b", "#", "a#b", "\\", "..", "",
         "x" * 300, "size 10\u061c 20", "\u202etxt", "\u2066x\u2069", "zero\u200bwidth", "\x1b[2Jansi",
         "line\u2028sep", "tag\U000e0041", "forward~2", "forward:0", "0", "1", "é" * 100)  # fmt: skip
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
)


class Faults:
    def __init__(self) -> None:
        self.cases = 0
        self.read = 0
        self.refused = 0
        self.buckets: Counter = Counter()
        self.first: dict[str, tuple[int, str]] = {}
        self.slowest = (None, 0.0)

    def add(self, i: int, bucket: str, detail: str) -> None:
        self.buckets[bucket] += 1
        self.first.setdefault(bucket, (i, detail[:300]))


def where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/q9diff/" in f.filename]
    f = frames[-1] if frames else None
    return "?" if f is None else f"{f.filename.split('/q9diff/')[-1]}:{f.lineno} {f.name}"


# ---- --pte: programs of hostile shape, through the opener, the diff and the views ---------------------


def program(rng: random.Random) -> tuple[list, list[bytes], list[int] | None]:
    p = W.parts()
    qnn = [rng.choice([p.qnn[k] for k in sorted(p.qnn)]) for _ in range(rng.randint(1, 4))]
    other = [rng.choice((p.xnnpack, b"\x01", b"x" * 300)) for _ in range(rng.randint(0, 2))]
    segments = [b"", *qnn, *other]
    methods = []
    for _ in range(rng.randint(1, 6)):
        delegates = []
        for _ in range(rng.randint(0, 4)):
            backend = rng.choice((W.P.QNN_BACKEND,) * 4 + ("XnnpackBackend", "\u202eQnn", "a/b"))
            spec = rng.choice((b"fixture", b"fixture", None, b"\x00" * 8, p.spec["fp16_sm8650"][:50]))
            if backend != W.P.QNN_BACKEND or rng.random() < 0.03:  # any segment, or one past the last
                segment = rng.randrange(len(segments) + (1 if rng.random() < 0.1 else 0))
            else:
                segment = rng.randint(1, len(qnn))
            delegates.append(W.Delegate(segment, backend, spec))
        methods.append(W.Method(rng.choice(NAMES), delegates))
    offsets = None
    if rng.random() < 0.2:  # segments off executorch's 128-byte grid, each after the one before
        offsets, pos = [], 0
        for s in segments:
            offsets.append(pos if s else 0)
            pos += len(s) + rng.choice((0, 1, 3, 64))
    return methods, segments, offsets


def variant(rng: random.Random, methods, segments, offsets, data: bytes) -> bytes:
    """The same program, or one payload swapped for another, or one byte flipped outside the contexts."""
    how = rng.choice(("same", "payload", "byte"))
    if how == "same":
        return data
    if how == "payload" and len(segments) > 1:
        swapped = list(segments)
        k = rng.randrange(1, len(segments))
        swapped[k] = rng.choice([s for s in W.parts().qnn.values()] + [W.parts().xnnpack])
        return W.write(methods, swapped, offsets=offsets)
    flipped = bytearray(data)
    at = rng.randrange(len(flipped))
    flipped[at] ^= 0xFF
    return bytes(flipped)


def pte_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    from q9diff import api
    from q9diff.compare.container import container_json
    from q9diff.read import openers

    methods, segments, offsets = program(rng)
    data = W.write(methods, segments, offsets=offsets)
    a, b = tmp / f"a{i}.pte", tmp / f"b{i}.pte"
    a.write_bytes(data)
    b.write_bytes(variant(rng, methods, segments, offsets, data))
    try:
        found = openers.contexts(openers.locate(a))
        json.dumps(container_json(openers.locate(a)))
    except FormatError:
        faults.refused += 1
        return
    labels = [name for name, _ in found]
    if len(set(labels)) != len(labels):
        faults.add(i, "labels repeat", repr(labels))
    for p in openers.container_parts(openers.locate(a)):
        p.open()
    try:
        report = api.diff(a, b)
    except FormatError:
        faults.refused += 1
        return
    same = a.read_bytes() == b.read_bytes()
    if report.identical != same:
        faults.add(i, "identical is not byte identity", f"identical={report.identical}, bytes same={same}")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        report.show(verbose=True)
    for view, text in (("terminal", shown.getvalue()), ("markdown", report.to_markdown()),
                       ("html", report.to_html())):  # fmt: skip
        if RAW.search(text):
            faults.add(i, f"raw control character in the {view} view", repr(RAW.search(text).group()))
    faults.read += 1


# ---- --runtime: libraries and typed versions ----------------------------------------------------------


def elf(rodata: bytes, bits: int = 64, little: bool = True, **fields) -> bytes:
    """An ELF shared object of three sections (none, .rodata, .shstrtab): the layout formats/elf.py reads,
    built with its definitions. `fields` overrides header fields (e_shoff, e_shnum ...) and `rodata_size`
    the size .rodata claims (a sparse section past the bytes given)."""
    names = b"\0.rodata\0.shstrtab\0"
    entry, head = E.section(bits, little), E.header(bits, little)
    header_size = E.IDENT_SIZE + head.sizeof()
    ro_at, names_at = header_size, header_size + len(rodata)
    table_at = names_at + len(names)
    table_at += -table_at % 8
    blank = {k: 0 for k in ("sh_flags", "sh_addr", "sh_link", "sh_info", "sh_addralign", "sh_entsize")}
    sections = [
        dict(blank, sh_name=0, sh_type=0, sh_offset=0, sh_size=0),
        dict(blank, sh_name=1, sh_type=1, sh_offset=ro_at, sh_size=fields.pop("rodata_size", len(rodata))),
        dict(blank, sh_name=9, sh_type=3, sh_offset=names_at, sh_size=len(names)),
    ]
    values = dict(e_type=3, e_machine=183, e_version=1, e_entry=0, e_phoff=0, e_shoff=table_at, e_flags=0,
                  e_ehsize=header_size, e_phentsize=0, e_phnum=0, e_shentsize=entry.sizeof(), e_shnum=3,
                  e_shstrndx=2) | fields  # fmt: skip
    ident = E.ELF_MAGIC + bytes([1 if bits == 32 else 2, 1 if little else 2, 1]) + bytes(9)
    out = ident + head.build(values) + rodata + names
    out += bytes(table_at - len(out))
    return out + b"".join(entry.build(s) for s in sections)


VERSIONS = ("2.48.40", "2.51.0", "2.47.0", "2." + "9" * 5000 + ".0", "2.48", "3.1.0", "2.48.40.1234", "")


def runtime_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    from q9diff.load.runtime import UnknownRuntime, parse

    if rng.random() < 0.3:  # typed
        text = rng.choice(("2.48", "QAIRT 2.48.40", "v2.51", " 2.49 ", "2.", "2.48.40_123", "qnn-2.47"))
        text = text.replace("48", "4" * rng.choice((2, 9, 10, 5000))) if rng.random() < 0.5 else text
        text = " " * rng.choice((0, 1, 10000)) + text
        try:
            parse(text)
            faults.read += 1
        except UnknownRuntime as exc:
            _one_line(i, exc, faults)
        return
    version = rng.choice(VERSIONS)
    pad = bytes(rng.choice((0, 10, (1 << 20) - 30, (1 << 20) - 5)))  # the version at a read's edge
    rodata = pad + (f"AISW_VERSION: {version}\0".encode() if version else b"no version here\0")
    if rng.random() < 0.3:
        rodata += b"v2.50.40.260831140417\0"
    fields = {}
    if rng.random() < 0.4:
        key = rng.choice(("e_shoff", "e_shnum", "e_shentsize", "e_shstrndx", "rodata_size"))
        fields[key] = rng.choice((0, 1, 2, 0xFFFF, 0xFFFFFFFF, 1 << 40, 1 << 30, 3))
    bits, little = rng.choice((64, 32)), rng.random() < 0.8
    try:
        data = elf(rodata, bits, little, **fields)
    except Exception:  # a field the layout cannot hold (a 40-bit offset in ELF32): not a case
        data = elf(rodata, bits, little)
        fields = {}
    path = tmp / f"lib{i}.so"
    path.write_bytes(data)
    if rng.random() < 0.1:
        os.truncate(path, len(data) + (1 << 30))  # a sparse GiB after it
    try:
        got = parse(str(path))
        faults.read += 1
        wanted = version.split(".")
        if not fields and len(wanted) >= 3 and all(w.isdigit() and len(w) <= 9 for w in wanted[:3]):
            if got.qairt != tuple(int(w) for w in wanted[:3]):
                faults.add(i, "a version read other than the one written", f"{got.qairt} for {version[:20]}")
    except UnknownRuntime as exc:
        _one_line(i, exc, faults)


def _one_line(i: int, exc: Exception, faults: Faults) -> None:
    faults.refused += 1
    if "\n" in str(exc) or len(str(exc)) > 1000:
        faults.add(i, "an error that is not one short line", str(exc)[:300])


# ---- --api: the public functions with hostile arguments ----------------------------------------------


def api_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    import q9diff

    paths = [str(BIN), "x" * 300, "/" + "/".join(["d" * 200] * 25), "a\0b", "a\udcffb", str(tmp),
             "/dev/null", "/proc/self/status", "/proc/self/mem", str(tmp / "fifo"), f"{BIN}#{'n' * 300}",
             f"{BIN}#graphs_1.bin", f"{BIN}#", str(tmp / "missing.bin"), f"{PTE}/two_delegates.pte#forward:1",
             str(PTE / "shared_weights.pte"), str(BIN), str(BIN)]  # fmt: skip
    if not (tmp / "fifo").exists():
        os.mkfifo(tmp / "fifo")
    runtimes = ("2.48", "2." + "9" * 5000, "/dev/zero", "/proc/self/status", "x" * 300, "/" + "x" * 300,
                str(tmp), "banana", "\0")  # fmt: skip
    devices = ("QCS9100", "\0", "x" * 5000, "\u202eQCS", "77", "-1", "99999999999999999999")
    pick = rng.choice
    calls = (
        lambda: q9diff.open(pick(paths)),
        lambda: q9diff.diff(pick(paths), pick(paths)),
        lambda: q9diff.target(pick(paths), pick(devices)),
        lambda: q9diff.will_load(pick(paths), runtime=pick(runtimes)),
        lambda: q9diff.will_load(pick(paths), target=pick(devices)),
        lambda: q9diff.doctor(pick(paths), runtime=pick(runtimes) if rng.random() < 0.5 else None),
    )
    try:
        result = rng.choice(calls)()
        if hasattr(result, "to_json"):
            json.dumps(result.to_json(), default=str)
        faults.read += 1
    except Q9Error as exc:
        _one_line(i, exc, faults)


MODES = {"pte": pte_case, "runtime": runtime_case, "api": api_case}


def figures(faults: Faults, start: float) -> dict:
    """One mode's run as the report gives it."""
    return {
        "cases": faults.cases,
        "read": faults.read,
        "refused": faults.refused,
        "faults": dict(faults.buckets),
        "first": faults.first,
        "slowest": faults.slowest,
        "seconds": round(time.perf_counter() - start, 1),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def report(out: dict, as_json: bool) -> int:
    """Every mode's figures, as JSON or a line each with the first case of each fault; 1 when any faulted."""
    if as_json:
        print(json.dumps(out, indent=2))
    else:
        for mode, r in out.items():
            counts = f"{r['cases']} cases ({r['read']} read, {r['refused']} refused) in {r['seconds']} s"
            rss, faults = f"peak RSS {r['peak_rss_mib']} MiB", r["faults"] or "none"
            print(f"{mode}: {counts}, slowest {r['slowest']}, {rss}; faults: {faults}")
            for bucket, (i, detail) in r["first"].items():
                print(f"  {bucket}: first case {i}: {detail}")
    return 1 if any(r["faults"] for r in out.values()) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for mode in MODES:
        ap.add_argument(f"--{mode}", action="store_true")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", type=int, help="run only this case number, with its traceback")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    chosen = [m for m in MODES if getattr(args, m)] or list(MODES)
    out = {}
    with tempfile.TemporaryDirectory(prefix="q9fuzz5-") as folder:
        for mode in chosen:
            faults = Faults()
            numbers = [args.replay] if args.replay is not None else range(args.cases)
            start = time.perf_counter()
            for i in numbers:
                rng = random.Random(f"{mode}:{args.seed}:{i}")
                tmp = Path(folder) / mode
                tmp.mkdir(exist_ok=True)
                t0 = time.perf_counter()
                try:
                    MODES[mode](i, rng, tmp, faults)
                except Exception as exc:  # the point: any other exception is a finding
                    faults.add(i, f"{type(exc).__name__} at {where(exc)}", str(exc))
                    if args.replay is not None:
                        traceback.print_exc()
                took = time.perf_counter() - t0
                if took > HANG_S[mode]:
                    faults.add(i, "slower than HANG_S", f"{took:.1f} s")
                if took > faults.slowest[1]:
                    faults.slowest = (i, round(took, 2))
                faults.cases += 1
                for f in tmp.glob("[ab]*.pte"):
                    f.unlink()
            out[mode] = figures(faults, start)
    return report(out, args.json)


if __name__ == "__main__":
    sys.exit(main())
