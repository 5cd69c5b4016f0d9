"""`q9diff doctor`: a whole Genie bundle checked."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from q9diff.cli.common import (
    MARKDOWN,
    RUNTIME,
    TARGET,
    Command,
    CommandError,
    app,
    flag,
    print_json,
    report_not_read,
    report_path,
    said,
    stdout_once,
    write_reports,
)


@app.command(cls=Command, short_help="Check a whole Genie bundle: the nine hypotheses, the two places.")
def doctor(
    bundle: Path = typer.Argument(
        ..., metavar="BUNDLE", help="a Genie bundle (its folder or its config), a folder of parts or one .bin"
    ),
    reference: Path = typer.Argument(
        None, metavar="[REFERENCE]", help="the known-good bundle, as diff and verify take it"
    ),
    reference_opt: Path = typer.Option(
        None, "--reference", metavar="REF_BUNDLE", help="the known-good bundle (the same as REFERENCE)"
    ),
    as_json: bool = flag("--json", "print the q9diff.doctor/1 JSON (non-finite numbers as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="also write a self-contained HTML report"
    ),
    md_out: Path = MARKDOWN,
    target: str = TARGET,
    runtime: str = RUNTIME,
) -> None:
    """Check a whole Genie bundle: ctx-bins, vocabulary, context, the nine hypotheses, the two places.

    \b
    Exit status:
      0  no finding is an error
      1  a finding is an error
      2  the bundle cannot be read"""
    from q9diff import api  # start-up: api, construct
    from q9diff.present.as_json import as_saved  # start-up: present.as_json

    if reference is not None and reference_opt is not None and reference != reference_opt:
        raise CommandError(f"two references, {reference} and --reference {reference_opt}: give one")
    reference = reference or reference_opt
    device = api.as_device(target) if target is not None else None
    qairt = api.as_runtime(runtime) if runtime is not None else None
    # A config given under any name names files beside it: its whole folder is input, as a folder is.
    given = [bundle, reference]
    given += [p.parent for p in given if p is not None and os.path.isfile(p)]
    report_path(html_out, given)
    if md_out is not None and str(md_out) != "-":
        report_path(md_out, given, "--markdown")
    stdout_once(as_json, md_out, html_out)
    report = api.doctor(bundle, reference, target=device, runtime=qairt)
    report_not_read(html_out, list(report.files))
    md_file = md_out if md_out is not None and str(md_out) != "-" else None
    report_not_read(md_file, list(report.files), "--markdown")
    # drawn from the saved result, as `report` does
    write_reports(as_saved(report.result.to_json()), html_out, md_out)
    to_stdout = as_json or (md_out is not None and str(md_out) == "-")
    if as_json:
        print_json(report.result.to_json())
    elif not to_stdout:
        report.show()
    said(html_out, md_out, to_stdout)
    raise typer.Exit(report.result.exit_code)
