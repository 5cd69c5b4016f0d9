"""How far one tensor of the candidate is from the reference's, and the rule that names the first divergence.

Per tensor: cosine, max |Δ|, the relative error ||Δ|| / ||ref|| and the SQNR, 10·log10(||ref||² / ||Δ||²)
in dB, against the reference; max |Δ| in steps of the tensor's own quantization grid where its scale is
known; and the *local* SQNR: against the reference's own computation of the tensor from the candidate's
inputs (q9diff.layers.local), counting only error beyond rounding to the tensor's grid, i.e. the error its
node adds itself. The SQNR against the reference carries everything before the tensor (a sharp softmax turns
its scores' noise into a large error with nothing wrong in it); the local one does not.

The first divergence is the first tensor, in graph order, whose own error stands out from the quantization
noise of the tensors before it: its local SQNR is below `floor_db` and at least `margin_db` below a
percentile (the lowest, measured: see scripts/measure_layers.py) of the local SQNRs before it. The margin
says "stands out"; the floor keeps the first quantized nodes after near-exact inputs from standing out by
their weights' quantization alone. The percentile and both thresholds come from `measured.json`, written by
scripts/measure_layers.py from clean and faulty models (see there for what was measured; outside that
domain they are not measured, and a result says so).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Figures:
    cosine: float
    max_abs: float
    rel: float
    sqnr_db: float  # +inf when the two are equal
    steps: float | None = None  # max |Δ| in quantization steps of the candidate's own grid
    # The SQNR of the candidate against the reference's own computation of this tensor from the candidate's
    # inputs (q9diff.layers.local): the error this node adds itself; None: not recomputed.
    local_sqnr_db: float | None = None
    local_nodes: int | None = None  # how many of the reference's nodes that recomputation spanned

    def own(self) -> str:
        """The local SQNR as the views write it: dB, and the nodes it spans when more than one."""
        if self.local_sqnr_db is None:
            return "-"
        v = self.local_sqnr_db
        text = "inf" if v == math.inf else ("-inf" if v == -math.inf else f"{v:.1f}")
        return text if not self.local_nodes or self.local_nodes == 1 else f"{text} ({self.local_nodes})"

    def to_json(self) -> dict:
        return {k: to_word(v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict) -> Figures:
        steps, local, nodes = d.get("steps"), d.get("local_sqnr_db"), d.get("local_nodes")
        return cls(
            *(_number(d[k]) for k in ("cosine", "max_abs", "rel", "sqnr_db")),
            None if steps is None else _number(steps),
            None if local is None else _number(local),
            None if nodes is None else int(nodes),
        )


def to_word(v):
    """A float for strict JSON: a non-finite one as the word verify writes ("inf", "-inf", "nan")."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _number(v) -> float:
    return float(v)


def figures(candidate: np.ndarray, reference: np.ndarray, scale: float | None = None) -> Figures | None:
    """`candidate` against `reference` (the side taken as right); None when they do not hold the same number
    of values (a tensor the two sides shape differently cannot be compared)."""
    import numpy as np  # in the function: results.py names this module's types on every import

    a = np.asarray(candidate, np.float64).ravel()
    b = np.asarray(reference, np.float64).ravel()
    if a.shape != b.shape:
        return None
    d = a - b
    nd, nb, na = float(d @ d), float(b @ b), float(a @ a)
    if not (math.isfinite(nd) and math.isfinite(nb) and math.isfinite(na)):
        return Figures(0.0, math.inf, math.inf, -math.inf)
    rel = math.sqrt(nd / nb) if nb else (0.0 if nd == 0 else math.inf)
    sqnr = math.inf if nd == 0 else (10 * math.log10(nb / nd) if nb else -math.inf)
    cosine = float(a @ b / math.sqrt(na * nb)) if na and nb else float(na == nb)
    max_abs = float(np.abs(d).max(initial=0.0))
    steps = max_abs / scale if scale else None
    return Figures(max(-1.0, min(1.0, cosine)), max_abs, rel, sqnr, steps)


@dataclass(frozen=True)
class Rule:
    """The first-divergence rule's thresholds, with what they were measured on: a tensor diverges when its
    SQNR is below `floor_db` and at least `margin_db` below the noise of the tensors before it, that noise
    being the `percentile`-th percentile of their SQNRs (a low one: the noisiest tensors so far, but not
    the one tensor whose SQNR dips alone, which a clean model shows too)."""

    percentile: float
    margin_db: float
    floor_db: float
    measured_on: str

    def sentence(self) -> str:
        noise = (
            "that of every tensor before it"
            if self.percentile == 0
            else f"the {self.percentile:g}th percentile of those of the tensors before it"
        )
        return (
            f"the first tensor whose own error (its local SQNR) is below {self.floor_db:g} dB and at least "
            f"{self.margin_db:g} dB below {noise}"
        )

    def to_json(self) -> dict:
        return {
            "percentile": self.percentile,
            "margin_db": self.margin_db,
            "floor_db": self.floor_db,
            "measured_on": self.measured_on,
            "text": self.sentence(),
        }

    @classmethod
    def from_json(cls, d: dict) -> Rule:
        return cls(float(d["percentile"]), float(d["margin_db"]), float(d["floor_db"]), str(d["measured_on"]))


def measured() -> dict:
    """scripts/measure_layers.py's measurement (`q9diff.layers_measured/1`)."""
    return json.loads(files("q9diff.layers").joinpath("measured.json").read_text(encoding="utf-8"))


def rule() -> Rule:
    return Rule.from_json(measured()["rule"])


def noise_before(sqnrs: list[float], percentile: float) -> float:
    """The noise level of the tensors so far: a percentile of their finite SQNRs (+inf: none yet)."""
    import numpy as np  # in the function: results.py names this module's types on every import

    finite = [v for v in sqnrs if math.isfinite(v)]
    return float(np.percentile(finite, percentile, method="lower")) if finite else math.inf


def local_sqnr(candidate: np.ndarray, local: np.ndarray, scale: float | None) -> float | None:
    """The SQNR of the candidate's tensor against the reference's computation of it from the candidate's own
    inputs, counting as error only what exceeds rounding to the tensor's own grid (`scale`: uniform
    rounding's power, scale²/12 per value, is taken off the error's): the error this node adds itself
    beyond its own quantization step. +inf: none beyond it; None: different numbers of values."""
    import numpy as np  # in the function: results.py names this module's types on every import

    a = np.asarray(candidate, np.float64).ravel()
    b = np.asarray(local, np.float64).ravel()
    if a.shape != b.shape or not a.size:
        return None
    err = float(np.mean((a - b) ** 2))
    signal = float(np.mean(b * b))
    if not (math.isfinite(err) and math.isfinite(signal)):
        return -math.inf
    excess = max(err - (scale * scale / 12 if scale else 0.0), 0.0)
    if excess == 0:
        return math.inf
    return 10 * math.log10(signal / excess) if signal else -math.inf


def judged(f: Figures | None) -> float | None:
    """The SQNR the rule judges a tensor by: its local SQNR (the error its node adds itself)."""
    if f is None or f.local_sqnr_db is None or math.isnan(f.local_sqnr_db):
        return None
    return f.local_sqnr_db


@dataclass(frozen=True)
class Verdict:
    """Where the rule fired: the index of the tensor (in the list judged), and the noise of the tensors
    before it: the percentile of their local SQNRs the rule compares with, and their lowest cosine."""

    index: int
    before_sqnr_db: float
    before_cosine: float


@dataclass(frozen=True)
class Judgement:
    """The first divergence (None: none), and the tensors before it whose own error, recomputed over
    tensors not all measured (a block's, in a narrowed run), is below the floor: what to measure inside
    before the divergence can be called the first."""

    divergence: Verdict | None
    suspects: tuple[int, ...] = ()


def judge(measured_figures: list[Figures | None], r: Rule, resolved: list[bool] | None = None) -> Judgement:
    """The tensors of `measured_figures` (in graph order) judged by `r`. `resolved[i]`: the i-th tensor's
    own error was recomputed from measured tensors alone (every tensor of a graph tapped whole is); one that
    was not is no node's own error, so it neither joins the noise nor is named."""
    seen: list[float] = []
    suspects: list[int] = []
    lowest_cos = 1.0
    for i, f in enumerate(measured_figures):
        value = judged(f)
        if value is None:
            continue
        noise = noise_before(seen, r.percentile)
        if resolved is not None and not resolved[i]:
            if value < r.floor_db:
                suspects.append(i)
        elif value < r.floor_db and value <= noise - r.margin_db:
            return Judgement(Verdict(i, noise, lowest_cos), tuple(suspects))
        else:
            seen.append(value)
        lowest_cos = min(lowest_cos, f.cosine)
    return Judgement(None, tuple(suspects))


def first_divergence(measured_figures: list[Figures | None], r: Rule) -> Verdict | None:
    """The first of `measured_figures` (every one resolved: a graph tapped whole) that stands out by `r`."""
    return judge(measured_figures, r).divergence
