"""Make fixtures/dlc/: real DLCs written by onnxruntime-qnn 2.7.0 (QAIRT 2.51) from one small seeded MLP.

    python scripts/make_dlc_fixtures.py            # rewrite fixtures/dlc/
    python scripts/make_dlc_fixtures.py --out DIR  # write elsewhere (a check, a held-out set: --seed N)
    python scripts/make_dlc_fixtures.py --qairt-2.48 ort-2.4/bin/python [--only-older]  # + QAIRT 2.48

Graph DLCs are the QNN EP's IR dump (provider options dump_qnn_ir_dlc=1, dump_qnn_ir_dlc_dir), one per
session; the dump runs nothing. Every model is saved to the same path before it is dumped, because the
graph's name holds a hash of that path (docs: FORMAT_FACTS "DLC files"), so a pair differs only in what
its variant changes:

- mlp_fp32.dlc / mlp_fp32_target.dlc: the same model, soc_model 60 against soc_model 69, htp_arch 79,
  vtcm_mb 2 (a second apart: only timestamps differ);
- mlp_fp32_weight.dlc: one fp32 weight changed;
- mlp_fp32_qairt_2.48.dlc (with --qairt-2.48): mlp_fp32.dlc's model dumped by onnxruntime-qnn 2.4.0;
- mlp_fp32_op.dlc: a Tanh added after the output;
- mlp_w8a16.dlc, mlp_w8a8.dlc: the model quantized (QDQ, uint8 weights, uint16 or uint8 activations);
- cnn_w8a8_per_channel.dlc, cnn_w8a8_per_tensor.dlc, cnn_w8a8_stride.dlc: a small CNN (Conv, Relu,
  MaxPool, 1x1 Conv: the EP wraps it in Transposes and keeps stride, padding and perm as tensor
  attributes) quantized w8a8 with per-channel weights, per-tensor weights, and per-channel with the 1x1
  Conv's stride 2 instead of 1.

Each build runs in a fresh interpreter: an earlier compile in the same process shifts bytes of the next
(docs: QNN_FACTS "Builds made in one process").

Multi-SoC context DLCs (ep.context_enable=1 with lists in htp_arch and soc_model; embed mode 0): each an
EPContext model NAME.onnx and the DLC it names, NAME_qnn.bin:

- ctx_2soc: htp_arch 73,79, soc_model 60,69;
- ctx_3soc: htp_arch 73,75,79, soc_model 60,57,69 (a SoC added);
- ctx_2soc_vtcm: as ctx_2soc with vtcm_mb 2,8 (per-SoC VTCM);
- ctx_2soc_vtcm4: as ctx_2soc with vtcm_mb 4,4 (each records 4 MiB, as ctx_2soc's do; the compiler is given
  4 MiB instead of each SoC's whole VTCM);
- ctx_2soc_weight: as ctx_2soc with the weight of mlp_fp32_weight.dlc;
- ctx_2soc_other: htp_arch 73,75, soc_model 60,57 (as many SoCs as ctx_2soc, one of them another);
- ctx_2soc_qairt_2.49 (with --qairt-2.49 PYTHON, onnxruntime-qnn 2.5.0): ctx_2soc built by QAIRT 2.49, whose
  cache records are named backend.metadata<n> (QAIRT 2.48, onnxruntime-qnn 2.4.0, writes no DLC for SoC lists:
  an ordinary context binary for the first SoC);
- mlp_w8a16_compiled: mlp_w8a16.dlc's model built for one SoC (60, v73, VTCM 8 MB): a plain context binary
  (mlp_w8a16_compiled_qnn.bin), what a compile of that DLC adds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EP = "QNNExecutionProvider"
ROOT = Path(__file__).resolve().parent.parent
GRAPH_DLCS = {  # name -> (model variant, provider options beside the dump's)
    "mlp_fp32": ("fp32", {"soc_model": "60"}),
    "mlp_fp32_target": ("fp32", {"soc_model": "69", "htp_arch": "79", "vtcm_mb": "2"}),
    "mlp_fp32_weight": ("weight", {"soc_model": "60"}),
    "mlp_fp32_op": ("op", {"soc_model": "60"}),
    "mlp_w8a16": ("w8a16", {"soc_model": "60"}),
    "mlp_w8a8": ("w8a8", {"soc_model": "60"}),
    "cnn_w8a8_per_channel": ("cnn_pc", {"soc_model": "60"}),
    "cnn_w8a8_per_tensor": ("cnn_pt", {"soc_model": "60"}),
    "cnn_w8a8_stride": ("cnn_stride", {"soc_model": "60"}),
}
CONTEXT_DLCS = {
    "ctx_2soc": ("fp32", {"htp_arch": "73,79", "soc_model": "60,69"}),
    "ctx_3soc": ("fp32", {"htp_arch": "73,75,79", "soc_model": "60,57,69"}),
    "ctx_2soc_vtcm": ("fp32", {"htp_arch": "73,79", "soc_model": "60,69", "vtcm_mb": "2,8"}),
    "ctx_2soc_weight": ("weight", {"htp_arch": "73,79", "soc_model": "60,69"}),
    "ctx_2soc_vtcm4": ("fp32", {"htp_arch": "73,79", "soc_model": "60,69", "vtcm_mb": "4,4"}),
    "ctx_2soc_other": ("fp32", {"htp_arch": "73,75", "soc_model": "60,57"}),
    # one SoC: a plain context binary, mlp_w8a16.dlc's graph compiled
    "mlp_w8a16_compiled": ("w8a16", {"htp_arch": "73", "soc_model": "60", "vtcm_mb": "8"}),
}


def mlp(variant: str, seed: int):
    """The MLP 8 -> 16 -> 4 (MatMul, Add, Relu, MatMul, Add) as an ONNX model; `weight` changes w1[0, 0],
    `op` adds a Tanh after the output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    b2 = rng.standard_normal(4).astype(np.float32)
    if variant == "weight":
        w1[0, 0] += 0.5
    last = "y" if variant != "op" else "o2"
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["o"], name="fc2"),
        helper.make_node("Add", ["o", "b2"], [last], name="fc2_bias"),
    ]
    if variant == "op":
        nodes.append(helper.make_node("Tanh", ["o2"], ["y"], name="tanh"))
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def cnn(stride: int, seed: int):
    """A CNN 3x16x16 -> 4x(16/2/stride)^2: Conv 3x3 (8 channels), Relu, MaxPool 2x2, Conv 1x1 (4 channels,
    `stride`)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed + 2)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    w2 = rng.standard_normal((4, 8, 1, 1)).astype(np.float32)
    side = 8 // stride
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Conv", ["p", "w2"], ["y"], strides=[stride, stride], name="conv2"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, side, side])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (w2, "w2"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def quantized(model, path: Path, activation: str, seed: int, per_channel: bool = False) -> None:
    """`model` quantized to QDQ (uint8 weights, `activation` uint8 or uint16; per_channel: int8 weights,
    one scale per output channel), calibrated on 16 seeded inputs, saved at `path`."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(seed + 1)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(16)]

    class Feeds(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    float_path = path.with_name("float.onnx")
    onnx.save(model, float_path)
    quantize_static(
        str(float_path),
        str(path),
        Feeds(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt16 if activation == "w8a16" else QuantType.QUInt8,
        weight_type=QuantType.QInt8 if per_channel else QuantType.QUInt8,
        per_channel=per_channel,
        extra_options={"ActivationSymmetric": False, "WeightSymmetric": per_channel},
    )
    float_path.unlink()


def session(model_path: str, options: dict[str, str], context: Path | None = None) -> None:
    """One onnxruntime-qnn session over `model_path` (relative: the graph name hashes it as given)."""
    import onnxruntime as ort
    import onnxruntime_qnn as oq

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if context is not None:
        so.add_session_config_entry("ep.context_enable", "1")
        so.add_session_config_entry("ep.context_file_path", str(context))
        so.add_session_config_entry("ep.context_embed_mode", "0")
    if not hasattr(oq, "get_library_path"):  # onnxruntime-qnn before the plugin EP (2.4.0): a provider
        backend = {"backend_path": oq.get_qnn_htp_path(), **options}
        ort.InferenceSession(model_path, so, providers=[(EP, backend)])
        return
    if EP not in {d.ep_name for d in ort.get_ep_devices()}:
        ort.register_execution_provider_library(EP, oq.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP][:1]
    so.add_provider_for_devices(devices, {"backend_type": "htp", **options})
    ort.InferenceSession(model_path, so)


def fresh(options: dict[str, str], context: Path | None, python: str = sys.executable) -> None:
    """`session` over model.onnx in the current folder, in a child interpreter of its own (`python`)."""
    job = json.dumps({"options": options, "context": None if context is None else str(context)})
    subprocess.run([python, __file__, "--session", job], check=True, timeout=600)


def write_model(variant: str, work: Path, seed: int) -> None:
    """The variant's model at work/model.onnx, the one path every build reads."""
    import onnx

    if variant.startswith("cnn"):
        model = cnn(2 if variant == "cnn_stride" else 1, seed)
        quantized(model, work / "model.onnx", "w8a8", seed, per_channel=variant != "cnn_pt")
        return
    model = mlp("weight" if variant == "weight" else "op" if variant == "op" else "fp32", seed)
    if variant in ("w8a16", "w8a8"):
        quantized(model, work / "model.onnx", variant, seed)
    else:
        onnx.save(model, work / "model.onnx")


def make_older(out: Path, seed: int, python: str) -> list[Path]:
    """mlp_fp32_qairt_2.48.dlc: mlp_fp32.dlc's model and options dumped by another QAIRT (`python`: an
    interpreter with onnxruntime-qnn 2.4.0, scripts/fixtures-constraints/qairt-2.48.txt), from the same
    model path."""
    with tempfile.TemporaryDirectory(prefix="q9diff-dlc-") as tmp:
        work = Path(tmp)
        here = os.getcwd()
        os.chdir(work)
        try:
            write_model("fp32", work, seed)
            variant, options = GRAPH_DLCS["mlp_fp32"]
            fresh(
                {**options, "dump_qnn_ir_dlc": "1", "dump_qnn_ir_dlc_dir": str(work / "dump")}, None, python
            )
            (found,) = (work / "dump").glob("*.dlc")
            return [Path(shutil.copyfile(found, out / "mlp_fp32_qairt_2.48.dlc"))]
        finally:
            os.chdir(here)


def make_context_249(out: Path, seed: int, python: str) -> list[Path]:
    """ctx_2soc_qairt_2.49: ctx_2soc's model and options built by QAIRT 2.49 (`python`: an interpreter
    with onnxruntime-qnn 2.5.0, scripts/fixtures-constraints/qairt-2.49.txt). It names its cache records
    backend.metadata<n>, where 2.51 names them htp.cache.<soc>.0: the metadata's cacheList says which record
    is which SoC's."""
    with tempfile.TemporaryDirectory(prefix="q9diff-dlc-") as tmp:
        work = Path(tmp)
        here = os.getcwd()
        os.chdir(work)
        try:
            variant, options = CONTEXT_DLCS["ctx_2soc"]
            write_model(variant, work, seed)
            build = work / "build"
            build.mkdir()
            fresh(options, build / "ctx_2soc_qairt_2.49.onnx", python)
            return [Path(shutil.copyfile(f, out / f.name)) for f in sorted(build.iterdir())]
        finally:
            os.chdir(here)


def make(out: Path, seed: int) -> list[Path]:
    """Every fixture into `out`; the files written."""
    import onnxruntime_qnn as oq

    print(f"onnxruntime-qnn {oq.__version__}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="q9diff-dlc-") as tmp:
        work = Path(tmp)
        here = os.getcwd()
        os.chdir(work)
        try:
            for name, (variant, options) in GRAPH_DLCS.items():
                write_model(variant, work, seed)
                dump = work / f"dump_{name}"
                time.sleep(1.1)  # a second apart: two dumps in one second are byte-identical
                fresh({**options, "dump_qnn_ir_dlc": "1", "dump_qnn_ir_dlc_dir": str(dump)}, None)
                (found,) = dump.glob("*.dlc")
                written.append(Path(shutil.copyfile(found, out / f"{name}.dlc")))
            for name, (variant, options) in CONTEXT_DLCS.items():
                write_model(variant, work, seed)
                build = work / f"build_{name}"
                build.mkdir()
                fresh(options, build / f"{name}.onnx")
                for f in sorted(build.iterdir()):
                    written.append(Path(shutil.copyfile(f, out / f.name)))
        finally:
            os.chdir(here)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "fixtures" / "dlc")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--qairt-2.48", dest="older", metavar="PYTHON", help="also mlp_fp32_qairt_2.48.dlc, by PYTHON"
    )
    ap.add_argument(
        "--qairt-2.49", dest="older_context", metavar="PYTHON", help="also ctx_2soc_qairt_2.49, by PYTHON"
    )
    ap.add_argument("--only-older", action="store_true", help="with --qairt-2.48/2.49: those files alone")
    ap.add_argument("--session", help=argparse.SUPPRESS)  # the child side of fresh()
    args = ap.parse_args()
    if args.session:
        job = json.loads(args.session)
        session("model.onnx", job["options"], None if job["context"] is None else Path(job["context"]))
        return
    files = [] if args.only_older else make(args.out, args.seed)
    if args.older:
        files += make_older(args.out, args.seed, args.older)
    if args.older_context:
        files += make_context_249(args.out, args.seed, args.older_context)
    for f in files:
        print(f"{f.stat().st_size:>9,}  {f}")
    print(f"{sum(f.stat().st_size for f in files):>9,}  total")


if __name__ == "__main__":
    main()
