"""The message format strings inside a shared library or a C source tree, for
scripts/build_explain_catalogue.py: the read-only data sections of an ELF (x86_64, aarch64, Hexagon) or PE
(Windows arm64) file, cut at NUL bytes, and the format strings passed to FastRPC's logging macros in its C
sources. Nothing here runs a library; a file is only read.

A string is kept as a message when it reads as one: a QNN log line (` <E> ...`, ` <%c> ...`), a compiler
line (`%s:123::ERROR:...`), a Genie line (`[ERROR] "..."`), or a sentence (two words or more with a space
between them, mostly letters). Its level (E, W, I, V, D, or '' when the string does not say) and its text
without the level marker are kept; compiler lines lose their `%s:LINE:` prefix, which changes between
versions while the message does not.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

MIN_LEN = 6
NOTICE = re.compile(r"copyright|all rights reserved|licen[cs]e|confidential|proprietary", re.IGNORECASE)


def data_sections(blob: bytes) -> list[bytes]:
    """The read-only data sections of an ELF or PE image (where string literals live); the whole file
    for anything else."""
    if blob[:4] == b"\x7fELF":
        return _elf(blob)
    if blob[:2] == b"MZ":
        return _pe(blob)
    return [blob]


def _elf(blob: bytes) -> list[bytes]:
    is64 = blob[4] == 2
    end = "<" if blob[5] == 1 else ">"
    if is64:
        (shoff,) = struct.unpack_from(end + "Q", blob, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", blob, 0x3A)
    else:
        (shoff,) = struct.unpack_from(end + "I", blob, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", blob, 0x2E)
    heads = []
    for i in range(shnum):
        at = shoff + i * shentsize
        if is64:
            name, kind, _flags, _addr, off, size = struct.unpack_from(end + "IIQQQQ", blob, at)
        else:
            name, kind, _flags, _addr, off, size = struct.unpack_from(end + "IIIIII", blob, at)
        heads.append((name, kind, off, size))
    names_off = heads[shstrndx][2]

    def name_of(n: int) -> str:
        return blob[names_off + n : blob.index(b"\0", names_off + n)].decode("ascii", "replace")

    wanted = (".rodata", ".data.rel.ro", ".sdata", ".data")
    return [
        blob[off : off + size] for n, kind, off, size in heads if kind != 8 and name_of(n).startswith(wanted)
    ]  # fmt: skip  (8: SHT_NOBITS)


def _pe(blob: bytes) -> list[bytes]:
    (pe,) = struct.unpack_from("<I", blob, 0x3C)
    (nsec,) = struct.unpack_from("<H", blob, pe + 6)
    (opt,) = struct.unpack_from("<H", blob, pe + 20)
    out = []
    for i in range(nsec):
        at = pe + 24 + opt + i * 40
        name = blob[at : at + 8].rstrip(b"\0")
        size, off = struct.unpack_from("<II", blob, at + 16)
        if name in (b".rdata", b".data"):
            out.append(blob[off : off + size])
    return out


_PRINTABLE = re.compile(rb"[\t\x20-\x7e]{%d,}" % MIN_LEN)


def raw_strings(path: Path) -> list[str]:
    """The NUL-terminated printable ASCII strings of `path`'s data sections, in order."""
    blob = path.read_bytes()
    return [m.group().decode("ascii") for sec in data_sections(blob) for m in _PRINTABLE.finditer(sec)]


# The forms a library writes its level in; the text after the marker is the message.
_QNN = re.compile(r"^\s*<([EWIVD]|%c)> ")
_COMPILER = re.compile(r"^%s:\d+:(?::?(ERROR|WARNING):)?")
_GENIE = re.compile(r'^\[(ERROR|WARN|INFO|VERBOSE|DEBUG)\] +"(.*)"$')
_LEVEL = {"ERROR": "E", "WARNING": "W", "WARN": "W", "INFO": "I", "VERBOSE": "V", "DEBUG": "D", "%c": ""}
# Printf conversions (with flags, width, precision, length) and {} fields: the variable parts of a message.
PLACEHOLDER = re.compile(
    r"%[-+ #0']{0,4}(?:\d{1,3}|\*)?(?:\.(?:\d{1,3}|\*))?(?:hh|h|ll|l|L|z|j|t|q)?[diouxXeEfFgGaAcspn]|\{\}"
)
_WORD = re.compile(r"[A-Za-z]{2,}")


def message(s: str) -> tuple[str, str] | None:
    """(level, text) when the string `s` reads as a message a library prints; None for other strings
    (symbol names, JSON schema lines, code bytes that happen to be printable)."""
    s = s.replace("\t", " ").strip("\n")
    level, marked = "", False
    if m := _QNN.match(s):
        level, s, marked = _LEVEL.get(m.group(1), m.group(1)), s[m.end() :], True
    elif m := _COMPILER.match(s):
        level, s, marked = _LEVEL[m.group(1)] if m.group(1) else "D", s[m.end() :], True
    elif m := _GENIE.match(s):
        level, s, marked = _LEVEL[m.group(1)], m.group(2), True
    s = " ".join(s.split())
    literal = PLACEHOLDER.sub(" ", s)
    words = _WORD.findall(literal)
    letters = sum(len(w) for w in words)
    if marked:
        return (level, s) if letters >= 6 else None
    if len(words) < 2 or " " not in s.strip() or letters < 8:
        return None
    if letters < 0.6 * len(literal.replace(" ", "")):  # mostly punctuation, digits or code bytes
        return None
    if s.startswith(('"', "{", "}", "[", "$")) or '": ' in s or s.startswith("_Z"):  # JSON, symbols
        return None
    if NOTICE.search(s):  # a vendor's or licence's notice is no message, and is never copied into q9diff
        return None
    return level, s


def messages(path: Path) -> dict[str, str]:
    """Every message of the library at `path`: text -> level (the most severe where a text repeats)."""
    out: dict[str, str] = {}
    for s in raw_strings(path):
        m = message(s)
        if m is not None:
            level, text = m
            out[text] = _worse(out.get(text), level)
    return out


ORDER = {"E": 0, "W": 1, "I": 2, "V": 3, "D": 4, "": 5}


def _worse(a: str | None, b: str) -> str:
    return b if a is None or ORDER[b] < ORDER[a] else a


# ---------- FastRPC's C sources: the format strings of its logging macros ----------

_MACROS = ("FARF", "VERIFY_EPRINTF", "VERIFY_WPRINTF", "VERIFY_IPRINTF", "VERIFY_DPRINTF")
_CALL = re.compile(r"\b(" + "|".join(_MACROS) + r")\s*\(")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_PRI = re.compile(r'"\s*PRI([diouxX])(8|16|32|64|PTR)\s*"')


def _macro_level(name: str, first_arg: str) -> str:
    if name == "FARF":
        arg = first_arg.strip().upper()
        return "E" if arg.startswith("ERROR") else "W" if arg.startswith("WARN") else "I"
    return {"VERIFY_EPRINTF": "E", "VERIFY_WPRINTF": "W", "VERIFY_IPRINTF": "I"}.get(name, "D")


def _args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose '(' is at text[start]."""
    depth, i, cur, out = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c == '"':
            j = _STRING.match(text, i)
            end = j.end() if j else i + 1
            cur.append(text[i:end])
            i = end
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                out.append("".join(cur))
                return out, i + 1
        elif c == "," and depth == 1:
            out.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return out, i


def _unescape(s: str) -> str:
    return s.replace("\\n", "").replace('\\"', '"').replace("\\t", " ").replace("\\\\", "\\")


def source_messages(files: dict[str, str]) -> dict[str, str]:
    """The format strings of FastRPC's logging macros in C sources {name: text}: text -> level, as the
    library holds them (a function's name is a `%s` filled from `__func__`)."""
    out: dict[str, str] = {}
    for text in files.values():
        text = _PRI.sub(lambda m: "ll" + m.group(1) if m.group(2) == "64" else m.group(1), text)
        for call in _CALL.finditer(text):
            args, _ = _args(text, call.end() - 1)
            fmt_at = next((i for i, a in enumerate(args) if _STRING.search(a)), None)
            if fmt_at is None:
                continue
            fmt = _unescape("".join(_STRING.findall(args[fmt_at])))
            level = _macro_level(call.group(1), args[0] if call.group(1) == "FARF" else "")
            m = message(fmt)
            if m is not None:
                out[m[1]] = _worse(out.get(m[1]), level)
    return out
