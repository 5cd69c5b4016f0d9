"""`ContextBinary`: a QNN HTP context binary, mapped lazily, with graphs, settings and a region map.

The header and metadata are parsed when the file is opened; pickles, op lists and the region map
only when asked for, so a metadata question on a 4 GB binary reads a few kilobytes.
"""

from __future__ import annotations

import gc
import mmap
import os
from functools import cached_property

from q9diff.errors import FormatError
from q9diff.formats import context_binary as CB
from q9diff.formats import flatbuffer_slots as S
from q9diff.formats import pickles as P
from q9diff.read import flatbuf, generic, inprocess
from q9diff.read.files import regular_file
from q9diff.read.metadata import MetadataReader
from q9diff.read.model import (  # noqa: F401  (re-exported: the model of a ContextBinary)
    BLOB_INFO_FIELDS,
    BLOB_INFO_V2_EXTRA,
    Graph,
    Op,
    PickleLayout,
    Record,
    Region,
    Tensor,
)
from q9diff.read.parse import matches, offset_of, parse, zeros
from q9diff.read.pickle_walk import PickleWalker

FIRST_AT = offset_of(CB.BlobHeader, "first")  # the blob header's word 3


class ContextBinary(MetadataReader, PickleWalker):
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
        regular_file(path)  # a FIFO's open would wait for a writer, a device's map never end
        try:
            with open(p, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < CB.LEGACY_FILE_HEADER_SIZE:
                    raise FormatError(
                        p,
                        0,
                        f"a context binary header of {CB.LEGACY_FILE_HEADER_SIZE} bytes (QNN 2.22) or"
                        f" {CB.FILE_HEADER_SIZE} (QNN 2.25 on); the file has {size} bytes",
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
        for attempt in range(2):
            try:
                buf.release()
                if isinstance(mapped, mmap.mmap):
                    mapped.close()
                return
            except BufferError:  # a view still uses it: one held only by a reference cycle goes now,
                if attempt == 0:  # else the mapping goes with the last view that uses it
                    gc.collect()

    # -- what the build asked for, read with the rules measured on the compiler -------------------

    @cached_property
    def requested(self) -> generic.Requested:
        """The soc_model the build asked for, whether that is the generic target, and how that was told
        (q9diff.read.generic.requested over what it records and its first graph's options): one answer
        per binary, whoever asks."""
        opts = self.options(0) if self.graphs else {}
        return generic.requested(self.soc_model, self.dsp_arch, opts, self.build_id, self.graph_number)

    @cached_property
    def graph_number(self) -> int | None:
        """The lowest number the record directory gives a graph's pickle (PICKLE/256 is a process's first
        graph, q9diff.read.inprocess); None for a blob without a directory, whose names q9diff makes up."""
        if not self.has_directory:
            return None
        return inprocess.graph_number([r.name for r in self.records])

    @cached_property
    def measured(self) -> generic.Measured | None:
        """The generic builds measured on this build's QAIRT (q9diff.read.generic); None: not measured."""
        return generic.of_build(self.build_id)

    # -- the context blob (lazy; the header and metadata are read eagerly by MetadataReader) -------

    @cached_property
    def blob_header(self):
        """The context blob's header (CB.BlobHeader): its version, and what its word 3 says by version."""
        b = self.blob_offset
        if self.blob_size < CB.BLOB_HEADER_SIZE:
            raise FormatError(self.path, b, "a 32-byte context blob header")
        h = parse(CB.BlobHeader, self._buf, b, self.path, "a context blob header", b + CB.BLOB_HEADER_SIZE)
        word, what = (
            (h.first.directory_size, "a directory size")
            if h.layout == CB.DIRECTORY
            else (h.first.pickles_offset, "a first-pickle offset")
        )
        if word > self.blob_size - CB.BLOB_HEADER_SIZE:
            raise FormatError(self.path, b + FIRST_AT, f"{what} inside the blob (got {word})")
        return h

    @cached_property
    def has_directory(self) -> bool:
        """Blob 4.0.x has a record directory; 3.x blobs have the HTP context FlatBuffer there instead."""
        return self.blob_header.layout == CB.DIRECTORY

    @cached_property
    def records(self) -> tuple[Record, ...]:
        """The record directory, or for 3.x blobs (no directory) the records walked from the pickles."""
        h = self.blob_header
        if h.layout != CB.DIRECTORY:
            return self._legacy_records(h.first.pickles_offset, paged=h.layout == CB.PAGED)
        start = self.blob_offset + CB.BLOB_HEADER_SIZE
        directory = flatbuf.root(self._buf, start, h.first.directory_size, self.path)
        out = []
        s = S.RECORD
        for r in directory.get(S.DIRECTORY["records"]):
            offset, size = r.get(s["offset"], 0), r.get(s["size"], 0)
            if offset + size > self.blob_size:
                raise FormatError(
                    self.path, r.pos, f"a record inside the blob (offset {offset}, size {size})"
                )
            out.append(Record(r.get(s["name"], ""), self.blob_offset + offset, size, r.get(s["align"], 0)))
        return tuple(sorted(out, key=lambda rec: rec.offset))

    def _legacy_records(self, first: int, paged: bool) -> tuple[Record, ...]:
        """3.x blobs have no directory. The HTP context FlatBuffer sits at +0x20 up to `first`. In 3.3.x
        the pickles follow on 4 KiB boundaries, each barrel sized by its Sz word 1 x 4, and whatever
        follows the last one is the shared weights. In 3.1.x/3.2.x each pickle (a barrel, or a single
        pickle in QNN 2.22/2.25) is preceded by its size as a u64. Evidence: fixtures/variants/qairt_2.47.bin
        and the 2.22-2.40 binaries in ../shared/real/binaries, each walked with no gap or overlap."""
        b, end, page = self.blob_offset, self.blob_offset + self.blob_size, CB.PAGE
        if not CB.BLOB_HEADER_SIZE <= first <= self.blob_size:
            raise FormatError(self.path, b + FIRST_AT, f"a first-pickle offset inside the blob (got {first})")
        out = [Record("ROOT", b + CB.BLOB_HEADER_SIZE, first - CB.BLOB_HEADER_SIZE, page if paged else 8)]
        pos, word = b + first, CB.PickleSize.sizeof()
        for i, g in enumerate(self.graphs):
            if not paged:
                what = f"the u64 size of graph {i}'s pickle inside the blob"
                size = parse(CB.PickleSize, self._buf, pos, self.path, what, end)
                out.append(Record(f"PICKLE_SIZE/{256 + i}", pos, word, word))
                pos += word
            start = matches(P.PickleStart, self._buf, pos, end)
            magic = start.magic if start is not None else None
            if not paged and magic in P.PICKLE_KINDS:
                pass
            elif magic == P.BARREL_MAGIC:
                size = self._barrel_length(pos, end)
            else:
                raise FormatError(
                    self.path,
                    pos,
                    f"the pickle of graph {i} (magic {P.BARREL_MAGIC:#x} or {P.PICKLE_MAGIC:#x})",
                )
            if size <= 0 or pos + size > end:
                raise FormatError(self.path, pos, f"a pickle size inside the blob (got {size})")
            out.append(Record(f"PICKLE/{256 + i}/{g.name}", pos, size, page if paged else 4))
            pos += -(-size // page) * page if paged else size
        if pos < end and not self._is_zero(pos, end):
            out.append(Record("WEIGHTS/0", pos, end - pos, page))
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

    def _is_zero(self, start: int, end: int) -> bool:
        return zeros(self._buf, start, end)  # a MiB at a time, a mapped file's pages let go

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

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        """Named, non-overlapping regions covering every byte of the file, in file order."""
        top = list(self.header_regions)
        b = self.blob_offset
        blob = [Region("blob/header", b, CB.BLOB_HEADER_SIZE)]
        if self.has_directory:
            directory = self.blob_header.first.directory_size
            blob.append(Region("blob/directory", b + CB.BLOB_HEADER_SIZE, directory))
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
        """WEIGHTS/0: its header (CB.SharedWeightsHeader: descriptor words, the weights name, padding to
        +0x100), then the pool."""
        head = min(CB.SharedWeightsHeader.sizeof(), rec.size)
        return [
            Region(f"{rec.name}/header", rec.offset, head, "weights_header"),
            Region(f"{rec.name}/pool", rec.offset + head, rec.size - head, "weights"),
        ]


def _clean(r: Region) -> Region:
    """Drop the filler prefixes `_fill` adds at the top level ("file/", "blob/padding" stays)."""
    name = r.name
    if name.startswith("file/"):
        name = name[5:]
    return Region(name, r.offset, r.size, r.kind)
