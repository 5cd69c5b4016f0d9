"""The HTML report: one self-contained, offline file (plotly.js inlined once) drawn from a saved result.

Every page reads only the command's result as its JSON gives it (`q9diff.diff/1`, `q9diff.setdiff/1`,
`q9diff.verify/1`), so `q9diff report RESULT.json --html FILE` draws the same page as the command itself,
with the binaries gone. The verdict comes first, in the terminal's words (`q9diff.present.verdict`);
sizes are shown in bytes as the terminal shows them, in KiB or MiB on hover; every string from a file or
a saved result is escaped (`esc`), and the charts get them escaped too (plotly reads tags in its labels).
"""

from __future__ import annotations

import html

from q9diff.compare.models import NOT_MEANINGFUL
from q9diff.errors import printable
from q9diff.present import charts, embed, figures, verdict
from q9diff.present.verdict import (
    bundle_lines,
    clip,
    headline,
    load_rows,
    models_line,
    outside_headline,
    outside_words,
    reference_looks_wrong,
    refusal,
    refused,
    role,
    root_line,
    set_root,
    sides,
    warnings,
)
from q9diff.units import human
from q9diff.units import sizes as size_change

# At a phone's width the evidence keeps 16em (issue 54: at 412 px a set diff's evidence column was squeezed
# to a few words a line); its table scrolls sideways in its div.scroll instead.
STYLE = """<style>body{font-family:sans-serif;margin:1.5em;max-width:1400px;overflow-wrap:break-word}
table.c{border-collapse:collapse}table.c td,table.c th{border:1px solid #ccc;padding:3px 6px}
div.scroll{overflow-x:auto;max-width:100%}td.ev{min-width:18em}
td.n{text-align:right;font-variant-numeric:tabular-nums}
p.warn{color:#b00;font-weight:bold;font-size:1.15em}p.ok{color:#070;font-size:1.15em}p.swap{color:#a60;font-weight:bold}
span[title]{border-bottom:1px dotted #888}code{overflow-wrap:anywhere}
pre.fix{background:#f6f6f6;padding:.5em .8em;overflow-x:auto;white-space:pre;max-width:100%}
@media (max-width:600px){body{margin:.6em}h2{font-size:1.15em}
table.c{width:100%}table.c td,table.c th{font-size:12px;padding:2px 3px}
td.ev{min-width:16em;overflow-wrap:anywhere}table.c th:last-child{width:34%}code{font-size:12px}}
th,td{overflow-wrap:normal;word-break:keep-all;hyphens:none}td.n,th.n{white-space:nowrap}</style>"""


def size_span(n: int, signed: bool = False) -> str:
    """A size in bytes, as the terminal and the Markdown write it (`1,159,168 B`), the same in KiB or MiB
    on hover."""
    text = f"{n:+,d} B" if signed else f"{n:,d} B"
    return f'<span title="{("+" if signed and n > 0 else "") + human(n)}">{text}</span>'


def esc(v) -> str:
    """A value for the page: its control characters escaped as in the terminal (q9diff.errors), then HTML."""
    return html.escape(printable(v))


def scroll_table(inner: str) -> str:
    """A table that scrolls sideways on a narrow screen instead of widening the page."""
    return f"<div class='scroll'><table class='c'>{inner}</table></div>"


def refusal_banner(load: dict | None) -> str:
    """The answer to --runtime or --target where it refuses the build, the page's first words, as the
    terminal's: `Will not load on QAIRT 2.48` with each refusing finding and its fix ('' otherwise)."""
    if not refused(load):
        return ""
    head, rows = refusal(load)
    items = "".join(
        f"<li><b>{esc(rule)}</b> ({esc(parts)}): {esc(said)}"
        + (f"<br>it prints {esc(error)}" if error else "")
        + (f"<br><b>fix:</b> {esc(fix)}" if fix else "")
        + "</li>"
        for rule, parts, said, error, fix in rows
    )
    return f'<p class="warn">{esc(head)}</p><ul>{items}</ul>'


def _verdict(data: dict, of_set: dict | None = None) -> str:
    """The terminal's first lines: a refusal by the runtime or device named, the warning sentence, then
    the root cause. `data`: a diff's JSON (two files, a set, or one part of the set `of_set`)."""
    causes, identical = data["causes"], data["identical"]
    out = refusal_banner(data.get("load"))
    no = refused((of_set or data).get("load"))
    out += "".join(f'<p class="warn">{esc(w)}</p>' for w in warnings(causes, no))
    swapped = reference_looks_wrong(causes, *sides(data))
    if swapped:
        out += f'<p class="swap">Arguments swapped? {esc(swapped)}; the known-good build comes second.</p>'
    o, head = (
        data.get("outside"),
        outside_headline(data.get("outside"), identical),
    )  # containers: what was compared
    lines = bundle_lines(data)  # two bundles: each setting and file that differs beside the ctx-bins
    listed = "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>" if lines else ""
    if head:
        return out + f"<h2>{esc(head)}</h2>" + listed
    lead = models_line(data.get("different_models", {}).get("evidence"))
    text = headline(causes, lead)
    compared = f"<p>{esc(outside_words(o))}</p>" if o is not None else ""
    lead_html = f'<p class="swap">{esc(lead)}</p>' if lead else ""
    return out + lead_html + f"<h2>{esc(text)}</h2>" + compared + listed


SIZE_CAUSES = {"spill_fill", "const_size"}  # in bytes; VTCM in MiB, as every view says it (units.value)


def _cause_value(c: dict, side: str) -> str:
    if c["name"] == "compiler_options":  # a and b: each side's value of every option that differs
        return f"{len(set(c['a']) | set(c['b']))} options differ" if side == "a" else ""
    if c["name"] in SIZE_CAUSES and isinstance(c[side], int):
        return size_span(c[side])
    if c["name"] in SIZE_CAUSES and isinstance(c[side], list) and all(isinstance(v, int) for v in c[side]):
        return " / ".join(size_span(v) for v in c[side])
    v = charts.shown_value(c["name"], c[side])  # in its unit, as the terminal says it; never a repr
    return esc(clip(v, 80))


def causes_table(causes: list[dict], sides: tuple[str, str] = ("candidate", "reference")) -> str:
    """Each cause with both values; `sides` heads the two value columns (a target run has no reference:
    the build against the device). No table where nothing differs."""
    if not causes:
        return ""
    rows = "".join(
        f"<tr><td>{esc(verdict.label(c))}</td><td>{esc(role(c))}</td><td>{_cause_value(c, 'a')}</td>"
        f"<td>{_cause_value(c, 'b')}</td>"
        f"<td class='n'>{'' if c.get('bytes') is None else size_span(c['bytes'])}</td>"
        f"<td class='ev'>{esc('; '.join(c['evidence']))}</td></tr>"
        for c in causes
    )
    return scroll_table(
        f"<tr><th>cause</th><th>role</th><th>{esc(sides[0])}</th><th>{esc(sides[1])}</th><th>bytes</th>"
        f"<th>evidence</th></tr>{rows}"
    )


def _attribution(data: dict) -> str:
    """Every changed byte and byte of size delta in one row (q9diff.compare.attribution); the rows add up."""
    rows = data.get("attribution") or []
    if not rows or "different_models" in data:
        return f"<p><b>byte attribution: {NOT_MEANINGFUL}</b></p>" if rows else ""
    from q9diff.compare.attribution import estimate_note  # start-up: compare.attribution, numpy

    body = "".join(
        f"<tr><td>{esc(r['bucket'])}</td><td class='n'>{'~' if r.get('estimated') else ''}"
        f"{size_span(r['changed_bytes'])}</td>"
        f"<td class='n'>{size_span(r['size_delta'], signed=True)}</td></tr>"
        for r in rows
    )
    note = estimate_note(data.get("regions") or [])
    body += f"<tr><td colspan='3'>{esc(note)}</td></tr>" if note else ""
    changed = sum(r["changed_bytes"] for r in rows)
    delta = sum(r["size_delta"] for r in rows)
    verdict = f"<p><b>{esc(data['weights_verdict'])}</b></p>" if data.get("weights_verdict") else ""
    return f"{verdict}<h3>Where the changed bytes went (rows add up)</h3>" + scroll_table(
        "<tr><th>effect</th><th>changed bytes</th><th>size delta</th></tr>"
        f"{body}<tr><th>total</th><th class='n'>{size_span(changed)}</th>"
        f"<th class='n'>{size_span(delta, signed=True)}</th></tr>"
    )


def fixes_list(suggestions: list[dict], data: dict | None = None, over_set: bool = False) -> str:
    """The fix in every toolchain form, the one the candidate's files say first, each a block to paste;
    no fix where the arguments look swapped (it would break the good build), and what to run next.
    `over_set`: the set's own fix, where a SoC list to build for (fixes.soc_set_fix) stands first."""
    from q9diff.present import fixes  # start-up: present.fixes

    if (data or {}).get("reference_looks_wrong"):
        return "<h3>Fix</h3><p>No fix is shown: the arguments look swapped (see above).</p>"
    precision = fixes.precision_rows(data or {})
    said = ""
    if precision is not None:  # a change to make that no setting makes
        items = "".join(f"<li><b>{esc(f)}</b>: {esc(w)}</li>" for f, w in precision[1])
        said = f"<p>{esc(precision[0])}:</p><ul>{items}</ul>"
    socs = fixes.soc_set_fix(data or {}) if over_set else None
    if socs is not None:  # a SoC list to build for, which no part's setting makes
        body = "\n".join(esc(x) for x in socs[1])
        return f"<h3>Fix</h3><p><b>{esc(socs[0])}</b></p>" + (
            f"<pre class='fix'>{body}</pre>" if body else ""
        )
    if not suggestions:
        if said:
            return "<h3>Fix</h3>" + said
        return "" if (data or {}).get("identical") else "<h3>Fix</h3><p>Nothing to change.</p>"
    out = "<h3>Fix</h3>"
    for i, (label, lines) in enumerate(fixes.blocks(suggestions, data)):
        body = "\n".join(esc(x) for x in lines)  # each line escaped: a newline is the block's own
        out += (
            f"<p><b>{esc(label)}</b></p><pre class='fix'>{body}</pre>"
            if i == 0
            else f"<details><summary>{esc(label)}</summary><pre class='fix'>{body}</pre></details>"
        )
    nxt = fixes.next_step(data or {})
    return out + said + (f"<p>Next: <code>{esc(nxt)}</code></p>" if nxt else "")


def wrap_page(title: str, body: str) -> str:
    """The page around `body`, with plotly.js where its charts hold the place for it (`embed.PLOTLY_JS`)."""
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
{STYLE}
</head><body>
{body}
</body></html>
"""
    return page.replace(embed.PLOTLY_JS, figures.plotly_packed(), 1) if embed.PLOTLY_JS in page else page


def page_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _figures(data: dict, seen: dict[str, str] | None = None, counted: list | None = None) -> list:
    """One diff's charts, from its JSON: sizes, maps, where bytes changed, settings, ops. Of identical
    files only the region maps (what the file holds): every other chart would be empty or all alike.
    `seen`, `counted`: the strings escaped and the op lists counted for the page's other parts."""
    safe = _escaped(data, seen)
    if data["identical"]:
        return [charts.maps(safe)]
    changed = any(r["moved_bytes"] or r["new_bytes"] for r in data["regions"])
    figs = [charts.waterfall(safe), charts.maps(safe)] + ([charts.where_changed(safe)] if changed else [])
    if data.get("settings"):  # a result saved before settings were recorded has none
        figs.append(charts.settings(data))
    return figs + [charts.ops(data, counted=counted)]  # ops escapes its kinds once counted


def _escaped(v, seen: dict[str, str] | None = None):
    """A result with every string escaped for plotly, which reads tags (<b>, <a href>) in its labels,
    and without its op lists (~430,000 names in a seed-scale set), which only the ops chart reads, from
    the result itself. Each distinct string is escaped once (`seen`)."""
    seen = {} if seen is None else seen
    if isinstance(v, str):
        if v not in seen:
            seen[v] = charts.text(v)
        return seen[v]
    if isinstance(v, dict):
        return {k: _escaped(x, seen) for k, x in v.items() if k != "ops"}
    if isinstance(v, list):
        return [_escaped(x, seen) for x in v]
    return v


def _sizes(data: dict) -> str:
    return f"<p>size {esc(size_change(data['a']['size'], data['b']['size']))}</p>"


def load_section(data: dict) -> str:
    """Will it load on the runtime and device named (the JSON's `load`), when one was named."""
    if not data.get("load"):
        return ""
    head, rows = load_rows(data["load"])
    cells = "".join(
        f"<tr><td>{esc(r)}</td><td>{esc(parts)}</td><td>{esc(text)}</td><td>{esc(error or '')}</td>"
        f"<td>{esc(fix or '')}</td></tr>"  # a sentence (rebuild with ...), not code
        for r, parts, text, error, fix in rows
    )
    head_row = "<tr><th>rule</th><th>parts</th><th>why</th><th>it prints</th><th>fix</th></tr>"
    table = scroll_table(f"{head_row}{cells}")
    return f"<h2>{esc(head)}</h2>" + (table if rows else "")


def structure_section(data: dict) -> str:
    """What changed in the structure (graphs, I/O tensors, tensor types, ops, precision), in words."""
    s = data.get("structure") or {"same": True}
    if s.get("same", True):
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in s["words"])
    return f"<h2>What changed in the structure</h2><ul>{items}</ul>"


def render(data: dict) -> str:
    """The report for two files, from the diff's JSON (`q9diff.diff/1`)."""
    figures.start_packing()  # plotly.js packed while the page is drawn
    a, b = data["a"]["path"], data["b"]["path"]
    body = (
        _verdict(data)
        + f"<p>q9diff: candidate {esc(a)} vs reference {esc(b)}</p>"
        + _sizes(data)
        + causes_table(data["causes"])
        + structure_section(data)
        + _attribution(data)
        + fixes_list(data["suggestions"], data)
        + load_section(data)
        + embed.Charts()(_figures(data))
    )
    return wrap_page(f"q9diff diff {page_name(a)} vs {page_name(b)}", body)


def render_set(data: dict) -> str:
    """The report for two sets of parts, from the set's JSON (`q9diff.setdiff/1`): the verdict over
    the set, the set's totals part by part and a chart across the set, then each part as a diff of two
    files is shown (verdict, causes, fix, every chart)."""
    figures.start_packing()  # plotly.js packed while the page is drawn

    def row(cells, tag="td") -> str:
        return "<tr>" + "".join(f"<{tag}{' class=n' if n else ''}>{c}</{tag}>" for c, n in cells) + "</tr>"

    rows = []
    for part in data["parts"]:
        causes = root_line(part["causes"]) or ("identical" if part["identical"] else "data only")
        a, b = part["a"]["size"], part["b"]["size"]
        rows.append(
            row(
                [
                    (esc(part["part"]), 0),
                    (esc(page_name(part["b"]["path"])), 0),
                    (size_span(a), 1),
                    (size_span(b), 1),
                    (size_span(b - a, signed=True), 1),
                    (esc(causes), 0),
                ]
            )
        )
    sizes = data.get("unpaired_sizes") or {"a": [], "b": []}
    for p, n in zip(data["unpaired_a"], sizes["a"]):
        cells = [(esc(page_name(p)), 0), ("(none)", 0), (size_span(n), 1), ("", 1), ("", 1), ("unpaired", 0)]
        rows.append(row(cells))
    for p, n in zip(data["unpaired_b"], sizes["b"]):
        cells = [("(none)", 0), (esc(page_name(p)), 0), ("", 1), (size_span(n), 1), ("", 1), ("unpaired", 0)]
        rows.append(row(cells))
    delta = size_span(data["size_delta"], signed=True)
    rows.append(
        row(
            [
                ("set total", 0),
                ("", 0),
                (size_span(data["a_total"]), 1),
                (size_span(data["b_total"]), 1),
                (delta, 1),
                (esc(root_line(data["causes"])), 0),
            ],
            "th",
        )
    )
    totals = "<h3>The set, part by part</h3>" + scroll_table(
        "<tr><th>candidate part</th><th>reference part</th><th>candidate</th><th>reference</th>"
        f"<th>change</th><th>root causes</th></tr>{''.join(rows)}"
    )
    draw = embed.Charts()
    seen: dict[str, str] = {}  # the parts' strings (region names, causes) escaped once for the page
    counted: list = []  # and their op lists counted once: each part's builds share their graphs
    effects = {"parts": [{"part": p["part"], "attribution": p.get("attribution")} for p in data["parts"]]}
    moved = any(p.get("attribution") for p in data["parts"])  # no chart of nothing across identical parts
    across = draw([charts.set_effects(_escaped(effects, seen))]) if moved else ""  # all it reads
    sections = []
    for part in data["parts"]:
        pa, pb = part["part"], page_name(part["b"]["path"])
        sections.append(
            f"<hr><h2>{esc(pa)} vs {esc(pb)}</h2>"
            + _verdict(part, data).replace("<h2>", "<h3>").replace("</h2>", "</h3>")
            + f"<p>{esc(part['a']['path'])} vs {esc(part['b']['path'])}:"
            + f" {esc(size_change(part['a']['size'], part['b']['size']))}</p>"
            + causes_table(part["causes"])
            + structure_section(part)
            + _attribution(part)
            + fixes_list(part["suggestions"], data)
            + draw(_figures(part, seen, counted))
        )
    ra, rb = set_root(data, "a"), set_root(data, "b")
    na, nb = len(data["parts"]) + len(data["unpaired_a"]), len(data["parts"]) + len(data["unpaired_b"])
    body = (
        _verdict(data).replace("Root cause:", "Root causes over the set:")
        + f"<p>q9diff: candidate {esc(ra)} vs reference {esc(rb)}</p>"
        + f"<p>{na} vs {nb} parts, {esc(size_change(data['a_total'], data['b_total']))}</p>"
        + totals
        + fixes_list(data["suggestions"], data, over_set=True)
        + load_section(data)
        + across
        + "".join(sections)
    )
    return wrap_page(f"q9diff set diff {page_name(ra)} vs {page_name(rb)}", body)
