"""The root of every error q9diff reports to a user: the CLI catches `Q9Error` alone and turns it into
one line and exit status 2. Parsing raises `FormatError`, naming the file, the offset and what was expected.
"""

from __future__ import annotations


class Q9Error(Exception):
    """An error whose message is the one line the user reads: it names the file and what was expected."""


class FormatError(Q9Error, ValueError):
    """The file is not what was expected at some offset."""

    def __init__(self, path: str, offset: int | None, expected: str):
        self.path, self.offset, self.expected = path, offset, expected
        where = f" at offset {offset:#x}" if offset is not None else ""
        super().__init__(f"{path}{where}: expected {expected}")
