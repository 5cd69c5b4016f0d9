"""The HTML report: one self-contained file (plotly.js inlined) over the same diff tree as the terminal."""

from __future__ import annotations

import html
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from q9diff.diff import DiffResult, observe, to_json


def _group(name: str) -> str:
    parts = name.split("/")
    return "/".join(parts[:2]) if parts[0].startswith(("PICKLE", "WEIGHTS")) else parts[0]


def _waterfall(data: dict) -> go.Figure:
    deltas: dict[str, int] = {}
    for r in data["regions"]:
        if r["delta"]:
            deltas[_group(r["name"])] = deltas.get(_group(r["name"]), 0) + r["delta"]
    names = ["candidate", *deltas, "reference"]
    a_size = data["a"]["size"]
    fig = go.Figure(
        go.Waterfall(
            x=names,
            y=[a_size, *deltas.values(), 0],
            measure=["absolute", *["relative"] * len(deltas), "total"],
        )
    )
    fig.update_layout(title="Size waterfall by region (candidate → reference)", height=380)
    return fig


def _treemap(summary: dict, title: str) -> go.Sunburst:
    ids, labels, parents, values = [], [], [], []
    groups: dict[str, int] = {}
    for r in summary["regions"]:
        groups[_group(r["name"])] = groups.get(_group(r["name"]), 0) + r["size"]
    for g, v in groups.items():
        ids.append(g), labels.append(g), parents.append(""), values.append(v)
    leaf_sizes: dict[str, int] = {}
    for r in summary["regions"]:
        leaf_sizes[r["name"]] = leaf_sizes.get(r["name"], 0) + r["size"]
    for name, v in leaf_sizes.items():
        if _group(name) != name:
            (
                ids.append(name),
                labels.append(name.split("/")[-1]),
                parents.append(_group(name)),
                values.append(v),
            )
    return go.Treemap(
        ids=ids, labels=labels, parents=parents, values=values, branchvalues="remainder", name=title
    )


def _maps(data: dict) -> go.Figure:
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        specs=[[{"type": "domain"}, {"type": "domain"}]],
        subplot_titles=("candidate", "reference"),
    )
    fig.add_trace(_treemap(data["a"], "candidate"), 1, 1)
    fig.add_trace(_treemap(data["b"], "reference"), 1, 2)
    fig.update_layout(title="Region maps (every byte)", height=480)
    return fig


def _changes_along(res: DiffResult, bins: int = 200) -> go.Figure:
    """Where bytes differ along the file, in equal-width bins of the shorter file."""
    n = min(res.a.size, res.b.size)
    step = max(1, -(-n // bins))
    counts = []
    for s in range(0, n, step):
        k = min(step, n - s)
        xa = np.frombuffer(res.a._buf, dtype=np.uint8, count=k, offset=s)
        xb = np.frombuffer(res.b._buf, dtype=np.uint8, count=k, offset=s)
        counts.append(int(np.count_nonzero(xa != xb)))
    fig = go.Figure(go.Bar(x=[s for s in range(0, n, step)], y=counts, name="changed bytes"))
    fig.update_layout(title=f"Where bytes changed (bins of {step} bytes)", xaxis_title="offset", height=320)
    return fig


def _settings_table(res: DiffResult) -> go.Figure:
    oa, ob = observe(res.a), observe(res.b)
    keys = [k for k in oa if k not in ("op_kinds", "other_options", "io_signature")]

    def short(v):
        s = str(v)
        return s if len(s) < 60 else s[:57] + "..."

    colors = ["#ffd6d6" if oa[k] != ob[k] else "white" for k in keys]
    fig = go.Figure(
        go.Table(
            header={"values": ["setting", "candidate", "reference"]},
            cells={
                "values": [keys, [short(oa[k]) for k in keys], [short(ob[k]) for k in keys]],
                "fill_color": [colors] * 3,
            },
        )
    )
    fig.update_layout(title="Settings (differences highlighted)", height=80 + 28 * len(keys))
    return fig


def _ops_figure(res: DiffResult) -> go.Figure:
    from collections import Counter

    fig = go.Figure()
    for label, cb in (("candidate", res.a), ("reference", res.b)):
        c = Counter(op.kind for i in range(len(cb.graphs)) for op in cb.ops(i))
        kinds = sorted(c)
        fig.add_trace(go.Bar(x=kinds, y=[c[k] for k in kinds], name=label))
    fig.update_layout(title="Op-list diff: ops per kind, all graphs", barmode="group", height=420)
    return fig


def render(res: DiffResult) -> str:
    data = to_json(res)
    figs = [_waterfall(data), _maps(data), _changes_along(res), _settings_table(res), _ops_figure(res)]
    charts = [pio.to_html(f, full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(figs)]
    causes = "".join(
        f"<tr><td>{html.escape(c['name'])}</td><td>{c['role']}</td><td>{html.escape(str(c['a']))[:80]}</td>"
        f"<td>{html.escape(str(c['b']))[:80]}</td><td>{html.escape('; '.join(c['evidence']))[:200]}</td></tr>"
        for c in data["causes"]
    )
    fixes = "".join(
        f"<li><b>{html.escape(s['setting'])} = {html.escape(str(s['value']))}</b>: "
        f"<code>{html.escape(s['targets']['qairt'])}</code>, "
        f"<code>{html.escape(json.dumps(s['targets']['htp_backend_ext_config']))}</code></li>"
        for s in data["suggestions"]
    )
    roots = [c for c in data["causes"] if c["role"] == "root"]
    verdict = ", ".join(f"{c['name']} {c['a']} → {c['b']}" for c in roots) or (
        "identical" if data["identical"] else "no setting differs"
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>q9diff report</title>
<style>body{{font-family:sans-serif;margin:1.5em}}
table.c td,table.c th{{border:1px solid #ccc;padding:3px}}</style>
</head><body>
<h1>q9diff: {html.escape(res.a.path)} vs {html.escape(res.b.path)}</h1>
<h2>Root cause: {html.escape(verdict)}</h2>
<p>size {data["a"]["size"]} → {data["b"]["size"]} bytes ({data["size_delta"]:+d})</p>
<table class="c"><tr><th>cause</th><th>role</th><th>candidate</th><th>reference</th><th>evidence</th></tr>
{causes}</table>
<h3>Fix</h3><ul>{fixes or "<li>nothing to change</li>"}</ul>
{"".join(charts)}
</body></html>
"""


# ---- q9diff verify ----

_PAIRS = {
    ("candidate", "cpu"): "#d62728",
    ("reference", "cpu"): "#1f77b4",
    ("candidate", "reference"): "#2ca02c",
}


def _drift_figure(llm) -> go.Figure:
    """Per-step logit drift (teacher-forced, so every side saw the same tokens), with token divergence."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("max |Δ logit| per step", "cosine per step")
    )
    steps = [d.step for d in llm.steps]
    for (a, b), color in _PAIRS.items():
        if b == "cpu":
            series = [d.vs_cpu.get(a) for d in llm.steps]
        else:
            series = [d.vs_reference for d in llm.steps]
        if not any(m is not None for m in series):
            continue
        name = f"{a} vs {b}"
        for row, values in ((1, [m.max_abs if m else None for m in series]),
                            (2, [m.cosine if m else None for m in series])):  # fmt: skip
            style = {"color": color, "dash": "dot" if a == "reference" else "solid"}
            line = go.Scatter(
                x=steps, y=values, name=name, mode="lines+markers", legendgroup=name, line=style
            )
            fig.add_trace(line.update(showlegend=row == 1), row=row, col=1)
    at: dict[int, list[str]] = {}
    for pair, step in llm.first_divergence.items():
        if step is not None:
            at.setdefault(step, []).append(pair)
    for step, pairs in at.items():
        text = ", ".join(pairs) + ": tokens diverge"
        fig.add_vline(x=step, line_dash="dash", annotation_text=text, row=1, col=1)
    fig.update_xaxes(title_text="step (generated token)", row=2, col=1)
    fig.update_layout(title="Drift per step: the first token right, then garbage?", height=560)
    return fig


def _outputs_figure(outputs) -> go.Figure:
    fig = go.Figure()
    for against in sorted({o.against for o in outputs}):
        rows = [o for o in outputs if o.against == against]
        labels = [f"{o.graph[-24:]}:{o.output}" for o in rows]
        fig.add_trace(go.Bar(x=labels, y=[o.metrics.cosine for o in rows], name=f"candidate vs {against}"))
    fig.update_layout(
        title="Cosine similarity per output", barmode="group", height=420, yaxis_range=[0, 1.01]
    )
    return fig


def render_verify(res) -> str:
    """The verify report: verdict, sides and their notes, tokens, drift per step (or per output)."""
    verdict = "PASS" if res.passed else "FAIL"
    sides = "".join(
        f"<li><b>{html.escape(s.label)}</b>: {html.escape(s.source)} ({html.escape(s.runner)})"
        + "".join(f"<br><i>{html.escape(n)}</i>" for n in s.notes)
        + "</li>"
        for s in res.sides
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in res.notes)
    body, fig = "", None
    if res.llm is not None:
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{' '.join(map(str, v))}</td></tr>"
            for k, v in res.llm.tokens.items()
        )
        div = "".join(
            f"<li>{html.escape(k)}: " + ("same tokens at every step" if v is None else f"diverge at step {v}")
            for k, v in res.llm.first_divergence.items()
        )
        body = (
            f"<p>prompt {list(res.llm.prompt)}</p><table class='c'><tr><th>side</th><th>tokens</th></tr>"
            f"{rows}</table><ul>{div}</ul>"
        )
        fig = _drift_figure(res.llm) if res.llm.steps else None
    elif res.outputs:
        rows = "".join(
            f"<tr><td>{html.escape(o.graph)}</td><td>{html.escape(o.output)}</td><td>{o.against}</td>"
            f"<td>{o.metrics.max_abs:.4g}</td><td>{o.metrics.rel:.4g}</td><td>{o.metrics.cosine:.6f}</td>"
            f"<td>{'yes' if o.passed else 'NO'}</td></tr>"
            for o in res.outputs
        )
        body = (
            "<table class='c'><tr><th>graph</th><th>output</th><th>against</th><th>max|Δ|</th><th>rel</th>"
            f"<th>cosine</th><th>ok</th></tr>{rows}</table>"
        )
        fig = _outputs_figure(res.outputs)
    chart = pio.to_html(fig, full_html=False, include_plotlyjs=True) if fig is not None else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>q9diff verify</title>
<style>body{{font-family:sans-serif;margin:1.5em}}
table.c td,table.c th{{border:1px solid #ccc;padding:3px}}</style>
</head><body>
<h1>q9diff verify: {verdict}</h1>
<ul>{sides}</ul>{f"<ul>{notes}</ul>" if notes else ""}
{body}
{chart}
</body></html>
"""
