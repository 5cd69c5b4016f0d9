"""What an edit of a user's file is: the change shown first, then written; and the refusal of a file."""

from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass
from pathlib import Path

from q9diff.errors import Q9Error, printable


class ApplyError(Q9Error, ValueError):
    """A file that q9diff will not edit; the message names it and says why."""


@dataclass(frozen=True)
class Edit:
    """One file's change: shown to the user first, then written unless it is advice only."""

    path: Path
    before: str
    after: str
    note: str = ""  # what the diff alone does not say: a file that led here, a disagreement, a check
    advice_only: bool = False  # a script: the user makes the change, `write` never touches the file

    @property
    def unified(self) -> str:
        """The diff, led by the note as a patch's preamble (`# ` lines) since this is what the user sees.

        Empty when there is nothing to change or advise, the caller's cue to say the file already matches.
        The note is wrapped under 100 columns so that no terminal breaks a line without its `# `.
        """
        diff = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in difflib.unified_diff(
                self.before.splitlines(True),
                self.after.splitlines(True),
                f"{self.path}",
                f"{self.path} (fixed)",
            )
        )
        if not self.note or not (diff or self.advice_only):
            return diff
        wrap = textwrap.TextWrapper(98, "# ", "#   ", break_long_words=False, break_on_hyphens=False)
        notes = [printable(note) for note in self.note.split("\n")]  # names from binaries are data
        return "".join(f"{line}\n" for note in notes for line in wrap.wrap(note)) + diff
