"""`q9diff verify`: running both builds and the CPU reference."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    _as_saved,
    _busy,
    _Command,
    _exists,
    _fail,
    _flag,
    _note,
    _print_json,
    _report_path,
    _t,
    _wrote,
    app,
    console,
    write_reports,
)
from q9diff.errors import FormatError


@app.command(cls=_Command, short_help="Run both builds and the CPU reference; compare outputs.")
def verify(
    candidate: Path = typer.Argument(
        ..., metavar="CANDIDATE", help="your build (file, folder or Genie bundle)"
    ),
    reference: Path = typer.Argument(
        None, metavar="REFERENCE", help="the known-good build (file, folder or Genie bundle)"
    ),
    runner: str = typer.Option(
        "local",
        "--runner",
        metavar="RUNNER",
        help="local (x86 HTP emulator), genie, or ssh://user@host[:port]",
    ),
    cpu: bool = typer.Option(
        True, "--cpu/--no-cpu", metavar="", help="also run the recipe's source ONNX on the CPU"
    ),
    recipe: Path = typer.Option(
        None, "--recipe", metavar="FILE", help="the recipe naming the source models (default: beside)"
    ),
    steps: int = typer.Option(16, "--steps", metavar="N", help="LLM: tokens to generate greedily"),
    prompt: str = typer.Option(
        None, "--prompt-ids", metavar="IDS", help="LLM: prompt token ids, e.g. 10,20,30 (default: seeded)"
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", help="seed for generated inputs and prompts"),
    inputs: Path = typer.Option(
        None, "--inputs", metavar="FILE", help="single graphs: an .npz of named input arrays"
    ),
    min_cosine: float = typer.Option(
        None,
        "--min-cosine",
        metavar="X",
        help="single graphs: pass at this cosine or more (default 0.999, 0.99 vs CPU)",
    ),
    max_rel: float = typer.Option(
        None,
        "--max-rel",
        metavar="X",
        help="single graphs: pass at this relative error or less (default 0.02, 0.1 vs CPU)",
    ),
    as_json: bool = _flag("--json", "print the q9diff.verify/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report (drift per step)"
    ),
    known_hosts: Path = typer.Option(
        None, "--known-hosts", metavar="FILE", help="ssh: the known_hosts file to trust"
    ),
    identity: Path = typer.Option(None, "--identity", metavar="FILE", help="ssh: private key file"),
    remote_tool: str = typer.Option(
        "q9diff",
        "--remote-tool",
        metavar="TOOL",
        help="ssh: q9diff (worker), qnn-net-run, or genie-t2t-run (Genie bundles)",
    ),
    remote_python: str = typer.Option(
        "python3", "--remote-python", metavar="CMD", help="ssh: the EVK's Python with q9diff"
    ),
    qairt_root: str = typer.Option(
        None, "--qairt-root", metavar="DIR", help="ssh: QAIRT SDK folder on the EVK"
    ),
) -> None:
    """Run CANDIDATE (and REFERENCE, and the CPU reference) on the same inputs and compare what they compute.

    The verdict names where it ran: the x86 HTP emulator cannot show a wrong target SoC, so a
    candidate built for the generic soc_model 0 passes there with a caveat (q9diff diff exits 1 on it).

    \b
    Exit status:
      0  PASS: the candidate computes what the reference does
         (or, without one, the CPU reference) where it ran
      1  FAIL
      2  error"""
    from q9diff.recipes.recipe import RecipeError
    from q9diff.runners.base import RunnerError
    from q9diff.verify.run import Tolerance, load_inputs
    from q9diff.verify.run import verify as run_verify

    _exists(candidate)
    if reference is not None:
        _exists(reference)
    _report_path(html_out, [candidate, reference, recipe, inputs])
    try:
        ids = [int(x) for x in prompt.replace(",", " ").split()] if prompt else None
    except ValueError:
        _fail(f"--prompt-ids: expected token ids such as 10,20,30, got {prompt!r}")
    where = "the device" if runner.startswith("ssh://") else "the x86 HTP emulator"
    try:
        with _busy(f"running {candidate.name} on {where} (and the references)", as_json):
            if runner == "genie":
                from q9diff.verify.genie import verify_genie

                res = verify_genie(candidate, reference, cpu=cpu, steps=steps, prompt=ids, seed=seed)
            elif runner.startswith("ssh://") and remote_tool == "genie-t2t-run":
                from q9diff.runners.ssh.runner import SshRunner
                from q9diff.verify.genie import verify_genie_ssh

                run = SshRunner.from_url(
                    runner, known_hosts=known_hosts, identity=identity, qairt_root=qairt_root
                )
                res = verify_genie_ssh(candidate, reference, run, cpu=cpu, steps=steps, prompt=ids, seed=seed)
            else:
                run = _runner(runner, known_hosts, identity, remote_tool, remote_python, qairt_root)
                given = load_inputs(inputs) if inputs is not None else None
                tolerance = None
                if min_cosine is not None or max_rel is not None:
                    default = Tolerance()
                    tolerance = Tolerance(
                        default.min_cosine if min_cosine is None else min_cosine,
                        default.max_rel if max_rel is None else max_rel,
                    )
                res = run_verify(
                    candidate, reference, run, cpu=cpu, recipe=recipe, steps=steps, prompt=ids, seed=seed,
                    inputs=given, tolerance=tolerance,
                )  # fmt: skip
    except (RunnerError, FormatError, RecipeError, RuntimeError) as exc:
        _fail(str(exc))
    from dataclasses import replace

    from q9diff.verify.run import to_json
    from q9diff.verify.verdict import read_targets

    res = replace(res, targets=read_targets(candidate))

    write_reports(_as_saved(to_json(res)), html_out, None)  # drawn from the saved result, as `report` does
    if as_json:
        _print_json(to_json(res))
    else:
        _print_verify(res)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
    raise typer.Exit(0 if res.passed else 1)


def _runner(spec, known_hosts, identity, remote_tool, remote_python, qairt_root):
    from q9diff.runners.registry import runner as make_runner

    if not spec.startswith("ssh://"):
        return make_runner(spec)
    from q9diff.runners.ssh.runner import SshRunner

    return SshRunner.from_url(
        spec, tool=remote_tool, known_hosts=known_hosts, identity=identity, remote_python=remote_python,
        qairt_root=qairt_root,
    )  # fmt: skip


def _fmt(m) -> str:
    return "" if m is None else f"{m.max_abs:.2g} / {m.cosine:.4f}"


def _print_verify(res) -> None:
    from rich.table import Table

    for side in res.sides:
        console.print(_t((side.label, "bold"), f": {side.source} ({side.runner})"))
        for note in side.notes:
            console.print(_t(f"  note: {note}"))
    for note in res.notes:
        console.print(_t(f"note: {note}"))
    if res.llm is not None:
        c = res.llm
        console.print(f"LLM: prompt {list(c.prompt)} ({len(c.prompt)} tokens), greedy", soft_wrap=True)
        for label, toks in c.tokens.items():
            console.print(_t(f"  tokens {label:<10} {' '.join(map(str, toks))}"), soft_wrap=True)
        for label, text in c.texts.items():
            console.print(_t(f"  text   {label:<10} {text!r}"))
        for pair, step in c.first_divergence.items():
            console.print(
                _t(
                    f"  {pair}: "
                    + ("same tokens at every step" if step is None else f"diverge at step {step}")
                )
            )
        if not c.steps:
            _print_verdict(res)
            return
        t = Table(title="per step (logits teacher-forced on the anchor's tokens): max|Δ| / cosine")
        labels = list(c.tokens)
        short = {"candidate": "cand", "reference": "ref"}
        for col in ["step", *[short.get(x, x) for x in labels], "cand~cpu", "ref~cpu", "cand~ref"]:
            t.add_column(col, justify="right", no_wrap=True)
        for d in c.steps:
            t.add_row(
                str(d.step),
                *[str(d.tokens.get(x, "")) for x in labels],
                _fmt(d.vs_cpu.get("candidate")),
                _fmt(d.vs_cpu.get("reference")),
                _fmt(d.vs_reference),
            )
        console.print(t)
    else:
        t = Table(title="outputs: candidate against each other side")
        for col in ("graph", "output", "against", "max|Δ|", "rel", "cosine", "ok"):
            t.add_column(col, overflow="fold")
        for o in res.outputs:
            m = o.metrics
            ok = _t("yes") if o.passed else _t(("NO", "red"))
            cells = (f"{m.max_abs:.3g}", f"{m.rel:.3g}", f"{m.cosine:.6f}", ok)
            graph = o.graph if len(o.graph) <= 32 else "…" + o.graph[-31:]
            t.add_row(_t(graph), _t(o.output), _t(o.against), *cells)
        console.print(t)
    _print_verdict(res)


def _print_verdict(res) -> None:
    c = res.llm
    if c is not None and "cpu" in c.tokens:
        cpu_div = next(
            (v for k, v in c.first_divergence.items() if k.endswith("~cpu") and v is not None), None
        )
        if cpu_div is not None:
            console.print(
                _t(
                    (
                        f"The compiled model leaves its CPU reference at step {cpu_div}: the binary"
                        " does not compute what the ONNX model does (quantization or conversion).",
                        "bold yellow",
                    )
                )
            )
    from q9diff.verify.verdict import judge

    v = judge(res)
    console.print(_t(f"reach: {v.reach}"))
    console.print(_t((v.headline, "bold green" if v.passed else "bold red")))
    for caveat in v.caveats:
        console.print(_t((caveat, "bold red")))
    if v.next_command:
        console.print(_t(f"  {v.next_command}"), soft_wrap=True)  # a line to copy: never wrapped
