"""The simple pages: `inspect --html`, `steps --html` and `--target` alone (q9diff.target/1), tables over
the same JSON the commands print, on the report page of q9diff.present.html (its style; no charts, so a
page is a few kilobytes and needs nothing to load). Kept apart from html.py, which holds the diff and
verify reports."""

from __future__ import annotations

from q9diff.present.html import (
    causes_table,
    esc,
    fixes_list,
    load_section,
    refusal_banner,
    scroll_table,
    size_span,
    wrap_page,
)
from q9diff.present.verdict import generic_soc, refused, root_line, target_words
from q9diff.units import opt_level, percent_text, vtcm

MAX_ROWS = 200  # rows of a table (regions, delegates); past it one line counts the rest


def _more(items: list, what: str) -> str:
    """After a table cut at MAX_ROWS: how many rows were left out, and where they all are."""
    left = len(items) - MAX_ROWS
    return f"<p>... {left:,d} more {what} (inspect --json lists every one)</p>" if left > 0 else ""


def _table(head: list[str], rows: list[list[tuple[str, bool]]]) -> str:
    """A table of (cell html, is a number) rows; cells are already escaped or built from numbers."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if n else ''}>{c}</td>" for c, n in row) + "</tr>" for row in rows
    )
    return scroll_table(f"<tr>{th}</tr>{body}")  # wider than a phone: it scrolls in its own box


def _one(s: dict) -> str:
    """One context (q9diff.inspect/1): what built it, its target, its graphs' settings, every region."""
    t = s["target"]
    warn = (
        '<p class="warn">Generic target (soc_model 0): it loads everywhere and may compute garbage on the'
        " device.</p>"
        if t["generic_target"]
        else ""
    )
    graphs = [
        [
            (esc(g["name"]), False),
            (f"{len(g['inputs'])} / {len(g['outputs'])} / {len(g['ops'])}", True),
            (esc(vtcm(g["vtcm_size"])), True),
            (esc(opt_level(g["optimization_level"], g["options"].get("O"))), False),
            (esc(g["num_hvx_threads"]), True),
            (
                "unknown" if g["spill_fill_buffer_size"] is None else size_span(g["spill_fill_buffer_size"]),
                True,
            ),
            ("unknown" if g["const_size"] is None else size_span(g["const_size"]), True),
        ]
        for g in s["graphs"]
    ]
    regions = [
        [(esc(r["name"]), False), (f"{r['offset']:#x}", True), (size_span(r["size"]), True),
         (f"{100 * r['size'] / s['size']:.1f}", True)]
        for r in s["regions"][:MAX_ROWS]
    ]  # fmt: skip
    unknown = "".join(f"<li>{esc(k)}: {esc(why)}</li>" for k, why in s["unknown"].items())
    head = ["graph", "inputs / outputs / ops", "vtcm_size", "optimization_level", "hvx_threads"]
    return (
        f"<h2>{esc(s['path'])}: {size_span(s['size'])}</h2>{warn}"
        f"<p>QAIRT build {esc(s['build_id'])} · blob {esc(s['context_blob_version'])} · target"
        f" {esc(target_words(t, s['dsp_arch']))} — {esc('; '.join(t['evidence']))}</p>"
        + _table([*head, "spill_fill", "const"], graphs)
        + (f"<h3>Not recorded in the file</h3><ul>{unknown}</ul>" if unknown else "")
        + "<h3>Regions (every byte)</h3>"
        + _table(["region", "offset", "size", "%"], regions)
        + _more(s["regions"], "regions")
    )


def render_inspect(summaries: list[dict], container: dict | None = None) -> str:
    """`inspect --html`: each context of the file, as the terminal shows it (an ExecuTorch .pte's own
    regions and delegates first)."""
    name = summaries[0]["path"] if len(summaries) == 1 else f"{len(summaries)} contexts"
    head = _container(container) if container else ""
    return wrap_page(f"q9diff inspect: {name}", head + "".join(_one(s) for s in summaries))


def _container(c: dict) -> str:
    """An ExecuTorch .pte around its contexts (q9diff.compare.container): every delegate, what its compile
    spec disagrees with, every region of the file."""
    rows = [
        [(esc(d["method"]), False), (str(d["position"]), True), (esc(d["backend"]), False),
         (esc(f"{d['location']} {d['index']}"), False), (esc(d["context"] or "not read"), False),
         (esc("; ".join(d.get("compile_spec_findings", [])) or "-"), False)]
        for d in c["delegates"][:MAX_ROWS]
    ]  # fmt: skip
    regions = [
        [(esc(r["name"]), False), (f"{r['offset']:#x}", True), (size_span(r["size"]), True)]
        for r in c["regions"][:MAX_ROWS]
    ]
    notes = "".join(f"<li>{esc(n)}</li>" for n in c["notes"])
    return (
        f"<h2>{esc(c['path'])}: ExecuTorch program, {size_span(c['size'])}</h2>"
        + _table(["method", "#", "backend", "data", "context", "compile spec vs binary"], rows)
        + _more(c["delegates"], "delegates")
        + (f"<ul>{notes}</ul>" if notes else "")
        + "<h3>Regions of the .pte (every byte)</h3>"
        + _table(["region", "offset", "size"], regions)
        + _more(c["regions"], "regions")
    )


def render_steps(data: dict) -> str:
    """`steps --html`: the seed's table (q9diff.steps/1), sizes in human units with the exact bytes on
    hover, each Δ with its percentage of the reference's size."""
    rows = []
    for i, st in enumerate(data["steps"]):
        delta = st["delta_vs_reference"]
        pct = percent_text(delta, st["size"] - delta)
        rows.append(
            [
                (str(i), True),
                (esc(f"+ {st['label']}" if st["label"] else "candidate's recipe"), False),
                (size_span(st["size"]), True),
                (size_span(delta, signed=True) + (f" ({esc(pct)})" if pct else ""), True),
                (size_span(st["changed_vs_reference"]), True),
                (size_span(st["moved"]), True),
                (size_span(st["new"]), True),
                (esc(st["identical_to"] or ""), False),
            ]
        )
    head = ["#", "settings added", "size", "Δ vs reference", "changed", "moved", "new", "same as"]
    body = (
        f"<h2>Steps from {esc(data['candidate'])} to {esc(data['reference'])}</h2>"
        "<p>The candidate's recipe rebuilt with the root-cause settings added one at a time, in the stated"
        f" order ({esc(', '.join(data['order']))}); changed, moved and new bytes against the reference.</p>"
        + _table(head, rows)
    )
    return wrap_page("q9diff steps", body)


def render_target(data: dict) -> str:
    """A build judged against a device with no reference (q9diff.target/1): the device and AI Hub's
    profile, the causes and the fix, what each part settles and leaves unknown, what needs a reference."""
    t = data["target"]
    verdict = (
        "Every setting the target determines matches it."
        if data["matches"]
        else f"Root causes against {t['name']}: {root_line(data['causes'])}"
    )
    generic = any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"])
    body = (
        f"<h1>q9diff --target {esc(t['name'])}</h1>"
        + refusal_banner(data.get("load"))
        + (f'<p class="warn">{esc(generic_soc(t["soc_model"], refused(data.get("load"))))}</p>' * generic)
        + f"<h2>{esc(verdict)}</h2><p>{esc(data['profile']['sentence'])}</p>"
        + "".join(f'<p class="warn">error: {esc(e)}</p>' for e in data["errors"])
        + causes_table(data["causes"], ("build", t["name"]))
        + fixes_list(data["suggestions"], data)
    )
    for part in data["parts"]:
        items = [f"as the target: {s}" for s in part["settled"]] + [f"unknown: {u}" for u in part["unknown"]]
        body += f"<h3>{esc(part['part'])}</h3><ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
    body += f"<p>Needs --reference: {esc('; '.join(data['needs_reference']))}</p>"
    body += load_section(data)
    return wrap_page(f"q9diff --target {t['name']}: {'matches' if data['matches'] else 'differs'}", body)


def render_load(load: dict) -> str:
    """Will it load (the `load` of a diff's or a target's JSON) on a page of its own: the Python API's
    `will_load` result, drawn as the reports draw that section."""
    return wrap_page(
        f"q9diff: {load['verdict']}", "<h1>q9diff: will it load</h1>" + load_section({"load": load})
    )
