"""The root of every error q9diff reports to a user (the CLI catches `Q9Error` alone and turns it into
one line and exit status 2; parsing raises `FormatError`, naming the file, the offset and what was
expected), and the one escape every string read from a file goes through before a terminal or a report
shows it."""

from __future__ import annotations

import re

# C0/C1 control characters (ESC starts colours, cursor moves and OSC 8 links), the bidi marks,
# embeddings, overrides and isolates that reorder what a terminal or a browser shows, and the line and
# paragraph separators some terminals and renderers break lines at.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


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
