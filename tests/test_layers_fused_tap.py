"""A tap that holds its reader's output (issue 55): in a w8a16 build with one Relu left at 8 bits, as ONNX
Runtime's quantizer makes a mixed-precision layer, the compiler computes the Conv before that Relu and the
Relu as one, and the Conv's tap comes back holding the Relu's values (on OriNet, cosine 0.1496 against the
Conv's float output, 0.9977 against the Relu's). Judged as the Conv's own error, it was a divergence on a
build that computes nothing wrong. It is now said to hold its reader's output and not judged; a weight
fault in that same Conv is still named there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from conftest import q9diff_cli as q9diff

from q9diff.runners.local import LocalRunner

pytestmark = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))


def _convnet() -> tuple:
    """Four 3x3 Conv + Relu pairs on a 16x16 image, seeded weights and calibration."""
    from onnx import TensorProto, numpy_helper
    from onnx import helper as h

    rng = np.random.default_rng(7)
    nodes, inits, x = [], [], "x"
    for i in range(4):
        w = (rng.standard_normal((8, 8 if i else 3, 3, 3)) * 0.3).astype(np.float32)
        b = (rng.standard_normal(8) * 0.1 - 0.2).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(h.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"conv{i}"], name=f"Conv{i}", pads=[1] * 4))
        nodes.append(h.make_node("Relu", [f"conv{i}"], [f"relu{i}"], name=f"Relu{i}"))
        x = f"relu{i}"
    graph = h.make_graph(
        nodes,
        "convnet",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [h.make_tensor_value_info(x, TensorProto.FLOAT, [1, 8, 16, 16])],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    calibration = [{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)]
    return model, calibration


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    import onnx

    sys.path.insert(0, str(ROOT / "scripts"))
    import make_layers_faults as mf
    from make_layers_real import mixed

    out = tmp_path_factory.mktemp("fused-tap")
    model, calibration = _convnet()
    onnx.save(model, out / "float.onnx")
    np.savez(out / "inputs.npz", x=calibration[0]["x"])
    mf.quantize(model, calibration, out / "mixed.onnx", "QUInt16", mixed("relu2"))
    faulty = onnx.load(out / "mixed.onnx")
    mf.plant(faulty, mf.Fault("weight_scale", "w2", "-"))
    onnx.save(faulty, out / "mixed_weight_scale.onnx")
    return out


def _layers(folder: Path, candidate: str) -> tuple[int, dict]:
    r = q9diff(
        "layers", str(folder / candidate), "--reference", str(folder / "float.onnx"),
        "--inputs", str(folder / "inputs.npz"), "--json",
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_a_tap_holding_its_relus_values_is_not_a_divergence(models):
    code, data = _layers(models, "mixed.onnx")
    (graph,) = data["graphs"]
    assert code == 0 and graph["first_divergence"] is None
    notes = " ".join(graph["notes"])
    assert "conv2 (holds relu2)" in notes
    conv2 = next(r for r in graph["tensors"] if r["tensor"] == "conv2")
    assert conv2["figures"] is None  # shown, not judged
    assert any(r["tensor"] == "relu2" and r["figures"] is not None for r in graph["tensors"])


def test_a_weight_fault_in_that_conv_is_still_named_there(models):
    code, data = _layers(models, "mixed_weight_scale.onnx")
    (graph,) = data["graphs"]
    assert code == 1
    assert graph["first_divergence"]["node"] == "Conv2"
    assert "holds" not in " ".join(graph["notes"])
