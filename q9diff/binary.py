"""`ContextBinary`: a QNN HTP context binary, mapped lazily, with graphs, settings and a region map.

The header and metadata are parsed when the file is opened; pickles, op lists and the region map
only when asked for, so a metadata question on a 4 GB binary reads a few kilobytes.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from q9diff import flatbuf
from q9diff.errors import FormatError
from q9diff.formats import context_binary as F
from q9diff.options import decode_options
from q9diff.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES

BLOB_INFO_FIELDS = (
    "spill_fill_buffer_size vtcm_size optimization_level htp_dlbc num_hvx_threads io_tensor_size "
    "op_data_size const_size ddr_tensor_size shared_weights_size"
).split()


@dataclass(frozen=True)
class Tensor:
    name: str
    id: int
    dtype: str
    dims: tuple[int, ...]
    scale: float | None
    offset: int | None
    tensor_type: str


@dataclass(frozen=True)
class Record:
    """One entry of the blob's record directory (ROOT, PICKLE/<n>/<graph>, WEIGHTS/0)."""

    name: str
    offset: int  # absolute file offset
    size: int
    align: int


@dataclass(frozen=True)
class Op:
    index: int
    kind: str  # the HTP kernel name from the op-type table
    offset: int  # absolute file offset of the op record


@dataclass(frozen=True)
class Graph:
    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    spill_fill_buffer_size: int | None = None
    vtcm_size: int | None = None
    optimization_level: int | None = None
    htp_dlbc: int | None = None
    num_hvx_threads: int | None = None
    io_tensor_size: int | None = None
    op_data_size: int | None = None
    const_size: int | None = None
    ddr_tensor_size: int | None = None
    shared_weights_size: int | None = None


@dataclass(frozen=True)
class Region:
    """A named byte range; `name` is a path such as `PICKLE[0]/inner/const_pool`."""

    name: str
    offset: int
    size: int

    @property
    def leaf(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class PickleLayout:
    """What the walk of one PICKLE record found: its regions, options text and ops."""

    regions: tuple[Region, ...]
    options_text: str
    ops: tuple[Op, ...]


def _version(v) -> str:
    return f"{v.major}.{v.minor}.{v.patch}"


class ContextBinary:
    """A context binary over any buffer (mmap for files); construct with `ContextBinary.open`."""

    def __init__(self, buf, path: str):
        self.path = path
        self._buf = memoryview(buf)
        self.size = len(self._buf)
        self._words_cache = None
        self._parse_header()

    @classmethod
    def open(cls, path: str | os.PathLike) -> ContextBinary:
        p = str(path)
        try:
            with open(p, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < F.FILE_HEADER_SIZE:
                    raise FormatError(
                        p, 0, f"a {F.FILE_HEADER_SIZE}-byte context binary header (file has {size} bytes)"
                    )
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise FormatError(p, None, f"a readable file ({exc.strerror})") from None
        return cls(mapped, p)

    def release(self) -> None:
        """Unmap the file (a directory diff does so once a part is compared, so a set of 1 GB parts
        never holds more than one pair). Values already read stay; reading bytes afterwards fails."""
        buf, self._buf, self._words_cache = self._buf, memoryview(b""), None
        mapped = buf.obj
        try:
            buf.release()
            if isinstance(mapped, mmap.mmap):
                mapped.close()
        except BufferError:  # a numpy view still uses it: unmapped when that view goes
            pass

    # -- header and metadata (eager) -------------------------------------------------------------

    def _parse_header(self) -> None:
        buf, path = self._buf, self.path
        if self.size < F.FILE_HEADER_SIZE or bytes(buf[:16]) != F.FILE_MAGIC:
            raise FormatError(path, 0, "the QNN context binary magic 00000002 00000003 00000000 00000001")
        h = F.FileHeader.parse(bytes(buf[: F.FILE_HEADER_SIZE]))
        if F.METADATA_OFFSET + h.metadata_size > min(h.blob_offset, self.size):
            raise FormatError(
                path, 0x10, f"a metadata size that fits before the blob (got {h.metadata_size})"
            )
        if h.blob_offset + h.blob_size > self.size:
            raise FormatError(
                path,
                0x20,
                f"a context blob of {h.blob_size} bytes at {h.blob_offset:#x} (file has {self.size})",
            )
        self.header = h
        self.blob_offset, self.blob_size = h.blob_offset, h.blob_size
        top = flatbuf.root(buf, F.METADATA_OFFSET, h.metadata_size, path)
        meta = top.table(F.METADATA_ROOT_SLOT)
        s = F.BINARY_INFO_SLOTS
        if (
            meta is not None
            and meta.scalar(F.WRAPPER_SLOTS["version"], "I") is not None
            and meta.has(F.WRAPPER_SLOTS["body"])
        ):
            self.binary_info_version = meta.scalar(F.WRAPPER_SLOTS["version"], "I")
            info = meta.table(F.WRAPPER_SLOTS["body"])
        else:
            raise FormatError(path, top.pos, "a versioned BinaryInfo wrapper table")
        api = F.ApiVersion.parse
        self.backend_id = info.scalar(s["backend_id"], "I", 0)
        self.build_id = info.string(s["build_id"]) or ""
        self.core_api_version = _version(info.struct_at(s["core_api_version"], api, 12))
        self.backend_api_version = _version(info.struct_at(s["backend_api_version"], api, 12))
        blob_v = info.struct_at(s["context_blob_version"], api, 12)
        self.context_blob_version = _version(blob_v) if blob_v else None
        self.context_blob_size = info.scalar(s["context_blob_size"], "Q")
        self.soc_model = info.scalar(s["soc_model"], "I")
        cm = info.bytes(s["context_metadata"])
        self.dsp_arch = F.ContextMetadata.parse(cm).dsp_arch if cm and len(cm) >= 8 else None
        self.graphs = tuple(self._graph(w) for w in info.tables(s["graphs"]))

    def _graph(self, wrapper: flatbuf.Table) -> Graph:
        version = wrapper.scalar(F.WRAPPER_SLOTS["version"], "I", 1)
        body = wrapper.table(F.WRAPPER_SLOTS["body"])
        if body is None:
            raise FormatError(self.path, wrapper.pos, "a GraphInfo body")
        blob = None
        v1 = body
        if version >= 3:
            raw = body.bytes(F.GRAPH_V3_SLOTS["blob_info"])
            if raw and len(raw) >= F.GRAPH_BLOB_INFO_SIZE:
                blob = F.GraphBlobInfo.parse(raw[: F.GRAPH_BLOB_INFO_SIZE])
            v1 = body.table(F.GRAPH_V3_SLOTS["v2"])
            v1 = v1.table(F.GRAPH_V2_SLOTS["v1"]) if v1 is not None else None
        elif version == 2:
            v1 = body.table(F.GRAPH_V2_SLOTS["v1"])
        if v1 is None:
            raise FormatError(self.path, body.pos, "a GraphInfo v1 table")
        g = F.GRAPH_V1_SLOTS
        kwargs = {}
        if blob is not None:
            kwargs = {k: int(blob[k]) if k != "htp_dlbc" else blob[k][0] for k in BLOB_INFO_FIELDS}
        return Graph(
            name=v1.string(g["name"]) or "",
            inputs=tuple(self._tensor(t) for t in v1.tables(g["inputs"])),
            outputs=tuple(self._tensor(t) for t in v1.tables(g["outputs"])),
            **kwargs,
        )

    def _tensor(self, wrapper: flatbuf.Table) -> Tensor:
        t = wrapper.table(F.WRAPPER_SLOTS["body"]) or wrapper
        s = F.TENSOR_SLOTS
        scale = offset = None
        encoding = t.scalar(s["quantization_encoding"], "I", F.ENCODING_SCALE_OFFSET)
        defined = t.scalar(s["encoding_definition"], "I", 0) != F.DEFINITION_UNDEFINED
        if (
            defined
            and encoding in F.SCALAR_ENCODINGS
            and t.scalar(s["quantization_type"], "B") == F.QUANT_SCALE_OFFSET
        ):
            q = t.table(s["quantization"])
            if q is not None:
                scale = q.scalar(F.SCALE_OFFSET_SLOTS["scale"], "f", 0.0)
                offset = q.scalar(F.SCALE_OFFSET_SLOTS["offset"], "i", 0)
        dtype = t.scalar(s["data_type"], "I", 0)
        ttype = t.scalar(s["type"], "I", 0)
        return Tensor(
            name=t.string(s["name"]) or "",
            id=t.scalar(s["id"], "I", 0),
            dtype=DATATYPE_NAMES.get(dtype, f"0x{dtype:04X}"),
            dims=tuple(t.scalars(s["dims"], "I")),
            scale=scale,
            offset=offset,
            tensor_type=TENSOR_TYPE_NAMES.get(ttype, str(ttype)),
        )

    # -- the context blob (lazy) -----------------------------------------------------------------

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
    def records(self) -> tuple[Record, ...]:
        """The record directory. QAIRT 2.47 files (blob 3.3.4) have none: empty tuple."""
        h = self.blob_header
        if (h.major, h.minor) == F.LEGACY_BLOB_VERSION:
            return self._legacy_records()
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

    def _legacy_records(self) -> tuple[Record, ...]:
        """QAIRT 2.47 (blob 3.3.x): no directory. The HTP context FlatBuffer sits at +0x20 up to the
        first page; the barrels follow back to back on 4 KiB boundaries, each sized by its Sz word 0 x 4;
        whatever follows them is the shared weights. Evidence: fixtures/variants/qairt_2.47.bin."""
        b, end = self.blob_offset, self.blob_offset + self.blob_size
        out = [
            Record("ROOT", b + F.BLOB_HEADER_SIZE, min(F.PAGE, self.blob_size) - F.BLOB_HEADER_SIZE, F.PAGE)
        ]
        pos = b + F.PAGE
        for i, g in enumerate(self.graphs):
            if pos + 8 > end or self._u32(pos) != F.BARREL_MAGIC:
                raise FormatError(
                    self.path, pos, f"the pickle barrel of graph {i} (magic {F.BARREL_MAGIC:#x})"
                )
            hdr, _ = self._header_records(pos + 8, end)
            sz = next((o for t, o, _ in hdr if t == F.TAG_SIZE), None)
            size = 4 * self._u32(sz + 4) if sz is not None else 0
            if size <= 0 or pos + size > end:
                raise FormatError(self.path, pos, f"a barrel size inside the blob (got {size})")
            out.append(Record(f"PICKLE/{256 + i}/{g.name}", pos, size, F.PAGE))
            pos += -(-size // F.PAGE) * F.PAGE
        if pos < end and not self._is_zero(pos, end):
            out.append(Record("WEIGHTS/0", pos, end - pos, F.PAGE))
        return tuple(out)

    def pickle_record(self, graph_index: int) -> Record | None:
        name = self.graphs[graph_index].name
        for r in self.records:
            if r.name.startswith("PICKLE/") and r.name.split("/", 2)[-1] == name:
                return r
        pickles = [r for r in self.records if r.name.startswith("PICKLE/")]
        return pickles[graph_index] if graph_index < len(pickles) else None

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

    def _words(self, start: int, end: int) -> np.ndarray:
        return np.frombuffer(self._buf, dtype="<u4", count=(end - start) // 4, offset=start)

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
        regions.append(Region(f"{pre}/barrel/start", p, 8))
        hdr, hend = self._header_records(p + 8, end)
        regions += [Region(f"{pre}/barrel/{F.HEADER_TAG_NAMES.get(t, 'record')}", o, n) for t, o, n in hdr]
        inner = p + F.INNER_PICKLE_OFFSET if magic == F.BARREL_MAGIC else p
        options_text, ops = "", []
        if inner + 8 <= end and self._u32(inner) == F.PICKLE_MAGIC:
            if inner != p:
                regions.append(Region(f"{pre}/inner/start", inner, 8))
            ihdr, iend = self._header_records(inner + 8, end)
            regions += [
                Region(f"{pre}/inner/{F.HEADER_TAG_NAMES.get(t, 'record')}", o, n) for t, o, n in ihdr
            ]
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
                regions.append(Region(f"{pre}/inner/aux/{aux_name}", pos, 8 + n))
                if tag == b"Co":
                    op_types = self._string_table(pos + 8, n)
                pos += 8 + n
            wd = inner + 4 * self._u32(sizes[0] + 4) if sizes else end
            program_end = wd if inner < wd <= end else end
            ops, list_end = self._op_list(pos, program_end, op_types)
            if ops:
                regions.append(Region(f"{pre}/inner/allocator", pos, ops[0].offset - pos))
                regions.append(Region(f"{pre}/inner/op_list", ops[0].offset, list_end - ops[0].offset))
            if ops and list_end < program_end <= end and self._u32(program_end - 4) == F.OP_LIST_END:
                regions.append(Region(f"{pre}/inner/program_end_marker", program_end - 4, 4))
            if wd + F.WEIGHTS_DESCRIPTOR_SIZE <= end and self._u32(wd) == F.WEIGHTS_DESCRIPTOR_MAGIC:
                regions.append(Region(f"{pre}/inner/weights_descriptor", wd, F.WEIGHTS_DESCRIPTOR_SIZE))
                const = self.graphs[gi].const_size or 0
                pool = min(max(const - F.WEIGHTS_DESCRIPTOR_SIZE, 0), end - wd - F.WEIGHTS_DESCRIPTOR_SIZE)
                regions.append(Region(f"{pre}/inner/const_pool", wd + F.WEIGHTS_DESCRIPTOR_SIZE, pool))
                tail = wd + F.WEIGHTS_DESCRIPTOR_SIZE + pool
                if tail < end and not self._is_zero(tail, end):
                    regions.append(Region(f"{pre}/tail", tail, min(F.PAGE, end - tail)))
        return PickleLayout(tuple(self._fill(regions, rec.offset, end, pre)), options_text, tuple(ops))

    def _string_table(self, start: int, n: int) -> list[str]:
        """The op-type table: count, string word count, NUL-separated names."""
        if n < 8:
            return []
        count, words = self._u32(start), self._u32(start + 4)
        raw = bytes(self._buf[start + 8 : start + 8 + min(4 * words, n - 8)])
        return [s.decode("ascii", "replace") for s in raw.split(b"\x00")][:count]

    def _op_list(self, start: int, end: int, op_types: list[str]) -> tuple[list[Op], int]:
        """Ops in execution order: each record starts with op_index ^ OP_MARKER_XOR; ends at OP_LIST_END."""
        if end - start < 8:
            return [], start
        words = self._words(start, end - (end - start) % 4)
        idx = (words ^ np.uint32(F.OP_MARKER_XOR)) & np.uint32(F.OP_INDEX_MASK)
        cands = np.flatnonzero(idx < min(len(words), 1 << 20))
        stops = np.flatnonzero(words == np.uint32(F.OP_LIST_END))
        ops, want = [], 0
        for c in cands:
            if int(idx[c]) == want and c + 1 < len(words):
                kind_i = int(words[c + 1]) & 0x0FFFFFFF
                kind = op_types[kind_i] if kind_i < len(op_types) else f"type#{kind_i}"
                ops.append(Op(want, kind, start + 4 * int(c)))
                want += 1
        if not ops:
            return [], start
        last = (ops[-1].offset - start) // 4
        after = stops[stops > last]
        list_end = start + 4 * (int(after[0]) + 1) if len(after) else ops[-1].offset + 8
        return ops, list_end

    def _is_zero(self, start: int, end: int) -> bool:
        if end <= start:
            return True
        step = 1 << 20
        for s in range(start, end, step):
            chunk = np.frombuffer(self._buf, dtype=np.uint8, count=min(step, end - s), offset=s)
            if chunk.any():
                return False
        return True

    def _fill(self, regions: list[Region], start: int, end: int, pre: str) -> list[Region]:
        """Sort, check and close the gaps: zero gaps become `padding`, others `unknown`."""
        out, pos = [], start
        for r in sorted((r for r in regions if r.size > 0), key=lambda r: r.offset):
            if r.offset < pos or r.end > end:
                raise FormatError(self.path, r.offset, f"region {r.name} inside {pos:#x}..{end:#x}")
            if r.offset > pos:
                out.append(
                    Region(
                        f"{pre}/{'padding' if self._is_zero(pos, r.offset) else 'unknown'}",
                        pos,
                        r.offset - pos,
                    )
                )
            out.append(r)
            pos = r.end
        if pos < end:
            out.append(Region(f"{pre}/{'padding' if self._is_zero(pos, end) else 'unknown'}", pos, end - pos))
        return out

    def options(self, graph_index: int) -> dict[str, str]:
        lay = self.layout(graph_index)
        return decode_options(lay.options_text) if lay else {}

    def ops(self, graph_index: int) -> tuple[Op, ...]:
        lay = self.layout(graph_index)
        return lay.ops if lay else ()

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        """Named, non-overlapping regions covering every byte of the file, in file order."""
        top = [
            Region("file_header", 0, F.FILE_HEADER_SIZE),
            Region("metadata", F.METADATA_OFFSET, self.header.metadata_size),
        ]
        b = self.blob_offset
        blob = [Region("blob/header", b, F.BLOB_HEADER_SIZE)]
        if self.records and (self.blob_header.major, self.blob_header.minor) != F.LEGACY_BLOB_VERSION:
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
            Region(f"{rec.name}/header", rec.offset, head),
            Region(f"{rec.name}/pool", rec.offset + head, rec.size - head),
        ]


def _clean(r: Region) -> Region:
    """Drop the filler prefixes `_fill` adds at the top level ("file/", "blob/padding" stays)."""
    name = r.name
    if name.startswith("file/"):
        name = name[5:]
    return Region(name, r.offset, r.size)


def open_binary(path: str | os.PathLike) -> ContextBinary:
    """Open a context binary, or the one an ONNX Runtime EPContext model embeds or names."""
    p = Path(path)
    if p.suffix == ".onnx":
        from q9diff.epcontext import extract

        return extract(p)
    return ContextBinary.open(p)
