"""The fixtures' own greedy decoding loop: how the float decoder parts are driven to record the exact feeds
each graph gets, which `fixture_models.decoding_calibration` quantizes on.

Frozen on purpose. The committed LLM fixtures (fixtures/qwen-mini/models, fixtures/story/models and every
binary built from them) were calibrated on the feeds of q9diff's decoder as it stood at commit 961cd44
(q9diff/llm.py, since moved to q9diff/verify/llm.py and edited); this module does the same arithmetic
(checked: it records byte-identical feeds and rebuilds byte-identical models) and imports nothing from
q9diff, so later work on q9diff's decoder cannot move the fixtures. Change it only together with the
fixtures it makes (scripts/make_fixtures.py rewrites them, and its --check names the stage that moved).

Genie's conventions, as q9diff's decoder measured them: the caller prepends bos; the prompt is read in
AR-sized chunks, a short chunk right-padded with `pad`; past entries sit left-aligned in each `_in`
window (column j = position j); the mask is 0 where a token may attend (filled past columns, then
causally the new tokens in the last AR columns) and -1000 elsewhere, padding rows masked entirely; RoPE
angles are position * theta^(-i/pos_dim) in float64, cast to float32, padding rows at position 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MASKED = -1000.0
COMMON = ("input_ids", "attention_mask", "position_ids_cos", "position_ids_sin")


@dataclass(frozen=True)
class Graph:
    """One float decoder graph on ONNX Runtime's CPU EP: its part (1-based), AR and I/O in session order."""

    part: int
    ar: int
    session: object  # onnxruntime.InferenceSession
    inputs: tuple[tuple[str, tuple[int, ...], str], ...]  # (name, shape, numpy dtype)
    outputs: tuple[tuple[str, tuple[int, ...]], ...]


def graph(part: int, session) -> Graph:
    inputs = tuple(
        (v.name, tuple(v.shape), "int32" if v.type == "tensor(int32)" else "float32")
        for v in session.get_inputs()
    )
    outputs = tuple((v.name, tuple(v.shape)) for v in session.get_outputs())
    ar = next(shape for name, shape, _ in inputs if name == "attention_mask")[-2]
    return Graph(part, ar, session, inputs, outputs)


def cache_axes(g: Graph, context: int) -> dict[str, int]:
    """Each KV cache `X_in`/`X_out` pair of a graph: the axis along which past and new entries join."""
    outs = dict(g.outputs)
    axes = {}
    for name, shape, _ in g.inputs:
        base = name[: -len("_in")] if name.endswith("_in") else None
        if base is None or base + "_out" not in outs:
            continue
        out = outs[base + "_out"]
        differ = [i for i, (a, b) in enumerate(zip(shape, out)) if a != b]
        if len(differ) != 1 or shape[differ[0]] != context - g.ar or out[differ[0]] != g.ar:
            raise ValueError(f"cache {base}: in {shape} / out {out} fit no AR={g.ar}")
        axes[base] = differ[0]
    return axes


def rope(positions: np.ndarray, pos_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = theta ** (-np.arange(pos_dim, dtype=np.float64) / pos_dim)
    angles = positions[:, None].astype(np.float64) * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class Decoder:
    """The split decoder's graphs by (part, AR); `feeds[(part, AR)]` collects every input dict a graph got."""

    def __init__(self, graphs: Sequence[Graph], context: int, pos_dim: int, theta: float, pad: int) -> None:
        self.by = {(g.part, g.ar): g for g in graphs}
        self.parts = sorted({g.part for g in graphs})
        self.ars = sorted({g.ar for g in graphs})
        self.context, self.pos_dim, self.theta, self.pad = context, pos_dim, theta, pad
        axes: dict[str, int] = {}
        for g in graphs:
            axes |= cache_axes(g, context)
        self.axes = axes
        self.feeds: dict[tuple[int, int], list[dict[str, np.ndarray]]] = {}
        self.reset()

    def reset(self) -> None:
        self.cache: dict[str, np.ndarray | None] = dict.fromkeys(self.axes)
        self.filled = 0

    def _past(self, shape: tuple[int, ...], name: str) -> np.ndarray:
        window = np.zeros(shape, np.float32)
        have = self.cache[name]
        if have is not None and self.filled:
            index = [slice(None)] * window.ndim
            index[self.axes[name]] = slice(0, self.filled)
            window[tuple(index)] = have
        return window

    def step(self, tokens: list[int], prompt: bool) -> np.ndarray:
        """Run the tokens through every part with the prompt (largest AR) or token graph; the logits of
        the last real token."""
        ar = max(self.ars) if prompt else min(self.ars)
        valid, past = len(tokens), self.context - ar
        if valid > ar or self.filled + valid > past:
            raise ValueError(f"{valid} tokens after {self.filled} for an AR={ar} graph of CL={self.context}")
        ids = np.full((1, ar), self.pad, np.int64)
        ids[0, :valid] = tokens
        mask = np.full((1, 1, ar, self.context), MASKED, np.float32)
        for i in range(valid):
            mask[0, 0, i, : self.filled] = 0.0
            mask[0, 0, i, past : past + i + 1] = 0.0
        positions = np.zeros(ar, np.int64)
        positions[:valid] = np.arange(self.filled, self.filled + valid)
        cos, sin = rope(positions, self.pos_dim, self.theta)
        common = dict(zip(COMMON, (ids, mask, cos, sin)))
        carried: dict[str, np.ndarray] = {}
        new_cache: dict[str, np.ndarray] = {}
        logits = None
        for part in self.parts:
            g = self.by[(part, ar)]
            feeds = {}
            for name, shape, dtype in g.inputs:
                if name in common:
                    value = common[name]
                elif name.endswith("_in") and name[:-3] in self.axes:
                    value = self._past(shape, name[:-3])
                else:
                    value = carried[name]  # hidden_states, from the part before
                feeds[name] = np.asarray(value).astype(dtype).reshape(shape)
            self.feeds.setdefault((part, ar), []).append({k: v.copy() for k, v in feeds.items()})
            out = dict(zip((name for name, _ in g.outputs), g.session.run(None, feeds)))
            for name, axis in self.axes.items():
                if name + "_out" in out:
                    index = [slice(None)] * out[name + "_out"].ndim
                    index[axis] = slice(0, valid)
                    new_cache[name] = out[name + "_out"][tuple(index)].astype(np.float32)
            carried.update(out)
            if "logits" in out:
                logits = out["logits"].reshape(ar, -1)[valid - 1]
        for name, new in new_cache.items():
            old = self.cache[name]
            self.cache[name] = new if old is None else np.concatenate([old, new], axis=self.axes[name])
        self.filled += valid
        return np.asarray(logits, np.float32)

    def greedy(self, prompt_ids: Sequence[int], steps: int) -> list[int]:
        """Read the prompt in chunks of the largest AR, then generate `steps` tokens greedily."""
        self.reset()
        chunk = max(self.ars)
        ids = list(prompt_ids)
        for start in range(0, len(ids), chunk):
            logits = self.step(ids[start : start + chunk], prompt=True)
        tokens: list[int] = []
        for step in range(steps):
            if step:
                if self.filled + 1 > self.context - min(self.ars):
                    break
                logits = self.step([tokens[-1]], prompt=False)
            tokens.append(int(np.argmax(logits)))
        return tokens
