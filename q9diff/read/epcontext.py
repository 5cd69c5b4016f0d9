"""An ONNX Runtime EPContext model's contexts: each EPContext node's context binary, embedded in its
`ep_cache_context` attribute or named there as a file beside the model (resolved and kept inside the model's
folder). The model is a protobuf read by the onnx package (`pip install q9diff[ort]`); nothing of it is
declared in formats/."""

from __future__ import annotations

from pathlib import Path

from q9diff.errors import FormatError
from q9diff.read.files import regular_file


def contexts(path: Path) -> list[tuple[str, object]]:
    """(node name, embedded bytes or the context file's resolved path) for every EPContext node."""
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
    out: list[tuple[str, object]] = []
    beside: dict[bytes, Path] = {}  # each file name resolved and checked once
    for node in model.graph.node:
        if _text(node.op_type) != "EPContext":
            continue
        attrs = {_text(a.name): a for a in node.attribute}
        if "ep_cache_context" not in attrs:
            continue
        data = attrs["ep_cache_context"].s
        embed = attrs["embed_mode"].i if "embed_mode" in attrs else 1
        if embed == 1:
            out.append((_text(node.name), data))
            continue
        if data not in beside:
            beside[data] = _beside(path, data)
        out.append((_text(node.name), beside[data]))
    if not out:
        raise FormatError(str(path), None, "an EPContext node with an ep_cache_context attribute")
    return out


def _text(v: str | bytes) -> str:
    """A protobuf string field as text: onnx hands back bytes when the file's string is not UTF-8."""
    return v if isinstance(v, str) else v.decode("utf-8", "replace")


def _beside(model: Path, ref: bytes) -> Path:
    """A context file an EPContext node names: relative, inside the model's folder, a regular file."""
    try:
        name = ref.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(str(model), None, "an ep_cache_context file name in UTF-8") from None
    if "\0" in name:  # no file has one: the path calls below would raise ValueError
        raise FormatError(str(model), None, f"an ep_cache_context name without a NUL byte (got {name!r})")
    folder = model.resolve().parent
    target = (folder / name).resolve()
    if Path(name).is_absolute() or folder not in target.parents:
        raise FormatError(str(model), None, f"an ep_cache_context path inside {folder} (got {name!r})")
    regular_file(target)
    return target
