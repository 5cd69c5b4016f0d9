"""Compare the parser's view with official metadata: libQnnSystem, or a qnn-context-binary-utility JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from q9diff.compare.summary import BLOB_INFO_FIELDS
from q9diff.errors import Q9Error
from q9diff.guard import load_json
from q9diff.read.binary import BLOB_INFO_V2_EXTRA, ContextBinary
from q9diff.read.tables import DATA_FORMAT_NAMES, DEFINITION_NAMES

TOP_FIELDS = (
    "build_id",
    "core_api_version",
    "backend_api_version",
    "context_blob_version",
    "soc_model",
    "dsp_arch",
    "soc_version",
)
TENSOR_FIELDS = ("name", "id", "dtype", "dims", "scale", "offset", "tensor_type", "data_format")


def disagreements(cb: ContextBinary, oracle: dict) -> list[str]:
    """Every field where the parser and the oracle's to_dict() differ, as 'path: parser != oracle'."""
    out = []

    def check(path: str, mine, theirs) -> None:
        if isinstance(theirs, list):
            theirs = tuple(theirs)
        if mine != theirs:
            out.append(f"{path}: parser {mine!r} != oracle {theirs!r}")

    for f in TOP_FIELDS:
        check(f, getattr(cb, f), oracle.get(f))
    check("context_blob_size", cb.blob_size, oracle.get("context_blob_size"))
    check("graphs", len(cb.graphs), len(oracle.get("graphs", [])))
    for g, og in zip(cb.graphs, oracle.get("graphs", [])):
        check(f"{g.name}.name", g.name, og["name"])
        for f in (*BLOB_INFO_FIELDS, *BLOB_INFO_V2_EXTRA):
            check(f"{g.name}.{f}", getattr(g, f), og.get(f))
        for kind in ("inputs", "outputs"):
            mine, theirs = getattr(g, kind), og.get(kind, [])
            check(f"{g.name}.{kind}", len(mine), len(theirs))
            for t, ot in zip(mine, theirs):
                for f in TENSOR_FIELDS:
                    check(f"{g.name}.{kind}.{t.name}.{f}", getattr(t, f), ot.get(f))
    return out


def compare_with_oracle(cb: ContextBinary) -> list[str]:
    """libQnnSystem's reading of the same bytes against q9diff's. A context inside another file (a
    LiteRT .tflite, an embedded EPContext node: `FILE#NAME`) is handed over as a private temporary copy."""
    import os
    import tempfile

    from q9diff.oracle.reader import read_binary_info_isolated, to_dict  # start-up: oracle.reader

    if os.path.isfile(cb.path):
        return disagreements(cb, to_dict(read_binary_info_isolated(cb.path)))
    with tempfile.TemporaryDirectory(prefix="q9diff-oracle-") as tmp:
        copy = os.path.join(tmp, "context.bin")
        with open(copy, "wb") as f:
            f.write(cb.data)
        return disagreements(cb, to_dict(read_binary_info_isolated(copy)))


# qnn-context-binary-utility --json_file, in the shape the real dumps show (../shared/real/utility: QNN
# 2.45 AI Hub binaries; hotschmoe/specula results/qualcomm_dissect/part1.json: QNN 2.42):
#   header {artifact_type CONTEXT_BINARY_INFO, version, header_version}, version (BinaryInfo version name),
#   info {backendId, buildId, coreApiVersion, backendApiVersion, contextBlobVersion (strings "2.34.0"),
#   socVersion, contextBlobSize, numContextTensors, contextTensors, numGraphs, graphs[{version, info {
#   graphName, numGraphInputs, graphInputs[{version, info {id, name, type, dataFormat, dataType, rank,
#   dimensions, memType, quantizeParams {definition, quantizationEncoding, scaleOffset}}}], numGraphOutputs,
#   graphOutputs, numUpdateableTensors, updateableTensors, graphBlobInfoSize, graphBlobInfo {version, info
#   {spillFillBufferSize, optimizationLevel, vtcmSize in MB, htpDlbc, numHvxThreads}}, graphBlobInfoV2
#   {version, nativeKChannelSize, nativeVChannelSize, isSafeShareIO, ioTensorSize, opDataSize, constSize,
#   ddrTensorSize, sharedWeightsSize} (no info level), startOpIndex, endOpIndex}}], platformInfo,
#   contextMetadataSize, contextMetadata {version, info {dspArch}}, socModel}.
# buildId: the utility prints the string libQnnSystem returns, and libQnnSystem 2.51 returns the metadata's
# string verbatim on every fixture and real binary. Whether it carries a _NNNNNN suffix depends on the
# build, not on the tool: QNN 2.22-2.40 binaries and the QNN 2.42 dump carry one
# (v2.42.0.251225135753_193295), the QNN 2.45 dumps and QAIRT 2.47-2.51 binaries do not. So build ids
# are compared exactly.
MB = 1024 * 1024
ARTIFACT_TYPE = "CONTEXT_BINARY_INFO"
# Dump keys q9diff does not read from a binary, with why; they are listed, never compared.
NOT_READ = {
    "platformInfo": "q9diff does not read the metadata's platform info (hardware devices, cores)",
    "numContextTensors": "q9diff does not read context tensors",
    "contextTensors": "q9diff does not read context tensors",
    "numUpdateableTensors": "q9diff does not read updateable tensors",
    "updateableTensors": "q9diff does not read updateable tensors",
    "startOpIndex": "q9diff does not read GraphInfo v3's op index range",
    "endOpIndex": "q9diff does not read GraphInfo v3's op index range",
    "memType": "q9diff does not read a tensor's memType",
}
TENSOR_VERSION_WHY = "the Qnn_Tensor_t version the utility's libQnnSystem hands out, not a field of the file"


@dataclass(frozen=True)
class _Unread:
    """A dump field whose value q9diff did not read from the binary: listed with why, never compared."""

    why: str


@dataclass(frozen=True)
class _Megabytes:
    """vtcmSize: the metadata stores bytes, the utility prints MB."""

    bytes: int


@dataclass(frozen=True)
class MetaReport:
    """A qnn-context-binary-utility dump judged against one binary. `another_binary` lists the identity
    fields (graph names, contextBlobSize, buildId) that differ: then the dump describes another binary
    and no other field is compared. Otherwise `disagreements` holds every field that differs."""

    header: str
    another_binary: tuple[str, ...]
    disagreements: tuple[str, ...]
    compared: int
    not_compared: tuple[str, ...]  # "path: why" for every dump field q9diff does not read

    @property
    def describes_this_binary(self) -> bool:
        return not self.another_binary

    @property
    def agrees(self) -> bool:
        return not self.another_binary and not self.disagreements

    def lines(self) -> list[str]:
        """The disagreements a user reads: one line for a dump of another binary."""
        if self.another_binary:
            return [f"describes another binary ({'; '.join(self.another_binary)}); no field compared"]
        return list(self.disagreements)

    def to_json(self) -> dict:
        return {
            "header": self.header,
            "describes_this_binary": self.describes_this_binary,
            "another_binary": list(self.another_binary),
            "disagreements": list(self.disagreements),
            "compared": self.compared,
            "not_compared": list(self.not_compared),
        }


def _camel(obj):
    """Some SDK builds wrote spaced keys ("soc model"); Qualcomm's own reader camel-cases them."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            words = str(k).split()
            key = words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]) if len(words) > 1 else k
            out[key] = _camel(v)
        return out
    if isinstance(obj, list):
        return [_camel(x) for x in obj]
    return obj


def _version_text(v) -> str | None:
    if isinstance(v, dict) and {"major", "minor", "patch"} <= set(v):
        return f"{v['major']}.{v['minor']}.{v['patch']}"
    return v if isinstance(v, str) else None


def _info(node) -> dict:
    if not isinstance(node, dict):
        raise ValueError(f"expected a JSON object, got {type(node).__name__}")
    inner = node.get("info", node)
    if not isinstance(inner, dict):
        raise ValueError(f"expected an object under 'info', got {type(inner).__name__}")
    return inner


def _known(value, why: str):
    return _Unread(why) if value is None else value


def _tensor_view(t) -> dict:
    defined = DEFINITION_NAMES.get(t.encoding_definition) if t.encoding_definition is not None else None
    quant: dict = {
        "definition": _known(defined and f"QNN_DEFINITION_{defined}", "not recorded in the file"),
        "quantizationEncoding": _Unread("q9diff reads the encoding of scale/offset tensors only"),
    }
    if t.scale is not None:
        quant["quantizationEncoding"] = "QNN_QUANTIZATION_ENCODING_SCALE_OFFSET"
        quant["scaleOffset"] = {"scale": t.scale, "offset": t.offset}
    data_format = DATA_FORMAT_NAMES.get(t.data_format)
    return {
        "version": _Unread(TENSOR_VERSION_WHY),
        "info": {
            "id": t.id,
            "name": t.name,
            "type": f"QNN_TENSOR_TYPE_{t.tensor_type}",
            "dataFormat": _known(
                data_format and f"QNN_TENSOR_DATA_FORMAT_{data_format}", f"data format {t.data_format}"
            ),
            "dataType": _known(
                None if t.dtype.startswith("0x") else f"QNN_DATATYPE_{t.dtype}", f"data type {t.dtype}"
            ),
            "rank": len(t.dims),
            "dimensions": list(t.dims),
            "quantizeParams": quant,
        },
    }


def _graph_view(g) -> dict:
    why = dict(g.unknown)

    def field(name: str):
        return _known(getattr(g, name), why.get(name, f"not recorded: {name}"))

    vtcm = field("vtcm_size")
    v1 = {
        "spillFillBufferSize": field("spill_fill_buffer_size"),
        "optimizationLevel": field("optimization_level"),
        "vtcmSize": vtcm if isinstance(vtcm, _Unread) else _Megabytes(vtcm),
        "htpDlbc": field("htp_dlbc"),
        "numHvxThreads": field("num_hvx_threads"),
    }
    v2 = {k: field(n) for k, n in META_BLOB_V2.items()}
    recorded = g.blob_info_size is not None
    return {
        "version": f"QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_{g.graph_info_version}",
        "info": {
            "graphName": g.name,
            "numGraphInputs": len(g.inputs),
            "graphInputs": [_tensor_view(t) for t in g.inputs],
            "numGraphOutputs": len(g.outputs),
            "graphOutputs": [_tensor_view(t) for t in g.outputs],
            "graphBlobInfoSize": _known(g.blob_info_size, why.get("vtcm_size", "not recorded")),
            "graphBlobInfo": {
                "version": "QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V1"
                if recorded
                else v1["vtcmSize"],
                "info": v1,
            },
            "graphBlobInfoV2": {
                "version": "QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V2"
                if g.io_tensor_size is not None
                else v2["ioTensorSize"],
                **v2,
            },
        },
    }


META_BLOB_V2 = {
    "nativeKChannelSize": "native_k_channel_size",
    "nativeVChannelSize": "native_v_channel_size",
    "isSafeShareIO": "is_safe_share_io",
    "ioTensorSize": "io_tensor_size",
    "opDataSize": "op_data_size",
    "constSize": "const_size",
    "ddrTensorSize": "ddr_tensor_size",
    "sharedWeightsSize": "shared_weights_size",
}


def utility_view(cb: ContextBinary) -> dict:
    """What qnn-context-binary-utility would print for this binary, from q9diff's own reading: the
    utility's keys, names and units, with `_Unread` where q9diff read nothing."""
    why = cb.unknown
    dsp_arch = _known(cb.dsp_arch, why.get("dsp_arch", "not recorded"))
    return {
        "version": f"QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_{cb.binary_info_version}",
        "info": {
            "backendId": cb.backend_id,
            "buildId": cb.build_id,
            "coreApiVersion": _known(cb.core_api_version, why.get("core_api_version", "")),
            "backendApiVersion": _known(cb.backend_api_version, why.get("backend_api_version", "")),
            "socVersion": cb.soc_version,
            "contextBlobVersion": _known(cb.context_blob_version, why.get("context_blob_version", "")),
            "contextBlobSize": cb.blob_size,
            "numGraphs": len(cb.graphs),
            "graphs": [_graph_view(g) for g in cb.graphs],
            "contextMetadataSize": _known(cb.context_metadata_size, why.get("dsp_arch", "not recorded")),
            "contextMetadata": {
                "version": dsp_arch
                if isinstance(dsp_arch, _Unread)
                else "QNN_SYSTEM_CONTEXT_HTP_CONTEXT_INFO_BLOB_VERSION_V1",
                "info": {"dspArch": dsp_arch},
            },
            "socModel": _known(cb.soc_model, why.get("soc_model", "not recorded")),
        },
    }


class _Walk:
    """Every leaf of a dump against the view q9diff predicts, paths shown without the `info` levels."""

    def __init__(self):
        self.disagreements: list[str] = []
        self.not_compared: list[str] = []
        self.compared = 0

    def node(self, theirs, mine, path: str) -> None:
        if isinstance(mine, str) and isinstance(theirs, dict):
            theirs = _version_text(theirs) or theirs
        if isinstance(mine, _Unread):
            self.not_compared.append(f"{path}: {mine.why}")
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            for key, value in theirs.items():
                sub = path if key == "info" else f"{path}.{key}" if path else str(key)
                if key in NOT_READ:
                    self.not_compared.append(f"{sub}: {NOT_READ[key]}")
                elif key not in mine:
                    self.not_compared.append(f"{sub}: a key q9diff does not know")
                else:
                    self.node(value, mine[key], sub)
        elif isinstance(mine, list) and isinstance(theirs, list):
            self.leaf(f"{path} (entries)", len(mine), len(theirs))
            for item_theirs, item_mine in zip(theirs, mine):
                label = _label(item_mine)
                self.node(item_theirs, item_mine, f"{path}[{label}]")
        else:
            self.leaf(path, mine, theirs)

    def leaf(self, path: str, mine, theirs) -> None:
        self.compared += 1
        if isinstance(mine, _Megabytes):
            if not (isinstance(theirs, int) and theirs * MB == mine.bytes):
                self.disagreements.append(
                    f"{path}: q9diff read {mine.bytes} bytes ({mine.bytes / MB:g} MB), "
                    f"the dump says {theirs!r} MB"
                )
            return
        if isinstance(mine, float) and isinstance(theirs, (int, float)):
            same = np.float32(mine) == np.float32(theirs)  # a 32-bit float in the file
        else:
            same = type(mine) is type(theirs) and mine == theirs
        if not same:
            self.disagreements.append(f"{path}: q9diff read {mine!r}, the dump says {theirs!r}")


def _label(view) -> str:
    info = view.get("info", {}) if isinstance(view, dict) else {}
    return str(info.get("graphName", info.get("name", "?")))


def _identity(cb: ContextBinary, info: dict) -> list[str]:
    """The identity fields the dump states that differ from the binary's."""
    out = []
    graphs = info.get("graphs")
    if graphs is not None:
        if not isinstance(graphs, list):
            raise ValueError("expected info.graphs to be a list")
        names = [_info(g).get("graphName") for g in graphs]
        if names != [g.name for g in cb.graphs]:
            out.append(f"graph names {names}, the binary's {[g.name for g in cb.graphs]}")
    size = info.get("contextBlobSize")
    if size is not None and size != cb.blob_size:
        out.append(f"contextBlobSize {size!r}, the binary's {cb.blob_size}")
    build = info.get("buildId")
    if build is not None and build != cb.build_id:
        out.append(f"buildId {build!r}, the binary's {cb.build_id!r}")
    if graphs is None and size is None and build is None:
        raise ValueError(
            "expected info.graphs, info.contextBlobSize or info.buildId to say which binary it describes"
        )
    return out


def _header(data: dict) -> str:
    """The dump's header block: its artifact type must be the context binary info; its versions are the
    dump format's own, not fields of the binary."""
    header = data.get("header")
    if header is None:
        return "no header block"
    if not isinstance(header, dict) or header.get("artifact_type") != ARTIFACT_TYPE:
        got = header.get("artifact_type") if isinstance(header, dict) else header
        raise ValueError(f"expected header.artifact_type {ARTIFACT_TYPE!r} (got {got!r})")
    version, inner = _version_text(header.get("version")), _version_text(header.get("header_version"))
    return ARTIFACT_TYPE + (f" {version}" if version else "") + (f", header {inner}" if inner else "")


class MetaError(Q9Error):
    """The dump given with --meta cannot be read (the one line names it): missing, a FIFO or device, too
    big, not UTF-8 or not JSON. Read by q9diff.guard's capped reader, as every file q9diff is handed."""


def judge_utility_json(cb: ContextBinary, meta: Path) -> MetaReport:
    """Does the qnn-context-binary-utility dump describe this binary, and where does it disagree?"""
    data = _camel(load_json(meta, "a qnn-context-binary-utility --json_file dump", MetaError))
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        raise ValueError("expected a qnn-context-binary-utility JSON object with an 'info' object")
    header = _header(data)
    other = _identity(cb, data["info"])
    if other:
        return MetaReport(header, tuple(other), (), 0, ())
    walk = _Walk()
    walk.node({k: v for k, v in data.items() if k != "header"}, utility_view(cb), "")
    if "header" in data:
        walk.not_compared.append("header: the dump format's own artifact type and versions")
    return MetaReport(header, (), tuple(walk.disagreements), walk.compared, tuple(walk.not_compared))
