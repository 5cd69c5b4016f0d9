"""Every line of a pasted log accounted for: explained (a message of the catalogue or of the curated
knowledge, a library a loader could not open, an error number), context (a timestamp, a banner, progress,
a prompt, an information line), or unknown (with the layer its own words name, when they name one).

Generic findings come before specific ones: a line naming a library that could not be opened is that,
whatever message it is also part of; a number written in the line is the line's code, whatever code the
message usually ends with.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import cache

from q9diff.explain import catalogue, classes, needles
from q9diff.explain.catalogue import WORD, collapse, normal
from q9diff.explain.codes import CODES_PATH, Cause, Code, by_name, by_value, causes, fastrpc_value
from q9diff.explain.lines import (
    MAX_LINE,
    NO_TOOLS,
    TOOL_WORDS,
    Line,
    Missing,
    adsp_path_with_colons,
    missing,
    names,
    numbers,
    read,
    triggers,
)
from q9diff.explain.lines import signals as line_signals

EXPLAINED, CONTEXT, UNKNOWN = "explained", "context", "unknown"
# Words that make a line read as a failure when its level does not say.
_FAILURE = re.compile(
    "error|fail|cannot|can't|unable|not found|invalid|unsupported|mismatch|denied|no such|could not"
    "|couldn't|exception|abort|fault|crash|panic|killed"
)


@dataclass(frozen=True)
class Curated:
    """What q9diff knows of a message beyond its text: its meaning, the codes it usually ends with, the
    causes behind it and what it signals (codes.json's `messages`)."""

    text: str
    library: str  # for a message no catalogued library prints (a third-party runtime's), its printer
    meaning: str
    codes: tuple[int, ...]
    causes: tuple[Cause, ...]
    signals: tuple[str, ...]
    source: str
    pieces: tuple[str, ...]
    level: str = ""  # for a third-party message: the level its printer logs it at ('' for unknown)


@dataclass(slots=True, unsafe_hash=True)
class Finding:
    """What one line is."""

    line: Line
    status: str  # explained, context or unknown
    how: str  # what recognised it: the catalogue, a loader's failure, an error number, a context kind
    hit: catalogue.Hit | None
    curated: Curated | None
    codes: tuple[Code, ...]  # the codes the line names (its own number first) or its message ends with
    own_number: bool  # the codes are the number written in the line, not the message's usual ones
    missing: tuple[Missing, ...]
    signals: tuple[str, ...]
    layer: str
    note: str
    level: str  # the line's level, else its message's ('' for none)
    failure: bool  # an error line: see `failing`
    signal: classes.Signal | None = None  # the failure class (or benign noise) the line's words name
    weak: bool = False  # its only knowledge is a catalogued message of fewer than four words
    hint: str = ""  # for an unknown error line, the class its words suggest (it decides nothing)


@cache
def curated() -> tuple[Curated, ...]:
    data = json.loads(CODES_PATH.read_text(encoding="utf-8"))
    table = causes()
    return tuple(
        Curated(r["text"], r.get("library", ""), r["meaning"], tuple(r.get("codes", ())),
                tuple(table[c] for c in r.get("causes", ())), tuple(r.get("signals", ())), r["source"],
                catalogue.pieces_of(r["text"])[0], r.get("level", ""))
        for r in data["messages"]
    )  # fmt: skip


@cache
def _curated_by_pieces() -> dict[tuple[str, ...], Curated]:
    """Curated messages by their literal pieces (a library's %u and the curated %d are one message)."""
    return {c.pieces: c for c in curated()}


def known(entry: catalogue.Entry) -> Curated | None:
    """What q9diff knows of a catalogued message beyond its text, if anything: the curated message of its
    pieces, else the longest curated one-piece message (20 characters or more) its first piece extends
    (a library's form that only adds a field: 'Failed to finalize QNN graph. Error code: %d')."""
    found = _curated_by_pieces().get(entry.pieces)
    if found is not None or not entry.pieces:
        return found
    first = entry.pieces[0]
    return next((c for c in _one_piece() if first.startswith(c.pieces[0]) and first != c.pieces[0]), None)


@cache
def _one_piece() -> tuple[Curated, ...]:
    """The curated messages of one piece of 20 characters or more, the longest first."""
    one = [c for c in curated() if len(c.pieces) == 1 and len(c.pieces[0]) >= 20]
    return tuple(sorted(one, key=lambda c: -len(c.pieces[0])))


@cache
def _logged() -> dict[str, tuple[tuple[Curated, catalogue.Entry], ...]]:
    """The curated messages no catalogued library holds (a third-party runtime's, an older QAIRT's), as
    entries filed under their longest safe word."""
    out: dict[str, list] = {}
    for c in curated():
        if c.library:
            e = catalogue.make_entry(c.text, {c.library: f"{c.level or '-'} "})
            words = catalogue.safe_words(e.pieces, e.starts_with_field) or {""}
            out.setdefault(max(words, key=len), []).append((c, e))
    return {k: tuple(v) for k, v in out.items()}


def _curated_hit(line: Line, tokens: frozenset[str]) -> tuple[Curated, catalogue.Hit] | None:
    """A curated message no catalogued library prints, found in the line."""
    table = _logged()
    for word in tokens & table.keys():
        for c, e in table[word]:
            hit = catalogue.match(e, line.body, line.shown)
            if hit is not None:
                return c, hit
    return None


def _allowed(hit: catalogue.Hit, tools: frozenset[str]) -> bool:
    """A message printed only by one tool's own library (Genie's, ONNX Runtime's, ExecuTorch's) is not
    used to explain a log that names other tools and not that one."""
    owners = hit.entry.tools
    return not owners or not tools or bool(owners & tools)


# A line's head that varies between otherwise equal lines: a timestamp, process and thread ids.
_HEAD = re.compile(r"^[\d:.\-/ tz\[\]]{0,48}")
_HEAD_CHARS = "0123456789:.-/ tz[]"  # _HEAD's characters in an ASCII line


def _again(d: Finding, line: Line) -> Finding:
    """Finding `d` of an earlier line, for `line` of the same text (its own number, cut and shown text)."""
    return Finding(line, d.status, d.how, d.hit, d.curated, d.codes, d.own_number, d.missing, d.signals,
                   d.layer, d.note, d.level, d.failure, d.signal, d.weak, d.hint)  # fmt: skip


def find(
    number: int, raw: str, tools: frozenset[str], whole_query: bool, seen: dict | None = None
) -> Finding:
    """What line `number` (its text `raw`) is, in a log whose lines name `tools`. `whole_query`: the
    line is all that was asked (a piece of a message is then looked for too). `seen`: what lines read
    so far were, by their text after a timestamp and process ids (a log repeats its lines; equal text
    is an equal finding, read once)."""
    shown = collapse(raw[:MAX_LINE])
    body = normal(shown)
    key = body[_HEAD.match(body).end() :]
    done = seen.get(key) if seen is not None else None
    if done is not None:
        old = done.line
        line = Line(number, len(raw) > MAX_LINE, shown, body, old.level, old.tools, old.layer, old.context)
        return _again(done, line)
    if not whole_query and _plain(body, WORD.findall(body)):
        WORK["plain"] += 1
        line = Line(number, len(raw) > MAX_LINE, shown, body, "", NO_TOOLS, "", "")
        done = Finding(line, UNKNOWN, "", None, None, (), False, (), (), "", "", "",
                       _FAILURE.search(body) is not None)  # fmt: skip
    else:
        WORK["read"] += 1
        done = _find(*read(number, raw, shown, body), tools, whole_query)
    if seen is not None:
        seen[key] = done
    return done


def find_all(
    raws: list[str],
    lowered: list[str],
    words_of_paste: frozenset[str],
    tools: frozenset[str],
    whole_query: bool,
) -> list[Finding]:
    """`find` of every line of a paste, in order, sharing one `seen`: equal to
    [find(i + 1, r, tools, whole_query, seen) for i, r in enumerate(raws, ...)], in one loop. `lowered`:
    the same lines with ASCII letters in lower case (the paste lowered once: `normal` maps one character to
    one, so a lowered line collapsed is the collapsed line lowered). `words_of_paste`: WORD's words of the
    whole lowered paste; a line's words are among them (blanks never join nor split a word), so when none
    of them files a message no line that is not cut short needs its own words looked up."""
    seen: dict = {}
    out: list[Finding] = []
    known, start, found, rest = _prefilter()
    head, words, failure = _HEAD.match, WORD.findall, _FAILURE.search
    anywhere_known = not known.isdisjoint(words_of_paste)
    plain = read_in_full = 0
    for number, (raw, low) in enumerate(zip(raws, lowered), 1):
        cut = len(raw) > MAX_LINE
        shown = " ".join(raw[:MAX_LINE].split())
        body = " ".join(low[:MAX_LINE].split())
        if body.isascii():  # _HEAD without a regex: its characters, at most 48 of them
            key = body[min(len(body) - len(body.lstrip(_HEAD_CHARS)), 48) :]
        else:
            key = body[head(body).end() :]
        d = seen.get(key)
        if d is not None:
            old = d.line
            line = Line(number, cut, shown, body, old.level, old.tools, old.layer, old.context)
            out.append(_again(d, line))
            continue
        if (
            not whole_query
            and (not (anywhere_known or cut) or known.isdisjoint(words(body)))
            and start.match(body) is None
            and found.search(body) is None
            and (rest is None or rest.search(body) is None)
        ):
            plain += 1
            line = Line(number, cut, shown, body, "", NO_TOOLS, "", "")
            fails = failure(body) is not None
            d = Finding(line, UNKNOWN, "", None, None, (), False, (), (), "", "", "", fails)
        else:
            read_in_full += 1
            d = _find(*read(number, raw, shown, body), tools, whole_query)
        seen[key] = d
        out.append(d)
    WORK["plain"] += plain
    WORK["read"] += read_in_full
    return out


# How many lines were read in full and how many were found plain by the prefilter (a count of work, for
# the test that a paste costs work linear in its lines).
WORK: Counter = Counter()


@cache
def _prefilter() -> tuple[frozenset[str], re.Pattern, re.Pattern, re.Pattern | None]:
    """The words any catalogued, curated or tool-naming lookup files a message under; one pattern joining
    the patterns a line's reading tries at its start; and every other pattern of its reading and of the
    failure classes (lines.triggers), as the needles one of which any of their matches holds (one trie
    pattern) and the patterns that have none (needles.split)."""
    known = frozenset(catalogue.index()) | frozenset(_logged()) | frozenset(TOOL_WORDS)
    anchored, others = triggers()
    found, rest = needles.split([*others, classes.pattern_text(), classes.hint_pattern_text()])
    return known, re.compile("|".join(f"(?:{p})" for p in anchored)), found, rest


def _plain(body: str, tokens: list[str]) -> bool:
    """A line no lookup can say more of than 'unknown': none of its words files a message or names a tool,
    no pattern of its reading matches it at its start, and it holds none of the needles of the others nor
    matches those that have none. Most of a long paste's lines are such; they are found in one set test
    and a few searches instead of a full reading."""
    known, start, found, rest = _prefilter()
    return (
        known.isdisjoint(tokens)
        and start.match(body) is None
        and found.search(body) is None
        and (rest is None or rest.search(body) is None)
    )


def _find(line: Line, tokens: frozenset[str], tools: frozenset[str], whole_query: bool) -> Finding:
    hits = [h for h in catalogue.find(line.body, tokens, line.shown) if _allowed(h, tools)]
    best = hits[0] if hits else None
    about = known(best.entry) if best else None
    third = _curated_hit(line, tokens)
    if third is not None and (best is None or third[1].score >= best.score):
        about, best = third
    if best is None and whole_query:
        entries = [e for e in catalogue.fragment(line.body) if not e.tools or not tools or e.tools & tools]
        if entries:
            best = catalogue.Hit(entries[0], (), (), False, entries[0].letters)
            about = known(entries[0])
    lost = missing(line)
    codes, own = _codes(line, best, about)
    signals = set(about.signals if about else ()) | line_signals(line)
    for m in lost:
        signals.add("library")
        if m.library is not None and m.library.kind in ("skel", "stub"):
            signals.add(m.library.kind)
        elif m.on_dsp:
            signals.add("skel")
    colon_path = adsp_path_with_colons(line)
    if colon_path:
        signals.add("adsp_separator")
    layer = _layer(line, best, lost)
    if lost:
        how = "a library that could not be opened"
    elif best is not None:
        how = "the catalogue" if best.complete else "the catalogue (another version's form of the message)"
        if about is not None and about.library:
            how = "a message seen in logs of " + about.library
    elif codes:
        how = "an error number"
    elif colon_path:
        how = "ADSP_LIBRARY_PATH"
    else:
        how = ""
    note = f"ADSP_LIBRARY_PATH as written here: {colon_path}" if colon_path else ""
    sig = None if line.level in ("I", "V", "D") else classes.signal_of(line.body)  # information says none
    if sig is None and best is not None and line.level not in ("I", "V", "D") and not _weak(best, lost, ()):
        sig = classes.message_signal(best.entry.libraries, best.entry.text.lower())
    if sig is not None and sig.benign and not lost and not (own and codes):
        f = _finding(line, CONTEXT, f"benign ({sig.layer}): {sig.says}", best, about, (), False, (), (),
                     sig.layer, "")  # fmt: skip
        return replace(f, failure=False, signal=sig)
    if sig is not None and not sig.benign:
        how = how if lost or own or (best is not None and not _weak(best, lost, ())) else ""
        how = how or f"the words of {sig.layer}"
        found = tuple(sorted(signals))
        f = _finding(line, EXPLAINED, how, best, about, codes, own, tuple(lost), found, sig.layer, note)
        return replace(f, signal=sig, failure=True)
    if how:
        found = tuple(sorted(signals))
        f = _finding(line, EXPLAINED, how, best, about, codes, own, tuple(lost), found, layer, note)
        return replace(f, weak=True, layer=line.layer) if _weak(best, lost, codes if own else ()) else f
    if line.context:
        return _finding(line, CONTEXT, line.context, None, None, (), False, (), (), "", "")
    f = _finding(line, UNKNOWN, "", None, None, (), False, (), (), line.layer, "")
    hint = "" if line.level in ("I", "V", "D") else classes.hint_of(line.body)  # information suggests none
    return replace(f, hint=hint) if hint else f


def words_of(entry: catalogue.Entry) -> int:
    """The words (three letters or more) of a message's literal text."""
    return sum(len(WORD.findall(p.lower())) for p in entry.pieces)


def _weak(hit: catalogue.Hit | None, lost, codes) -> bool:
    """A line known only as a catalogued message of fewer than four words (`NOT supported`, `fail to
    initialize`): it is said what it is, but it decides no verdict alone (no library, no number). A field
    between two pieces of words counts as a word: the line holds its value there, bound on both sides
    ('Backend %s is not registered.' is four)."""
    if hit is None or lost or codes:
        return False
    worded = [bool(catalogue.WORD.search(p)) for p in hit.entry.pieces]
    inner = sum(a and b for a, b in zip(worded, worded[1:]))
    return words_of(hit.entry) + inner < classes.MIN_WORDS


def _finding(
    line: Line, status: str, how: str, hit, curated, codes, own, lost, signals, layer, note
) -> Finding:
    level = line.level or (hit.entry.level if hit is not None else "")
    return Finding(line, status, how, hit, curated, codes, own, lost, signals, layer, note, level,
                   failing(line, level, codes, own))  # fmt: skip


def failing(line: Line, level: str, codes, own: bool) -> bool:
    """An error line: its level says so, or (no level written) its words read as a failure or it writes
    an error number of its own."""
    if level:
        return level == "E"
    if own and any(c.value != 0 for c in codes):
        return True
    return _FAILURE.search(line.body) is not None


def _layer(line: Line, hit: catalogue.Hit | None, lost: list[Missing]) -> str:
    if lost:
        return "FastRPC transport" if any(m.on_dsp for m in lost) else "library loading"
    if hit is not None:
        return hit.entry.layer if hit.entry.places[0].versions else line.layer or "framework"
    return line.layer


def _codes(line: Line, hit: catalogue.Hit | None, known: Curated | None) -> tuple[tuple[Code, ...], bool]:
    """The codes a line names: the numbers written in it as error numbers (its message's numeric fields
    that hold a known code, and any 'err N', 'status 0x..', FastRPC 0x8000xxxx) win over the codes its
    message usually ends with."""
    written: list[int] = list(numbers(line))
    if hit is not None:
        for n in code_fields(hit):
            if n not in written:
                written.append(n)
    found: list[Code] = []
    for n in written:
        found += _codes_of(n, line)
    for name in names(line):
        found += by_name(name)
    if found:
        return tuple(dict.fromkeys(found)), True
    usual = [c for v in (known.codes if known else ()) for c in by_value(v, "genie" if v < 0 else "qnn")]
    return tuple(dict.fromkeys(usual)), False


_ERRORISH = ("err", "error", "status", "code", "result", "ret", "failed", "failure", "returned", "0x")


def code_fields(hit: catalogue.Hit) -> list[int]:
    """The numbers a message's fields hold that are error numbers: a field right after an error word
    (err, error, status, code, failed ... and an optional ':', '=' or '0x'), or the one numeric field of a
    message that reports a failure."""
    entry = hit.entry
    numeric = [k for k, n in enumerate(hit.numbers) if n is not None]
    failing = any(
        w in entry.text.lower() for w in ("fail", "error", "unable", "cannot", "can't", "could not")
    )
    out = []
    for k in numeric:
        before = entry.pieces[k].rstrip(" :=(,").rstrip()
        word = before.rsplit(" ", 1)[-1] if before else ""
        if word.endswith(_ERRORISH) or (len(numeric) == 1 and failing):
            out.append(hit.numbers[k])
    return out


def _codes_of(n: int, line: Line) -> tuple[Code, ...]:
    """The codes number `n` in `line` stands for: FastRPC's for 0x8000xxxx (or a small number in a
    FastRPC line, but for its file opens' errno values), Genie's for -14..4 in a Genie line, QNN's
    otherwise (1000 and up)."""
    rpc = fastrpc_value(n)
    if rpc is not None:
        return by_value(rpc, "fastrpc")
    if "apps_std_fopen" in line.body and 0 < n < 0x400:
        return ()  # FastRPC's file open on the DSP's behalf writes fopen's errno: 0x2 ENOENT, 0xd EACCES
    if line.layer == "FastRPC transport" and 0 < n < 0x400:
        return by_value(n, "fastrpc")
    if -14 <= n <= 4 and "Genie" in line.tools:
        return by_value(n, "genie")
    if n >= 1000:
        return by_value(n, "qnn")
    return ()
