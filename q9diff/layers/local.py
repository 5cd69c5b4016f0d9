"""The error a node adds itself: each measured tensor recomputed by the reference's own nodes on the CPU
from the candidate's values of the tensors it is computed from.

A tensor's error against the reference is everything before it too: a softmax turns its scores' absolute
error into a relative one, so a sharp attention head shows a large error there though nothing is wrong
with the softmax. Fed the candidate's own inputs, the reference's computation of one tensor differs from the
candidate's only by what the candidate's node does differently: its quantization, a wrong weight encoding,
a clipped range. That *local* error is what the first-divergence rule judges (q9diff.layers.figures).

The reference's nodes between the tensors measured (and the graph's inputs) and each target are copied,
their tensors renamed apart per target, into one model run once on ONNX Runtime's CPU EP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from q9diff.layers.graph import QDQ, ModelGraph, external_files, load_model, place_external

_NUMPY_TO_ONNX = {
    "float32": 1,
    "uint8": 2,
    "int8": 3,
    "uint16": 4,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "bool": 9,
    "float16": 10,
    "float64": 11,
}


def _closure(target: str, producer: dict, stop: set[str], limit: int = 4096) -> list | None:
    """The nodes computing `target` from tensors in `stop` (or initializers, or graph inputs), in graph
    order; None when a node holds a subgraph (its outer names would not resolve apart) or it runs long."""
    needed, todo, seen = [], [target], set()
    while todo:
        t = todo.pop()
        if t in seen or t in stop or t not in producer:
            continue
        seen.add(t)
        index, node = producer[t]
        if any(a.type in (5, 10) for a in node.attribute):  # GRAPH, GRAPHS
            return None
        needed.append(index)
        if len(needed) > limit:
            return None
        todo.extend(i for i in node.input if i)
    return sorted(set(needed))


def local_values(
    reference: ModelGraph, targets: list[str], candidate: dict[str, np.ndarray], feeds: dict[str, np.ndarray]
) -> tuple[dict[str, tuple[np.ndarray, Span]], str]:
    """For each target (a source name), the reference's computation of it from `candidate`'s values of the
    source tensors measured (by source name) and `feeds` for the graph's inputs, with what it spans;
    targets it cannot recompute are left out.
    With them, why none could be ('' when some were)."""
    import onnx
    from onnx import helper

    model = load_model(reference.path)
    g = model.graph
    taps = {s.name: s.tap for s in reference.sources if s.tap is not None}
    source_of = {tap: name for name, tap in taps.items()}
    producer = {out: (i, n) for i, n in enumerate(g.node) for out in n.output if out}
    inits = {t.name for t in g.initializer}
    given: dict[str, np.ndarray] = {}  # the reference's tensor name -> the value fed in
    for name, value in candidate.items():
        if name in taps:
            given[taps[name]] = value
    graph_inputs = {v.name for v in g.input} - inits
    for name in graph_inputs:
        if name in feeds and name not in given:
            given[name] = np.asarray(feeds[name])
    nodes, outputs, used, spans = [], [], set(), {}
    for k, target in enumerate(targets):
        tap = taps.get(target)
        if tap is None:
            continue
        stop = (set(given) - {tap}) | inits
        closure = _closure(tap, producer, stop)
        if not closure:
            continue
        prefix = f"q9local{k}/"

        def rename(t: str, stop=stop, prefix=prefix) -> str:
            if not t or t in inits:
                return t
            if t in stop:
                used.add(t)
                return f"q9in/{t}"
            return prefix + t

        for i in closure:
            n = g.node[i]
            copy = helper.make_node(
                n.op_type,
                [rename(x) for x in n.input],
                # an output is the copy's own even when the value fed stands for it (a Split's other
                # output, measured): renamed like an input it would be defined twice
                [prefix + x if x else x for x in n.output],
                name=prefix + (n.name or n.output[0]),
                domain=n.domain,
            )
            copy.attribute.extend(n.attribute)
            nodes.append(copy)
        outputs.append((target, prefix + tap))
        inside = [o for i in closure for o in g.node[i].output if o]
        spans[target] = Span(
            max(1, sum(g.node[i].op_type not in QDQ for i in closure)),
            tuple(dict.fromkeys(source_of.get(o, o) for o in inside)),
        )
    if not outputs:
        return {}, "no tensor's computation could be copied (a node holding a subgraph, or too many nodes)"
    ins = [
        helper.make_tensor_value_info(
            f"q9in/{t}", _NUMPY_TO_ONNX.get(str(given[t].dtype), 1), list(given[t].shape)
        )
        for t in sorted(used)
    ]
    outs = [onnx.ValueInfoProto(name=name) for _, name in outputs]
    needed = {i for n in nodes for i in n.input if i in inits}  # the weights the copies read, no others
    sub = helper.make_graph(nodes, "q9diff_local", ins, outs, [t for t in g.initializer if t.name in needed])
    local = helper.make_model(sub, opset_imports=list(model.opset_import))
    local.ir_version = model.ir_version
    values, problem = _run(reference, local, {f"q9in/{t}": given[t] for t in sorted(used)}, outputs)
    return {t: (v, spans[t]) for t, v in values.items()}, problem


@dataclass(frozen=True)
class Span:
    """What a recomputation spanned: how many of the reference's nodes (QuantizeLinear and DequantizeLinear
    not counted), and the tensors they compute (source names): where an error it shows can lie."""

    nodes: int
    tensors: tuple[str, ...]


def _run(reference: ModelGraph, local, values: dict, outputs: list) -> tuple[dict[str, np.ndarray], str]:
    from q9diff.guard import no_telemetry, private_work  # start-up: guard

    no_telemetry()
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    with private_work("q9diff-layers-local-") as work:
        for name, ext in external_files(local, reference.path):  # the initializers' data, beside the copy
            place_external(ext, work / name)
        path = work / "local.onnx"
        path.write_bytes(local.SerializeToString())
        try:
            session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            got = session.run([name for _, name in outputs], values)
        except Exception as exc:  # ONNX Runtime's own types: the figures then go without a local error
            why = " ".join(str(exc).split())[:200]
            return {}, f"ONNX Runtime could not run the reference's nodes on the candidate's values ({why})"
    return {target: v for (target, _), v in zip(outputs, got, strict=True)}, ""
