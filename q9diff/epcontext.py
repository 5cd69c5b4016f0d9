"""ONNX Runtime EPContext models: the context binary is embedded in `ep_cache_context` or named by it."""

from __future__ import annotations

from pathlib import Path

from q9diff.binary import ContextBinary
from q9diff.errors import FormatError


def extract(path: Path) -> ContextBinary:
    try:
        import onnx
    except ImportError:
        raise FormatError(
            str(path), None, "the onnx package to read an EPContext model (pip install q9diff[ort])"
        ) from None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises several unrelated types for a bad protobuf
        raise FormatError(str(path), None, f"an ONNX model ({type(exc).__name__})") from None
    for node in model.graph.node:
        if node.op_type != "EPContext":
            continue
        attrs = {a.name: a for a in node.attribute}
        if "ep_cache_context" not in attrs:
            continue
        data = attrs["ep_cache_context"].s
        embed = attrs["embed_mode"].i if "embed_mode" in attrs else 1
        if embed == 1:
            return ContextBinary(data, f"{path}#{node.name}")
        target = (path.parent / data.decode()).resolve()
        return ContextBinary.open(target)
    raise FormatError(str(path), None, "an EPContext node with an ep_cache_context attribute")
