"""The HTML report's charts, drawn from a saved result (the diff JSON) alone: no chart opens a file.

Every chart says what it plots on its axes; every size is shown in human units with the exact bytes on
hover. Graph names are shortened where they are long, keeping the words that tell the graphs of one
file apart (prompt vs token), never only the tail.
"""

from __future__ import annotations

import re
from collections import Counter

from q9diff.errors import printable
from q9diff.units import human, sizes, value

NEW_COLOR, MOVED_COLOR = "#d62728", "#9ecae1"  # new content stands out; moved content is muted
_PICKLE = re.compile(r"^PICKLE\[(\d+)\]")


def short_names(names: list[str], n: int = 24) -> list[str]:
    """Each name at most ~n characters. Words that every name shares go first (replaced by an ellipsis),
    so `prompt_ar32_cl128_1_of_2` and `token_ar1_cl128_1_of_2` become `prompt_ar32…` and `token_ar1…`;
    a name still too long keeps its first word and its tail."""
    split = [re.split(r"(?<=[_.\-])", x) for x in names]
    common = set.intersection(*(set(w) for w in split)) if len(names) > 1 else set()
    out = []
    for name, words in zip(names, split):
        if len(name) <= n:
            out.append(name)
            continue
        kept = "".join(w if w not in common else "\0" for w in words)
        kept = re.sub("\0+", "…", kept) if kept.replace("\0", "") else name
        if len(kept) > n:
            head = words[0]
            kept = head + "…" + name[-(n - len(head) - 1) :] if len(head) < n // 2 else name[: n - 1] + "…"
        out.append(kept)
    return out


def graph_label(region: str, graphs: list[str]) -> str:
    """`PICKLE[0]/inner/const_pool` -> `graph prompt_ar32…/inner/const_pool` where graph 0's name is known."""
    m = _PICKLE.match(region)
    if m and int(m.group(1)) < len(graphs) and graphs[int(m.group(1))]:
        return f"graph {short_names(graphs)[int(m.group(1))]}" + region[m.end() :]
    return region


def group_of(name: str) -> str:
    parts = name.split("/")
    return "/".join(parts[:2]) if parts[0].startswith(("PICKLE", "WEIGHTS")) else parts[0]


def _graphs(summary: dict) -> list[str]:
    return [g["name"] for g in summary.get("graphs", [])]


def waterfall(data: dict, title: str = "Size change by region, candidate → reference"):
    """Only the deltas, from zero: a +28 KB change on 1 MB is as tall as it is, not a sliver on a tower."""
    import plotly.graph_objects as go

    graphs = _graphs(data["a"])
    deltas: dict[str, int] = {}
    for r in data["regions"]:
        if r["delta"]:
            key = group_of(r["name"])
            deltas[key] = deltas.get(key, 0) + r["delta"]
    names = [graph_label(k, graphs) for k in deltas] + ["net change"]
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
        title=f"{title}: {sizes(a, b)}",
        yaxis_title="size change (bytes)",
        height=400,
    )
    return fig


def treemap_trace(summary: dict, title: str):
    """Every byte of one file, once: each group's value is the sum of its regions ("total"), so the
    areas add up to the file size."""
    import plotly.graph_objects as go

    graphs = _graphs(summary)
    ids, labels, parents, values = [], [], [], []
    groups: dict[str, int] = {}
    for r in summary["regions"]:
        groups[group_of(r["name"])] = groups.get(group_of(r["name"]), 0) + r["size"]
    for g, v in groups.items():
        ids.append(g), labels.append(graph_label(g, graphs)), parents.append(""), values.append(v)
    leaf_sizes: dict[str, int] = {}
    for r in summary["regions"]:
        leaf_sizes[r["name"]] = leaf_sizes.get(r["name"], 0) + r["size"]
    for name, v in leaf_sizes.items():
        if group_of(name) != name:
            (
                ids.append(name),
                labels.append(name.split("/")[-1]),
                parents.append(group_of(name)),
                values.append(v),
            )
    return go.Treemap(
        ids=ids,
        labels=labels,
        parents=parents,
        values=values,
        branchvalues="total",
        name=title,
        customdata=[
            f"{human(v)} ({v:,d} bytes, {v / max(1, summary['size']):.1%} of the file)" for v in values
        ],
        hovertemplate="%{label}<br>%{customdata}<extra></extra>",
    )


def maps(data: dict):
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        specs=[[{"type": "domain"}, {"type": "domain"}]],
        subplot_titles=(f"candidate, {human(data['a']['size'])}", f"reference, {human(data['b']['size'])}"),
    )
    fig.add_trace(treemap_trace(data["a"], "candidate"), 1, 1)
    fig.add_trace(treemap_trace(data["b"], "reference"), 1, 2)
    fig.update_layout(title="Region maps (every byte; area is size)", height=480)
    return fig


def where_changed(data: dict):
    """Each region of the reference, in file order, as a band as wide as it is: how much of it differs
    from the candidate, split into moved (the same 128-byte block is elsewhere in the candidate's region
    of that name: re-laid out) and new (not found there). The weights pool of a VTCM change is a wide
    band that is almost all moved, as the text says."""
    import plotly.graph_objects as go

    rows = {r["name"]: r for r in data["regions"]}
    graphs = _graphs(data["b"])
    x, width, moved, new, hover = [], [], [], [], []
    for reg in data["b"]["regions"]:
        r = rows.get(reg["name"])
        if r is None or not reg["size"]:
            continue
        whole = max(r["a_size"], r["b_size"], 1)
        x.append(reg["offset"] + reg["size"] / 2)
        width.append(reg["size"])
        moved.append(100 * r["moved_bytes"] / whole)
        new.append(100 * r["new_bytes"] / whole)
        hover.append(
            f"{graph_label(reg['name'], graphs)}<br>{human(reg['size'])} at {reg['offset']:,d}<br>"
            f"moved {r['moved_bytes']:,d} B, new {r['new_bytes']:,d} B of {whole:,d} B"
        )
    fig = go.Figure()
    for name, ys, color in (
        ("moved (same content elsewhere)", moved, MOVED_COLOR),
        ("new content", new, NEW_COLOR),
    ):
        fig.add_trace(
            go.Bar(
                x=x,
                y=ys,
                width=width,
                name=name,
                marker_color=color,
                hovertext=hover,
                hovertemplate="%{hovertext}<extra>" + name + "</extra>",
            )
        )
    bands: dict[str, list[int]] = {}
    for reg in data["b"]["regions"]:
        span = bands.setdefault(group_of(reg["name"]), [reg["offset"], reg["offset"]])
        span[0], span[1] = min(span[0], reg["offset"]), max(span[1], reg["offset"] + reg["size"])
    size, free_from = max(1, data["b"]["size"]), 0.0
    for i, (g, (lo, hi)) in enumerate(sorted(bands.items(), key=lambda kv: kv[1][0])):
        fig.add_vrect(
            x0=lo, x1=hi, fillcolor="#888" if i % 2 else "#ccc", opacity=0.12, line_width=0, layer="below"
        )
        label = graph_label(g, graphs)
        # A label only where it fits its band and clears the one before (7 px a letter, ~1000 px wide).
        half = len(label) * 0.0035
        mid = (lo + hi) / 2 / size
        if (hi - lo) / size >= 2 * half and mid - half >= free_from:
            fig.add_annotation(
                x=(lo + hi) / 2, y=1.0, yref="paper", yanchor="bottom", showarrow=False, text=label,
                font={"size": 11},
            )  # fmt: skip
            free_from = mid + half
    only_a = sum(r["a_size"] for r in data["regions"] if r["b_size"] == 0)
    note = f"; {human(only_a)} of regions only the candidate has are not drawn" if only_a else ""
    fig.update_layout(
        title=f"Where bytes changed, along the reference: moved vs new, per region{note}",
        barmode="stack",
        xaxis_title="offset in the reference (bytes)",
        yaxis_title="share of the region changed (%)",
        yaxis_range=[0, 105],
        height=380,
        bargap=0,
    )
    return fig


def _middle(s: str, n: int = 44) -> str:
    return s if len(s) <= n else s[: n * 2 // 3 - 1] + "…" + s[-(n // 3) :]


def ops(data: dict, most: int = 40):
    """Ops per kind over all graphs, horizontal bars (kernel names are long), the kinds whose count
    differs most first."""
    import plotly.graph_objects as go

    ca = Counter(k for g in data["a"]["graphs"] for k in g["ops"])
    cb = Counter(k for g in data["b"]["graphs"] for k in g["ops"])
    kinds = sorted(set(ca) | set(cb), key=lambda k: (-abs(cb[k] - ca[k]), -(ca[k] + cb[k]), k))
    shown = kinds[:most][::-1]  # plotly draws the first category at the bottom
    fig = go.Figure()
    for label, c in (("candidate", ca), ("reference", cb)):
        fig.add_trace(
            go.Bar(
                y=[_middle(k) for k in shown],
                x=[c[k] for k in shown],
                name=label,
                orientation="h",
                hovertext=shown,
                hovertemplate="%{hovertext}<br>%{x} ops<extra>" + label + "</extra>",
            )
        )
    differ = sum(1 for k in kinds if ca[k] != cb[k])
    rest = f"; {len(kinds) - most} more kinds not drawn" if len(kinds) > most else ""
    fig.update_layout(
        title=f"Ops per kind, all graphs: {differ} of {len(kinds)} kinds differ in count (first){rest}",
        barmode="group",
        xaxis_title="ops of this kind",
        height=140 + 26 * len(shown),
        margin={"l": 330},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig


def set_effects(data: dict):
    """Across the set: each part's changed bytes by effect (the attribution buckets), so the part that
    changed most, and how, shows at a glance."""
    import plotly.graph_objects as go

    parts = [p["part"] for p in data["parts"]]
    names = list(dict.fromkeys(r["bucket"] for p in data["parts"] for r in p.get("attribution") or []))
    fig = go.Figure()
    for bucket in names:
        values = [
            next((r["changed_bytes"] for r in p.get("attribution") or [] if r["bucket"] == bucket), 0)
            for p in data["parts"]
        ]
        fig.add_trace(
            go.Bar(
                y=parts,
                x=values,
                name=bucket,
                orientation="h",
                customdata=[f"{v:,d} bytes" for v in values],
                hovertemplate="%{y}: %{customdata}<extra>" + bucket + "</extra>",
            )
        )
    fig.update_layout(
        title="Across the set: changed bytes per part, by effect",
        barmode="stack",
        xaxis_title="changed bytes",
        height=200 + 40 * len(parts),
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig


DIFFER_FILL, DIFFER_TEXT = "#b3261e", "#ffffff"  # 6.5:1 against the page's white, white text 6.5:1 on it


def settings(data: dict):
    """The observed settings side by side; a differing row is marked three ways: a ≠ before its name,
    bold, and a dark fill (not a pale tint beside white)."""
    import html

    import plotly.graph_objects as go

    oa, ob = data["settings"]["a"], data["settings"]["b"]
    keys = list(oa) + [k for k in ob if k not in oa]

    def short(k: str, v) -> str:
        """In the unit the causes table and the terminal use (units.value): VTCM in MiB, sizes in bytes."""
        numbers = isinstance(v, int) or (isinstance(v, list) and v and all(isinstance(x, int) for x in v))
        s = value(k, v) if numbers and not isinstance(v, bool) else str(v)
        return html.escape(printable(s if len(s) < 60 else s[:59] + "…"))

    differs = [oa.get(k) != ob.get(k) for k in keys]

    def mark(cells: list[str]) -> list[str]:
        return [f"<b>{c}</b>" if d else c for c, d in zip(cells, differs)]

    names = [("≠ " if d else "") + html.escape(printable(k)) for k, d in zip(keys, differs)]
    fill = [DIFFER_FILL if d else "white" for d in differs]
    font = [DIFFER_TEXT if d else "#222" for d in differs]
    fig = go.Figure(
        go.Table(
            header={"values": ["setting", "candidate", "reference"], "font": {"size": 13}},
            cells={
                "values": [
                    mark(names),
                    mark([short(k, oa.get(k)) for k in keys]),
                    mark([short(k, ob.get(k)) for k in keys]),
                ],
                "fill_color": [fill] * 3,
                "font": {"color": [font] * 3, "size": 13},
                "height": 26,
            },
        )
    )
    fig.update_layout(
        title=f"Settings: {sum(differs)} of {len(keys)} differ (marked ≠, bold, dark)",
        height=200 + 30 * len(keys),
    )
    return fig
