"""`ContextBinary`: a QNN HTP context binary, mapped lazily, with graphs, settings and a region map.

The header and metadata are parsed when the file is opened; pickles, op lists and the region map
only when asked for, so a metadata question on a 4 GB binary reads a few kilobytes.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from functools import cached_property

from q9diff.errors import FormatError
from q9diff.format import flatbuf
from q9diff.format import structs as F
from q9diff.format.metadata import MetadataReader
from q9diff.format.model import (  # noqa: F401  (re-exported: the model of a ContextBinary)
    BLOB_INFO_FIELDS,
    BLOB_INFO_V2_EXTRA,
    Graph,
    Op,
    PickleLayout,
    Record,
    Region,
    Tensor,
    _blob_info_fields,
)
from q9diff.format.options import decode_options


def _first_ops(raw: bytes, start: int, limit: int, op_types: list[str]) -> tuple[list[str], list[int]]:
    """The kinds and offsets of the ops `_op_list` would find first in `raw` (at `start` in the file),
    found vectorized when numpy is already loaded (a diff has it; `inspect` starts without it and finds
    all by byte search). Op n is the first word after op n-1 whose index (word ^ OP_MARKER_XOR, top bit
    free) is n; while each index's first word comes after the one before, those first words are the
    ops, and the byte search goes on from where that stops holding. Kinds are looked up in an object
    array of the op-type table, so no Python loop runs per op."""
    np = sys.modules.get("numpy")
    if np is None or len(raw) < 8:
        return [], []
    words = np.frombuffer(raw, dtype="<u4")
    idx = (words[:-1] ^ np.uint32(F.OP_MARKER_XOR)) & np.uint32(F.OP_INDEX_MASK)  # a record needs 2 words
    cand = np.flatnonzero(idx < limit)
    values, first = np.unique(idx[cand], return_index=True)  # each index's first word
    n = _leading(values == np.arange(len(values)))  # indices 0..n-1 all there
    pos = cand[first[:n]]
    pos = pos[: _leading(pos[1:] > pos[:-1]) + 1] if n else pos  # and each after the one before
    kind_i = words[pos + 1] & np.uint32(0x0FFFFFFF)
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


def _version(v) -> str | None:
    return None if v is None else f"{v.major}.{v.minor}.{v.patch}"


class ContextBinary(MetadataReader):
    """A context binary over any buffer (mmap for files); construct with `ContextBinary.open`."""

    def __init__(self, buf, path: str):
        self.path = path
        self._buf = memoryview(buf)
        self.size = len(self._buf)
        self._words_cache = None
        self._map: mmap.mmap | None = None  # the file's mapping, when opened from a file
        self._options: dict[int, dict[str, str]] = {}
        self._parse_header()

    @classmethod
    def open(cls, path: str | os.PathLike) -> ContextBinary:
        p = str(path)
        try:
            with open(p, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < F.LEGACY_FILE_HEADER_SIZE:
                    raise FormatError(
                        p,
                        0,
                        f"a context binary header of {F.LEGACY_FILE_HEADER_SIZE} bytes (QNN 2.22) or"
                        f" {F.FILE_HEADER_SIZE} (QNN 2.25 on); the file has {size} bytes",
                    )
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise FormatError(p, None, f"a readable file ({exc.strerror})") from None
        cb = cls(mapped, p)
        cb._map = mapped
        return cb

    def will_need(self, offset: int, size: int) -> None:
        """Ask the kernel to read [offset, offset + size) of the file now (MADV_WILLNEED): a pass over a
        cold file then waits for the disk once, in file order, instead of at every page it touches."""
        m = self._map
        if m is None or m.closed:
            return
        start = max(offset, 0) // mmap.PAGESIZE * mmap.PAGESIZE
        end = min(offset + size, len(m))
        if end > start:
            m.madvise(mmap.MADV_WILLNEED, start, end - start)

    @property
    def data(self) -> memoryview:
        """The whole file's bytes (its mapping, read-only, no copy): what compares regions reads, at the
        regions' offsets."""
        return self._buf

    def bytes_of(self, region: Region | Record) -> memoryview:
        """The bytes of one region or record of this file, without a copy."""
        return self._buf[region.offset : region.offset + region.size]

    def release(self) -> None:
        """Unmap the file (a directory diff does so once a part is compared, so a set of 1 GB parts
        never holds more than one pair). Values already read stay; reading bytes afterwards fails."""
        buf, self._buf, self._words_cache, self._map = self._buf, memoryview(b""), None, None
        mapped = buf.obj
        try:
            buf.release()
            if isinstance(mapped, mmap.mmap):
                mapped.close()
        except BufferError:  # a numpy view still uses it: unmapped when that view goes
            pass

    # -- header and metadata (eager) -------------------------------------------------------------

    def _u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > self.size:
            raise FormatError(self.path, pos, "a 32-bit word inside the file")
        return struct.unpack_from("<I", self._buf, pos)[0]

    @cached_property
    def blob_header(self):
        b = self.blob_offset
        if self.blob_size < F.BLOB_HEADER_SIZE:
            raise FormatError(self.path, b, "a 32-byte context blob header")
        h = F.BlobHeader.parse(bytes(self._buf[b : b + F.BLOB_HEADER_SIZE]))
        if h.directory_size > self.blob_size - F.BLOB_HEADER_SIZE:
            raise FormatError(self.path, b + 24, f"a directory size inside the blob (got {h.directory_size})")
        return h

    @cached_property
    def has_directory(self) -> bool:
        """Blob 4.0.x has a record directory; 3.x blobs have the HTP context FlatBuffer there instead."""
        h = self.blob_header
        return (h.major, h.minor) not in F.PAGED_BLOB_MAJOR_MINOR + F.PACKED_BLOB_MAJOR_MINOR

    @cached_property
    def records(self) -> tuple[Record, ...]:
        """The record directory, or for 3.x blobs (no directory) the records walked from the pickles."""
        h = self.blob_header
        if (h.major, h.minor) in F.PAGED_BLOB_MAJOR_MINOR:
            return self._legacy_records(h.directory_size, paged=True)
        if (h.major, h.minor) in F.PACKED_BLOB_MAJOR_MINOR:
            return self._legacy_records(h.directory_size, paged=False)
        start = self.blob_offset + F.BLOB_HEADER_SIZE
        directory = flatbuf.root(self._buf, start, h.directory_size, self.path)
        out = []
        for r in directory.tables(F.DIRECTORY_SLOTS["records"]):
            s = F.RECORD_SLOTS
            offset, size = r.scalar(s["offset"], "Q", 0), r.scalar(s["size"], "Q", 0)
            if offset + size > self.blob_size:
                raise FormatError(
                    self.path, r.pos, f"a record inside the blob (offset {offset}, size {size})"
                )
            out.append(
                Record(
                    r.string(s["name"]) or "", self.blob_offset + offset, size, r.scalar(s["align"], "Q", 0)
                )
            )
        return tuple(sorted(out, key=lambda rec: rec.offset))

    def _legacy_records(self, first: int, paged: bool) -> tuple[Record, ...]:
        """3.x blobs have no directory. The HTP context FlatBuffer sits at +0x20 up to `first`. In 3.3.x
        the pickles follow on 4 KiB boundaries, each barrel sized by its Sz word 0 x 4, and whatever
        follows the last one is the shared weights. In 3.1.x/3.2.x each pickle (a barrel, or a single
        pickle in QNN 2.22/2.25) is preceded by its size as a u64. Evidence: fixtures/variants/qairt_2.47.bin
        and the 2.22-2.40 binaries in ../shared/real/binaries, each walked with no gap or overlap."""
        b, end = self.blob_offset, self.blob_offset + self.blob_size
        if not F.BLOB_HEADER_SIZE <= first <= self.blob_size:
            raise FormatError(self.path, b + 24, f"a first-pickle offset inside the blob (got {first})")
        out = [Record("ROOT", b + F.BLOB_HEADER_SIZE, first - F.BLOB_HEADER_SIZE, F.PAGE if paged else 8)]
        pos = b + first
        for i, g in enumerate(self.graphs):
            if not paged:
                if pos + 8 > end:
                    raise FormatError(self.path, pos, f"the u64 size of graph {i}'s pickle inside the blob")
                out.append(Record(f"PICKLE_SIZE/{256 + i}", pos, 8, 8))
                size, pos = struct.unpack_from("<Q", self._buf, pos)[0], pos + 8
            magic = self._u32(pos) if pos + 8 <= end else None
            if not paged and magic in (F.PICKLE_MAGIC, F.BARREL_MAGIC):
                pass
            elif magic == F.BARREL_MAGIC:
                hdr, _ = self._header_records(pos + 8, end)
                sz = next((o for t, o, _ in hdr if t == F.TAG_SIZE), None)
                size = 4 * self._u32(sz + 4) if sz is not None else 0
            else:
                raise FormatError(
                    self.path,
                    pos,
                    f"the pickle of graph {i} (magic {F.BARREL_MAGIC:#x} or {F.PICKLE_MAGIC:#x})",
                )
            if size <= 0 or pos + size > end:
                raise FormatError(self.path, pos, f"a pickle size inside the blob (got {size})")
            out.append(Record(f"PICKLE/{256 + i}/{g.name}", pos, size, F.PAGE if paged else 4))
            pos += -(-size // F.PAGE) * F.PAGE if paged else size
        if pos < end and not self._is_zero(pos, end):
            out.append(Record("WEIGHTS/0", pos, end - pos, F.PAGE))
        return tuple(out)

    def pickle_record(self, graph_index: int) -> Record | None:
        """The PICKLE record of a graph: the first one named after it, else the graph_index-th one."""
        by_name, pickles = self._pickles
        found = by_name.get(self.graphs[graph_index].name)
        if found is not None:
            return found
        return pickles[graph_index] if graph_index < len(pickles) else None

    @cached_property
    def _pickles(self) -> tuple[dict[str, Record], tuple[Record, ...]]:
        """The PICKLE records indexed once by graph name (the first of each name) and in order: asking
        per graph by walking every record was graphs x records of work (16,000 graphs and records in a
        639 KB file took 54 s)."""
        by_name: dict[str, Record] = {}
        pickles = []
        for r in self.records:
            if r.name.startswith("PICKLE/"):
                pickles.append(r)
                by_name.setdefault(r.name.split("/", 2)[-1], r)
        return by_name, tuple(pickles)

    def _header_records(self, start: int, limit: int) -> tuple[list[tuple[bytes, int, int]], int]:
        """Walk tag records from start; return [(tag, offset, size)] and the end offset."""
        out, pos = [], start
        while pos + 4 <= limit:
            desc = self._u32(pos)
            tag, words = struct.pack("<H", desc >> 16), desc & 0xFFFF
            if words == 0 or pos + 4 * words > limit:
                raise FormatError(self.path, pos, f"a pickle header record inside {start:#x}..{limit:#x}")
            out.append((tag, pos, 4 * words))
            pos += 4 * words
            if tag == F.TAG_END:
                return out, pos
        raise FormatError(self.path, pos, "the pickle header end tag Zz")

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

    def _walk_pickle(self, gi: int, rec: Record) -> PickleLayout:
        p, end, pre = rec.offset, rec.offset + rec.size, f"PICKLE[{gi}]"
        regions: list[Region] = []
        magic = self._u32(p)
        if magic not in (F.BARREL_MAGIC, F.PICKLE_MAGIC):
            raise FormatError(self.path, p, f"pickle magic {F.BARREL_MAGIC:#x} or {F.PICKLE_MAGIC:#x}")
        inner = p
        if magic == F.BARREL_MAGIC:
            regions.append(Region(f"{pre}/barrel/start", p, 8))
            hdr, hend = self._header_records(p + 8, end)
            regions += [_header_region(f"{pre}/barrel", t, o, n) for t, o, n in hdr]
            inner = p + self._inner_offset(hdr)
            trailer = self._barrel_trailer(hdr, p, end)
            if trailer is not None:
                regions.append(Region(f"{pre}/barrel/trailer", trailer, F.BARREL_TRAILER_SIZE))
                end = trailer  # the pickle's own regions end where the trailer begins
        options_text, kinds, offsets = "", [], []
        if inner + 8 <= end and self._u32(inner) == F.PICKLE_MAGIC:
            regions.append(Region(f"{pre}/inner/start", inner, 8))
            ihdr, iend = self._header_records(inner + 8, end)
            regions += [_header_region(f"{pre}/inner", t, o, n) for t, o, n in ihdr]
            for t, o, n in ihdr:
                if t == F.TAG_OPTIONS:
                    options_text = (
                        bytes(self._buf[o + 4 : o + n]).split(b"\x00", 1)[0].decode("ascii", "replace")
                    )
            sizes = next(((o, n) for t, o, n in ihdr if t == F.TAG_SIZE), None)
            pos, op_types = iend, []
            while pos + 8 <= end:  # aux records: marker tag<<16 | ~tag, then payload length in words
                m = self._u32(pos)
                if m == F.ALLOCATOR_MAGIC or (m & 0xFFFF) != (~(m >> 16) & 0xFFFF):
                    break
                n = 4 * self._u32(pos + 4)
                if pos + 8 + n > end:
                    raise FormatError(self.path, pos, "an aux record inside the pickle")
                tag = struct.pack("<H", m >> 16)
                aux_name = F.AUX_TAG_NAMES.get(tag, f"aux_{m >> 16:04x}")
                regions.append(Region(f"{pre}/inner/aux/{aux_name}", pos, 8 + n, "schedule"))
                if tag == b"Co":
                    op_types = self._string_table(pos + 8, n)
                pos += 8 + n
            wd = inner + 4 * self._u32(sizes[0] + 4) if sizes else end
            program_end = wd if inner < wd <= end else end
            kinds, offsets, list_end = self._op_list(pos, program_end, op_types)
            if offsets:
                first = offsets[0]
                regions.append(Region(f"{pre}/inner/allocator", pos, first - pos, "schedule"))
                regions.append(Region(f"{pre}/inner/op_list", first, list_end - first, "schedule"))
            if offsets and list_end < program_end <= end and self._u32(program_end - 4) == F.OP_LIST_END:
                regions.append(Region(f"{pre}/inner/program_end_marker", program_end - 4, 4, "schedule"))
            if wd + F.WEIGHTS_DESCRIPTOR_SIZE <= end and self._u32(wd) == F.WEIGHTS_DESCRIPTOR_MAGIC:
                regions.append(Region(f"{pre}/inner/weights_descriptor", wd, F.WEIGHTS_DESCRIPTOR_SIZE))
                const = self.graphs[gi].const_size
                if const is None:  # graphBlobInfo v1 records no constSize: the Sz word bounds the pool
                    const = self._constant_area(sizes)
                pool = min(max(const - F.WEIGHTS_DESCRIPTOR_SIZE, 0), end - wd - F.WEIGHTS_DESCRIPTOR_SIZE)
                regions.append(
                    Region(f"{pre}/inner/const_pool", wd + F.WEIGHTS_DESCRIPTOR_SIZE, pool, "weights")
                )
                tail = wd + F.WEIGHTS_DESCRIPTOR_SIZE + pool
                if tail < end and not self._is_zero(tail, end):
                    regions.append(Region(f"{pre}/tail", tail, min(F.PAGE, end - tail)))
        regions = self._fill(regions, rec.offset, rec.offset + rec.size, pre)
        return PickleLayout(tuple(regions), options_text, tuple(kinds), tuple(offsets))

    def _barrel_trailer(
        self, barrel_header: list[tuple[bytes, int, int]], start: int, end: int
    ) -> int | None:
        """Where the 64-byte trailer a barrel's size counts begins, when the record holds it (see formats)."""
        sz = next((o for t, o, n in barrel_header if t == F.TAG_SIZE and n >= 8), None)
        at = end - F.BARREL_TRAILER_SIZE
        if sz is None or at <= start or 4 * self._u32(sz + 4) != end - start:
            return None
        if (self._u32(at), self._u32(at + 4)) != F.BARREL_TRAILER_SIGNATURE:
            return None
        return at

    def _constant_area(self, sizes: tuple[int, int] | None) -> int:
        """Bytes of the weights descriptor and pool, from the inner pickle's Sz record (see formats)."""
        if sizes is None or sizes[1] < 4 * (F.SIZES_CONST_WORD + 2):
            return 0
        return F.SIZES_CONST_UNIT * self._u32(sizes[0] + 4 + 4 * F.SIZES_CONST_WORD)

    def _inner_offset(self, barrel_header: list[tuple[bytes, int, int]]) -> int:
        """Where a barrel's single pickle starts: the contents record's word 2 x 16 bytes (0x300 x 16 =
        0x3000 in QAIRT 2.47-2.51, 0x1c8 x 16 = 0x1c80 in QNN 2.32). Evidence: the inner pickle magic
        sits there in every fixture and real binary."""
        tc = next((o for t, o, n in barrel_header if t == F.TAG_CONTENTS and n >= 12), None)
        return F.INNER_PICKLE_OFFSET if tc is None else self._u32(tc + 8) * F.CONTENTS_UNIT

    def _string_table(self, start: int, n: int) -> list[str]:
        """The op-type table: count, string word count, NUL-separated names."""
        if n < 8:
            return []
        count, words = self._u32(start), self._u32(start + 4)
        raw = bytes(self._buf[start + 8 : start + 8 + min(4 * words, n - 8)])
        return [s.decode("ascii", "replace") for s in raw.split(b"\x00")][:count]

    def _op_list(self, start: int, end: int, op_types: list[str]) -> tuple[list[str], list[int], int]:
        """Ops in execution order, as their kinds and offsets, and where the list ends: each record starts
        with op_index ^ OP_MARKER_XOR (its top bit free), the next word its kind; the list ends at
        OP_LIST_END. Op n is the first such word after op n-1, found by a byte search for the word's low
        three bytes (no numpy: `inspect` starts without it)."""
        if end - start < 8:
            return [], [], start
        raw = bytes(self._buf[start : end - (end - start) % 4])
        find, last = raw.find, len(raw) - 8  # a record needs its kind word: it starts at `last` at most
        limit = min(len(raw) // 4, 1 << 20)
        kinds, offsets = _first_ops(raw, start, limit, op_types)
        at, n = (offsets[-1] - start + 4, len(offsets)) if offsets else (0, 0)  # where op n's search starts
        while n < limit:
            v = (n ^ F.OP_MARKER_XOR) & F.OP_INDEX_MASK
            low, top = (v & 0xFFFFFF).to_bytes(3, "little"), v >> 24
            pos = find(low, at)
            while pos >= 0 and (pos & 3 or raw[pos + 3] & 0x7F != top):
                pos = find(low, pos + 1)
            if pos < 0 or pos > last:
                break
            kinds.append(_kind_name(int.from_bytes(raw[pos + 4 : pos + 8], "little") & 0x0FFFFFFF, op_types))
            offsets.append(start + pos)
            at, n = pos + 4, n + 1
        if not offsets:
            return [], [], start
        stop = raw.find(struct.pack("<I", F.OP_LIST_END), at)
        while stop >= 0 and stop % 4:
            stop = raw.find(struct.pack("<I", F.OP_LIST_END), stop + 1)
        list_end = start + stop + 4 if stop >= 0 else offsets[-1] + 8
        return kinds, offsets, list_end

    def _is_zero(self, start: int, end: int) -> bool:
        step = 1 << 20
        return all(not bytes(self._buf[s : min(s + step, end)]).strip(b"\0") for s in range(start, end, step))

    def _fill(self, regions: list[Region], start: int, end: int, pre: str) -> list[Region]:
        """Sort, check and close the gaps: zero gaps become `padding`, others `unknown`."""
        out, pos = [], start
        for r in sorted((r for r in regions if r.size > 0), key=lambda r: r.offset):
            if r.offset < pos or r.end > end:
                raise FormatError(self.path, r.offset, f"region {r.name} inside {pos:#x}..{end:#x}")
            if r.offset > pos:
                out.append(self._gap(pre, pos, r.offset))
            out.append(r)
            pos = r.end
        if pos < end:
            out.append(self._gap(pre, pos, end))
        return out

    def _gap(self, pre: str, start: int, end: int) -> Region:
        kind = "padding" if self._is_zero(start, end) else "unknown"
        return Region(f"{pre}/{kind}", start, end - start, kind)

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
        """The compiled graph's tensor-type table (aux record Ct: count, string words, NUL-separated
        codes, in the op-type table's shape), in its order; () where the graph has none."""
        lay = self.layout(graph_index)
        for r in lay.regions if lay else ():
            if r.name.endswith("/aux/tensor_types"):
                return tuple(self._string_table(r.offset + 8, r.size - 8))
        return ()

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        """Named, non-overlapping regions covering every byte of the file, in file order."""
        top = list(self.header_regions)
        b = self.blob_offset
        blob = [Region("blob/header", b, F.BLOB_HEADER_SIZE)]
        if self.has_directory:
            blob.append(Region("blob/directory", b + F.BLOB_HEADER_SIZE, self.blob_header.directory_size))
        graph_of = {}
        for i in range(len(self.graphs)):
            rec = self.pickle_record(i)
            if rec is not None:
                graph_of[rec.name] = i
        for rec in self.records:
            if rec.name in graph_of:
                blob += self.layout(graph_of[rec.name]).regions
            elif rec.name.startswith("WEIGHTS/"):
                blob += self._weights_regions(rec)
            else:
                blob.append(Region(rec.name.split("/", 1)[0], rec.offset, rec.size))
        blob_end = b + self.blob_size
        out = self._fill(top, 0, b, "file")
        out += self._fill(blob, b, blob_end, "blob")
        if blob_end < self.size:
            out += self._fill([], blob_end, self.size, "trailer")
        return tuple(_clean(r) for r in out)

    def _weights_regions(self, rec: Record) -> list[Region]:
        """WEIGHTS/0: a 16-byte descriptor header and the weights name, padding to +0x100, then the pool."""
        head = min(0x100, rec.size)
        return [
            Region(f"{rec.name}/header", rec.offset, head, "weights_header"),
            Region(f"{rec.name}/pool", rec.offset + head, rec.size - head, "weights"),
        ]


def _header_region(pre: str, tag: bytes, offset: int, size: int) -> Region:
    """A pickle header record; the options string's is kind `options`."""
    kind = "options" if tag == F.TAG_OPTIONS else "structure"
    return Region(f"{pre}/{F.HEADER_TAG_NAMES.get(tag, 'record')}", offset, size, kind)


def _clean(r: Region) -> Region:
    """Drop the filler prefixes `_fill` adds at the top level ("file/", "blob/padding" stays)."""
    name = r.name
    if name.startswith("file/"):
        name = name[5:]
    return Region(name, r.offset, r.size, r.kind)
