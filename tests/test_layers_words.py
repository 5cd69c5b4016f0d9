"""What the `layers` headline says of a borderline tensor and of a graph input, in words that match the
figures (issue 55): a clean real model's first BatchNormalization (openWakeWord's speech embedding at w8a8,
own SQNR 6.3 dB against an allowance of 14.9 dB) was called "just above" the line it lay 8.6 dB below; a
decoder's seeded attention mask, named first, read "(input )" and "check 's weight encoding"."""

from __future__ import annotations

from q9diff.layers.figures import Figures, Rule, judge
from q9diff.layers.result import Divergence, GraphLayers, LayersResult, Row
from q9diff.present.terminal_layers import next_line, verdict_line

RULE = Rule(0, 25.0, 19.0, "test", borderline_db=3.0)


def f(local: float, n: int = 4096) -> Figures:
    return Figures(0.9, 0.1, 0.01, local, None, local, 1, n, None)


def _result(figs: list[Figures], ops: list[str]) -> tuple[LayersResult, object]:
    j = judge(figs, RULE)

    def named(i: int | None) -> Divergence | None:
        if i is None:
            return None
        at = figs[i]
        node = "" if ops[i] == "input" else f"n{i}"
        return Divergence("g", f"t{i}", node, ops[i], at, 35.0, 0.999, None, RULE.allowance(at), False)

    rows = tuple(Row(f"t{i}", f"n{i}", op, i, 1, x) for i, (x, op) in enumerate(zip(figs, ops)))
    fd = named(j.divergence.index) if j.divergence else None
    g = GraphLayers("g", "p", "m", "r", {}, rows, (), (), len(figs), (), fd, (), None, named(j.near))
    return LayersResult("c", "r", {"candidate": "", "reference": ""}, RULE, (g,), (), 1.0), j


def test_a_borderline_tensor_below_its_allowance_is_said_below_it():
    # the first tensor after a near-exact one: below the floor, yet not 25 dB below the one before it
    res, j = _result([f(30.0), f(6.3)], ["Conv", "BatchNormalization"])
    assert j.divergence is None and j.near == 1
    assert verdict_line(res) == (
        "no divergence, one borderline: t1 (BatchNormalization n1) adds an own error of SQNR 6.3 dB, below "
        "the 19.0 dB its grid and 4096 values allow, but not 25 dB below the nodes before it"
    )


def test_a_borderline_tensor_above_its_allowance_is_said_just_above_it():
    res, j = _result([f(60.0), f(20.8)], ["Conv", "LayerNormalization"])
    assert j.divergence is None and j.near == 1
    assert verdict_line(res).endswith("SQNR 20.8 dB, just above the 19.0 dB its grid and 4096 values allow")


def test_a_graph_input_named_first_is_said_to_be_one():
    strict = Rule(0, 0.0, 19.0, "test")
    at = f(2.7)
    fd = Divergence("g", "attention_mask", "", "input", at, 40.0, 1.0, None, strict.allowance(at), False)
    rows = (Row("attention_mask", "", "input", 0, 1, at),)
    g = GraphLayers("g", "p", "m", "r", {}, rows, (), (), 1, (), fd, ())
    res = LayersResult("c", "r", {"candidate": "", "reference": ""}, strict, (g,), (), 1.0)
    assert verdict_line(res).startswith("first divergence: attention_mask (graph input), own SQNR 2.7 dB")
    assert next_line(res) == (
        "next: check graph input attention_mask's encoding (scale, zero point) against the values fed"
    )
