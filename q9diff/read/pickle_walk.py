"""The lazy part of reading a context binary: one graph's PICKLE record walked into regions, its options
string and its op list, with the definitions of `q9diff.formats.pickles`. A mixin of `ContextBinary`."""

from __future__ import annotations

import sys
from functools import cached_property

from q9diff.errors import FormatError
from q9diff.formats import context_binary as CB
from q9diff.formats import pickles as P
from q9diff.read.model import Op, PickleLayout, Record, Region
from q9diff.read.options import decode_options
from q9diff.read.parse import matches, offset_of, parse

START = P.PICKLE_START_SIZE
# The op search reads OpRecord's fields where the definition puts them: a record starts with its marker
# (where the search finds it) and holds at least its marker and its type word.
OP_RECORD_SIZE = P.OpRecord.sizeof()
TYPE_AT = offset_of(P.OpRecord, "type_word")
INDEX_TOP = P.OP_INDEX_MASK >> 24  # the marker's top byte, its flag bit left out
MAX_OPS = 1 << 20


def _first_ops(raw: bytes, start: int, limit: int, op_types: list[str]) -> tuple[list[str], list[int]]:
    """The kinds and offsets of the ops `_op_list` would find first in `raw` (at `start` in the file),
    found vectorized when numpy is already loaded (a diff has it; `inspect` starts without it and finds
    all by byte search). Op n is the first word after op n-1 whose index (marker ^ OP_MARKER_XOR, top bit
    free) is n; while each index's first word comes after the one before, those first words are the
    ops, and the byte search goes on from where that stops holding. Kinds are looked up in an object
    array of the op-type table, so no Python loop runs per op."""
    np = sys.modules.get("numpy")
    if np is None or len(raw) < OP_RECORD_SIZE:
        return [], []
    words = np.frombuffer(raw, dtype="<u4")  # the op list's words (Int32ul in formats.pickles.OpRecord)
    marks = words[: len(words) - (OP_RECORD_SIZE // 4 - 1)]  # a marker needs the rest of its record
    idx = (marks ^ np.uint32(P.OP_MARKER_XOR)) & np.uint32(P.OP_INDEX_MASK)
    cand = np.flatnonzero(idx < limit)
    values, first = np.unique(idx[cand], return_index=True)  # each index's first word
    n = _leading(values == np.arange(len(values)))  # indices 0..n-1 all there
    pos = cand[first[:n]]
    pos = pos[: _leading(pos[1:] > pos[:-1]) + 1] if n else pos  # and each after the one before
    kind_i = words[pos + TYPE_AT // 4] & np.uint32(P.OP_TYPE_MASK)
    n_types = len(op_types)
    table = np.array([*op_types, None], dtype=object)  # the table's own strings; None: not in it
    kinds = table[np.minimum(kind_i, n_types)].tolist()
    for j in np.flatnonzero(kind_i >= n_types).tolist():
        kinds[j] = _kind_name(int(kind_i[j]), op_types)
    return kinds, (start + 4 * pos).tolist()


def _kind_name(kind_i: int, op_types: list[str]) -> str:
    """An op's kind: its op-type table entry, or `type#<n>` where the table has no entry n."""
    return op_types[kind_i] if kind_i < len(op_types) else f"type#{kind_i}"


def _leading(mask) -> int:
    """How many of a boolean array's first values are True."""
    return len(mask) if mask.all() else int(mask.argmin())


def _header_regions(pre: str, pos: int, records) -> tuple[list[Region], int]:
    """A pickle header's records from `pos` on, each a region (the options string's of kind `options`),
    and where they end."""
    out = []
    for r in records:
        kind = "options" if r.tag == P.TAG_OPTIONS else "structure"
        out.append(Region(f"{pre}/{P.HEADER_TAG_NAMES.get(r.tag, 'record')}", pos, r.size, kind))
        pos += r.size
    return out, pos


def _first(records, tag: bytes):
    """The body of the first header record with `tag`, or None."""
    return next((r.body for r in records if r.tag == tag), None)


class PickleWalker:
    """The PICKLE records of a ContextBinary: `_buf`, `path`, `graphs` and the region helpers are the
    binary's."""

    def layout(self, graph_index: int) -> PickleLayout | None:
        """Walk one graph's PICKLE record into regions, options and ops."""
        return self._layouts.get(graph_index)

    @cached_property
    def _layouts(self) -> dict[int, PickleLayout]:
        out = {}
        for i in range(len(self.graphs)):
            rec = self.pickle_record(i)
            if rec is not None:
                out[i] = self._walk_pickle(i, rec)
        return out

    def _pickle_header(self, at: int, end: int):
        """The pickle header at `at` (its magic, then tag records up to Zz inside the record)."""
        what = f"pickle header records up to the end tag Zz inside {at + START:#x}..{end:#x}"
        return parse(P.PickleHeader, self._buf, at, self.path, what, end, hot=True)

    def _barrel_length(self, at: int, end: int) -> int:
        """The bytes the barrel at `at` counts in its Sz record (0 without one)."""
        sizes = _first(self._pickle_header(at, end).records, P.TAG_SIZE)
        return sizes.length if sizes is not None else 0

    def _walk_pickle(self, gi: int, rec: Record) -> PickleLayout:
        p, end, pre = rec.offset, rec.offset + rec.size, f"PICKLE[{gi}]"
        regions: list[Region] = []
        start = matches(P.PickleStart, self._buf, p, end)
        if start is None or start.magic not in P.PICKLE_KINDS:
            raise FormatError(self.path, p, f"pickle magic {P.BARREL_MAGIC:#x} or {P.PICKLE_MAGIC:#x}")
        inner = p
        if start.magic == P.BARREL_MAGIC:
            records = self._pickle_header(p, end).records
            regions.append(Region(f"{pre}/barrel/start", p, START))
            regions += _header_regions(f"{pre}/barrel", p + START, records)[0]
            inner = p + _inner_offset(records)
            trailer = self._barrel_trailer(records, p, end)
            if trailer is not None:
                regions.append(Region(f"{pre}/barrel/trailer", trailer, P.BARREL_TRAILER_SIZE))
                end = trailer  # the pickle's own regions end where the trailer begins
        options_text, kinds, offsets = "", [], []
        inner_start = matches(P.PickleStart, self._buf, inner, end) if inner < end else None
        if inner_start is not None and inner_start.magic == P.PICKLE_MAGIC:
            records = self._pickle_header(inner, end).records
            regions.append(Region(f"{pre}/inner/start", inner, START))
            header, pos = _header_regions(f"{pre}/inner", inner + START, records)
            regions += header
            for r in records:
                if r.tag == P.TAG_OPTIONS:
                    options_text = r.body.text.split(P.OPTIONS_END, 1)[0].decode("ascii", "replace")
            sizes = _first(records, P.TAG_SIZE)
            pos, op_types = self._aux_records(pre, pos, end, regions)
            wd = inner + sizes.length if sizes is not None else end
            program_end = wd if inner < wd <= end else end
            kinds, offsets, list_end = self._op_list(pos, program_end, op_types)
            if offsets:
                first = offsets[0]
                regions.append(Region(f"{pre}/inner/allocator", pos, first - pos, "schedule"))
                regions.append(Region(f"{pre}/inner/op_list", first, list_end - first, "schedule"))
            marker = P.ProgramEnd.sizeof()
            if offsets and list_end < program_end <= end:
                if matches(P.ProgramEnd, self._buf, program_end - marker, program_end) is not None:
                    regions.append(
                        Region(f"{pre}/inner/program_end_marker", program_end - marker, marker, "schedule")
                    )
            if matches(P.WeightsDescriptor, self._buf, wd, end) is not None:
                size = P.WEIGHTS_DESCRIPTOR_SIZE
                regions.append(Region(f"{pre}/inner/weights_descriptor", wd, size))
                const = self.graphs[gi].const_size
                if const is None:  # graphBlobInfo v1 records no constSize: the Sz word bounds the pool
                    const = _constant_area(sizes)
                pool = min(max(const - size, 0), end - wd - size)
                regions.append(Region(f"{pre}/inner/const_pool", wd + size, pool, "weights"))
                tail = wd + size + pool
                if tail < end and not self._is_zero(tail, end):
                    regions.append(Region(f"{pre}/tail", tail, min(CB.PAGE, end - tail)))
        regions = self._fill(regions, rec.offset, rec.offset + rec.size, pre)
        return PickleLayout(tuple(regions), options_text, tuple(kinds), tuple(offsets))

    def _aux_records(self, pre: str, pos: int, end: int, regions: list[Region]) -> tuple[int, list[str]]:
        """The aux records from `pos` on, each a region; where they end, and the op-type table's names."""
        op_types: list[str] = []
        while pos + P.AUX_HEAD <= end:
            aux = parse(
                P.AuxRecord, self._buf, pos, self.path, "an aux record inside the pickle", end, hot=True
            )
            if not aux.is_aux:
                break
            name = P.AUX_TAG_NAMES.get(aux.tag, f"aux_{aux.tag_code:04x}")
            regions.append(Region(f"{pre}/inner/aux/{name}", pos, aux.size, "schedule"))
            if aux.tag == P.OP_TYPES_TAG:
                table = aux.payload
                op_types = [s.decode("ascii", "replace") for s in table.names.split(b"\x00")][: table.count]
            pos += aux.size
        return pos, op_types

    def _barrel_trailer(self, records, start: int, end: int) -> int | None:
        """Where the 64-byte trailer a barrel's size counts begins, when the record holds it (see formats)."""
        sizes = _first(records, P.TAG_SIZE)
        at = end - P.BARREL_TRAILER_SIZE
        if sizes is None or at <= start or sizes.length != end - start:
            return None
        return at if matches(P.BarrelTrailer, self._buf, at, end) is not None else None

    def _op_list(self, start: int, end: int, op_types: list[str]) -> tuple[list[str], list[int], int]:
        """Ops in execution order, as their kinds and offsets, and where the list ends (P.OpRecord): op n
        is the first record marker after op n-1 whose index is n, found by a byte search for the marker's
        low three bytes (no numpy: `inspect` starts without it); the list ends at OP_LIST_END."""
        if end - start < OP_RECORD_SIZE:
            return [], [], start
        raw = bytes(self._buf[start : end - (end - start) % 4])
        find, last = raw.find, len(raw) - OP_RECORD_SIZE  # a record starts at `last` at most
        limit = min(len(raw) // 4, MAX_OPS)
        kinds, offsets = _first_ops(raw, start, limit, op_types)
        at, n = (offsets[-1] - start + 4, len(offsets)) if offsets else (0, 0)  # where op n's search starts
        while n < limit:
            v = (n ^ P.OP_MARKER_XOR) & P.OP_INDEX_MASK
            low, top = (v & 0xFFFFFF).to_bytes(3, "little"), v >> 24
            pos = find(low, at)
            while pos >= 0 and (pos & 3 or raw[pos + 3] & INDEX_TOP != top):
                pos = find(low, pos + 1)
            if pos < 0 or pos > last:
                break
            word = raw[pos + TYPE_AT : pos + TYPE_AT + 4]
            kinds.append(_kind_name(int.from_bytes(word, "little") & P.OP_TYPE_MASK, op_types))
            offsets.append(start + pos)
            at, n = pos + 4, n + 1
        if not offsets:
            return [], [], start
        end_word = P.OP_LIST_END.to_bytes(4, "little")
        stop = raw.find(end_word, at)
        while stop >= 0 and stop % 4:
            stop = raw.find(end_word, stop + 1)
        list_end = start + stop + 4 if stop >= 0 else offsets[-1] + OP_RECORD_SIZE
        return kinds, offsets, list_end

    def options(self, graph_index: int) -> dict[str, str]:
        """The compiler options string of a graph, decoded once (a copy: callers may change it)."""
        if graph_index not in self._options:
            lay = self.layout(graph_index)
            self._options[graph_index] = decode_options(lay.options_text) if lay else {}
        return dict(self._options[graph_index])

    def ops(self, graph_index: int) -> tuple[Op, ...]:
        """A graph's ops as objects (index, kind, offset): made on each call, for readers of offsets."""
        lay = self.layout(graph_index)
        return lay.ops if lay else ()

    def op_kinds(self, graph_index: int) -> tuple[str, ...]:
        """A graph's op kinds in execution order, as the walk keeps them: what a diff compares, without
        an object per op."""
        lay = self.layout(graph_index)
        return lay.op_kinds if lay else ()

    def tensor_types(self, graph_index: int) -> tuple[str, ...]:
        """The compiled graph's tensor-type table (aux record Ct, in the op-type table's shape), in its
        order; () where the graph has none."""
        lay = self.layout(graph_index)
        for r in lay.regions if lay else ():
            if r.name.endswith("/aux/tensor_types"):
                what = "the tensor-type table inside the pickle"
                table = parse(P.AuxRecord, self._buf, r.offset, self.path, what, r.end, hot=True).payload
                return tuple(s.decode("ascii", "replace") for s in table.names.split(b"\x00"))[: table.count]
        return ()


def _inner_offset(records) -> int:
    """Where a barrel's single pickle starts: its contents record's offset, else INNER_PICKLE_OFFSET."""
    offsets = (r.body.inner_offset_16 for r in records if r.tag == P.TAG_CONTENTS)
    found = next((o for o in offsets if o is not None), None)
    return P.INNER_PICKLE_OFFSET if found is None else found * P.CONTENTS_UNIT


def _constant_area(sizes) -> int:
    """Bytes of the weights descriptor and pool, from the inner pickle's Sz record (see formats)."""
    if sizes is None or sizes.const_64 is None:
        return 0
    return P.SIZES_CONST_UNIT * sizes.const_64
