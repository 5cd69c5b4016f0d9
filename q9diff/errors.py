"""The one error type parsing raises; the CLI turns it into one line and exit status 2."""

from __future__ import annotations


class FormatError(ValueError):
    """The file is not what was expected at some offset."""

    def __init__(self, path: str, offset: int | None, expected: str):
        self.path, self.offset, self.expected = path, offset, expected
        where = f" at offset {offset:#x}" if offset is not None else ""
        super().__init__(f"{path}{where}: expected {expected}")
