"""Compare two context binaries (candidate a, known-good reference b) into a tree of findings: where the bytes
differ (the region rows, moved and new), what the structure and each setting say (q9diff.compare.observe),
the causes by the rules' table, the fix (q9diff.compare.suggestions) and the buckets the bytes fall in; and
its JSON, `q9diff.diff/1`. Two sets are compared part by part in q9diff.compare.sets."""

from __future__ import annotations

from dataclasses import dataclass, field

from q9diff.compare import explained
from q9diff.compare.attribution import buckets, moved_new, weights_verdict
from q9diff.compare.cause import Cause
from q9diff.compare.models import MODEL_CAUSES, different_models, models_json
from q9diff.compare.observe import has_unknown, jsonable, observe, optimization_ran, unknown_reason
from q9diff.compare.observe import soc_recorded as observed_soc
from q9diff.compare.rules import EFFECT_BUCKETS, ROOT_SETTINGS, RULES, Sides
from q9diff.compare.structure import compare as compare_structure
from q9diff.compare.structure import precision, tree
from q9diff.compare.suggestions import suggestions
from q9diff.compare.summary import inspect_summary
from q9diff.read.binary import ContextBinary
from q9diff.units import percent

SCHEMA = "q9diff.diff/1"
BULKY = ("op_kinds", "other_options", "io_signature", "io_names")
SHOWN_APART = ("op_kinds", "other_options", "io_signature")  # ops: their own chart; options: a cause


@dataclass
class DiffResult:
    """Why binary a differs from b: the region rows, the causes, the fixes, and what neither file records."""

    a: ContextBinary
    b: ContextBinary
    regions: list[dict] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)
    suggestions: list[dict] = field(default_factory=list)
    # Settings that could not be compared because a file does not record them: never causes.
    unknown: list[dict] = field(default_factory=list)
    # Every changed byte and byte of size delta in exactly one bucket (q9diff.compare.attribution).
    attribution: list[dict] = field(default_factory=list)
    weights_verdict: str | None = None
    # Why a and b are builds of different models (compare.models); () for one model's.
    different_models: tuple[str, ...] = ()
    # Each side's observed settings (observe() less the bulky lists), as the report's settings table
    # shows them: the saved result carries them, so no presenter needs the files.
    settings: dict = field(default_factory=dict)
    # What changed in the structure (graphs, I/O tensors, tensor types, ops, precision), in words:
    # q9diff.compare.structure.compare of both sides' trees.
    structure: dict = field(default_factory=lambda: {"same": True})
    summary: dict | None = None  # to_json(self), kept when a set diff releases the files' mappings

    @property
    def identical(self) -> bool:
        return self.a.size == self.b.size and all(
            r["changed_bytes"] == 0 and r["delta"] == 0 for r in self.regions
        )


def _region_rows(a: ContextBinary, b: ContextBinary) -> list[dict]:
    """Bloaty-style: every byte of both files in exactly one row, rows keyed by region name; changed
    bytes split into moved (same content elsewhere in the other file's region) and new."""
    ra, rb = _group(a), _group(b)
    rows = []
    for name in list(ra) + [n for n in rb if n not in ra]:
        la, lb = ra.get(name, []), rb.get(name, [])
        sa, sb = sum(r.size for r in la), sum(r.size for r in lb)
        mn = moved_new(a, la, b, lb)
        row = {
            "name": name,
            "kind": (la or lb)[0].kind,
            "a_size": sa,
            "b_size": sb,
            "delta": sb - sa,
            "changed_bytes": mn.changed,
            "moved_bytes": mn.moved,
            "new_bytes": mn.new,
        }
        if mn.estimate is not None:  # a large region, mostly new: moved estimated from a sample
            e = mn.estimate
            row["moved_estimate"] = {"blocks": e.blocks, "sampled_blocks": e.sampled, "found_blocks": e.found}
        rows.append(row)
    return rows


def _group(cb: ContextBinary) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in cb.regions:
        out.setdefault(r.name, []).append(r)
    return out


def diff(a: ContextBinary, b: ContextBinary) -> DiffResult:
    res = DiffResult(a, b, regions=_region_rows(a, b))
    pa, pb = precision(a), precision(b)
    res.structure = compare_structure(tree(a, pa), tree(b, pb))
    oa, ob = observe(a, pa), observe(b, pb)
    soc_recorded = observed_soc(a, b, oa, ob)
    res.settings = {side: {k: jsonable(v) for k, v in o.items() if k not in SHOWN_APART}
                    for side, o in (("a", oa), ("b", ob))}  # fmt: skip
    ran_o = optimization_ran(a, b, oa, ob)
    # "differs or not" per observation is all the rules need: plain equality (ints, strings, tuples).
    # deepdiff did the same for the settings and cost 150 ms of every diff's start-up, just to import.
    settings_a = {k: v for k, v in oa.items() if k not in BULKY}
    settings_b = {k: v for k, v in ob.items() if k not in BULKY}
    changed = {k for k in settings_a if settings_a[k] != settings_b.get(k)}
    changed |= {k for k in BULKY if oa[k] != ob[k]}
    if oa["soc_model"] is None is ob["soc_model"] and None not in (a.soc_model, b.soc_model):
        changed.add("soc_model")  # both record a SoC and neither ask can be told: not compared, said why
    for getter in sorted(changed):
        if has_unknown(oa[getter]) or has_unknown(ob[getter]):
            changed.discard(getter)
            res.unknown.append(
                {
                    "setting": getter,
                    "a": jsonable(oa[getter]),
                    "b": jsonable(ob[getter]),
                    "why": "; ".join(
                        dict.fromkeys(
                            unknown_reason(cb, getter)
                            for cb, o in ((a, oa), (b, ob))
                            if has_unknown(o[getter])
                        )
                    ),
                }
            )
    hit = [r for r in RULES if r.role == "root" and r.getter in changed]
    direct = {r.name for r in hit if not r.explained_by}
    roots = direct | {r.name for r in hit if r.explained_by and not set(r.explained_by) & direct}
    flags = {"O_ran"} if ran_o else set()
    sides = Sides(a, b, oa, ob, frozenset(flags | ({"soc_recorded"} if soc_recorded else set())))
    for rule in RULES:
        if rule.getter not in changed or rule.role == "root" and set(rule.explained_by) & roots:
            continue
        va, vb, evidence = rule.shown(rule.getter, oa[rule.getter], ob[rule.getter])
        note = rule.note(sides) if rule.note is not None else None
        evidence += [note] if note else []
        cause = Cause(rule.name, rule.role, jsonable(va), jsonable(vb), None, tuple(evidence))
        res.causes.insert(0, cause) if note and rule.leads else res.causes.append(cause)
    roots = explained.vtcm_asked(res, a, b, roots)
    explained.model_itself(res, a, b, oa, ob, roots)
    explained.unexplained_options(res, a, b, {c.name for c in res.causes if c.role == "root"})
    res.suggestions = suggestions(res.causes, a, b.dsp_arch)
    res.attribution = buckets(res.regions)
    by_bucket = {row["bucket"]: row for row in res.attribution}
    empty = {"changed_bytes": 0, "size_delta": 0}
    res.causes = [
        Cause(c.name, c.role, c.a, c.b, row["changed_bytes"], c.evidence, row["size_delta"])
        if c.name in EFFECT_BUCKETS and (row := by_bucket.get(EFFECT_BUCKETS[c.name], empty))
        else c
        for c in res.causes
    ]
    setting_roots = [c.name for c in res.causes if c.role == "root" and c.name in ROOT_SETTINGS]
    res.weights_verdict = weights_verdict(res.regions, setting_roots)
    res.different_models = different_models(a.graphs, b.graphs)
    if res.different_models:  # settings stay causes; what comes with the model, and every byte count, do not
        res.causes = [Cause(c.name, "model" if c.name in MODEL_CAUSES else c.role, c.a, c.b, None, c.evidence)
                      for c in res.causes]  # fmt: skip
        res.weights_verdict = None
    return res


def to_json(res: DiffResult) -> dict:
    """`q9diff.diff/1`: both sides as inspect sums them up, the regions, the causes and the fix, and what
    neither file records."""
    if res.summary is not None:
        return res.summary
    models = models_json(res.different_models)  # only for builds of different models
    a, b = (inspect_summary(cb) for cb in (res.a, res.b))
    return {
        "schema": SCHEMA,
        "a": a,
        "b": b,
        "identical": res.identical,
        "size_delta": res.b.size - res.a.size,
        "size_delta_percent": percent(res.b.size - res.a.size, res.a.size),
        "regions": res.regions,
        "causes": [c.to_json() for c in res.causes],
        "suggestions": res.suggestions,
        "unknown": res.unknown,
        "attribution": res.attribution,
        "weights_verdict": res.weights_verdict,
        **models,
        "settings": res.settings,
        "structure": res.structure,
    }
