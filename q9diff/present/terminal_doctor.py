"""The terminal view of doctor's result (`DoctorResult`, as `q9diff.doctor/1` saves it): the summary, the
nine hypotheses, then each error and warning with its fix, then what is not settled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from q9diff.present.terminal import console, text

if TYPE_CHECKING:
    from q9diff.doctor.run import DoctorResult, Finding

STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
STATUS_STYLE = {"implicated": "bold red", "ruled out": "green", "open": "yellow"}


def print_report(report: DoctorResult, out=None) -> None:
    """Summary first, then the hypotheses, then problems; strings from files are escaped rich Text,
    never markup. `out`: a rich Console (the terminal's by default)."""
    out = console if out is None else out
    against = (" vs reference ", report.reference) if report.reference is not None else ()
    aimed = (f" --target {report.target['label']}",) if report.target is not None else ()
    on = (f" --runtime QAIRT {report.runtime['qairt']}",) if report.runtime is not None else ()
    out.print(text(("q9diff doctor ", "bold"), report.bundle, *against, *aimed, *on))
    if report.profile is not None:
        out.print(text(report.profile["sentence"]))
    e, w = report.count("error"), report.count("warning")
    passed = sum(1 for f in report.findings if f.ruled_out)
    style = "bold red" if e else ("yellow" if w else "bold green")
    out.print(text((f"{e} error(s), {w} warning(s)", style), f", {passed} checks passed"))
    for note in report.notes:
        out.print(text((note, "dim")))
    out.print(text(("Hypotheses", "bold")))
    for n, h in report.hypotheses().items():
        status = (h["status"], STATUS_STYLE[h["status"]])
        out.print(text(f"  {n} {h['title']}: ", status, " - " + "; ".join(h["why"])))
    for severity in ("error", "warning"):
        shown = [f for f in report.findings if f.severity == severity]
        if shown:
            out.print(text((f"{severity.capitalize()}s", "bold")))
        for f in shown:
            hyp = f" (hypothesis {f.hypothesis})" if f.hypothesis else ""
            out.print(text((f"  {f.check}", STYLE[severity]), hyp, "  ", (f.where, "cyan")))
            out.print(text(f"    {f.evidence}"))
            if f.fix:
                out.print(text((f"    fix: {f.fix}", "green")))
    notes: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.severity == "info" and not f.ruled_out:
            notes.setdefault(f.evidence, []).append(f)
    if notes:
        out.print(text(("Not settled", "bold")))
    for evidence, fs in notes.items():
        checks = ", ".join(dict.fromkeys(f.check for f in fs))
        out.print(text(("  " + checks, "yellow"), ": " + evidence))
