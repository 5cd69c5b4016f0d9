"""The command line: the only layer that exits. A module per command (`inspect`, `diff`, `suggest`,
`build` for recompile and steps, `verify`, `layers`, `doctor`, `report`, `explain`) over what they share
(`common`): each parses its arguments, calls the API below (q9diff.api and the layers under it), picks a
presenter (the terminal views in q9diff.present, JSON, HTML, Markdown) and maps the result to an exit status.

Imports are lazy: `--help` and `inspect` must not pay for plotly, numpy work or the compile backends.
"""

from __future__ import annotations

import errno
import importlib
import sys

from q9diff.cli.common import OutputError, app, error_line
from q9diff.errors import Q9Error

# Each command registers itself on `app` when imported, in this order, the order `--help` lists them.
for _module in ("inspect", "diff", "suggest", "build", "verify", "layers", "doctor", "report", "explain"):
    importlib.import_module(f"q9diff.cli.{_module}")

__all__ = ["COMMANDS", "app", "main", "run"]

COMMANDS = {
    "inspect",
    "diff",
    "suggest",
    "recompile",
    "verify",
    "steps",
    "layers",
    "doctor",
    "report",
    "explain",
}
# What the program itself answers before any command (anything else first is the main form's CANDIDATE).
OPTIONS = {"--help", "-h", "--version", "--install-completion", "--show-completion"}


class _Output:
    """Standard output as the commands write to it, where a failed write (ENOSPC, EIO ...) is an
    OutputError rather than an OSError naming no file. A reader that left (EPIPE: `| head -1`, `| true`)
    took all it wanted: the rest goes nowhere and the command ends with its own status, the answer, as
    with stdout closed (`>&-`); under `set -o pipefail` a gate stays the gate."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise _unwritable(exc) from None
            reader_left(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise _unwritable(exc) from None
            reader_left(self._stream)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _unwritable(exc: OSError) -> OSError:
    return OutputError(f"standard output: cannot write the result ({exc.strerror or exc})")


def reader_left(stream) -> None:
    """The pipe's reader is gone: `stream`'s descriptor now leads to /dev/null, so what is still buffered
    or still to come is dropped quietly (no `BrokenPipeError` at the exit), and the work goes on to its
    status."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass  # a stream with no descriptor of its own (a test's capture): nothing is buffered below it


def main() -> None:
    argv = sys.argv[1:]
    meant = _meant(argv[0]) if argv and argv[0] not in COMMANDS | OPTIONS else None
    if meant is not None:
        error_line(f"{argv[0]}: no such command or file; did you mean q9diff {meant}?")
        sys.exit(2)
    if argv and argv[0] not in COMMANDS | OPTIONS:
        argv = ["diff", *argv]
    stdout = sys.stdout
    if stdout is not None:
        sys.stdout = _Output(stdout)
    try:
        app(args=argv, prog_name="q9diff")
    except Exception as exc:  # the last line of defence: one line, exit 2, never a traceback
        if isinstance(exc, OutputError):
            _drop_stdout()  # its unwritten rest would fail again at the exit
        if isinstance(exc, Q9Error):
            error_line(str(exc))
            sys.exit(2)
        error_line(f"internal error ({type(exc).__name__}: {exc}); please report it")
        sys.exit(2)
    finally:
        if isinstance(sys.stdout, _Output):
            sys.stdout = stdout


def _meant(word: str) -> str | None:
    """The command a mistyped first word means (`sugest`, `docter`), when it is no file q9diff could
    read as the main form's CANDIDATE: a bare word close to a command's name."""
    import difflib
    import os

    if os.path.exists(word) or "/" in word or "." in word or "#" in word or word.startswith("-"):
        return None
    close = difflib.get_close_matches(word.lower(), sorted(COMMANDS), n=1, cutoff=0.7)
    return close[0] if close else None


def _drop_stdout() -> None:
    """From here on standard output goes nowhere: what could not be written is not tried again."""
    import os

    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (it lives until the exit)
    except OSError:
        sys.stdout = None


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


def _flush() -> None:
    """Flush the streams there are: a stream closed before q9diff started (`>&-`) is None."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def _end(code) -> None:
    import atexit
    import os
    import threading

    if not isinstance(code, int):  # a message to print: Python's own exit prints it
        raise SystemExit(code)
    blocks = sys.modules.get("q9diff.compare.blocks")
    if blocks is not None:
        blocks.stop_workers()
    if threading.active_count() > 1:  # a thread: the normal exit waits for it
        raise SystemExit(code)
    try:
        _flush()
    except (OSError, ValueError) as exc:  # the result's last bytes cannot be written: say so, status 2
        if exc.errno == errno.EPIPE if isinstance(exc, OSError) else False:
            reader_left(sys.stdout)  # what it read is all it wanted; the status stays the answer
        else:
            _drop_stdout()
            error_line(f"standard output: cannot write the result ({getattr(exc, 'strerror', exc)})")
            code = 2
    atexit._run_exitfuncs()
    try:
        _flush()
    except (OSError, ValueError):
        pass  # what an exit handler printed to a closed stream: the normal exit could not write it either
    os._exit(code)
