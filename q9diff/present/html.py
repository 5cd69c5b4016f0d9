"""The HTML report: one self-contained file (plotly.js inlined) over the same diff tree as the terminal.

The verdict comes first, in the terminal's words (`q9diff.present.verdict`); sizes are shown in human
units with the exact byte count on hover; regions are named after their graph where the file names it.
"""

from __future__ import annotations

import html
import json
import re

from q9diff.compare.models import NOT_MEANINGFUL
from q9diff.errors import printable
from q9diff.present.verdict import models_line, reference_looks_wrong, root_line, sides, soc_note, warnings

STYLE = """<style>body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table.c{border-collapse:collapse}table.c td,table.c th{border:1px solid #ccc;padding:3px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}
p.warn{color:#b00;font-weight:bold;font-size:1.15em}p.swap{color:#a60;font-weight:bold}
span[title]{border-bottom:1px dotted #888}</style>"""


def human(n: int) -> str:
    """4194304 -> '4 MiB', 28672 -> '28 KiB'; signed deltas keep their sign."""
    sign, v = ("-" if n < 0 else ""), abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            text = f"{v:d}" if unit == "B" else f"{v:.1f}".removesuffix(".0")
            return f"{sign}{text} {unit}"
        v /= 1024
    return f"{n} B"


def _size(n: int, signed: bool = False) -> str:
    """A size for people, the exact bytes on hover."""
    text = ("+" if signed and n > 0 else "") + human(n)
    return (
        f'<span title="{n:+,d} bytes">{text}</span>'
        if signed
        else f'<span title="{n:,d} bytes">{text}</span>'
    )


def _e(v) -> str:
    """A value for the page: its control characters escaped as in the terminal (q9diff.errors), then HTML."""
    return html.escape(printable(v))


_PICKLE = re.compile(r"^PICKLE\[(\d+)\]")


def _graph_names(summary: dict) -> list[str]:
    return [g["name"] for g in summary.get("graphs", [])]


def _short(name: str, n: int = 28) -> str:
    return name if len(name) <= n else "…" + name[-(n - 1) :]


def _label(region: str, graphs: list[str]) -> str:
    """`PICKLE[0]/inner/const_pool` -> `graph <name>/inner/const_pool` where graph 0's name is known."""
    m = _PICKLE.match(region)
    if m and int(m.group(1)) < len(graphs) and graphs[int(m.group(1))]:
        return f"graph {_short(graphs[int(m.group(1))], 20)}" + region[m.end() :]
    return region


def _group(name: str) -> str:
    parts = name.split("/")
    return "/".join(parts[:2]) if parts[0].startswith(("PICKLE", "WEIGHTS")) else parts[0]


def _waterfall(data: dict, title: str = "Size change by region, candidate → reference"):
    """Only the deltas, from zero: a +28 KB change on 1 MB is as tall as it is, not a sliver on a tower."""
    import plotly.graph_objects as go

    graphs = _graph_names(data["a"])
    deltas: dict[str, int] = {}
    for r in data["regions"]:
        if r["delta"]:
            key = _group(r["name"])
            deltas[key] = deltas.get(key, 0) + r["delta"]
    names = [_label(k, graphs) for k in deltas] + ["net change"]
    values = [*deltas.values(), data["size_delta"]]
    fig = go.Figure(
        go.Waterfall(
            x=names,
            y=[*deltas.values(), 0],
            measure=[*["relative"] * len(deltas), "total"],
            text=[("+" if v > 0 else "") + human(v) for v in values],
            customdata=[f"{v:+,d} bytes" for v in values],
            hovertext=list(deltas) + ["net change"],
            hovertemplate="%{x}<br>%{customdata}<br>%{hovertext}<extra></extra>",
            textposition="outside",
        )
    )
    a, b = data["a"]["size"], data["b"]["size"]
    fig.update_layout(
        title=f"{title}: {human(a)} → {human(b)} ({'+' if b >= a else ''}{human(b - a)})",
        yaxis_title="bytes changed",
        height=380,
    )
    return fig


def _treemap(summary: dict, title: str):
    import plotly.graph_objects as go

    graphs = _graph_names(summary)
    ids, labels, parents, values = [], [], [], []
    groups: dict[str, int] = {}
    for r in summary["regions"]:
        groups[_group(r["name"])] = groups.get(_group(r["name"]), 0) + r["size"]
    for g, v in groups.items():
        ids.append(g), labels.append(_label(g, graphs)), parents.append(""), values.append(v)
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
        ids=ids,
        labels=labels,
        parents=parents,
        values=values,
        branchvalues="remainder",
        name=title,
        customdata=[f"{human(v)} ({v:,d} bytes)" for v in values],
        hovertemplate="%{label}<br>%{customdata}<extra></extra>",
    )


def _maps(data: dict):
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


def changes_along(res, bins: int = 200):
    """Where bytes differ along the file, in equal-width bins of the shorter file."""
    import numpy as np
    import plotly.graph_objects as go

    n = min(res.a.size, res.b.size)
    step = max(1, -(-n // bins))
    counts = []
    for s in range(0, n, step):
        k = min(step, n - s)
        xa = np.frombuffer(res.a._buf, dtype=np.uint8, count=k, offset=s)
        xb = np.frombuffer(res.b._buf, dtype=np.uint8, count=k, offset=s)
        counts.append(int(np.count_nonzero(xa != xb)))
    fig = go.Figure(go.Bar(x=[s for s in range(0, n, step)], y=counts, name="changed bytes"))
    fig.update_layout(title=f"Where bytes changed (bins of {human(step)})", xaxis_title="offset", height=320)
    return fig


def _settings_table(res):
    import plotly.graph_objects as go

    from q9diff.compare.diff import observe

    oa, ob = observe(res.a), observe(res.b)
    keys = [k for k in oa if k not in ("op_kinds", "other_options", "io_signature")]

    def short(v):
        s = str(v)
        return s if len(s) < 60 else s[:59] + "…"

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


def _ops_figure(res):
    from collections import Counter

    import plotly.graph_objects as go

    fig = go.Figure()
    for label, cb in (("candidate", res.a), ("reference", res.b)):
        c = Counter(op.kind for i in range(len(cb.graphs)) for op in cb.ops(i))
        kinds = sorted(c)
        fig.add_trace(go.Bar(x=kinds, y=[c[k] for k in kinds], name=label))
    fig.update_layout(title="Op-list diff: ops per kind, all graphs", barmode="group", height=420)
    return fig


def _verdict(data: dict) -> str:
    """The terminal's first lines: the warning sentence, then the root cause. `data`: a diff's JSON
    (two files, a set, or one part of a set)."""
    causes, identical = data["causes"], data["identical"]
    out = "".join(f'<p class="warn">{_e(w)}</p>' for w in warnings(causes))
    swapped = reference_looks_wrong(causes, *sides(data))
    if swapped:
        out += f'<p class="swap">Arguments swapped? {_e(swapped)}; the known-good build comes second.</p>'
    if identical:
        return out + "<h2>Identical: no difference in any byte.</h2>"
    line, note = root_line(causes), soc_note(causes)
    lead = models_line(data.get("different_models", {}).get("evidence"))
    text = (
        f"{'Settings that differ' if lead else 'Root cause'}: {line}" + (f" ({note})" if note else "")
        if line
        else "No setting differs" + ("." if lead else "; only effects or data.")
    )
    return out + (f'<p class="swap">{_e(lead)}</p>' if lead else "") + f"<h2>{_e(text)}</h2>"


SIZE_CAUSES = {"vtcm_size", "spill_fill", "const_size"}


def _cause_value(c: dict, side: str) -> str:
    if c["name"] == "compiler_options":  # a and b are both the count of options that differ
        return f"{c['a']} options differ" if side == "a" else ""
    if c["name"] in SIZE_CAUSES and isinstance(c[side], int):
        return _size(c[side])
    if c["name"] in SIZE_CAUSES and isinstance(c[side], list) and all(isinstance(v, int) for v in c[side]):
        return ", ".join(_size(v) for v in c[side])
    v = str(c[side])
    return _e(v if len(v) <= 80 else v[:79] + "…")


def _causes_table(causes: list[dict]) -> str:
    rows = "".join(
        f"<tr><td>{_e(c['name'])}</td><td>{_e(c['role'])}</td><td>{_cause_value(c, 'a')}</td>"
        f"<td>{_cause_value(c, 'b')}</td>"
        f"<td class='n'>{'' if c.get('bytes') is None else _size(c['bytes'])}</td>"
        f"<td>{_e('; '.join(c['evidence']))}</td></tr>"
        for c in causes
    )
    return (
        "<table class='c'><tr><th>cause</th><th>role</th><th>candidate</th><th>reference</th><th>bytes</th>"
        f"<th>evidence</th></tr>{rows}</table>"
    )


def _attribution(data: dict) -> str:
    """Every changed byte and byte of size delta in one row (q9diff.compare.attribution); the rows add up."""
    rows = data.get("attribution") or []
    if not rows or "different_models" in data:
        return f"<p><b>byte attribution: {NOT_MEANINGFUL}</b></p>" if rows else ""
    from q9diff.compare.attribution import estimate_note

    body = "".join(
        f"<tr><td>{_e(r['bucket'])}</td><td class='n'>{'~' if r.get('estimated') else ''}"
        f"{_size(r['changed_bytes'])}</td><td class='n'>{_size(r['size_delta'], signed=True)}</td></tr>"
        for r in rows
    )
    note = estimate_note(data.get("regions") or [])
    body += f"<tr><td colspan='3'>{_e(note)}</td></tr>" if note else ""
    changed = sum(r["changed_bytes"] for r in rows)
    delta = sum(r["size_delta"] for r in rows)
    verdict = f"<p><b>{_e(data['weights_verdict'])}</b></p>" if data.get("weights_verdict") else ""
    return (
        f"{verdict}<h3>Where the changed bytes went (rows add up)</h3><table class='c'><tr><th>effect</th>"
        f"<th>changed bytes</th><th>size delta</th></tr>{body}<tr><th>total</th>"
        f"<th class='n'>{_size(changed)}</th><th class='n'>{_size(delta, signed=True)}</th></tr></table>"
    )


def _fixes(suggestions: list[dict]) -> str:
    items = "".join(
        f"<li><b>{_e(s['setting'])} = {_e(s['value'])}</b>: "
        f"<code>{_e(s['targets']['qairt'])}</code>, "
        f"<code>{_e(json.dumps(s['targets']['htp_backend_ext_config']))}</code></li>"
        for s in suggestions
    )
    return f"<h3>Fix</h3><ul>{items or '<li>nothing to change</li>'}</ul>"


def _page(title: str, body: str) -> str:
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{_e(title)}</title>
{STYLE}
</head><body>
{body}
</body></html>
"""


def _charts(figs, first: bool) -> str:
    import plotly.io as pio

    return "".join(
        pio.to_html(f, full_html=False, include_plotlyjs=first and i == 0) for i, f in enumerate(figs)
    )


def render(res) -> str:
    """The report for two files."""
    from q9diff.compare.diff import to_json

    data = to_json(res)
    figs = [_waterfall(data), _maps(data), changes_along(res), _settings_table(res), _ops_figure(res)]
    body = (
        _verdict(data)
        + f"<p>q9diff: candidate {_e(res.a.path)} vs reference {_e(res.b.path)}</p>"
        + f"<p>size {_size(data['a']['size'])} → {_size(data['b']['size'])}"
        + f" ({_size(data['size_delta'], signed=True)})</p>"
        + _causes_table(data["causes"])
        + _attribution(data)
        + _fixes(data["suggestions"])
        + _charts(figs, first=True)
    )
    return _page("q9diff report", body)


def render_set(sd, data: dict, along: dict | None = None) -> str:
    """The report for two sets of parts: the verdict over the set, the set's totals part by part,
    then each part's verdict, causes, fix and size change. The parts' files are no longer mapped
    (`diff_sets` releases them), so where bytes changed comes drawn already: `along[part path]`."""
    along = along or {}

    def row(cells, tag="td") -> str:
        return "<tr>" + "".join(f"<{tag}{' class=n' if n else ''}>{c}</{tag}>" for c, n in cells) + "</tr>"

    def size(p) -> str:
        return _size(p.stat().st_size)

    rows = []
    for (pa, pb, r), part in zip(sd.pairs, data["parts"]):
        causes = root_line(part["causes"]) or ("identical" if part["identical"] else "data only")
        rows.append(row([(_e(pa.name), 0), (_e(pb.name), 0), (_size(r.a.size), 1), (_size(r.b.size), 1),
                         (_size(r.b.size - r.a.size, signed=True), 1), (_e(causes), 0)]))  # fmt: skip
    for p in sd.unpaired_a:
        rows.append(row([(_e(p.name), 0), ("(none)", 0), (size(p), 1), ("", 1), ("", 1), ("unpaired", 0)]))
    for p in sd.unpaired_b:
        rows.append(row([("(none)", 0), (_e(p.name), 0), ("", 1), (size(p), 1), ("", 1), ("unpaired", 0)]))
    delta = _size(data["size_delta"], signed=True)
    rows.append(row([("set total", 0), ("", 0), (_size(data["a_total"]), 1), (_size(data["b_total"]), 1),
                     (delta, 1), (_e(root_line(data["causes"])), 0)], "th"))  # fmt: skip
    totals = (
        "<h3>The set, part by part</h3><table class='c'><tr><th>candidate part</th><th>reference part</th>"
        f"<th>candidate</th><th>reference</th><th>change</th><th>root causes</th></tr>{''.join(rows)}</table>"
    )
    sections = []
    for i, ((pa, pb, r), part) in enumerate(zip(sd.pairs, data["parts"])):
        figs = [_waterfall(part, f"{pa.name}: size change by region")] + ([along[pa]] if pa in along else [])
        sections.append(
            f"<hr><h2>{_e(pa.name)} vs {_e(pb.name)}</h2>"
            + _verdict(part).replace("<h2>", "<h3>").replace("</h2>", "</h3>")
            + f"<p>{_e(r.a.path)} vs {_e(r.b.path)}: {_size(r.a.size)} → {_size(r.b.size)}"
            + f" ({_size(r.b.size - r.a.size, signed=True)})</p>"
            + _causes_table(part["causes"])
            + _attribution(part)
            + _fixes(part["suggestions"])
            + _charts(figs, first=i == 0)
        )
    head = f"<p>q9diff: candidate {_e(sd_root(sd, 'a'))} vs reference {_e(sd_root(sd, 'b'))}</p>"
    body = (
        _verdict(data).replace("Root cause:", "Root causes over the set:")
        + head
        + f"<p>{len(sd.pairs) + len(sd.unpaired_a)} vs {len(sd.pairs) + len(sd.unpaired_b)} parts,"
        + f" {_size(data['a_total'])} → {_size(data['b_total'])} ({delta})</p>"
        + totals
        + _fixes(data["suggestions"])
        + "".join(sections)
    )
    return _page("q9diff set report", body)


def sd_root(sd, side: str) -> str:
    """The folder a side's parts come from (the common parent), for the title."""
    paths = [pa if side == "a" else pb for pa, pb, _ in sd.pairs] + (
        sd.unpaired_a if side == "a" else sd.unpaired_b
    )
    parents = {str(p.parent) for p in paths}
    return parents.pop() if len(parents) == 1 else ", ".join(sorted(parents))


# ---- q9diff verify ----

_PAIRS = {
    ("candidate", "cpu"): "#d62728",
    ("reference", "cpu"): "#1f77b4",
    ("candidate", "reference"): "#2ca02c",
}


def _drift_figure(llm):
    """Per-step logit drift (teacher-forced, so every side saw the same tokens), with token divergence."""
    import plotly.graph_objects as go
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


def _outputs_figure(outputs):
    import plotly.graph_objects as go

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
        f"<li><b>{_e(s.label)}</b>: {_e(s.source)} ({_e(s.runner)})"
        + "".join(f"<br><i>{_e(n)}</i>" for n in s.notes)
        + "</li>"
        for s in res.sides
    )
    notes = "".join(f"<li>{_e(n)}</li>" for n in res.notes)
    body, fig = "", None
    if res.llm is not None:
        rows = "".join(
            f"<tr><td>{_e(k)}</td><td>{' '.join(map(str, v))}</td></tr>" for k, v in res.llm.tokens.items()
        )
        div = "".join(
            f"<li>{_e(k)}: " + ("same tokens at every step" if v is None else f"diverge at step {v}")
            for k, v in res.llm.first_divergence.items()
        )
        body = (
            f"<p>prompt {list(res.llm.prompt)}</p><table class='c'><tr><th>side</th><th>tokens</th></tr>"
            f"{rows}</table><ul>{div}</ul>"
        )
        fig = _drift_figure(res.llm) if res.llm.steps else None
    elif res.outputs:
        rows = "".join(
            f"<tr><td>{_e(o.graph)}</td><td>{_e(o.output)}</td><td>{o.against}</td>"
            f"<td>{o.metrics.max_abs:.4g}</td><td>{o.metrics.rel:.4g}</td><td>{o.metrics.cosine:.6f}</td>"
            f"<td>{'yes' if o.passed else 'NO'}</td></tr>"
            for o in res.outputs
        )
        body = (
            "<table class='c'><tr><th>graph</th><th>output</th><th>against</th><th>max|Δ|</th><th>rel</th>"
            f"<th>cosine</th><th>ok</th></tr>{rows}</table>"
        )
        fig = _outputs_figure(res.outputs)
    chart = _charts([fig], first=True) if fig is not None else ""
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
