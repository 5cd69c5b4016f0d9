"""The HTML report's charts, drawn from a saved result (the diff JSON) alone: no chart opens a file.

Every chart says what it plots on its axes; every size is shown in human units with the exact bytes on
hover. Graph names are shortened where they are long, keeping the words that tell the graphs of one
file apart (prompt vs token), never only the tail.

Each chart is a plotly figure written as the dict plotly.graph_objects would give for it (`to_dict()`:
the same keys, in the same order, with the default "plotly" template in its layout: q9diff.present.figures),
not built through graph_objects: plotly validates every property it is given, which took 1.5 s of a
seed-scale set's report for 36 charts. test_report checks each figure against plotly's own validation.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from q9diff.errors import printable
from q9diff.present.figures import figure
from q9diff.units import human, sizes, value

NEW_COLOR, MOVED_COLOR = "#d62728", "#9ecae1"  # new content stands out; moved content is muted
# The two builds in charts that compare them: neither in red, the colour of problems.
CANDIDATE_COLOR, REFERENCE_COLOR = "#e08a1e", "#3b6ea8"
_PICKLE = re.compile(r"^PICKLE\[(\d+)\]")


def text(v) -> str:
    """A string from a file or a saved result as a plotly label, legend entry or hover text shows it:
    plotly reads tags in them (<a href>, <b>, <span style>), so <, > and & go in as entities (which plotly
    shows as the characters), and control and bidi characters as visible escapes. The one escape of every
    string a chart draws."""
    return html.escape(printable(v))


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


def graph_label(region: str, short: list[str]) -> str:
    """`PICKLE[0]/inner/const_pool` -> `graph prompt_ar32…/inner/const_pool` where graph 0's name is known;
    `short` is the graphs' names as short_names gives them, shortened once for every label a chart draws
    (shortening them again per label was regions x graphs of work)."""
    m = _PICKLE.match(region)
    if m and int(m.group(1)) < len(short) and short[int(m.group(1))]:
        return f"graph {short[int(m.group(1))]}" + region[m.end() :]
    return region


# A legend under the chart, at the bottom of the figure (the container), below the x axis' title: placed
# on the plot's own scale (y=-0.25 of the plot) it covered that title at any width. The loader
# (embed.FIT_JS) gives the bottom margin room for its rows at the width drawn.
BOTTOM_LEGEND = {
    "orientation": "h",
    "x": 0,
    "xanchor": "left",
    "y": 0,
    "yanchor": "bottom",
    "yref": "container",
}


def narrow(layout: dict | None = None, traces: list[dict] | None = None, **space) -> dict:
    """What a chart changes on a phone (a page narrower than 600 px), in its layout's `meta` for the
    loader to apply (embed.FIT_JS): layout keys, each trace's keys, and `above` (px between the title
    and the plot for labels drawn above it) or `below` (px under the plot before the legend)."""
    return {"narrow": {"layout": layout or {}, "traces": traces or []}, **space}


def _title(text: str) -> dict:
    """A chart's title, broken into lines of about 60 characters (plotly does not wrap a title), at spaces
    only; the loader breaks it again for the width it is drawn at (embed.FIT_JS: 412 px holds ~45)."""
    import textwrap

    return {
        "text": "<br>".join(textwrap.wrap(text, 60, break_long_words=False)) or text,
        "font": {"size": 15},
    }


def group_of(name: str) -> str:
    parts = name.split("/")
    return "/".join(parts[:2]) if parts[0].startswith(("PICKLE", "WEIGHTS")) else parts[0]


def _graphs(summary: dict) -> list[str]:
    """The graphs' names of one side, shortened once (short_names) for graph_label."""
    return short_names([g["name"] for g in summary.get("graphs", [])])


def waterfall(data: dict, title: str = "Size change by region, candidate → reference"):
    """Only the deltas, from zero: a +28 KB change on 1 MB is as tall as it is, not a sliver on a tower."""
    graphs = _graphs(data["a"])
    deltas: dict[str, int] = {}
    for r in data["regions"]:
        if r["delta"]:
            key = group_of(r["name"])
            deltas[key] = deltas.get(key, 0) + r["delta"]
    names = [graph_label(k, graphs) for k in deltas] + ["net change"]
    values = [*deltas.values(), data["size_delta"]]
    div, unit = scale(max((abs(v) for v in values), default=0))
    trace = {
        "customdata": [f"{v:+,d} bytes" for v in values],
        "hovertemplate": "%{x}<br>%{customdata}<br>%{hovertext}<extra></extra>",
        "hovertext": list(deltas) + ["net change"],
        "measure": [*["relative"] * len(deltas), "total"],
        "text": [("+" if v > 0 else "") + human(v) for v in values],
        "textposition": "outside",
        "x": names,
        "y": [*(v / div for v in deltas.values()), 0],
        "type": "waterfall",
    }
    a, b = data["a"]["size"], data["b"]["size"]
    layout = {"title": _title(f"{title}: {sizes(a, b)}"), "yaxis": {"title": _title(f"size change ({unit})")}}
    # on a phone the rotated region names take the plot's height: a taller chart keeps a plot area
    return figure([trace], layout | {"height": 400, "margin": {"b": 120}, "meta": narrow({"height": 600})})


def scale(n: int) -> tuple[int, str]:
    """The unit an axis of sizes up to `n` bytes is drawn in, as the tables say sizes: B, KiB or MiB."""
    if n >= 16 << 20:
        return 1 << 20, "MiB"
    if n >= 16 << 10:
        return 1 << 10, "KiB"
    return 1, "B"


def treemap_trace(summary: dict, title: str):
    """Every byte of one file, once: each group's value is the sum of its regions ("total"), so the
    areas add up to the file size."""
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
    return {
        "branchvalues": "total",
        "customdata": [
            f"{human(v)} ({v:,d} bytes, {v / max(1, summary['size']):.1%} of the file)" for v in values
        ],
        "hovertemplate": "%{label}<br>%{customdata}<extra></extra>",
        "ids": ids,
        "labels": labels,
        "name": title,
        "parents": parents,
        "values": values,
        "type": "treemap",
    }


# make_subplots(rows=1, cols=2) of two "domain" cells: each cell's domain and its title's place
_CELLS = (([0.0, 0.45], 0.225), ([0.55, 1.0], 0.775))


def maps(data: dict):
    """Both files' region maps side by side, each titled with its size."""
    traces, titles = [], []
    for (x, middle), side, name in zip(_CELLS, ("a", "b"), ("candidate", "reference")):
        traces.append(treemap_trace(data[side], name) | {"domain": {"x": x, "y": [0.0, 1.0]}})
        titles.append(
            {
                "font": {"size": 16},
                "showarrow": False,
                "text": f"{name}, {human(data[side]['size'])}",
                "x": middle,
                "xanchor": "center",
                "xref": "paper",
                "y": 1.0,
                "yanchor": "bottom",
                "yref": "paper",
            }
        )
    # on a phone the two maps side by side were ~180 px each and their titles ran into each other: one
    # above the other, each titled above itself
    stacked = narrow(
        {
            "height": 820,
            "annotations": [t | {"x": 0.5, "y": y} for t, y in zip(titles, (1.0, 0.46))],
        },
        [{"domain": {"x": [0.0, 1.0], "y": y}} for y in ([0.54, 1.0], [0.0, 0.46])],
        above=30,
    )
    layout = {
        "annotations": titles,
        "title": _title("Region maps (every byte; area is size)"),
        "height": 480,
        "uniformtext": {"minsize": 10, "mode": "hide"},  # a label too small to read is left out
        "meta": stacked,
    }
    return figure(traces, layout)


def where_changed(data: dict):
    """Each region of the reference, in file order, as a band as wide as it is: how much of it differs
    from the candidate, split into moved (the same 128-byte block is elsewhere in the candidate's region
    of that name: re-laid out) and new (not found there). The weights pool of a VTCM change is a wide
    band that is almost all moved, as the text says."""
    rows = {r["name"]: r for r in data["regions"]}
    graphs = _graphs(data["b"])
    div, unit = scale(data["b"]["size"])
    x, width, moved, new, hover = [], [], [], [], []
    for reg in data["b"]["regions"]:
        r = rows.get(reg["name"])
        if r is None or not reg["size"]:
            continue
        whole = max(r["a_size"], r["b_size"], 1)
        x.append((reg["offset"] + reg["size"] / 2) / div)
        width.append(reg["size"] / div)
        moved.append(100 * r["moved_bytes"] / whole)
        new.append(100 * r["new_bytes"] / whole)
        hover.append(
            f"{graph_label(reg['name'], graphs)}<br>{human(reg['size'])} at {reg['offset']:,d}<br>"
            f"moved {r['moved_bytes']:,d} B, new {r['new_bytes']:,d} B of {whole:,d} B"
        )
    traces = [
        {
            "hovertemplate": "%{hovertext}<extra>" + name + "</extra>",
            "hovertext": hover,
            "marker": {"color": color},
            "name": name,
            "width": width,
            "x": x,
            "y": ys,
            "type": "bar",
        }
        for name, ys, color in (
            ("moved (same content elsewhere)", moved, MOVED_COLOR),
            ("new content", new, NEW_COLOR),
        )
    ]
    shapes, labels = [], []
    bands: dict[str, list[int]] = {}
    for reg in data["b"]["regions"]:
        span = bands.setdefault(group_of(reg["name"]), [reg["offset"], reg["offset"]])
        span[0], span[1] = min(span[0], reg["offset"]), max(span[1], reg["offset"] + reg["size"])
    size, free_from = max(1, data["b"]["size"]), 0.0
    for i, (g, (lo, hi)) in enumerate(sorted(bands.items(), key=lambda kv: kv[1][0])):
        shapes.append(
            {
                "fillcolor": "#888" if i % 2 else "#ccc",
                "layer": "below",
                "line": {"width": 0},
                "opacity": 0.12,
                "type": "rect",
                "x0": lo / div,
                "x1": hi / div,
                "xref": "x",
                "y0": 0,
                "y1": 1,
                "yref": "y domain",
            }
        )
        label = graph_label(g, graphs)
        # A label only where it fits its band and clears the one before (7 px a letter, ~1000 px wide).
        half = len(label) * 0.0035
        mid = (lo + hi) / 2 / size
        if (hi - lo) / size >= 2 * half and mid - half >= free_from:
            labels.append(
                {
                    "font": {"size": 11},
                    "showarrow": False,
                    "text": label,
                    "x": (lo + hi) / 2 / div,
                    "y": 1.0,
                    "yanchor": "bottom",
                    "yref": "paper",
                }
            )
            free_from = mid + half
    only_a = sum(r["a_size"] for r in data["regions"] if r["b_size"] == 0)
    note = f"; {human(only_a)} of regions only the candidate has are not drawn" if only_a else ""
    layout = ({"shapes": shapes} if shapes else {}) | ({"annotations": labels} if labels else {})
    layout |= {
        "yaxis": {"title": _title("share of the region changed (%)"), "range": [0, 105]},
        "title": _title(f"Where bytes changed, along the reference: moved vs new, per region{note}"),
        "barmode": "stack",
        "xaxis": {"title": _title(f"offset in the reference ({unit})")},
        "legend": BOTTOM_LEGEND,
        "height": 420,
        "bargap": 0,
        # the band labels fit ~1000 px: on a phone they ran into each other (the hover names each band)
        "meta": narrow({"annotations": []}, above=20 if labels else 0),
    }
    return figure(traces, layout)


def _kinds(side: dict, counted: list[tuple[list, Counter]]) -> Counter:
    """Ops per kind of one side's graphs, each kind escaped for plotly's labels: the names are counted
    first and only the distinct ones escaped (a seed-scale part has ~70,000 ops of a few dozen kinds);
    two names that escape alike count as one, as their labels would. A graph whose op list is one
    counted already (`counted`: the same graph in the other build, or in another part of a set) is not
    counted again."""
    names: Counter = Counter()
    for g in side["graphs"]:
        names.update(_counted(g["ops"], counted))
    out: Counter = Counter()
    for kind, n in names.items():
        out[text(kind)] += n
    return out


def _counted(ops: list, counted: list[tuple[list, Counter]]) -> Counter:
    """`ops` per name, from `counted` where the latest lists counted hold an equal one (at most 8 looked
    at, so a page of many distinct graphs costs no more than counting each)."""
    for other, counts in counted[-8:]:
        if other == ops:
            return counts
    counts = Counter(ops)
    counted.append((ops, counts))
    return counts


def ops(data: dict, most: int | None = None, counted: list[tuple[list, Counter]] | None = None):
    """Ops per kind over all graphs, horizontal bars (kernel names are long), the kinds whose count
    differs most first. `data`: the diff's JSON as saved, not escaped (`_kinds` escapes the kinds);
    `counted`: op lists counted for the page's other charts (`_kinds`)."""
    counted = [] if counted is None else counted
    ca, cb = _kinds(data["a"], counted), _kinds(data["b"], counted)
    kinds = sorted(set(ca) | set(cb), key=lambda k: (-abs(cb[k] - ca[k]), -(ca[k] + cb[k]), k))
    shown = kinds[:most][::-1]  # plotly draws the first category at the bottom
    traces = [
        {
            "hovertemplate": "%{hovertext}<br>%{x} ops<extra>" + label + "</extra>",
            "hovertext": shown,
            "name": label,
            "orientation": "h",
            "marker": {"color": color},
            "x": [c[k] for k in shown],
            "y": shown,
            "type": "bar",
        }
        for label, c, color in (("candidate", ca, CANDIDATE_COLOR), ("reference", cb, REFERENCE_COLOR))
    ]
    differ = sum(1 for k in kinds if ca[k] != cb[k])
    rest = f"; {len(kinds) - most} more kinds not drawn" if most is not None and len(kinds) > most else ""
    layout = {
        "legend": BOTTOM_LEGEND,
        "yaxis": {"automargin": True, "tickfont": {"size": 11}},
        "title": _title(
            f"Ops per kind, all graphs: {differ} of {len(kinds)} kinds differ in count (first){rest}"
        ),
        "barmode": "group",
        "xaxis": {"title": _title("ops of this kind")},
        "height": 200 + 26 * len(shown),
        # on a phone the kernel names take half the width: smaller, and a title that fits what is left
        "meta": narrow(
            {"xaxis": {"title": _title("ops")}, "yaxis": {"automargin": True, "tickfont": {"size": 9}}}
        ),
    }
    return figure(traces, layout)


def set_effects(data: dict):
    """Across the set: each part's changed bytes by effect (the attribution buckets), so the part that
    changed most, and how, shows at a glance."""
    parts = [p["part"] for p in data["parts"]]
    per_part = []  # each part's changed bytes by bucket, read once (the first row of a bucket counts)
    for p in data["parts"]:
        rows: dict[str, int] = {}
        for r in p.get("attribution") or []:
            rows.setdefault(r["bucket"], r["changed_bytes"])
        per_part.append(rows)
    names = list(dict.fromkeys(b for rows in per_part for b in rows))
    traces = []
    for bucket in names:
        values = [rows.get(bucket, 0) for rows in per_part]
        traces.append(
            {
                "customdata": [f"{v:,d} bytes" for v in values],
                "hovertemplate": "%{y}: %{customdata}<extra>" + bucket + "</extra>",
                "name": bucket,
                "orientation": "h",
                "x": values,
                "y": parts,
                "type": "bar",
            }
        )
    layout = {
        "legend": BOTTOM_LEGEND,
        "title": _title("Across the set: changed bytes per part, by effect"),
        "barmode": "stack",
        "xaxis": {"title": _title("changed bytes")},
        "height": 260 + 40 * len(parts),
        "meta": narrow({"height": 360 + 40 * len(parts)}),  # the legend's rows under a phone's plot
    }
    return figure(traces, layout)


def shown_value(name: str, v) -> str:
    """A setting's value as a person reads it (units.value), for tables: v73 for an arch, true/false,
    lists joined with ` / `, nothing of Python's reprs."""
    if v is None:
        return "not recorded"
    if isinstance(v, (bool, int)):
        return value(name, v)
    if isinstance(v, list):
        if v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return value(name, v)
        return " / ".join(shown_value(name, x) for x in v) or "none"
    return value(name, v) if isinstance(v, int) else str(v)


DIFFER_FILL, DIFFER_TEXT = "#b3261e", "#ffffff"  # 6.5:1 against the page's white, white text 6.5:1 on it


def settings(data: dict):
    """The observed settings side by side; a differing row is marked three ways: a ≠ before its name,
    bold, and a dark fill (not a pale tint beside white)."""
    oa, ob = data["settings"]["a"], data["settings"]["b"]
    keys = list(oa) + [k for k in ob if k not in oa]

    def short(k: str, v) -> str:
        """In the unit the causes table and the terminal use (units.value): VTCM in MiB, sizes in bytes,
        the arch as v73, true/false, a list as `a / b`; never a Python repr."""
        s = shown_value(k, v)
        from q9diff.present.verdict import clip  # start-up: present.verdict

        return text(clip(s, 60))

    differs = [oa.get(k) != ob.get(k) for k in keys]

    def mark(cells: list[str]) -> list[str]:
        return [f"<b>{c}</b>" if d else c for c, d in zip(cells, differs)]

    names = [("≠ " if d else "") + text(k) for k, d in zip(keys, differs)]
    fill = [DIFFER_FILL if d else "white" for d in differs]
    font = [DIFFER_TEXT if d else "#222" for d in differs]
    table = {
        "cells": {
            "fill": {"color": [fill] * 3},
            "font": {"color": [font] * 3, "size": 13},
            "height": 26,
            "values": [
                mark(names),
                mark([short(k, oa.get(k)) for k in keys]),
                mark([short(k, ob.get(k)) for k in keys]),
            ],
        },
        "header": {"font": {"size": 13}, "values": ["setting", "candidate", "reference"]},
        "type": "table",
    }
    title = f"Settings: {sum(differs)} of {len(keys)} differ (marked ≠, bold, dark)"
    # on a phone: smaller type, the names' column wider, room for the rows that wrap
    small = {"cells": {"font": {"size": 10}}, "header": {"font": {"size": 11}}, "columnwidth": [1.5, 1, 1]}
    phone = narrow({"height": 200 + 44 * len(keys)}, [small])
    return figure([table], {"title": _title(title), "height": 200 + 30 * len(keys), "meta": phone})
