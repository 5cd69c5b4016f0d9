"""Compare the parser's view with official metadata: libQnnSystem, or a qnn-context-binary-utility JSON."""

from __future__ import annotations

import json
from pathlib import Path

from q9diff.compare.summary import BLOB_INFO_FIELDS
from q9diff.format.binary import ContextBinary

TOP_FIELDS = (
    "build_id",
    "core_api_version",
    "backend_api_version",
    "context_blob_version",
    "soc_model",
    "dsp_arch",
)
TENSOR_FIELDS = ("name", "id", "dtype", "dims", "scale", "offset", "tensor_type")


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
        for f in BLOB_INFO_FIELDS:
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

    from q9diff.oracle.reader import read_binary_info_isolated, to_dict

    if os.path.isfile(cb.path):
        return disagreements(cb, to_dict(read_binary_info_isolated(cb.path)))
    with tempfile.TemporaryDirectory(prefix="q9diff-oracle-") as tmp:
        copy = os.path.join(tmp, "context.bin")
        with open(copy, "wb") as f:
            f.write(cb._buf)
        return disagreements(cb, to_dict(read_binary_info_isolated(copy)))


# qnn-context-binary-utility --json_file: keys mirror the C structs of QnnSystemContext.h (public).
# Shape established from public readers of real dumps (onnxruntime gen_qnn_ctx_onnx_model.py, LiteRT
# qnn_profiler generate_context_binary_inputs.py, Qualcomm's qairt CacheModule; see the README):
# info.{buildId, backendId, coreApiVersion, backendApiVersion, contextBlobVersion, contextBlobSize,
# socModel, contextMetadata.info.dspArch, graphs[].info.{graphName, graphInputs[].info, graphOutputs[].info,
# graphBlobInfo.info (vtcmSize in MB), graphBlobInfoV2 (bytes)}}.
META_TOP = {
    "build_id": "buildId",
    "backend_id": "backendId",
    "soc_model": "socModel",
    "context_blob_size": "contextBlobSize",
    "context_blob_version": "contextBlobVersion",
    "core_api_version": "coreApiVersion",
    "backend_api_version": "backendApiVersion",
}
META_BLOB_V1 = {
    "spill_fill_buffer_size": "spillFillBufferSize",
    "vtcm_size": "vtcmSize",
    "optimization_level": "optimizationLevel",
    "htp_dlbc": "htpDlbc",
    "num_hvx_threads": "numHvxThreads",
}
META_BLOB_V2 = {
    "io_tensor_size": "ioTensorSize",
    "op_data_size": "opDataSize",
    "const_size": "constSize",
    "ddr_tensor_size": "ddrTensorSize",
    "shared_weights_size": "sharedWeightsSize",
}
MB = 1024 * 1024


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


def compare_with_utility_json(cb: ContextBinary, meta: Path) -> list[str]:
    """Every field of a qnn-context-binary-utility JSON that differs from the parser's reading."""
    data = _camel(json.loads(Path(meta).read_text()))
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        raise ValueError("expected a qnn-context-binary-utility JSON object with an 'info' object")
    info = data["info"]
    out = []

    def check(path: str, mine, theirs) -> None:
        if theirs is not None and mine != theirs:
            out.append(f"{path}: parser {mine!r} != meta {theirs!r}")

    for mine, theirs in META_TOP.items():
        value = info.get(theirs)
        if mine.endswith("_version"):
            value = _version_text(value)
        check(mine, getattr(cb, mine), value)
    cm = info.get("contextMetadata")
    if isinstance(cm, dict):
        check("dsp_arch", cb.dsp_arch, _info(cm).get("dspArch"))
    graphs = info.get("graphs", [])
    if not isinstance(graphs, list):
        raise ValueError("expected info.graphs to be a list")
    check("graphs", len(cb.graphs), len(graphs))
    for g, node in zip(cb.graphs, graphs):
        gi = _info(node)
        check(f"{g.name}.name", g.name, gi.get("graphName"))
        for kind, key in (("inputs", "graphInputs"), ("outputs", "graphOutputs")):
            theirs = gi.get(key, [])
            if not isinstance(theirs, list):
                raise ValueError(f"expected {key} of graph {g.name!r} to be a list")
            check(f"{g.name}.{kind}", len(getattr(g, kind)), len(theirs))
            for t, tn in zip(getattr(g, kind), theirs):
                ti = _info(tn)
                check(f"{g.name}.{kind}.{t.name}.name", t.name, ti.get("name"))
                dtype = ti.get("dataType")
                check(
                    f"{g.name}.{kind}.{t.name}.dtype",
                    t.dtype,
                    dtype and str(dtype).replace("QNN_DATATYPE_", ""),
                )
                dims = ti.get("dimensions", ti.get("currentDimensions"))
                check(f"{g.name}.{kind}.{t.name}.dims", list(t.dims), dims)
                q = ti.get("quantizeParams")
                if isinstance(q, dict) and str(q.get("definition", "")).endswith("_DEFINED"):
                    so = q.get("scaleOffset") if isinstance(q.get("scaleOffset"), dict) else {}
                    check(f"{g.name}.{kind}.{t.name}.scale", t.scale, so.get("scale"))
                    check(f"{g.name}.{kind}.{t.name}.offset", t.offset, so.get("offset"))
        blob = gi.get("graphBlobInfo")
        if isinstance(blob, dict):
            b1 = _info(blob)
            for mine, theirs in META_BLOB_V1.items():
                value = b1.get(theirs)
                if mine == "vtcm_size" and isinstance(value, int):
                    value *= MB  # the utility prints MB, the metadata stores bytes
                check(f"{g.name}.{mine}", getattr(g, mine), value)
        b2 = gi.get("graphBlobInfoV2")
        if isinstance(b2, dict):
            for mine, theirs in META_BLOB_V2.items():
                check(f"{g.name}.{mine}", getattr(g, mine), b2.get(theirs))
    return out
