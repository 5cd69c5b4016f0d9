"""What an ONNX model's graph says for `q9diff layers`: its source tensors in graph order, each with the node
that computes it, what it is computed from, and its tap; block boundaries; the tapped copy of a model.

A *source tensor* is a tensor of the float computation, named as the float model names it. In a QDQ model
(ONNX Runtime's quantizer, QNN's QDQ config) an activation X is computed by its node, then
QuantizeLinear(X) -> DequantizeLinear -> the nodes that read it; X keeps the float model's name, and the
DequantizeLinear's output is its *tap*: made a graph output, the compiled build returns what the HTP
computed for X. Where the quantizer names X `Y_QuantizeLinear_Input` because the DequantizeLinear's output
is the graph output Y, the source tensor is Y, as in the float model. DequantizeLinear nodes of constants
(weights, biases) are no taps and stay as they are. A float model's taps are its tensors themselves.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from q9diff.errors import Q9Error

QUANTIZE, DEQUANTIZE = "QuantizeLinear", "DequantizeLinear"
QDQ = (QUANTIZE, DEQUANTIZE)
FLOAT_TYPES = {1, 10, 11, 16}  # ONNX FLOAT, FLOAT16, DOUBLE, BFLOAT16
TYPE_NAMES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 21: "uint4", 22: "int4"}
UNKNOWN_TYPE = 0


class LayersError(Q9Error, RuntimeError):
    """`q9diff layers` cannot go on; the message is one line naming the file."""


@dataclass(frozen=True)
class Source:
    """One source tensor as one side computes it."""

    name: str  # the float model's name for it
    node: str  # the node computing it ('' for a graph input)
    op: str  # that node's op type ('input' for a graph input)
    tap: str | None  # the tensor that shows it as a graph output; None: no tap (not quantized, fused away)
    inputs: tuple[str, ...] = ()  # the source tensors its node reads
    scale: float | None = None  # its quantization step (QDQ), for max |Δ| in steps of its own grid


@dataclass(frozen=True)
class ModelGraph:
    """A model's source tensors in graph order (graph inputs first, then each node's outputs as the nodes
    come), and which of them are graph outputs."""

    path: Path
    quantized: bool
    sources: tuple[Source, ...]
    outputs: tuple[str, ...]
    weights: tuple[str, ...] = ()  # the element types of its quantized weights (int32 biases left out)
    activations: tuple[str, ...] = ()  # the element types its activations are quantized to

    def by_name(self) -> dict[str, Source]:
        return {s.name: s for s in self.sources}

    def tapped(self) -> list[Source]:
        return [s for s in self.sources if s.tap is not None]

    def by_source(self, values: dict) -> dict:
        """`values` keyed by tap (a QDQ model's: its DequantizeLinear outputs) keyed by source name."""
        by_tap = {s.tap: s.name for s in self.sources if s.tap is not None}
        return {by_tap.get(k, k): v for k, v in values.items()}

    def consumers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in self.sources:
            for i in s.inputs:
                out.setdefault(i, []).append(s.name)
        return out


MAX_MODEL_BYTES = 2 << 30  # protobuf's limit for one message: a larger .onnx keeps its weights outside


def load_model(path: Path):
    """The ONNX model at `path` without its external data (the graph is all we read); one line naming the
    file when it is not a regular file (a FIFO, a device: refused unread) or not an ONNX model."""
    import onnx

    from q9diff.guard import read_bytes  # start-up: guard

    data = read_bytes(path, "an ONNX model", LayersError, MAX_MODEL_BYTES)
    try:
        return onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError, OSError, onnx's own: all say "not a model"
        why = " ".join(str(exc).split())[:160]
        raise LayersError(f"{path}: expected an ONNX model ({type(exc).__name__}: {why})") from None


def _elem_types(model) -> dict[str, int]:
    """Each tensor's element type as the model declares or ONNX's shape inference infers it."""
    import onnx

    types: dict[str, int] = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    except Exception:  # an op shape inference does not know: what the model declares is all there is
        inferred = model.graph
    for v in [*inferred.input, *inferred.output, *inferred.value_info]:
        types[v.name] = v.type.tensor_type.elem_type
    for t in model.graph.initializer:
        types[t.name] = t.data_type
    return types


def _scalar(inits: dict, name: str) -> float | None:
    """A scale initializer's value, when it is one number stored in the file."""
    from onnx import numpy_helper

    t = inits.get(name)
    if t is None or t.data_location == 1 or (len(t.dims) and int(t.dims[0]) != 1):  # external, per channel
        return None
    try:
        return float(numpy_helper.to_array(t).reshape(-1)[0])
    except (ValueError, IndexError):
        return None


def read(path: Path) -> ModelGraph:
    """The source tensors of the ONNX model at `path` (QDQ or float) in graph order."""
    model = load_model(path)
    g = model.graph
    types = _elem_types(model)
    inits = {t.name: t for t in g.initializer}
    constant = set(inits)
    producer = {}
    for node in g.node:
        if node.op_type == "Constant" or (node.input and all(i in constant or not i for i in node.input)):
            constant.update(node.output)
        for out in node.output:
            producer[out] = node
    readers: dict[str, list] = {}
    for node in g.node:
        for i in node.input:
            readers.setdefault(i, []).append(node)
    graph_outputs = [o.name for o in g.output]
    alias: dict[str, str] = {}  # a Q or DQ output -> the tensor it quantizes
    quantized = False
    for node in g.node:
        if node.op_type in QDQ and node.input and node.input[0] not in constant:
            alias[node.output[0]] = node.input[0]
            quantized = True

    def resolve(t: str) -> str:
        seen = 0
        while t in alias and seen < 64:
            t, seen = alias[t], seen + 1
        return t

    taps: dict[str, tuple[str, float | None]] = {}  # resolved tensor -> (its tap, its scale)
    renamed: dict[str, str] = {}  # resolved tensor -> the graph output a DQ gives it as a name
    outs = set(graph_outputs)
    for node in g.node:
        if node.op_type != QUANTIZE or node.input[0] in constant:
            continue
        x = resolve(node.input[0])
        dqs = [r for r in readers.get(node.output[0], []) if r.op_type == DEQUANTIZE]
        scale = _scalar(inits, node.input[1]) if len(node.input) > 1 else None
        if x not in taps:
            if dqs:
                taps[x] = (dqs[0].output[0], scale)
            elif node.output[0] in outs:
                taps[x] = (node.output[0], scale)  # a quantized graph output shows it as it is
        for dq in dqs:
            if dq.output[0] in outs:
                renamed[x] = dq.output[0]
    for node in g.node:  # a quantized graph input read by a DequantizeLinear alone (`--quantize_io`)
        if node.op_type == DEQUANTIZE and node.input[0] not in constant and node.input[0] not in producer:
            x = resolve(node.input[0])
            taps.setdefault(
                x, (node.output[0], _scalar(inits, node.input[1]) if len(node.input) > 1 else None)
            )

    def name(t: str) -> str:
        r = resolve(t)
        return renamed.get(r, r)

    def is_float(t: str) -> bool:
        return types.get(t, UNKNOWN_TYPE) in FLOAT_TYPES or (not quantized and types.get(t) is None)

    sources: list[Source] = []
    seen: set[str] = set()
    for v in g.input:
        if v.name in constant or v.name in seen:
            continue
        tap = taps.get(v.name)
        if tap is None and not (is_float(v.name) and not quantized):
            continue
        sources.append(Source(v.name, "", "input", tap[0] if tap else v.name, (), tap[1] if tap else None))
        seen.add(v.name)
    for node in g.node:
        if node.op_type in QDQ or all(o in constant for o in node.output):
            continue
        ins = tuple(dict.fromkeys(name(i) for i in node.input if i and i not in constant))
        for out in node.output:
            if not out or out in constant:
                continue
            src = name(out)
            if src in seen:
                continue
            tap = taps.get(resolve(out))
            if tap is None and not is_float(out):
                continue
            own = tap[0] if tap else (None if quantized and out not in outs else out)
            label = node.name or out
            sources.append(Source(src, label, node.op_type, own, ins, tap[1] if tap else None))
            seen.add(src)
    known = {s.name for s in sources}
    sources = [
        Source(s.name, s.node, s.op, s.tap, tuple(i for i in s.inputs if i in known), s.scale)
        for s in sources
    ]
    names = [name(o) for o in graph_outputs]
    weights, activations = set(), set()
    for node in g.node:
        if node.op_type == DEQUANTIZE and node.input[0] in constant and types.get(node.input[0]) != 6:
            weights.add(TYPE_NAMES.get(types.get(node.input[0], 0), "other"))
        elif node.op_type == QUANTIZE and node.input[0] not in constant and len(node.input) > 2:
            activations.add(TYPE_NAMES.get(types.get(node.input[2], 0), "other"))
    return ModelGraph(
        Path(path),
        quantized,
        tuple(sources),
        tuple(n for n in names if n in known),
        tuple(sorted(weights)),
        tuple(sorted(activations)),
    )


def stand_ins(graph: ModelGraph, tapped: set[str]) -> dict[str, str | None]:
    """For each source tensor not in `tapped`: the first tensor in graph order computed from it (directly
    or through others not tapped) that is, which then stands in for it; None when none is."""
    order = {s.name: i for i, s in enumerate(graph.sources)}
    consumers = graph.consumers()
    out: dict[str, str | None] = {}
    for s in graph.sources:
        if s.name in tapped:
            continue
        best, todo, seen = None, deque(consumers.get(s.name, [])), set()
        while todo and len(seen) < 4096:
            t = todo.popleft()
            if t in seen:
                continue
            seen.add(t)
            if t in tapped:
                if best is None or order[t] < order[best]:
                    best = t
                continue
            todo.extend(consumers.get(t, []))
        out[s.name] = best
    return out


def boundaries(graph: ModelGraph) -> list[str]:
    """The block boundaries of a graph: tapped tensors at which every value the rest of the graph still
    needs from the main stream is that tensor alone (a decoder layer's residual stream after its
    attention and after its MLP, a convnet's block output). The main stream is what descends from the
    root (a tensor computed from no other) with the most descendants: an LLM's embedding, not its mask or
    positions, which feed every layer. A graph output is a boundary too."""
    sources = graph.sources
    order = {s.name: i for i, s in enumerate(sources)}
    consumers = graph.consumers()
    last_use = {name: max(order[c] for c in cs) for name, cs in consumers.items()}
    roots = [s.name for s in sources if not s.inputs]
    best, stream = None, set()
    for root in roots:
        reach, todo = {root}, [root]
        while todo:
            for c in consumers.get(todo.pop(), []):
                if c not in reach:
                    reach.add(c)
                    todo.append(c)
        if best is None or len(reach) > len(stream):
            best, stream = root, reach
    live: set[str] = set()
    out = []
    for i, s in enumerate(sources):
        if s.name in stream and last_use.get(s.name, -1) > i:
            live.add(s.name)
        live = {t for t in live if last_use[t] > i}
        if s.tap is not None and (live == {s.name} or s.name in graph.outputs):
            out.append(s.name)
    return out


def block_taps(graph: ModelGraph) -> list[str]:
    """What a large graph is tapped at first: its block boundaries and, for each, the tensors its node
    reads from inside the block (a residual Add's branch: the attention's or the MLP's output), since an
    error inside a branch is small against the residual stream it is added to; and the graph outputs."""
    marks = set(boundaries(graph)) | set(graph.outputs)
    by_name = graph.by_name()
    ends = {i for m in marks for i in by_name[m].inputs if by_name[i].tap is not None}
    return [s.name for s in graph.sources if s.name in marks | ends]


def tapped_model(graph: ModelGraph, taps: list[str], folder: Path) -> tuple[Path, str]:
    """A copy of the model with the taps of `taps` (source names) made graph outputs, written in `folder`
    as MODEL.onnx (its external data files linked beside it); the copy's path and a digest of its content
    (the graph's bytes and every external data file's name, size and digest), which keys its compile."""
    import onnx

    model = load_model(graph.path)
    taps_of = {s.name: s.tap for s in graph.sources}
    have = {o.name for o in model.graph.output}
    for name in taps:
        tap = taps_of.get(name)
        if tap is None or tap in have:
            continue
        value = onnx.ValueInfoProto(name=tap)
        if graph.quantized:
            value = onnx.helper.make_tensor_value_info(tap, onnx.TensorProto.FLOAT, None)
        model.graph.output.append(value)
        have.add(tap)
    data = model.SerializeToString()
    h = hashlib.sha256(data)
    externals = external_files(model, graph.path)
    for _, ext in externals:
        h.update(ext.name.encode() + b"\0" + file_digest(ext).encode())
    folder.mkdir(parents=True, exist_ok=True)
    for name, ext in externals:
        place_external(ext, folder / name)
    target = folder / graph.path.name
    target.write_bytes(data)
    return target, h.hexdigest()


def external_files(model, path: Path) -> list[tuple[str, Path]]:
    """The external data files a model's initializers name: each as the model's folder names it (a
    relative name, where a copy of the model beside them looks) and resolved, inside that folder."""
    from q9diff.guard import contained  # start-up: guard

    base = Path(path).resolve().parent
    found: dict[Path, str] = {}
    for t in model.graph.initializer:
        if t.data_location != 1:
            continue
        where = next((e.value for e in t.external_data if e.key == "location"), None)
        if where:
            p = contained(where, base, path, LayersError)
            name = os.path.normpath(where)
            found.setdefault(p, name if not name.startswith(("..", "/")) else str(p.relative_to(base)))
    return [(name, p) for p, name in found.items()]


def place_external(ext: Path, at: Path) -> None:
    """An external data file beside a model's copy: a hard link, else a copy (ONNX Runtime refuses data
    whose resolved path leaves the copy's folder, so a symbolic link will not do); only a regular file."""
    from q9diff.guard import open_regular  # start-up: guard

    at.parent.mkdir(parents=True, exist_ok=True)
    if at.exists():
        return
    try:
        os.link(ext, at)
    except OSError:
        with open_regular(ext, "a model's external data file", LayersError) as (f, st), open(at, "wb") as out:
            left = st.st_size
            while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                out.write(chunk)
                left -= len(chunk)


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """A regular file's sha256, once per run for each (path, size, mtime); a FIFO or device (an external
    data file of a model is named by the model) is refused in one line, never opened to wait on."""
    from q9diff.guard import digest  # start-up: guard

    try:
        st = os.stat(path)
    except OSError as exc:
        raise LayersError(
            f"{path}: expected a model's external data file, cannot read it ({exc.strerror})"
        ) from None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = digest(path, "a model's external data file", LayersError)
    return _DIGESTS[key]
