"""Hostile bytes: the parser's work is bounded by the file's size, and every read is checked. Hostile
records are built with the definitions the parser reads with (formats/, `.build()`)."""

from __future__ import annotations

import json
import struct

import pytest
from conftest import FIXTURES

from q9diff.errors import FormatError
from q9diff.formats import context_binary as CB
from q9diff.formats import flatbuffer_slots as S
from q9diff.formats import pickles as P
from q9diff.read import flatbuf
from q9diff.read.binary import ContextBinary

ONE_GRAPH = FIXTURES / "variants" / "graphs_1.bin"


def _dag(n: int) -> bytes:
    """A FlatBuffer whose root holds n references to one table that holds n references to one leaf:
    8 KB of bytes, n * n tables to a naive walk."""
    vt1, vt0, root = 4, 10, 16
    buf = bytearray(
        struct.pack("<I", root) + struct.pack("<3H", 6, 8, 4) + struct.pack("<2H", 4, 4) + b"\0\0"
    )
    v1 = root + 8
    mid = v1 + 4 + 4 * n
    v2 = mid + 8
    leaf = v2 + 4 + 4 * n
    buf += struct.pack("<iI", root - vt1, v1 - (root + 4))
    buf += struct.pack("<I", n) + b"".join(struct.pack("<I", mid - (v1 + 4 + 4 * i)) for i in range(n))
    buf += struct.pack("<iI", mid - vt1, v2 - (mid + 4))
    buf += struct.pack("<I", n) + b"".join(struct.pack("<I", leaf - (v2 + 4 + 4 * i)) for i in range(n))
    buf += struct.pack("<i", leaf - vt0)
    return bytes(buf)


def test_tables_sharing_children_are_refused_within_the_files_size():
    """The walk's work is counted (flatbuf.Budget: items read), not timed: refused once it has read what
    the file's bytes can hold, far from the 1,000,000 tables a naive walk of the DAG reads."""
    data = _dag(1000)
    top = flatbuf.root(memoryview(data), 0, len(data), "dag.bin")
    allowed = len(data) // 4 + 1024
    with pytest.raises(FormatError, match="share children"):
        for t in top.tables(0):
            t.tables(0)
    read = allowed - top.budget.left
    assert allowed < read <= allowed + 1000  # at most one vector past what the bytes hold


def test_a_tree_of_the_same_shape_is_read():
    data = _dag(3)  # 3 x 3 tables in 40 bytes of references: within what the bytes hold
    top = flatbuf.root(memoryview(data), 0, len(data), "small.bin")
    assert sum(len(t.tables(0)) for t in top.tables(0)) == 9


def test_binary_info_without_api_versions_reads_them_as_unknown():
    data = bytearray((FIXTURES / "variants" / "soc_77.bin").read_bytes())
    cb = ContextBinary(bytes(data), "x")
    top = flatbuf.root(memoryview(data), CB.METADATA_OFFSET, cb.header_regions[1].size, "x")
    info = top.get(S.METADATA_ROOT["binary_info"]).get(S.WRAPPER["body"])
    vt = info.pos - struct.unpack_from("<i", data, info.pos)[0]
    for name in ("core_api_version", "backend_api_version"):
        struct.pack_into("<H", data, vt + 4 + 2 * S.BINARY_INFO_V3[name].slot, 0)  # the slot is absent now
    cb = ContextBinary(bytes(data), "x")
    assert cb.core_api_version is None and "core_api_version" in cb.unknown
    assert cb.soc_model == 77


def test_a_fifo_is_refused_not_read(tmp_path):
    import os

    from conftest import q9diff_cli

    fifo = tmp_path / "part.bin"
    os.mkfifo(fifo)
    r = q9diff_cli("inspect", str(fifo), timeout=30)  # a hang (a read waiting for a writer) times out
    assert r.returncode == 2 and "regular file" in r.stderr, r.stderr


def test_epcontext_node_names_that_are_not_utf8_are_shown_as_text(tmp_path):
    # Found by scripts/fuzz.py (seed 1202, case 13773): onnx hands back a node name that is not UTF-8 as
    # bytes, and naming the contexts of a two-node model raised a TypeError.
    onnx = pytest.importorskip("onnx")
    from conftest import q9diff_cli
    from onnx import helper

    from q9diff.read.openers import open_binary

    blob = (FIXTURES / "variants" / "opt_1.bin").read_bytes()
    nodes = [
        helper.make_node(
            "EPContext", ["x"], [f"y{i}"], name=f"ctx{i}AAAA", ep_cache_context=blob, embed_mode=1
        )
        for i in range(2)
    ]
    data = helper.make_model(helper.make_graph(nodes, "g", [], [])).SerializeToString()
    path = tmp_path / "two.onnx"
    path.write_bytes(data.replace(b"ctx0AAAA", b"ctx0\xff\xfe\xfdA"))
    assert not isinstance(onnx.load(str(path)).graph.node[0].name, str)  # the case, as onnx reads it
    with pytest.raises(FormatError, match="holds 2: ctx0\ufffd\ufffd\ufffdA, ctx1AAAA"):
        open_binary(path)
    assert open_binary(f"{path}#ctx1AAAA").graphs[0].name == "mlp"
    r = q9diff_cli("inspect", str(path), "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    paths = [c["path"] for c in json.loads(r.stdout)["contexts"]]
    assert paths == [f"{path}#ctx0\ufffd\ufffd\ufffdA", f"{path}#ctx1AAAA"]


# -- records built with their definitions (formats/) ------------------------------------------------------


def _region(cb: ContextBinary, name: str):
    return next(r for r in cb.regions if r.name == name)


def _rebuilt(data: bytes, offset: int, definition, fields: dict) -> bytes:
    """`data` with the record at `offset` parsed, its `fields` (dotted paths) set, and built again in its
    place (the built bytes cut to the record's old length: the bytes after it stay)."""
    record = definition.parse(data[offset:])
    old = len(definition.build(record))
    for path, value in fields.items():
        *parents, name = path.split(".")
        holder = record
        for p in parents:
            holder = holder[p]
        holder[name] = value
    built = definition.build(record)[:old]
    return data[:offset] + built + data[offset + len(built) :]


def test_a_file_header_whose_blob_runs_past_the_file_is_refused():
    data = ONE_GRAPH.read_bytes()
    bad = _rebuilt(data, 0, CB.FileHeader, {"sizes.blob_size": len(data)})
    with pytest.raises(FormatError, match=r"at offset 0x20: expected a context blob of \d+ bytes at 0x1000"):
        ContextBinary(bad, "x.bin")


def test_a_blob_header_of_another_version_walks_the_blob_as_that_layout():
    """The blob header's Switch: version 3.3 says the word after the version is the first pickle, not a
    directory size; the 4.0 file then has no pickle there and is refused, naming where it looked."""
    data = ONE_GRAPH.read_bytes()
    word = ContextBinary(data, "x").blob_header.first.directory_size  # now read as the first pickle's offset
    bad = _rebuilt(data, 0x1000, CB.BlobHeader, {"major": 3, "minor": 3, "first": {"pickles_offset": word}})
    cb = ContextBinary(bad, "x.bin")
    assert cb.blob_header.layout == CB.PAGED and not cb.has_directory
    with pytest.raises(FormatError, match="expected the pickle of graph 0"):
        assert cb.records


def test_a_pickle_header_record_longer_than_its_pickle_is_refused():
    data = ONE_GRAPH.read_bytes()
    at = _region(ContextBinary(data, "x"), "PICKLE[0]/barrel/ident").offset
    bad = _rebuilt(data, at, P.HeaderRecord, {"words": 0xFFFF})
    with pytest.raises(
        FormatError, match=r"at offset 0x3000: expected pickle header records up to the end tag Zz"
    ):
        assert ContextBinary(bad, "x.bin").regions


def test_an_aux_record_longer_than_its_pickle_is_refused():
    data = ONE_GRAPH.read_bytes()
    cb = ContextBinary(data, "x")
    at = _region(cb, "PICKLE[0]/inner/aux/graph_version").offset
    rec = cb.pickle_record(0)
    words = (rec.offset + rec.size - at) // 4  # with its 8-byte head, 8 bytes past the record
    bad = _rebuilt(data, at, P.AuxRecord, {"words": words, "payload": bytes(4 * words)})
    with pytest.raises(FormatError, match=f"at offset {at:#x}: expected an aux record inside the pickle"):
        assert ContextBinary(bad, "x.bin").regions


def test_a_contents_record_pointing_outside_its_barrel_leaves_the_bytes_unexplained_not_misread():
    data = ONE_GRAPH.read_bytes()
    at = _region(ContextBinary(data, "x"), "PICKLE[0]/barrel/contents").offset
    bad = _rebuilt(data, at, P.HeaderRecord, {"body.inner_offset_16": 0xFFFFFFF})
    cb = ContextBinary(bad, "x.bin")
    assert not any("/inner/" in r.name for r in cb.regions)
    assert sum(r.size for r in cb.regions) == cb.size


def test_a_barrel_that_counts_and_holds_its_trailer_ends_its_regions_there():
    """QNN 2.31/2.34 write a 64-byte trailer the barrel's Sz counts (no fixture here has one): built from
    its definition at the end of the record, with Sz saying the record's size, it is its own region."""
    data = ONE_GRAPH.read_bytes()
    cb = ContextBinary(data, "x")
    rec = cb.pickle_record(0)
    at = _region(cb, "PICKLE[0]/barrel/sizes").offset
    bad = _rebuilt(data, at, P.HeaderRecord, {"body.length_words": rec.size // P.SIZES_UNIT})
    trailer = P.BarrelTrailer.build({"words": [64] + [0] * 13})
    end = rec.offset + rec.size
    bad = bad[: end - len(trailer)] + trailer + bad[end:]
    cb = ContextBinary(bad, "x.bin")
    assert _region(cb, "PICKLE[0]/barrel/trailer").offset == end - P.BARREL_TRAILER_SIZE
    assert sum(r.size for r in cb.regions) == cb.size
    assert cb.layout(0).op_kinds == ContextBinary(data, "y").layout(0).op_kinds
