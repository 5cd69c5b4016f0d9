"""`q9diff suggest`: the config changes that close the gap; --apply makes them, --recompile checks them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from q9diff.cli.common import (
    CANDIDATE,
    TARGET,
    TOOLCHAIN,
    Command,
    CommandError,
    app,
    build_into,
    busy,
    check_toolchain,
    flag,
    note,
    print_json,
)
from q9diff.cli.diff import REFERENCE
from q9diff.compare.toolchains import precision_fix
from q9diff.present.fixes import soc_set_fix
from q9diff.present.terminal import print_precision, print_soc_set, print_suggestions

if TYPE_CHECKING:  # resolved by q9diff.inputs, imported when the command runs
    from q9diff.inputs import Input


@app.command(cls=Command, short_help="The config changes that close the gap; --apply makes them.")
def suggest(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    apply: list[Path] = typer.Option(
        None, "--apply", metavar="FILE", help="a recipe or htp_backend_ext_config.json to fix (repeatable)"
    ),
    dry_run: bool = flag("--dry-run", "show the edits, write nothing"),
    recompile_: bool = flag("--recompile", "rebuild from the fixed recipe and re-diff"),
    out: Path = typer.Option(None, "--out", metavar="DIR", help="where --recompile writes the new binaries"),
    as_json: bool = flag("--json", "print the q9diff.suggest/1 JSON: the fixes, edits and rebuild"),
    target: str = TARGET,
    toolchain: str = TOOLCHAIN,
) -> None:
    """Print (and with --apply, make) the config changes that make CANDIDATE's build match REFERENCE's,
    or with --target DEVICE and no reference, what AI Hub's builds for that device use.

    \b
    Exit status:
      0  nothing to change
      1  something to change (also --dry-run; with --recompile: gap not closed)
      2  error, also when the REFERENCE looks like the broken build
         (the arguments swapped) or was built for another device than --target"""
    from q9diff import api, inputs  # start-up: api, construct
    from q9diff.present import terminal_build as view  # start-up: present.terminal_build

    check_toolchain(toolchain)  # before any file is read: --json included
    device = api.as_device(target) if target is not None else None
    if device is not None:  # a device named: the candidate, or the reference, judged against it
        from q9diff.compare.target import judged, reference_findings  # start-up: compare.target
    if reference is None:
        if device is None:
            raise CommandError(
                "give the known-good REFERENCE build, or the device: --target DEVICE (e.g. --target QCS9100)"
            )
        (a,), b = inputs.resolved(candidate), None
    else:
        a, b, counterpart = inputs.pair(candidate, reference)
        candidate, reference = a.given, b.given
        if counterpart:
            note(counterpart)
    if recompile_:
        from q9diff.recipes.recipe import check_out  # start-up: recipes.recipe

        check_out(out or Path("q9diff-out"), [candidate, reference])  # before --apply writes anything
    models, over_set = None, None  # over_set: a set diff's JSON
    if reference is None:
        data = judged(a, device)
        if not as_json:
            from q9diff.present.terminal_target import print_head  # start-up: present.terminal_target

            print_head(data)
        suggestions, identical = data["suggestions"], data["matches"]
        pairs = [(p["a"], None) for p in data["parts"]]
    elif device is not None and (findings := reference_findings(b, device)):
        raise CommandError(f"{findings[0]}: the fix would build for another device")
    elif a.is_set or b.is_set:
        from q9diff.compare.sets import compared  # start-up: compare.sets, numpy, construct

        with busy(f"comparing the parts of {candidate.name} and {reference.name}", as_json) as say:
            _, data = compared(a, b, say)
        suggestions, identical, causes = data["suggestions"], data["identical"], data["causes"]
        pairs, over_set = [(p["a"], p["b"]) for p in data["parts"]], data
        models = data.get("different_models", {}).get("evidence")
    else:
        from q9diff.compare.sets import compared  # start-up: compare.sets, numpy, construct

        res, _ = compared(a, b)
        suggestions, identical, causes = res.suggestions, res.identical, res.causes
        pairs = [(res.a, res.b)]
        models = res.different_models
    if reference is not None:
        from q9diff.present.verdict import swap_advice  # start-up: present.verdict

        swapped = swap_advice(candidate, reference, causes, "suggest ", zip(*pairs))
        if swapped:
            raise CommandError(swapped)
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
        "toolchain": a.toolchain,  # the form the fix leads with (executorch for a .pte)
    }
    edits = _planned(apply, suggestions, pairs, device if reference is None else None)  # a refusal first
    if not as_json:
        if models:  # the reference's settings are what can carry over from another model's build
            view.print_models_only(models)
        form = None if toolchain in (None, "all") else toolchain
        lead = report["toolchain"]["form"]  # every form, the candidate's own first
        # a precision no setting makes: where it is made, not "No setting to change." and exit 1
        precision = precision_fix(causes) if reference is not None and not suggestions else None
        socs = soc_set_fix(over_set) if over_set is not None else None
        if socs is not None:  # a multi-SoC DLC's SoC list, which no part's setting makes
            print_soc_set(socs)
        elif precision is None:
            print_suggestions(suggestions, form, notes=True, lead=lead)
        else:
            print_precision(precision, form, lead)
    if not apply:
        _done(report, as_json, 0 if identical else 1)
    from q9diff.fix.apply import write_all  # start-up: fix.apply

    report["edits"] = [
        {"path": str(e.path), "diff": e.unified, "advice_only": e.advice_only, "backup": None} for e in edits
    ]
    if not as_json:
        view.print_edits(edits)
    if not dry_run:
        written = write_all(edits)
        backups = {str(path): str(backup) for path, backup in written}
        for row in report["edits"]:
            row["backup"] = backups.get(row["path"])
        if not as_json:
            view.print_written(written)
            if not recompile_:  # the files are fixed, the binaries not yet: say how to close the loop
                from q9diff.recipes.recipe import is_recipe_text  # start-up: recipes.recipe

                recipes = [e.path for e in edits if is_recipe_text(e.after)]
                against = str(reference) if reference is not None else f"--target {device.name}"
                view.print_next_rebuild(recipes[0] if recipes else None, against)
    if dry_run:
        if not as_json:
            view.print_dry_run()
        _done(report, as_json, 1)
    if recompile_:
        from q9diff.recipes.recipe import is_recipe_text  # start-up: recipes.recipe

        recipes = [e.path for e in edits if is_recipe_text(e.after)]
        if not recipes:
            raise CommandError("--recompile needs a q9diff recipe among the --apply files")
        where = out or Path("q9diff-out")
        if reference is None:
            report["recompile"] = _recompile_and_judge(recipes[0], where, device, as_json)
        else:
            report["recompile"] = _recompile_and_check(recipes[0], where, b, as_json)
        _done(report, as_json, 0 if report["recompile"]["identical"] else 1)
    _done(report, as_json, None)


def _planned(apply: list[Path] | None, suggestions: list[dict], pairs: list, device) -> list:
    """The edit of each --apply file, planned before anything is printed: a file q9diff cannot edit (a
    README given by mistake) is refused in one line, not after the whole fix. `device`: the --target
    device where there is no reference (its SoC pair stands for a reference's)."""
    if not apply:
        return []
    from dataclasses import replace

    from q9diff.fix.apply import BuildFacts, plan  # start-up: fix.apply

    facts = BuildFacts.of([a for a, _ in pairs], [b for _, b in pairs if b is not None])
    if device is not None:
        facts = replace(facts, reference_soc_model=device.soc_model, reference_dsp_arch=device.dsp_arch)
    return [plan(f, suggestions, facts, named=apply) for f in apply]


def _done(report: dict, as_json: bool, status: int | None) -> None:
    """Print the JSON when asked, and leave with `status` (None: the command's plain end, exit 0)."""
    if as_json:
        print_json(report)
    if status is not None:
        raise typer.Exit(status)


def _rebuild(recipe_path: Path, out: Path, quiet: bool) -> list[Path]:
    from q9diff.backends.base import BackendUnavailable  # start-up: backends.base
    from q9diff.recipes.recipe import load  # start-up: recipes.recipe

    r = load(recipe_path)
    try:
        with busy(f"compiling {recipe_path} with {r.backend} into {out}", quiet):
            built = build_into(r, r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        raise CommandError(f"{recipe_path}: recompile failed: {exc}") from exc
    if not quiet:
        from q9diff.present.terminal_build import print_rebuilt  # start-up: present.terminal_build

        print_rebuilt(built, out)
    return built


def _recompile_and_judge(recipe_path: Path, out: Path, device, quiet: bool) -> dict:
    """Rebuild, then judge the new binaries against the target as `doctor --target` does. `identical`
    in the result: every setting the target determines is as AI Hub builds for it."""
    from q9diff.compare.target import judge  # start-up: compare.target, numpy, construct
    from q9diff.read.openers import open_binary  # start-up: read.openers, construct

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
    if not quiet:
        from q9diff.present.terminal_build import print_gap_to_target  # start-up: present.terminal_build

        print_gap_to_target(device.name, left)
    return result


def _recompile_and_check(recipe_path: Path, out: Path, reference: Input, quiet: bool) -> dict:
    from q9diff.compare.sets import diff_sets, set_to_json  # start-up: compare.sets, numpy, construct
    from q9diff.inputs import resolve  # start-up: inputs, construct

    built = _rebuild(recipe_path, out, quiet)
    if reference.is_folder or len(built) != 1:
        from q9diff.compare.sets import compared  # start-up: compare.sets, numpy, construct

        folder = reference.folder
        with busy(f"comparing the parts of {out.name} and {folder.name}", quiet) as say:
            _, data = compared(resolve(out), resolve(folder), say)
    else:  # one reference binary: compare the one rebuilt part with it, not with its whole folder
        data = set_to_json(diff_sets(resolve(built[0]), reference))
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
    if not quiet:
        from q9diff.present.terminal_build import print_gap_to_reference  # start-up: present.terminal_build

        print_gap_to_reference(data, roots)
    return result
