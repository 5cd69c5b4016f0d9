"""`q9diff explain`'s entry: what a query is (a term, an error number or C name, or a log read line by
line with one verdict over it), and the JSON it is written as."""

from __future__ import annotations

import gc
import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from q9diff.explain import catalogue
from q9diff.explain.codes import Cause, Code, by_name, by_value, codes, fastrpc_value, primary
from q9diff.explain.lines import tools_of
from q9diff.explain.log import CONTEXT, EXPLAINED, UNKNOWN, Finding, curated, find_all
from q9diff.explain.verdict import Verdict, judge

__all__ = ["Cause", "Code", "Explanation", "Term", "explain", "load", "primary", "sizes", "term", "terms"]

TERMS_PATH = Path(__file__).with_name("terms.json")  # the words q9diff's reports use, in a few words each
MAX_LINES = 200_000
_NUMBER = re.compile(r"(-?\d{1,10}|0x[0-9a-f]{1,8})")
_NAME = re.compile(r"(?:QNN|GENIE|AEE)_[A-Z0-9_]{2,80}")
_NAME_STARTS = ("QNN_", "GENIE_", "AEE_")


@dataclass(frozen=True)
class Term:
    """A word q9diff's reports use (VTCM, dsp_arch, effects, the two places ...), in a few words."""

    term: str
    also: tuple[str, ...]
    says: str
    see: str


@dataclass(frozen=True)
class Explanation:
    """What a query is: a code, a C name or a term (`codes`, `terms`), or a log (`findings`, one per
    line, and the `verdict` over them)."""

    query: str
    codes: tuple[Code, ...]
    terms: tuple[Term, ...] = ()
    findings: tuple[Finding, ...] = ()
    verdict: Verdict | None = None

    def __bool__(self) -> bool:
        return bool(self.codes or self.terms or any(f.status == EXPLAINED for f in self.findings))

    @property
    def is_log(self) -> bool:
        return self.verdict is not None

    @property
    def messages(self) -> tuple[Finding, ...]:
        """The findings that are messages q9diff knows (catalogued or curated), once per message."""
        seen, out = set(), []
        for f in self.findings:
            if f.hit is not None and f.hit.entry.text not in seen:
                seen.add(f.hit.entry.text)
                out.append(f)
        return tuple(out)

    def counts(self) -> dict[str, int]:
        n = Counter(f.status for f in self.findings)
        return {s: n[s] for s in (EXPLAINED, CONTEXT, UNKNOWN)}

    def to_json(self) -> dict:
        """The q9diff.explain/1 document (without its schema id)."""
        return {
            "query": self.query if len(self.query) <= 4096 else self.query[:4096],
            "messages": [_message_json(f) for f in self.messages],
            "codes": [_code_json(c) for c in self.codes],
            "terms": [{"term": t.term, "says": t.says, "see": t.see} for t in self.terms],
            "verdict": self.verdict.to_json() if self.verdict else None,
            "lines": runs(self.findings),
        }


def _cause_json(c: Cause) -> dict:
    return {"cause": c.cause, "evidence": c.evidence, "source": c.source, "check": c.check}


def _code_json(c: Code) -> dict:
    causes = [_cause_json(x) for x in c.causes]
    return {"value": c.value, "hex": c.hex, "name": c.name, "api": c.api, "source": c.source,
            "meaning": c.meaning, "alias_of": c.alias_of, "causes": causes}  # fmt: skip


def _message_json(f: Finding) -> dict:
    e, known = f.hit.entry, f.curated
    first = e.places[0]
    return {
        "text": e.text,
        "library": known.library if known and known.library else first.library,
        "versions": list(first.versions),
        "libraries": [
            {"library": p.library, "level": p.level, "versions": list(p.versions)} for p in e.places
        ],
        "layer": f.layer,
        "meaning": known.meaning if known else "",
        "codes": list(known.codes) if known else [],
        "causes": [_cause_json(c) for c in (known.causes if known else ())],
        "source": known.source if known else "catalogue.json",
    }


def _line_json(f: Finding) -> dict:
    """One line's entry: what it is; the message, the values of its fields, the codes, the libraries that
    could not be opened and the signals only where there are any."""
    row = {"first": f.line.number, "last": f.line.number, "status": f.status, "level": f.level, "how": f.how,
           "layer": f.layer}  # fmt: skip
    if f.hit is not None:
        row |= {"message": f.hit.entry.text, "complete": f.hit.complete, "values": list(f.hit.values)}
    if f.codes:
        row |= {"codes": [{"value": c.value, "name": c.name, "api": c.api} for c in f.codes],
                "own_number": f.own_number}  # fmt: skip
    if f.missing:
        row["missing"] = [
            {"name": m.name, "on_dsp": m.on_dsp, "reason": m.reason,
             "ships": m.library.ships if m.library else None,
             "variable": m.library.variable if m.library else None}
            for m in f.missing
        ]  # fmt: skip
    if f.signals:
        row["signals"] = list(f.signals)
    if f.line.cut:
        row["cut"] = True
    return row


def runs(findings) -> list[dict]:
    """Each explained line on its own; a run of context lines, or of unknown lines alike (same level and
    layer), as one entry from its first line to its last: every line is in exactly one entry."""
    out: list[dict] = []
    for f in findings:
        row = _line_json(f)
        prev = out[-1] if out else None
        same = (
            prev is not None
            and f.status != EXPLAINED
            and prev["status"] == f.status
            and (f.status == CONTEXT or (prev["level"], prev["layer"]) == (row["level"], row["layer"]))
        )
        if same and prev["last"] == f.line.number - 1:
            prev["last"] = f.line.number
            if f.status == CONTEXT and f.how not in prev["how"].split("; "):
                prev["how"] += "; " + f.how
            continue
        out.append(row)
    return out


@cache
def terms() -> tuple[Term, ...]:
    """Every term of the glossary, read once from terms.json."""
    data = json.loads(TERMS_PATH.read_text(encoding="utf-8"))
    return tuple(Term(r["term"], tuple(r.get("also", ())), r["says"], r["see"]) for r in data["terms"])


def term(word: str) -> Term | None:
    """The glossary entry `word` names (the term or one of its other names, in any case), or None."""
    key = " ".join(word.split()).casefold()
    return next((t for t in terms() if key in {t.term.casefold(), *(a.casefold() for a in t.also)}), None)


def code_query(text: str) -> tuple[Code, ...]:
    """The codes a query of one number or C name means: QNN's and Genie's for a number (5000, 0x1388,
    -1), FastRPC's for 0x8000xxxx (or AEE_ names); () when `text` is neither."""
    t = text.strip()
    if _NAME.fullmatch(t):
        return by_name(t)
    if not _NUMBER.fullmatch(t.lower()):
        return ()
    n = int(t, 16) if t.lower().startswith("0x") else int(t)
    rpc = fastrpc_value(n)
    if rpc is not None:
        return by_value(rpc, "fastrpc")
    return (*by_value(n, "qnn"), *by_value(n, "genie"))


def explain(query: str) -> Explanation:
    """What `query` means: a term, an error number or C name, or pasted log lines (each accounted for,
    then one verdict). Nothing known: a falsy Explanation."""
    single = query.strip()
    if "\n" not in single and len(single) < 64:
        named = term(single)
        if named is not None:
            return Explanation(query, (), (named,))
        found = code_query(single)
        if found:
            return Explanation(query, found)
    raw = query.split("\n")[:MAX_LINES]
    if raw and raw[-1] == "":
        raw = raw[:-1]
    lowered = catalogue.normal(query)
    words = frozenset(catalogue.WORD.findall(lowered))
    tools = tools_of(words)
    nonblank = (r for r in raw if r.strip())
    whole = next(nonblank, None) is not None and next(nonblank, None) is None  # one line with text
    low = lowered.split("\n")[: len(raw)]
    if "\r" in query:
        raw, low = [r.rstrip("\r") for r in raw], [r.rstrip("\r") for r in low]
    enabled = gc.isenabled()
    gc.disable()  # a paste's findings hold no cycles: a collector pass over them per 700 made is waste
    try:
        findings = find_all(raw, low, words, tools, whole)
    finally:
        if enabled:
            gc.enable()
    named = [c for f in findings for c in f.codes]
    if any(n in query for n in _NAME_STARTS):  # (a paste with no such name skips a search per line)
        for f in findings:
            named += [c for n in _NAME.findall(f.line.shown) for c in by_name(n)]
    return Explanation(query, tuple(dict.fromkeys(named)), (), tuple(findings), judge(findings))


def load() -> None:
    """Read every table now (the catalogue, its index, the codes, the curated messages), so that a
    caller timing or freezing memory (gc.freeze) sees them loaded."""
    catalogue.index()
    codes()
    curated()
    terms()


def sizes() -> tuple[int, int, int]:
    """How many codes, catalogued messages and terms are known (for the line that says a query is
    not among them)."""
    return len(codes()), len(catalogue.rows()), len(terms())
