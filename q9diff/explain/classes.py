"""Failure classes over the whole stack (classes.json): packaging and installation, version skew, a
device/arch/SoC mismatch, resources, op support, a defect of a shipped component, configuration, a damaged
file, and benign noise. Each class has its fix in words; every cause of codes.json belongs to one; and a
table of signals names a class in the words of the layer that prints them (pip, ONNX Runtime's core,
NuGet, LiteRT's dispatch, Android's linker, ExecuTorch, FastRPC ...).

A failure signal is four words or more (a shorter phrase never decides a verdict alone); a benign one
says a line reports nothing wrong. A signal is literal words, or a pattern where the layer's message has a
field inside (a header's name, a symbol, a size) whose literal words are four or more. Lines are matched by
one search of one compiled pattern: time linear in the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from q9diff.explain.codes import Cause

CLASSES_PATH = Path(__file__).with_name("classes.json")
BENIGN = "benign"
MIN_WORDS = 4  # a failure signal shorter than this never decides a verdict alone


@dataclass(frozen=True)
class FailureClass:
    id: str
    name: str
    fix: str


@dataclass(frozen=True)
class Signal:
    """Words that name a failure class (or benign noise) in one layer's own messages."""

    klass: str
    layer: str
    words: tuple[str, ...]
    says: str
    source: str
    evidence: str
    patterns: tuple[str, ...] = ()  # regular expressions over the normalised line, without groups

    @property
    def benign(self) -> bool:
        return self.klass == BENIGN


@cache
def _data() -> dict:
    return json.loads(CLASSES_PATH.read_text(encoding="utf-8"))


@cache
def classes() -> dict[str, FailureClass]:
    return {r["id"]: FailureClass(r["id"], r["name"], r["fix"]) for r in _data()["classes"]}


@cache
def signals() -> tuple[Signal, ...]:
    return tuple(
        Signal(r["class"], r["layer"], tuple(r.get("words", ())), r["says"], r["source"], r["evidence"],
               tuple(r.get("patterns", ())))
        for r in _data()["signals"]
    )  # fmt: skip


@cache
def _pattern() -> tuple[re.Pattern, dict[str, Signal], tuple[Signal, ...]]:
    """One pattern for every signal: the literal words, the longest first, then each signal's patterns as
    a group of its own (the group that matched names the signal)."""
    by_words = {w: s for s in signals() for w in s.words}
    alternatives = [re.escape(w) for w in sorted(by_words, key=len, reverse=True)]
    grouped = tuple((s, p) for s in signals() for p in s.patterns)
    alternatives += [f"({p})" for _, p in grouped]
    return re.compile("|".join(alternatives)), by_words, tuple(s for s, _ in grouped)


def pattern_text() -> str:
    """The pattern every signal's words are looked up by, as text (for a prefilter joining patterns)."""
    return _pattern()[0].pattern


def signal_of(body: str) -> Signal | None:
    """The signal a line's normalised text (lower case, blanks collapsed) holds, if any."""
    pattern, by_words, by_group = _pattern()
    m = pattern.search(body)
    if m is None:
        return None
    return by_group[m.lastindex - 1] if m.lastindex else by_words[m.group(0)]


@cache
def _messages() -> tuple[tuple[frozenset[str], re.Pattern, re.Pattern | None, Signal], ...]:
    """classes.json `messages`: a class for the catalogued messages of one layer's libraries whose own
    words say it (every op builder of the QNN EP that says a form is not supported is op support)."""
    return tuple(
        (frozenset(r["libraries"]), re.compile(r["pattern"]),
         re.compile(r["exclude"]) if r.get("exclude") else None,
         Signal(r["class"], r["layer"], (), r["says"], r["source"], r["evidence"], (r["pattern"],)))
        for r in _data().get("messages", ())
    )  # fmt: skip


def message_signal(libraries: tuple[str, ...], text: str) -> Signal | None:
    """The class a catalogued message's library and its own words name (its text in lower case), if
    any; only for messages of four words or more (the caller's test)."""
    for libs, pattern, exclude, signal in _messages():
        if libs & set(libraries) and pattern.search(text) and not (exclude and exclude.search(text)):
            return signal
    return None


@cache
def _hints() -> tuple[re.Pattern, dict[str, str]]:
    rows = _data().get("hints", ())
    by_words = {w: r["class"] for r in rows for w in r["words"]}
    words = [w for r in rows for w in r["words"]]  # table order: the first row that matches wins
    return re.compile("|".join(rf"\b{re.escape(w)}\b" for w in words)), by_words


def hint_pattern_text() -> str:
    """The pattern the hint words are looked up by, as text (for the prefilter)."""
    return _hints()[0].pattern


def hint_of(body: str) -> str:
    """The class an unknown error line's words suggest ('' for none): a hint shown beside the line, never a
    cause and never a verdict (classes.json `hints`, weight 'suggests')."""
    pattern, by_words = _hints()
    found = [m.group(0) for m in pattern.finditer(body)]
    if not found:
        return ""
    order = [w for r in _data()["hints"] for w in r["words"]]
    return by_words[min(found, key=order.index)]


def class_of(cause_id: str) -> str:
    """The class of a cause of codes.json (a library that could not be opened is packaging; a class's own
    cause is that class); '' for an id the table does not list."""
    if cause_id.startswith("missing:"):
        return "packaging"
    if cause_id.startswith("class:"):
        return cause_id.split(":", 1)[1]
    return _data()["cause_class"].get(cause_id, "")


def cause(signal: Signal) -> Cause:
    """The cause a failure signal stands for: what its words say, and its class's fix."""
    k = classes()[signal.klass]
    text = f"{k.name[0].upper()}{k.name[1:]} ({signal.layer}): {signal.says} Fix: {k.fix}"
    return Cause(f"class:{signal.klass}", text, signal.evidence, signal.source, None, ())


def collect(tools: frozenset[str], layers: set[str]) -> tuple[str, ...]:
    """What to collect next, for the tools and layers a log's lines name (the general advice last)."""
    table = _data()["collect"]
    keys = [t for t in sorted(tools) if t in table]
    if any("FastRPC" in x for x in layers) and "FastRPC" not in keys:
        keys.append("FastRPC")
    return tuple(table[k] for k in [*keys, ""])
