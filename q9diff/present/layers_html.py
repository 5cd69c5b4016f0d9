"""The HTML report of `q9diff layers`, drawn from `q9diff.layers/1` alone: the verdict, then per graph the
error of every tensor measured along the graph (plotly): its SQNR against the reference and the local SQNR
of what its node adds itself, with the rule's threshold under it and the first divergence marked; the table
of every tensor below it, the compiles and where each tapped build differs from the untapped one, the
tensors with no tap, the notes."""

from __future__ import annotations

import math

from q9diff.layers.figures import judged, noise_before
from q9diff.present import charts, embed
from q9diff.present.html import esc, scroll_table, wrap_page
from q9diff.present.terminal_layers import (
    DIFF_SAYS,
    cos,
    db,
    encodings_lines,
    graph_line,
    next_line,
    verdict_line,
    worst_of,
)


def _title(res) -> str:
    """The h1: the answer in a few words (the verdict's sentence follows it)."""
    fd = res.first_divergence
    if fd is None:
        return "no divergence"
    w = worst_of(res)
    return f"first divergence at {fd.tensor}" + (f", worst at {w.tensor}" if w is not None else "")


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def threshold_series(rows, rule) -> list[float | None]:
    """Per row, the own error (local SQNR) under which it counts as a divergence: its allowance (the floor,
    lowered where its grid or element count allow less), or the noise of the tensors before it less the
    margin when that is lower. It applies to the own-error series alone."""
    seen, out = [], []
    for r in rows:
        if r.figures is None or judged(r.figures) is None or not r.resolved:
            out.append(None)
            continue
        out.append(min(rule.allowance(r.figures), noise_before(seen, rule.percentile) - rule.margin_db))
        seen.append(judged(r.figures))
    return [None if v is None else _finite(v) for v in out]


def _hover(r) -> list[str]:
    """A row's hover text, one line each (every line escaped apart, joined by plotly's <br>)."""
    f = r.figures
    if f is None:
        return [r.tensor, f"{r.node} ({r.op})", "not comparable", f"stage {r.stage}"]
    own = f.own()
    return [
        r.tensor,
        f"{r.node} ({r.op})",
        f"SQNR {db(f.sqnr_db)} dB, own {own} dB",
        f"cosine {cos(f.cosine)}, max|Δ| {f.max_abs:.3g}",
        f"stage {r.stage}",
    ]


def figure(g, rule) -> dict:
    rows = [r for r in g.rows]
    xs = [r.order for r in rows]
    sqnr = [None if r.figures is None else _finite(r.figures.sqnr_db) for r in rows]
    own = [
        None if r.figures is None or r.figures.local_sqnr_db is None else _finite(r.figures.local_sqnr_db)
        for r in rows
    ]
    hover = ["<br>".join(charts.text(line) for line in _hover(r)) for r in rows]
    traces = [
        {
            "type": "scatter",
            "x": xs,
            "y": sqnr,
            "mode": "lines",
            "name": "against the reference (not judged: it carries every error before the tensor)",
            "text": hover,
            "hoverinfo": "text",
            "line": {"color": "#9ecae1", "width": 1, "dash": "dot"},
        },
        {
            "type": "scatter",
            "x": xs,
            "y": own,
            "mode": "lines+markers",
            "name": "the error the node adds itself (judged)",
            "text": hover,
            "hoverinfo": "text",
            "line": {"color": "#ff7f0e", "width": 2},
            "marker": {"color": "#ff7f0e", "size": 7, "symbol": "diamond"},
            "connectgaps": True,
        },
        {
            "type": "scatter",
            "x": xs,
            "y": threshold_series(rows, rule),
            "mode": "lines",
            "name": "the rule: the node's own error diverges below this",
            "line": {"color": "#d62728", "dash": "dash", "shape": "hv", "width": 1},
            "hoverinfo": "skip",
            "connectgaps": True,
        },
    ]
    fd = g.first_divergence
    annotations = []
    if fd is not None:
        r = next(r for r in rows if r.tensor == fd.tensor)
        y = _finite(fd.figures.local_sqnr_db if fd.figures.local_sqnr_db is not None else fd.figures.sqnr_db)
        traces.append(
            {
                "type": "scatter",
                "x": [r.order],
                "y": [y],
                "mode": "markers",
                "name": "first divergence",
                "marker": {"color": "#d62728", "size": 16, "symbol": "star"},
                "hoverinfo": "skip",
            }
        )
        annotations.append(
            {
                "x": r.order,
                "y": y,
                "text": charts.text(f"first divergence: {fd.tensor}"),
                "showarrow": True,
                "arrowhead": 2,
                "ax": 40,
                "ay": -40,
            }
        )
    layout = {
        "title": {
            "text": charts.text(
                f"Error per tensor along {g.graph}: SQNR against the reference, and of "
                "what each node adds itself (higher is closer)"
            ),
            "font": {"size": 15},
        },
        "height": 420,
        "xaxis": {"title": {"text": "tensor, in the candidate's graph order"}},
        "yaxis": {"title": {"text": "SQNR (dB)"}},
        "annotations": annotations,
        "legend": {"orientation": "h", "y": -0.2},
    }
    return charts.figure(traces, layout)


def _rows_table(g) -> str:
    fd = g.first_divergence
    body = []
    for r in g.rows:
        f = r.figures
        own = "-" if f is None else f.own()
        cells = (
            "<td>-</td>" * 6
            if f is None
            else (
                f"<td class=n>{db(f.sqnr_db)}</td><td class=n>{own}</td><td class=n>{cos(f.cosine)}</td>"
                f"<td class=n>{f.max_abs:.4g}</td><td class=n>{f.rel:.4g}</td>"
                f"<td class=n>{'' if f.steps is None else f'{f.steps:.0f}'}</td>"
            )
        )
        style = (
            ' style="background:#fdd;font-weight:bold"' if fd is not None and r.tensor == fd.tensor else ""
        )
        body.append(
            f"<tr{style}><td class=n>{r.order}</td><td>{esc(r.tensor)}</td><td>{esc(r.node)}</td>"
            f"<td>{esc(r.op)}</td>{cells}<td class=n>{r.stage}</td></tr>"
        )
    head = (
        "<tr><th>#</th><th>tensor</th><th>node</th><th>op</th><th>SQNR dB</th><th>own dB (nodes)</th>"
        "<th>cosine</th><th>max|Δ|</th><th>rel</th><th>steps</th><th>stage</th></tr>"
    )
    return scroll_table(head + "".join(body))


def _compiles(g) -> str:
    rows = []
    for c in g.compiles:
        vs = c.vs_untapped
        diff = ""
        if vs is not None:
            out = vs.get("outputs")
            diff = (
                f"{vs['size'][0]:,} → {vs['size'][1]:,} B, ops {vs['ops'][0]} → {vs['ops'][1]}"
                + (f"; graph outputs SQNR {db(out.sqnr_db)} dB vs untapped" if out is not None else "")
                + (f"<br><small>{esc(DIFF_SAYS)}</small>" if vs.get("words") else "")
                + "".join(f"<br><small>{esc(w)}</small>" for w in vs.get("words", []))
            )
        rows.append(
            f"<tr><td>{esc(c.side)}</td><td>{esc(c.label)}</td><td class=n>{c.taps}</td>"
            f"<td class=n>{c.size:,}</td><td>{'yes' if c.cached else 'no'}</td>"
            f"<td class=n>{c.seconds:.1f}</td><td class=ev>{diff}</td></tr>"
        )
    head = (
        "<tr><th>side</th><th>build</th><th>taps</th><th>bytes</th><th>cached</th><th>s</th>"
        "<th>against the untapped build (q9diff's diff)</th></tr>"
    )
    return scroll_table(head + "".join(rows))


def render_layers(res) -> str:
    fd = res.first_divergence
    draw = embed.Charts()
    body = [
        f"<h1>q9diff layers: {esc(_title(res))}</h1>",
        f"<p class=verdict><b>{esc(verdict_line(res))}</b></p>",
        *(f"<p>{esc(line)}</p>" for line in [next_line(res)] if line),
        f"<p>Rule: {esc(res.rule.sentence())} (measured on {esc(res.rule.measured_on)}).</p>",
        f"<ul><li><b>candidate</b>: {esc(res.candidate)} on the {esc(res.runs['candidate'])}</li>"
        f"<li><b>reference</b>: {esc(res.reference)} on {esc(res.runs['reference'])}</li>"
        f"<li>{len(res.compiles)} compiles ({sum(c.cached for c in res.compiles)} cached), "
        f"{res.seconds:.0f} s</li></ul>",
    ]
    for g in res.graphs:
        body.append(f"<h2>{esc(graph_line(g))}</h2><p>inputs: {esc(g.inputs['detail'])}</p>")
        if g.rows:
            body.append(draw([figure(g, res.rule)]))
            body.append(_rows_table(g))
        found = encodings_lines(g)
        if found:
            body.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in found) + "</ul>")
        body.append("<h3>Compiles</h3>" + _compiles(g))
        if g.untapped:
            items = "".join(
                f"<li>{esc(u.tensor)} ({esc(u.op)} {esc(u.node)}, {esc(u.side)}): stand-in "
                f"{esc(u.stand_in or 'none')}</li>"
                for u in g.untapped
            )
            body.append(f"<h3>Tensors with no tap</h3><ul>{items}</ul>")
        if g.unmatched:
            body.append(
                f"<p>{len(g.unmatched)} candidate taps have no tensor of that name in the reference: "
                f"{esc(', '.join(g.unmatched[:20]))}</p>"
            )
    body.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in res.notes) + "</ul>")
    status = "divergence" if fd is not None else "no divergence"
    name = res.candidate.rsplit("/", 1)[-1]
    return wrap_page(f"q9diff layers {name}: {status}", "\n".join(body))
