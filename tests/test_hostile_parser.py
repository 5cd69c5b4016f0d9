"""Hostile bytes: the parser's work is bounded by the file's size, and every read is checked."""

from __future__ import annotations

import json
import struct
import time

import pytest
from conftest import FIXTURES

from q9diff.errors import FormatError
from q9diff.format import flatbuf
from q9diff.format import structs as F
from q9diff.format.binary import ContextBinary


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
    data = _dag(1000)
    top = flatbuf.root(memoryview(data), 0, len(data), "dag.bin")
    start = time.perf_counter()
    with pytest.raises(FormatError, match="share children"):
        for t in top.tables(0):
            t.tables(0)
    assert time.perf_counter() - start < 1.0


def test_a_tree_of_the_same_shape_is_read():
    data = _dag(3)  # 3 x 3 tables in 40 bytes of references: within what the bytes hold
    top = flatbuf.root(memoryview(data), 0, len(data), "small.bin")
    assert sum(len(t.tables(0)) for t in top.tables(0)) == 9


def test_binary_info_without_api_versions_reads_them_as_unknown():
    data = bytearray((FIXTURES / "variants" / "soc_77.bin").read_bytes())
    cb = ContextBinary(bytes(data), "x")
    top = flatbuf.root(memoryview(data), F.METADATA_OFFSET, cb.header_regions[1].size, "x")
    info = top.table(0).table(F.WRAPPER_SLOTS["body"])
    vt = info.pos - struct.unpack_from("<i", data, info.pos)[0]
    for slot in (F.BINARY_INFO_SLOTS["core_api_version"], F.BINARY_INFO_SLOTS["backend_api_version"]):
        struct.pack_into("<H", data, vt + 4 + 2 * slot, 0)  # the slot is absent now
    cb = ContextBinary(bytes(data), "x")
    assert cb.core_api_version is None and "core_api_version" in cb.unknown
    assert cb.soc_model == 77


def test_a_fifo_is_refused_not_read(tmp_path):
    import os

    from conftest import q9diff_cli

    fifo = tmp_path / "part.bin"
    os.mkfifo(fifo)
    start = time.perf_counter()
    r = q9diff_cli("inspect", str(fifo), timeout=30)
    assert r.returncode == 2 and "regular file" in r.stderr, r.stderr
    assert time.perf_counter() - start < 20


def test_epcontext_node_names_that_are_not_utf8_are_shown_as_text(tmp_path):
    # Found by scripts/fuzz.py (seed 1202, case 13773): onnx hands back a node name that is not UTF-8 as
    # bytes, and naming the contexts of a two-node model raised a TypeError.
    onnx = pytest.importorskip("onnx")
    from conftest import q9diff_cli
    from onnx import helper

    from q9diff.format.openers import open_binary

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
