"""Quantized QDQ models with one fault planted each, for `q9diff layers` (its tests and its measurement).

    python scripts/make_layers_faults.py OUT [--set test|measure] [--qwen-float DIR]

Model families no fixture uses, each a float model, its inputs, QDQ models (ONNX Runtime's quantizer with
QNN's config, weights QUInt8 per tensor, calibrated on seeded inputs and on the inputs it is run with, so
that a clean model saturates nowhere on them) and a q9diff recipe per model
(soc_model 77, v73, VTCM 8 MiB, O3):

- `decoder`, `decoder-b`: Qwen2.5-style decoders (scripts/fixture_models.py; 4 layers of 64 and 6 layers of
  96, other seeds than qwen-mini), one graph of 16 tokens, calibrated on the feeds Genie gives it while
  decoding; their inputs are the feeds of another prompt's first chunk.
- `convnet`, `convnet-b`: residual convnets (a stem, three blocks of two 3x3 convolutions with a skip, two
  strided convolutions between them, pooling, a classifier; 16 and 24 channels first) on seeded images.

Per family and quantization (w8a16: QUInt16 activations; w8a8: QUInt8), the clean model and one fault each,
in the first block and in a later one:
- `act_range`: an activation's range shrunk to a quarter (its scale x0.25: what falls outside clips);
- `act_zero_point`: an activation's zero point moved by a quarter of its range, in its QuantizeLinear and
  DequantizeLinear alike (the window slides; one end clips: QNN takes a tensor's encoding from its
  QuantizeLinear, so a DequantizeLinear's own zero point changes nothing, measured);
- `weight_scale`: a weight's scale doubled (every weight read twice as large);
- `weight_zero_point`: a weight's zero point moved by 16 steps (every weight read off by 16 steps).

`--set test` (the default, what tests/test_layers_faults.py runs): decoder and convnet, w8a16 with faults,
plus the convnet's clean w8a8. `--set measure` (scripts/measure_layers.py): every family, both quantizations,
with faults. OUT/manifest.json lists every model: its recipe, float model, inputs, fault and where the fault
first shows (`expected`: an activation fault's own tensor; a weight fault's consumer's output and node).

--qwen-float DIR writes the float models of fixtures/qwen-mini (scripts/make_fixtures.py's decoder, before
quantization) as DIR/part_{i}_of_2_ar{32,1}.onnx, the reference `q9diff layers` compares its parts against.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import fixture_models as fm  # noqa: E402

from q9diff.recipes import recipe as rcp  # noqa: E402

SETTINGS = rcp.Settings(soc_model=77, dsp_arch="v73", vtcm_mb=8, optimization_level=3)
DECODER = fm.DecoderConfig(
    hidden=64,
    layers=4,
    q_heads=4,
    kv_heads=2,
    head_dim=16,
    intermediate=128,
    vocab=512,
    context=64,
    seed=4242,
)
DECODER_B = fm.DecoderConfig(
    hidden=96, layers=6, q_heads=6, kv_heads=2, head_dim=16, intermediate=256, vocab=768, context=64, seed=777
)
AR = 16
KV_LIMIT = 8.0


@dataclass(frozen=True)
class Fault:
    kind: str  # act_range, act_zero_point, weight_scale, weight_zero_point
    target: str  # the activation (source tensor) or weight (initializer) it is planted on
    block: str  # "first" or "later"


# ---------- models ----------


def convnet(seed: int = 31, width: int = 16) -> onnx.ModelProto:
    """A residual convnet on [1, 3, 32, 32] images, `width`, 2x and 4x channels: He-initialised, biases
    small."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def conv(name: str, x: str, cin: int, cout: int, stride: int = 1) -> str:
        w = rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}.weight"))
        inits.append(
            numpy_helper.from_array((rng.standard_normal(cout) * 0.05).astype(np.float32), f"{name}.bias")
        )
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"{name}.weight", f"{name}.bias"],
                [name],
                name=name,
                pads=[1, 1, 1, 1],
                strides=[stride, stride],
                kernel_shape=[3, 3],
            )
        )
        return name

    def op(kind: str, name: str, ins: list[str]) -> str:
        nodes.append(helper.make_node(kind, ins, [name], name=name))
        return name

    def block(b: str, x: str, ch: int) -> str:
        h = op("Relu", f"{b}_relu1", [conv(f"{b}_conv1", x, ch, ch)])
        h = conv(f"{b}_conv2", h, ch, ch)
        return op("Relu", f"{b}_relu2", [op("Add", f"{b}_add", [x, h])])

    w1, w2, w3 = width, 2 * width, 4 * width
    x = op("Relu", "stem_relu", [conv("stem_conv", "image", 3, w1)])
    x = block("b1", x, w1)
    x = op("Relu", "d1_relu", [conv("d1_conv", x, w1, w2, stride=2)])
    x = block("b2", x, w2)
    x = op("Relu", "d2_relu", [conv("d2_conv", x, w2, w3, stride=2)])
    x = block("b3", x, w3)
    pooled = op("Flatten", "flat", [op("GlobalAveragePool", "pool", [x])])
    w = (rng.standard_normal((w3, 10)) * np.sqrt(1.0 / w3)).astype(np.float32)
    inits.append(numpy_helper.from_array(w, "fc.weight"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc.bias"))
    nodes.append(helper.make_node("Gemm", [pooled, "fc.weight", "fc.bias"], ["logits"], name="fc"))
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "convnet",
        [helper.make_tensor_value_info("image", f, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("logits", f, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", fm.OPSET)])
    model.ir_version = fm.IR_VERSION
    onnx.checker.check_model(model)
    return model


def images(seed: int, count: int) -> list[dict[str, np.ndarray]]:
    """Smooth seeded images (blurred noise), the kind of input a convnet's first layer sees."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.standard_normal((1, 3, 34, 34))
        x = (x[..., :-2, :-2] + x[..., 1:-1, 1:-1] + x[..., 2:, 2:]) / np.sqrt(3)
        out.append({"image": x[..., :32, :32].astype(np.float32)})
    return out


def decoder_feeds(cfg: fm.DecoderConfig, prompts: list[list[int]], steps: int) -> list[dict[str, np.ndarray]]:
    """The feeds the decoder's one graph receives while decoding `prompts` greedily as Genie does."""
    feeds = fm.decoding_calibration(cfg, 1, (AR,), prompts, steps, pad=cfg.vocab - 3)
    return feeds[(1, AR)]


def kv_ranges(cfg: fm.DecoderConfig) -> dict[str, list[dict]]:
    rng = [{"rmin": np.array(-KV_LIMIT, np.float32), "rmax": np.array(KV_LIMIT, np.float32)}]
    return {
        f"past_{k}_{i}_{d}": rng for i in range(cfg.layers) for k in ("key", "value") for d in ("in", "out")
    }


def quantize(model, calibration, out: Path, activations: str, overrides=None) -> Path:
    """QDQ with ONNX Runtime's QNN config: activations QUInt16 or QUInt8, weights QUInt8, per tensor."""
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(calibration)

        def get_next(self):
            return next(self.items, None)

    float_path = out.with_name(out.stem + ".float.tmp.onnx")
    onnx.save(model, float_path)
    try:
        config = get_qnn_qdq_config(
            model,
            Reader(),
            activation_type=QuantType[activations],
            weight_type=QuantType.QUInt8,
            init_overrides=overrides,
        )
        quantize(str(float_path), str(out), config)
    finally:
        float_path.unlink(missing_ok=True)
    return out


# ---------- faults ----------


def _init(model, name: str) -> onnx.TensorProto:
    return next(t for t in model.graph.initializer if t.name == name)


def _fresh(model, like: str, value: np.ndarray, tag: str) -> str:
    name = f"{like}_{tag}"
    model.graph.initializer.append(
        numpy_helper.from_array(value.astype(numpy_helper.to_array(_init(model, like)).dtype), name)
    )
    return name


def _activation_nodes(model, tensor: str) -> list:
    """The QuantizeLinear of an activation and the DequantizeLinear nodes reading it."""
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tensor)
    return [
        q,
        *(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == q.output[0]),
    ]


def _weight_dq(model, weight: str):
    quantized = f"{weight}_quantized"
    return next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == quantized)


def plant(model: onnx.ModelProto, fault: Fault) -> None:
    """Plant `fault` in the QDQ model, in new initializers (another tensor sharing a scale keeps its own)."""
    if fault.kind in ("act_range", "act_zero_point"):
        nodes = _activation_nodes(model, fault.target)
        scale, zero = nodes[0].input[1], nodes[0].input[2]
        s = numpy_helper.to_array(_init(model, scale))
        z = numpy_helper.to_array(_init(model, zero))
        if fault.kind == "act_range":
            new, slot = _fresh(model, scale, s * 0.25, "fault"), 1
        else:
            top = np.iinfo(z.dtype).max
            step = (int(top) + 1) // 4
            moved = int(z) + step if int(z) + step <= top else int(z) - step
            new, slot = _fresh(model, zero, np.array(moved), "fault"), 2
        for n in nodes:
            n.input[slot] = new
        return
    dq = _weight_dq(model, fault.target)
    if fault.kind == "weight_scale":
        dq.input[1] = _fresh(
            model, dq.input[1], numpy_helper.to_array(_init(model, dq.input[1])) * 2.0, "fault"
        )
    else:
        z = numpy_helper.to_array(_init(model, dq.input[2]))
        moved = int(z) + 16 if int(z) + 16 <= np.iinfo(z.dtype).max else int(z) - 16
        dq.input[2] = _fresh(model, dq.input[2], np.array(moved), "fault")


def expected(model: onnx.ModelProto, fault: Fault) -> dict:
    """Where the fault first shows: an activation fault on its own tensor (and the node computing it), a
    weight fault on the output of the node that reads the weight."""
    if fault.kind.startswith("act_"):
        node = next(n for n in model.graph.node if fault.target in n.output)
        return {"tensor": fault.target, "node": node.name}
    dq = _weight_dq(model, fault.target)
    node = next(n for n in model.graph.node if dq.output[0] in n.input)
    return {"tensor": node.output[0], "node": node.name}


# ---------- the families ----------


@dataclass(frozen=True)
class Family:
    """A model family: its float model, calibration, test inputs and the faults planted in it."""

    model: onnx.ModelProto
    calibration: list
    inputs: dict
    faults: tuple[Fault, ...]
    overrides: dict | None = None


def decoder_family(cfg: fm.DecoderConfig) -> Family:
    """A decoder in one graph of AR tokens, calibrated on decoding; faults in layer 0 and layer L-2."""
    model = fm.decoder_part(cfg, 1, 1, AR)
    rng = np.random.default_rng(cfg.seed)
    bos = cfg.vocab - 2
    prompts = [[bos, *map(int, rng.integers(0, cfg.vocab, n))] for n in (5, 11, 15, 20, 27)]
    test = decoder_feeds(cfg, [[bos, *map(int, rng.integers(0, cfg.vocab, AR - 1))]], steps=1)[0]
    calibration = [*decoder_feeds(cfg, prompts, steps=24), test]
    faults = []
    for block, layer in (("first", 0), ("later", cfg.layers - 2)):
        names = {
            kind: n.output[0]
            for n in model.graph.node
            for kind in ("gate", "up")
            if n.op_type == "MatMul" and f"layers.{layer}.{kind}_proj.weight" in n.input
        }
        faults += [
            Fault("act_range", names["up"], block),
            Fault("act_zero_point", names["gate"], block),
            Fault("weight_scale", f"layers.{layer}.down_proj.weight", block),
            Fault("weight_zero_point", f"layers.{layer}.q_proj.weight", block),
        ]
    return Family(model, calibration, test, tuple(faults), kv_ranges(cfg))


def convnet_family(seed: int, width: int) -> Family:
    faults = (
        Fault("act_range", "b1_relu1", "first"),
        Fault("act_zero_point", "stem_relu", "first"),
        Fault("weight_scale", "b1_conv2.weight", "first"),
        Fault("weight_zero_point", "stem_conv.weight", "first"),
        Fault("act_range", "b3_relu1", "later"),
        Fault("act_zero_point", "b3_relu2", "later"),
        Fault("weight_scale", "b3_conv2.weight", "later"),
        Fault("weight_zero_point", "d2_conv.weight", "later"),
    )
    test = images(seed + 99, 1)[0]
    return Family(convnet(seed, width), [*images(seed + 7, 16), test], test, faults)


FAMILIES = {
    "decoder": lambda: decoder_family(DECODER),
    "decoder-b": lambda: decoder_family(DECODER_B),
    "convnet": lambda: convnet_family(31, 16),
    "convnet-b": lambda: convnet_family(57, 24),
}
ACTIVATIONS = {"w8a16": "QUInt16", "w8a8": "QUInt8"}
KINDS = ("act_range", "act_zero_point", "weight_scale", "weight_zero_point")
BLOCKS = ("first", "later")
# family -> (quantizations with a clean model, quantizations with the faults planted too)
SETS = {
    "test": {"decoder": (("w8a16",), ("w8a16",)), "convnet": (("w8a16", "w8a8"), ("w8a16",))},
    "measure": {f: (tuple(ACTIVATIONS), tuple(ACTIVATIONS)) for f in FAMILIES},
}


def planned(which: str) -> list[str]:
    """`family/model` of every model a set holds, without building any (tests parametrize on it)."""
    names = []
    for family, (clean, faulty) in SETS[which].items():
        names += [f"{family}/{q}_clean" for q in clean]
        names += [f"{family}/{q}_{k}_{b}" for q in faulty for b in BLOCKS for k in KINDS]
    return names


def build_family(family: str, out: Path, quantizations: tuple, faulty: tuple) -> list[dict]:
    """The family's float model, inputs, clean QDQ models and faulty ones, with recipes; manifest rows."""
    folder = out / family
    folder.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES[family]()
    assert sorted((f.kind, f.block) for f in fam.faults) == sorted((k, b) for k in KINDS for b in BLOCKS)
    onnx.save(fam.model, folder / "float.onnx")
    np.savez(folder / "inputs.npz", **fam.inputs)
    rows = []
    for label in quantizations:
        clean = quantize(
            fam.model,
            list(fam.calibration),
            folder / f"{label}_clean.onnx",
            ACTIVATIONS[label],
            fam.overrides,
        )
        rows.append(_write(folder, f"{label}_clean", family, label, None, None))
        if label not in faulty:
            continue
        for fault in fam.faults:
            name = f"{label}_{fault.kind}_{fault.block}"
            model = onnx.load(clean)
            plant(model, fault)
            onnx.save(model, folder / f"{name}.onnx")
            rows.append(_write(folder, name, family, label, fault, expected(model, fault)))
    return rows


def _write(folder: Path, name: str, family: str, quant: str, fault: Fault | None, where: dict | None) -> dict:
    graph = rcp.GraphSource(name, f"{name}.onnx")
    recipe = rcp.Recipe(
        "ort-qnn",
        (rcp.Part(name, f"{name}.bin", (graph,)),),
        SETTINGS,
        notes=f"{family} {quant}: {fault.kind + ' in the ' + fault.block + ' block' if fault else 'clean'}",
    )
    rcp.write_atomic(folder / f"{name}.recipe.json", rcp.dump(recipe))
    row = {
        "name": name,
        "family": family,
        "quantization": quant,
        "recipe": f"{family}/{name}.recipe.json",
        "reference": f"{family}/float.onnx",
        "inputs": f"{family}/inputs.npz",
        "fault": None,
        "expected": where,
    }
    if fault is not None:
        row["fault"] = {"kind": fault.kind, "target": fault.target, "block": fault.block}
    return row


def qwen_float(folder: Path) -> None:
    """fixtures/qwen-mini's float models, as scripts/make_fixtures.py builds them before quantizing."""
    folder.mkdir(parents=True, exist_ok=True)
    for part in (1, 2):
        for ar in (32, 1):
            onnx.save(
                fm.decoder_part(fm.DecoderConfig(), part, 2, ar), folder / f"part_{part}_of_2_ar{ar}.onnx"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="folder for the models, inputs and manifest.json")
    parser.add_argument("--set", choices=tuple(SETS), default="test", help="test (default) or measure")
    parser.add_argument("--qwen-float", type=Path, metavar="DIR", help="write qwen-mini's float models there")
    args = parser.parse_args(argv)
    if args.qwen_float:
        qwen_float(args.qwen_float)
    if args.out is None:
        return 0
    rows = []
    for family, (quantizations, faulty) in SETS[args.set].items():
        rows += build_family(family, args.out, quantizations, faulty)
    (args.out / "manifest.json").write_text(json.dumps({"models": rows}, indent=2) + "\n")
    print(f"{len(rows)} models in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
