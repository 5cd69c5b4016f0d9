"""`q9diff diff` (and the main form `q9diff A B`): two files or two sets compared (q9diff.api.diff), or one
build judged against a device (q9diff.api.target), each path resolved here once (q9diff.inputs); the
terminal view is q9diff.present.terminal_diff's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from q9diff.cli.common import (
    CANDIDATE,
    MARKDOWN,
    RUNTIME,
    TARGET,
    TOOLCHAIN,
    Command,
    CommandError,
    app,
    busy,
    flag,
    note,
    print_json,
    report_path,
    said,
    stdout_once,
    toolchain_chosen,
    write_reports,
)

REFERENCE = typer.Argument(
    None, metavar="REFERENCE", help="the known-good build, the same kind (or name the device with --target)"
)


@app.command("diff", cls=Command, short_help="Why CANDIDATE differs from REFERENCE (the main form).")
def diff_cmd(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    verbose: bool = flag(
        "--verbose", "also each cause's evidence, where the changed bytes went, every region, each part", "-v"
    ),
    brief: bool = flag("--brief", "print nothing, only the exit status (like cmp -s)", "-q"),
    as_json: bool = flag(
        "--json",
        "print the JSON: q9diff.diff/1 for two files, q9diff.setdiff/1 for two sets, q9diff.target/1 for"
        " --target alone (strict: NaN/inf written as null)",
    ),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report to this file"
    ),
    md_out: Path = MARKDOWN,
    target: str = TARGET,
    runtime: str = RUNTIME,
    toolchain: str = TOOLCHAIN,
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
    from q9diff.read.files import read_ahead  # start-up: read.files

    read_ahead([candidate, reference])  # a cold page cache read while the rest starts up
    from q9diff import api, inputs  # start-up: api, construct
    from q9diff.results import SWAPPED  # start-up: results

    device = api.as_device(target) if target is not None else None
    qairt = api.as_runtime(runtime) if runtime is not None else None
    report_path(html_out, [candidate, reference])
    if md_out is not None and str(md_out) != "-":
        report_path(md_out, [candidate, reference], "--markdown")
    stdout_once(as_json, md_out, html_out)
    if html_out is not None:  # plotly.js packed (0.13 s of deflate) while the diff runs, not after it
        from q9diff.present import figures  # start-up: present.figures

        figures.start_packing()
    out = Outputs(as_json, html_out, md_out, verbose, brief)
    if reference is None:
        if device is None and qairt is None:
            raise CommandError(
                "give the known-good REFERENCE build, or the device: --target DEVICE (e.g. --target QCS9100)"
            )
        (a,) = inputs.resolved(candidate)
        if device is None:
            raise CommandError(
                "--runtime alone judges a build against a runtime: q9diff doctor CANDIDATE --runtime V"
            )
        judged = api.target(a, device, runtime=qairt)
        toolchain_chosen(judged.data, toolchain)
        status = 0 if judged.matches and not _refused(judged.data) else 1
        _deliver(out, judged.data, lambda: judged.show(verbose), status)
    kinds = _dlc_kinds(candidate, reference)
    if "graph" in kinds:  # a graph DLC has no context binary: its own diff
        if html_out is not None or md_out is not None or device is not None or qairt is not None:
            raise CommandError(
                "a graph DLC pair is diffed on its own: --html, --markdown, --target and"
                " --runtime judge context binaries (a context DLC's caches)"
            )
        from q9diff.compare.dlc import diff as dlc_diff  # start-up: a DLC's reader
        from q9diff.read.dlc import Dlc  # start-up: a DLC's reader

        if None in kinds:  # a graph DLC and a context binary: what the compile added
            from q9diff.compare.dlc_compile import compiled  # start-up: a DLC beside its binary
            from q9diff.read.openers import locate  # start-up: read.openers

            dlc_path, other = (candidate, reference) if kinds[0] == "graph" else (reference, candidate)
            found = compiled(Dlc.open(dlc_path), locate(other).open(), str(other))
        else:
            found = dlc_diff(Dlc.open(candidate), Dlc.open(reference))
        _deliver(out, found, lambda: _dlc_view(found, verbose), 0 if found["identical"] else 1)
    a, b = inputs.resolved(candidate, reference)
    quiet = as_json or brief or not (a.is_set and b.is_set)  # a spinner over a set's parts only
    with busy(f"comparing the parts of {candidate.name} and {reference.name}", quiet) as say:
        result = api.diff(a, b, target=device, runtime=qairt, progress=say)
    for line in result.notes:
        if brief or not line.startswith(SWAPPED):  # the view says a swap first; -q prints no view
            note(line)
    toolchain_chosen(result.data, toolchain)
    found = result.data.get("target", {}).get("reference_findings")
    worse = found or _refused(result.data)
    show = (
        result.show
        if "dlc" not in result.data
        else lambda v: (_dlc_view(result.data["dlc"], v), result.show(v))
    )
    _deliver(out, result.data, lambda: show(verbose), 0 if result.identical and not worse else 1)


def _dlc_kinds(candidate: Path, reference: Path) -> tuple[str | None, ...]:
    """Each path's DLC kind ("graph" or "context"), None for a file that is no DLC given whole."""
    from q9diff.read.openers import locate  # start-up: read.openers

    at = [locate(p) for p in (candidate, reference)]
    if all(p.container != ".dlc" or p.label is not None for p in at):
        return (None, None)
    from q9diff.read.dlc import Dlc  # start-up: a DLC's reader

    return tuple(None if p.container != ".dlc" or p.label is not None else Dlc.open(p.file).kind for p in at)


def _dlc_view(found: dict, verbose: bool) -> None:
    from q9diff.present.terminal_dlc import print_dlc_diff  # start-up: a DLC's view

    print_dlc_diff(found, verbose)


def _refused(data: dict) -> bool:
    """A part of the candidate will not load on the runtime or device named."""
    load = data.get("load")
    return load is not None and load["verdict"] == "will not load"


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
    from q9diff.present.as_json import as_saved  # start-up: present.as_json

    quiet = out.as_json or out.brief
    if out.html_out is not None or out.md_out is not None:  # the saved form only where a report needs it
        with busy(f"writing {out.html_out or out.md_out}", quiet or out.html_out is None):
            write_reports(as_saved(data), out.html_out, out.md_out)
    to_stdout = out.as_json or (out.md_out is not None and str(out.md_out) == "-")
    if out.as_json:
        print_json(data)
    elif not out.brief and not to_stdout:
        show()
    if not out.brief:
        said(out.html_out, out.md_out, to_stdout)
    raise typer.Exit(code)
