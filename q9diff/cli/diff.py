"""`q9diff diff` (and the main form `q9diff A B`): the terminal view of a diff, for two files or two sets."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    CANDIDATE,
    REFERENCE,
    _busy,
    _Command,
    _diff_sets,
    _fail,
    _flag,
    _inputs,
    _is_set,
    _note,
    _open_pair,
    _print_json,
    _print_packing,
    _print_suggestions,
    _report_path,
    _swapped,
    _t,
    _wrote,
    app,
    console,
)


@app.command("diff", cls=_Command, short_help="Why CANDIDATE differs from REFERENCE (the main form).")
def diff_cmd(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    as_json: bool = _flag("--json", "print the q9diff.diff/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report to this file"
    ),
) -> None:
    """Why CANDIDATE differs from the known-good REFERENCE, and what to change.

    `q9diff A B` is short for `q9diff diff A B`.

    \b
    Exit status: 0 identical, 1 different, 2 error."""
    _report_path(html_out, [candidate, reference])
    candidate, reference = _inputs(candidate, reference)
    if _is_set(candidate):
        _set_diff(candidate, reference, as_json, html_out)
    res = _open_pair(candidate, reference)
    from q9diff.compare.diff import to_json

    swapped = _swapped(candidate, reference, res.causes, "", ([res.a], [res.b]))
    if swapped:
        _note(f"warning: {swapped}")
    if html_out is not None:
        from q9diff.build.recipe import write_atomic
        from q9diff.present.html import render

        with _busy(f"writing {html_out}", as_json):
            write_atomic(html_out, render(res))
    if as_json:
        _print_json(to_json(res))
    else:
        _print_diff(res)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
    raise typer.Exit(0 if res.identical else 1)


def _set_diff(a: Path, b: Path, as_json: bool, html_out: Path | None = None) -> None:
    from q9diff.compare.diff import set_to_json

    along: dict | None = {} if html_out is not None else None
    sd = _diff_sets(a, b, quiet=as_json, along=along)
    if not sd.pairs and not sd.unpaired_a and not sd.unpaired_b:
        _fail(f"{a} / {b}: no context binaries (*.bin or genie_config.json ctx-bins) found")
    data = set_to_json(sd)
    from q9diff.present.verdict import sides

    swapped = _swapped(a, b, data["causes"], "", sides(data))
    if swapped:
        _note(f"warning: {swapped}")
    if html_out is not None:
        from q9diff.build.recipe import write_atomic
        from q9diff.present.html import render_set

        with _busy(f"writing {html_out}", as_json):
            write_atomic(html_out, render_set(sd, data, along))
    if as_json:
        _print_json(data)
        if html_out is not None:
            _note(f"wrote the HTML report: {html_out}")
        raise typer.Exit(0 if sd.identical else 1)
    from q9diff.present.verdict import models_line, root_line

    lead = models_line(data.get("different_models", {}).get("evidence"))
    if lead:
        console.print(_t((lead, "bold")))
    label = "Settings that differ over the set" if lead else "Root causes over the set"
    console.print(_t((f"{label}: {root_line(data['causes']) or 'none'}", "bold")))
    console.print(
        f"set: {len(sd.pairs) + len(sd.unpaired_a)} vs {len(sd.pairs) + len(sd.unpaired_b)} parts,"
        f" {data['a_total']} → {data['b_total']} bytes ({data['size_delta']:+d})"
    )
    for pa, pb, r in sd.pairs:
        console.rule(_t(f"{pa.name} vs {pb.name}"))
        _print_diff(r)
    for p in sd.unpaired_a + sd.unpaired_b:
        console.print(_t(("unpaired part", "red"), f": {p}"))
    if html_out is not None:
        _wrote(html_out, "the HTML report")
    raise typer.Exit(0 if sd.identical else 1)


def _print_diff(res) -> None:
    from rich.table import Table

    from q9diff.compare.attribution import estimate_note
    from q9diff.compare.models import NOT_MEANINGFUL
    from q9diff.present.verdict import models_line, root_line, soc_note, warnings

    a, b = res.a, res.b
    if res.identical:
        console.print("Identical: no difference in any byte.")
        return
    lead = models_line(res.different_models)
    if lead:
        console.print(_t((lead, "bold")))
    if root_line(res.causes):
        extra = f" ({soc_note(res.causes)})" if soc_note(res.causes) else ""
        label = "Settings that differ" if lead else "Root cause"
        console.print(_t((f"{label}: {root_line(res.causes)}{extra}", "bold")))
    else:
        none = "No setting differs." if lead else "No setting differs; only effects or data."
        console.print(_t((none, "bold")))
    for w in warnings(res.causes):
        console.print(_t((w, "bold red")))
    console.print(f"size: {a.size} → {b.size} bytes ({b.size - a.size:+d})")
    from q9diff.compare.diff import to_json

    data = to_json(res)  # computed while both files were mapped (a set releases them once compared)
    for side, key in (("candidate ", "a"), ("reference ", "b")):
        _print_packing(side, data[key].get("packing"))
    _print_causes(res.causes)
    if lead:  # bytes of two models' builds: no setting explains them
        console.print(_t(("Fix (settings only)", "bold")))
        _print_suggestions(res.suggestions)
        console.print(_t(f"byte attribution: {NOT_MEANINGFUL} (`q9diff inspect` maps each file's own bytes)"))
        return
    _print_attribution(res)
    console.print(_t(("Fix", "bold")))
    _print_suggestions(res.suggestions)
    graphs = [g.name for g in a.graphs]
    if any(r["name"].startswith("PICKLE[") for r in res.regions if r["delta"] or r["changed_bytes"]):
        named = ", ".join(f"PICKLE[{i}] is graph {n}" for i, n in enumerate(graphs))
        console.print(_t(f"regions that changed (every byte of both files; {named}):"))
    else:
        console.print("regions that changed (every byte of both files):")
    rt = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, header_style="bold")
    for col in ("region", "candidate", "reference", "delta", "changed", "moved", "new"):
        left = col == "region"
        rt.add_column(col, justify="left" if left else "right", no_wrap=not left, overflow="fold")
    part = None
    for r in res.regions:
        if not (r["delta"] or r["changed_bytes"]):
            continue
        # One heading per graph's pickle: `PICKLE[0]/inner/op_list` shows as `  inner/op_list` below
        # `PICKLE[0]`, so the names fit 80 columns whole.
        head, _, rest = r["name"].partition("/")
        if head.startswith("PICKLE[") and rest:
            if head != part:
                rt.add_row(_t(head))
            part, name = head, "  " + rest
        else:
            part, name = None, r["name"]
        about = "~" if "moved_estimate" in r else ""
        rt.add_row(
            _t(name),
            str(r["a_size"]),
            str(r["b_size"]),
            f"{r['delta']:+d}",
            str(r["changed_bytes"]),
            f"{about}{r['moved_bytes']}",
            f"{about}{r['new_bytes']}",
        )
    about = "~" if estimate_note(res.regions) else ""
    rt.add_row(
        "total",
        str(a.size),
        str(b.size),
        f"{b.size - a.size:+d}",
        str(sum(r["changed_bytes"] for r in res.regions)),
        f"{about}{sum(r['moved_bytes'] for r in res.regions)}",
        f"{about}{sum(r['new_bytes'] for r in res.regions)}",
        end_section=False,
    )
    console.print(rt)
    if about:
        console.print(_t(estimate_note(res.regions)))


def _print_attribution(res) -> None:
    """Every changed byte and byte of size delta in one row; the rows add up to the totals."""
    from rich.table import Table

    if res.weights_verdict:
        console.print(_t((res.weights_verdict, "bold")))
    at = Table(title="where the changed bytes went (rows add up)")
    for col in ("effect", "changed bytes", "size delta"):
        at.add_column(col, justify="left" if col == "effect" else "right")
    for row in res.attribution:
        about = "~" if row.get("estimated") else ""
        at.add_row(_t(row["bucket"]), f"{about}{row['changed_bytes']}", f"{row['size_delta']:+d}")
    at.add_row(
        "total",
        str(sum(r["changed_bytes"] for r in res.attribution)),
        f"{sum(r['size_delta'] for r in res.attribution):+d}",
    )
    console.print(at)


def _cause_values(c) -> tuple[str, str]:
    if c.name == "compiler_options":  # a and b are both the count of options that differ
        return f"{c.a} options differ", ""
    return _cell(c.a), _cell(c.b)


def _print_causes(causes) -> None:
    """A table on a wide terminal; on a narrow one, each cause on a line and its evidence below it,
    wrapped at word boundaries (a table's evidence column would be a few characters wide)."""
    import textwrap

    from rich.table import Table

    if console.width < 120:
        console.print(_t(("causes", "bold")))
        for c in causes:
            ca, cb = _cause_values(c)
            change = ca if c.name == "compiler_options" else f"{ca} → {cb}"
            nbytes = "" if c.bytes is None else f", {c.bytes} bytes"
            console.print(_t("  ", (c.name, "bold"), f" ({c.role}): {change}{nbytes}"))
            evidence = _clip("; ".join(c.evidence), 400)
            for line in textwrap.wrap(
                evidence, console.width - 6, break_long_words=False, break_on_hyphens=False
            ):
                console.print(_t(f"      {line}"), soft_wrap=True)
        return
    t = Table(title="causes")
    t.add_column("cause", no_wrap=True)
    t.add_column("role", no_wrap=True)
    t.add_column("candidate", overflow="fold")
    t.add_column("reference", overflow="fold")
    t.add_column("bytes", justify="right", no_wrap=True)
    t.add_column("evidence", ratio=1)
    for c in causes:
        ca, cb = _cause_values(c)
        nbytes = "" if c.bytes is None else str(c.bytes)
        t.add_row(_t(c.name), _t(c.role), _t(ca), _t(cb), nbytes, _t(_clip("; ".join(c.evidence), 400)))
    console.print(t)


def _clip(s: str, n: int) -> str:
    """At most n characters, cut at a word boundary with an ellipsis, never mid-word."""
    if len(s) <= n:
        return s
    cut = s[: n - 1]
    space = max(cut.rfind(" "), cut.rfind(","))
    return (cut[:space] if space > n // 2 else cut).rstrip(" ,;") + " …"


def _cell(v) -> str:
    s = str(v)
    return s if len(s) <= 30 else s[:29] + "…"
