"""What scripts/make_fixtures.py checks besides bytes: the package versions it runs with against its pins,
and, when a rebuild differs, the first stage of each fixture that moved.

Pins: scripts/fixtures-constraints/qairt-VERSION.txt, one per QAIRT runtime (pip constraints files, each
reading common.txt). The interpreter running make_fixtures.py is held to its own QAIRT's file, every
--python-for interpreter to its version's.

Stages: a fixture binary is made from float models, through calibration feeds, into quantized models,
compiled into the .bin, read into its .oracle.json. The first two leave no file of their own, so each
models/ folder has stages.json: for every model, a digest of its float model and of its calibration feeds,
with the versions and the CPU extensions they were made with (under 1 KB, written by every build).
--check rebuilds the models and compiles the binaries from the committed ones, so each stage is compared
on the committed inputs of the one before; `first_moved` names, for every file that differs, the stage.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable
from pathlib import Path

import numpy as np

CONSTRAINTS = Path(__file__).resolve().parent / "fixtures-constraints"
# What the models are made with, recorded in each stages.json (the compile child reports its own in the
# recipes' made_with).
MODEL_PACKAGES = ("numpy", "onnx", "onnxruntime", "protobuf", "ml_dtypes")


# ---------- pins ----------


def pins(qairt: str, path: Path | None = None) -> dict[str, str]:
    """package -> pinned version from qairt-QAIRT.txt and the files it reads (`-c`, `-r`)."""
    path = path or CONSTRAINTS / f"qairt-{qairt}.txt"
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith(("-c ", "-r ")):
            out |= pins(qairt, path.parent / line[3:].strip())
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"{path}: {raw!r} is not NAME==VERSION")
        out[_norm(name)] = version.strip()
    return out


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def installed(python: str, packages: Iterable[str]) -> dict[str, str | None]:
    """The versions `python` has installed (None: not installed), asked in an isolated child."""
    code = (
        "import json, sys\nfrom importlib import metadata\nout = {}\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n        out[p] = metadata.version(p)\n"
        "    except metadata.PackageNotFoundError:\n        out[p] = None\n"
        "print(json.dumps(out))"
    )
    run = subprocess.run([python, "-I", "-c", code, *packages], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise RuntimeError(f"{python}: cannot list its packages ({run.stderr.strip()[-200:]})")
    return json.loads(run.stdout)


def drift(pythons: dict[str, str]) -> list[str]:
    """One line per interpreter (QAIRT version -> python) whose packages differ from its pins."""
    lines = []
    for qairt, python in sorted(pythons.items()):
        file = CONSTRAINTS / f"qairt-{qairt}.txt"
        if not file.is_file():
            lines.append(f"QAIRT {qairt} ({python}): no pins, {file.relative_to(CONSTRAINTS.parent.parent)}")
            continue
        want = pins(qairt)
        have = installed(python, want)
        wrong = [f"{p} {have[p] or 'not installed'} (pinned {v})" for p, v in want.items() if have[p] != v]
        if wrong:
            lines.append(f"QAIRT {qairt} ({python}): {', '.join(wrong)}")
    return lines


# ---------- digests of the stages without a file ----------


def digest(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()[:16]


def feeds_digest(feeds: list[dict[str, np.ndarray]]) -> str:
    """Every feed in order: each input's name, dtype, shape and bytes."""

    def chunks():
        for feed in feeds:
            for name, value in feed.items():
                yield f"{name} {value.dtype.str} {value.shape}".encode()
                yield np.ascontiguousarray(value).tobytes()

    return digest(chunks())


def model_digest(model) -> str:
    """A float onnx.ModelProto as serialized."""
    return digest([model.SerializeToString()])


def cpu_flags() -> str:
    """This CPU's vector extensions (/proc/cpuinfo flags avx*, fma*, amx*, f16c), space-separated, by
    which ONNX Runtime's CPU kernels are chosen: the float decode behind the LLM calibration follows them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    flags = line.partition(":")[2].split()
    return " ".join(sorted(f for f in set(flags) if f.startswith(("avx", "fma", "amx", "f16c"))))


def write_stages(folder: Path, models: dict[str, dict[str, str]], extra: dict | None = None) -> None:
    """stages.json: the digests, the versions of MODEL_PACKAGES and the CPU's vector extensions."""
    from importlib import metadata

    made_with = {p: metadata.version(p) for p in MODEL_PACKAGES}
    data = {
        "made_with": made_with,
        "cpu": cpu_flags(),
        "models": dict(sorted(models.items())),
        **(extra or {}),
    }
    (folder / "stages.json").write_text(json.dumps(data, indent=1) + "\n")


def same_stages(a: Path, b: Path) -> bool:
    """Two stages.json say the same but for the CPU that made them (a record, not a stage)."""
    return {**_read(a), "cpu": None} == {**_read(b), "cpu": None} and bool(_read(a))


def cpu_note(committed: Path) -> str | None:
    """A line when this CPU's vector extensions differ from those the committed LLM models were made on."""
    made = _read(committed / "qwen-mini" / "models" / "stages.json").get("cpu")
    here = cpu_flags()
    if made is None or made == here:
        return None
    missing, extra = (
        sorted(set(made.split()) - set(here.split())),
        sorted(set(here.split()) - set(made.split())),
    )
    return (
        "this CPU's vector extensions differ from those the committed LLM models were made on "
        f"(missing: {' '.join(missing) or 'none'}; extra: {' '.join(extra) or 'none'}). ONNX Runtime picks "
        "its CPU kernels by them, and the float decode behind the calibration follows: on an AVX2-only CPU "
        "(emulated Haswell) the hidden states differ in their last bits and 3 of qwen-mini's 4 models move"
    )


# ---------- which stage moved ----------


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _same(a: Path, b: Path) -> bool:
    return a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()


def model_stage(built: Path, committed: Path, rel: Path) -> str | None:
    """The first stage of models/ file `rel` that moved (None: none did), from the stages.json beside it."""
    old, new = _read(committed / rel.parent / "stages.json"), _read(built / rel.parent / "stages.json")
    a, b = old.get("models", {}).get(rel.name, {}), new.get("models", {}).get(rel.name, {})
    if a.get("float") != b.get("float"):
        return "float model"
    if a.get("calibration") != b.get("calibration"):
        same_tokens = old.get("greedy_tokens") and old.get("greedy_tokens") == new.get("greedy_tokens")
        return "calibration feeds" + (" (the same greedy tokens: float values differ)" if same_tokens else "")
    if not _same(built / rel, committed / rel):
        return "quantized model"
    return None


def _made_with_moved(built: Path, committed: Path, recipe: Path) -> str:
    """'onnxruntime 1.24.2 -> 1.24.4, ...' between the committed and the rebuilt recipe's made_with."""
    a = _read(committed / recipe).get("made_with") or {}
    b = _read(built / recipe).get("made_with") or {}
    return ", ".join(f"{p} {a.get(p)} -> {b.get(p)}" for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p))


def _recipe_of(binary: Path, root: Path) -> Path:
    """The recipe beside a binary that builds it: NAME.recipe.json, else the folder's recipe.json."""
    own = binary.with_name(binary.stem + ".recipe.json")
    return own if (root / own).is_file() else binary.with_name("recipe.json")


def first_moved(built: Path, committed: Path, differing: list[str]) -> list[str]:
    """The stage each differing file (relative path) shows moved first. --check compiles the binaries from
    the committed models, so a binary that differs moved at the compiler, whatever its models did; where
    its recipe's made_with differs, the versions that do are named."""
    lines = []
    for rel in differing:
        path = Path(rel)
        if not (committed / rel).is_file() or not (built / rel).is_file():
            lines.append(f"{rel}: {'not committed' if (built / rel).is_file() else 'not rebuilt'}")
        elif path.parent.name == "models" and path.name != "stages.json":
            lines.append(f"{rel}: {model_stage(built, committed, path) or 'not made (only committed)'}")
        elif path.name == "stages.json":
            old, new = _read(committed / rel).get("made_with", {}), _read(built / rel).get("made_with", {})
            moved = [f"{p} {old.get(p)} -> {new.get(p)}" for p in MODEL_PACKAGES if old.get(p) != new.get(p)]
            lines.append(f"{rel}: {'made with ' + ', '.join(moved) if moved else 'digests (see the models)'}")
        elif path.suffix == ".bin" or path.name.endswith(".oracle.json"):
            binary = path.with_name(path.name.removesuffix(".oracle.json").removesuffix(".bin") + ".bin")
            if path.suffix == ".bin" or not _same(built / binary, committed / binary):
                stage = "binary (compiled from the committed models)"
            else:
                stage = "oracle (the binary is the same)"
            versions = _made_with_moved(built, committed, _recipe_of(binary, committed))
            lines.append(f"{rel}: {stage}" + (f"; made with {versions}" if versions else ""))
        elif path.name.endswith("recipe.json"):
            old, new = _read(committed / rel), _read(built / rel)
            keys = sorted(k for k in set(old) | set(new) if k != "made_with" and old.get(k) != new.get(k))
            versions = _made_with_moved(built, committed, path)
            what = [f"made with {versions}"] if versions else []
            lines.append(
                f"{rel}: recipe ({'; '.join(what + ([', '.join(keys) + ' differ'] if keys else []))})"
            )
        else:
            lines.append(f"{rel}: differs")
    return lines
