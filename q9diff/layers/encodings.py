"""A static look at a QDQ model's encodings, beside `q9diff layers`' run: what no run shows.

- A *bit-width outlier*: an activation (or a weight) quantized to another element type than most of the
  model's (one layer left at 8-bit activations in a w8a16 model). Its error can be too small to measure
  and still be the one thing unlike the rest of the build.
- A *Q/DQ mismatch*: a DequantizeLinear whose scale or zero point differs from that of the QuantizeLinear it
  reads. ONNX Runtime's CPU EP computes each node as written, so every CPU debugger sees the difference;
  the QNN HTP build keeps one encoding per tensor and takes the QuantizeLinear's (measured: such a model's
  tapped tensors on the emulator are identical to the build without the mismatch, scripts/fit_layers_rule.py,
  `q9diff/layers/measured.json` "qdq_disagree_on_htp").

Reading the model costs nothing beside compiling it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from q9diff.layers.graph import DEQUANTIZE, QUANTIZE, TYPE_NAMES, load_model
from q9diff.layers.result import Finding

MULTIPLIES = ("Conv", "ConvTranspose", "Gemm", "MatMul")
MOST = 2 / 3  # an element type is the model's when at least this share of its tensors have it


def _array(inits: dict, name: str):
    from onnx import numpy_helper

    t = inits.get(name)
    if t is None or t.data_location == 1:
        return None
    try:
        return numpy_helper.to_array(t)
    except ValueError:
        return None


def _elem(inits: dict, node) -> str | None:
    """The element type a Q or DQ node quantizes to, read from its zero point (None: none given)."""
    if len(node.input) < 3 or node.input[2] not in inits:
        return None
    return TYPE_NAMES.get(inits[node.input[2]].data_type, "other")


def _same(a, b) -> bool:
    import numpy as np

    return a is not None and b is not None and a.shape == b.shape and bool(np.array_equal(a, b))


def _encoding(inits: dict, node) -> tuple:
    return tuple(_array(inits, node.input[k]) if len(node.input) > k else None for k in (1, 2))


def _word(enc: tuple) -> str:
    scale, zp = enc

    def one(v) -> str:
        if v is None:
            return "?"
        flat = v.reshape(-1)
        return f"{flat[0]:.6g}" if flat.size == 1 else f"{flat.size} values"

    return f"scale {one(scale)}, zero point {one(zp)}"


def _outliers(kind: str, types: dict[str, tuple[str, str]]) -> list[Finding]:
    """The tensors of `types` ({tensor: (element type, node)}) not of the model's own element type."""
    count = Counter(t for t, _ in types.values())
    if len(count) < 2:
        return []
    main, n = count.most_common(1)[0]
    if n < MOST * len(types):
        return []  # no type is the model's: mixed by design
    return [
        Finding(
            "bit_width",
            tensor,
            node,
            f"{tensor}: {kind} quantized to {elem}, the model's other {n} {kind} to {main} (a layer left at "
            "another bit width; its effect may be too small to measure)",
        )
        for tensor, (elem, node) in types.items()
        if elem != main
    ]


def findings(path: Path) -> list[Finding]:
    """The bit-width outliers and Q/DQ mismatches of the QDQ model at `path` (none for a float model)."""
    model = load_model(path)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    readers: dict[str, list] = {}
    for node in g.node:
        for i in node.input:
            readers.setdefault(i, []).append(node)
    acts: dict[str, tuple[str, str]] = {}
    weights: dict[str, tuple[str, str]] = {}
    out: list[Finding] = []
    for node in g.node:
        if node.op_type == QUANTIZE and node.input and node.input[0] not in inits:
            x, label = node.input[0], node.name or node.output[0]
            elem = _elem(inits, node)
            if elem is not None:
                acts.setdefault(x, (elem, label))
            enc = _encoding(inits, node)
            for dq in readers.get(node.output[0], []):
                if dq.op_type != DEQUANTIZE:
                    continue
                other = _encoding(inits, dq)
                if all(_same(a, b) for a, b in zip(enc, other) if a is not None or b is not None):
                    continue
                out.append(
                    Finding(
                        "qdq_mismatch",
                        x,
                        dq.name or dq.output[0],
                        f"{x}: its DequantizeLinear {dq.name or dq.output[0]} has {_word(other)}, its "
                        f"QuantizeLinear {label} {_word(enc)}: the HTP build takes the QuantizeLinear's; "
                        "ONNX Runtime's CPU EP computes the DequantizeLinear as written, so a CPU debugger "
                        "will flag this tensor",
                    )
                )
        elif node.op_type == DEQUANTIZE and node.input and node.input[0] in inits:
            # a weight proper: what a Conv, Gemm or MatMul multiplies by (a constant an Add or Mul reads
            # is quantized as an activation by the QNN QDQ configs, an int32 bias by the product of scales)
            uses = readers.get(node.output[0], [])
            if any(r.op_type in MULTIPLIES and list(r.input).index(node.output[0]) == 1 for r in uses):
                w = inits[node.input[0]]
                weights.setdefault(node.input[0], (TYPE_NAMES.get(w.data_type, "other"), node.name))
    return _outliers("activations", acts) + _outliers("weights", weights) + out
