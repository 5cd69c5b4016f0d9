"""`q9diff layers CANDIDATE --reference REFERENCE`: per graph, tap, compile, run both sides, compare each
source tensor, and name the first that stands out (q9diff.layers.figures).

A graph with at most `max_taps` tensors both sides have is tapped whole, in one compile. A larger one (an LLM
part holds thousands) is tapped at its block boundaries, the branches that feed them and its graph outputs
first (q9diff.layers.graph.block_taps); then, while the first divergence's own error was recomputed over
tensors not yet measured (the nodes between it and the measured tensors it is computed from: where its
error can lie), those are tapped (at most `max_taps` at a time, evenly spread) and compiled again: a
handful of compiles, not one per layer. The untapped graph is compiled too, once, to show where each tapped
build differs from it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from q9diff.layers import encodings
from q9diff.layers import figures as fig
from q9diff.layers import graph as gr
from q9diff.layers.device import cpu_only
from q9diff.layers.feeds import Feeds
from q9diff.layers.local import Span, local_values
from q9diff.layers.result import Compile, Divergence, GraphLayers, LayersResult, Row, Untapped
from q9diff.layers.sides import Build, CpuSide, EmulatorSide, build_diff, emulator_words
from q9diff.layers.targets import Selected, candidate_graphs, feeds_for, reference_pairs
from q9diff.read.labels import listed

DEFAULT_MAX_TAPS = 128
MAX_STAGES = 12  # narrowing halves nothing: each stage taps what lies between two measured tensors
Progress = Callable[[str], None]

CANNOT_SHOW = (
    "The x86 emulator computes soc_model 0 and soc_model 77 builds alike: a fault only Hexagon hardware "
    "shows (a wrong target SoC) is not seen here; the diff (q9diff CANDIDATE REFERENCE) shows that."
)


def _sample(names: list[str], k: int) -> list[str]:
    """At most `k` of `names`, evenly spread, the last always among them."""
    if len(names) <= k:
        return list(names)
    step = (len(names) - 1) / (k - 1) if k > 1 else 0
    picked = sorted({round(i * step) for i in range(k)} | {len(names) - 1})
    return [names[i] for i in picked]


@dataclass
class _Graph:
    """One graph's run in progress."""

    sel: Selected
    cand: gr.ModelGraph
    ref: gr.ModelGraph
    ref_side: CpuSide | EmulatorSide
    feeds: Feeds
    order: dict[str, int]
    comparable: list[str]
    readers: dict[str, list[str]]  # the candidate's tensors -> the tensors of the nodes reading them
    ref_taps: set[str]  # the reference's tensors it can show


def _inside(blocks: list[list[str]], comparable: list[str], max_taps: int) -> list[str]:
    """The next compile's taps: the unmeasured tensors of the suspect blocks, whole blocks in graph order
    while they fit in `max_taps` (the first block always, evenly sampled when it alone does not)."""
    chosen: set[str] = set()
    for i, block in enumerate(blocks):
        if i and len(chosen | set(block)) > max_taps:
            break
        chosen |= set(block)
    names = [t for t in comparable if t in chosen]
    return _sample(names, max_taps) if len(names) > max_taps else names


def _first_plan(g: _Graph, max_taps: int) -> list[str]:
    if len(g.comparable) <= max_taps:
        return list(g.comparable)
    wanted = set(gr.block_taps(g.cand))
    return [n for n in g.comparable if n in wanted]


def _reference_values(g: _Graph, taps: list[str], stage: int, compiles: list[Compile]) -> dict:
    if isinstance(g.ref_side, CpuSide):  # on the CPU, the one node reading each tap comes free (_fused)
        readers = {_reader(g, t) for t in taps} - {None} - set(taps)
        return g.ref_side.run(taps + sorted(readers, key=g.order.__getitem__), g.feeds.values)
    b = g.ref_side.build(taps, f"stage {stage}")
    compiles.append(_compile("reference", b))
    return g.ref_side.run(b, g.feeds.values)


def _compile(side: str, b: Build, vs: dict | None = None) -> Compile:
    return Compile(side, b.label, b.taps, str(b.binary), b.size, b.cached, round(b.seconds, 2), vs)


def _outputs_figures(names: tuple[str, ...], got: dict, base: dict) -> fig.Figures | None:
    """The worst (lowest SQNR) of the graph outputs of a tapped build against the untapped build's."""
    worst = None
    for n in names:
        if n in got and n in base:
            f = fig.figures(got[n], base[n])
            if f is not None and (worst is None or f.sqnr_db < worst.sqnr_db):
                worst = f
    return worst


def _reader(g: _Graph, t: str) -> str | None:
    """The one node that reads tensor `t` in the candidate, by its output's name (None: none, or several),
    when the reference has it too."""
    readers = g.readers.get(t, [])
    return readers[0] if len(readers) == 1 and readers[0] in g.order and readers[0] in g.ref_taps else None


def _fused(
    g: _Graph, t: str, got: np.ndarray, own: fig.Figures | None, ref: dict, margin_db: float
) -> str | None:
    """The node reading tap `t` when the tap carries that node's output rather than its own: its values are
    at least `margin_db` closer to the float model's output of that one reader than to its own tensor (`own`:
    the tap against its own; a compiler that fuses a Conv with the Relu after it gives the Conv's tap the
    Relu's values: measured on OriNet with its Relu at 8 bits, cosine 0.1496 against the Conv, 0.9977
    against the Relu). None: it does not, or the reader's output is not known."""
    c = _reader(g, t)
    if own is None or c is None or c not in ref:
        return None
    theirs = fig.figures(got, ref[c])
    return c if theirs is not None and theirs.sqnr_db >= own.sqnr_db + margin_db else None


def _off_grid(value: np.ndarray, scale: float | None) -> bool:
    """True when a tap's values cannot be its DequantizeLinear's: not finite, or beyond what any grid of its
    step of at most 16 bits reaches."""
    v = np.asarray(value, np.float64)
    if not np.isfinite(v).all():
        return True
    return bool(scale) and float(np.abs(v).max(initial=0.0)) > scale * 2**16


def compare_graph(g: _Graph, max_taps: int, rule: fig.Rule, progress: Progress) -> GraphLayers:
    name = g.sel.source.name
    cand = EmulatorSide(g.sel.recipe, g.sel.source, g.cand)
    compiles: list[Compile] = []
    progress(f"{name}: compiling the untapped graph")
    untapped = cand.build([], "untapped")
    compiles.append(_compile("candidate", untapped))
    base = cand.run(untapped, g.feeds.values)
    scales = {s.name: s.scale for s in g.cand.sources}
    sources = g.cand.by_name()
    measured: dict[str, tuple[fig.Figures | None, int]] = {}
    values: dict[str, np.ndarray] = {}  # the candidate's value of every tensor measured so far
    refs: dict[str, np.ndarray] = {}  # the reference's graph inputs (an input's own error is against them)
    taps, stage, verdict, ordered, problem = _first_plan(g, max_taps), 0, None, [], ""
    judgement, resolved = fig.Judgement(None), []
    unreadable: set[str] = set()  # taps whose values no DequantizeLinear of theirs can give
    fused: dict[str, str] = {}  # taps that carry the output of the one node reading them -> that node's
    tappable = set(g.comparable)
    while taps and stage < MAX_STAGES:
        stage += 1
        progress(f"{name}: stage {stage}, compiling with {len(taps)} taps")
        b = cand.build(taps, f"stage {stage}")
        got = cand.run(b, g.feeds.values)
        vs = build_diff(untapped.binary, b.binary) | {"outputs": _outputs_figures(g.cand.outputs, got, base)}
        compiles.append(_compile("candidate", b, vs))
        ref = _reference_values(g, taps, stage, compiles)
        unreadable.update(t for t in taps if t in got and _off_grid(got[t], scales.get(t)))
        for t in taps:
            if t in unreadable:
                measured[t] = (None, stage)
            elif t in got and t in ref:
                f = fig.figures(got[t], ref[t], scales.get(t))
                reader = _fused(g, t, got[t], f, ref, rule.margin_db)
                if reader is not None:
                    fused[t] = reader
                    measured[t] = (None, stage)
                else:
                    measured[t] = (f, stage)
                    values[t] = got[t]
        ordered = sorted(measured, key=g.order.__getitem__)
        progress(f"{name}: stage {stage}, recomputing {len(ordered)} tensors from the candidate's inputs")
        local, problem = local_values(g.ref, ordered, values, g.feeds.values)
        refs.update({t: ref[t] for t in taps if t in ref and sources[t].op == "input"})
        inputs = {t: (refs[t], Span(0, ())) for t in ordered if sources[t].op == "input" and t in refs}
        local.update(inputs)  # a graph input's own error is its quantization against the value fed
        for t in ordered:
            f, at = measured[t]
            if f is not None and t in local:
                value, span = local[t]
                own = fig.local_sqnr(values[t], value, scales.get(t))
                grid = fig.grid_sqnr(value, scales.get(t))
                measured[t] = (replace(f, local_sqnr_db=own, local_nodes=span.nodes, grid_db=grid), at)
        unmeasured = {
            t: [x for x in local[t][1].tensors if x in tappable and x not in measured] for t in local
        }
        resolved = [not unmeasured.get(t) for t in ordered]
        judgement = fig.judge([measured[t][0] for t in ordered], rule, resolved)
        verdict = judgement.divergence
        taps = _inside([unmeasured[ordered[i]] for i in judgement.suspects], g.comparable, max_taps)
    notes = [f"the error each node adds itself was not recomputed: {problem}"] if problem else []
    if unreadable:
        shown = sorted(unreadable, key=g.order.__getitem__)
        notes.append(
            f"{len(shown)} tap(s) came back from the emulator with values outside their own encoding's range "
            f"(no DequantizeLinear can give them: a read-out fault of the tapped build, not the graph's "
            f"computation, which goes on right after them), not judged: {listed(shown, 4)}"
        )
    if fused:
        shown = sorted(fused, key=g.order.__getitem__)
        notes.append(
            f"{len(shown)} tap(s) came back holding the output of the one node that reads them, not their "
            "own (the build computes the two as one: the values in between never exist on the device), not "
            "judged: " + listed([f"{t} (holds {fused[t]})" for t in shown], 4)
        )
    if taps:
        blocks = len(judgement.suspects)
        notes.append(
            f"narrowing stopped at {MAX_STAGES} stages with {blocks} block(s) before "
            f"{'the divergence named' if verdict else 'the end'} whose error over several nodes is below the "
            "floor not yet measured inside: what lies there is not judged"
        )
    rows = tuple(
        Row(t, sources[t].node, sources[t].op, g.order[t], measured[t][1], measured[t][0], done)
        for t, done in zip(ordered, resolved)
    )
    figs = [measured[t][0] for t in ordered]

    def named(i: int | None, v: fig.Verdict | None = None) -> Divergence | None:
        if i is None:
            return None
        t, f = ordered[i], measured[ordered[i]][0]
        v = v or fig.Verdict(i, verdict.before_sqnr_db if verdict else math.inf, 1.0, rule.allowance(f))
        return Divergence(
            name, t, sources[t].node, sources[t].op, f, v.before_sqnr_db, v.before_cosine,
            ordered[i - 1] if i else None, v.allowance_db, rule.borderline(f),
        )  # fmt: skip

    divergence = named(verdict.index, verdict) if verdict is not None else None
    w = judgement.worst
    worst = named(w) if w is not None and fig.judged(figs[w]) < rule.allowance(figs[w]) else None
    near = named(judgement.near)
    found = encodings.findings(g.cand.path) if g.cand.quantized else []
    progress(f"{name}: the QDQ model on the CPU")
    cpu, why = cpu_only(g.cand, g.ref, {t: measured[t][0] for t in ordered}, g.feeds.values, rule, found)
    if why:
        notes.append(f"the QDQ model did not run on the CPU: {why}")
    return GraphLayers(
        name,
        g.sel.part.name,
        str(g.sel.model),
        str(g.ref.path),
        {"source": g.feeds.source, "detail": g.feeds.detail},
        rows,
        _untapped(g),
        tuple(s.name for s in g.cand.tapped() if s.name not in tappable),
        len(g.comparable),
        tuple(compiles),
        divergence,
        tuple(notes),
        worst,
        near,
        tuple(found),
        cpu,
    )


def _untapped(g: _Graph) -> tuple[Untapped, ...]:
    """Tensors of either graph with no tap the other side could compare, each with its stand-in."""
    have = set(g.comparable)
    out, listed = [], set()
    for side, model in (("reference", g.ref), ("candidate", g.cand)):
        stand = gr.stand_ins(model, have)
        for s in model.sources:
            if s.name in have or s.name in listed or s.op == "input":
                continue
            if side == "candidate" and s.tap is not None:
                continue
            out.append(Untapped(s.name, s.node, s.op, side, stand.get(s.name)))
            listed.add(s.name)
    return tuple(out)


def _outside(graph: gr.ModelGraph, domain: dict) -> str:
    """What of the graph's quantization lies outside what the rule was measured on ('' when none)."""
    said = []
    for kind in ("weights", "activations"):
        known = domain.get(kind)
        other = [t for t in getattr(graph, kind) if known is not None and t not in known]
        if other:
            said.append(f"{', '.join(other)} {kind} (measured: {', '.join(known)})")
    return "; ".join(said)


def layers(
    candidate: str | Path,
    reference: str | Path,
    *,
    inputs: Path | None = None,
    seed: int = 0,
    max_taps: int = DEFAULT_MAX_TAPS,
    progress: Progress | None = None,
    rule: fig.Rule | None = None,
) -> LayersResult:
    """The first tensor where `candidate` (a recipe, `RECIPE#PART[/GRAPH]`, or a QDQ .onnx) leaves
    `reference` (a float .onnx, a folder of them, or a recipe), per graph; `rule` replaces the measured one
    (scripts/measure_layers.py tries its own)."""
    started = time.monotonic()
    say = progress or (lambda line: None)
    if max_taps < 2:
        raise gr.LayersError(f"--max-taps {max_taps}: at least 2 (a block boundary and a graph output)")
    rule = rule or fig.rule()
    domain = fig.measured().get("domain", {})
    selected = candidate_graphs(str(candidate))
    pairs, ref_runner, notes = reference_pairs(str(reference), selected)
    given = feeds_for(selected, pairs, str(reference), inputs, seed)
    results = []
    for sel in selected:
        if sel.source.name not in pairs:
            continue
        side, ref_graph = pairs[sel.source.name]
        cand_graph = gr.read(sel.model)
        if not cand_graph.quantized:
            notes.append(f"{sel.model}: no QuantizeLinear/DequantizeLinear: a float graph, tapped as it is")
        outside = _outside(cand_graph, domain)
        if outside:
            notes.append(f"{sel.model}: {outside}: the rule's thresholds are not measured there")
        have = {s.name for s in ref_graph.tapped()}
        comparable = [s.name for s in cand_graph.tapped() if s.name in have]
        if not comparable:
            raise gr.LayersError(
                f"{ref_graph.path}: no tensor named as one of {sel.model}'s: not the float model of graph "
                f"{sel.source.name}"
            )
        order = {s.name: i for i, s in enumerate(cand_graph.sources)}
        g = _Graph(
            sel, cand_graph, ref_graph, side, given[sel.source.name], order, comparable,
            cand_graph.consumers(), have,
        )  # fmt: skip
        results.append(compare_graph(g, max_taps, rule, say))
    staged = [r for r in results if len(r.rows) < r.tappable]
    for r in staged:
        stages = max((c.label for c in r.compiles if c.label.startswith("stage")), default="stage 1")
        notes.append(
            f"{r.graph}: {len(r.rows)} of {r.tappable} tensors measured (block boundaries first, then inside "
            f"the first that diverges; {stages.split()[1]} stage(s), at most {max_taps} taps a compile)"
        )
    notes.append(
        "A tapped build is another compile (its taps are graph outputs): each stage's entry under compiles "
        "says where it differs from the untapped build."
    )
    notes.append(CANNOT_SHOW)
    runs = {
        "candidate": f"{emulator_words(selected[0].recipe)}, CPU fallback disabled "
        "(session.disable_cpu_ep_fallback)",
        "reference": ref_runner,
    }
    return LayersResult(
        str(candidate), str(reference), runs, rule, tuple(results), tuple(notes), time.monotonic() - started
    )
