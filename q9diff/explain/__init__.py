"""What an error number or a pasted log line of QNN, Genie or ONNX Runtime's QNN EP means, which causes
produce it, and which q9diff command tells which one applies: `q9diff explain`.

The knowledge is data, `codes.json` beside this file (its sources in SOURCES.md): every error value of
Qualcomm's public QNN and Genie headers with its C name and API (facts; the meanings and causes are our
own sentences), and the log lines measured in Qualcomm's runtime libraries or quoted from public threads,
each with a pattern that finds it in a pasted line. Every cause says how it is known: measured here,
documented by Qualcomm, or reported in a public thread.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CODES_PATH = Path(__file__).with_name("codes.json")
TERMS_PATH = Path(__file__).with_name("terms.json")  # the words q9diff's reports use, in a few words each
MAX_LINE = 4096  # a pasted log line is read this far: the patterns are searched, never run on megabytes
MAX_LINES = 2000


@dataclass(frozen=True)
class Cause:
    cause: str
    evidence: str  # measured, documented or reported
    source: str
    check: str | None  # the q9diff command that tells whether this cause applies, None where none can


@dataclass(frozen=True)
class Code:
    """One error value as one header names it (a value can carry several names: 1002 is the MEM_ALLOC
    of eight APIs, 30010 two QNN System tables)."""

    value: int
    name: str
    api: str
    source: str
    meaning: str
    causes: tuple[Cause, ...]
    alias_of: str | None
    runtimes: tuple[str, ...]  # QAIRT versions whose libQnnHtp error table names it (measured)

    @property
    def hex(self) -> str:
        return f"0x{self.value:x}" if self.value >= 0 else ""


@dataclass(frozen=True)
class Message:
    """A log line a runtime prints, with the pattern that finds it in a pasted line."""

    text: str
    pattern: re.Pattern
    library: str
    versions: tuple[str, ...]  # QAIRT versions whose library holds the text; () where only logs show it
    meaning: str
    codes: tuple[int, ...]
    causes: tuple[Cause, ...]
    source: str


@dataclass(frozen=True)
class Term:
    """A word q9diff's reports use (VTCM, dsp_arch, effects, the two places ...), in a few words."""

    term: str
    also: tuple[str, ...]
    says: str
    see: str


@dataclass(frozen=True)
class Match:
    """What one query explains: the messages found in it and the codes it names (as a number, a hex
    value or a C name, alone or inside a pasted line), or the term it is."""

    query: str
    messages: tuple[Message, ...]
    codes: tuple[Code, ...]
    terms: tuple[Term, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.messages or self.codes or self.terms)

    def to_json(self) -> dict:
        def cause(c: Cause) -> dict:
            return {"cause": c.cause, "evidence": c.evidence, "source": c.source, "check": c.check}

        return {
            "query": self.query,
            "messages": [
                {
                    "text": m.text,
                    "library": m.library,
                    "versions": list(m.versions),
                    "meaning": m.meaning,
                    "codes": list(m.codes),
                    "causes": [cause(c) for c in m.causes],
                    "source": m.source,
                }
                for m in self.messages
            ],  # fmt: skip
            "codes": [
                {
                    "value": c.value,
                    "hex": c.hex,
                    "name": c.name,
                    "api": c.api,
                    "source": c.source,
                    "meaning": c.meaning,
                    "alias_of": c.alias_of,
                    "causes": [cause(x) for x in c.causes],
                }
                for c in self.codes
            ],  # fmt: skip
            "terms": [{"term": t.term, "says": t.says, "see": t.see} for t in self.terms],
        }


def _causes(rows) -> tuple[Cause, ...]:
    return tuple(Cause(r["cause"], r["evidence"], r["source"], r.get("check")) for r in rows)


@cache
def table() -> tuple[tuple[Code, ...], tuple[Message, ...]]:
    """Every code (QNN and Genie) and message, read once from codes.json."""
    data = json.loads(CODES_PATH.read_text(encoding="utf-8"))
    codes = tuple(
        Code(r["value"], r["name"], r["api"], r["source"], r["meaning"], _causes(r["causes"]),
             r.get("alias_of"), tuple(r.get("runtimes", ())))
        for r in (*data["codes"], *data["genie"])
    )  # fmt: skip
    messages = tuple(
        Message(r["text"], re.compile(r["match"]), r["library"], tuple(r["versions"]), r["meaning"],
                tuple(r["codes"]), _causes(r["causes"]), r["source"])
        for r in data["messages"]
    )  # fmt: skip
    return codes, messages


# A code in a pasted line: "err 5000", "0x1388", "Error code: 6031", "error: 1002", "status -1".
_NUMBER = re.compile(r"^\s*(-?\d{1,6}|0x[0-9a-fA-F]{1,8})\s*$")
_IN_LINE = re.compile(
    r"(?:\berr(?:or)?(?:\s+code)?\s*[:=]?\s*|\bstatus\s*[:=]?\s*|\bcode\s*[:=]\s*)(-?\d{1,6}|0x[0-9a-fA-F]{1,8})\b"
    r"|\b(0x[0-9a-fA-F]{3,8})\b",
    re.I,
)
_NAME = re.compile(r"\b(?:QNN|GENIE)_[A-Z0-9_]+\b")


def _number(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


@cache
def terms() -> tuple[Term, ...]:
    """Every term of the glossary, read once from terms.json."""
    data = json.loads(TERMS_PATH.read_text(encoding="utf-8"))
    return tuple(Term(r["term"], tuple(r.get("also", ())), r["says"], r["see"]) for r in data["terms"])


def term(word: str) -> Term | None:
    """The glossary entry `word` names (the term or one of its other names, in any case), or None."""
    key = " ".join(word.split()).casefold()
    return next((t for t in terms() if key in {t.term.casefold(), *(a.casefold() for a in t.also)}), None)


def explain(query: str) -> Match:
    """What `query` means: an error number (5000, 0x1388, -1 for Genie), a C name
    (QNN_CONTEXT_ERROR_INVALID_ARGUMENT), or pasted log lines, each searched for the known messages and
    the codes it names (a line's own code where it gives one, else the codes its message is known to
    end with). Nothing known: an empty Match."""
    named = term(query) if len(query) < 64 else None
    if named is not None:
        return Match(query, (), (), (named,))
    codes, messages = table()
    found_m: dict[int, Message] = {}
    values: list[int] = []
    names: list[str] = []
    for line in query.splitlines()[:MAX_LINES] or [""]:
        line = line[:MAX_LINE]
        bare = _NUMBER.match(line)
        if bare:
            values.append(_number(bare.group(1)))
            continue
        hits = [i for i, m in enumerate(messages) if _said(m, line)]
        found_m.update((i, messages[i]) for i in hits)
        own = [_number(a or b) for a, b in _IN_LINE.findall(line)]
        values += own or [v for i in hits for v in messages[i].codes]
        names += _NAME.findall(line)
    chosen = [c for v in dict.fromkeys(values) for c in codes if c.value == v]
    chosen += [c for n in dict.fromkeys(names) for c in codes if c.name == n]
    return Match(query, tuple(m for _, m in sorted(found_m.items())), tuple(dict.fromkeys(chosen)))


PLACEHOLDERS = re.compile(r"%[-+ #0-9.]*[a-z]+|\{[^}]*\}|…|\.\.\.")


def _said(m: Message, line: str) -> bool:
    """The message is in the line: its pattern matches (in any case), or the line is a piece of at least
    three words of its text (a user pastes "Unsupported HTP arch")."""
    if m.pattern.search(line) or re.search(m.pattern.pattern, line, re.I):
        return True
    piece = " ".join(line.split()).lower()
    if len(piece.split()) < 3:
        return False
    return any(piece in part.lower() for part in PLACEHOLDERS.split(m.text) if len(part) >= len(piece))


def primary(codes: tuple[Code, ...]) -> list[tuple[Code, list[str]]]:
    """Each value once: the entry that defines it, with the other names tables give the same value."""
    out: dict[tuple[int, str], tuple[Code, list[str]]] = {}
    for c in codes:
        key = (c.value, "genie" if c.api == "genie" else "qnn")
        if key not in out:
            out[key] = (c, [])
        elif out[key][0].alias_of is not None and c.alias_of is None:
            out[key] = (c, [out[key][0].name, *out[key][1]])
        else:
            out[key][1].append(c.name)
    return list(out.values())


def glossary_size() -> tuple[int, int]:
    """How many codes and messages are known (for the line that says a query is not among them)."""
    codes, messages = table()
    return len(codes), len(messages)
