"""`q9diff explain CODE|MESSAGE`: what a QNN or Genie error number or a pasted log line means."""

from __future__ import annotations

import sys

import typer

from q9diff.cli.common import Command, CommandError, app, flag, print_json

MAX_STDIN = 1 << 20  # a pasted log: the first MiB is read


@app.command(cls=Command, short_help="What a QNN or Genie error number or log line means.")
def explain(
    query: list[str] = typer.Argument(
        ...,
        metavar="CODE|MESSAGE",
        help="an error number (5000, 0x1388, -1), a C name (QNN_CONTEXT_ERROR_...), a log line in quotes, "
        "or - to read pasted lines from stdin",
    ),
    as_json: bool = flag("--json", "print the q9diff.explain/1 JSON"),
) -> None:
    """Say what an error number or a pasted log line of QNN, Genie or ONNX Runtime's QNN EP means, which
    causes produce it (each: measured here, documented by Qualcomm, or reported in a public thread) and
    which q9diff command tells which one applies.

    \b
    Exit status:
      0  known
      2  not a code or message q9diff knows (one line)"""
    from q9diff.explain import explain as lookup
    from q9diff.explain import glossary_size, terms

    text = sys.stdin.read(MAX_STDIN) if query == ["-"] else " ".join(query)
    found = lookup(text)
    if not found:
        n_codes, n_messages = glossary_size()
        shown = " ".join(text.split())[:80]
        raise CommandError(
            f"{shown!r}: not an error number, C name, log line or term q9diff knows ({n_codes} QNN and Genie"
            f" codes, {n_messages} messages, {len(terms())} terms); q9diff explain 5000, q9diff explain"
            " 'Using newer context binary on old SDK' or q9diff explain VTCM show the form"
        )
    if as_json:
        print_json({"schema": "q9diff.explain/1", **found.to_json()})
        raise typer.Exit(0)
    from q9diff.present.terminal_explain import print_match

    print_match(found)
    raise typer.Exit(0)
