"""Build (once) and cache the large pairs scripts/bench.py measures, with the real compiler.

    python scripts/bench_pairs.py [pair|seed ...]     # build what is missing, print the paths
    python scripts/bench_pairs.py shared [MB]

Outputs go to $Q9DIFF_CACHE/bench (else ~/.cache/q9diff/bench), never into the repository: each 1 GB
binary takes minutes of CPU to compile, so a benchmark run reuses what an earlier run built. A folder is
complete when its `done` file exists (written last), so an interrupted build is redone, not reused.

- `pair`: a stack of 4096x4096 MatMul + Relu, weights uint8 and activations uint16 (w8a16), ~1 GB of
  weights; `soc0.bin` (soc_model 0, VTCM 4 MB) and `soc77.bin` (soc_model 77, VTCM 8 MB) over the same
  weights, and `other.bin`: the same model with other weight values, compiled as `soc0.bin` (every
  weight differs, the settings do not).
- `seed`: the seed's scale, 6 parts of ~780 MB, each part a prompt (32 rows) and a token (1 row) graph
  over shared weights, other weights per part; `a/` soc_model 0 + VTCM 4 MB, `b/` soc_model 77 + VTCM 8 MB.
- `shared [MB]`: the pairs q9diff's speed goals are set on, built by ../shared/bench/make_pairs.py (its
  README; not part of this repository, used where it is here) into `shared/w8_<MB>M` (1000 by default):
  `soc0.bin` and `soc77.bin` (the same weights) and `seed2.bin` (soc77's settings, weights from another
  seed, quantized by ONNX Runtime's QNN config, so many 8-byte words repeat).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_PAIRS = REPO.parent / "shared" / "bench" / "make_pairs.py"
sys.path.insert(0, str(REPO))

N = 4096
PAIR_LAYERS = 60  # 60 x 4096 x 4096 uint8 = 1.007 GB of weights
SEED_PARTS, SEED_LAYERS = 6, 46  # 46 x 16 MiB = 772 MB per part, 4.6 GB per side
SIDES = {
    "soc0": {"soc_model": 0, "dsp_arch": "v73", "vtcm_mb": 4},
    "soc77": {"soc_model": 77, "dsp_arch": "v73", "vtcm_mb": 8},
}


def cache_dir() -> Path:
    base = (
        os.environ.get("Q9DIFF_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "q9diff"
    )
    return Path(base) / "bench"


def room(folder: Path, need: int) -> None:
    """Stop before a build that would fill the disk, saying how much it needs and how much is free."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < need:
        sys.exit(f"{folder}: {need / 1e9:.1f} GB needed to build, {free / 1e9:.1f} GB free")


def mlp(path: Path, layers: int, seed: int, rows: int = 1) -> None:
    """Write a QDQ w8a16 MatMul + Relu stack: the pattern the QNN EP compiles to fixed point."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def q_dq(name: str, scale: float, zero: int) -> str:
        inits.extend(
            [
                numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
                numpy_helper.from_array(np.array(zero, np.uint16), f"{name}_z"),
            ]
        )
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_dq"])
        )
        return f"{name}_dq"

    x = q_dq("x", 1 / 30000, 32768)
    for i in range(layers):
        inits += [
            numpy_helper.from_array(rng.integers(0, 255, (N, N), dtype=np.uint8), f"w{i}"),
            numpy_helper.from_array(np.array(0.0005, np.float32), f"s{i}"),
            numpy_helper.from_array(np.array(128, np.uint8), f"z{i}"),
        ]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}", f"s{i}", f"z{i}"], [f"wf{i}"]))
        nodes.append(helper.make_node("MatMul", [x, f"wf{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [q_dq(f"m{i}", 0.05, 0)], [f"h{i}"]))
        x = q_dq(f"h{i}", 0.05, 0)
    g = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, N])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, N])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])  # uint16 QDQ
    m.ir_version = 10
    onnx.save(m, path)


def compile_part(folder: Path, name: str, side: str, graphs: list[tuple[str, str]]) -> Path:
    """One context binary `name` from `graphs` [(graph name, model file in folder)], settings `side`."""
    from q9diff.backends.ort_qnn import OrtQnnBackend
    from q9diff.recipes.recipe import Recipe

    settings = dict(SIDES[side], weight_sharing=True) if len(graphs) > 1 else SIDES[side]
    recipe = Recipe.from_dict(
        {
            "schema": "q9diff.recipe/2",
            "backend": "ort-qnn",
            "settings": settings,
            "parts": [
                {
                    "name": name,
                    "output": f"{name}.bin",
                    "graphs": [{"name": g, "model": m} for g, m in graphs],
                }
            ],
        },
        "bench",
        path=folder / "recipe.json",
    )
    return OrtQnnBackend().compile(recipe, folder / f".out_{side}_{name}")[0]


def build_pair() -> Path:
    """soc0.bin, soc77.bin (same weights) and other.bin (other weights, soc0's settings)."""
    folder = cache_dir() / "pair"
    if (folder / "done").exists():
        return folder
    room(folder, 5 * 10**9)  # three 1 GB binaries, a 1 GB model at a time and the compiler's copies
    # Each model alone in its folder: the backend links a model's siblings beside it.
    for out, seed, side in (("soc0", 7, "soc0"), ("soc77", 7, "soc77"), ("other", 8, "soc0")):
        if (folder / f"{out}.bin").exists():
            continue
        model = folder / f"w{seed}" / "model.onnx"
        if not model.exists():
            model.parent.mkdir(exist_ok=True)
            mlp(model.with_suffix(".tmp"), PAIR_LAYERS, seed)
            os.replace(model.with_suffix(".tmp"), model)
        built = compile_part(folder, out, side, [("mlp", str(model.relative_to(folder)))])
        os.replace(built, folder / f"{out}.bin")
        shutil.rmtree(folder / f".out_{side}_{out}", ignore_errors=True)
    for seed in (7, 8):
        shutil.rmtree(folder / f"w{seed}", ignore_errors=True)  # 1 GB each, not needed once compiled
    (folder / "done").write_text("")
    return folder


def build_seed() -> Path:
    """a/part_i_of_6.bin and b/part_i_of_6.bin: prompt + token graph per part over shared weights."""
    folder = cache_dir() / "seed"
    if (folder / "done").exists():
        return folder
    room(folder, 11 * 10**9)  # 2 x 4.7 GB of parts, a part's two models and the compiler's copies
    for i in range(1, SEED_PARTS + 1):
        name = f"part_{i}_of_{SEED_PARTS}"
        if all((folder / side / f"{name}.bin").exists() for side in ("a", "b")):
            continue
        graphs = [
            (f"prompt_ar32_{i}_of_{SEED_PARTS}", "prompt.onnx"),
            (f"token_ar1_{i}_of_{SEED_PARTS}", "token.onnx"),
        ]
        for model, rows in (("prompt.onnx", 32), ("token.onnx", 1)):
            mlp(
                folder / model, SEED_LAYERS, 100 + i, rows
            )  # one seed per part: the same weights in both graphs
        for side, settings in (("a", "soc0"), ("b", "soc77")):
            if not (folder / side / f"{name}.bin").exists():
                built = compile_part(folder, name, settings, graphs)
                (folder / side).mkdir(exist_ok=True)
                os.replace(built, folder / side / f"{name}.bin")
                shutil.rmtree(folder / f".out_{settings}_{name}", ignore_errors=True)
    for model in ("prompt.onnx", "token.onnx"):
        (folder / model).unlink(missing_ok=True)
    (folder / "done").write_text("")
    return folder


def build_shared(mb: int = 1000) -> Path | None:
    """soc0.bin, soc77.bin and seed2.bin of ../shared/bench/make_pairs.py at `mb` MB of weights, built
    once (with this Python, which has onnx and onnxruntime-qnn); None where that script is not here."""
    folder = cache_dir() / "shared" / f"w8_{mb}M"
    if (folder / "done").exists():
        return folder
    if not SHARED_PAIRS.exists():
        return None
    room(folder, 10 * mb * 10**6 + 10**9)  # float and quantized models, three binaries, the compiler's copies
    env = dict(os.environ, PY=sys.executable)
    subprocess.run([sys.executable, str(SHARED_PAIRS), str(folder.parent), str(mb)], check=True, env=env)
    (folder / "done").write_text("")
    return folder


def main() -> None:
    which = sys.argv[1:] or ["pair"]
    if which[0] == "shared":
        print(build_shared(*[int(mb) for mb in which[1:2]]) or f"{SHARED_PAIRS}: not here")
        return
    for w in which:
        folder = {"pair": build_pair, "seed": build_seed}[w]()
        print(folder)


if __name__ == "__main__":
    main()
