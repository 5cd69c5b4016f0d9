"""`q9diff doctor`: a whole Genie bundle checked."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import _Command, _fail, _flag, _note, _print_json, _report_path, _wrote, app, console
from q9diff.cli.target import TARGET


@app.command(cls=_Command, short_help="Check a whole Genie bundle: the nine hypotheses, the two places.")
def doctor(
    bundle: Path = typer.Argument(
        ..., metavar="BUNDLE", help="a Genie bundle (its folder or its config), a folder of parts or one .bin"
    ),
    reference: Path = typer.Option(None, "--reference", metavar="REF_BUNDLE", help="the known-good bundle"),
    as_json: bool = _flag("--json", "print the q9diff.doctor/1 JSON (non-finite numbers as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="also write a self-contained HTML report"
    ),
    target: str = TARGET,
) -> None:
    """Check a whole Genie bundle: ctx-bins, vocabulary, context, the nine hypotheses, the two places.

    \b
    Exit status:
      0  no finding is an error
      1  a finding is an error
      2  the bundle cannot be read"""
    from q9diff.cli.target import device_or_fail
    from q9diff.doctor.run import print_report, render_html, run
    from q9diff.genie.bundle import BundleError

    device = device_or_fail(target) if target is not None else None
    _report_path(html_out, [bundle, reference])
    try:
        report = run(bundle, reference, target=device)
    except BundleError as exc:
        _fail(str(exc))
    if html_out is not None:
        from q9diff.build.recipe import write_atomic

        try:
            write_atomic(html_out, render_html(report))
        except OSError as exc:
            _fail(f"{html_out}: cannot write the HTML report ({exc.strerror})")
    if as_json:
        _print_json(report.to_json())
    else:
        print_report(report, console)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
    raise typer.Exit(report.exit_code)
