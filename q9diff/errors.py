"""The root of every error q9diff reports to a user (the CLI catches `Q9Error` alone and turns it into
one line and exit status 2; parsing raises `FormatError`, naming the file, the offset and what was
expected), and the one escape every string read from a file goes through before a terminal or a report
shows it."""

from __future__ import annotations

import re

# C0/C1 control characters (ESC starts colours, cursor moves and OSC 8 links); every format character
# (Unicode category Cf): the bidi marks that reorder what a terminal or a browser shows (U+061C ARABIC
# LETTER MARK, U+200E/F, the embeddings and overrides U+202A-E, the isolates U+2066-9), the invisible ones
# that make two names look alike (U+00AD, U+200B-D, U+2060-4, U+FEFF, the tags U+E0001, U+E0020-7F);
# the line and paragraph separators (Zl, Zp) some terminals and renderers break lines at; and lone
# surrogates (a name decoded with surrogateescape), which no terminal or page can encode.
# tests/test_hostile_names.py holds this class to every Cf, Zl and Zp character of unicodedata.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


class Q9Error(Exception):
    """An error whose message is the one line the user reads: it names the file and what was expected."""


class InputError(Q9Error):
    """A path that cannot be used as asked: it does not exist, holds no context binary q9diff reads, or is a
    file given against a set of parts none of which has its name."""


class FormatError(Q9Error, ValueError):
    """The file is not what was expected at some offset."""

    def __init__(self, path: str, offset: int | None, expected: str):
        self.path, self.offset, self.expected = path, offset, expected
        where = f" at offset {offset:#x}" if offset is not None else ""
        super().__init__(f"{path}{where}: expected {expected}")


def printable(v: object, keep: str = "") -> str:
    """A string from a file, safe to show: control characters (but those in `keep`, e.g. the newlines
    of a diff) become visible escapes such as \\x1b, so a name or path cannot drive the terminal."""

    def escape(m: re.Match) -> str:
        c = m.group()
        return c if c in keep else c.encode("unicode_escape").decode("ascii")

    return _CONTROL.sub(escape, str(v))
