"""The parser against the official oracle on every committed fixture, and its region maps."""

from __future__ import annotations

import pytest
from conftest import all_bins, oracle_of

from q9diff.compare.summary import unknown_bytes
from q9diff.format.binary import ContextBinary
from q9diff.oracle.crosscheck import disagreements

BINS = all_bins()
IDS = [str(p.relative_to(p.parents[2])) for p in BINS]


@pytest.mark.parametrize("path", BINS, ids=IDS)
def test_every_oracle_field_matches(path):
    cb = ContextBinary.open(path)
    assert disagreements(cb, oracle_of(path)) == []


@pytest.mark.parametrize("path", BINS, ids=IDS)
def test_region_map_covers_every_byte_and_names_90_percent(path):
    cb = ContextBinary.open(path)
    pos = 0
    for r in cb.regions:
        assert r.offset == pos, r
        pos = r.end
    assert pos == cb.size == path.stat().st_size
    assert unknown_bytes(cb) <= 0.10 * cb.size


@pytest.mark.parametrize("path", BINS, ids=IDS)
def test_options_and_ops_decode(path):
    cb = ContextBinary.open(path)
    oracle = oracle_of(path)
    for i, g in enumerate(oracle["graphs"]):
        opts = cb.options(i)
        assert opts["vtcm_size"] == str(g["vtcm_size"])
        assert "soc_type" in opts and "arch" in opts
        ops = cb.ops(i)
        assert ops and ops[-1].kind == "@SyncOp"
        assert [op.index for op in ops] == list(range(len(ops)))
