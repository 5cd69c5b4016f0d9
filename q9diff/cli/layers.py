"""`q9diff layers`: the first tensor where a build leaves its float model, on the x86 HTP emulator."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    MARKDOWN,
    Command,
    app,
    busy,
    flag,
    note,
    print_json,
    report_not_read,
    report_path,
    said,
    stdout_once,
    write_reports,
)


@app.command(cls=Command, short_help="The first tensor where a build leaves its float model (emulator).")
def layers(
    candidate: str = typer.Argument(
        ..., metavar="CANDIDATE", help="a recipe (RECIPE#PART or RECIPE#PART/GRAPH for one) or a QDQ .onnx"
    ),
    reference: str = typer.Option(
        ...,
        "--reference",
        metavar="REFERENCE",
        help="the float model (.onnx, or a folder of them, paired by inputs), or a second recipe",
    ),
    inputs: Path = typer.Option(
        None,
        "--inputs",
        metavar="FILE",
        help="an .npz of arrays named by the model's inputs (default: Genie's inputs for an LLM part, "
        "else seeded)",
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", help="seed for generated inputs and prompts"),
    max_taps: int = typer.Option(
        128,
        "--max-taps",
        metavar="N",
        help="a graph with more tensors is tapped at its block boundaries first, then at most N at a "
        "time inside the block that diverges",
    ),
    as_json: bool = flag("--json", "print the q9diff.layers/1 JSON"),
    verbose: bool = flag(
        "--verbose", "also every line of the diff of each tapped build with the untapped", "-v"
    ),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report (error per tensor)"
    ),
    md_out: Path = MARKDOWN,
) -> None:
    """Compile CANDIDATE with every activation made a graph output, run it on the x86 HTP emulator (never the
    CPU) beside REFERENCE, and name the first tensor whose error stands out from the quantization noise
    of the tensors before it.

    \b
    Exit status:
      0  no divergence
      1  a divergence (named first)
      2  error"""
    from q9diff.layers.run import layers as run_layers  # start-up: layers.run, numpy
    from q9diff.layers.targets import files_named, split_selector  # start-up: layers.targets, numpy

    files = [split_selector(candidate)[0], split_selector(reference)[0], inputs]
    named = files_named(candidate) + files_named(reference)  # a recipe's models, wherever they live
    report_path(html_out, files)
    report_not_read(html_out, named)
    if md_out is not None and str(md_out) != "-":
        report_path(md_out, files, "--markdown")
        report_not_read(md_out, named, "--markdown")
    stdout_once(as_json, md_out, html_out)
    with busy(f"layers of {candidate} on the x86 HTP emulator", as_json) as status:
        res = run_layers(candidate, reference, inputs=inputs, seed=seed, max_taps=max_taps, progress=status)
    from q9diff.layers.targets import candidate_graphs, float_candidates  # start-up: layers.targets

    for model in float_candidates(candidate_graphs(candidate)):
        note(
            f"warning: {model}: a float model as the candidate (no QuantizeLinear/DequantizeLinear): layers"
            " compares a quantized build with its float model; this one was tapped as it is"
        )
    data = res.to_json()
    from q9diff.present.as_json import as_saved  # start-up: present.as_json

    write_reports(as_saved(data), html_out, md_out)
    to_stdout = as_json or (md_out is not None and str(md_out) == "-")
    if as_json:
        print_json(data)
    elif not to_stdout:
        from q9diff.present.terminal_layers import print_layers  # start-up: present.terminal_layers

        print_layers(res, verbose)
    said(html_out, md_out, to_stdout)
    raise typer.Exit(0 if res.passed else 1)
