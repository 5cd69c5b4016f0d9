"""What changed in the structure of two builds, in words: their graphs; each graph's I/O tensors (data
type, shape, quantization encoding); the op kinds and their counts; the element types the compiled graph
records for its tensors; and the precision of weights, activations and I/O that follows from those.

Plain equality decides whether anything differs (each side is a tree of plain values). Only then are the
two trees walked to say what: paths, added / removed / changed, tensors matched by name rather than
position, scales compared to six significant digits, a list (a shape, the tensor types) one value. The
walk is linear in the trees and its list capped: the first MAX_CHANGES changes in path order are listed,
and `left_out` counts the rest (two 282 KB files whose one input differs in each of 70,000 dims made
DeepDiff, which listed every element, take 56 s and 622 MB and write 19 MB of JSON).

The element types come from the compiled graph's tensor-type table (its Ct record): short codes whose
last letter is numpy's type code, as the conversion kernels' own names show (`Cast_fp32_to_fp16@Fe.Ff`
turns f into e; `Quantize@FH.Ff` and `Dequantize_better@Ff.FH` turn float32 into the 16-bit activations
of a w8a16 build and back; fixtures/variants/precision_fp16.bin and precision_w8a16.bin). Weights are the
codes that begin with X or x (the operands of the `weights_to_vtcm` kernels); activations those that begin
with C or c (the crouton layout compute kernels take), else F or f. A letter not in the table stays
unknown, named by its code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

# numpy's type codes, as the last letter of a tensor-type code
ELEMENT = {"f": "float32", "e": "float16", "H": "uint16", "h": "int16", "B": "uint8", "b": "int8",
           "i": "int32", "I": "uint32"}  # fmt: skip
_BITS = {"float32": 32, "float16": 16, "uint16": 16, "int16": 16, "uint8": 8, "int8": 8, "int32": 32}
SIGNIFICANT = 6  # scales and offsets compared to this many significant digits
MAX_CHANGES = 200  # changes listed (and said in words); past it, `left_out` counts the rest
MAX_DIMS = 12  # dims of a shape written in words; a longer shape is cut, with its rank


def element(code: str) -> str:
    """A tensor-type code's element type: `CH` -> uint16, `Xsb` -> int8; `unknown (code)` otherwise."""
    return ELEMENT.get(code[-1:], f"unknown ({code})") if code else "unknown ()"


@dataclass(frozen=True)
class Precision:
    """The element types a build computes in: weights, activations and its graphs' I/O (metadata)."""

    weights: tuple[str, ...]
    activations: tuple[str, ...]
    io: tuple[str, ...]

    @property
    def label(self) -> str:
        """`fp16`, `fp32`, `w8a16`, `w8a8` ... as builds are named, from the weights and activations."""
        w, a = self.weights, self.activations
        floats = {"float16": "fp16", "float32": "fp32"}
        if len(w) <= 1 and len(a) == 1 and a[0] in floats and (not w or w == a):
            return floats[a[0]]
        if len(w) == 1 and len(a) == 1 and w[0] in _BITS and a[0] in _BITS:
            return f"w{_BITS[w[0]]}a{_BITS[a[0]]}"
        return "mixed"

    def words(self) -> str:
        def one(x: tuple[str, ...]) -> str:
            return "/".join(x) if x else "none read"

        parts = f"weights {one(self.weights)}, activations {one(self.activations)}; I/O {one(self.io)}"
        return f"{self.label} ({parts})"


# 32-bit integers are indices, biases, accumulators and the compiler's scratch (a VTCM-starved build holds
# int32 crouton tensors its 8 MiB twin does not): QNN's HTP computes a model's activations in 8/16-bit fixed
# point or float, so they are never its precision. They stay in the tensor types the structure shows.
NOT_A_PRECISION = ("int32", "uint32")


def precision(cb) -> Precision:
    """What a binary computes in, over all its graphs (see the module's note)."""
    codes = {c for i in range(len(cb.graphs)) for c in cb.tensor_types(i)}
    codes = {c for c in codes if element(c) not in NOT_A_PRECISION}
    weights = {element(c) for c in codes if c[:1] in ("X", "x")}
    compute = {element(c) for c in codes if c[:1] in ("C", "c")}
    flat = {element(c) for c in codes if c[:1] in ("F", "f")}
    io = {t.dtype for g in cb.graphs for t in g.inputs + g.outputs}
    return Precision(tuple(sorted(weights)), tuple(sorted(compute or flat)), tuple(sorted(io)))


def _tensor(t) -> dict:
    quant = None if t.scale is None else {"scale": t.scale, "offset": t.offset}
    return {"dtype": t.dtype, "dims": list(t.dims), "encoding": quant}


def tree(cb, p: Precision) -> dict:
    """One side's structure: graphs by name (I/O tensors by name, op kinds and counts, tensor types)
    and the precision (`p`: precision(cb)). Plain values only, so equality alone says whether two sides
    differ."""
    graphs = {}
    for i, g in enumerate(cb.graphs):
        graphs[g.name or f"graph {i}"] = {
            "inputs": {t.name: _tensor(t) for t in g.inputs},
            "outputs": {t.name: _tensor(t) for t in g.outputs},
            "ops": dict(sorted(Counter(cb.op_kinds(i)).items())),
            "tensor_types": sorted(set(cb.tensor_types(i))),
        }
    return {"graphs": graphs, "precision": {"weights": list(p.weights), "activations": list(p.activations),
                                            "io": list(p.io), "label": p.label}}  # fmt: skip


def paired(a: dict, b: dict) -> tuple[dict, dict]:
    """The graphs compared by name where the two sides name the same graphs, else in order (a build of
    another recipe may name its one graph otherwise: `mlp.float` vs `mlp`)."""
    ga, gb = a["graphs"], b["graphs"]
    if set(ga) == set(gb) or len(ga) != len(gb):
        return a, b
    pairs = list(zip(ga, gb))
    renamed = {f"{x} / {y}" if x != y else x: (ga[x], gb[y]) for x, y in pairs}
    return ({**a, "graphs": {k: v[0] for k, v in renamed.items()}},
            {**b, "graphs": {k: v[1] for k, v in renamed.items()}})  # fmt: skip


def compare(a: dict, b: dict) -> dict:
    """`{"same": True}` when the trees are equal; else the changes (path, kind, a, b), the first
    MAX_CHANGES of them in path order, `left_out` counting the rest, and the words that say them,
    grouped: precision first, then I/O tensors, tensor types, ops."""
    if a == b:
        return {"same": True}
    left, right = paired(a, b)
    changes, left_out = [], 0
    for keys, how, a_value, b_value in _walk(left, right, []):
        if len(changes) < MAX_CHANGES:
            changes.append({"path": keys, "kind": how, "a": a_value, "b": b_value})
        else:
            left_out += 1
    said = words(left, right, changes)
    if len(said) > MAX_CHANGES:
        left_out += len(said) - MAX_CHANGES
        said = said[:MAX_CHANGES]
    if left_out:
        said.append(f"... and {left_out:,d} more changes (the first {MAX_CHANGES} are listed)")
    return {"same": False, "changes": changes, "words": said} | ({"left_out": left_out} if left_out else {})


def _walk(a, b, keys: list):
    """Every difference of two plain trees, in path order: (keys, "added" | "removed" | "changed", a, b).
    A dict is walked key by key; anything else (a list included) is one value."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys(), key=str):
            if k not in b:
                yield [*keys, k], "removed", a[k], None
            elif k not in a:
                yield [*keys, k], "added", None, b[k]
            else:
                yield from _walk(a[k], b[k], [*keys, k])
    elif not _same(a, b):
        yield keys, "changed", a, b


def _same(a, b) -> bool:
    """Equal, floats to SIGNIFICANT digits (a scale that only rounds differently is the same scale)."""
    if type(a) is not type(b):
        return False
    if a == b or type(a) is not float:
        return a == b
    return f"{a:.{SIGNIFICANT - 1}e}" == f"{b:.{SIGNIFICANT - 1}e}"


def _encoding(t: dict | None) -> str:
    if t is None:
        return "none"
    q = t.get("encoding")
    dims = list(t["dims"])
    shape = (
        f"{dims}"
        if len(dims) <= MAX_DIMS
        else f"[{str(dims[: MAX_DIMS - 2])[1:-1]}, ..., {dims[-1]}] (rank {len(dims)})"
    )
    base = f"{t['dtype']} {shape}"
    return base + (f" (scale {q['scale']:.6g}, offset {q['offset']})" if q else "")


def words(a: dict, b: dict, changes: list[dict]) -> list[str]:
    """The changes as sentences a person reads, candidate → reference."""
    out = []
    pa, pb = a["precision"], b["precision"]
    if pa != pb:
        wa = Precision(tuple(pa["weights"]), tuple(pa["activations"]), tuple(pa["io"]))
        wb = Precision(tuple(pb["weights"]), tuple(pb["activations"]), tuple(pb["io"]))
        if wa.label != wb.label:
            quantized = wb.label.startswith("w")
            lead = f"the reference is quantized {wb.label}" if quantized else f"the reference is {wb.label}"
            out.append(f"precision: {wa.words()} → {wb.words()}: {lead}")
        elif (wa.weights, wa.activations) != (wb.weights, wb.activations):
            out.append(f"precision: {wa.words()} → {wb.words()}")
        if wa.io != wb.io:
            io_a, io_b = "/".join(wa.io) or "none", "/".join(wb.io) or "none"
            quantized_io = [x for x in wb.io if "FIXED_POINT" in x and x not in wa.io]
            why = ": the reference's I/O is quantized (--quantize_io)" if quantized_io else ""
            out.append(f"I/O data types: {io_a} → {io_b}{why}")
    seen_tensors = set()
    for c in changes:
        p = c["path"]
        if len(p) >= 4 and p[0] == "graphs" and p[2] in ("inputs", "outputs"):
            graph, side, name = p[1], p[2][:-1], p[3]
            if (graph, name) in seen_tensors:
                continue
            seen_tensors.add((graph, name))
            ta = a["graphs"].get(graph, {}).get(p[2], {}).get(name)
            tb = b["graphs"].get(graph, {}).get(p[2], {}).get(name)
            if ta is None or tb is None:
                out.append(
                    f"graph {graph}: {side} {name} only in the {'reference' if ta is None else 'candidate'}"
                )
                continue
            lost = ta.get("encoding") and not tb.get("encoding")
            gained = tb.get("encoding") and not ta.get("encoding")
            what = (
                " (lost its quantization encoding)"
                if lost
                else " (quantized in the reference)"
                if gained
                else ""
            )
            out.append(f"graph {graph}: {side} {name}: {_encoding(ta)} → {_encoding(tb)}{what}")
        elif len(p) == 2 and p[0] == "graphs":
            out.append(f"graph {p[1]}: only in the {'reference' if c['kind'] == 'added' else 'candidate'}")
    for graph in [g for g in a["graphs"] if g in b["graphs"]]:  # in the candidate's order, every run alike
        ta, tb = set(a["graphs"][graph]["tensor_types"]), set(b["graphs"][graph]["tensor_types"])
        if ta != tb:

            def named(codes: set) -> str:
                return ", ".join(f"{c} {element(c)}" for c in sorted(codes)) or "none"

            out.append(f"graph {graph}: tensor types only in the candidate: {named(ta - tb)}; only in the"
                       f" reference: {named(tb - ta)}")  # fmt: skip
        oa, ob = a["graphs"][graph]["ops"], b["graphs"][graph]["ops"]
        if oa != ob:
            delta: Counter = Counter()
            for k in oa.keys() | ob.keys():  # by kernel, its layout suffix (after @) set aside
                delta[k.split("@")[0] or k] += ob.get(k, 0) - oa.get(k, 0)
            moved = sorted((k for k, d in delta.items() if d), key=lambda k: (-abs(delta[k]), k))
            shown = ", ".join(f"{delta[k]:+d} {k}" for k in moved[:6])
            more = f", {len(moved) - 6} more kinds" if len(moved) > 6 else ""
            out.append(f"graph {graph}: ops {sum(oa.values())} → {sum(ob.values())} ({shown}{more})")
    return out
