"""Greedy decoding over the graphs of a split LLM, the way Genie drives them, on any runner.

The layout comes from the graphs' own tensors, using the names and layouts Genie requires
(docs: QNN_FACTS "Genie runs here"): `input_ids` [1, AR] into the first part, `attention_mask`
[1, 1, AR, CL], `position_ids_cos`/`_sin` [1, 1, AR, pos_dim], cache pairs `X_in`/`X_out` whose
`_in` holds CL-AR past entries and whose `_out` holds the AR new ones along one axis, `logits`
out of the last part; any other input of a part is the same-named output of an earlier part
(`hidden_states`). AR = tokens per call, CL = context length. The largest-AR graph of each part
reads the prompt, the smallest-AR graph generates.

Conventions: Genie's, as measured from its debug dump (q9diff.runners.genie), so the emulator run
of a bundle's binaries and Genie's own run feed the graphs the same bytes: the caller prepends bos;
the prompt is read in AR-sized chunks, a short chunk right-padded with `pad` (Genie: eos); past
entries sit left-aligned in the `_in` window (column j = position j); the mask is 0 where a token may
attend (filled past columns, then causally the new tokens in the last AR columns) and -1000
elsewhere, padding rows masked entirely; RoPE angles are position * theta^(-i/pos_dim), padding rows
at position 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from q9diff.genie.layout import split_index
from q9diff.runners.base import GraphSpec, RunnerError, Session, from_device, to_device

MASKED = -1000.0
STANDARD = {"input_ids", "attention_mask", "position_ids_cos", "position_ids_sin"}


@dataclass(frozen=True)
class CachePair:
    name: str  # "past_key_0"
    axis: int  # the axis along which past and new entries are concatenated


@dataclass(frozen=True)
class PartGraphs:
    """The graphs of one part by AR, and the caches they carry."""

    by_ar: dict[int, GraphSpec]
    caches: tuple[CachePair, ...]

    @property
    def prompt(self) -> GraphSpec:
        return self.by_ar[max(self.by_ar)]

    @property
    def token(self) -> GraphSpec:
        return self.by_ar[min(self.by_ar)]


@dataclass(frozen=True)
class DecoderLayout:
    parts: tuple[PartGraphs, ...]
    context: int  # CL
    vocab: int
    pos_dim: int


def _ar_cl(g: GraphSpec) -> tuple[int, int] | None:
    mask = g.input("attention_mask")
    if mask is None or len(mask.shape) < 2:
        return None
    return mask.shape[-2], mask.shape[-1]


def _caches(g: GraphSpec, ar: int, cl: int) -> list[CachePair]:
    pairs = []
    for t in g.inputs:
        if not t.name.endswith("_in"):
            continue
        base = t.name[: -len("_in")]
        out = g.output(base + "_out")
        if out is None or len(out.shape) != len(t.shape):
            continue
        axes = [i for i, (a, b) in enumerate(zip(t.shape, out.shape)) if a != b]
        if len(axes) == 1 and t.shape[axes[0]] == cl - ar and out.shape[axes[0]] == ar:
            axis = axes[0]
        elif not axes and t.shape == out.shape and cl - ar == ar:
            axis = len(t.shape) - (1 if "key" in base else 2)  # Genie: keys [.., hd, n], values [.., n, hd]
        else:
            raise RunnerError(f"graph {g.name}: cache {base} in {t.shape} / out {out.shape} fit no AR={ar}")
        pairs.append(CachePair(base, axis))
    return pairs


def _split_order(parts: dict[int, list[GraphSpec]]) -> list[int]:
    """Part keys in split order: by `_<i>_of_<n>` name suffix when every graph has one, else as given."""
    index = {k: {split_index(g.name) for g in gs} for k, gs in parts.items()}
    if all(len(v) == 1 and None not in v for v in index.values()):
        return sorted(parts, key=lambda k: (next(iter(index[k])), k))
    return sorted(parts)


def _splits(graphs: Sequence[GraphSpec]) -> list[dict[int, GraphSpec]] | None:
    """Graphs grouped into the splits of the model, each split's graphs by AR.

    A binary holding several graphs (AI Hub's layout) is one split. Binaries of one graph each (a Genie
    bundle on x86) are grouped the way Genie groups them: by AR, the k-th binary of each AR is split k.
    Splits are ordered as Genie orders them: by the graph names' `_<i>_of_<n>` suffix when they all
    carry one, else in the binaries' order.
    """
    parts: dict[int, list[GraphSpec]] = {}
    for g in graphs:
        parts.setdefault(g.part, []).append(g)
    if all(len(v) == 1 for v in parts.values()) and len({_ar_cl(g) for g in graphs}) > 1:
        by_ar: dict[int, list[GraphSpec]] = {}
        for k in _split_order(parts):
            g = parts[k][0]
            by_ar.setdefault(_ar_cl(g)[0], []).append(g)
        counts = {len(v) for v in by_ar.values()}
        if len(counts) != 1:
            raise RunnerError(
                f"graphs per AR differ ({ {ar: len(v) for ar, v in by_ar.items()} }): no splits"
            )
        return [{ar: gs[i] for ar, gs in by_ar.items()} for i in range(counts.pop())]
    splits = []
    for k in _split_order(parts):
        split: dict[int, GraphSpec] = {}
        for g in parts[k]:
            ar = _ar_cl(g)[0]
            if ar in split:
                raise RunnerError(f"part {k} has two graphs with AR={ar}: {split[ar].name}, {g.name}")
            split[ar] = g
        splits.append(split)
    return splits


def layout(graphs: Sequence[GraphSpec]) -> DecoderLayout | None:
    """The decoder layout of a set of graphs, or None when they are not an LLM in Genie's layout."""
    if not graphs or any(_ar_cl(g) is None or g.input("position_ids_cos") is None for g in graphs):
        return None
    contexts = {_ar_cl(g)[1] for g in graphs}
    if len(contexts) != 1:
        return None
    cl = contexts.pop()
    ordered = _splits(graphs)
    if any(g.input("input_ids") is None for g in ordered[0].values()):
        return None
    logits = [g.output("logits") for g in ordered[-1].values()]
    if any(t is None for t in logits):
        return None
    result = []
    for by_ar in ordered:
        caches = {(c.name, c.axis) for ar, g in by_ar.items() for c in _caches(g, ar, cl)}
        result.append(PartGraphs(by_ar, tuple(CachePair(n, a) for n, a in sorted(caches))))
    pos_dim = ordered[0][max(ordered[0])].input("position_ids_cos").shape[-1]
    return DecoderLayout(tuple(result), cl, logits[0].shape[-1], pos_dim)


@dataclass(frozen=True)
class Trace:
    """What one greedy run produced: a token per step and the logits it was chosen from."""

    tokens: tuple[int, ...]
    logits: np.ndarray  # [steps, vocab], float32


def rope(positions: np.ndarray, pos_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = theta ** (-np.arange(pos_dim, dtype=np.float64) / pos_dim)
    angles = positions[:, None].astype(np.float64) * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class _Decoder:
    def __init__(self, session: Session, lay: DecoderLayout, theta: float, pad: int) -> None:
        self.session, self.lay, self.theta, self.pad = session, lay, theta, pad
        self.cache: dict[str, np.ndarray | None] = {c.name: None for p in lay.parts for c in p.caches}
        self.filled = 0

    def _past(self, spec, pair: CachePair) -> np.ndarray:
        window = np.zeros(spec.shape, np.float32)
        have = self.cache[pair.name]
        if have is not None and self.filled:
            index = [slice(None)] * window.ndim
            index[pair.axis] = slice(0, self.filled)
            window[tuple(index)] = have
        return window

    def step(self, tokens: list[int], prompt: bool) -> np.ndarray:
        """Run AR tokens through every part; return the logits of the last real token."""
        lay = self.lay
        ar = max(lay.parts[0].by_ar) if prompt else min(lay.parts[0].by_ar)
        valid = len(tokens)
        if valid > ar:
            raise ValueError(f"{valid} tokens for an AR={ar} graph")
        past = lay.context - ar
        if self.filled + valid > past:
            raise RunnerError(f"context of {lay.context} tokens is full after {self.filled} tokens")
        ids = np.full((1, ar), self.pad, np.int64)
        ids[0, :valid] = tokens
        mask = np.full((1, 1, ar, lay.context), MASKED, np.float32)
        for i in range(valid):
            mask[0, 0, i, : self.filled] = 0.0
            mask[0, 0, i, past : past + i + 1] = 0.0
        positions = np.zeros(ar, np.int64)
        positions[:valid] = np.arange(self.filled, self.filled + valid)
        cos, sin = rope(positions, lay.pos_dim, self.theta)
        common = {"input_ids": ids, "attention_mask": mask, "position_ids_cos": cos, "position_ids_sin": sin}
        carried: dict[str, np.ndarray] = {}
        new_cache: dict[str, np.ndarray] = {}
        logits = None
        for part in lay.parts:
            g = part.by_ar[ar] if ar in part.by_ar else None
            if g is None:
                raise RunnerError(f"part {part.prompt.part} has no graph with AR={ar}")
            feeds = {}
            pairs = {c.name: c for c in part.caches}
            for t in g.inputs:
                if t.name in common:
                    value = common[t.name]
                elif t.name.endswith("_in") and t.name[:-3] in pairs:
                    value = self._past(t, pairs[t.name[:-3]])
                elif t.name in carried:
                    value = carried[t.name]
                else:
                    raise RunnerError(f"graph {g.name}: no value for input {t.name}")
                feeds[t.name] = to_device(t, value.reshape(t.shape))
            raw = self.session.run(g, feeds)
            out = {t.name: from_device(t, raw[t.name]) for t in g.outputs}
            for name, pair in pairs.items():
                new = out[name + "_out"]
                index = [slice(None)] * new.ndim
                index[pair.axis] = slice(0, valid)
                new_cache[name] = new[tuple(index)].astype(np.float32)
            carried.update(out)
            if "logits" in out:
                logits = out["logits"].reshape(ar, -1)[valid - 1]
        for name, new in new_cache.items():
            old = self.cache[name]
            axis = next(c.axis for p in lay.parts for c in p.caches if c.name == name)
            self.cache[name] = new if old is None else np.concatenate([old, new], axis=axis)
        self.filled += valid
        return np.asarray(logits, np.float32)


def greedy(
    session: Session,
    lay: DecoderLayout,
    prompt_ids: Sequence[int],
    steps: int,
    *,
    theta: float = 10000.0,
    pad: int = 0,
    force: Sequence[int] | None = None,
) -> Trace:
    """Read the prompt, then generate `steps` tokens greedily (or feed `force`, teacher-forced, and
    still record the logits each step produced, so two runs can be compared on the same tokens)."""
    if not prompt_ids:
        raise ValueError("an empty prompt")
    dec = _Decoder(session, lay, theta, pad)
    chunk = max(lay.parts[0].by_ar)
    ids = list(prompt_ids)
    for start in range(0, len(ids), chunk):
        logits = dec.step(ids[start : start + chunk], prompt=True)
    tokens, rows = [], []
    for step in range(steps):
        if step:
            if dec.filled + 1 > lay.context - min(lay.parts[0].by_ar):
                break
            logits = dec.step([tokens[-1] if force is None else force[step - 1]], prompt=False)
        rows.append(logits)
        tokens.append(int(np.argmax(logits)))
    return Trace(tuple(tokens), np.stack(rows) if rows else np.zeros((0, lay.vocab), np.float32))
