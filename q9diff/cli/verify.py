"""`q9diff verify`: running both builds and the CPU reference."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    MARKDOWN,
    Command,
    CommandError,
    app,
    busy,
    flag,
    print_json,
    report_path,
    said,
    stdout_once,
    write_reports,
)
from q9diff.errors import FormatError


@app.command(cls=Command, short_help="Run both builds and the CPU reference; compare outputs.")
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
    as_json: bool = flag("--json", "print the q9diff.verify/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report (drift per step)"
    ),
    md_out: Path = MARKDOWN,
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
    from q9diff.inputs import existing  # start-up: inputs, construct
    from q9diff.recipes.recipe import RecipeError  # start-up: recipes.recipe
    from q9diff.runners.base import RunnerError  # start-up: runners.base, numpy
    from q9diff.verify.run import Tolerance, load_inputs  # start-up: verify.run, numpy, construct
    from q9diff.verify.run import verify as run_verify  # start-up: verify.run, numpy, construct

    found = [existing(p) for p in (candidate, reference) if p is not None]  # each, before any work
    report_path(html_out, [candidate, reference, recipe, inputs])
    if md_out is not None and str(md_out) != "-":
        report_path(md_out, [candidate, reference, recipe, inputs], "--markdown")
    stdout_once(as_json, md_out, html_out)
    try:
        ids = [int(x) for x in prompt.replace(",", " ").split()] if prompt else None
    except ValueError:
        raise CommandError(f"--prompt-ids: expected token ids such as 10,20,30, got {prompt!r}") from None
    where = "the device" if runner.startswith("ssh://") else "the x86 HTP emulator"
    try:
        with busy(f"running {candidate.name} on {where} (and the references)", as_json):
            if runner == "genie":
                from q9diff.verify.genie import verify_genie  # start-up: verify.genie, numpy, construct

                res = verify_genie(candidate, reference, cpu=cpu, steps=steps, prompt=ids, seed=seed)
            elif runner.startswith("ssh://") and remote_tool == "genie-t2t-run":
                from q9diff.runners.ssh.runner import SshRunner  # start-up: runners.ssh.runner, numpy
                from q9diff.verify.genie import verify_genie_ssh  # start-up: verify.genie, numpy, construct

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
    except (RunnerError, FormatError, RecipeError):
        raise
    except RuntimeError as exc:
        raise CommandError(str(exc)) from exc
    from dataclasses import replace

    from q9diff.verify.run import to_json  # start-up: verify.run, numpy, construct
    from q9diff.verify.verdict import read_targets  # start-up: verify.verdict

    res = replace(res, targets=read_targets(found[0]))

    from q9diff.present.as_json import as_saved  # start-up: present.as_json

    write_reports(as_saved(to_json(res)), html_out, md_out)  # drawn from the saved result, as `report` does
    to_stdout = as_json or (md_out is not None and str(md_out) == "-")
    if as_json:
        print_json(to_json(res))
    elif not to_stdout:
        from q9diff.present.terminal_verify import print_verify  # start-up: present.terminal_verify

        print_verify(res)
    said(html_out, md_out, to_stdout)
    raise typer.Exit(0 if res.passed else 1)


def _runner(spec, known_hosts, identity, remote_tool, remote_python, qairt_root):
    from q9diff.runners.registry import runner as make_runner  # start-up: runners.registry, numpy

    if not spec.startswith("ssh://"):
        return make_runner(spec)
    from q9diff.runners.ssh.runner import SshRunner  # start-up: runners.ssh.runner, numpy

    return SshRunner.from_url(
        spec, tool=remote_tool, known_hosts=known_hosts, identity=identity, remote_python=remote_python,
        qairt_root=qairt_root,
    )  # fmt: skip
