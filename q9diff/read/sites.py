"""Where each definition of `q9diff.formats` sits in one context binary, as the walk found it: what the
tools that build variants of a file need (scripts/fuzz.py mutates a field and builds the record again,
tests/test_formats.py parses and builds every record of every fixture)."""

from __future__ import annotations

from dataclasses import dataclass

from construct import Construct

from q9diff.formats import context_binary as CB
from q9diff.formats import flatbuffer_slots as S
from q9diff.formats import pickles as P
from q9diff.read import flatbuf
from q9diff.read.binary import ContextBinary

HEADER_LEAVES = frozenset((*P.HEADER_TAG_NAMES.values(), "record"))
BY_LEAF = {
    "weights_descriptor": P.WeightsDescriptor,
    "trailer": P.BarrelTrailer,
    "program_end_marker": P.ProgramEnd,
}
BY_NAME = {"file_header": CB.FileHeader, "blob/header": CB.BlobHeader, "blob_size": CB.LegacyBlobSize}


@dataclass(frozen=True)
class Site:
    """A record at [offset, end) of a file and the definition it parses with."""

    name: str
    offset: int
    end: int
    definition: Construct


def record_sites(cb: ContextBinary, ops_per_graph: int = 64) -> list[Site]:
    """Every record of the file that a definition describes: headers, pickle headers and their records,
    aux records, the first `ops_per_graph` op records of each graph, weights descriptors, trailers, the
    graphBlobInfo and contextMetadata bytes of the metadata."""
    out = []
    for r in cb.regions:
        leaf = r.leaf
        definition = BY_NAME.get(r.name) or BY_LEAF.get(leaf)
        if leaf == "start":
            end = next(x.end for x in cb.regions if x.offset >= r.offset and x.leaf == "end")
            out.append(Site(r.name, r.offset, end, P.PickleHeader))
        elif "/aux/" in r.name:
            definition = P.AuxRecord
        elif r.name.startswith("PICKLE[") and leaf in HEADER_LEAVES and "/" in r.name:
            definition = P.HeaderRecord
        elif r.name == "PICKLE_SIZE":
            definition = CB.PickleSize
        elif r.name.endswith("/header") and r.size == CB.SharedWeightsHeader.sizeof():
            definition = CB.SharedWeightsHeader
        if definition is not None:
            out.append(Site(r.name, r.offset, r.end, definition))
    for i in range(len(cb.graphs)):
        for op in cb.ops(i)[:ops_per_graph]:
            out.append(
                Site(f"PICKLE[{i}]/op[{op.index}]", op.offset, op.offset + P.OpRecord.sizeof(), P.OpRecord)
            )
    return sorted(out + _metadata_sites(cb), key=lambda s: (s.offset, s.end))


def _metadata_sites(cb: ContextBinary) -> list[Site]:
    """The graphBlobInfo and contextMetadata byte vectors inside the metadata FlatBuffer."""
    meta = next((r for r in cb.header_regions if r.name == "metadata"), None)
    if meta is None or cb.binary_info_version != 3:
        return []
    top = flatbuf.root(cb.data, meta.offset, meta.size, cb.path)
    info = top.get(S.METADATA_ROOT["binary_info"]).get(S.WRAPPER["body"])
    out = []
    vec = info.raw_vector(S.BINARY_INFO_V3["context_metadata"].slot)
    if vec is not None and vec[1] == CB.ContextMetadata.sizeof():
        out.append(Site("metadata/context_metadata", vec[0], vec[0] + vec[1], CB.ContextMetadata))
    for i, wrapper in enumerate(info.get(S.BINARY_INFO_V3["graphs"])):
        body = wrapper.get(S.WRAPPER["body"])
        if body is None or wrapper.get(S.WRAPPER["version"], 1) < 3:
            continue
        vec = body.raw_vector(S.GRAPH_V3["blob_info"].slot)
        if vec is not None and vec[1]:
            out.append(Site(f"metadata/graph[{i}]/blob_info", vec[0], vec[0] + vec[1], CB.GraphBlobInfo))
    return out
