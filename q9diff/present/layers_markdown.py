"""The Markdown report of `q9diff layers` (CI summaries, pull-request comments), from `q9diff.layers/1`: the
verdict, the rule, what ran where, and per graph the tensors around the first divergence (every tensor
measured in a folded section), the compiles and the tensors with no tap."""

from __future__ import annotations

from q9diff.present.markdown import md
from q9diff.present.terminal_layers import (
    TERMS,
    cos,
    db,
    encodings_lines,
    graph_line,
    next_line,
    rows_shown,
    verdict_line,
)


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _rows(g, rows) -> str:
    fd = g.first_divergence
    out = []
    for r in rows:
        f = r.figures
        mark = "**>**" if fd is not None and r.tensor == fd.tensor else ""
        cells = (
            ["-"] * 4
            if f is None
            else [
                db(f.sqnr_db),
                f.own(),
                cos(f.cosine),
                f"{f.max_abs:.3g}",
            ]
        )
        out.append([mark, str(r.order), md(r.tensor), md(f"{r.node} ({r.op})"), *cells])
    return _table(["", "#", "tensor", "node (op)", "SQNR dB", "own dB (nodes)", "cosine", "max abs"], out)


def render_layers(res) -> str:
    status = "divergence" if res.first_divergence is not None else "no divergence"
    out = f"## q9diff layers: {status}\n\n**{md(verdict_line(res))}**\n\n"
    nxt = next_line(res)
    out += f"{md(nxt)}\n\n" if nxt else ""
    out += f"Rule: {md(res.rule.sentence())} (measured on {md(res.rule.measured_on)}).\n\n"
    out += f"- **candidate**: {md(res.candidate)} on the {md(res.runs['candidate'])}\n"
    out += f"- **reference**: {md(res.reference)} on {md(res.runs['reference'])}\n"
    cached = sum(c.cached for c in res.compiles)
    out += f"- {len(res.compiles)} compiles ({cached} cached), {res.seconds:.0f} s\n"
    for g in res.graphs:
        out += f"\n### {md(graph_line(g))}\n\ninputs: {md(g.inputs['detail'])}\n\n"
        if g.rows:
            out += _rows(g, rows_shown(g))
            out += (
                "\n<details><summary>every tensor measured</summary>\n\n"
                + _rows(g, g.rows)
                + "\n</details>\n"
            )
        for c in g.compiles:
            vs = c.vs_untapped
            line = f"- {md(c.side)} {md(c.label)}: {c.taps} taps, {c.size:,} B" + (
                ", cached" if c.cached else ""
            )
            if vs is not None:
                (a, b), (oa, ob) = vs["size"], vs["ops"]
                line += f"; vs untapped {a:,} → {b:,} B, ops {oa} → {ob}"
            out += line + "\n"
        if g.untapped:
            out += (
                "- no tap: "
                + ", ".join(f"{md(u.tensor)} → {md(u.stand_in or 'none')}" for u in g.untapped)
                + "\n"
            )
        out += "".join(f"- {md(line)}\n" for line in encodings_lines(g))
        out += "".join(f"- note: {md(n)}\n" for n in g.notes)
    out += "\n" + "".join(f"- {md(n)}\n" for n in res.notes)
    return out + f"\n{md(TERMS)}\n"
