"""The terminal view of `q9diff explain`: for a code, a C name or a term, what it means and its known
causes; for a log, the verdict first (the decisive line, the layer, the causes ranked, the command that
tells which applies), then every line in paste order: explained, context (runs of them on one line) or
unknown."""

from __future__ import annotations

from q9diff.errors import printable
from q9diff.present.terminal import console, text

_ALL = ("2.47", "2.48", "2.49", "2.50", "2.51")


def _causes(causes, heading: str = "  known causes:") -> None:
    if not causes:
        return
    console.print(text(heading))
    for c in causes:
        console.print(text("  - ", c.cause, (f" [{c.evidence}: {c.source}]", "dim")))
        if c.check:
            console.print(text("    tells which: ", (c.check, "green")))


def print_codes(found) -> None:
    """Each code once (with the other names its value has), what it means, its causes."""
    from q9diff.explain.codes import primary  # start-up: explain.codes

    for code, aliases in primary(found.codes):
        console.print(text((f"{code.shown} {code.name}", "bold"), f"  ({_api(code)}, {code.source})"))
        if code.meaning:
            console.print(text(f"  {code.meaning}"))
        if aliases:
            console.print(text("  the same value is also named " + ", ".join(aliases)))
        _causes(code.causes)
    for t in found.terms:
        console.print(text((t.term, "bold"), (f"  (also: {', '.join(t.also)})" if t.also else "")))
        console.print(text(f"  {t.says}"))
        console.print(text("  more: ", (t.see, "green")))


def _api(code) -> str:
    if code.family == "genie":
        return "Genie"
    if code.family == "fastrpc":
        return "FastRPC"
    return f"QNN {code.api.replace('_', ' ')} API"


_FIVE = (
    "libQnnHtp.so",
    "libHtpPrepare.so",
    "libQnnSystem.so",
    "libGenie.so",
    "libQnnHtpNetRunExtensions.so",
    "libonnxruntime_providers_qnn.so",
)  # fmt: skip  (read in all five releases, 2.47-2.51)


def versions(v: tuple[str, ...], library: str = "") -> str:
    """A library's versions as a reader wants them: the QAIRT run, and for the libraries read in all
    five releases, where they disagree, the version that introduced or dropped the message."""
    qairt = [x for x in v if x in _ALL]
    if not qairt:
        return ", ".join(v)
    if qairt != list(_ALL[_ALL.index(qairt[0]) : _ALL.index(qairt[-1]) + 1]):
        return "QAIRT " + ", ".join(qairt)
    span = qairt[0] if len(qairt) == 1 else f"{qairt[0]}-{qairt[-1]}"
    if library in _FIVE and qairt[0] != _ALL[0] and qairt[-1] == _ALL[-1]:
        return f"QAIRT {span} (new in {qairt[0]})"
    if library in _FIVE and qairt[-1] != _ALL[-1] and qairt[0] == _ALL[0]:
        return f"QAIRT {span} (dropped in {_ALL[_ALL.index(qairt[-1]) + 1]})"
    return f"QAIRT {span}"


def where(entry) -> str:
    """Which libraries print a message and in which versions: those read in five releases first, then
    the device builds (2.51's win_arm64 wheel) and the others, at most three named."""
    places = sorted(entry.places, key=lambda p: (p.library not in _FIVE, p.library))
    parts = [f"{p.library} {versions(p.versions, p.library)}".strip() for p in places[:3]]
    more = f" and {len(places) - 3} more" if len(places) > 3 else ""
    return "; ".join(parts) + more


def print_verdict(v) -> None:
    console.print(text(("Verdict: ", "bold"), v.summary))
    console.print(text("  layer: ", (v.layer, "bold")))
    if v.causes:
        console.print(text("  likeliest causes, first the one the lines point to:"))
    for i, r in enumerate(v.causes, 1):
        lines = ", ".join(str(n) for n in r.lines[:6])
        console.print(
            text(
                f"  {i}. ", r.cause.cause, (f" [{r.cause.evidence}: {r.cause.source}; lines {lines}]", "dim")
            )
        )
        if r.cause.check:
            console.print(text("     tells which: ", (r.cause.check, "green")))
    if v.undecided:
        console.print(text("  no line of this log tells these apart; what would:"))
        for row in v.undecided.split("\n"):
            console.print(text(f"  - {row}"))
    if v.unknown_errors:
        n = ", ".join(str(x) for x in v.unknown_errors[:10])
        more = f" and {len(v.unknown_errors) - 10} more" if len(v.unknown_errors) > 10 else ""
        console.print(text(f"  error lines q9diff does not know: {n}{more}"))
    if v.benign:
        n = ", ".join(str(x) for x in v.benign[:10])
        more = f" and {len(v.benign) - 10} more" if len(v.benign) > 10 else ""
        console.print(text(f"  benign lines (they say nothing went wrong): {n}{more}"))
    if v.collect:
        console.print(text("  to collect next:"))
        for row in v.collect:
            console.print(text(f"  - {row}"))


def line_text(f, first_seen: dict) -> list[str]:
    """One explained or unknown line as the lines of text that show it: its number, status, level and
    line; then what it is (a message already shown for an earlier line is named by that line)."""
    level = f.level or "-"
    head = f"{f.line.number:>5}  {f.status:<9} {level}  {_cut(f.line.shown)}"
    if f.status == "unknown":
        layer = f"; its words name the {f.layer} layer" if f.layer else ""
        hint = (
            f"; its words suggest {f.hint.replace('_', ' ')} (a hint: it decides nothing)" if f.hint else ""
        )
        return [f"{head}  (not in the catalogue{layer}{hint})"]
    key = (
        f.hit.entry.text if f.hit else "",
        tuple(c.name for c in f.codes),
        tuple(m.name for m in f.missing),
    )
    if key in first_seen:
        return [head, f"{PAD}as line {first_seen[key]}"]
    first_seen[key] = f.line.number
    out = [head]
    for m in f.missing:
        lib = m.library
        verb = "loaded onto the DSP" if m.on_dsp else "opened"
        out.append(f"{PAD}{m.name}: could not be {verb}" + (f" ({m.reason})" if m.reason else ""))
        if lib is not None:
            out.append(f"{PAD}  {lib.what}; it ships with {lib.ships}; it lives on the {lib.side} side")
            if lib.variable:
                out.append(f"{PAD}  looked for through {lib.variable}")
    if f.hit is not None:
        kind = "" if f.hit.complete else " (another version's form)"
        src = f.curated.library if f.curated and f.curated.library else where(f.hit.entry)
        out.append(f"{PAD}message{kind}: {f.hit.entry.text}  ({src}; {f.layer})")
    if f.curated is not None and f.curated.meaning:
        out.append(f"{PAD}{f.curated.meaning}")
    for c in f.codes[:3]:
        tag = "" if f.own_number else " (the code this message usually ends with)"
        out.append(f"{PAD}{c.shown} {c.name}{tag}" + (f": {c.meaning}" if c.meaning else ""))
    if f.note:
        out.append(f"{PAD}{f.note}")
    if f.line.cut:
        out.append(f"{PAD}only the first 4096 characters of this line were read")
    return out


PAD = " " * 19


def _cut(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def print_log(found) -> None:
    """The verdict, then the lines in paste order (a run of context lines on one line), written as
    plain text: a pasted log can have a hundred thousand lines."""
    print_verdict(found.verdict)
    c = found.counts()
    out = [f"Lines ({c['explained']} explained, {c['context']} context, {c['unknown']} unknown):"]
    run: list = []
    alike: list = []  # unknown lines of one level and layer in a row
    seen: dict = {}
    for f in found.findings:
        if f.status == "context":
            out += _alike(alike)
            alike = []
            run.append(f)
            continue
        out += _run(run)
        run = []
        if f.status == "unknown" and alike and (f.level, f.layer) == (alike[0].level, alike[0].layer):
            alike.append(f)
            continue
        out += _alike(alike)
        alike = [f] if f.status == "unknown" else []
        if f.status != "unknown":
            out += line_text(f, seen)
    out += _run(run) + _alike(alike)
    console.file.write("\n".join(printable(x) for x in out) + "\n")


def _alike(run: list) -> list[str]:
    """Unknown lines of one kind in a row: the first three shown, the rest counted."""
    out = [x for f in run[:3] for x in line_text(f, {})]
    if len(run) > 3:
        first, last = run[3].line.number, run[-1].line.number
        out.append(f"{PAD}and {len(run) - 3} more unknown lines like these ({first}-{last})")
    return out


def _run(run: list) -> list[str]:
    if not run:
        return []
    first, last = run[0].line.number, run[-1].line.number
    kinds = list(dict.fromkeys(f.how for f in run))
    span = f"{first}" if first == last else f"{first}-{last}"
    more = f" and {len(kinds) - 3} more kinds" if len(kinds) > 3 else ""
    return [f"{span:>5}  context   {'; '.join(kinds[:3])}{more}"]


def print_explanation(found) -> None:
    if found.is_log:
        print_log(found)
    else:
        print_codes(found)
