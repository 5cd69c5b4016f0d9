"""doctor's HTML report, from its result (`DoctorResult`, as `q9diff.doctor/1` saves it).

The verdict is the headline (`Will not load on QAIRT 2.48: 1 error`), with the runtime and device it was
judged for; the errors and warnings follow, each with its fix (never squeezed into a table cell on a
phone); then the hypotheses (a heading of their own only when one is implicated) and the checks that
passed. Every string is escaped.
"""

from __future__ import annotations

from q9diff.present.html import STYLE, esc, scroll_table, wrap_page  # esc: HTML and control characters
from q9diff.present.verdict import doctor_asked, doctor_headline

DOCTOR_STYLE = STYLE.replace(
    "</style>",
    "h1.error{color:#b00}h1.warning{color:#a60}h1.ok{color:#070}"
    " .error td:first-child,.implicated{color:#b00;font-weight:bold}"
    " .warning td:first-child,.open{color:#a60} .ok{color:#666} .ruled-out{color:#070}"
    " td{vertical-align:top;font-size:13px} ul.implicated li{margin:.2em 0}"
    " ul.findings li{margin:.6em 0} ul.findings p.fix{margin:.3em 0}"
    " b.error{color:#b00} b.warning{color:#a60}</style>",
)


def _hypotheses(hyps: dict[int, dict], table: str) -> str:
    """The nine hypotheses, after the findings: the implicated under a heading of their own, the open and
    ruled out a line each; when none is implicated, only the folded table of all nine, which says so."""
    by: dict[str, list[str]] = {}
    for n, h in hyps.items():
        by.setdefault(h["status"], []).append(f"{n} {esc(h['title'])}")
    if not by.get("implicated"):
        counts = ", ".join(f"{len(by[s])} {s}" for s in ("ruled out", "open") if by.get(s))
        return f"<details><summary>Hypotheses: none implicated ({counts})</summary>{table}</details>"
    items = "".join(f"<li>{x}</li>" for x in by["implicated"])
    out = f"<h2>Hypotheses implicated</h2><ul class='implicated'>{items}</ul>"
    for status in ("open", "ruled out"):
        if by.get(status):
            cls, items = status.replace(" ", "-"), "; ".join(by[status])
            out += f"<p class='{esc(cls)}'><b>{status.capitalize()}:</b> {items}</p>"
    return out + f"<details><summary>The nine hypotheses, and why</summary>{table}</details>"


def _finding(f) -> str:
    """An error or a warning as a block a phone shows whole: what, where, why, and the fix as code."""
    hyp = f" (hypothesis {esc(str(f.hypothesis))})" if f.hypothesis else ""
    fix = f"<p class='fix'><b>fix:</b> {esc(f.fix)}</p>" if f.fix else ""  # a sentence, not code
    return (
        f"<li class='{esc(f.severity)}'><b class='{esc(f.severity)}'>{esc(f.severity)}</b>"
        f" <strong>{esc(f.check)}</strong>{hyp}: {esc(f.where)}<br>{esc(f.evidence)}{fix}</li>"
    )


def render_doctor(report) -> str:
    """One self-contained page over the same findings as the terminal: the verdict and what it was judged
    for, what is wrong with each fix, then the hypotheses, then the checks that passed."""
    serious = [f for f in report.findings if f.severity in ("error", "warning") and not f.ruled_out]
    rest = []
    fixes = any(f.fix for f in report.findings if f not in serious)  # no empty fix column on a phone
    for f in report.findings:
        if f in serious:
            continue
        cls = f"{f.severity}{' ok' if f.ruled_out else ''}"
        cells = (f.severity, f.check, f.hypothesis or "", f.where, f.evidence, f.fix or "")[
            : 6 if fixes else 5
        ]
        rest.append(f"<tr class='{esc(cls)}'>" + "".join(f"<td>{esc(str(x))}</td>" for x in cells) + "</tr>")
    hyps = report.hypotheses()
    table = []
    for n, h in hyps.items():
        cls = h["status"].replace(" ", "-")
        table.append(
            f"<tr><td>{n}</td><td>{esc(h['title'])}</td><td class='{esc(cls)}'>{esc(h['status'])}</td>"
            f"<td>{esc('; '.join(h['why']))}</td></tr>"
        )
    head, level = doctor_headline(report)
    profile = f"<p>{esc(report.profile['sentence'])}</p>" if report.profile else ""
    columns = ("severity", "check", "hyp.", "where", "evidence", "fix")[: 6 if fixes else 5]
    head_row = "".join(f"<th>{x}</th>" for x in columns)
    found = (
        "<h2>Findings</h2><ul class='findings'>" + "".join(_finding(f) for f in serious) + "</ul>"
        if serious
        else ""
    )
    body = (
        f"<h1 class='{level}'>{esc(head)}</h1><p>q9diff doctor: {esc(doctor_asked(report))}</p>"
        + profile
        + found
        + _hypotheses(
            hyps,
            scroll_table(
                f"<tr><th>#</th><th>hypothesis</th><th>status</th><th>why</th></tr>{''.join(table)}"
            ),
        )
        + (
            "<h2>Checks passed and notes</h2>" + scroll_table(f"<tr>{head_row}</tr>{''.join(rest)}")
            if rest
            else ""
        )
    )
    name = report.bundle.rstrip("/").rsplit("/", 2)
    short = "/".join(name[-2:]) if name[-1] == "genie_config.json" else name[-1]
    return wrap_page(f"q9diff doctor {short}: {head}", body).replace(STYLE, DOCTOR_STYLE)
