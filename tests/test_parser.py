"""The parser against the official oracle on every committed fixture, and its region maps."""

from __future__ import annotations

import pytest
from conftest import all_bins, oracle_of

from q9diff.compare.summary import options_vs_recorded, unknown_bytes
from q9diff.oracle.crosscheck import disagreements
from q9diff.read.binary import ContextBinary

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
        if opts["vtcm_size"] != str(
            g["vtcm_size"]
        ):  # an explicit SoC with no VTCM asked (fixtures/inprocess):
            # the options say the SoC's 8 MiB, the record 4 MiB; q9diff shows both, labelled
            shown = {(d["option"], d["recorded"]) for d in options_vs_recorded(cb, i)}
            assert ("vtcm_size", g["vtcm_size"]) in shown
        assert "soc_type" in opts and "arch" in opts
        ops = cb.ops(i)
        assert ops and ops[-1].kind == "@SyncOp"
        assert [op.index for op in ops] == list(range(len(ops)))


@pytest.mark.parametrize("path", BINS, ids=IDS)
def test_the_op_walk_is_the_same_with_numpy_and_without(path, monkeypatch):
    """With numpy loaded (a diff) the ops are found vectorized, without it (inspect) by a byte search:
    the same ops, regions and list ends either way."""
    import sys

    with_numpy = ContextBinary.open(path)
    walked = [with_numpy.layout(i) for i in range(len(with_numpy.graphs))], with_numpy.regions
    monkeypatch.delitem(sys.modules, "numpy")
    without = ContextBinary.open(path)
    assert walked == ([without.layout(i) for i in range(len(without.graphs))], without.regions)
    assert walked[0][0].ops


def test_the_op_walk_goes_on_by_byte_search_where_an_index_shows_up_early(tmp_path, monkeypatch):
    """A word inside op 2's record that reads as op 5's marker: op 5's first word then comes before op 4,
    the vectorized walk stops there and the byte search goes on, past it, to the real op 5."""
    import sys

    from q9diff.formats.pickles import OP_MARKER_XOR, OpRecord

    src = BINS[0]
    ops = ContextBinary.open(src).ops(0)
    assert ops[3].offset - ops[2].offset >= 12
    data = bytearray(src.read_bytes())
    marker = OpRecord.build({"marker": 5 ^ OP_MARKER_XOR, "type_word": 0})[:4]
    data[ops[2].offset + 8 : ops[2].offset + 12] = marker
    path = tmp_path / "early.bin"
    path.write_bytes(bytes(data))
    with_numpy = ContextBinary.open(path).ops(0)
    monkeypatch.delitem(sys.modules, "numpy")
    assert with_numpy == ContextBinary.open(path).ops(0) == ops
