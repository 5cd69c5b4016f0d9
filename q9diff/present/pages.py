"""The simple pages: `inspect --html`, `steps --html` and `--target` alone (q9diff.target/1), tables over
the same JSON the commands print, on the report page of q9diff.present.html (its style; no charts, so a
page is a few kilobytes and needs nothing to load). Kept apart from html.py, which holds the diff and
verify reports."""

from __future__ import annotations

from q9diff.format.tables import soc_name
from q9diff.present.html import _causes_table, _e, _fixes, _page, _size
from q9diff.units import opt_level, percent_text, vtcm


def _table(head: list[str], rows: list[list[tuple[str, bool]]]) -> str:
    """A table of (cell html, is a number) rows; cells are already escaped or built from numbers."""
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if n else ''}>{c}</td>" for c, n in row) + "</tr>" for row in rows
    )
    return f"<table class='c'><tr>{th}</tr>{body}</table>"


def _one(s: dict) -> str:
    """One context (q9diff.inspect/1): what built it, its target, its graphs' settings, every region."""
    t = s["target"]
    req = t["soc_model_requested"]
    soc = "not recorded" if req is None else f"{req} ({soc_name(req)})"
    arch = f"v{s['dsp_arch']}" if s["dsp_arch"] else "not recorded"
    warn = (
        '<p class="warn">Generic target (soc_model 0): it loads everywhere and may compute garbage on the'
        " device.</p>"
        if t["generic_target"]
        else ""
    )
    graphs = [
        [
            (_e(g["name"]), False),
            (f"{len(g['inputs'])} / {len(g['outputs'])} / {len(g['ops'])}", True),
            (_e(vtcm(g["vtcm_size"])), True),
            (_e(opt_level(g["optimization_level"], g["options"].get("O"))), False),
            (_e(g["num_hvx_threads"]), True),
            ("unknown" if g["spill_fill_buffer_size"] is None else _size(g["spill_fill_buffer_size"]), True),
            ("unknown" if g["const_size"] is None else _size(g["const_size"]), True),
        ]
        for g in s["graphs"]
    ]
    regions = [
        [(_e(r["name"]), False), (f"{r['offset']:#x}", True), (_size(r["size"]), True),
         (f"{100 * r['size'] / s['size']:.1f}", True)]
        for r in s["regions"]
    ]  # fmt: skip
    unknown = "".join(f"<li>{_e(k)}: {_e(why)}</li>" for k, why in s["unknown"].items())
    head = ["graph", "inputs / outputs / ops", "vtcm_size", "optimization_level", "hvx_threads"]
    return (
        f"<h2>{_e(s['path'])}: {_size(s['size'])}</h2>{warn}"
        f"<p>QAIRT build {_e(s['build_id'])} · blob {_e(s['context_blob_version'])} · target soc_model"
        f" {_e(soc)}, dsp_arch {_e(arch)} — {_e('; '.join(t['evidence']))}</p>"
        + _table([*head, "spill_fill", "const"], graphs)
        + (f"<h3>Not recorded in the file</h3><ul>{unknown}</ul>" if unknown else "")
        + "<h3>Regions (every byte)</h3>"
        + _table(["region", "offset", "size", "%"], regions)
    )


def render_inspect(summaries: list[dict]) -> str:
    """`inspect --html`: each context of the file, as the terminal shows it."""
    name = summaries[0]["path"] if len(summaries) == 1 else f"{len(summaries)} contexts"
    return _page(f"q9diff inspect: {name}", "".join(_one(s) for s in summaries))


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
                (_e(f"+ {st['label']}" if st["label"] else "candidate's recipe"), False),
                (_size(st["size"]), True),
                (f"{_size(delta, signed=True)} ({_e(pct)})" if pct else _size(delta, signed=True), True),
                (_size(st["changed_vs_reference"]), True),
                (_size(st["moved"]), True),
                (_size(st["new"]), True),
                (_e(st["identical_to"] or ""), False),
            ]
        )
    head = ["#", "settings added", "size", "Δ vs reference", "changed", "moved", "new", "same as"]
    body = (
        f"<h2>Steps from {_e(data['candidate'])} to {_e(data['reference'])}</h2>"
        "<p>The candidate's recipe rebuilt with the root-cause settings added one at a time, in the stated"
        f" order ({_e(', '.join(data['order']))}); changed, moved and new bytes against the reference.</p>"
        + _table(head, rows)
    )
    return _page("q9diff steps", body)


def render_target(data: dict) -> str:
    """A build judged against a device with no reference (q9diff.target/1): the device and AI Hub's
    profile, the causes and the fix, what each part settles and leaves unknown, what needs a reference."""
    from q9diff.present.verdict import GENERIC_SOC, root_line

    t = data["target"]
    verdict = (
        "Every setting the target determines matches it."
        if data["matches"]
        else f"Root causes against {t['name']}: {root_line(data['causes'])}"
    )
    generic = any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"])
    body = (
        f"<h1>q9diff --target {_e(t['name'])}</h1>"
        + (f'<p class="warn">{_e(GENERIC_SOC)}</p>' if generic else "")
        + f"<h2>{_e(verdict)}</h2><p>{_e(data['profile']['sentence'])}</p>"
        + "".join(f'<p class="warn">error: {_e(e)}</p>' for e in data["errors"])
        + _causes_table(data["causes"])
        + _fixes(data["suggestions"])
    )
    for part in data["parts"]:
        items = [f"as the target: {s}" for s in part["settled"]] + [f"unknown: {u}" for u in part["unknown"]]
        body += f"<h3>{_e(part['part'])}</h3><ul>" + "".join(f"<li>{_e(x)}</li>" for x in items) + "</ul>"
    body += f"<p>Needs --reference: {_e('; '.join(data['needs_reference']))}</p>"
    from q9diff.present.html import load_section

    body += load_section(data)
    return _page(f"q9diff --target {t['name']}: {'matches' if data['matches'] else 'differs'}", body)
