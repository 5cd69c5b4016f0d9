"""The HTML report drawn without a JSON round trip of the result (q9diff.cli.common._as_saved) is
drawn from what that round trip would have given: the saved form holds JSON's values."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.cli.common import _as_saved, _json_text
from q9diff.compare.diff import diff, diff_sets, set_to_json, to_json
from q9diff.format.openers import open_binary

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
    return [*out, set_to_json(diff_sets(qwen / "local", qwen / "reference"))]


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
        _same(_as_saved(data), json.loads(_json_text(data)))
