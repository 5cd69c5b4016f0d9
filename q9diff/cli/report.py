"""`q9diff report RESULT.json`: the terminal view, the HTML report or the Markdown of a saved result.

Every command that saves a result (`--json` of diff, a set diff, verify, doctor) draws its HTML and
Markdown from that same JSON (q9diff.present.reports), so a report drawn later from the saved file is the
same page, with the binaries and bundles gone, as diffoscope renders from its saved JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from q9diff.cli.common import (
    MARKDOWN,
    Command,
    CommandError,
    app,
    note,
    report_path,
    said,
    stdout_once,
    write_reports,
)
from q9diff.errors import InputError
from q9diff.present.terminal import console


@app.command(cls=Command, short_help="Show or render a saved --json result (HTML, Markdown).")
def report(
    result: Path = typer.Argument(
        ..., metavar="RESULT", help="a saved --json of diff, verify, layers, doctor or --target"
    ),
    html_out: Path = typer.Option(None, "--html", metavar="FILE", help="write the HTML report to this file"),
    md_out: Path = MARKDOWN,
) -> None:
    """Show a saved result (the --json of diff, a set diff, verify or doctor) as the command showed it,
    or write its HTML or Markdown report, with no binary or bundle needed.

    \b
    Exit status: the saved command's (0 same or PASS, 1 different or FAIL), 2 error."""
    from q9diff.present import saved as s  # start-up: present.saved

    if not result.is_file():
        raise InputError(f"{result}: no such file" if not result.exists() else f"{result}: not a file")
    stdout_once(False, md_out, html_out)
    for out, flag in ((html_out, "--html"), (md_out, "--markdown")):
        if out is not None and str(out) != "-":
            report_path(out, [], flag, files=(result,))
    saved = s.load(result)
    data = saved.data
    _drawn(result, saved.schema, lambda: _swap(saved))
    code = _drawn(result, saved.schema, lambda: _exit_code(saved))
    _drawn(result, saved.schema, lambda: write_reports(data, html_out, md_out))
    if md_out is not None and str(md_out) == "-":
        said(html_out, None, True)
        raise typer.Exit(code)
    console.begin_capture()  # the whole view or, from a result whose fields do not fit, one line alone
    try:
        _drawn(result, saved.schema, lambda: _terminal(saved))
    finally:
        shown = console.end_capture()
    sys.stdout.write(shown)
    said(html_out, md_out, False)
    raise typer.Exit(code)


def _drawn(result: Path, schema: str, draw):
    """`draw()`; a saved result whose fields are each of the right shape but do not fit together (a
    side without its label, a value where a number goes) is one line naming the file, exit 2."""
    try:
        return draw()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as exc:
        raise CommandError(
            f"{result}: a {schema} result q9diff cannot draw ({type(exc).__name__}: {exc})"
        ) from exc


def _exit_code(saved) -> int:
    from q9diff.present import saved as s  # start-up: present.saved

    refused = (saved.data.get("load") or {}).get("verdict") == "will not load"  # --runtime/--target: 1
    if saved.schema in (s.DIFF, s.SET):  # a reference built for another device than --target: 1, as live
        mismatch = saved.data.get("target", {}).get("reference_findings")
        return 0 if saved.data["identical"] and not mismatch and not refused else 1
    if saved.schema == s.VERIFY:
        return 0 if s.verify_result(saved.data).passed else 1
    if saved.schema == s.TARGET:
        return 0 if saved.data["matches"] and not refused else 1
    if saved.schema == s.LAYERS:
        return 0 if saved.data["first_divergence"] is None else 1
    from q9diff.doctor.result import DoctorResult  # start-up: doctor.result

    return DoctorResult.from_json(saved.data).exit_code


def _swap(saved) -> None:
    """A saved diff whose reference looks like the broken build, saved by a q9diff that still gave its
    fix: the report draws it as a diff does now, with no fix and the reason last."""
    from q9diff.present import saved as s  # start-up: present.saved
    from q9diff.present.verdict import set_root, sides, swap_advice  # start-up: present.verdict

    data = saved.data
    if saved.schema not in (s.DIFF, s.SET) or "reference_looks_wrong" in data:
        return
    a, b = (
        (data["a"]["path"], data["b"]["path"])
        if saved.schema == s.DIFF
        else (set_root(data, "a"), set_root(data, "b"))
    )
    why = swap_advice(Path(a), Path(b), data["causes"], "", sides(data))
    if why:
        data.update({"reference_looks_wrong": why, "suggestions": []})
        for part in data.get("parts", []):
            part["suggestions"] = []


def _terminal(saved) -> None:
    """The command's own terminal view, read from the saved result."""
    from q9diff.present import saved as s  # start-up: present.saved
    from q9diff.present.terminal_target import print_load, print_target  # start-up: present.terminal_target

    data = saved.data
    if saved.schema in (s.DIFF, s.SET):
        from q9diff.compare.result import saved_diff, saved_set  # start-up: compare.result
        from q9diff.present.terminal_diff import print_set, show_pair  # start-up: present.terminal_diff
        from q9diff.present.verdict import set_root  # start-up: present.verdict

        a, b = (
            (data["a"]["path"], data["b"]["path"])
            if saved.schema == s.DIFF
            else (set_root(data, "a"), set_root(data, "b"))
        )
        for f in data.get("target", {}).get("reference_findings", []):
            note(f"warning: {f}")  # as the live command says it, once per part
        show_pair(saved_diff(data), data=data) if saved.schema == s.DIFF else print_set(saved_set(data), data)
        print_load(data.get("load"))
    elif saved.schema == s.VERIFY:
        from q9diff.present.terminal_verify import print_verify  # start-up: present.terminal_verify

        print_verify(s.verify_result(data))
    elif saved.schema == s.TARGET:
        print_target(data)
    elif saved.schema == s.LAYERS:
        from q9diff.layers.result import LayersResult  # start-up: layers.result
        from q9diff.present.terminal_layers import print_layers  # start-up: present.terminal_layers

        print_layers(LayersResult.from_json(data))
    else:
        from q9diff.doctor.result import DoctorResult  # start-up: doctor.result
        from q9diff.present.terminal_doctor import print_report  # start-up: present.terminal_doctor

        print_report(DoctorResult.from_json(data))
