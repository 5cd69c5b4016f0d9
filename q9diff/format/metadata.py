"""The eager part of reading a context binary: the file header and the metadata FlatBuffer (build, versions,
socModel, dspArch, graphs and their tensors), for every header QNN 2.22 to QAIRT 2.51 writes. A mixin of
`ContextBinary`, which keeps the blob's lazy walks."""

from __future__ import annotations

import struct

from q9diff.errors import FormatError
from q9diff.format import flatbuf
from q9diff.format import structs as F
from q9diff.format.model import BLOB_INFO_FIELDS, Graph, Region, Tensor, _blob_info_fields
from q9diff.format.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES


def _version(v) -> str | None:
    return None if v is None else f"{v.major}.{v.minor}.{v.patch}"


class MetadataReader:
    """Header and metadata of a ContextBinary: `_buf`, `path` and `size` are the binary's."""

    def _parse_header(self) -> None:
        buf, path = self._buf, self.path
        magic = bytes(buf[:16]) if self.size >= 16 else b""
        if magic == F.FILE_MAGIC:
            top = self._header_2_3_0_1()
        elif magic == F.FILE_MAGIC_2_22:
            top = self._header_2_2_0_0()
        else:
            raise FormatError(
                path,
                0,
                "a QNN context binary header (big-endian words 2 3 0 1, or 2 2 0 0 before QNN 2.25)",
            )
        meta = top.table(F.METADATA_ROOT_SLOT)
        version = meta.scalar(F.WRAPPER_SLOTS["version"], "I") if meta is not None else None
        info = meta.table(F.WRAPPER_SLOTS["body"]) if version is not None else None
        if info is None:
            raise FormatError(path, top.pos, "a versioned BinaryInfo wrapper table")
        if version not in (1, 2, 3):
            raise FormatError(path, meta.pos, f"BinaryInfo version 1, 2 or 3 (got {version})")
        self.binary_info_version = version
        self.unknown: dict[str, str] = {}
        s = F.BINARY_INFO_SLOTS if version == 3 else F.BINARY_INFO_V1_SLOTS
        api = F.ApiVersion.parse
        self.backend_id = info.scalar(s["backend_id"], "I", 0)
        self.build_id = info.string(s["build_id"]) or ""
        self.soc_version = info.string(s["soc_version"]) or ""
        self.core_api_version = _version(info.struct_at(s["core_api_version"], api, 12))
        self.backend_api_version = _version(info.struct_at(s["backend_api_version"], api, 12))
        blob_v = info.struct_at(s["context_blob_version"], api, 12)
        self.context_blob_version = _version(blob_v)
        for name in ("core_api_version", "backend_api_version", "context_blob_version"):
            if getattr(self, name) is None:
                self.unknown[name] = f"not recorded: the BinaryInfo has no {name}"
        self.context_blob_size = info.scalar(s["context_blob_size"], "Q")
        if version == 3:
            # An absent socModel is the FlatBuffer default 0, which is what libQnnSystem reports.
            self.soc_model = info.scalar(s["soc_model"], "I", 0)
            cm = info.bytes(s["context_metadata"])
            self.context_metadata_size = len(cm) if cm is not None else None
            meta_v = F.ContextMetadata.parse(cm) if cm and len(cm) >= 8 else None
            self.dsp_arch = meta_v.dsp_arch if meta_v is not None and meta_v.version == 1 else None
            if self.dsp_arch is None:
                self.unknown["dsp_arch"] = "not recorded: the metadata carries no version-1 contextMetadata"
        else:
            self.soc_model = self.dsp_arch = self.context_metadata_size = None
            why = f"not recorded: BinaryInfo version {version} (QNN {self.build_id[1:5] or '?'}) has no "
            self.unknown["soc_model"] = why + "socModel"
            self.unknown["dsp_arch"] = why + "contextMetadata (dspArch)"
        self.graphs = tuple(self._graph(w) for w in info.tables(s["graphs"]))
        if self.context_blob_size is not None and self.context_blob_size != self.blob_size:
            raise FormatError(
                path,
                top.pos,
                f"metadata contextBlobSize equal to the file's blob size {self.blob_size}"
                f" (got {self.context_blob_size})",
            )

    def _header_2_3_0_1(self) -> flatbuf.Table:
        """QNN 2.25 on: a 40-byte header with the metadata size and the blob's offset and size."""
        buf, path = self._buf, self.path
        if self.size < F.FILE_HEADER_SIZE:
            raise FormatError(
                path, 0, f"a {F.FILE_HEADER_SIZE}-byte context binary header (file has {self.size} bytes)"
            )
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
        self.blob_offset, self.blob_size = h.blob_offset, h.blob_size
        self.header_regions = (
            Region("file_header", 0, F.FILE_HEADER_SIZE),
            Region("metadata", F.METADATA_OFFSET, h.metadata_size),
        )
        return flatbuf.root(buf, F.METADATA_OFFSET, h.metadata_size, path)

    def _header_2_2_0_0(self) -> flatbuf.Table:
        """QNN 2.22: a 16-byte header, the metadata FlatBuffer at 0x10 carrying its own size, a u64
        blob size, then the blob to the end of the file (see formats.context_binary)."""
        buf, path = self._buf, self.path
        start = F.LEGACY_FILE_HEADER_SIZE
        top = flatbuf.root(buf, start, self.size - start, path)
        msize = top.scalar(F.LEGACY_ROOT_SLOTS["metadata_size"], "Q")
        if msize is None or F.LEGACY_METADATA_BASE + msize + 8 > self.size:
            raise FormatError(path, top.pos, f"a metadata size inside the file (got {msize})")
        mend = F.LEGACY_METADATA_BASE + msize
        blob_size = struct.unpack_from("<Q", buf, mend)[0]
        if mend + 8 + blob_size > self.size:
            raise FormatError(
                path,
                mend,
                f"a context blob size that fits the file (got {blob_size}, {self.size - mend - 8} left)",
            )
        self.blob_offset, self.blob_size = mend + 8, blob_size
        self.header_regions = (
            Region("file_header", 0, start),
            Region("metadata", start, mend - start),
            Region("blob_size", mend, 8),
        )
        return flatbuf.root(buf, start, mend - start, path)

    def _graph(self, wrapper: flatbuf.Table) -> Graph:
        version = wrapper.scalar(F.WRAPPER_SLOTS["version"], "I", 1)
        body = wrapper.table(F.WRAPPER_SLOTS["body"])
        if body is None:
            raise FormatError(self.path, wrapper.pos, "a GraphInfo body")
        v1 = body
        fields: dict[str, int] = {}
        if version >= 3:
            raw = body.bytes(F.GRAPH_V3_SLOTS["blob_info"]) or b""
            fields = _blob_info_fields(raw)
            v1 = body.table(F.GRAPH_V3_SLOTS["v2"])
            v1 = v1.table(F.GRAPH_V2_SLOTS["v1"]) if v1 is not None else None
        elif version == 2:
            v1 = body.table(F.GRAPH_V2_SLOTS["v1"])
        if v1 is None:
            raise FormatError(self.path, body.pos, "a GraphInfo v1 table")
        g = F.GRAPH_V1_SLOTS
        unknown = []
        for k in BLOB_INFO_FIELDS:
            if k in fields:
                continue
            if version < 3:
                unknown.append((k, f"not recorded: GraphInfo version {version} has no graphBlobInfo"))
            elif not fields:
                unknown.append(
                    (k, "not recorded: this graph's graphBlobInfo is empty or of an unknown version")
                )
            else:
                unknown.append((k, "not recorded: graphBlobInfo version 1 only (before QNN 2.40)"))
        return Graph(
            name=v1.string(g["name"]) or "",
            inputs=tuple(self._tensor(t) for t in v1.tables(g["inputs"])),
            outputs=tuple(self._tensor(t) for t in v1.tables(g["outputs"])),
            graph_info_version=version,
            unknown=tuple(unknown),
            **fields,
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
            data_format=t.scalar(s["data_format"], "I", 0),
            encoding_definition=t.scalar(s["encoding_definition"], "I"),
        )

    # -- the context blob (lazy) -----------------------------------------------------------------
