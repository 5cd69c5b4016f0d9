"""`q9diff recompile` and `q9diff steps`: rebuilding from a recipe."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    CANDIDATE,
    REFERENCE,
    _build,
    _busy,
    _Command,
    _exists,
    _fail,
    _flag,
    _inputs,
    _note,
    _print_json,
    _report_path,
    _t,
    _wrote,
    app,
    console,
)
from q9diff.errors import FormatError


@app.command(cls=_Command, short_help="Rebuild the context binaries a recipe describes.")
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
    from q9diff.backends.base import BackendUnavailable
    from q9diff.recipes.recipe import check_build, load

    _exists(recipe)
    r = load(recipe)
    check_build(r, out)
    try:
        with _busy(f"compiling {recipe} with {backend or r.backend} into {out}"):
            built = _build(r, backend or r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe}: {exc}")
    for b in built:
        console.print(_t(f"wrote {b}"), soft_wrap=True)
    if (out / "recipe.json").exists() and (
        r.path is None or (out / "recipe.json").resolve() != Path(r.path).resolve()
    ):
        console.print(_t(f"wrote {out / 'recipe.json'} (the recipe beside the binaries)"), soft_wrap=True)


@app.command(cls=_Command, short_help="Rebuild with the root-cause settings added one at a time.")
def steps(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    recipe: Path = typer.Option(
        None, "--recipe", metavar="FILE", help="the candidate's recipe (default: recipe.json beside it)"
    ),
    as_json: bool = _flag("--json", "print the q9diff.steps/1 JSON (non-finite numbers as null)"),
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
    from q9diff.backends.base import BackendUnavailable
    from q9diff.recipes.recipe import RecipeError
    from q9diff.recipes.steps import run, to_json
    from q9diff.runners.local import cache_root

    _report_path(html_out, [candidate, reference, recipe])
    candidate, reference = _inputs(candidate, reference)
    try:
        with _busy("compiling", quiet=as_json) as say:
            result = run(candidate, reference, recipe, cache_root() / "builds", progress=say)
    except (FormatError, RecipeError) as exc:
        _fail(str(exc))
    except (BackendUnavailable, RuntimeError, OSError) as exc:
        _fail(f"{candidate}: steps: {exc}")
    data = to_json(result, candidate, reference)
    if html_out is not None:
        from q9diff.present.pages import render_steps
        from q9diff.recipes.recipe import write_atomic

        write_atomic(html_out, render_steps(data))
    if as_json:
        _print_json(data)
    else:
        from rich.table import Table

        from q9diff.units import percent_text

        console.print(
            _t(
                f"steps from {candidate} to {reference} (bytes; Δ, changed, moved, new: against the"
                " reference; %: Δ of the reference's size)"
            ),
            soft_wrap=True,
        )
        t = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, header_style="bold")
        cols = ("#", "settings added", "size", "Δ vs ref", "%", "changed", "moved", "new", "same as")
        for col in cols:
            left = col in ("settings added", "same as")
            t.add_column(col, justify="left" if left else "right", no_wrap=col != "settings added")
        for i, st in enumerate(result):
            delta = st.delta_vs_reference
            t.add_row(
                str(i),
                ("+ " + st.label) if st.label else "candidate's recipe",
                str(st.size),
                f"{delta:+d}",
                percent_text(delta, st.size - delta),
                str(st.changed_vs_reference),
                str(st.moved),
                str(st.new),
                st.identical_to or "",
            )
        console.print(t)
        console.print(_t(f"builds kept in {cache_root() / 'builds'}"))
    if html_out is not None:
        _wrote(html_out, "the HTML page") if not as_json else _note(f"wrote the HTML page: {html_out}")
    raise typer.Exit(0 if result and result[-1].identical_to == "reference" else 1)
