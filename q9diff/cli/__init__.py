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

__all__ = ["COMMANDS", "app", "main", "run", "_print_json"]

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


def run() -> None:
    """The `q9diff` program: main(), then the process ends as soon as its work is out, without the
    interpreter's teardown (every module and object freed one by one: 16-20 ms of the 0.26 s a 1 GB
    diff takes, measured, for memory the exit returns anyway). Only where that loses nothing: the output
    flushed, the exit handlers run (temporary folders, logging), no thread left but this one; else the
    normal exit. main() itself ends as any Python call does (tests and scripts call it in-process)."""
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code
    _end(0 if code is None else code)


def _end(code) -> None:
    import atexit
    import os
    import threading

    if not isinstance(code, int):  # a message to print: Python's own exit prints it
        raise SystemExit(code)
    blocks = sys.modules.get("q9diff.compare.blocks")
    if blocks is not None:
        blocks.stop_workers()
    try:
        if threading.active_count() > 1:
            raise OSError("a thread still runs")
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stream, a thread: the normal exit says and waits
        raise SystemExit(code) from None
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # what an exit handler printed to a closed stream: the normal exit could not write it either
    os._exit(code)
