"""The terminal view of `q9diff layers` (`LayersResult`, as `q9diff.layers/1` saves it): the verdict first,
then the few tensors around the first divergence (or those whose nodes add the most error, when there is
none), what ran where, the compiles and where the tapped builds differ from the untapped one, the tensors
with no tap, the notes. Columns: SQNR against the reference, `own` the local SQNR (the error the node adds
itself, which the rule judges; "(n)" when its recomputation spanned n nodes, between block boundaries),
cosine and max |Δ| against the reference."""

from __future__ import annotations

import math

from q9diff.layers.figures import judged
from q9diff.present.terminal import console, text

AROUND = (3, 2)  # rows shown before and after the first divergence
DIFF_SAYS = "q9diff's diff, the untapped build as its candidate and the tapped one as its reference:"


def db(v: float) -> str:
    return "inf" if math.isinf(v) and v > 0 else ("-inf" if math.isinf(v) else f"{v:.1f}")


def cos(v: float) -> str:
    """A cosine with the digits that tell two near 1 apart."""
    return f"{v:.6f}" if v >= 0.999 else f"{v:.4f}"


def _over(f) -> str:
    return f" over {f.local_nodes} nodes" if f.local_nodes and f.local_nodes > 1 else ""


def _own(d) -> str:
    """A named tensor's own error as the headline says it: its local SQNR, and "borderline" when it lies
    within the rule's band of what its grid and element count allow."""
    f = d.figures
    return f"own SQNR {db(f.local_sqnr_db)} dB{_over(f)}" + (" (borderline)" if d.borderline else "")


def worst_of(res):
    """The worst own error of the graph that holds the first divergence (or of the first graph with one
    below its allowance), when the rule names it beside the first: far below it, another tensor."""
    fd = res.first_divergence
    for g in res.graphs:
        if fd is not None and g.first_divergence is not fd:
            continue
        w = g.worst
        if w is None or fd is None or w.tensor == fd.tensor:
            return None
        gap = fd.figures.local_sqnr_db - w.figures.local_sqnr_db
        return w if gap >= res.rule.worst_gap_db else None
    return None


def verdict_line(res) -> str:
    fd = res.first_divergence
    if fd is None:
        near = next((g.near for g in res.graphs if g.near is not None), None)
        if near is not None:
            f = near.figures
            allow = f"the {db(near.allowance_db)} dB its grid and {f.elements or '?'} values allow"
            # below the allowance, it stays undivergent only by the margin over the nodes before it
            where = (
                f"just above {allow}"
                if judged(f) >= near.allowance_db
                else f"below {allow}, but not {res.rule.margin_db:g} dB below the nodes before it"
            )
            return (
                f"no divergence, one borderline: {near.tensor} ({_made_by(near)}) adds an own error "
                f"of SQNR {db(f.local_sqnr_db)} dB{_over(f)}, {where}"
            )
        rows = [r for g in res.graphs for r in g.rows if r.resolved and judged(r.figures) is not None]
        if not rows:
            return "no divergence: no tensor was judged"
        r = min(rows, key=lambda x: judged(x.figures))
        lowest = min(x.figures.cosine for g in res.graphs for x in g.rows if x.figures is not None)
        return (
            f"no divergence: no node adds an error that stands out (the most: SQNR {db(judged(r.figures))} "
            f"dB at {r.tensor}); lowest cosine against the reference {cos(lowest)}"
        )
    f = fd.figures
    worst = worst_of(res)
    also = f"; worst: {worst.tensor} ({worst.op}), {_own(worst)}" if worst is not None else ""
    return (
        f"first divergence: {fd.tensor} ({_made_by(fd)}), {_own(fd)}, below the {db(fd.allowance_db)} dB "
        f"allowed, the nodes before it {db(fd.before_sqnr_db)} dB{also}; cosine {cos(f.cosine)} after "
        f"{cos(fd.before_cosine)} before"
    )


def _made_by(d) -> str:
    """What computes a named tensor, in the headline's parentheses: its node, or that it is a graph input."""
    return "graph input" if d.op == "input" else f"{d.op} {d.node}"


TERMS = "terms: SQNR, own, first divergence, tap (q9diff explain TERM)"


def next_line(res) -> str | None:
    """What to check on the node named: where a node's own error comes from."""
    fd = res.first_divergence
    if fd is None:
        return None
    if fd.op == "input":  # its own error is its quantization against the values fed
        return f"next: check graph input {fd.tensor}'s encoding (scale, zero point) against the values fed"
    return (
        f"next: check {fd.node}'s weight encoding (scale, zero point, bit width) if it reads a weight, the "
        f"activation range of {fd.tensor} against the values it holds, and the calibration data that set "
        "them"
    )


def graph_line(g) -> str:
    fd = g.first_divergence
    head = f"graph {g.graph} (part {g.part}): {len(g.rows)} of {g.tappable} tensors measured"
    if fd is None:
        return f"{head}, no divergence"
    return f"{head}, first divergence at {fd.tensor}"


def rows_shown(g) -> list:
    """The rows around the first divergence, or the graph's noisiest rows in graph order."""
    rows = list(g.rows)
    fd = g.first_divergence
    if fd is not None:
        i = next(i for i, r in enumerate(rows) if r.tensor == fd.tensor)
        return rows[max(0, i - AROUND[0]) : i + AROUND[1] + 1]
    scored = [r for r in rows if judged(r.figures) is not None]
    low = sorted(scored, key=lambda r: judged(r.figures))[: sum(AROUND) + 1]
    return [r for r in rows if r in low]


def _table(g):
    from rich.table import Table

    t = Table(title=None, box=None, pad_edge=False)
    for col, just in (
        ("", "left"),
        ("#", "right"),
        ("tensor", "left"),
        ("node (op)", "left"),
        ("SQNR", "right"),
        ("own", "right"),
        ("cosine", "right"),
        ("max|Δ|", "right"),
    ):
        t.add_column(col, justify=just, overflow="fold")
    fd = g.first_divergence
    for r in rows_shown(g):
        f = r.figures
        mark = text((">", "bold red")) if fd is not None and r.tensor == fd.tensor else text("")
        cells = (
            ("-", "-", "-", "-")
            if f is None
            else (
                db(f.sqnr_db),
                f.own(),
                cos(f.cosine),
                f"{f.max_abs:.3g}",
            )
        )
        t.add_row(mark, str(r.order), text(r.tensor), text(f"{r.node} ({r.op})"), *cells)
    return t


def compiles_line(g, verbose: bool = False) -> list[str]:
    """Each compile in a line; where a tapped build differs from the untapped one (q9diff's diff of the
    two), one line in all unless `verbose` (every line of the diff)."""
    lines = []
    for c in g.compiles:
        what = f"{c.side} {c.label}: {c.taps} taps, {c.size:,} B" + (", cached" if c.cached else "")
        vs = c.vs_untapped
        if vs is not None:
            what += (
                f"; vs untapped {vs['size'][0]:,} → {vs['size'][1]:,} B, ops {vs['ops'][0]} → {vs['ops'][1]}"
            )
            out = vs.get("outputs")
            if out is not None:
                what += f", graph outputs SQNR {db(out.sqnr_db)} dB against the untapped build's"
        lines.append(what)
        words = (vs or {}).get("words", [])
        if words and not verbose:
            taps = sum("only in the reference" in w for w in words)
            lines.append(
                f"  {DIFF_SAYS} {len(words)} lines ({taps} taps made outputs); -v or --json lists them"
            )
        elif words:
            lines.append(f"  {DIFF_SAYS}")
            lines.extend(f"    {w}" for w in words)
    return lines


def encodings_lines(g) -> list[str]:
    """The static look at the model's encodings and the CPU run beside the HTP build, in words."""
    lines = [f"encodings: {f.text}" for f in g.encodings[:6]]
    if len(g.encodings) > 6:
        lines.append(f"encodings: {len(g.encodings) - 6} more (--json lists them)")
    if g.cpu:
        c = g.cpu[0]
        why = c.why or "the model's encodings do not say why"
        more = f" ({len(g.cpu) - 1} more after it on the CPU; --json lists them)" if len(g.cpu) > 1 else ""
        lines.append(
            f"cpu: {c.tensor} diverges on ONNX Runtime's CPU EP (own SQNR {db(c.cpu_db)} dB) and not on the "
            f"HTP build ({db(c.htp_db)} dB){more}: {why}"
        )
    return lines


def print_layers(res, verbose: bool = False) -> None:
    fd = res.first_divergence
    console.print(text((verdict_line(res), "bold red" if fd is not None else "bold green")))
    nxt = next_line(res)
    if nxt:
        console.print(text(nxt))
    console.print(text(f"rule: {res.rule.sentence()} (measured on {res.rule.measured_on})"))
    for g in res.graphs:
        console.print(text((graph_line(g), "bold")))
        if g.rows:
            console.print(_table(g))
        for line in encodings_lines(g):
            console.print(text(f"  {line}"))
        for n in g.notes:
            console.print(text(f"  note: {n}"))
    console.print(text(f"candidate: {res.candidate} on the {res.runs['candidate']}"))
    console.print(text(f"reference: {res.reference} on {res.runs['reference']}"))
    total = len(res.compiles)
    cached = sum(c.cached for c in res.compiles)
    console.print(text(f"compiles: {total} ({cached} cached), {res.seconds:.0f} s"))
    for g in res.graphs:
        console.print(text(f"inputs of {g.graph}: {g.inputs['detail']}"))
        for line in compiles_line(g, verbose):
            console.print(text(f"  {line}"))
        if g.untapped:
            shown = ", ".join(f"{u.tensor} → {u.stand_in or 'none'}" for u in g.untapped[:6]) + (
                f", {len(g.untapped) - 6} more" if len(g.untapped) > 6 else ""
            )
            console.print(text(f"  no tap (fused away or not quantized; stand-in after →): {shown}"))
        if g.unmatched:
            console.print(
                text(f"  {len(g.unmatched)} candidate taps with no tensor of that name in the reference")
            )
    for n in res.notes:
        console.print(text(f"note: {n}"))
    console.print(text(TERMS))
