"""`q9diff diff` (and the main form `q9diff A B`): the terminal view of a diff, for two files or two sets."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import typer

from q9diff.cli import target as tg
from q9diff.cli.common import (
    CANDIDATE,
    MARKDOWN,
    _as_saved,
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
    app,
    console,
    said,
    stdout_once,
    write_reports,
)
from q9diff.cli.target import RUNTIME, TARGET

REFERENCE = typer.Argument(
    None, metavar="REFERENCE", help="the known-good build, the same kind (or name the device with --target)"
)


@app.command("diff", cls=_Command, short_help="Why CANDIDATE differs from REFERENCE (the main form).")
def diff_cmd(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    verbose: bool = _flag(
        "--verbose", "also each cause's evidence, where the changed bytes went, every region, each part", "-v"
    ),
    brief: bool = _flag("--brief", "print nothing, only the exit status (like cmp -s)", "-q"),
    as_json: bool = _flag("--json", "print the q9diff.diff/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report to this file"
    ),
    md_out: Path = MARKDOWN,
    target: str = TARGET,
    runtime: str = RUNTIME,
) -> None:
    """Why CANDIDATE differs from the known-good REFERENCE, and what to change.

    `q9diff A B` is short for `q9diff diff A B`. By default: the verdict, the sizes, the causes and
    one fix; --verbose adds the evidence and the region tables, --json has everything; `q9diff report`
    shows a saved --json again. Without a reference, `q9diff A --target DEVICE` judges every setting
    the device determines against what AI Hub's builds for it use.

    \b
    Exit status: 0 identical, 1 different, 2 error.
    With --target alone: 0 every setting as the target's, 1 one is not.
    A reference built for another device than --target: 1."""
    device = tg.device_or_fail(target) if target is not None else None
    qairt = tg.runtime_or_fail(runtime) if runtime is not None else None
    _report_path(html_out, [candidate, reference])
    if md_out is not None and str(md_out) != "-":
        _report_path(md_out, [candidate, reference], "--markdown")
    stdout_once(as_json, md_out, html_out)
    if html_out is not None:  # plotly.js packed (0.13 s of deflate) while the diff runs, not after it
        from q9diff.present import charts

        charts.start_packing()
    out = Outputs(as_json, html_out, md_out, verbose, brief)
    if reference is None:
        tg.no_reference(candidate, reference, device if device is not None else qairt)
        if device is None:
            _fail("--runtime alone judges a build against a runtime: q9diff doctor CANDIDATE --runtime V")
        data = tg.judged(candidate, device)
        load = tg.load_verdicts(candidate, device, qairt)
        data |= {"load": load} if load else {}

        def show() -> None:
            tg.print_target(data)
            tg.print_load(load)

        _deliver(out, data, show, 0 if data["matches"] and not _refused(load) else 1)
    candidate, reference = _inputs(candidate, reference)
    findings = tg.reference_findings(reference, device) if device is not None else []
    for f in findings:
        _note(f"warning: {f}")
    load = tg.load_verdicts(candidate, device, qairt)
    try:
        aimed = {"target": {"name": device.name, "reference_findings": findings}} if device else {}
        _compare(candidate, reference, out, aimed | ({"load": load} if load else {}))
    except typer.Exit as done:
        worse = findings or _refused(load)
        raise typer.Exit(1 if worse and done.exit_code == 0 else done.exit_code) from None


def _refused(load: dict | None) -> bool:
    """A part of the candidate will not load on the runtime or device named."""
    return load is not None and load["verdict"] == "will not load"


def _compare(candidate: Path, reference: Path, out: Outputs, aimed: dict) -> None:
    """`aimed`: the --target given beside the reference and what it found, kept in the saved result."""
    if _is_set(candidate):
        _set_diff(candidate, reference, out, aimed)
    res = _open_pair(candidate, reference)
    from q9diff.compare.diff import to_json

    swapped = _swapped(candidate, reference, res.causes, "", ([res.a], [res.b]))
    if swapped:
        _note(f"warning: {swapped}")
    data = to_json(res) | aimed

    def show() -> None:
        show_pair(res, out.verbose)
        tg.print_load(data.get("load"))

    _deliver(out, data, show, 0 if res.identical else 1)


@dataclass(frozen=True)
class Outputs:
    """Where a diff goes: JSON or the terminal view on stdout, the HTML and Markdown reports."""

    as_json: bool
    html_out: Path | None
    md_out: Path | None
    verbose: bool
    brief: bool  # -q: nothing printed, the exit status only


def _deliver(out: Outputs, data: dict, show, code: int) -> None:
    """Write the reports from the saved form of `data`, print the JSON or `show()` the terminal view,
    say what was written, and leave with `code`."""
    quiet = out.as_json or out.brief
    if out.html_out is not None or out.md_out is not None:  # the saved form only where a report needs it
        with _busy(f"writing {out.html_out or out.md_out}", quiet or out.html_out is None):
            write_reports(_as_saved(data), out.html_out, out.md_out)
    to_stdout = out.as_json or _md_stdout(out.md_out)
    if out.as_json:
        _print_json(data)
    elif not out.brief and not to_stdout:
        show()
    if not out.brief:
        said(out.html_out, out.md_out, to_stdout)
    raise typer.Exit(code)


def show_pair(res, verbose: bool = False) -> None:
    """One pair's terminal view: verdict, sizes, causes, the fix (also `q9diff report` of a saved diff)."""
    _print_diff(res, verbose)
    if not res.identical:
        _fix(res.suggestions, "Fix (settings only)" if res.different_models else "Fix")
        _more(verbose)


def _md_stdout(md_out: Path | None) -> bool:
    return md_out is not None and str(md_out) == "-"


def _more(verbose: bool) -> None:
    if not verbose:
        console.print("more: --verbose (evidence, where the bytes went, every region), --json (all)")


def _fix(suggestions: list[dict], heading: str = "Fix") -> None:
    console.print(_t((heading, "bold")))
    _print_suggestions(suggestions)


def _set_diff(a: Path, b: Path, out: Outputs, aimed: dict) -> None:
    from q9diff.compare.diff import set_to_json

    sd = _diff_sets(a, b, quiet=out.as_json or out.brief)
    if not sd.pairs and not sd.unpaired_a and not sd.unpaired_b:
        _fail(f"{a} / {b}: no context binaries (*.bin or genie_config.json ctx-bins) found")
    data = set_to_json(sd) | aimed
    from q9diff.present.verdict import sides

    swapped = _swapped(a, b, data["causes"], "", sides(data))
    if swapped:
        _note(f"warning: {swapped}")

    def show() -> None:
        print_set(sd, data, out.verbose)
        tg.print_load(data.get("load"))

    _deliver(out, data, show, 0 if sd.identical else 1)


def print_set(sd, data: dict, verbose: bool = False) -> None:
    """The set's verdict, its sizes part by part, its causes and one fix when every part needs the same;
    with `verbose` each part's own report between the causes and the fix."""
    from q9diff.present.verdict import models_line, root_line, soc_note, warnings
    from q9diff.units import sizes

    n_a, n_b = len(sd.pairs) + len(sd.unpaired_a), len(sd.pairs) + len(sd.unpaired_b)
    if sd.identical:
        console.print(f"Identical: no difference in any byte of the {n_a} parts.")
        return
    lead = models_line(data.get("different_models", {}).get("evidence"))
    if lead:
        console.print(_t((lead, "bold")))
    line = root_line(data["causes"])
    note = f" ({soc_note(data['causes'])})" if soc_note(data["causes"]) else ""
    label = "Settings that differ over the set" if lead else "Root causes over the set"
    console.print(_t((f"{label}: {line}{note}" if line else "No setting differs.", "bold")))
    for w in warnings(data["causes"]):
        console.print(_t((w, "bold red")))
    console.print(f"set: {n_a} vs {n_b} parts, {sizes(data['a_total'], data['b_total'])}")
    for pa, pb, r in sd.pairs:
        name = pa.name if pa.name == pb.name else f"{pa.name} vs {pb.name}"
        console.print(_t(f"  {name}: ", sizes(r.a.size, r.b.size) if not r.identical else "identical"))
    for p in sd.unpaired_a + sd.unpaired_b:
        console.print(_t(("  unpaired part", "red"), f": {p}"))
    _set_causes(sd, data)
    # The same settings and values in every part: one fix, its per-graph lines naming every part's graphs.
    parts = [[(s["setting"], s["value"]) for s in part["suggestions"]] for part in data["parts"]]
    agree = all(s == parts[0] for s in parts)
    if verbose:
        for pa, pb, r in sd.pairs:
            console.rule(_t(f"{pa.name} vs {pb.name}"))
            _print_diff(r, verbose=True)
            if not agree:
                _fix(r.suggestions, f"Fix for {pa.name}")
    if agree:
        _fix(data["suggestions"], "Fix (the same for every part)" if len(parts) > 1 else "Fix")
    elif not verbose:
        console.print(_t(("Fix: the parts need different changes, each its own", "bold")))
        for (pa, _, _r), part in zip(sd.pairs, data["parts"]):
            if part["suggestions"]:
                _fix(part["suggestions"], f"Fix for {pa.name}")
    _more(verbose)


def _set_causes(sd, data: dict) -> None:
    """The set's root causes with the parts they are found in, and the names of their effects."""
    from q9diff.present.verdict import change

    names = [part["part"] for part in data["parts"]]
    parts_of: dict[str, list[str]] = {}  # each part cause, by what it says, to the parts saying it
    for p in data["parts"]:
        for key in dict.fromkeys(_key(x) for x in p["causes"]):
            parts_of.setdefault(key, []).append(p["part"])
    console.print(_t(("causes", "bold")))
    for c in data["causes"]:
        if c["role"] != "root":
            continue
        found = parts_of.get(_key(c), [])
        where = "" if c["name"] == "split" or found == names else f" (in {', '.join(found)})"
        console.print(_t("  ", (c["name"], "bold"), f" (root): {change(c).split(' ', 1)[1]}{where}"))
    effects = list(dict.fromkeys(c["name"] for c in data["causes"] if c["role"] != "root"))
    if effects:
        console.print(_t(f"  effects: {', '.join(effects)}"))


def _key(c: dict) -> str:
    """What a cause says (its name and both values), as a key: comparing every set cause with every part
    cause was causes x parts x part causes of work on a saved result."""
    return json.dumps([c["name"], c["a"], c["b"]], sort_keys=True, default=str)


def _print_diff(res, verbose: bool = False) -> None:
    """One pair's verdict, size and causes; `verbose` adds evidence, the attribution and region tables."""
    from q9diff.compare.models import NOT_MEANINGFUL
    from q9diff.present.verdict import models_line, root_line, soc_note, warnings
    from q9diff.units import sizes

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
    console.print(f"size: {sizes(a.size, b.size)}")
    from q9diff.compare.diff import to_json

    data = to_json(res)  # computed while both files were mapped (a set releases them once compared)
    for side, key in (("candidate ", "a"), ("reference ", "b")):
        _print_packing(side, data[key].get("packing"))
    _print_causes(res.causes, verbose)
    if verbose and not res.structure.get("same", True):
        console.print(
            _t(("structure", "bold"), " (what the graphs hold and compute in, candidate → reference)")
        )
        for line in res.structure["words"]:
            console.print(_t(f"  - {line}"))
    for u in res.unknown:  # what neither a cause nor a fix may come from: said, not guessed
        console.print(_t(("not compared", "bold"), f" {u['setting']}: {u['why']}"))
    if res.weights_verdict:
        console.print(_t((res.weights_verdict, "bold")))
    if lead:  # bytes of two models' builds: no setting explains them
        console.print(_t(f"byte attribution: {NOT_MEANINGFUL} (`q9diff inspect` maps each file's own bytes)"))
        if verbose:
            _print_regions(res)
        return
    if verbose:
        _print_attribution(res)
        _print_regions(res)


def _print_regions(res) -> None:
    """Every changed region of both files (bloaty-style: the rows add up to the totals), in bytes."""
    from rich.table import Table

    from q9diff.compare.attribution import estimate_note

    a, b = res.a, res.b
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

    at = Table(title="where the changed bytes went (rows add up)")
    for col in ("effect", "changed bytes", "size delta"):
        at.add_column(col, justify="left" if col == "effect" else "right")
    for row in res.attribution:
        about = "~" if row.get("estimated") else ""
        at.add_row(_t(row["bucket"]), f"{about}{row['changed_bytes']:,d}", f"{row['size_delta']:+,d}")
    at.add_row(
        "total",
        f"{sum(r['changed_bytes'] for r in res.attribution):,d}",
        f"{sum(r['size_delta'] for r in res.attribution):+,d}",
    )
    console.print(at)


def _cause_values(c) -> tuple[str, str]:
    from q9diff.units import value

    if c.name == "compiler_options":  # a and b: each side's value of every option that differs
        return f"{len(set(c.a) | set(c.b))} options differ", ""
    return _cell(value(c.name, c.a)), _cell(value(c.name, c.b))


def _row_bytes(c) -> str:
    """An effect's two numbers, named as the attribution table names them (one number, one name)."""
    from q9diff.compare.diff import EFFECT_BUCKETS

    if c.size_delta is None:
        return f"{c.bytes:,d} bytes"
    row = EFFECT_BUCKETS.get(c.name, c.name)
    return f"{row} row: {c.bytes:,d} changed bytes, {c.size_delta:+,d} size delta"


def _print_causes(causes, verbose: bool = False) -> None:
    """Each cause on a line; `verbose` adds its evidence: below it, wrapped at word boundaries, on a
    narrow terminal, in a table's column on a wide one."""
    import textwrap

    from rich.table import Table

    if not verbose or console.width < 120:
        console.print(_t(("causes", "bold")))
        for c in causes:
            ca, cb = _cause_values(c)
            change = ca if c.name == "compiler_options" else f"{ca} → {cb}"
            console.print(_t("  ", (c.name, "bold"), f" ({c.role}): {change}"))
            if c.bytes is not None:
                console.print(_t(f"      {_row_bytes(c)}"))
            if not verbose:
                continue
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
    t.add_column("changed bytes", justify="right", no_wrap=True)
    t.add_column("size delta", justify="right", no_wrap=True)
    t.add_column("evidence", ratio=1)
    for c in causes:
        ca, cb = _cause_values(c)
        changed = "" if c.bytes is None else f"{c.bytes:,d}"
        delta = "" if c.size_delta is None else f"{c.size_delta:+,d}"
        evidence = _t(_clip("; ".join(c.evidence), 400))
        t.add_row(_t(c.name), _t(c.role), _t(ca), _t(cb), changed, delta, evidence)
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
