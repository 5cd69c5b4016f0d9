"""`q9diff explain CODE|MESSAGE|TERM|-`: what an error number, a pasted log line or a whole pasted log of
QNN, Genie, FastRPC or a framework's QNN layer means."""

from __future__ import annotations

import sys

import typer

from q9diff.cli.common import Command, CommandError, app, flag, print_json

MAX_STDIN = 1 << 20  # a pasted log: at most 1 MiB (more is refused, never cut silently)


def _text(data: bytes, what: str) -> str:
    """The pasted bytes as text: refused (one line) when they are binary or over the limit; bytes that
    are not UTF-8 are read as U+FFFD (a log can hold another encoding)."""
    if len(data) > MAX_STDIN:
        raise CommandError(
            f"{what}: more than {MAX_STDIN >> 20} MiB of log; paste the lines around the failure"
            " (e.g. grep -n -C 40 -i error LOG | q9diff explain -)"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        raise CommandError(f"{what}: not text (a NUL byte at offset {nul}); paste the log's text")
    text = data.decode("utf-8", errors="replace")
    odd = sum(map(text.count, _NOT_TEXT))
    if odd and odd * 10 > len(text):
        raise CommandError(
            f"{what}: not text ({100 * odd // len(text)}% of its characters are control bytes or not UTF-8);"
            " paste the log's text"
        )
    return text


# Characters a text log does not hold in numbers: C0 controls but tab, newlines, form feed and escape
# (colour codes), and bytes that are not UTF-8 (read as U+FFFD).
_NOT_TEXT = tuple(chr(c) for c in range(32) if chr(c) not in "\t\n\r\v\f\x1b") + ("\ufffd",)


@app.command(cls=Command, short_help="What an error number, log line or pasted log means.")
def explain(
    query: list[str] = typer.Argument(
        ...,
        metavar="CODE|MESSAGE|TERM",
        help="an error number (5000, 0x1388, -1, 0x80000406), a C name (QNN_CONTEXT_ERROR_..., AEE_...), a "
        "log line in quotes, a word of q9diff's reports, or - to read a whole log from stdin",
    ),
    as_json: bool = flag("--json", "print the q9diff.explain/1 JSON"),
) -> None:
    """Say what an error number, a C name, a pasted log line or a whole log (`-`, from stdin) of QNN,
    Genie, FastRPC, ONNX Runtime's QNN EP or ExecuTorch's QNN backend means. A log is read line by line:
    every line is explained, recognised as context, or said to be unknown; the verdict first names the
    decisive line, the layer that failed, the likeliest causes (each measured here, documented, or
    reported in public threads; the lines that point to one first) and the q9diff command that tells
    which applies.

    \b
    Exit status:
      0  known; for a log read from stdin, always (every line is accounted for, known or not)
      2  an argument q9diff does not know, or input that is not text (one line)"""
    import gc

    from q9diff.explain.query import explain as lookup  # start-up: explain.query
    from q9diff.explain.query import load, sizes  # start-up: explain.query

    load()
    gc.freeze()  # the tables live as long as the command: a collector pass over them per line read is waste

    if query == ["-"]:
        text = _text(sys.stdin.buffer.read(MAX_STDIN + 1), "stdin")
    else:
        text = _text(" ".join(query).encode("utf-8", errors="surrogateescape"), "the query")
    found = lookup(text)
    if not found and not (query == ["-"] and found.is_log):
        n_codes, n_messages, n_terms = sizes()
        counts = found.counts()
        lines = sum(counts.values())
        shown = " ".join(text.split())[:80]
        what = (
            f"{lines} lines, none known"
            if lines > 1
            else f"{shown!r}: not an error number, C name, log line or term q9diff knows"
        )
        layer = found.verdict.layer if found.verdict and found.verdict.layer != "unknown" else ""
        hint = f"; their words name the {layer} layer" if layer else ""
        raise CommandError(
            f"{what}{hint} ({n_codes} codes, {n_messages} catalogued messages, {n_terms} terms);"
            " q9diff explain 5000, q9diff explain 'Using newer context binary on old SDK' or q9diff explain"
            " VTCM show the form"
        )
    if as_json:
        print_json({"schema": "q9diff.explain/1", **found.to_json()})
        raise typer.Exit(0)
    from q9diff.present.terminal_explain import print_explanation  # start-up: present.terminal_explain

    print_explanation(found)
    raise typer.Exit(0)
