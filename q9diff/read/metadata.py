"""The eager part of reading a context binary: the file header and the metadata FlatBuffer (build, versions,
socModel, dspArch, graphs and their tensors), for every header QNN 2.22 to QAIRT 2.51 writes. A mixin of
`ContextBinary`, which keeps the blob's lazy walks."""

from __future__ import annotations

from q9diff.errors import FormatError
from q9diff.formats import context_binary as CB
from q9diff.formats import flatbuffer_slots as S
from q9diff.read import flatbuf
from q9diff.read.model import BLOB_INFO_FIELDS, Graph, Region, Tensor
from q9diff.read.parse import matches, offset_of, parse
from q9diff.read.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES

HEADER = "a QNN context binary header (big-endian words 2 3 0 1, or 2 2 0 0 before QNN 2.25)"


def _version(v) -> str | None:
    return None if v is None else f"{v.major}.{v.minor}.{v.patch}"


def blob_info_fields(raw: bytes) -> dict[str, int]:
    """The graphBlobInfo fields a file records (CB.GraphBlobInfo): version 1 alone (40 bytes) or versions 1
    and 2 (112), with `blob_info_size` the bytes they take; {} where they are of no known version."""
    info = matches(CB.GraphBlobInfo, raw, 0)
    if info is None:
        return {}
    out = {k: info.v1[k] for k in _fields(CB.GraphBlobInfoV1)}
    out["blob_info_size"] = CB.GraphBlobInfoV1.sizeof()
    if info.v2 is not None:
        out.update({k: info.v2[k] for k in _fields(CB.GraphBlobInfoV2)})
        out["blob_info_size"] += CB.GraphBlobInfoV2.sizeof()
    return out


def _fields(definition) -> list[str]:
    """The named fields of a record but its version."""
    return [sub.name for sub in definition.subcons if sub.name and sub.name != "version"]


class MetadataReader:
    """Header and metadata of a ContextBinary: `_buf`, `path` and `size` are the binary's."""

    def _parse_header(self) -> None:
        path = self.path
        h = parse(CB.FileHeader, self._buf, 0, path, HEADER)
        by_magic = {CB.FILE_MAGIC: self._header_2_3_0_1, CB.FILE_MAGIC_2_22: self._header_2_2_0_0}
        top, root = by_magic[h.magic](h.sizes)
        meta = top.get(root["binary_info"])
        version = meta.get(S.WRAPPER["version"]) if meta is not None else None
        info = meta.get(S.WRAPPER["body"]) if version is not None else None
        if info is None:
            raise FormatError(path, top.pos, "a versioned BinaryInfo wrapper table")
        if version not in S.BINARY_INFO_BY_VERSION:
            raise FormatError(path, meta.pos, f"BinaryInfo version 1, 2 or 3 (got {version})")
        self.binary_info_version = version
        self.unknown: dict[str, str] = {}
        s = S.BINARY_INFO_BY_VERSION[version]
        self.backend_id = info.get(s["backend_id"], 0)
        self.build_id = info.get(s["build_id"], "")
        self.soc_version = info.get(s["soc_version"], "")
        self.core_api_version = _version(info.get(s["core_api_version"]))
        self.backend_api_version = _version(info.get(s["backend_api_version"]))
        self.context_blob_version = _version(info.get(s["context_blob_version"]))
        for name in ("core_api_version", "backend_api_version", "context_blob_version"):
            if getattr(self, name) is None:
                self.unknown[name] = f"not recorded: the BinaryInfo has no {name}"
        self.context_blob_size = info.get(s["context_blob_size"])
        if "soc_model" in s:
            # An absent socModel is the FlatBuffer default 0, which is what libQnnSystem reports.
            self.soc_model = info.get(s["soc_model"], 0)
            cm = info.get(s["context_metadata"])
            self.context_metadata_size = len(cm) if cm is not None else None
            meta_v = matches(CB.ContextMetadata, cm, 0) if cm else None
            known = meta_v is not None and meta_v.version == CB.CONTEXT_METADATA_VERSION
            self.dsp_arch = meta_v.dsp_arch if known else None
            if self.dsp_arch is None:
                self.unknown["dsp_arch"] = "not recorded: the metadata carries no version-1 contextMetadata"
        else:
            self.soc_model = self.dsp_arch = self.context_metadata_size = None
            why = f"not recorded: BinaryInfo version {version} (QNN {self.build_id[1:5] or '?'}) has no "
            self.unknown["soc_model"] = why + "socModel"
            self.unknown["dsp_arch"] = why + "contextMetadata (dspArch)"
        self.graphs = tuple(self._graph(w) for w in info.get(s["graphs"]))
        if self.context_blob_size is not None and self.context_blob_size != self.blob_size:
            raise FormatError(
                path,
                top.pos,
                f"metadata contextBlobSize equal to the file's blob size {self.blob_size}"
                f" (got {self.context_blob_size})",
            )

    def _header_2_3_0_1(self, sizes) -> tuple[flatbuf.Table, dict]:
        """QNN 2.25 on: a 40-byte header with the metadata size and the blob's offset and size."""
        buf, path = self._buf, self.path
        if CB.METADATA_OFFSET + sizes.metadata_size > min(sizes.blob_offset, self.size):
            raise FormatError(
                path,
                _at("metadata_size"),
                f"a metadata size that fits before the blob (got {sizes.metadata_size})",
            )
        if sizes.blob_offset + sizes.blob_size > self.size:
            raise FormatError(
                path,
                _at("blob_size"),
                f"a context blob of {sizes.blob_size} bytes at {sizes.blob_offset:#x} (file has {self.size})",
            )
        self.blob_offset, self.blob_size = sizes.blob_offset, sizes.blob_size
        self.header_regions = (
            Region("file_header", 0, CB.FILE_HEADER_SIZE),
            Region("metadata", CB.METADATA_OFFSET, sizes.metadata_size),
        )
        return flatbuf.root(buf, CB.METADATA_OFFSET, sizes.metadata_size, path), S.METADATA_ROOT

    def _header_2_2_0_0(self, _sizes: None) -> tuple[flatbuf.Table, dict]:
        """QNN 2.22: a 16-byte header, the metadata FlatBuffer at 0x10 carrying its own size, a u64
        blob size, then the blob to the end of the file (see formats.context_binary)."""
        buf, path = self._buf, self.path
        start, word = CB.LEGACY_FILE_HEADER_SIZE, CB.LegacyBlobSize.sizeof()
        top = flatbuf.root(buf, start, self.size - start, path)
        msize = top.get(S.LEGACY_ROOT["metadata_size"])
        if msize is None or CB.LEGACY_METADATA_BASE + msize + word > self.size:
            raise FormatError(path, top.pos, f"a metadata size inside the file (got {msize})")
        mend = CB.LEGACY_METADATA_BASE + msize
        blob_size = parse(CB.LegacyBlobSize, buf, mend, path, "the u64 size of the context blob")
        if mend + word + blob_size > self.size:
            raise FormatError(
                path,
                mend,
                f"a context blob size that fits the file (got {blob_size}, {self.size - mend - word} left)",
            )
        self.blob_offset, self.blob_size = mend + word, blob_size
        self.header_regions = (
            Region("file_header", 0, start),
            Region("metadata", start, mend - start),
            Region("blob_size", mend, word),
        )
        return flatbuf.root(buf, start, mend - start, path), S.LEGACY_ROOT

    def _graph(self, wrapper: flatbuf.Table) -> Graph:
        version = wrapper.get(S.WRAPPER["version"], 1)
        body = wrapper.get(S.WRAPPER["body"])
        if body is None:
            raise FormatError(self.path, wrapper.pos, "a GraphInfo body")
        v1 = body
        fields: dict[str, int] = {}
        if version >= 3:
            fields = blob_info_fields(body.get(S.GRAPH_V3["blob_info"], b""))
            v1 = body.get(S.GRAPH_V3["v2"])
            v1 = v1.get(S.GRAPH_V2["v1"]) if v1 is not None else None
        elif version == 2:
            v1 = body.get(S.GRAPH_V2["v1"])
        if v1 is None:
            raise FormatError(self.path, body.pos, "a GraphInfo v1 table")
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
            name=v1.get(S.GRAPH_V1["name"], ""),
            inputs=tuple(self._tensor(t) for t in v1.get(S.GRAPH_V1["inputs"])),
            outputs=tuple(self._tensor(t) for t in v1.get(S.GRAPH_V1["outputs"])),
            graph_info_version=version,
            unknown=tuple(unknown),
            **fields,
        )

    def _tensor(self, wrapper: flatbuf.Table) -> Tensor:
        t = wrapper.get(S.WRAPPER["body"]) or wrapper
        s = S.TENSOR
        scale = offset = None
        encoding = t.get(s["quantization_encoding"], S.ENCODING_SCALE_OFFSET)
        defined = t.get(s["encoding_definition"], 0) != S.DEFINITION_UNDEFINED
        if (
            defined
            and encoding in S.SCALAR_ENCODINGS
            and t.get(s["quantization_type"]) == S.QUANT_SCALE_OFFSET
        ):
            q = t.get(s["quantization"])
            if q is not None:
                scale = q.get(S.SCALE_OFFSET["scale"], 0.0)
                offset = q.get(S.SCALE_OFFSET["offset"], 0)
        dtype = t.get(s["data_type"], 0)
        ttype = t.get(s["type"], 0)
        return Tensor(
            name=t.get(s["name"], ""),
            id=t.get(s["id"], 0),
            dtype=DATATYPE_NAMES.get(dtype, f"0x{dtype:04X}"),
            dims=t.get(s["dims"]),
            scale=scale,
            offset=offset,
            tensor_type=TENSOR_TYPE_NAMES.get(ttype, str(ttype)),
            data_format=t.get(s["data_format"], 0),
            encoding_definition=t.get(s["encoding_definition"]),
        )


def _at(field: str) -> int:
    """Where a field of the QNN 2.25+ file header's sizes sits in the file."""
    return CB.MAGIC_SIZE + offset_of(CB.HeaderSizes, field)
