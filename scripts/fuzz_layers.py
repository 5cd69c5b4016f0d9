"""Fuzz what `q9diff layers` reads before its first compile (issue 52, round 6), one mode each:

- `--recipes`: recipes written here from the MLP fixture's, with hostile parts, graphs and model paths (a
  link to /dev/zero, a FIFO, a folder, `..`, absolute, 300 characters, NUL, a number, a list), hostile
  `#PART/GRAPH` selectors, and reference folders holding such models. Each case picks the candidate's
  graphs, pairs them with the reference and reads their inputs: a result, or a Q9Error of one line.
- `--npz`: `--inputs` archives built here: members whose .npy headers declare other shapes, terabytes,
  negative dimensions, object or structured dtypes, format versions 1-3, data cut short or padded, a
  deflated run of zeros, names without `.npy`, bytes flipped in the archive. Each is read as layers reads
  it (checked against the MLP's input) and as verify reads it: the arrays written (bit for bit), or a
  Q9Error of one line; never more memory than the archive's own arrays.
- `--external`: ONNX models whose initializers name external data at hostile locations (outside the
  folder, absolute, a FIFO, /dev/zero, a link inside or out, missing, cut short): read, tapped (the digest
  and the copy a compile reads) and listed as files a report may not overwrite, or a Q9Error of one line.

A case still running after HANG_S is stopped by an alarm and counted a fault (a FIFO opened plainly blocks
forever); another exception is bucketed by type and the innermost q9diff frame. Every case reproduces:

    python scripts/fuzz_layers.py --recipes --npz --external --cases 300 --seed 1
    python scripts/fuzz_layers.py --npz --seed 1 --replay 17     # one case, with its traceback

Not part of the test suite (minutes); tests/test_hostile_round6.py runs a short round of each mode.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import numpy as np  # noqa: E402
from fuzz_surfaces import Faults, figures, report, where  # noqa: E402

from q9diff.errors import Q9Error  # noqa: E402

HANG_S = 20
VARIANTS = ROOT / "fixtures" / "variants"
MLP_RECIPE = VARIANTS / "vtcm_8mb.recipe.json"
MLP_QDQ, MLP_FLOAT = VARIANTS / "models" / "mlp.onnx", VARIANTS / "models" / "mlp.float.onnx"
SHAPE = (1, 16, 128)  # the MLP's input x


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"still running after {HANG_S} s")


def _one_line(i: int, exc: Exception, faults: Faults) -> None:
    faults.refused += 1
    if "\n" in str(exc) or len(str(exc)) > 1000:
        faults.add(i, "an error that is not one short line", str(exc)[:300])


def _hostile_files(tmp: Path) -> dict[str, Path]:
    """Things a path may lead to: a FIFO, /dev/zero, a folder, a link outside, missing, a real model."""
    out = {"fifo": tmp / "fifo.onnx", "zero": tmp / "zero.onnx", "folder": tmp / "folder.onnx",
           "missing": tmp / "missing.onnx", "qdq": MLP_QDQ, "float": MLP_FLOAT,
           "junk": tmp / "junk.onnx", "empty": tmp / "empty.onnx"}  # fmt: skip
    if not out["fifo"].exists():
        os.mkfifo(out["fifo"])
        out["zero"].symlink_to("/dev/zero")
        out["folder"].mkdir()
        out["junk"].write_bytes(b"\x08\x07not a model" * 50)
        out["empty"].write_bytes(b"")
    return out


# ---- --recipes ----------------------------------------------------------------------------------------


def recipe_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    from q9diff.layers import targets

    files = _hostile_files(tmp)
    pick = rng.choice
    models = [str(p) for p in files.values()] + ["../x.onnx", "/dev/zero", "x" * 300, "a\0b.onnx", "", ".",
              "/" + "d" * 5000 + ".onnx", "models/mlp.onnx", "mlp.float.onnx"]  # fmt: skip
    recipe = json.loads(MLP_RECIPE.read_text())
    graph = recipe["parts"][0]["graphs"][0]
    graph["model"] = str(MLP_QDQ)
    roll = rng.random()
    if roll < 0.6:
        graph["model"] = pick(models + [7, None, ["a"], {"x": 1}])
    elif roll < 0.7:
        graph["name"] = pick(["", "x" * 300, "a/b", 5, None, "\u202e"])
    elif roll < 0.8:
        recipe["parts"] = pick([[], None, "x", [{}], [recipe["parts"][0]] * rng.randint(2, 50)])
    elif roll < 0.9:
        recipe[pick(["backend", "settings", "qairt_version"])] = pick([None, 5, "x" * 300, [], {"a": [1]}])
    folder = tmp / f"r{i}"
    folder.mkdir()
    (folder / "recipe.json").write_text(json.dumps(recipe))
    if rng.random() < 0.3:  # the model the recipe names beside it, linked to something hostile
        (folder / "mlp.float.onnx").symlink_to(pick(list(files.values())))
    selector = pick(
        ["", "", "#vtcm_8mb", "#vtcm_8mb/mlp", "#nope", "#" + "p" * 300, "#vtcm_8mb/", "#/", "##"]
    )
    ref_dir = tmp / f"ref{i}"
    ref_dir.mkdir()
    for name in rng.sample(list(files), rng.randint(0, 3)):
        (ref_dir / f"{name}.onnx").symlink_to(files[name])
    reference = pick(
        [
            str(MLP_FLOAT),
            str(MLP_FLOAT),
            str(MLP_FLOAT),
            str(ref_dir),
            str(folder),
            str(files["fifo"]),
            str(files["zero"]),
        ]
    )
    try:
        selected = targets.candidate_graphs(f"{folder / 'recipe.json'}{selector}")
        pairs, _, _ = targets.reference_pairs(reference, selected)
        targets.feeds_for(selected, pairs, reference, None, 0)
        targets.files_named(str(folder / "recipe.json"))
        faults.read += 1
    except Q9Error as exc:
        _one_line(i, exc, faults)


# ---- --npz ---------------------------------------------------------------------------------------------


def _member(rng: random.Random, array: np.ndarray) -> bytes:
    """An .npy of `array`, or one whose header lies about it."""
    b = io.BytesIO()
    roll = rng.random()
    if roll < 0.4:
        np.lib.format.write_array(b, array)
        return b.getvalue()
    head = np.lib.format.header_data_from_array_1_0(array)
    if roll < 0.55:
        head["shape"] = rng.choice([(1 << 20, 1 << 20, 9), (1, 16, -5), (), (0,), (1, 16, 129), (1 << 62,)])
    elif roll < 0.7:
        head["descr"] = rng.choice(["|O", [("a", "<f4")], "<U4", "|V8", ">f8", "<c8", "|b1", "<M8[s]"])
    data = array.tobytes()
    data = rng.choice([data, data[: rng.randint(0, len(data))], data + bytes(rng.randint(1, 64))])
    version = rng.choice([(1, 0), (1, 0), (2, 0), (3, 0)])
    writer = {(1, 0): np.lib.format.write_array_header_1_0, (2, 0): np.lib.format.write_array_header_2_0}
    if version in writer:
        writer[version](b, head)
    else:
        b.write(np.lib.format.magic(3, 0) + b"\x10\x00\x00\x00{'descr': '<f4'}")
    return b.getvalue() + data


def npz_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    from q9diff.layers.feeds import from_npz
    from q9diff.read.arrays import read_npz
    from q9diff.runners.base import RunnerError, TensorSpec

    values = np.random.default_rng(rng.randrange(1 << 30)).standard_normal(SHAPE)
    x = values.astype(rng.choice(["float32", "float32", "float16", "int32"]))
    path = tmp / f"in{i}.npz"
    honest = rng.random() < 0.25
    with zipfile.ZipFile(path, "w", rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])) as z:
        if honest:
            z.writestr("x.npy", _npy(x))
        else:
            for _ in range(rng.randint(0, 3)):
                name = rng.choice(["x.npy", "x.npy", "y.npy", "x", "../x.npy", "x" * 300 + ".npy"])
                z.writestr(name, _member(rng, x))
            if rng.random() < 0.2:  # a run of zeros that deflates a thousandfold
                z.writestr("x.npy", _npy(np.zeros((1, 16, 128 << rng.randint(0, 10)), np.float32)))
    if not honest and rng.random() < 0.3:
        raw = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw))
    spec = (TensorSpec("x", "float32", SHAPE),)
    for read in (lambda: from_npz(path, spec, "mlp").values, lambda: read_npz(path, RunnerError)):
        try:
            got = read()
            faults.read += 1
            if honest and not np.array_equal(got["x"], x):
                faults.add(i, "an array read other than the one written", str(got["x"].dtype))
        except Q9Error as exc:
            _one_line(i, exc, faults)
    path.unlink()


def _npy(a: np.ndarray) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, a)
    return b.getvalue()


# ---- --external ----------------------------------------------------------------------------------------


def external_case(i: int, rng: random.Random, tmp: Path, faults: Faults) -> None:
    import onnx

    from q9diff.layers import graph as gr
    from q9diff.layers import targets

    folder = tmp / f"m{i}"
    folder.mkdir()
    model = onnx.load(MLP_FLOAT)
    onnx.save(model, folder / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.bin", size_threshold=0)  # fmt: skip
    m = onnx.load(folder / "m.onnx", load_external_data=False)
    files = _hostile_files(tmp)
    roll = rng.random()
    if roll < 0.5:
        location = rng.choice(["../outside.bin", "/etc/hostname", "a/../w.bin", "x" * 300, "sub/w.bin",
                               "fifo.bin", "zero.bin", "link.bin", "missing.bin", "", "w.bin"])  # fmt: skip
        for t in m.graph.initializer:
            if rng.random() < 0.7:
                for e in t.external_data:
                    if e.key == "location":
                        e.value = location
        (folder / "sub").mkdir()
        os.link(folder / "w.bin", folder / "sub" / "w.bin")
        os.mkfifo(folder / "fifo.bin")
        (folder / "zero.bin").symlink_to("/dev/zero")
        (folder / "link.bin").symlink_to(rng.choice([folder / "w.bin", files["qdq"], files["fifo"]]))
    elif roll < 0.75:
        for t in m.graph.initializer:
            for e in t.external_data:
                if e.key in ("offset", "length") and rng.random() < 0.5:
                    e.value = rng.choice(["-1", "99999999999", "x", "", str(1 << 62)])
    else:
        size = (folder / "w.bin").stat().st_size
        os.truncate(folder / "w.bin", rng.choice([0, size // 2, size * 1000]))
    (folder / "m.onnx").write_bytes(m.SerializeToString())
    try:
        g = gr.read(folder / "m.onnx")
        gr.tapped_model(g, [s.name for s in g.sources][: rng.randint(0, 5)], tmp / f"out{i}")
        targets.files_named(str(folder / "m.onnx"))
        faults.read += 1
    except Q9Error as exc:
        _one_line(i, exc, faults)


MODES = {"recipes": recipe_case, "npz": npz_case, "external": external_case}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for mode in MODES:
        ap.add_argument(f"--{mode}", action="store_true")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", type=int, help="run only this case number, with its traceback")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    chosen = [m for m in MODES if getattr(args, m)] or list(MODES)
    signal.signal(signal.SIGALRM, _alarm)
    warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # archives with a name twice, on purpose
    out = {}
    with tempfile.TemporaryDirectory(prefix="q9fuzz6-") as folder:
        for mode in chosen:
            faults = Faults()
            numbers = [args.replay] if args.replay is not None else range(args.cases)
            start = time.perf_counter()
            tmp = Path(folder) / mode
            tmp.mkdir(exist_ok=True)
            for i in numbers:
                rng = random.Random(f"{mode}:{args.seed}:{i}")
                t0 = time.perf_counter()
                signal.alarm(HANG_S)
                try:
                    MODES[mode](i, rng, tmp, faults)
                except Hang as exc:
                    faults.add(i, "a hang", str(exc))
                except Exception as exc:  # the point: any other exception is a finding
                    faults.add(i, f"{type(exc).__name__} at {where(exc)}", str(exc))
                    if args.replay is not None:
                        traceback.print_exc()
                finally:
                    signal.alarm(0)
                took = time.perf_counter() - t0
                if took > faults.slowest[1]:
                    faults.slowest = (i, round(took, 2))
                faults.cases += 1
            out[mode] = figures(faults, start)
    return report(out, args.json)


if __name__ == "__main__":
    sys.exit(main())
