"""`q9diff explain CODE|MESSAGE`: what a QNN or Genie error number or a pasted log line means."""

from __future__ import annotations

import sys

import typer

from q9diff.cli.common import _Command, _fail, _flag, _print_json, _t, app, console

MAX_STDIN = 1 << 20  # a pasted log: the first MiB is read


@app.command(cls=_Command, short_help="What a QNN or Genie error number or log line means.")
def explain(
    query: list[str] = typer.Argument(
        ...,
        metavar="CODE|MESSAGE",
        help="an error number (5000, 0x1388, -1), a C name (QNN_CONTEXT_ERROR_...), a log line in quotes, "
        "or - to read pasted lines from stdin",
    ),
    as_json: bool = _flag("--json", "print the q9diff.explain/1 JSON"),
) -> None:
    """Say what an error number or a pasted log line of QNN, Genie or ONNX Runtime's QNN EP means, which
    causes produce it (each: measured here, documented by Qualcomm, or reported in a public thread) and
    which q9diff command tells which one applies.

    \b
    Exit status:
      0  known
      2  not a code or message q9diff knows (one line)"""
    from q9diff.explain import explain as lookup
    from q9diff.explain import glossary_size

    text = sys.stdin.read(MAX_STDIN) if query == ["-"] else " ".join(query)
    found = lookup(text)
    if not found:
        n_codes, n_messages = glossary_size()
        shown = " ".join(text.split())[:80]
        _fail(
            f"{shown!r}: not an error number, C name or log line q9diff knows ({n_codes} QNN and Genie codes,"
            f" {n_messages} messages); q9diff explain 5000 or q9diff explain 'Using newer context binary on"
            " old SDK' show the form"
        )
    if as_json:
        _print_json({"schema": "q9diff.explain/1", **found.to_json()})
        raise typer.Exit(0)
    print_match(found)
    raise typer.Exit(0)


def _causes(causes) -> None:
    if not causes:
        return
    console.print(_t("  known causes:"))
    for c in causes:
        console.print(_t("  - ", c.cause, (f" [{c.evidence}: {c.source}]", "dim")))
        if c.check:
            console.print(_t("    tells which: ", (c.check, "green")))


def print_match(found) -> None:
    from q9diff.explain import primary

    for m in found.messages:
        where = f"{m.library}, QAIRT {_versions(m.versions)}" if m.versions else f"{m.library}, seen in logs"
        console.print(_t((m.text, "bold"), f"  ({where})"))
        console.print(_t(f"  {m.meaning}"))
        if m.codes:
            console.print(_t("  ends with: " + ", ".join(str(v) for v in m.codes)))
        _causes(m.causes)
    for code, aliases in primary(found.codes):
        value = f"{code.value}" + (f" ({code.hex})" if code.hex else "")
        api = "Genie" if code.api == "genie" else f"QNN {code.api.replace('_', ' ')} API"
        console.print(_t((f"{value} {code.name}", "bold"), f"  ({api}, {code.source})"))
        console.print(_t(f"  {code.meaning}"))
        if aliases:
            console.print(_t("  the same value is also named " + ", ".join(aliases)))
        _causes(code.causes)


def _versions(v: tuple[str, ...]) -> str:
    return v[0] if len(v) == 1 else f"{v[0]}-{v[-1]}"
