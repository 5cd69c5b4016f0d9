"""A LiteRT `.tflite` model's contexts: the NPU bytecode each DISPATCH_OP node points at (an offset and a size
in its FlexBuffer options), read with the layouts of formats/containers.py."""

from __future__ import annotations

from pathlib import Path

from q9diff.errors import FormatError
from q9diff.formats import containers as C
from q9diff.read import flatbuf
from q9diff.read.files import mapped
from q9diff.read.parse import parse


def contexts(path: Path) -> list[tuple[str, tuple[int, int]]]:
    """(name, (offset, size)) of every DISPATCH_OP's bytecode (formats.containers). Ops may share one range
    (the graphs of one context); ranges that overlap without being the same are a format error."""
    buf = mapped(path)
    at = C.TFLITE_IDENT_OFFSET
    if bytes(buf[at : at + len(C.TFLITE_IDENT)]) != C.TFLITE_IDENT:
        raise FormatError(str(path), at, f"the TFLite identifier {C.TFLITE_IDENT!r}")
    model = flatbuf.root(buf, 0, len(buf), str(path))
    codes = [c.get(C.TFLITE_OPCODE["custom_code"]) for c in model.get(C.TFLITE_MODEL["operator_codes"])]
    out: list[tuple[str, tuple[int, int]]] = []
    for sg in model.get(C.TFLITE_MODEL["subgraphs"]):
        for op in sg.get(C.TFLITE_SUBGRAPH["operators"]):
            index = op.get(C.TFLITE_OPERATOR["opcode_index"], 0)
            if index >= len(codes) or codes[index] != C.DISPATCH_OP:
                continue
            fields = _dispatch_options(op.get(C.TFLITE_OPERATOR["custom_options"], b""), str(path))
            offset, size, name = (fields.get(k) for k in C.DISPATCH_KEYS)
            if not isinstance(offset, int) or not isinstance(size, int) or offset + size > len(buf):
                raise FormatError(
                    str(path), None, f"a DISPATCH_OP bytecode range inside the file (got {offset}, {size})"
                )
            label = name if isinstance(name, str) and name else f"dispatch_{len(out)}"
            out.append((label, (offset, size)))
    if not out:
        raise FormatError(str(path), None, "a LiteRT DISPATCH_OP node carrying NPU bytecode")
    ranges = sorted(set(r for _, r in out))
    for (a, n), (b, m) in zip(ranges, ranges[1:]):
        if b < a + n:
            raise FormatError(
                str(path),
                b,
                f"DISPATCH_OP bytecode ranges that are the same or apart (got {a}+{n} and {b}+{m})",
            )
    return out


def _dispatch_options(data: bytes, path: str) -> dict[str, int | str]:
    """The unsigned-integer and string values of a DISPATCH_OP's FlexBuffer map (C.FlexMap); values of
    other types are left out."""
    flex = parse(
        C.FlexMap, data, 0, path, "DISPATCH_OP custom options holding a FlexBuffer map", located=False
    )
    out: dict[str, int | str] = {}
    for entry in flex.entries:
        key = entry.key.decode("utf-8", "replace")
        if isinstance(entry.value, int):
            out[key] = entry.value
        elif entry.value is not None:
            out[key] = entry.value.text.decode("utf-8", "replace")
    return out
