"""`q9diff steps`: the seed's table, built. Rebuild the candidate's recipe with the root-cause settings
applied one at a time, cumulatively, and compare every step with the reference: above the recipe
(q9diff.recipes), the compile backends (q9diff.backends) and the diff (q9diff.compare), which it composes.

The first row is the candidate as its recipe builds it (byte-identical to the candidate proves the
recipe), the last is the full fix. Builds are kept in the cache under a digest of everything that
determines their bytes (the compiler is deterministic), like the unshared rebuilds of the runners.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from q9diff.errors import FormatError
from q9diff.inputs import Input, resolve
from q9diff.settings import recipe_fields
from q9diff.units import percent

SCHEMA = "q9diff.steps/1"
# The stated order: the seed's team went local -> +VTCM -> +soc_model (with its arch) -> the rest.
ORDER = (
    "vtcm_size",
    "soc_model",
    "dsp_arch",
    "weights_packing",
    "hvx_threads",
    "dlbc",
    "optimization_level",
    "weight_sharing",
)


@dataclass
class Step:
    added: tuple[str, ...]  # the settings this step adds (empty for the candidate's own build)
    label: str  # e.g. "vtcm_size=8" or "soc_model=77, dsp_arch=v73"
    settings: dict  # the cumulative recipe settings changed so far
    out: Path
    size: int = 0
    delta_vs_reference: int = 0
    changed_vs_reference: int = 0
    moved: int = 0
    new: int = 0
    identical_to: str | None = None
    cached: bool = False
    roots_left: list[str] = field(default_factory=list)


def find_recipe(candidate: Path) -> Path:
    """The recipe beside the candidate: `recipe.json` in its folder (or beside the file)."""
    folder = candidate if candidate.is_dir() else candidate.parent
    for p in (folder / "recipe.json", candidate.with_name(candidate.stem + ".recipe.json")):
        if p.is_file():
            return p
    raise FormatError(str(candidate), None, "a recipe.json beside the candidate (or pass --recipe)")


def _said(value) -> str:
    """A recipe value in a step's label as the recipe's JSON writes it: `true`, not Python's `True`."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def plan(recipe, suggestions: list[dict]) -> list[tuple[tuple[str, ...], str, dict]]:
    """(settings added, their label, cumulative recipe settings) per step, in ORDER; soc_model and
    dsp_arch are one step (a SoC is set as a pair)."""
    fields = recipe_fields()  # cause -> (recipe field, conversion)
    wanted: dict[str, tuple[str, object]] = {}
    for s in suggestions:
        if s["setting"] in fields and s.get("value") is not None:
            name, conv = fields[s["setting"]]
            wanted[s["setting"]] = (name, conv(s["value"]))
    groups: list[tuple[str, ...]] = []
    for setting in sorted(wanted, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        if setting == "dsp_arch" and groups and groups[-1] == ("soc_model",):
            groups[-1] = ("soc_model", "dsp_arch")
        else:
            groups.append((setting,))
    steps, cumulative = [((), "", {})], {}
    for g in groups:
        for setting in g:
            name, value = wanted[setting]
            cumulative[name] = value
        label = ", ".join(f"{setting}={_said(wanted[setting][1])}" for setting in g)
        steps.append((g, label, dict(cumulative)))
    return steps


def run(
    candidate: Input,
    reference: Input,
    recipe_path: Path | None,
    home: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> list[Step]:
    """The steps from the candidate's recipe to the full fix, each build compared with the reference (and,
    where it is not identical to it, with the candidate)."""
    from q9diff.backends.registry import cached_compile  # start-up: backends.registry
    from q9diff.compare.sets import diff_sets, set_to_json  # start-up: compare.sets, numpy
    from q9diff.recipes.recipe import load  # start-up: recipes.recipe

    recipe = load(recipe_path or find_recipe(candidate.given))
    start = set_to_json(diff_sets(candidate, reference))
    out = []
    for added, label, settings in plan(recipe, start["suggestions"]):
        progress(f"compiling step {len(out)}: {label or 'the candidate recipe as it is'}")
        r = recipe.with_settings(**settings)
        folder, cached = cached_compile(r, home)
        step = Step(added, label, settings, folder, cached=cached)
        built = resolve(folder)
        vs_ref = set_to_json(diff_sets(built, reference))
        step.size = vs_ref["a_total"]
        step.delta_vs_reference = vs_ref["a_total"] - vs_ref["b_total"]
        regions = [r for p in vs_ref["parts"] for r in p["regions"]]
        step.changed_vs_reference = sum(x["changed_bytes"] for x in regions)
        step.moved = sum(x["moved_bytes"] for x in regions)
        step.new = sum(x["new_bytes"] for x in regions)
        step.roots_left = [c["name"] for c in vs_ref["causes"] if c["role"] == "root"]
        if vs_ref["identical"]:
            step.identical_to = "reference"
        elif set_to_json(diff_sets(built, candidate))["identical"]:
            step.identical_to = "candidate"
        out.append(step)
    return out


def to_json(steps: list[Step], candidate: Path, reference: Path) -> dict:
    return {
        "schema": SCHEMA,
        "candidate": str(candidate),
        "reference": str(reference),
        "order": list(ORDER),
        "steps": [
            {
                "added": list(s.added),
                "label": s.label,
                "settings": s.settings,
                "size": s.size,
                "delta_vs_reference": s.delta_vs_reference,
                "delta_vs_reference_percent": percent(s.delta_vs_reference, s.size - s.delta_vs_reference),
                "changed_vs_reference": s.changed_vs_reference,
                "moved": s.moved,
                "new": s.new,
                "identical_to": s.identical_to,
                "roots_left": s.roots_left,
                "binaries": str(s.out),
            }
            for s in steps
        ],
    }
