"""The first-divergence rule judges a tensor's own error against what its own grid and element count allow
(issue 55): a two-logit head's coin-toss SQNR is no divergence, near the line the verdict says
"borderline", the worst own error is named beside the first when far below it; and the static look at a
QDQ model's encodings names a layer left at another bit width and a Q/DQ pair that disagrees."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
from conftest import FIXTURES
from onnx import numpy_helper

from q9diff.layers.encodings import findings
from q9diff.layers.figures import Figures, Rule, judge, rule, spread_db
from q9diff.layers.result import Divergence, GraphLayers, LayersResult, Row
from q9diff.present.terminal_layers import verdict_line
from q9diff.runners.local import LocalRunner

MLP = FIXTURES / "variants" / "models" / "mlp.onnx"  # w8a16 QDQ
# scripts/make_layers_real.py's corpus of real trained models, where it was built
CORPUS = Path(os.environ.get("Q9DIFF_LAYERS_CORPUS", "/work/lcorpus"))


def f(
    local: float, n: int = 4096, grid: float | None = 90.0, cosine: float = 0.9999, sqnr: float | None = None
) -> Figures:
    """A tensor's figures; against the reference as far as its own error unless `sqnr` says otherwise."""
    return Figures(cosine, 0.1, 0.01, local if sqnr is None else sqnr, None, local, 1, n, grid)


def test_the_allowance_falls_with_the_element_count_and_a_coarse_grid():
    r = Rule(0, 0.0, 20.0, "test", grid_margin_db=10.0, spread=2.0)
    assert spread_db(2) == pytest.approx(4.343, abs=1e-3) and spread_db(20000) < 0.05
    assert r.allowance(f(0, n=10**6)) == pytest.approx(20.0, abs=0.02)
    assert r.allowance(f(0, n=2)) == pytest.approx(20.0 - 2 * 4.343, abs=0.01)  # two values: a coin toss
    assert r.allowance(f(0, n=10**6, grid=25.0)) == pytest.approx(15.0, abs=0.02)  # what its grid leaves


def test_a_two_logit_head_with_cosine_one_is_no_divergence_under_the_shipped_rule():
    shipped = rule()
    # the classifier's 2-logit output of issue 55: own SQNR 6.2 dB over two values, cosine 1.000000
    head = f(6.2, n=2, grid=70.0, cosine=1.0, sqnr=6.2)
    clean = [f(35.0), f(33.0), f(31.0)]
    assert judge([*clean, head], shipped).divergence is None
    # a tensor as close to the float model as that (SQNR 60 dB) is none whatever its own error
    assert judge([*clean, f(-4.7, sqnr=60.0)], shipped).divergence is None
    # the same error over a whole feature map is one
    assert judge([*clean, f(-4.7)], shipped).divergence.index == 3


def test_a_one_value_output_a_few_steps_of_its_grid_off_is_no_divergence_under_the_shipped_rule():
    shipped = rule()
    assert shipped.within_steps is not None and shipped.within_steps >= 1
    # openWakeWord's hey-marvin head, clean w8a16 (the fit half): its one sigmoid output reads 1e-6 on the
    # float model and 2.19 steps of its grid off on the HTP: own SQNR 0.1 dB, cosine 0
    out = replace(f(0.1, n=1, cosine=0.0, sqnr=0.0), steps=2.19)
    clean = [f(45.0), f(42.0), f(40.0)]
    assert judge([*clean, out], shipped).divergence is None
    # the same output 248 steps off with its own error far beyond what one value's SQNR can be by chance
    far = replace(out, steps=248.0, local_sqnr_db=-20.0, sqnr_db=-31.4)
    assert judge([*clean, far], shipped).divergence.index == 3
    # a tensor within the steps is not judged at all: it neither fires nor lowers the noise before the next
    assert judge([*clean, out, f(25.0)], shipped).worst == 4


def test_near_the_line_the_verdict_says_borderline_and_names_the_worst_beside_the_first():
    r = Rule(0, 0.0, 20.0, "test", borderline_db=3.0, worst_gap_db=10.0)
    figs = [f(35.0), f(19.0), f(30.0), f(3.1)]
    j = judge(figs, r)
    assert j.divergence.index == 1 and j.divergence.borderline and j.worst == 3
    quiet = judge([f(35.0), f(21.5), f(30.0)], r)
    assert quiet.divergence is None and quiet.near == 1

    def named(i: int, at: Figures) -> Divergence:
        allowance = r.allowance(at)
        return Divergence("g", f"t{i}", f"n{i}", "Conv", at, 35.0, 0.999, None, allowance, r.borderline(at))

    rows = tuple(Row(f"t{i}", f"n{i}", "Conv", i, 1, x) for i, x in enumerate(figs))
    g = GraphLayers("g", "p", "m", "r", {}, rows, (), (), 4, (), named(1, figs[1]), (), named(3, figs[3]))
    res = LayersResult("c", "r", {"candidate": "", "reference": ""}, r, (g,), (), 1.0)
    line = verdict_line(res)
    assert line.startswith("first divergence: t1 (Conv n1), own SQNR 19.0 dB (borderline), below the 20.0 dB")
    assert "; worst: t3 (Conv), own SQNR 3.1 dB;" in line
    again = LayersResult.from_json(res.to_json())
    assert verdict_line(again) == line


def test_a_qdq_pair_that_disagrees_is_named_with_what_the_htp_and_the_cpu_do(tmp_path):
    model = onnx.load(MLP)
    inits = {t.name: t for t in model.graph.initializer}
    dq = next(n for n in model.graph.node if n.name == "h_3_DequantizeLinear")
    moved = numpy_helper.to_array(inits[dq.input[2]]) + 100  # the DQ's zero point alone
    moved_init = numpy_helper.from_array(moved.astype(moved.dtype), "h_3_dq_zero_point")
    model.graph.initializer.append(moved_init)
    dq.input[2] = "h_3_dq_zero_point"
    path = tmp_path / "mlp_disagree.onnx"
    onnx.save(model, path)
    assert findings(MLP) == []
    (found,) = findings(path)
    assert found.kind == "qdq_mismatch" and found.tensor == "h_3" and found.node == "h_3_DequantizeLinear"
    assert "the HTP build takes the QuantizeLinear's" in found.text
    assert "a CPU debugger will flag" in found.text


@pytest.mark.skipif(
    not (CORPUS / "nudenet-320n" / "w8a16_bitwidth.onnx").is_file(),
    reason=f"the real-model corpus of scripts/make_layers_real.py is not built at {CORPUS}",
)
def test_the_static_look_names_a_layer_left_at_8_bits_in_a_real_w8a16_detector():
    assert findings(CORPUS / "nudenet-320n" / "w8a16_clean.onnx") == []
    (found,) = findings(CORPUS / "nudenet-320n" / "w8a16_bitwidth.onnx")
    assert found.kind == "bit_width" and found.tensor == "/model.15/m.0/cv1/act/Mul_output_0"
    assert "activations quantized to uint8, the model's other" in found.text and "to uint16" in found.text


ALEXA = CORPUS / "oww-alexa"


@pytest.mark.skipif(
    not (ALEXA / "w8a16_qdq_disagree.onnx").is_file() or LocalRunner().missing() is not None,
    reason=f"the real-model corpus of scripts/make_layers_real.py is not built at {CORPUS}, or no emulator",
)
def test_a_dequantize_the_htp_ignores_is_no_divergence_and_the_cpu_line_says_why():
    import q9diff as api

    model = ALEXA / "w8a16_qdq_disagree.onnx"
    (found,) = [x for x in findings(model) if x.kind == "qdq_mismatch"]
    report = api.layers(model, ALEXA / "float.onnx", inputs=ALEXA / "inputs.npz")
    g = report.to_json()["graphs"][0]
    assert report.passed  # the HTP build computes it as the clean build does
    assert g["cpu"] and g["cpu"][0]["tensor"] == found.tensor  # a CPU debugger would flag it
    assert "the HTP build takes the QuantizeLinear's" in g["cpu"][0]["why"]
