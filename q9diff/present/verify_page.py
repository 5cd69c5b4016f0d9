"""verify's HTML report, from its result (`VerifyResult`, as `q9diff.verify/1` saves it): the verdict
(PASS or FAIL, then the sentences that say what it rests on and what it cannot show), where each side
ran, the tokens or the outputs compared, and the drift per step (or the cosine per output) as a chart.
On the report page of q9diff.present.html; every string escaped.
"""

from __future__ import annotations

from q9diff.present import charts, embed
from q9diff.present.html import esc, scroll_table, wrap_page


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# Each pair its colour, its dash and its marker, so a line hidden under another still shows.
_PAIRS = {
    ("candidate", "cpu"): ("#d62728", "solid", "circle"),
    ("reference", "cpu"): ("#1f77b4", "dash", "square-open"),
    ("candidate", "reference"): ("#2ca02c", "dot", "diamond-open"),
}


def _tolerances(res) -> dict[str, float]:
    """The cosine at which each comparison passes: the one given (--min-cosine) or the defaults."""
    from q9diff.verify.run import BINARY_TOLERANCE, CPU_TOLERANCE  # start-up: verify.run, numpy, construct

    given = getattr(res, "tolerance", None)
    if given is not None:
        return {"reference": given.min_cosine, "cpu": given.min_cosine}
    return {"reference": BINARY_TOLERANCE.min_cosine, "cpu": CPU_TOLERANCE.min_cosine}


def _drift_figure(res):
    """Per-step logit drift (teacher-forced, so every side saw the same tokens), with token divergence.
    The verdict is the tokens (verify/verdict.py), so no cosine tolerance is drawn: the line is the
    reference's own lowest cosine against the CPU, the drift a good build shows."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    llm = res.llm
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("max |Δ logit| per step", "cosine per step")
    )
    steps = [d.step for d in llm.steps]
    for (a, b), (color, dash, symbol) in _PAIRS.items():
        if b == "cpu":
            series = [d.vs_cpu.get(a) for d in llm.steps]
        else:
            series = [d.vs_reference for d in llm.steps]
        if not any(m is not None for m in series):
            continue
        name = f"{a} vs {b}"
        for row, values in (
            (1, [m.max_abs if m else None for m in series]),
            (2, [m.cosine if m else None for m in series]),
        ):
            line = go.Scatter(
                x=steps,
                y=values,
                name=name,
                mode="lines+markers",
                legendgroup=name,
                line={"color": color, "dash": dash, "width": 2},
                marker={"symbol": symbol, "size": 9},
            )
            fig.add_trace(line.update(showlegend=row == 1), row=row, col=1)
    # An LLM's verdict rests on the tokens, not on a cosine tolerance: the line drawn is how far the
    # reference itself drifts from the CPU, so a candidate point under it is read against the reference.
    from q9diff.verify.verdict import ALIKE, lowest_vs_cpu  # start-up: verify.verdict

    lowest = lowest_vs_cpu(llm)
    floor = lowest.get("reference")
    if floor is not None:
        mine = lowest.get("candidate")
        alike = (
            ""
            if mine is None
            else (" (candidate alike)" if abs(mine - floor) < ALIKE else f" (candidate {mine:.4f})")
        )
        fig.add_hline(
            y=floor,
            line_dash="longdash",
            line_color="#555",
            row=2,
            col=1,
            annotation_text=f"reference's lowest cosine vs cpu: {floor:.4f}{alike}; verdict: the tokens",
            annotation_position="bottom left",
        )
    at: dict[int, list[str]] = {}
    for pair, step in llm.first_divergence.items():
        if step is not None:
            at.setdefault(step, []).append(pair)
    for step, pairs in at.items():
        text = charts.text(", ".join(pairs)) + ": tokens diverge"
        fig.add_vline(x=step, line_dash="dash", annotation_text=text, row=1, col=1)
    fig.update_xaxes(tick0=0, dtick=1, tickformat="d")
    fig.update_xaxes(title_text="step (generated token)", row=2, col=1)
    fig.update_layout(title="Drift per step: the first token right, then garbage?", height=580)
    return fig


def _outputs_figure(res):
    import plotly.graph_objects as go

    outputs = res.outputs
    fig = go.Figure()
    for against in sorted({o.against for o in outputs}):
        rows = [o for o in outputs if o.against == against]
        labels = [charts.text(f"{charts.short_names([o.graph])[0]}:{o.output}") for o in rows]
        name = charts.text(f"candidate vs {against}")
        fig.add_trace(go.Bar(x=labels, y=[o.metrics.cosine for o in rows], name=name))
    drawn = [(a, c) for a, c in sorted(_tolerances(res).items()) if any(o.against == a for o in outputs)]
    for (against, cosine), where in zip(drawn, ("top left", "bottom right")):  # 0.99 and 0.999: apart
        fig.add_hline(
            y=cosine,
            line_dash="longdash",
            line_color="#555",
            annotation_text=charts.text(f"tolerance vs {against}: {cosine}"),
            annotation_position=where,
        )
    fig.update_layout(
        title="Cosine similarity per output",
        barmode="group",
        height=420,
        yaxis_range=[0, 1.01],
        yaxis_title="cosine (1 = same)",
    )
    return fig


def render_verify(res) -> str:
    """The verify report: verdict, sides and their notes, tokens, drift per step (or per output)."""
    from q9diff.verify.verdict import judge  # start-up: verify.verdict

    v = judge(res)
    status = "PASS" if v.passed else "FAIL"  # the heading: the word; the paragraphs under it: the sentences
    verdict = f"<p class='{'ok' if v.passed else 'warn'}'><b>{esc(v.headline)}</b></p>"
    verdict += "".join(f'<p class="warn">{esc(c)}</p>' for c in v.caveats)
    verdict += f"<p>Next: <code>{esc(v.next_command)}</code></p>" if v.next_command else ""
    sides = "".join(
        f"<li><b>{esc(s.label)}</b>: {esc(s.source)} ({esc(s.runner)})"
        + "".join(f"<br><i>{esc(n)}</i>" for n in s.notes)
        + "</li>"
        for s in res.sides
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in res.notes)
    body, fig = "", None
    if res.llm is not None:
        rows = "".join(
            f"<tr><td>{esc(k)}</td><td>{esc(' '.join(map(str, v)))}</td></tr>"
            for k, v in res.llm.tokens.items()
        )
        div = "".join(
            f"<li>{esc(k)}: "
            + ("same tokens at every step" if v is None else f"diverge at step {esc(str(v))}")
            for k, v in res.llm.first_divergence.items()
        )
        body = (
            f"<p>prompt {esc(str(list(res.llm.prompt)))}</p>"
            + scroll_table(f"<tr><th>side</th><th>tokens</th></tr>{rows}")
            + f"<ul>{div}</ul>"
        )
        fig = _drift_figure(res) if res.llm.steps else None
    elif res.outputs:
        rows = "".join(
            f"<tr><td>{esc(o.graph)}</td><td>{esc(o.output)}</td><td>{esc(o.against)}</td>"
            f"<td>{o.metrics.max_abs:.4g}</td><td>{o.metrics.rel:.4g}</td><td>{o.metrics.cosine:.6f}</td>"
            f"<td>{'yes' if o.passed else 'NO'}</td></tr>"
            for o in res.outputs
        )
        body = scroll_table(
            "<tr><th>graph</th><th>output</th><th>against</th><th>max abs Δ</th><th>rel</th>"
            f"<th>cosine</th><th>ok</th></tr>{rows}"
        )
        fig = _outputs_figure(res)
    chart = embed.Charts()([fig]) if fig is not None else ""
    cand = next((s.source for s in res.sides if s.label == "candidate"), "")
    ref = next((s.source for s in res.sides if s.label == "reference"), "")
    title = f"q9diff verify {_name(cand)}" + (f" vs {_name(ref)}" if ref else "") + f": {status}"
    page = f"""<h1>q9diff verify: {status}</h1>{verdict}
<ul>{sides}</ul>{f"<ul>{notes}</ul>" if notes else ""}
{body}
{chart}"""
    return wrap_page(title, page)
