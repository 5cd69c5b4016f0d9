"""`q9diff suggest`: the config changes that close the gap; --apply makes them, --recompile checks them."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    CANDIDATE,
    _build,
    _busy,
    _clean,
    _Command,
    _diff_sets,
    _fail,
    _flag,
    _inputs,
    _is_set,
    _open_pair,
    _print_json,
    _print_suggestions,
    _swapped,
    _t,
    _wrote,
    app,
    console,
)
from q9diff.cli.diff import REFERENCE
from q9diff.cli.target import TARGET


@app.command(cls=_Command, short_help="The config changes that close the gap; --apply makes them.")
def suggest(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    apply: list[Path] = typer.Option(
        None, "--apply", metavar="FILE", help="a recipe or htp_backend_ext_config.json to fix (repeatable)"
    ),
    dry_run: bool = _flag("--dry-run", "show the edits, write nothing"),
    recompile_: bool = _flag("--recompile", "rebuild from the fixed recipe and re-diff"),
    out: Path = typer.Option(None, "--out", metavar="DIR", help="where --recompile writes the new binaries"),
    as_json: bool = _flag("--json", "print the q9diff.suggest/1 JSON: the fixes, edits and rebuild"),
    target: str = TARGET,
) -> None:
    """Print (and with --apply, make) the config changes that make CANDIDATE's build match REFERENCE's,
    or with --target DEVICE and no reference, what AI Hub's builds for that device use.

    \b
    Exit status:
      0  nothing to change
      1  something to change (also --dry-run; with --recompile: gap not closed)
      2  error, also when the REFERENCE looks like the broken build
         (the arguments swapped) or was built for another device than --target"""
    from q9diff.cli import target as tg

    device = tg.device_or_fail(target) if target is not None else None
    if reference is None:
        tg.no_reference(candidate, reference, device)
    else:
        candidate, reference = _inputs(candidate, reference)
    if recompile_:
        from q9diff.recipes.recipe import check_out

        check_out(out or Path("q9diff-out"), [candidate, reference])  # before --apply writes anything
    models = None
    if reference is None:
        data = tg.judged(candidate, device)
        if not as_json:
            tg.print_head(data)
        suggestions, identical = data["suggestions"], data["matches"]
        pairs = [(p["a"], None) for p in data["parts"]]
    elif device is not None and (findings := tg.reference_findings(reference, device)):
        _fail(f"{findings[0]}: the fix would build for another device")
    elif _is_set(candidate):
        from q9diff.compare.diff import set_to_json

        data = set_to_json(_diff_sets(candidate, reference, quiet=as_json))
        suggestions, identical, causes = data["suggestions"], data["identical"], data["causes"]
        pairs = [(p["a"], p["b"]) for p in data["parts"]]
        models = data.get("different_models", {}).get("evidence")
    else:
        res = _open_pair(candidate, reference)
        suggestions, identical, causes = res.suggestions, res.identical, res.causes
        pairs = [(res.a, res.b)]
        models = res.different_models
    swapped = reference is not None and _swapped(candidate, reference, causes, "suggest ", zip(*pairs))
    if swapped:
        _fail(swapped)
    report = {
        "schema": "q9diff.suggest/1",
        "candidate": str(candidate),
        "reference": None if reference is None else str(reference),
        **({"target": device.name} if device is not None else {}),
        "identical": identical,
        "suggestions": suggestions,
        "edits": [],
        "dry_run": dry_run,
        "recompile": None,
    }
    if not as_json:
        from q9diff.present.verdict import models_line

        if models:  # the reference's settings are what can carry over from another model's build
            console.print(_t((models_line(models) + " Only settings are suggested.", "bold")))
        _print_suggestions(suggestions)
    if not apply:
        _done(report, as_json, 0 if identical else 1)
    from dataclasses import replace

    from q9diff.fix.apply import ApplyError, BuildFacts, plan, write_all

    facts = BuildFacts.of([a for a, _ in pairs], [b for _, b in pairs if b is not None])
    if device is not None and reference is None:  # the target's SoC pair, as a reference's would be
        facts = replace(facts, reference_soc_model=device.soc_model, reference_dsp_arch=device.dsp_arch)
    edits = []
    for f in apply:
        try:
            edits.append(plan(f, suggestions, facts, named=apply))
        except ApplyError as exc:
            _fail(str(exc))
    from rich.text import Text

    report["edits"] = [
        {"path": str(e.path), "diff": e.unified, "advice_only": e.advice_only, "backup": None} for e in edits
    ]
    for e in [] if as_json else edits:
        block = _clean(e.unified, keep="\n\t") if e.unified else _clean(f"{e.path}: already matches")
        console.print(Text(block), soft_wrap=True)  # a patch: never wrapped, so it can be copied
    if not dry_run:
        try:
            written = write_all(edits)
        except ApplyError as exc:
            _fail(str(exc))
        backups = {str(path): str(backup) for path, backup in written}
        for row in report["edits"]:
            row["backup"] = backups.get(row["path"])
        for path, backup in [] if as_json else written:
            _wrote(path, f"the fixed config (the original is kept as {backup})")
    if dry_run:
        if not as_json:
            console.print("--dry-run: nothing written")
        _done(report, as_json, 1)
    if recompile_:
        from q9diff.recipes.recipe import is_recipe_text

        recipes = [e.path for e in edits if is_recipe_text(e.after)]
        if not recipes:
            _fail("--recompile needs a q9diff recipe among the --apply files")
        where = out or Path("q9diff-out")
        if reference is None:
            report["recompile"] = _recompile_and_judge(recipes[0], where, device, as_json)
        else:
            report["recompile"] = _recompile_and_check(recipes[0], where, reference, as_json)
        _done(report, as_json, 0 if report["recompile"]["identical"] else 1)
    _done(report, as_json, None)


def _done(report: dict, as_json: bool, status: int | None) -> None:
    """Print the JSON when asked, and leave with `status` (None: the command's plain end, exit 0)."""
    if as_json:
        _print_json(report)
    if status is not None:
        raise typer.Exit(status)


def _rebuild(recipe_path: Path, out: Path, quiet: bool) -> list[Path]:
    from q9diff.backends.base import BackendUnavailable
    from q9diff.recipes.recipe import load

    r = load(recipe_path)
    try:
        with _busy(f"compiling {recipe_path} with {r.backend} into {out}", quiet):
            built = _build(r, r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe_path}: recompile failed: {exc}")
    if not quiet:
        console.print(
            _t(f"rebuilt {len(built)} binaries into {out} (recipe: {out / 'recipe.json'})"), soft_wrap=True
        )
    return built


def _recompile_and_judge(recipe_path: Path, out: Path, device, quiet: bool) -> dict:
    """Rebuild, then judge the new binaries against the target as `doctor --target` does. `identical`
    in the result: every setting the target determines is as AI Hub builds for it."""
    from q9diff.compare.target import judge
    from q9diff.format.openers import open_binary
    from q9diff.present.verdict import root_line

    built = _rebuild(recipe_path, out, quiet)
    left = [c for r in (judge(open_binary(p), device) for p in built) for c in r.causes]
    result = {
        "out": str(out),
        "recipe": str(out / "recipe.json"),
        "built": [str(b) for b in built],
        "target": device.name,
        "identical": not left,
        "roots_left": list(dict.fromkeys(c.name for c in left)),
    }
    if quiet:
        return result
    if not left:
        line = f"Gap closed: every setting {device.name} determines is as AI Hub builds for it."
        console.print(_t((line, "bold green")))
    else:
        console.print(_t(f"Gap not closed; against {device.name}: {root_line(left)}"))
    return result


def _recompile_and_check(recipe_path: Path, out: Path, reference: Path, quiet: bool) -> dict:
    from q9diff.compare.diff import SetDiff, diff, set_to_json
    from q9diff.format.openers import open_binary

    built = _rebuild(recipe_path, out, quiet)
    if reference.is_dir() or len(built) != 1:
        data = set_to_json(
            _diff_sets(out, reference if reference.is_dir() else reference.parent, quiet=quiet)
        )
    else:  # one reference binary: compare the one rebuilt part with it, not with its whole folder
        pair = (built[0], reference, diff(open_binary(built[0]), open_binary(reference)))
        data = set_to_json(SetDiff([pair], [], []))
    roots = [c["name"] for c in data["causes"] if c["role"] == "root"]
    result = {
        "out": str(out),
        "recipe": str(out / "recipe.json"),
        "built": [str(b) for b in built],
        "a_total": data["a_total"],
        "b_total": data["b_total"],
        "identical": data["identical"],
        "roots_left": roots,
    }
    if quiet:
        return result
    from q9diff.units import sizes

    console.print(f"new vs reference: {sizes(data['a_total'], data['b_total'])}")
    if data["identical"]:
        console.print(
            _t(("Gap closed: the rebuilt binaries are byte-identical to the reference.", "bold green"))
        )
    else:
        console.print(_t(f"Gap not closed; root causes left: {', '.join(roots) or 'none (data only)'}"))
    return result
