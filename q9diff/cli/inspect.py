"""`q9diff inspect`: what one context binary holds."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import Command, CommandError, app, flag, note, print_json, report_path
from q9diff.errors import FormatError, InputError
from q9diff.present.terminal import wrote


@app.command(cls=Command, short_help="What a context binary holds, every byte's region.")
def inspect(
    file: Path = typer.Argument(
        ...,
        metavar="FILE",
        help="a context binary, a container (.onnx, .tflite, .pte), a folder of parts or a bundle",
    ),
    as_json: bool = flag("--json", "print the q9diff.inspect/1 JSON (strict: NaN/inf written as null)"),
    oracle: bool = flag("--oracle", "also read libQnnSystem's BinaryInfo and flag disagreements"),
    meta: Path = typer.Option(
        None, "--meta", metavar="FILE", help="a qnn-context-binary-utility JSON as a second metadata source"
    ),
    html_out: Path = typer.Option(None, "--html", metavar="FILE", help="also write a simple HTML page"),
) -> None:
    """Show what a context binary holds: build, target, graphs, settings and every byte's region.

    \b
    Exit status: 0 read, 2 error; with --meta, 1 when the dump describes another
    binary or disagrees on any field."""
    from q9diff import inputs  # start-up: inputs, construct
    from q9diff.compare.container import container_json  # start-up: compare.container, construct
    from q9diff.compare.summary import inspect_summary  # start-up: compare.summary, construct
    from q9diff.read.openers import contexts, notes  # start-up: read.openers, construct
    from q9diff.read.parse import read_errors  # start-up: read.parse, construct

    given = inputs.existing(file)
    report_path(html_out, [file])
    dlc = _dlc(given.at)  # a DLC's own view (a graph DLC's is all there is; a context DLC's caches follow)
    if dlc is not None and oracle:
        dlc["oracle_disagreements"] = _dlc_oracle(file)
    if dlc is not None and not dlc["caches"]:
        if html_out is not None or meta is not None:
            raise CommandError(f"{file}: a graph DLC holds no context binary, which --html and --meta read")
        _show_dlc(dlc, as_json)
        return
    try:
        if given.is_folder:  # a folder of parts or a bundle: its parts, as diff reads them
            found = [(p.path.name, p.open()) for p in given.parts]
            if given.read_as:
                note(given.read_as)
        else:  # a file's contexts, or the one FILE#NAME names (as `inspect FILE` and set diffs list them)
            found = contexts(given.at)
        summaries = [inspect_summary(cb) for _, cb in found]
        box = container_json(given.at)  # an ExecuTorch .pte: its regions, delegates and compile specs
    except FormatError:
        raise
    except read_errors() as exc:
        raise InputError(
            f"{file}: not a context binary q9diff can read ({type(exc).__name__}: {exc})"
        ) from exc
    for (_, cb), summary in zip(found, summaries):
        if oracle:
            from q9diff.oracle.crosscheck import compare_with_oracle  # start-up: oracle.crosscheck

            try:
                summary["oracle_disagreements"] = compare_with_oracle(cb)
            except Exception as exc:  # the oracle reports its own one-line errors
                raise CommandError(f"{file}: oracle: {exc}") from exc
        if meta is not None:
            from q9diff.oracle.crosscheck import MetaError, judge_utility_json  # start-up: oracle.crosscheck

            try:
                report = judge_utility_json(cb, meta)
            except MetaError:
                raise
            except (OSError, ValueError, RecursionError) as exc:
                raise InputError(f"{meta}: {exc}") from exc
            summary["meta"] = report.to_json()
            summary["meta_disagreements"] = report.lines()
    # A dump describes one binary: for a file of several contexts it must describe one of them.
    described = [s["meta"] for s in summaries if "meta" in s and s["meta"]["describes_this_binary"]]
    meta_failed = meta is not None and (not described or any(m["disagreements"] for m in described))
    if html_out is not None:
        from q9diff.present.pages import render_inspect  # start-up: present.pages
        from q9diff.recipes.recipe import write_atomic  # start-up: recipes.recipe

        write_atomic(html_out, render_inspect(summaries, box))
    for line in notes(given.at):  # a .pte's delegates of other backends: listed, not read
        note(line)
    if as_json:
        data = (
            summaries[0]
            if len(summaries) == 1
            else {
                "schema": "q9diff.inspect-set/1",
                "path": str(file),
                "contexts": summaries,
            }
        )
        print_json(data | ({"container": box} if box else {}) | ({"dlc": dlc} if dlc else {}))
    else:
        from q9diff.present.terminal_inspect import print_container, print_contexts  # start-up

        if dlc is not None:
            from q9diff.present.terminal_dlc import print_dlc  # start-up: a DLC's view

            print_dlc(dlc, verbose=False)
            for line in dlc.get("oracle_disagreements", []):
                note(f"oracle disagrees: {line}")
        if box:
            print_container(box)
        print_contexts([cb for _, cb in found], summaries, meta)
    if html_out is not None:
        wrote(html_out, "the HTML page") if not as_json else note(f"wrote the HTML page: {html_out}")
    if meta_failed:
        raise typer.Exit(1)


def _dlc(at) -> dict | None:
    """The q9diff.inspect-dlc/1 summary of a DLC given whole, or None for any other file."""
    if at.container != ".dlc" or at.label is not None:
        return None
    from q9diff.compare.dlc import summary  # start-up: a DLC's reader
    from q9diff.read.dlc import Dlc  # start-up: a DLC's reader

    return summary(Dlc.open(at.file))


def _dlc_oracle(file: Path) -> list[str]:
    """libQnnSystem's reading of the DLC against q9diff's, each disagreement a line."""
    from q9diff.oracle.dlc import disagreements  # start-up: oracle

    try:
        return disagreements(file)
    except Exception as exc:  # the oracle reports its own one-line errors
        raise CommandError(f"{file}: oracle: {exc}") from exc


def _show_dlc(dlc: dict, as_json: bool) -> None:
    if as_json:
        print_json(dlc)
        return
    from q9diff.present.terminal_dlc import print_dlc  # start-up: a DLC's view

    print_dlc(dlc)
    for line in dlc.get("oracle_disagreements", []):
        note(f"oracle disagrees: {line}")
