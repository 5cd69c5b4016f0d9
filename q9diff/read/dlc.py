"""A DLC read with the layouts of formats/dlc.py: its records (a ZIP of stored entries whose CRC fields are
0, so each is read raw at its data offset), the metadata JSON, the graph of a graph DLC (ops, tensors with
their encodings, each weight's bytes in model.params.bin) and the caches of a context DLC (each an
ordinary context binary, handed to q9diff.read.binary, never read here), with a region map covering every
byte of the file.

A file is a DLC by its bytes, not its name: a ZIP whose first record is one a DLC holds (`is_dlc`), as the
`*_qnn.bin` a multi-SoC EPContext build writes is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from q9diff.errors import FormatError
from q9diff.formats import dlc as D
from q9diff.read import flatbuf
from q9diff.read.files import mapped
from q9diff.read.model import Region
from q9diff.read.parse import parse, zeros

# The names of the records a DLC holds, as its first record's name starts (is_dlc).
_DLC_RECORDS = (D.MODEL, D.METADATA_PREFIX, "htp.")


@dataclass(frozen=True)
class Entry:
    """One record of the archive: its local header and its data (offsets in the file)."""

    name: str
    header: int  # the local header's offset
    offset: int  # the data's
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class Encoding:
    """A tensor's quantization (Qnn_QuantizationEncoding_t `encoding`): one scale and offset, or one per
    channel along `axis`."""

    encoding: int
    bitwidth: int
    scale: float
    offset: int
    axis: int | None = None
    per_axis: tuple[tuple[float, int], ...] = ()

    def as_json(self) -> dict:
        out = {
            "encoding": self.encoding,
            "bitwidth": self.bitwidth,
            "scale": self.scale,
            "offset": self.offset,
        }
        if self.axis is not None:
            out |= {"axis": self.axis, "per_axis": [list(p) for p in self.per_axis]}
        return out


@dataclass(frozen=True)
class DlcTensor:
    id: int
    name: str
    type: int  # Qnn_TensorType_t
    dims: tuple[int, ...]
    data_type: int  # Qnn_DataType_t
    encoding: Encoding | None  # None: not quantized (encoding UNDEFINED)


@dataclass(frozen=True)
class DlcOp:
    name: str  # generated: not a key
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: tuple[tuple[str, object], ...]  # (name, a scalar value, or TensorAttribute)


@dataclass(frozen=True)
class TensorAttribute:
    """An op attribute held as a tensor (a Transpose's perm, a Conv2d's stride): its generated name, its
    shape, and its data's place in model.params.bin (None where the params list none)."""

    name: str
    dims: tuple[int, ...]
    data_type: int  # Qnn_DataType_t
    data: Weight | None = None


@dataclass(frozen=True)
class Weight:
    """A static tensor's bytes in model.params.bin (`offset` in the file)."""

    name: str
    offset: int
    size: int


@dataclass(frozen=True)
class DlcGraph:
    name: str
    ops: tuple[DlcOp, ...]
    tensors: tuple[DlcTensor, ...]
    weights: tuple[Weight, ...]
    op_params: tuple[Weight, ...] = ()  # tensor attributes' data, per op in op order

    def tensor(self, name: str) -> DlcTensor | None:
        """The tensor of that name (the first, where a hostile file repeats one)."""
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, DlcTensor]:
        out: dict[str, DlcTensor] = {}
        for t in self.tensors:
            out.setdefault(t.name, t)
        return out


@dataclass(frozen=True)
class Cache:
    """One htp.cache record of a context DLC, with what the metadata JSON's cacheList says of it (None
    where it says nothing)."""

    name: str
    offset: int
    size: int
    info: dict = field(default_factory=dict)


def is_dlc(path: str | os.PathLike) -> bool:
    """Whether the file's bytes start as a DLC's: a ZIP local header of a stored record a DLC holds."""
    try:
        with open(path, "rb") as f:
            head = f.read(30 + 64)
    except OSError:
        return False
    if head[:4] != b"PK\x03\x04" or len(head) < 30:
        return False
    n = int.from_bytes(head[26:28], "little")
    name = head[30 : 30 + min(n, 64)].decode("ascii", "replace")
    return name.startswith(_DLC_RECORDS)


class Dlc:
    """A DLC over a buffer (a mapped file): its records read at once, the rest on demand."""

    def __init__(self, buf, path: str):
        self.path, self.buf = path, memoryview(buf)
        self.size = len(self.buf)
        self.entries, self._structure = self._walk()
        self.by_name = {e.name: e for e in self.entries}

    @classmethod
    def open(cls, path: str | os.PathLike) -> Dlc:
        return cls(mapped(Path(path), "a DLC (a ZIP archive)"), str(path))

    # -- the archive ---------------------------------------------------------------------------------

    def _walk(self) -> tuple[tuple[Entry, ...], list[Region]]:
        """Every record from the central directory (found from the end), each local header checked
        against it; the regions of the ZIP's own structures."""
        p, buf, size = self.path, self.buf, self.size
        if size < D.END_SIZE + D.ZIP64_LOCATOR_SIZE:
            raise FormatError(p, 0, f"a DLC (a ZIP archive) of at least {D.END_SIZE} bytes")
        end_at = size - D.END_SIZE
        parse(
            D.EndOfDirectory, buf, end_at, p, "a ZIP end-of-central-directory record (a DLC has no comment)"
        )
        loc_at = end_at - D.ZIP64_LOCATOR_SIZE
        loc = parse(D.Zip64Locator, buf, loc_at, p, "a zip64 end-of-central-directory locator")
        if loc.end_offset + D.ZIP64_END_SIZE != loc_at:
            raise FormatError(p, loc_at, f"a zip64 end record just before the locator (got {loc.end_offset})")
        z = parse(D.Zip64End, buf, loc.end_offset, p, "a zip64 end-of-central-directory record")
        if z.entries > D.MAX_RECORDS or z.directory_offset + z.directory_size != loc.end_offset:
            raise FormatError(
                p,
                loc.end_offset,
                f"a central directory ending at {loc.end_offset} of at most {D.MAX_RECORDS} records",
            )
        structure = [
            Region("zip/central_directory", z.directory_offset, z.directory_size),
            Region("zip/zip64_end", loc.end_offset, D.ZIP64_END_SIZE),
            Region("zip/zip64_locator", loc_at, D.ZIP64_LOCATOR_SIZE),
            Region("zip/end", end_at, D.END_SIZE),
        ]
        pos, entries = z.directory_offset, []
        for _ in range(z.entries):
            c = parse(D.CentralHeader, buf, pos, p, "a ZIP central directory header", loc.end_offset)
            x = parse(D.CentralZip64, c.extra, 0, p, "a zip64 extra in the central header", located=False)
            entries.append(self._local(x.local_offset, c.name, x.size, pos))
            pos += 46 + c.name_length + c.extra_length + c.comment_length
        if pos != loc.end_offset:
            raise FormatError(p, pos, f"the central directory's headers ending at {loc.end_offset}")
        entries.sort(key=lambda e: e.header)
        for a, b in zip(entries, entries[1:]):
            if b.header < a.end:
                raise FormatError(p, b.header, f"records that do not overlap ({a.name} ends at {a.end})")
        for e in entries:
            structure.append(Region(f"zip/local_header/{e.name}", e.header, e.offset - e.header))
        return tuple(entries), structure

    def _local(self, at: int, name: bytes, size: int, central: int) -> Entry:
        p = self.path
        if at >= self.size:
            raise FormatError(p, central, f"a local header offset inside the file (got {at})")
        h = parse(D.LocalHeader, self.buf, at, p, "a ZIP local header of a stored record")
        if h.name != name:
            raise FormatError(p, at, f"the local header of {name!r} (it names {h.name!r})")
        x = parse(D.LocalZip64, h.extra, 0, p, "a zip64 extra in the local header", located=False)
        offset = at + 30 + h.name_length + h.extra_length
        if x.size != size or x.compressed_size != size or offset + size > self.size:
            raise FormatError(p, at, f"a stored record of {size} bytes inside the file (got {x.size})")
        return Entry(name.decode("utf-8", "replace"), at, offset, size)

    def data(self, e: Entry) -> memoryview:
        return self.buf[e.offset : e.end]

    # -- the metadata --------------------------------------------------------------------------------

    def _json(self, prefix: str) -> dict:
        e = next((e for e in self.entries if e.name.startswith(prefix)), None)
        if e is None:
            return {}
        try:
            found = json.loads(bytes(self.data(e)))
        except (UnicodeDecodeError, ValueError):
            raise FormatError(self.path, e.offset, f"the JSON of record {e.name}") from None
        return found if isinstance(found, dict) else {}

    @cached_property
    def metadata(self) -> dict:
        """dlc.metadata<version>: the header, and for a context DLC its cacheList."""
        return self._json(D.METADATA_PREFIX + "2") or self._json(D.METADATA_PREFIX + "-")

    @cached_property
    def history(self) -> dict:
        """dlc.metadata.history.<version>: how the DLC was made (dlcGenerationInfo)."""
        return self._json(D.METADATA_PREFIX + ".history")

    @cached_property
    def converter_version(self) -> str | None:
        """The QAIRT build that wrote it (converterCommand.converterVersion, e.g. 2.51.0.260929181845)."""
        for info in self.history.get("dlcGenerationInfo") or []:
            command = info.get("converterCommand") if isinstance(info, dict) else None
            if isinstance(command, dict) and isinstance(command.get("converterVersion"), str):
                return command["converterVersion"]
        return None

    @property
    def kind(self) -> str:
        return "context" if self.caches else "graph"

    # -- a context DLC's caches ----------------------------------------------------------------------

    @cached_property
    def caches(self) -> tuple[Cache, ...]:
        """The context records: named htp.cache.<soc>.<n> (QAIRT 2.51), or whatever the metadata's cacheList
        names (QAIRT 2.49 writes backend.metadata<n>), each with what the cacheList says of it."""
        listed = self.metadata.get("cacheList") or []
        info = {c.get("cacheName"): c for c in listed if isinstance(c, dict)}
        return tuple(
            Cache(e.name, e.offset, e.size, info.get(e.name, {}))
            for e in self.entries
            if e.name.startswith(D.CACHE_PREFIX) or e.name in info
        )

    # -- a graph DLC's graphs ------------------------------------------------------------------------

    def _flatbuffer(self, name: str, ident: bytes) -> flatbuf.Table | None:
        e = self.by_name.get(name)
        if e is None:
            return None
        parse(D.RecordPrefix, self.buf, e.offset, self.path, f"the 8-byte prefix of record {name}", e.end)
        at, n = e.offset + D.PREFIX_SIZE, e.size - D.PREFIX_SIZE
        if bytes(self.buf[at + 4 : at + 8]) != ident:
            raise FormatError(self.path, at + 4, f"the FlatBuffer identifier {ident!r} of record {name}")
        return flatbuf.root(self.buf, at, n, self.path)

    @cached_property
    def graphs(self) -> tuple[DlcGraph, ...]:
        model = self._flatbuffer(D.MODEL, D.MODEL_IDENT)
        if model is None:
            return ()
        params = self._params()
        out = []
        for g in model.get(D.NETD_MODEL["graphs"]):
            name = g.get(D.NETD_GRAPH["name"], "")
            weights, op_params = params.get(name, ((), ()))
            by_name = {w.name: w for w in op_params}
            ops = tuple(_op(n, by_name) for n in g.get(D.NETD_GRAPH["nodes"]))
            tensors = tuple(_tensor(t) for t in g.get(D.NETD_GRAPH["tensors"]))
            out.append(DlcGraph(name, ops, tensors, weights, op_params))
        return tuple(out)

    def _params(self) -> dict[str, tuple[tuple[Weight, ...], tuple[Weight, ...]]]:
        """Each graph's static tensors and its ops' tensor attributes, by their places in model.params.bin
        (each checked to lie inside it)."""
        params = self._flatbuffer(D.PARAMS, D.PARAMS_IDENT)
        if params is None:
            return {}
        out = {}
        for g in params.get(D.NETP_MODEL["graphs"]):
            weights = self._data(g.get(D.NETP_GRAPH["tensors"]))
            nodes = [t for n in g.get(D.NETP_GRAPH["nodes"]) for t in n.get(D.NODE_PARAMETERS["tensors"])]
            out[g.get(D.NETP_GRAPH["name"], "")] = (weights, self._data(nodes))
        return out

    def _data(self, tensors: list[flatbuf.Table]) -> tuple[Weight, ...]:
        bin_ = self.by_name.get(D.PARAMS_BIN)
        found = []
        for t in tensors:
            at = t.get(D.TENSOR_DATA["position"])
            if at is None:
                continue
            offset, size = at.get(D.DATA_POSITION["offset"], 0), at.get(D.DATA_POSITION["size"], 0)
            if bin_ is None or offset + size > bin_.size:
                raise FormatError(
                    self.path, at.pos, f"a weight inside {D.PARAMS_BIN} (offset {offset}, size {size})"
                )
            found.append(Weight(t.get(D.TENSOR_DATA["name"], ""), bin_.offset + offset, size))
        return tuple(found)

    # -- every byte ----------------------------------------------------------------------------------

    @cached_property
    def regions(self) -> tuple[Region, ...]:
        """Named regions covering every byte, in file order: the ZIP's structures, each record (its
        weights one by one in model.params.bin), zero gaps as padding, the rest `unknown`."""
        out = list(self._structure)
        weights = {(w.offset, w.size, w.name, "weights") for g in self.graphs for w in g.weights}
        weights |= {(w.offset, w.size, w.name, "structure") for g in self.graphs for w in g.op_params}
        for e in self.entries:
            if e.name == D.PARAMS_BIN:
                inside = sorted(weights)
                out += [Region(f"{e.name}/{n}", o, s, k) for o, s, n, k in inside]
                out += self._gaps([(o, o + s) for o, s, _, _ in inside], e.offset, e.end, e.name)
            elif e.name in (D.MODEL, D.PARAMS):
                out.append(Region(f"{e.name}/prefix", e.offset, D.PREFIX_SIZE))
                out.append(Region(f"{e.name}/flatbuffer", e.offset + D.PREFIX_SIZE, e.size - D.PREFIX_SIZE))
            elif e.name.startswith(D.SHARED_WEIGHTS_PREFIX):
                out.append(Region(e.name, e.offset, e.size, "weights"))
            else:
                out.append(Region(e.name, e.offset, e.size))
        ranges = [(r.offset, r.end) for r in out]
        out += self._gaps(ranges, 0, self.size, "file")
        out.sort(key=lambda r: r.offset)
        pos = 0
        for r in out:
            if r.offset != pos:
                raise FormatError(self.path, r.offset, f"region {r.name} to start at {pos:#x}")
            pos = r.end
        return tuple(r for r in out if r.size)

    def _gaps(self, ranges: list[tuple[int, int]], start: int, end: int, within: str) -> list[Region]:
        out, pos = [], start
        for a, b in sorted(ranges) + [(end, end)]:
            if a > pos and pos >= start and a <= end:
                kind = "padding" if zeros(self.buf, pos, a) else "unknown"
                out.append(Region(f"{within}/{kind}", pos, a - pos, kind))
            pos = max(pos, b)
        return out


def _op(n: flatbuf.Table, params: dict[str, Weight]) -> DlcOp:
    attrs = []
    for a in n.get(D.NODE["attributes"]):
        value: object = None
        v, t = a.get(D.ATTRIBUTE["value"]), a.get(D.ATTRIBUTE["tensor"])
        if v is not None:
            value = v.get(D.SCALAR["string"])
            if value is None:
                value = (
                    v.get(D.SCALAR["float"]) if v.has(D.SCALAR["float"].slot) else v.get(D.SCALAR["int"], 0)
                )
        elif t is not None:
            name = t.get(D.TENSOR["name"], "")
            dims, data_type = tuple(t.get(D.TENSOR["dims"])), t.get(D.TENSOR["data_type"], 0)
            value = TensorAttribute(name, dims, data_type, params.get(name))
        attrs.append((a.get(D.ATTRIBUTE["name"], ""), value))
    return DlcOp(
        n.get(D.NODE["name"], ""),
        n.get(D.NODE["type"], ""),
        tuple(n.get(D.NODE["inputs"])),
        tuple(n.get(D.NODE["outputs"])),
        tuple(attrs),
    )


def _tensor(t: flatbuf.Table) -> DlcTensor:
    return DlcTensor(
        t.get(D.TENSOR["id"], 0),
        t.get(D.TENSOR["name"], ""),
        t.get(D.TENSOR["type"], 0),
        tuple(t.get(D.TENSOR["dims"])),
        t.get(D.TENSOR["data_type"], 0),
        _encoding(t.get(D.TENSOR["quantization"])),
    )


def _encoding(q: flatbuf.Table | None) -> Encoding | None:
    if q is None:
        return None
    kind = q.get(D.QUANTIZATION["encoding"], 0)
    if kind == D.ENCODING_UNDEFINED:
        return None
    one = q.get(D.QUANTIZATION["scale_offset"])
    axis = q.get(D.QUANTIZATION["axis_scale_offset"])
    bitwidth, scale, offset = (0, 0.0, 0) if one is None else _scale_offset(one)
    if axis is None:
        return Encoding(kind, bitwidth, scale, offset)
    each = tuple(_scale_offset(e)[1:] for e in axis.get(D.AXIS_SCALE_OFFSET["encodings"]))
    first = axis.get(D.AXIS_SCALE_OFFSET["encodings"])
    if one is None and first:
        bitwidth = _scale_offset(first[0])[0]
    return Encoding(kind, bitwidth, scale, offset, axis.get(D.AXIS_SCALE_OFFSET["axis"], 0), each)


def _scale_offset(s: flatbuf.Table) -> tuple[int, float, int]:
    f = D.SCALE_OFFSET
    return s.get(f["bitwidth"], 0), s.get(f["scale"], 0.0), s.get(f["offset"], 0)


def contexts(path: Path) -> list[tuple[str, tuple[int, int]]]:
    """(cache name, (offset, size)) of every htp.cache record of a context DLC, in file order: the
    contexts q9diff.read.openers indexes; none for a graph DLC."""
    return [(c.name, (c.offset, c.size)) for c in Dlc.open(path).caches]


def behind(file: Path, container: str | None) -> Path | None:
    """The DLC a path given whole reads: the file itself, or the one context file an EPContext model's
    nodes name when that is a DLC; None for anything else."""
    if container == ".dlc":
        return file
    if container != ".onnx":
        return None
    from q9diff.read.epcontext import contexts as nodes  # start-up: onnx, only for an EPContext model

    named = {s for _, s in nodes(file) if isinstance(s, Path)}
    return next(iter(named)) if len(named) == 1 and is_dlc(next(iter(named))) else None
