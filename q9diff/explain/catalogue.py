"""The messages Qualcomm's libraries, ONNX Runtime's and ExecuTorch's QNN layers and FastRPC can print
(`catalogue.json`, built by scripts/build_explain_catalogue.py from the libraries themselves), and the
matcher that finds one in a pasted line.

A message is a printf-style format string. It is matched as its literal pieces (the text between its
`%d`, `%s`, `{}` fields), found in the line in order, left to right: one `str.find` per piece from where
the last one ended, so a line costs time linear in its length whatever the message. No regular expression
is built from a message. Each message is filed under its rarest whole word (a word no field touches), so
a line is checked only against the messages filed under the words it holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")
# Printf conversions (flags, width, precision, length) and {} fields: the variable parts of a message.
FIELD = re.compile(
    r"%[-+ #0']{0,4}(?:\d{1,3}|\*)?(?:\.(?:\d{1,3}|\*))?(?:hh|h|ll|l|L|z|j|t|q)?([diouxXeEfFgGaAcspn])|\{\}"
)
WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_NUMBER = re.compile(r"[ \t]{0,2}(0x[0-9a-f]{1,16}|-?\d{1,20})")
_HEX = re.compile(r"[ \t]{0,2}(?:0x)?([0-9a-f]{1,16})")
SEVERITY = {"E": 0, "W": 1, "I": 2, "V": 3, "D": 4, "": 5}

# What failed, by the library that prints a message (the first that holds it, in this order).
LAYERS = (
    ("Skel.so", "HTP on the DSP (Skel)"),
    ("Stub.dll", "FastRPC transport (HTP Stub)"),
    ("libcdsprpc.so", "FastRPC transport"),
    ("libGenie.so", "Genie"),
    ("libonnxruntime_providers_qnn.so", "framework (ONNX Runtime QNN EP)"),
    ("onnxruntime_providers_qnn.dll", "framework (ONNX Runtime QNN EP)"),
    ("PyQnnManagerAdaptor.so", "framework (ExecuTorch QNN backend)"),
    ("QnnHtp.dll", "HTP backend"),
    ("QnnHtpPrepare.dll", "compiler and graph finalize"),
    ("libQnnHtpNetRunExtensions.so", "HTP backend extensions (config)"),
    ("libQnnSystem.so", "QNN System (context binary reading)"),
    ("libQnnHtp.so", "HTP backend"),
    ("libHtpPrepare.so", "compiler and graph finalize"),
)
# The libraries of one tool only: their messages never explain another tool's log.
TOOL_OF = {
    "libGenie.so": "Genie",
    "libonnxruntime_providers_qnn.so": "ONNX Runtime",
    "onnxruntime_providers_qnn.dll": "ONNX Runtime",
    "PyQnnManagerAdaptor.so": "ExecuTorch",
}


@dataclass(frozen=True)
class Place:
    library: str
    level: str  # E W I V D, '' where the library gives none
    versions: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """One message: its format string and where it is printed from."""

    text: str
    places: tuple[Place, ...]
    pieces: tuple[str, ...]  # the literal pieces, lower case, blanks collapsed
    fields: tuple[str, ...]  # each field's conversion, in order ('s', 'd', 'x', ...; '' for {})
    starts_with_field: bool
    letters: int  # letters in the literal pieces: how specific the message is
    segments: tuple[tuple[tuple[str, int], ...], ...]  # per piece: (segment, its letters), see `segments`
    level: str  # the most severe level a library gives it
    layer: str  # see `layer_of`
    tools: frozenset[
        str
    ]  # the tools whose own libraries print it; empty when a library every tool loads does

    @property
    def libraries(self) -> tuple[str, ...]:
        return tuple(p.library for p in self.places)


# Words of a backend message about loading a context binary.
_CONTEXT_LOAD = ("context binary", "from binary", "context blob", "deserializ", "pickle", "blob version",
                 "binary version", "createfrombinary")  # fmt: skip


def layer_of(libraries: tuple[str, ...], text: str = "") -> str:
    """What failed when this message is printed: the layer of the library that prints it. A message
    the host-side backend prints too is the backend's (its Skel twin runs the same check on the
    DSP); one only the Skel, only a Stub or only FastRPC prints is theirs; a message only the x86
    backend holds (compiler and backend in one library) is the compiler's in its form
    `file.cc:LINE::ERROR:`, else either's. A backend message about a context binary (its blob, its
    deserialization, a create from binary) is the context load's."""
    libs = set(libraries)
    host = {"QnnHtp.dll", "libQnnHtp.so", "libHtpPrepare.so", "QnnHtpPrepare.dll"}
    for suffix, layer in LAYERS:
        mine = {lib for lib in libs if lib.endswith(suffix)}
        if not mine:
            continue
        if suffix in ("Skel.so", "Stub.dll") and libs & host:
            continue
        if layer in ("HTP backend", "HTP on the DSP (Skel)") and any(
            w in text.lower() for w in _CONTEXT_LOAD
        ):
            return "context load"
        if layer == "HTP backend" and "QnnHtp.dll" not in libs and "libHtpPrepare.so" in libs:
            return "HTP backend or compiler"
        return layer
    return "unknown"


def tools_of(libraries: tuple[str, ...]) -> frozenset[str]:
    owners = {TOOL_OF.get(lib) for lib in libraries}
    return frozenset() if None in owners else frozenset(owners)


@dataclass(frozen=True)
class Hit:
    entry: Entry
    values: tuple[str, ...]  # the text each field stood for, as found in the line
    numbers: tuple[int | None, ...]  # each numeric field's value, None for the others
    complete: bool  # every piece found (else the first ones: another version's form of the message)
    letters: int  # letters of the pieces found

    @property
    def score(self) -> float:
        """How much of the line the message accounts for: its letters found (a partial hit's count
        less), and the numbers it reads."""
        return self.letters * (1.0 if self.complete else 0.75) + 2 * sum(n is not None for n in self.numbers)

    @property
    def rank(self) -> tuple:
        return (-self.score, not self.complete, self.entry.text)


def pieces_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """A format string's literal pieces (lower case, blanks collapsed, empty ones dropped), its fields'
    conversions, and whether it starts with a field."""
    parts = FIELD.split(text)  # literal, conversion, literal, conversion, ...
    literals, fields = parts[0::2], parts[1::2]
    fields = [f or "" for f in fields]
    pieces = tuple(" ".join(p.lower().split()) for p in literals)
    return pieces, tuple(fields), not pieces[0].strip()


def make_entry(text: str, place: dict) -> Entry:
    """An entry from a format string and its {library: "LEVEL VERSIONS"} places."""
    places = []
    for lib, spec in place.items():
        level, _, versions = spec.partition(" ")
        places.append(Place(lib, level.strip("-"), _versions(versions)))
    pieces, fields, lead = pieces_of(text)
    letters = sum(c.isalpha() for p in pieces for c in p)
    segs = tuple(tuple((g, sum(c.isalpha() for c in g)) for g in segments(p)) for p in pieces)
    libs = tuple(p.library for p in places)
    level = min((p.level for p in places), key=SEVERITY.get, default="")
    return Entry(
        text, tuple(places), pieces, fields, lead, letters, segs, level, layer_of(libs, text), tools_of(libs)
    )


def _versions(spec: str) -> tuple[str, ...]:
    """The versions of a catalogue place: runs of consecutive QAIRT releases (2.47-2.51) or labels."""
    out: list[str] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        if b and a.startswith("2.") and b.startswith("2."):
            lo, hi = int(a.split(".")[1]), int(b.split(".")[1])
            out += [f"2.{n}" for n in range(lo, hi + 1)]
        elif a:
            out.append(part)
    return tuple(out)


@cache
def document() -> dict:
    return json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))


def rows() -> list:
    """The catalogue's rows: [text, index into its places, the word it is filed under]."""
    return document()["messages"]


@cache
def entry(i: int) -> Entry:
    """Message number `i` of the catalogue, its format string parsed (once, when first asked for)."""
    text, place, _ = rows()[i]
    return make_entry(text, document()["places"][place])


def safe_words(pieces: tuple[str, ...], lead: bool) -> set[str]:
    """The whole words of a message that a line holding it must hold too: words inside a literal piece,
    not touching a field (a field's value can run into the word: `err%d` prints `err5000`)."""
    out = set()
    for k, piece in enumerate(pieces):
        for m in WORD.finditer(piece):
            touches_left = m.start() == 0 and (k > 0 or lead)
            touches_right = m.end() == len(piece) and k < len(pieces) - 1
            before = piece[m.start() - 1] if m.start() else " "
            after = piece[m.end()] if m.end() < len(piece) else " "
            if not touches_left and not touches_right and not before.isalnum() and not after.isalnum():
                out.add(m.group())
    return out


def filing_words(texts: list[str]) -> list[str]:
    """The words each message is filed under (scripts/build_explain_catalogue.py stores them in the
    catalogue, 'WORD1 WORD2'): its two rarest safe words, taken from its first sentence where it has
    two there (a partial hit, another version's form of the message, shows at least that sentence);
    its longest word where it has no safe word ('' for no word at all)."""
    per = []
    for t in texts:
        pieces, _, lead = pieces_of(t)
        safe = safe_words(pieces, lead)
        head = next((p for p in pieces if p.strip()), "")
        first = set(WORD.findall((segments(head) or [""])[0])) & safe
        per.append((safe, first, set(WORD.findall(" ".join(pieces)))))
    count: dict[str, int] = {}
    for safe, _, _ in per:
        for w in safe:
            count[w] = count.get(w, 0) + 1
    out = []
    for safe, first, every in per:
        if safe:
            pool = sorted(first if len(first) >= 2 else safe, key=lambda w: (count[w], -len(w), w))
            out.append(" ".join(pool[:2]))
        else:
            out.append(max(sorted(every), key=len) if every else "")
    return out


@cache
def index() -> dict[str, tuple[tuple[int, str], ...]]:
    """Word -> (message number, the second word it must be seen with, '' for none) of the messages filed
    under it."""
    filed: dict[str, list[tuple[int, str]]] = {}
    for i, (_, _, words) in enumerate(rows()):
        first, _, second = words.partition(" ")
        if first:
            filed.setdefault(first, []).append((i, second))
    return {k: tuple(v) for k, v in filed.items()}


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def collapse(line: str) -> str:
    """A line with its runs of blanks as one space (the case kept)."""
    return " ".join(line.split())


def normal(line: str) -> str:
    """A collapsed line as messages are matched against it: ASCII letters in lower case (so every
    position is the collapsed line's position too)."""
    return line.translate(_LOWER)


_CUT = (". ", "! ", ", ", "; ", ": ", "? ")


def segments(piece: str) -> list[str]:
    """A literal piece cut after each sentence mark followed by a blank ('. ', ', ', ': ' ...): the
    units a partial hit is counted in (a version that appends ' core=%u' to a sentence still shows it)."""
    out, start = [], 0
    for i in range(len(piece) - 1):
        if piece[i : i + 2] in _CUT:
            out.append(piece[start : i + 1])
            start = i + 1
    out.append(piece[start:])
    return [x for x in out if x.strip()]


def _word_start(line: str, at: int, seg: str) -> bool:
    return at == 0 or not seg[0].isalnum() or not line[at - 1].isalnum()


def match(entry: Entry, line: str, shown: str | None = None) -> Hit | None:
    """The entry's pieces found in `line` (normalised) in order, each after the last, the first at the
    start of a word. All found: a complete hit. The first found and the rest not, where those found
    hold most of the message's letters (16 at least) or 30 letters: a partial hit, the form another
    version of the library prints (a field or a clause added or dropped). Linear in the line's length.
    The fields' text is taken from `shown` (the line before lower-casing) where given."""
    pieces, pos, found, first = entry.pieces, 0, 0, True
    spans: list[tuple[int, int]] = []  # per piece: where it starts and ends in the line
    for segs in entry.segments:
        if not segs:
            spans.append((pos, pos))
            continue
        start = -1
        for seg, seg_letters in segs:
            at, tries = line.find(seg, pos), 0
            while first and at > 0 and not _word_start(line, at, seg) and tries < 8:
                at, tries = line.find(seg, at + 1), tries + 1
            if at < 0 or (first and not _word_start(line, at, seg)):
                break
            first = False
            start = at if start < 0 else start
            pos = at + len(seg)
            found += seg_letters
        else:
            spans.append((start, pos))
            continue
        break
    complete = len(spans) == len(pieces)
    if not complete and (first or found < 16 or (found < 0.6 * entry.letters and found < 30)):
        return None
    values, numbers = [], []
    for k, conv in enumerate(entry.fields[: len(spans)]):
        begin = spans[k][1]
        end = spans[k + 1][0] if k + 1 < len(spans) and pieces[k + 1].strip() else len(line)
        values.append((shown or line)[begin:end].strip())
        numbers.append(_number(line[begin:end], conv))
    return Hit(entry, tuple(values), tuple(numbers), complete, found)


def _number(text: str, conv: str) -> int | None:
    if conv in "xX" and conv:
        m = _HEX.match(text)
        return int(m.group(1), 16) if m else None
    if conv in ("d", "i", "u", ""):
        m = _NUMBER.match(text)
        if m:
            s = m.group(1)
            return int(s, 16) if s.startswith("0x") else int(s)
    return None


MIN_LETTERS = 12  # a complete hit with fewer literal letters must cover half the line's letters


def find(line: str, tokens: set[str], shown: str | None = None) -> list[Hit]:
    """Every message found in the normalised `line` whose filing word is among `tokens`, best first
    (`Hit.rank`)."""
    filed = index()
    hits = []
    letters = sum(len(t) for t in tokens)
    for t in tokens:
        for i, second in filed.get(t, ()):
            if second and second not in tokens:
                continue
            e = entry(i)
            if e.letters < MIN_LETTERS and 2 * e.letters < letters:
                continue  # "%s started" is not every line that says started
            h = match(e, line, shown)
            if h is not None and (h.letters >= MIN_LETTERS or 2 * h.letters >= letters):
                hits.append(h)
    hits.sort(key=lambda h: h.rank)
    return hits


def fragment(piece: str) -> list[Entry]:
    """The messages a pasted piece of text (three words or more, normalised) is a part of: for a query
    of one line, which may be a message cut short. A scan of every message: never run per log line."""
    if len(piece.split()) < 3:
        return []
    found = [i for i, (text, _, _) in enumerate(rows()) if piece in " ".join(text.lower().split())]
    out = [entry(i) for i in found]
    out = [e for e in out if any(piece in p for p in e.pieces)]
    return sorted(out, key=lambda e: (e.letters, e.text))[:3]


def fastrpc_codes() -> list[dict]:
    """FastRPC's error numbers as the catalogue records them from its public header: name and value."""
    return document().get("fastrpc", [])
