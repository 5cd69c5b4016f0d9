"""The HTML report drawn without plotly's validators and without a JSON round trip of the result
(q9diff.present.charts, q9diff.present.as_json.as_saved) is what those would have given: plotly accepts
every figure as it is, its encoder writes the same text, and the saved form holds JSON's values."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.compare.diff import diff, to_json
from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.inputs import resolve
from q9diff.present import charts, embed, figures, html
from q9diff.present.as_json import as_saved, json_text
from q9diff.read.openers import open_binary

VARIANTS = FIXTURES / "variants"
PAIRS = [
    ("vtcm_2mb", "vtcm_8mb"),
    ("graphs_1", "graphs_2"),
    ("soc_0", "soc_77"),
    ("packing_off", "packing_on"),
]


@pytest.fixture(scope="module")
def results() -> list[dict]:
    """Results as the commands make them (before any JSON): pairs of variants and the qwen-mini set."""
    out = [to_json(diff(*(open_binary(VARIANTS / f"{x}.bin") for x in pair))) for pair in PAIRS]
    qwen = FIXTURES / "qwen-mini"
    return [*out, set_to_json(diff_sets(resolve(qwen / "local"), resolve(qwen / "reference")))]


def _same(a, b, where: str = "") -> None:
    """Equal and of the same types all the way down (1 == 1.0 == True and (1,) == [1] do not count)."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


class _Level(enum.IntEnum):
    O3 = 3


def test_the_saved_form_is_what_a_json_dump_and_load_gives(results):
    odd = {
        "tuple": (1, "a", (2.5, None)),
        "nan": [math.nan, math.inf, -math.inf, -0.0, 1e300],
        "keys": {1: "one", False: "no", None: "none", 2.5: "x"},
        "objects": [Path("/a/b"), _Level.O3, {"s": "x" * 3}],
        "plain": {"ops": ("Conv", "Add"), "flag": False, "big": 1 << 70},
    }
    for data in [*results, odd, {"only": "plain", "n": [1, 2.0, True]}]:
        _same(as_saved(data), json.loads(json_text(data)))


def _figures(data: dict) -> list[dict]:
    sets = [charts.set_effects(html._escaped(data))] if "parts" in data else []
    return sets + [f for part in data.get("parts", [data]) for f in html._figures(part)]


def test_every_figure_is_one_plotly_accepts_unchanged_and_writes_as_plotly_does(results):
    go = pytest.importorskip("plotly.graph_objects")
    import plotly.io as pio

    for data in results:
        for fig in _figures(as_saved(data)):
            checked = go.Figure(fig)  # validates every property: a wrong name or value raises
            assert checked.to_dict() == fig  # and coerces nothing: the same values
            text = pio.to_json(fig, validate=False, engine="json").replace("<", "\\u003c")
            assert figures.chart_json(fig) == text


def test_the_template_and_plotly_js_are_plotlys_own():
    pytest.importorskip("plotly")
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    ours = figures.figure([], {})["layout"]["template"]
    assert json.dumps(ours) == json.dumps(pio.templates[pio.templates.default].to_plotly_json())
    assert figures.plotly_data("plotly.min.js") == get_plotlyjs().encode()
    nan = figures.figure([{"type": "bar", "y": [math.nan, 1.0]}], {"title": {"text": "</script>"}})
    assert figures.chart_json(nan) == pio.to_json(nan, validate=False, engine="json")


def test_no_string_of_a_result_can_take_plotly_js_place():
    fig = figures.figure([], {"title": {"text": embed.PLOTLY_JS}})
    assert embed.PLOTLY_JS not in html.esc(embed.PLOTLY_JS) + figures.chart_json(fig)
