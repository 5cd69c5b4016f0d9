"""formats/ is the spec the parser reads with (issue 37): a definition changed in a copy changes what the
parser reads; every definition parses and builds back the same bytes of every fixture and real binary;
the compiled parsers of hot definitions agree with the interpreted ones; variants built with `.build()`."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, all_bins

from q9diff.formats import containers as C
from q9diff.formats import context_binary as CB
from q9diff.formats import pickles as P
from q9diff.read import parse
from q9diff.read.binary import ContextBinary
from q9diff.read.openers import contexts, locate
from q9diff.read.sites import record_sites

FORMATS = Path(__import__("q9diff.formats").formats.__file__).parent
REAL = FIXTURES.parent.parent / "shared" / "real" / "binaries"
SAMPLE = FIXTURES / "variants" / "graphs_1.bin"


def _every_context() -> list[tuple[str, ContextBinary]]:
    files = all_bins() + (sorted(p for p in REAL.iterdir() if p.is_file()) if REAL.is_dir() else [])
    out = []
    for path in files:
        try:
            out += [(f"{path.name}#{name}", cb) for name, cb in contexts(locate(path))]
        except Exception:  # not a context binary, or a container without one (the negative real samples)
            continue
    return out


# -- (1) the parser reads with formats/: change a definition in a copy, and what it reads changes ------

READ = """
import importlib.util, json, sys
copy = sys.argv[1]
spec = importlib.util.spec_from_file_location("q9diff.formats", copy + "/__init__.py",
                                              submodule_search_locations=[copy])
module = importlib.util.module_from_spec(spec)
sys.modules["q9diff.formats"] = module
spec.loader.exec_module(module)
from q9diff.read.binary import ContextBinary
cb = ContextBinary.open(sys.argv[2])
g = cb.graphs[0]
print(json.dumps({"formats": module.__file__, "soc_model": cb.soc_model, "vtcm_size": g.vtcm_size,
                  "optimization_level": g.optimization_level, "kinds": list(cb.op_kinds(0)[:8]),
                  "options": len(cb.options(0))}))
"""

EDITS = {
    # a FlatBuffer slot: socModel read from slot 9 (numGraphs) instead of 16
    "soc_model": ("flatbuffer_slots.py", '"soc_model": Field(16, Int32ul)', '"soc_model": Field(9, Int32ul)'),
    # a record's field order: graphBlobInfo's VTCM size and optimization level swapped
    "blob_info": (
        "context_binary.py",
        '    "vtcm_size" / Int32ul,  # bytes (the header\'s comment says MB)\n'
        '    "optimization_level" / Int32ul,  # 0 when not set\n',
        '    "optimization_level" / Int32ul,\n    "vtcm_size" / Int32ul,\n',
    ),
    # the op record's type field: a narrower mask
    "op_type": ("pickles.py", "OP_TYPE_MASK = 0x0FFFFFFF", "OP_TYPE_MASK = 0x3"),
    # a tag of the header's tag dispatch
    "options_tag": ("pickles.py", 'TAG_OPTIONS = b"Op"', 'TAG_OPTIONS = b"Xx"'),
}


def _read_with(folder: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", READ, str(folder), str(SAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_definition_changed_in_a_copy_changes_what_the_parser_reads(edit, tmp_path):
    copy = tmp_path / "formats"
    shutil.copytree(FORMATS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    unchanged = _read_with(copy)
    assert unchanged["formats"].startswith(str(copy))  # the copy is what the parser used
    name, old, new = EDITS[edit]
    text = (copy / name).read_text()
    assert text.count(old) == 1, f"{old!r} is no longer in formats/{name}"
    (copy / name).write_text(text.replace(old, new))
    changed = _read_with(copy)
    original = _read_with(FORMATS)
    assert {**original, "formats": ""} == {**unchanged, "formats": ""}  # the copy read as formats/ does
    cb = ContextBinary.open(SAMPLE)
    if edit == "soc_model":
        assert (unchanged["soc_model"], changed["soc_model"]) == (cb.soc_model, len(cb.graphs))
    elif edit == "blob_info":
        assert changed["vtcm_size"] == unchanged["optimization_level"] != unchanged["vtcm_size"]
        assert changed["optimization_level"] == unchanged["vtcm_size"]
    elif edit == "op_type":
        assert changed["kinds"] != unchanged["kinds"] and unchanged["kinds"] == list(cb.op_kinds(0)[:8])
    else:
        assert unchanged["options"] > 100 and changed["options"] == 0


# -- (2) one definition parses and builds: the same bytes back, on every record of every file ----------


def test_every_definition_builds_back_the_bytes_it_parsed():
    met = set()
    for label, cb in _every_context():
        for site in record_sites(cb):
            data = bytes(cb.data[site.offset : site.end])
            built = site.definition.build(site.definition.parse(data))
            assert built == data, f"{label} {site.name} at {site.offset:#x}"
            met.add(site.definition)
    every = {CB.FileHeader, CB.BlobHeader, CB.GraphBlobInfo, CB.ContextMetadata, CB.SharedWeightsHeader}
    every |= {P.PickleHeader, P.HeaderRecord, P.AuxRecord, P.OpRecord, P.ProgramEnd, P.WeightsDescriptor}
    if REAL.is_dir():  # QNN 2.22 - 2.34: each pickle's u64 size before it (packed 3.1.x/3.2.x blobs)
        every.add(CB.PickleSize)
    assert every <= met


def test_the_tail_page_starts_with_the_barrel_trailers_signature():
    """FORMAT_FACTS: the same two words start the 4 KiB tail page of single-graph files."""
    data = (FIXTURES / "variants" / "vtcm_8mb.bin").read_bytes()[0x1E000 : 0x1E000 + P.BARREL_TRAILER_SIZE]
    trailer = P.BarrelTrailer.parse(data)
    assert P.BarrelTrailer.build(trailer) == data


@pytest.mark.skipif(not REAL.is_dir(), reason="the real LiteRT files live in the shared folder")
def test_the_dispatch_ops_flexbuffer_builds_back_in_a_buffer_of_its_size():
    import io

    from q9diff.read import flatbuf

    for path in sorted(REAL.glob("*.tflite")):
        buf = memoryview(path.read_bytes())
        model = flatbuf.root(buf, 0, len(buf), str(path))
        for sg in model.get(C.TFLITE_MODEL["subgraphs"]):
            for op in sg.get(C.TFLITE_SUBGRAPH["operators"]):
                data = op.get(C.TFLITE_OPERATOR["custom_options"])
                if not data:
                    continue
                flex = C.FlexMap.parse(data)
                assert {e.key for e in flex.entries} == {k.encode() for k in C.DISPATCH_KEYS}
                out = io.BytesIO(bytes(len(data)))
                C.FlexMap.build_stream(flex, out)
                assert out.getvalue() == data, path.name


# -- the compiled parsers of hot definitions agree with the interpreted ones ------------------------------


def test_compiled_and_interpreted_parsers_agree_on_every_record_and_on_mutations():
    hot = (P.PickleHeader, P.AuxRecord)
    compiled = {d: d.compile() for d in hot}
    rng = random.Random(37)
    for label, cb in _every_context()[:12]:
        for site in record_sites(cb, ops_per_graph=0):
            if site.definition not in hot:
                continue
            data = bytearray(cb.data[site.offset : site.end])
            for trial in range(12):
                if trial and data:
                    data[rng.randrange(len(data))] = rng.randrange(256)
                    data = data[: rng.randrange(len(data) + 1)] if rng.random() < 0.3 else data
                one, two = (_parsed(d, bytes(data)) for d in (site.definition, compiled[site.definition]))
                assert one == two, f"{label} {site.name} trial {trial}"


def _parsed(definition, data: bytes):
    """What a parse through q9diff's door gives: the value, or the error's kind."""
    try:
        return parse.parse(definition, data, 0, "x", "a record")
    except Exception as exc:
        return type(exc).__name__


def test_hot_definitions_are_compiled_once_parsed_often_and_walk_the_same(monkeypatch):
    paths = all_bins()[:8]
    interpreted = [ContextBinary.open(p).regions for p in paths]
    monkeypatch.setattr(parse, "HOT", parse.Hot(compile_after=3))
    assert not parse.HOT.is_compiled(P.PickleHeader)
    compiled = [ContextBinary.open(p).regions for p in paths]
    assert parse.HOT.is_compiled(P.PickleHeader) and parse.HOT.is_compiled(P.AuxRecord)
    assert compiled == interpreted


# -- (3) variants built from the definitions ----------------------------------------------------------


def test_the_fuzzers_field_mutations_are_built_by_the_definitions():
    sys.path.insert(0, str(FIXTURES.parent / "scripts"))
    import fuzz

    data = SAMPLE.read_bytes()
    sites = fuzz.field_sites(data)
    assert {s.definition for s in sites} >= {P.PickleHeader, P.AuxRecord, P.OpRecord, P.WeightsDescriptor}
    rng = random.Random(4)
    read_back = 0
    for _ in range(80):
        site, path, value, out = fuzz.mutate_field(data, sites, rng)
        if out is None:
            continue
        assert len(out) == len(data)
        assert out[: site.offset] == data[: site.offset] and out[site.end :] == data[site.end :]
        again = parse.matches(site.definition, out, site.offset, site.end)
        read_back += again is not None and fuzz.leaf(again, path) == value
    assert read_back >= 30  # the rest: computed fields, or a length that no longer fits the record
