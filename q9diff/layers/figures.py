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
    elements: int | None = None  # how many values the tensor holds
    # The SQNR rounding to the tensor's own grid alone leaves on its signal, 10·log10(mean(x²) / (scale²/12)):
    # what its quantization allows; None: no single scale known.
    grid_db: float | None = None

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
        elements, grid = d.get("elements"), d.get("grid_db")
        return cls(
            *(_number(d[k]) for k in ("cosine", "max_abs", "rel", "sqnr_db")),
            None if steps is None else _number(steps),
            None if local is None else _number(local),
            None if nodes is None else int(nodes),
            None if elements is None else int(elements),
            None if grid is None else _number(grid),
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
    return Figures(max(-1.0, min(1.0, cosine)), max_abs, rel, sqnr, steps, elements=int(a.size))


@dataclass(frozen=True)
class Rule:
    """The first-divergence rule's thresholds, with what they were fitted on. A tensor's *allowance* is the
    own error (local SQNR) its quantization leaves room for: `floor_db`, lowered to `grid_margin_db` below
    the SQNR its own grid leaves on its signal when that is lower (a coarse grid on a small signal), and by
    `spread` standard deviations of an SQNR measured over its n values (over two logits the figure is a
    coin toss). A tensor diverges when its local SQNR is below its allowance and at least `margin_db` below
    the noise of the tensors before it (the `percentile`-th percentile of their local SQNRs). Within
    `borderline_db` of the allowance, either side, the views say "borderline"."""

    percentile: float
    margin_db: float
    floor_db: float
    measured_on: str
    grid_margin_db: float | None = None  # None: the grid does not lower the allowance
    spread: float = 0.0
    borderline_db: float = 0.0
    worst_gap_db: float = math.inf  # the worst own error is named beside the first when this far below it
    # a block whose own error over several nodes is below this is tapped inside (None: the floor); more
    # sensitive than the floor, since a fault's error is diluted over a block's nodes
    narrow_db: float | None = None
    # a tensor no value of which is further than this many steps of its own grid from the float model is
    # within what its quantization allows, whatever its SQNR (one sigmoid output two steps off reads 0 dB)
    within_steps: float | None = None

    def within(self, f: Figures) -> bool:
        """Whether every value of tensor `f` is within the rule's steps of its own grid of the float model."""
        return self.within_steps is not None and f.steps is not None and f.steps <= self.within_steps

    @property
    def narrow(self) -> float:
        return self.floor_db if self.narrow_db is None else self.narrow_db

    def allowance(self, f: Figures) -> float:
        """The local SQNR below which tensor `f` diverges, its own grid and element count allowing."""
        a = self.floor_db
        if self.grid_margin_db is not None and f.grid_db is not None and math.isfinite(f.grid_db):
            a = min(a, f.grid_db - self.grid_margin_db)
        if self.spread and f.elements:
            a -= self.spread * spread_db(f.elements)
        return a

    def borderline(self, f: Figures) -> bool:
        v = judged(f)
        return v is not None and abs(v - self.allowance(f)) < self.borderline_db

    def sentence(self) -> str:
        noise = (
            "that of every tensor before it"
            if self.percentile == 0
            else f"the {self.percentile:g}th percentile of those of the tensors before it"
        )
        allow = f"below {self.floor_db:g} dB"
        if self.grid_margin_db is not None:
            allow += f" (or {self.grid_margin_db:g} dB below what its own grid leaves, if lower)"
        if self.spread:
            allow += f" less {self.spread:g} σ of an SQNR over its element count"
        margin = f" and at least {self.margin_db:g} dB below {noise}" if self.margin_db else ""
        within = (
            f", unless every value is within {self.within_steps:g} steps of its grid of the float model"
            if self.within_steps is not None
            else ""
        )
        return f"the first tensor whose own error (its local SQNR) is {allow}{margin}{within}"

    def to_json(self) -> dict:
        return {
            "percentile": self.percentile,
            "margin_db": self.margin_db,
            "floor_db": self.floor_db,
            "grid_margin_db": self.grid_margin_db,
            "spread": self.spread,
            "borderline_db": self.borderline_db,
            "worst_gap_db": to_word(self.worst_gap_db),
            "narrow_db": self.narrow_db,
            "within_steps": self.within_steps,
            "measured_on": self.measured_on,
            "text": self.sentence(),
        }

    @classmethod
    def from_json(cls, d: dict) -> Rule:
        grid = d.get("grid_margin_db")
        return cls(
            float(d["percentile"]),
            float(d["margin_db"]),
            float(d["floor_db"]),
            str(d["measured_on"]),
            None if grid is None else float(grid),
            float(d.get("spread", 0.0)),
            float(d.get("borderline_db", 0.0)),
            float(d.get("worst_gap_db", math.inf)),
            None if d.get("narrow_db") is None else float(d["narrow_db"]),
            None if d.get("within_steps") is None else float(d["within_steps"]),
        )


def spread_db(n: int) -> float:
    """The standard deviation, in dB, of an SQNR measured over `n` values of independent error: the error's
    power, a mean of n squares, is known to a relative sqrt(2/n)."""
    return 10 / math.log(10) * math.sqrt(2 / max(n, 1))


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


def grid_sqnr(local: np.ndarray, scale: float | None) -> float | None:
    """The SQNR rounding to a grid of step `scale` alone leaves on the signal `local` (uniform rounding's
    power, scale²/12 per value): what the tensor's quantization allows. None: no scale; +inf: no signal
    lost (a zero scale)."""
    import numpy as np  # in the function: results.py names this module's types on every import

    if not scale:
        return None
    signal = float(np.mean(np.asarray(local, np.float64) ** 2)) if np.size(local) else 0.0
    if not math.isfinite(signal):
        return None
    return 10 * math.log10(signal / (scale * scale / 12)) if signal else -math.inf


def judged(f: Figures | None) -> float | None:
    """The SQNR the rule judges a tensor by: its local SQNR (the error its node adds itself), unless the
    tensor is closer than that to the float model itself. A node can only be where the build leaves the
    float model if its tensor has left it: a device that computes a node more exactly than the QDQ
    model's rounded inputs allow (a reciprocal fused with what feeds it, a two-logit head at cosine
    1.000000) shows a large "own" error against the recomputation and none against the reference."""
    if f is None or f.local_sqnr_db is None or math.isnan(f.local_sqnr_db):
        return None
    if math.isnan(f.sqnr_db):
        return f.local_sqnr_db
    return max(f.local_sqnr_db, f.sqnr_db)


@dataclass(frozen=True)
class Verdict:
    """Where the rule fired: the index of the tensor (in the list judged), and the noise of the tensors
    before it: the percentile of their local SQNRs the rule compares with, and their lowest cosine; the
    tensor's allowance, and whether its own error is within the rule's borderline band of it."""

    index: int
    before_sqnr_db: float
    before_cosine: float
    allowance_db: float = math.nan
    borderline: bool = False


@dataclass(frozen=True)
class Judgement:
    """The first divergence (None: none); the tensors before it whose own error, recomputed over tensors
    not all measured (a block's, in a narrowed run), is below the floor: what to measure inside before the
    divergence can be called the first; the worst own error against its allowance (index, None: no tensor
    judged), and, with no divergence, the first tensor within the borderline band above its allowance."""

    divergence: Verdict | None
    suspects: tuple[int, ...] = ()
    worst: int | None = None
    near: int | None = None


def judge(measured_figures: list[Figures | None], r: Rule, resolved: list[bool] | None = None) -> Judgement:
    """The tensors of `measured_figures` (in graph order) judged by `r`. `resolved[i]`: the i-th tensor's
    own error was recomputed from measured tensors alone (every tensor of a graph tapped whole is); one that
    was not is no node's own error, so it neither joins the noise nor is named."""
    seen: list[float] = []
    suspects: list[int] = []
    lowest_cos = 1.0
    divergence, worst, worst_by, near = None, None, math.inf, None
    for i, f in enumerate(measured_figures):
        value = judged(f)
        if value is None or r.within(f):
            continue
        allowance = r.allowance(f)
        if resolved is not None and not resolved[i]:
            if divergence is None:
                suspects += [i] if value < r.narrow else []
                lowest_cos = min(lowest_cos, f.cosine)
            continue
        if value - allowance < worst_by:
            worst, worst_by = i, value - allowance
        if divergence is not None:
            continue
        noise = noise_before(seen, r.percentile)
        if value < allowance and value <= noise - r.margin_db:
            divergence = Verdict(i, noise, lowest_cos, allowance, r.borderline(f))
            continue
        if near is None and value < allowance + r.borderline_db:
            near = i
        seen.append(value)
        lowest_cos = min(lowest_cos, f.cosine)
    return Judgement(divergence, tuple(suspects), worst, None if divergence else near)


def first_divergence(measured_figures: list[Figures | None], r: Rule) -> Verdict | None:
    """The first of `measured_figures` (every one resolved: a graph tapped whole) that stands out by `r`."""
    return judge(measured_figures, r).divergence
