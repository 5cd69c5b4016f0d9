"""doctor's HTML report, from its result (`DoctorResult`, as `q9diff.doctor/1` saves it).

The headline names the implicated hypotheses first, apart from the open and the ruled-out ones; the errors
and warnings follow, each with its fix as code (never squeezed into a table cell on a phone), so the cause
is read before the hypotheses and the checks that passed. Every string is escaped.
"""

from __future__ import annotations

from q9diff.present.html import STYLE, esc, scroll_table, wrap_page  # esc: HTML and control characters

DOCTOR_STYLE = STYLE.replace(
    "</style>",
    ".error td:first-child,.implicated{color:#b00;font-weight:bold}"
    " .warning td:first-child,.open{color:#a60} .ok{color:#666} .ruled-out{color:#070}"
    " td{vertical-align:top;font-size:13px} ul.implicated li{margin:.2em 0}"
    " ul.findings li{margin:.6em 0} ul.findings pre.fix{white-space:pre-wrap;overflow-wrap:anywhere}"
    " b.error{color:#b00} b.warning{color:#a60}</style>",
)


def _headline(hyps: dict[int, dict]) -> str:
    by: dict[str, list[str]] = {}
    for n, h in hyps.items():
        by.setdefault(h["status"], []).append(f"{n} {esc(h['title'])}")
    out = ""
    if by.get("implicated"):
        items = "".join(f"<li>{x}</li>" for x in by["implicated"])
        out += f"<h2>Implicated</h2><ul class='implicated'>{items}</ul>"
    else:
        out += "<h2>No hypothesis implicated</h2>"
    for status in ("open", "ruled out"):
        if by.get(status):
            cls, items = status.replace(" ", "-"), "; ".join(by[status])
            out += f"<p class='{esc(cls)}'><b>{status.capitalize()}:</b> {items}</p>"
    return out


def _finding(f) -> str:
    """An error or a warning as a block a phone shows whole: what, where, why, and the fix as code."""
    hyp = f" (hypothesis {esc(str(f.hypothesis))})" if f.hypothesis else ""
    fix = f"<pre class='fix'>{esc(f.fix)}</pre>" if f.fix else ""
    return (
        f"<li class='{esc(f.severity)}'><b class='{esc(f.severity)}'>{esc(f.severity)}</b>"
        f" <strong>{esc(f.check)}</strong>{hyp}: {esc(f.where)}<br>{esc(f.evidence)}{fix}</li>"
    )


def render_doctor(report) -> str:
    """One self-contained page over the same findings as the terminal: the verdict, what is wrong with
    each fix as code to copy, then the hypotheses, then the checks that passed."""
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
    against = f" vs reference {esc(report.reference)}" if report.reference else ""
    if report.target is not None:
        against += f" --target {esc(report.target['label'])}: {esc(report.profile['sentence'])}"
    columns = ("severity", "check", "hyp.", "where", "evidence", "fix")[: 6 if fixes else 5]
    head = "".join(f"<th>{x}</th>" for x in columns)
    passed = sum(1 for f in report.findings if f.ruled_out)
    found = (
        "<h2>Findings</h2><ul class='findings'>" + "".join(_finding(f) for f in serious) + "</ul>"
        if serious
        else ""
    )
    body = (
        f"<h1>q9diff doctor</h1><p>{esc(report.bundle)}{against}</p>"
        f"<p><b>{report.count('error')} error(s), {report.count('warning')} warning(s)</b>,"
        f" {passed} checks passed</p>"
        + _headline(hyps)
        + found
        + "<h2>Hypotheses</h2>"
        + scroll_table(f"<tr><th>#</th><th>hypothesis</th><th>status</th><th>why</th></tr>{''.join(table)}")
        + (
            "<h2>Checks passed and notes</h2>" + scroll_table(f"<tr>{head}</tr>{''.join(rest)}")
            if rest
            else ""
        )
    )
    name = report.bundle.rstrip("/").rsplit("/", 2)
    short = "/".join(name[-2:]) if name[-1] == "genie_config.json" else name[-1]
    return wrap_page(f"q9diff doctor {short}", body).replace(STYLE, DOCTOR_STYLE)
