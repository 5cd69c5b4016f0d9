"""Make fixtures/inprocess/: builds compiled in ONE process after other builds, as a user's loop does.

    python scripts/make_inprocess_fixtures.py            # rewrite fixtures/inprocess/
    python scripts/make_inprocess_fixtures.py --check    # rebuild into a temp dir, compare byte for byte

With this interpreter's onnxruntime-qnn (QAIRT 2.51, scripts/fixtures-constraints/qairt-2.51.txt), a tiny
seeded w8a8 model (models/tiny.onnx: one 16x16 MatMul and a ReLU, so each binary is small) is compiled
(scripts/measure_inprocess.py's child, one process per sequence):
- twice/1_generic_v73.bin then twice/2_generic_v73.bin: soc_model 0 with htp_arch 73, twice in one process:
  the first is its process's first compile (PICKLE/256), the second (PICKLE/257) still writes
  relaxed_precision_flag=false, as every generic build does when no explicit build came before it;
- loop/1_soc_43.bin then loop/2_generic_v73.bin: SM8550 then the generic v73 build in one process: the
  second writes relaxed_precision_flag=true, as an explicit build does;
- float/generic_v73.bin and float_loop/2_generic_v73.bin: the same two generic builds of the float model
  (models/tiny.float.onnx, no precision asked), fresh and after SM8550 in one process (that build is not
  kept): the second has fp16 tensors, the first none.
Each gets NAME.oracle.json (Qualcomm's own metadata, read as scripts/make_fixtures.py does). What the
compiler does in these orders on every arch is measured by scripts/measure_inprocess.py; these files are
the real examples the tests read.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from make_fixtures import write_oracles  # noqa: E402
from measure_inprocess import run_sequence  # noqa: E402

OUT = REPO / "fixtures" / "inprocess"
GENERIC = {"soc_model": "0", "htp_arch": "73"}
SEQUENCES = {
    "twice": [("1_generic_v73", GENERIC), ("2_generic_v73", GENERIC)],
    "loop": [("1_soc_43", {"soc_model": "43"}), ("2_generic_v73", GENERIC)],
    # the float model (no precision asked): the generic build after SM8550 is compiled fp16, a fresh one fp32
    "float": [("generic_v73", GENERIC)],
    "float_loop": [("_soc_43", {"soc_model": "43"}), ("2_generic_v73", GENERIC)],  # _: compiled, not kept
}


def tiny_model(path: Path) -> Path:
    """One 16x16 MatMul and a ReLU, seeded, w8a8 with ONNX Runtime's QNN QDQ config."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    rng = np.random.default_rng(51)
    w = helper.make_tensor(
        "w", TensorProto.FLOAT, [16, 16], (rng.standard_normal(256) * 0.25).astype(np.float32)
    )
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    float_path = path.with_name("tiny.float.onnx")
    onnx.save(model, float_path)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([{"x": rng.standard_normal((1, 16)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.items, None)

    config = get_qnn_qdq_config(
        model, Reader(), activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8
    )
    quantize(str(float_path), str(path), config)
    return path


def make(out: Path) -> None:
    (out / "models").mkdir(parents=True, exist_ok=True)
    quantized = tiny_model(out / "models" / "tiny.onnx")
    floating = quantized.with_name("tiny.float.onnx")
    work = Path(tempfile.mkdtemp(prefix="q9diff-inprocess-fixtures-"))
    try:
        for folder, builds in SEQUENCES.items():
            (out / folder).mkdir(exist_ok=True)
            model = floating if folder.startswith("float") else quantized
            jobs = [
                {"model": str(model), "options": o, "out": str(out / folder / f"{n}.bin")} for n, o in builds
            ]
            failed = [b["error"] for b in run_sequence(sys.executable, jobs, work) if "error" in b]
            if failed:
                raise SystemExit(f"{folder}: {failed[0]}")
            for name, _ in builds:
                if name.startswith("_"):
                    (out / folder / f"{name}.bin").unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = write_oracles(out)
    if failed:
        raise SystemExit("the oracle could not read: " + "; ".join(failed))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="rebuild into a temp dir and compare")
    args = ap.parse_args(argv)
    if not args.check:
        shutil.rmtree(OUT, ignore_errors=True)
        make(OUT)
        print(f"wrote {OUT}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        make(Path(tmp))
        theirs = sorted(p.relative_to(tmp) for p in Path(tmp).rglob("*") if p.is_file())
        ours = sorted(p.relative_to(OUT) for p in OUT.rglob("*") if p.is_file())
        bad = [
            str(p) for p in theirs if p not in ours or not filecmp.cmp(Path(tmp) / p, OUT / p, shallow=False)
        ]
        bad += [str(p) for p in ours if p not in theirs]
    print(f"{len(bad)} mismatch(es)" + (f": {', '.join(bad)}" if bad else ""), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
