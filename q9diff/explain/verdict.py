"""The combined verdict over a pasted log: the decisive line, the layer that failed, the causes ranked by
their evidence and by what the other lines show, and the command that tells which applies.

The decisive line is the one that says most about the root: a library a loader could not open (whatever
its level), then a line that points to a cause (a version, an arch, a Skel, a separator), then the first
explained error line, then the first error line q9diff does not know. A cause a line of the log points to
ranks above one that only usually goes with the code; a message's own causes above its code's; among
causes nothing in the log points to, measured above documented above reported, and more public reports
above fewer; when no line tells the likeliest causes apart, the
verdict says so and what would tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from q9diff.explain import classes
from q9diff.explain.codes import Cause, causes
from q9diff.explain.lines import Missing, variables
from q9diff.explain.log import EXPLAINED, UNKNOWN, Finding

_WEIGHT = {"measured": 3.0, "documented": 2.0, "reported": 1.0}
# Signals strong enough to make a line decisive even when it is not the first error.
_ROOT_SIGNALS = {"adsp_separator", "arch", "version", "skel", "stub", "interface", "soc", "truncated",
                 "config", "permission", "op", "vtcm", "memory", "shared_weights"}  # fmt: skip
# Causes a signal brings in by itself, whatever the codes of the log.
_SIGNAL_CAUSES = {"adsp_separator": "adsp_separator", "soc": "soc_not_detected",
                  "interface": "interface_mismatch", "permission": "fastrpc_no_access",
                  "op": "op_unsupported"}  # fmt: skip
MAX_CAUSES = 5
MAX_LINES = 12  # the lines named for one cause


@dataclass(frozen=True)
class Ranked:
    cause: Cause
    lines: tuple[int, ...]  # the lines that point to it
    score: float
    pointed: bool  # a line of the log points to it (a signal, a library it names), not only a code


@dataclass(frozen=True)
class Verdict:
    decisive: Finding | None
    layer: str
    summary: str
    causes: tuple[Ranked, ...]
    undecided: (
        str  # what tells the leading causes apart, one line a cause, when no line does ('' when one does)
    )
    checks: tuple[str, ...]
    unknown_errors: tuple[int, ...]  # error lines q9diff does not know
    benign: tuple[int, ...] = ()  # lines whose words say nothing went wrong
    klass: str = ""  # the failure class of the first cause ('' for none)
    collect: tuple[str, ...] = ()  # what to collect next, when no line of the log points to a cause

    def to_json(self) -> dict:
        return {
            "line": self.decisive.line.number if self.decisive else None,
            "layer": self.layer,
            "summary": self.summary,
            "causes": [
                {
                    "cause": r.cause.cause,
                    "evidence": r.cause.evidence,
                    "source": r.cause.source,
                    "check": r.cause.check,
                    "lines": list(r.lines),
                    "pointed_to": r.pointed,
                }
                for r in self.causes
            ],  # fmt: skip
            "undecided": self.undecided,
            "checks": list(self.checks),
            "unknown_error_lines": list(self.unknown_errors),
            "class": self.klass,
            "benign_lines": list(self.benign),
            "collect": list(self.collect),
        }


def missing_cause(m: Missing) -> Cause:
    """The cause a library that could not be opened is, in our words from libraries.json."""
    lib = m.library
    if lib is None:
        text = f"{m.name} could not be opened by the loader" + (f" ({m.reason})." if m.reason else ".")
        return Cause(f"missing:{m.name}", text, "measured", "the loader's own message", None, ("library",))
    var = lib.variable
    where = f" It is looked for through {var}: {variables()[var]}." if var else ""
    text = f"{m.name} could not be {'loaded onto the DSP' if m.on_dsp else 'opened'}"
    text += f" ({m.reason})" if m.reason else ""
    text += f": {lib.what}. It ships with {lib.ships}.{where}"
    if lib.note:
        text += f" Note ({lib.note_evidence}: {lib.note_source}): {lib.note}."
    return Cause(f"missing:{m.name}", text, "measured", "the loader's own message", None, ("library",))


def _candidates(findings: list[Finding], decisive: Finding | None, signals: set[str]) -> dict[str, Ranked]:
    table = causes()
    best: dict[str, tuple[float, bool]] = {}
    lines: dict[str, list[int]] = {}
    known: dict[str, Cause] = {}

    def add(cause: Cause, line: int, bonus: float, pointed: bool) -> None:
        if cause.requires and not set(cause.requires) & signals:
            return
        hits = len(set(cause.signals) & signals)
        score = _WEIGHT[cause.evidence] + 0.5 * min(reports(cause), 4) + 6 * hits + bonus
        old = best.get(cause.id, (float("-inf"), False))
        best[cause.id] = (max(old[0], score), old[1] or pointed or hits > 0)
        known[cause.id] = cause
        at = lines.setdefault(cause.id, [])
        if len(at) < MAX_LINES and (not at or at[-1] != line):
            at.append(line)

    for f in findings:
        if f.status != EXPLAINED or f.weak or not (f.failure or f.signals or f.missing or f.signal):
            continue
        near = 4.0 if f is decisive else 1.0
        if f.signal is not None:
            add(classes.cause(f.signal), f.line.number, 14.0 + near, True)
        for m in f.missing:
            add(missing_cause(m), f.line.number, 14.0 + near, True)
        for c in _message_causes(f):
            add(c, f.line.number, near + 3.0, False)
        for code in f.codes:
            for c in code.causes:
                add(c, f.line.number, near if f.own_number else near / 2, False)
        for s in f.signals:
            if s in _SIGNAL_CAUSES and _SIGNAL_CAUSES[s] in table:
                add(table[_SIGNAL_CAUSES[s]], f.line.number, near + 2.0, True)
    return {k: Ranked(known[k], tuple(lines[k]), score, pointed) for k, (score, pointed) in best.items()}


def reports(cause: Cause) -> int:
    """How many public threads a cause is known from (its sources of the form owner-repo#N)."""
    return sum("#" in s and " " not in s.strip() for s in cause.source.split(" / "))


def _message_causes(f: Finding) -> tuple[Cause, ...]:
    """The causes a line's message carries, unless the line writes its own number and the message's
    causes belong to the code it usually ends with ("Failed to create device: 1008" is 1008's)."""
    if f.curated is None:
        return ()
    if f.own_number and f.curated.codes and not {c.value for c in f.codes} & set(f.curated.codes):
        return ()
    return f.curated.causes


def _decisive(findings: list[Finding]) -> Finding | None:
    def rank(f: Finding) -> tuple:
        if f.missing:
            klass = 0
        elif set(f.signals) & _ROOT_SIGNALS or f.signal is not None:
            klass = 1
        elif f.weak:
            klass = 5
        elif f.status == EXPLAINED and f.curated is not None and f.curated.causes:
            klass = 2
        elif f.status == EXPLAINED and f.codes:
            klass = 3
        elif f.status == EXPLAINED:
            klass = 4
        else:
            klass = 5
        return (klass, f.line.number)

    pool = [f for f in findings if f.status in (EXPLAINED, UNKNOWN) and (f.failure or f.missing or
            set(f.signals) & _ROOT_SIGNALS or f.signal is not None)]  # fmt: skip
    return min(pool, key=rank) if pool else None


def judge(findings: list[Finding]) -> Verdict:
    """The verdict over a log's findings (in paste order)."""
    signals = {s for f in findings for s in f.signals}
    decisive = _decisive(findings)
    unknown = tuple(f.line.number for f in findings if f.status == UNKNOWN and f.failure)
    ranked = sorted(_candidates(findings, decisive, signals).values(), key=lambda r: (-r.score, r.cause.id))
    top = tuple(ranked[:MAX_CAUSES])
    undecided = ""
    if len(top) >= 2 and not top[0].pointed and not top[1].pointed:
        tied = [r for r in top if not r.pointed][:3]
        undecided = "\n".join(f"{_short(r.cause)}: {r.cause.tells}" for r in tied if r.cause.tells)
    checks = tuple(dict.fromkeys(r.cause.check for r in top if r.cause.check))
    layer = decisive.layer if decisive else ""
    benign = tuple(f.line.number for f in findings if f.signal is not None and f.signal.benign)
    klass = classes.class_of(top[0].cause.id) if top else ""
    collect = ()
    if not any(r.pointed for r in top):
        tools = frozenset(t for f in findings for t in f.line.tools)
        collect = classes.collect(tools, {f.layer for f in findings if f.layer})
    summary = _summary(decisive)
    if decisive is None and benign:
        summary += f" {len(benign)} line(s) say nothing went wrong (benign): the failure is elsewhere."
    return Verdict(decisive, layer or "unknown", summary, top, undecided, checks, unknown, benign, klass,
                   collect)  # fmt: skip


def _short(c: Cause) -> str:
    """A cause's first clause, for the list of what tells causes apart."""
    return c.cause.split(" (")[0].split(": ")[0].rstrip(".")


def _summary(f: Finding | None) -> str:
    if f is None:
        return "No line of this log reads as an error."
    n = f.line.number
    if f.missing:
        m = f.missing[0]
        where = "onto the DSP by FastRPC" if m.on_dsp else "by the loader"
        return f"line {n}: {m.name} could not be loaded {where}"
    if f.status == UNKNOWN:
        layer = f" (its words name the {f.layer} layer)" if f.layer else ""
        return f"line {n}: an error line q9diff does not know{layer}"
    if f.signal is not None and f.hit is None and not f.codes:
        shown = f.line.shown if len(f.line.shown) <= 120 else f.line.shown[:119] + "…"
        name = classes.classes()[f.signal.klass].name
        return f"line {n}: {shown!r}: {name}, in the words of {f.signal.layer}"
    what = f.hit.entry.text if f.hit else "an error number"
    codes = f.codes[:1]
    code = f" = {codes[0].shown} {codes[0].name}" if codes else ""
    return f"line {n}: {what!r}{code}"
