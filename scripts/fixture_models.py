"""Seeded ONNX models for q9diff's fixtures, built with onnx.helper and numpy (quantization and the
decoder's calibration also use ONNX Runtime; the decoding loop is the fixtures' own, fixture_decoding.py).

`decoder_part` builds a tiny decoder with Qwen2.5's architecture (Gather embedding, RMSNorm, GQA
attention with RoPE and q/k/v biases, SwiGLU MLP, KV cache, LM head), split into two parts like an
LLM export, with the tensor names and layouts Genie expects (docs/QNN_FACTS.md, "Genie runs here").
Part 1 ends in `hidden_states` [1, AR, hidden]; part 2 starts from it. The prompt (AR=32) and token
(AR=1) graphs of a part share the same weights, so the compiler can share them in one context.

The decoder is calibrated on what decoding really feeds it (`decoding_calibration`): the float parts
decode seeded prompts greedily in Genie's conventions and every graph's exact inputs are recorded.
Random inputs (random past KV, positions and masks) miss what decoding looks like (an all-zero, masked
past at the first prompt chunk, fully masked padding rows, hidden states several times larger), and
the model quantized on them left its float model at logit cosine 0.4-0.6 in real decoding; on the
recorded feeds it stays near 0.999, and the emulator's greedy tokens match the CPU's.

`mlp_model` and `spill_fill_model` are small models for one-setting-at-a-time variants. Every model is
a pure function of its arguments and seed; quantization (w8a16, QNN QDQ config) uses a seeded
calibration set, so rebuilding gives the same bytes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import fixture_decoding as fd
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 9


@dataclass(frozen=True)
class DecoderConfig:
    hidden: int = 128
    layers: int = 4
    q_heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    intermediate: int = 256
    vocab: int = 2048
    context: int = 128  # CL
    rope_theta: float = 10000.0
    rms_eps: float = 1e-6
    seed: int = 2025

    @property
    def pos_dim(self) -> int:
        return self.head_dim // 2


class _Graph:
    """A small builder: nodes, initializers and fresh tensor names."""

    def __init__(self, prefix: str = "") -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0
        self.prefix = prefix

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{self.prefix}{hint}_{self.count}"

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def op_to(self, op_type: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attrs))
        return output

    def shape(self, dims: list[int]) -> str:
        return self.const(self.name("shape"), np.array(dims, dtype=np.int64))


def _decoder_weights(cfg: DecoderConfig) -> dict[str, np.ndarray]:
    """Random weights shaped into a decoder whose next token is clear-cut, as a trained model's is.

    Plain random weights give logits whose top three lie within ~0.3 of each other, so the 1e-3
    noise of w8a16 flips the greedy token at the first steps. Two circuits make the choice decisive and
    still depend on the context: layer 0 is a copy head (every query head attends alike, sharply, and
    its value/output projections copy the attended token's embedding into the residual stream), and
    the LM head is tied to the embedding through a fixed permutation of the vocabulary (token t's
    embedding scores token perm[t]). The model then continues with perm[t] of the token t that the copy
    head picked: measured greedy from bos + 8 random ids (32 prompts, 16 steps), 95% of the steps depend
    on earlier tokens, not only the last one, and the top logit leads the second by a median 4.0
    standard deviations of the logits (0.2% of steps by less than 0.1).
    """
    rng = np.random.default_rng(cfg.seed)
    d, kvd, inter = cfg.hidden, cfg.kv_heads * cfg.head_dim, cfg.intermediate

    def w(*shape: int, std: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    weights = {"embed_tokens": w(cfg.vocab, d, std=1.0)}
    for layer in range(cfg.layers):
        p = f"layers.{layer}."
        weights |= {
            p + "input_layernorm": (1.0 + w(d, std=0.1)),
            p + "q_proj.weight": w(d, cfg.q_heads * cfg.head_dim, std=d**-0.5),
            p + "q_proj.bias": w(cfg.q_heads * cfg.head_dim, std=0.02),
            p + "k_proj.weight": w(d, kvd, std=d**-0.5),
            p + "k_proj.bias": w(kvd, std=0.02),
            p + "v_proj.weight": w(d, kvd, std=d**-0.5),
            p + "v_proj.bias": w(kvd, std=0.02),
            p + "o_proj.weight": w(cfg.q_heads * cfg.head_dim, d, std=(cfg.q_heads * cfg.head_dim) ** -0.5),
            p + "post_attention_layernorm": (1.0 + w(d, std=0.1)),
            p + "gate_proj.weight": w(d, inter, std=d**-0.5),
            p + "up_proj.weight": w(d, inter, std=d**-0.5),
            p + "down_proj.weight": w(inter, d, std=inter**-0.5),
        }
    weights["norm"] = 1.0 + w(d, std=0.1)
    _copy_head(weights, cfg, rng)
    perm = rng.permutation(cfg.vocab)
    embed = weights["embed_tokens"]
    lm_head = np.empty_like(embed)
    lm_head[perm] = embed * (4.0 / np.linalg.norm(embed, axis=1, keepdims=True))
    weights["lm_head"] = np.ascontiguousarray(lm_head.T)
    return weights


def _copy_head(weights: dict[str, np.ndarray], cfg: DecoderConfig, rng: np.random.Generator) -> None:
    """Layer 0 as one sharp copy head: all query heads share head 0's query (16x, so that near-ties
    between two attended tokens are rare) and key weights, the values project onto an orthonormal half
    of the hidden space and the outputs map it back (8x)."""
    p, hd, d = "layers.0.", cfg.head_dim, cfg.hidden
    q = weights[p + "q_proj.weight"][:, :hd] * 16.0
    weights[p + "q_proj.weight"] = np.tile(q, (1, cfg.q_heads))
    weights[p + "q_proj.bias"] = np.tile(weights[p + "q_proj.bias"][:hd], cfg.q_heads)
    weights[p + "k_proj.weight"] = np.tile(weights[p + "k_proj.weight"][:, :hd], (1, cfg.kv_heads))
    weights[p + "k_proj.bias"] = np.tile(weights[p + "k_proj.bias"][:hd], cfg.kv_heads)
    basis = np.linalg.qr(rng.standard_normal((d, d)))[0][:, : cfg.kv_heads * hd].astype(np.float32)
    weights[p + "v_proj.weight"] = basis
    weights[p + "v_proj.bias"] = np.zeros(cfg.kv_heads * hd, np.float32)
    group = cfg.q_heads // cfg.kv_heads
    per_head = [basis[:, (h // group) * hd : (h // group + 1) * hd].T for h in range(cfg.q_heads)]
    weights[p + "o_proj.weight"] = (np.concatenate(per_head) * (8.0 / group)).astype(np.float32)


def _rms_norm(g: _Graph, x: str, weight: str, cfg: DecoderConfig) -> str:
    sq = g.op("Mul", [x, x], "sq")
    mean = g.op("ReduceMean", [sq], "mean", axes=[-1], keepdims=1)
    eps = g.const(g.name("eps"), np.array(cfg.rms_eps, dtype=np.float32))
    # Div(1, x), not Reciprocal(x): ONNX Runtime's QNN EP lowers Reciprocal to a Divide whose constant
    # 1.0 takes the input's quantization, so when the calibrated Sqrt range ends below 1, 1.0 saturates
    # to that end and the norm comes out scaled by it (measured with `q9diff verify`: hidden states at
    # cosine 0.80 against the CPU before, 0.9999 after).
    one = g.const(eps + "_one", np.array(1.0, dtype=np.float32))
    rstd = g.op("Div", [one, g.op("Sqrt", [g.op("Add", [mean, eps])])], "rstd")
    return g.op("Mul", [g.op("Mul", [x, rstd]), weight], "rms")


def _rope(g: _Graph, x: str, cos: str, sin: str, cfg: DecoderConfig) -> str:
    """Rotate-half RoPE on [heads, 1, AR, head_dim] with cos/sin [1, 1, AR, head_dim/2]."""
    half = cfg.pos_dim
    axes = g.const(g.name("ax"), np.array([3], np.int64))
    s0 = g.const(g.name("s0"), np.array([0], np.int64))
    s1 = g.const(g.name("s1"), np.array([half], np.int64))
    e1 = g.const(g.name("e1"), np.array([cfg.head_dim], np.int64))
    x1 = g.op("Slice", [x, s0, s1, axes], "x1")
    x2 = g.op("Slice", [x, s1, e1, axes], "x2")
    a = g.op("Sub", [g.op("Mul", [x1, cos]), g.op("Mul", [x2, sin])], "rot_a")
    b = g.op("Add", [g.op("Mul", [x2, cos]), g.op("Mul", [x1, sin])], "rot_b")
    return g.op("Concat", [a, b], "rope", axis=3)


def _layer(g: _Graph, x: str, layer: int, ar: int, cfg: DecoderConfig) -> str:
    p = f"layers.{layer}."
    qh, kvh, hd = cfg.q_heads, cfg.kv_heads, cfg.head_dim
    h = _rms_norm(g, x, p + "input_layernorm", cfg)
    q = g.op("Add", [g.op("MatMul", [h, p + "q_proj.weight"]), p + "q_proj.bias"], "q")
    k = g.op("Add", [g.op("MatMul", [h, p + "k_proj.weight"]), p + "k_proj.bias"], "k")
    v = g.op("Add", [g.op("MatMul", [h, p + "v_proj.weight"]), p + "v_proj.bias"], "v")
    q = g.op("Transpose", [g.op("Reshape", [q, g.shape([1, ar, qh, hd])])], "q_t", perm=[2, 0, 1, 3])
    k = g.op("Transpose", [g.op("Reshape", [k, g.shape([1, ar, kvh, hd])])], "k_t", perm=[2, 0, 1, 3])
    v_new = g.op_to(
        "Transpose",
        [g.op("Reshape", [v, g.shape([1, ar, kvh, hd])])],
        f"past_value_{layer}_out",
        perm=[2, 0, 1, 3],
    )
    q = _rope(g, q, "position_ids_cos", "position_ids_sin", cfg)
    k = _rope(g, k, "position_ids_cos", "position_ids_sin", cfg)
    k_new = g.op_to("Transpose", [k], f"past_key_{layer}_out", perm=[0, 1, 3, 2])  # [KVH, 1, hd, AR]
    keys = g.op("Concat", [f"past_key_{layer}_in", k_new], "keys", axis=3)  # [KVH, 1, hd, CL]
    values = g.op("Concat", [f"past_value_{layer}_in", v_new], "values", axis=2)  # [KVH, 1, CL, hd]
    group = qh // kvh
    keys = g.op(
        "Reshape", [g.op("Tile", [keys, g.shape([1, group, 1, 1])]), g.shape([qh, 1, hd, cfg.context])]
    )
    values = g.op(
        "Reshape", [g.op("Tile", [values, g.shape([1, group, 1, 1])]), g.shape([qh, 1, cfg.context, hd])]
    )
    scale = g.const(g.name("scale"), np.array(hd**-0.5, dtype=np.float32))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, keys]), scale]), "attention_mask"], "scores")
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values], "attn")  # [QH, 1, AR, hd]
    attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[1, 2, 0, 3]), g.shape([1, ar, qh * hd])])
    x = g.op("Add", [x, g.op("MatMul", [attn, p + "o_proj.weight"])], "attn_res")
    h = _rms_norm(g, x, p + "post_attention_layernorm", cfg)
    gate = g.op("MatMul", [h, p + "gate_proj.weight"], "gate")
    up = g.op("MatMul", [h, p + "up_proj.weight"], "up")
    act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up], "swiglu")
    return g.op("Add", [x, g.op("MatMul", [act, p + "down_proj.weight"])], "mlp_res")


def _kv_io(cfg: DecoderConfig, layer: int, ar: int) -> tuple[list, list]:
    kvh, hd, past = cfg.kv_heads, cfg.head_dim, cfg.context - ar
    f = TensorProto.FLOAT
    ins = [
        helper.make_tensor_value_info(f"past_key_{layer}_in", f, [kvh, 1, hd, past]),
        helper.make_tensor_value_info(f"past_value_{layer}_in", f, [kvh, 1, past, hd]),
    ]
    outs = [
        helper.make_tensor_value_info(f"past_key_{layer}_out", f, [kvh, 1, hd, ar]),
        helper.make_tensor_value_info(f"past_value_{layer}_out", f, [kvh, 1, ar, hd]),
    ]
    return ins, outs


def decoder_part(cfg: DecoderConfig, part: int, n_parts: int, ar: int) -> onnx.ModelProto:
    """Part `part` (1-based) of `n_parts` for AR tokens per call: float32, Genie's names."""
    weights = _decoder_weights(cfg)
    per_part = cfg.layers // n_parts
    layers = range((part - 1) * per_part, part * per_part)
    f = TensorProto.FLOAT
    g = _Graph()
    inputs, outputs = [], []
    if part == 1:
        inputs.append(helper.make_tensor_value_info("input_ids", TensorProto.INT32, [1, ar]))
        x = g.op("Gather", ["embed_tokens", "input_ids"], "embed", axis=0)
        used = {"embed_tokens"}
    else:
        inputs.append(helper.make_tensor_value_info("hidden_states", f, [1, ar, cfg.hidden]))
        x, used = "hidden_states", set()
    inputs += [
        helper.make_tensor_value_info("attention_mask", f, [1, 1, ar, cfg.context]),
        helper.make_tensor_value_info("position_ids_cos", f, [1, 1, ar, cfg.pos_dim]),
        helper.make_tensor_value_info("position_ids_sin", f, [1, 1, ar, cfg.pos_dim]),
    ]
    for layer in layers:
        ins, outs = _kv_io(cfg, layer, ar)
        inputs += ins
        outputs += outs
        x = _layer(g, x, layer, ar, cfg)
        used |= {k for k in weights if k.startswith(f"layers.{layer}.")}
    if part == n_parts:
        x = _rms_norm(g, x, "norm", cfg)
        g.op_to("Reshape", [g.op("MatMul", [x, "lm_head"]), g.shape([1, 1, ar, cfg.vocab])], "logits")
        outputs.insert(0, helper.make_tensor_value_info("logits", f, [1, 1, ar, cfg.vocab]))
        used |= {"norm", "lm_head"}
    else:
        g.op_to("Identity", [x], "hidden_states")
        outputs.insert(0, helper.make_tensor_value_info("hidden_states", f, [1, ar, cfg.hidden]))
    inits = [numpy_helper.from_array(weights[k], k) for k in sorted(used)] + g.inits
    graph = helper.make_graph(g.nodes, f"qwen_mini_part_{part}_of_{n_parts}_ar{ar}", inputs, outputs, inits)
    return _model(graph)


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="q9diff-fixtures"
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def decoding_calibration(
    cfg: DecoderConfig,
    n_parts: int,
    ars: tuple[int, ...],
    prompts: list[list[int]],
    steps: int,
    pad: int,
    tokens: list[list[int]] | None = None,
) -> dict[tuple[int, int], list[dict[str, np.ndarray]]]:
    """Calibration inputs per (part, AR): the exact feeds every graph of the float model receives on
    ONNX Runtime's CPU EP while it decodes each prompt greedily for `steps` tokens in Genie's conventions
    (the fixtures' own frozen loop, scripts/fixture_decoding.py), so the quantization ranges are those of
    real decoding (all-zero past at the first prompt chunk, padding rows, positions from 0, the hidden
    states and KV values the model itself produces). `tokens`, when given, gets each prompt's greedy
    tokens."""
    import onnxruntime as ort

    graphs = []
    for part in range(1, n_parts + 1):
        for ar in ars:
            so = ort.SessionOptions()
            so.log_severity_level = 3
            model = decoder_part(cfg, part, n_parts, ar).SerializeToString()
            graphs.append(fd.graph(part, ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])))
    decoder = fd.Decoder(graphs, cfg.context, cfg.pos_dim, cfg.rope_theta, pad)
    for prompt in prompts:
        generated = decoder.greedy(prompt, steps)
        if tokens is not None:
            tokens.append(generated)
    return decoder.feeds


def kv_overrides(cfg: DecoderConfig, part: int, limit: float = 8.0) -> dict[str, list[dict]]:
    """One fixed range for each KV cache `_in`/`_out` pair, so both carry the same quantization (the
    calibration decodes keep every cache value within ±4.4: ±8 leaves room for other prompts)."""
    per_part = cfg.layers // 2
    rng = [{"rmin": np.array(-limit, np.float32), "rmax": np.array(limit, np.float32)}]
    out = {}
    for layer in range((part - 1) * per_part, part * per_part):
        for kind in ("key", "value"):
            out[f"past_{kind}_{layer}_in"] = rng
            out[f"past_{kind}_{layer}_out"] = rng
    return out


def mlp_model(seq: int = 16, width: int = 128, hidden: int = 256, seed: int = 7) -> onnx.ModelProto:
    """A small two-layer ReLU MLP block with a residual: x [1, seq, width] → y."""
    rng = np.random.default_rng(seed)
    g = _Graph()
    g.const("w1", (rng.standard_normal((width, hidden)) * width**-0.5).astype(np.float32))
    g.const("b1", (rng.standard_normal(hidden) * 0.02).astype(np.float32))
    g.const("w2", (rng.standard_normal((hidden, width)) * hidden**-0.5).astype(np.float32))
    h = g.op("Relu", [g.op("Add", [g.op("MatMul", ["x", "w1"]), "b1"])], "h")
    g.op_to("Add", ["x", g.op("MatMul", [h, "w2"])], "y")
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        g.nodes,
        f"mlp_seq{seq}",
        [helper.make_tensor_value_info("x", f, [1, seq, width])],
        [helper.make_tensor_value_info("y", f, [1, seq, width])],
        g.inits,
    )
    return _model(graph)


def spill_fill_model(
    seq: int = 4096, width: int = 128, hidden: int = 1024, seed: int = 11
) -> onnx.ModelProto:
    """Wide activations and small weights: the [seq, hidden] intermediate does not fit in VTCM."""
    return mlp_model(seq=seq, width=width, hidden=hidden, seed=seed)


def mlp_calibration(model: onnx.ModelProto, seed: int, count: int = 4) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]


def quantize_w8a16(
    model: onnx.ModelProto,
    calibration: list[dict[str, np.ndarray]],
    out_path: Path,
    overrides: dict[str, list[dict]] | None = None,
    weight_type: str = "QUInt8",
) -> Path:
    """w8a16 QDQ with ONNX Runtime's QNN config; int32 inputs (input_ids) stay unquantized.
    `weight_type` "QInt8" gives symmetric int8 weights, "QInt4" native INT4 (opset 21), both per tensor."""
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(calibration)

        def get_next(self):
            return next(self.items, None)

    out_path = Path(out_path)
    float_path = out_path.with_name(out_path.stem + ".float.tmp.onnx")
    onnx.save(model, float_path)
    # ORT's quantizer advises pre-processing and the opset 21 upgrade it makes, for every model: not news
    logging.disable(logging.WARNING)
    try:
        config = get_qnn_qdq_config(
            model,
            Reader(),
            activation_type=QuantType.QUInt16,
            weight_type=QuantType[weight_type],
            init_overrides=overrides,
            weight_symmetric=weight_type != "QUInt8" or None,
        )
        quantize(str(float_path), str(out_path), config)
    finally:
        logging.disable(logging.NOTSET)
        float_path.unlink(missing_ok=True)
    return out_path


def quantized_io(path: Path, out_path: Path) -> Path:
    """The QDQ model at `path` with its I/O quantized, as AI Hub's `--quantize_io` builds it: each graph
    input that only a QuantizeLinear reads becomes that node's quantized output, each graph output a
    DequantizeLinear makes becomes its quantized input, and those nodes go; the I/O keep their names.
    QNN then records the I/O tensors as UFIXED_POINT_16 with the activations' scale and offset."""
    model = onnx.load(path)
    g = model.graph
    consumers: dict[str, list] = {}
    for node in g.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    inits = {t.name: t for t in g.initializer}
    drop, inputs, outputs = [], [], []
    for x in g.input:
        users = consumers.get(x.name, [])
        if len(users) == 1 and users[0].op_type == "QuantizeLinear":
            q = users[0]
            zero = inits[q.input[2]] if len(q.input) > 2 else None
            dtype = zero.data_type if zero is not None else TensorProto.UINT8
            shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
            inputs.append(helper.make_tensor_value_info(q.output[0], dtype, shape))
            drop.append(q)
        else:
            inputs.append(x)
    made = {o: n for n in g.node for o in n.output}
    for y in g.output:
        dq = made.get(y.name)
        if dq is not None and dq.op_type == "DequantizeLinear":
            zero = inits[dq.input[2]] if len(dq.input) > 2 else None
            dtype = zero.data_type if zero is not None else TensorProto.UINT8
            shape = [d.dim_value for d in y.type.tensor_type.shape.dim]
            outputs.append(helper.make_tensor_value_info(dq.input[0], dtype, shape))
            drop.append(dq)
        else:
            outputs.append(y)
    renamed = {t.name: x.name for t, x in zip(inputs, g.input) if t.name != x.name}
    renamed |= {t.name: y.name for t, y in zip(outputs, g.output) if t.name != y.name}
    for t in (*inputs, *outputs):
        t.name = renamed.get(t.name, t.name)
    nodes = [n for n in g.node if all(n is not d for d in drop)]
    for n in nodes:  # the quantized tensors carry the I/O's own names
        n.input[:] = [renamed.get(x, x) for x in n.input]
        n.output[:] = [renamed.get(x, x) for x in n.output]
    del g.node[:]
    g.node.extend(nodes)
    del g.input[:]
    g.input.extend(inputs)
    del g.output[:]
    g.output.extend(outputs)
    onnx.checker.check_model(model)
    onnx.save(model, out_path)
    return Path(out_path)


def weights_to_4bit_range(path: Path) -> Path:
    """Requantize every int8 per-tensor weight of a QDQ model into [-7, 7] (scale max|w| / 7, zero point
    0), in place: 4-bit weights in an 8-bit container, what HTP weights packing stores two per byte
    (docs/QNN_FACTS.md, "Knobs ONNX Runtime lacks")."""
    model = onnx.load(path)
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits or len(node.input) < 3:
            continue
        q, scale = inits[node.input[0]], inits[node.input[1]]
        if q.data_type != TensorProto.INT8 or len(q.dims) < 2 or len(scale.dims) != 0:
            continue
        zero = numpy_helper.to_array(inits[node.input[2]]).astype(np.float32)
        w = (numpy_helper.to_array(q).astype(np.float32) - zero) * numpy_helper.to_array(scale)
        new_scale = np.float32(np.abs(w).max() / 7.0)
        q4 = np.clip(np.round(w / new_scale), -7, 7).astype(np.int8)
        q.CopyFrom(numpy_helper.from_array(q4, q.name))
        scale.CopyFrom(numpy_helper.from_array(np.array(new_scale, np.float32), scale.name))
        inits[node.input[2]].CopyFrom(numpy_helper.from_array(np.array(0, np.int8), node.input[2]))
    onnx.save(model, path)
    return Path(path)
