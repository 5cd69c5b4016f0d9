"""`q9diff recompile` and `q9diff steps`: rebuilding from a recipe."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    CANDIDATE,
    REFERENCE,
    Command,
    CommandError,
    app,
    build_into,
    busy,
    flag,
    note,
    print_json,
    report_path,
)
from q9diff.errors import FormatError
from q9diff.present.terminal import wrote


@app.command(cls=Command, short_help="Rebuild the context binaries a recipe describes.")
def recompile(
    recipe: Path = typer.Argument(..., metavar="RECIPE", help="a q9diff recipe (q9diff.recipe/2, or /1)"),
    out: Path = typer.Option(Path("q9diff-out"), "--out", metavar="DIR", help="output directory"),
    backend: str = typer.Option(
        None, "--backend", metavar="NAME", help="ort-qnn (default), qairt or qnn-cli"
    ),
) -> None:
    """Rebuild the context binaries a recipe describes.

    \b
    Exit status: 0 built, 2 error."""
    from q9diff import inputs  # start-up: inputs, construct
    from q9diff.backends.base import BackendUnavailable  # start-up: backends.base
    from q9diff.present.terminal_build import print_recompiled  # start-up: present.terminal_build
    from q9diff.recipes.recipe import check_build, load  # start-up: recipes.recipe

    inputs.existing(recipe)
    r = load(recipe)
    check_build(r, out)
    try:
        with busy(f"compiling {recipe} with {backend or r.backend} into {out}"):
            built = build_into(r, backend or r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        raise CommandError(f"{recipe}: {exc}") from exc
    beside = out / "recipe.json"
    written = beside.exists() and (r.path is None or beside.resolve() != Path(r.path).resolve())
    print_recompiled(built, beside if written else None)


@app.command(cls=Command, short_help="Rebuild with the root-cause settings added one at a time.")
def steps(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    recipe: Path = typer.Option(
        None, "--recipe", metavar="FILE", help="the candidate's recipe (default: recipe.json beside it)"
    ),
    as_json: bool = flag("--json", "print the q9diff.steps/1 JSON (non-finite numbers as null)"),
    html_out: Path = typer.Option(None, "--html", metavar="FILE", help="also write the table as a page"),
) -> None:
    """Rebuild CANDIDATE's recipe with the root-cause settings added one at a time (the seed's table):
    per step the size, the delta and the bytes changed vs REFERENCE (moved / new), and which side it is
    byte-identical to. Builds are cached ($Q9DIFF_CACHE/builds).

    \b
    Exit status:
      0  the last step is byte-identical to the reference
      1  it is not
      2  error"""
    from q9diff import inputs  # start-up: inputs, construct
    from q9diff.backends.base import BackendUnavailable  # start-up: backends.base
    from q9diff.recipes.recipe import RecipeError  # start-up: recipes.recipe
    from q9diff.runners.local import cache_root  # start-up: runners.local, numpy
    from q9diff.steps import run, to_json  # start-up: steps, construct

    report_path(html_out, [candidate, reference, recipe])
    a, b, counterpart = inputs.pair(candidate, reference)
    candidate, reference = a.given, b.given
    if counterpart:
        note(counterpart)
    try:
        with busy("compiling", quiet=as_json) as say:
            result = run(a, b, recipe, cache_root() / "builds", progress=say)
    except (FormatError, RecipeError):
        raise
    except (BackendUnavailable, RuntimeError, OSError) as exc:
        raise CommandError(f"{candidate}: steps: {exc}") from exc
    data = to_json(result, candidate, reference)
    if html_out is not None:
        from q9diff.present.pages import render_steps  # start-up: present.pages
        from q9diff.recipes.recipe import write_atomic  # start-up: recipes.recipe

        write_atomic(html_out, render_steps(data))
    if as_json:
        print_json(data)
    else:
        from q9diff.present.terminal_build import print_steps  # start-up: present.terminal_build

        print_steps(result, candidate, reference, cache_root() / "builds")
    if html_out is not None:
        wrote(html_out, "the HTML page") if not as_json else note(f"wrote the HTML page: {html_out}")
    raise typer.Exit(0 if result and result[-1].identical_to == "reference" else 1)
