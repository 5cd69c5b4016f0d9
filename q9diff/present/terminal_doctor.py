"""The terminal view of doctor's result (`DoctorResult`, as `q9diff.doctor/1` saves it): the summary, the
nine hypotheses, then each error and warning with its fix, then what is not settled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from q9diff.present.terminal import console, text

if TYPE_CHECKING:
    from q9diff.doctor.result import DoctorResult, Finding

STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
STATUS_STYLE = {"implicated": "bold red", "ruled out": "green", "open": "yellow"}


def print_report(report: DoctorResult, out=None) -> None:
    """The verdict first (will it load where asked, the counts) and what it was asked about, then each
    error and warning with its fix, then the device's profile, the nine hypotheses by status, and what
    is not settled, each said once. Strings from files are escaped rich Text, never markup. `out`: a
    rich Console."""
    from q9diff.present.verdict import doctor_asked, doctor_headline  # start-up: present.verdict

    out = console if out is None else out
    head, level = doctor_headline(report)
    out.print(text((head, {"error": "bold red", "warning": "bold yellow", "ok": "bold green"}[level])))
    out.print(text(doctor_asked(report)))
    for note in report.notes:
        out.print(text((note, "dim")))
    for severity in ("error", "warning"):
        shown = [f for f in report.findings if f.severity == severity]
        if shown:
            out.print(text((f"{severity.capitalize()}s", "bold")))
        for f in shown:
            hyp = f" (hypothesis {f.hypothesis})" if f.hypothesis else ""
            out.print(text((f"  {f.check}", STYLE[severity]), hyp, "  ", (f.where, "cyan")))
            out.print(text(f"    {f.evidence}"))
            if f.fix:
                out.print(text(("    fix: ", "green"), f.fix))  # a sentence: wrapped, never cut
    if report.profile is not None:
        out.print(text(("Target: ", "bold"), report.profile["sentence"]))
    _hypotheses(report, out)
    notes: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.severity == "info" and not f.ruled_out:
            notes.setdefault(f.evidence, []).append(f)
    if notes:
        out.print(text(("Not settled", "bold")))
    for evidence, fs in notes.items():
        checks = ", ".join(dict.fromkeys(f.check for f in fs))
        out.print(text(("  " + checks, "yellow"), ": " + evidence))


def _hypotheses(report: DoctorResult, out) -> None:
    """The nine hypotheses of the motivating case by status, one line each status: the implicated with
    the checks that say so (their evidence is above), the ruled out, the open (why: under Not settled)."""
    by: dict[str, list[str]] = {}
    for n, h in report.hypotheses().items():
        by.setdefault(h["status"], []).append(f"{n} {h['title']}")
    out.print(
        text(
            ("Hypotheses", "bold"), " (the nine of the case q9diff was born from: q9diff explain hypotheses)"
        )
    )
    for status in ("implicated", "ruled out", "open"):
        if by.get(status):
            out.print(text((f"  {status}: ", STATUS_STYLE[status]), "; ".join(by[status])))
