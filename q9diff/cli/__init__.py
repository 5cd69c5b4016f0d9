"""The command line: the only layer that prints and exits. A module per command (`inspect`, `diff`,
`suggest`, `build` for recompile and steps, `verify`, `doctor`, `report`) over what they share (`common`).

Imports are lazy: `--help` and `inspect` must not pay for plotly, numpy work or the compile backends.
"""

from __future__ import annotations

import importlib
import sys

from q9diff.cli.common import _clean, _print_json, app
from q9diff.errors import Q9Error

# Each command registers itself on `app` when imported, in this order, the order `--help` lists them.
for _module in ("inspect", "diff", "suggest", "build", "verify", "doctor", "report"):
    importlib.import_module(f"q9diff.cli.{_module}")

__all__ = ["COMMANDS", "app", "main", "_print_json"]

COMMANDS = {"inspect", "diff", "suggest", "recompile", "verify", "steps", "doctor", "report"}
# What the program itself answers before any command (anything else first is the main form's CANDIDATE).
OPTIONS = {"--help", "-h", "--version", "--install-completion", "--show-completion"}


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] not in COMMANDS | OPTIONS:
        argv = ["diff", *argv]
    try:
        app(args=argv, prog_name="q9diff")
    except Exception as exc:  # the last line of defence: one line, exit 2, never a traceback
        if isinstance(exc, Q9Error):
            print(f"q9diff: error: {_clean(exc)}", file=sys.stderr)
            sys.exit(2)
        name = type(exc).__name__
        print(f"q9diff: error: internal error ({name}: {_clean(exc)}); please report it", file=sys.stderr)
        sys.exit(2)
