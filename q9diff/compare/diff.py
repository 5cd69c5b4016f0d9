"""Compare two context binaries (candidate a, known-good reference b) into a tree of findings."""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass, field
from itertools import chain
from pathlib import Path

from q9diff import kinds
from q9diff.compare import explained
from q9diff.compare.attribution import buckets, moved_new, weights_verdict
from q9diff.compare.cause import Cause
from q9diff.compare.models import MODEL_CAUSES, NOT_MEANINGFUL, different_models
from q9diff.compare.rules import EFFECT_BUCKETS, FIX_TARGETS, ROOT_SETTINGS, RULES, Sides, qairt_fix
from q9diff.compare.structure import compare as compare_structure
from q9diff.compare.structure import precision, tree
from q9diff.compare.summary import inspect_summary
from q9diff.read import generic
from q9diff.read.binary import ContextBinary
from q9diff.settings import BY_CAUSE
from q9diff.units import percent

SCHEMA = "q9diff.diff/1"
BULKY = ("op_kinds", "other_options", "io_signature", "io_names")
SHOWN_APART = ("op_kinds", "other_options", "io_signature")  # ops: their own chart; options: a cause
SETTING_OPTIONS = {
    "soc_type",
    "arch",
    "min_arch",
    "vtcm_size",
    "O",
    "hvx_threads",
    "enable_dlbc",
    "compress_weights",
    "native_hmx_a16w4",
}
PACKING = {"true": True, "false": False}  # compress_weights=true: HtpGraphConfig(weights_packing=True)
PACKING_OPTIONS = ("compress_weights", "native_hmx_a16w4")


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


def _one(values):
    """A per-graph value as one value when all graphs agree, else the tuple."""
    vals = tuple(values)
    return vals[0] if len(set(vals)) == 1 else vals


def observe(cb: ContextBinary) -> dict:
    graphs = cb.graphs
    opts = [cb.options(i) for i in range(len(graphs))]
    op_kinds = tuple(cb.op_kinds(i) for i in range(len(graphs)))  # the walk's own tuples, no copy
    return {
        "soc_model": generic.requested(
            cb.soc_model, cb.dsp_arch, opts[0] if opts else {}, cb.build_id
        ).soc_model,
        "dsp_arch": cb.dsp_arch,
        "vtcm_size": _one(g.vtcm_size for g in graphs),
        "optimization_level": _one(g.optimization_level for g in graphs),
        "num_hvx_threads": _one(g.num_hvx_threads for g in graphs),
        "htp_dlbc": _one(g.htp_dlbc for g in graphs),
        "weight_sharing": any(r.name.startswith("WEIGHTS/") for r in cb.records),
        **{k: _one(PACKING.get(o.get(k)) for o in opts) if opts else None for k in PACKING_OPTIONS},
        "io_dtypes": tuple(sorted({t.dtype for g in graphs for t in g.inputs + g.outputs})),
        # Whether the compiler picked float (fp16) kernels: the kernel names carry it. Each distinct name
        # is tested once (a graph of thousands of ops has a few dozen kinds).
        # What it computes in: weights, activations and I/O (q9diff.compare.structure.precision).
        "precision": astuple(precision(cb))[:2],  # weights, activations (I/O: io_dtypes)
        "num_graphs": len(graphs),
        "build_id": cb.build_id,
        # Shapes apart from names: two exports of one model may name their tensors differently.
        "io_signature": tuple(tuple(t.dims for t in g.inputs + g.outputs) for g in graphs),
        "io_names": tuple(sorted(t.name for g in graphs for t in g.inputs + g.outputs)),
        "soc_type": _one(o.get("soc_type") for o in opts),
        "spill_fill_buffer_size": _one(g.spill_fill_buffer_size for g in graphs),
        "const_size": _one(g.const_size for g in graphs),
        "op_kinds": op_kinds,
        "other_options": tuple(
            tuple(sorted((k, v) for k, v in o.items() if k not in SETTING_OPTIONS)) for o in opts
        ),
    }


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
    res.structure = compare_structure(tree(a), tree(b))
    oa, ob = observe(a), observe(b)
    soc_recorded = explained.soc_recorded(a, b, oa, ob)
    res.settings = {side: {k: _jsonable(v) for k, v in o.items() if k not in SHOWN_APART}
                    for side, o in (("a", oa), ("b", ob))}  # fmt: skip
    ran_o = _optimization_ran(a, b, oa, ob)
    # "differs or not" per observation is all the rules need: plain equality (ints, strings, tuples).
    # deepdiff did the same for the settings and cost 150 ms of every diff's start-up, just to import.
    settings_a = {k: v for k, v in oa.items() if k not in BULKY}
    settings_b = {k: v for k, v in ob.items() if k not in BULKY}
    changed = {k for k in settings_a if settings_a[k] != settings_b.get(k)}
    changed |= {k for k in BULKY if oa[k] != ob[k]}
    for getter in sorted(changed):
        if _has_unknown(oa[getter]) or _has_unknown(ob[getter]):
            changed.discard(getter)
            res.unknown.append(
                {
                    "setting": getter,
                    "a": _jsonable(oa[getter]),
                    "b": _jsonable(ob[getter]),
                    "why": _unknown_reason(a, getter) or _unknown_reason(b, getter),
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
        cause = Cause(rule.name, rule.role, _jsonable(va), _jsonable(vb), None, tuple(evidence))
        res.causes.insert(0, cause) if note and rule.leads else res.causes.append(cause)
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


# Where an observation comes from, to say why it is unknown: binary-level or per-graph blob info.
_OBSERVED_FROM = {
    "soc_model": "soc_model",
    "dsp_arch": "dsp_arch",
    "vtcm_size": "vtcm_size",
    "optimization_level": "optimization_level",
    "num_hvx_threads": "num_hvx_threads",
    "htp_dlbc": "htp_dlbc",
    "spill_fill_buffer_size": "spill_fill_buffer_size",
    "const_size": "const_size",
}


def _optimization_ran(a: ContextBinary, b: ContextBinary, oa: dict, ob: dict) -> bool:
    """Where a file records no optimizationLevel (GraphInfo without graphBlobInfo, QNN 2.22-2.34), compare
    both on the level the compiler ran, the options' O: it equals the recorded level wherever that is
    set (fixtures/variants/opt_1..3, the real QNN 2.32 and 2.40 files) and is 2 where 0 means "not set".
    True when the observations were replaced."""
    if not (_has_unknown(oa["optimization_level"]) or _has_unknown(ob["optimization_level"])):
        return False
    ran = []
    for cb in (a, b):
        values = [cb.options(i).get("O", "") for i in range(len(cb.graphs))]
        if not values or not all(v.isdigit() for v in values):
            return False
        ran.append(_one(int(v) for v in values))
    oa["optimization_level"], ob["optimization_level"] = ran
    return True


def _has_unknown(v) -> bool:
    """None anywhere in a (nested) tuple, looked for one nesting level at a time: a level's element types
    are read in C (`map(type, ...)`), so a level of strings or ints (an op list's thousands of kind
    names, the options' keys and values) is never walked in Python."""
    level = [v]
    while True:
        types = set(map(type, level))
        if type(None) in types:
            return True
        if not any(issubclass(t, tuple) for t in types):
            return False
        level = list(chain.from_iterable(x for x in level if isinstance(x, tuple)))


def _unknown_reason(cb: ContextBinary, getter: str) -> str | None:
    name = _OBSERVED_FROM.get(getter, getter)
    opts = cb.options(0) if cb.graphs else {}
    asked = generic.requested(cb.soc_model, cb.dsp_arch, opts, cb.build_id)
    if name == "soc_model" and cb.soc_model is not None and asked.soc_model is None and asked.evidence:
        return f"{Path(cb.path).name}: {asked.evidence[-1]}"  # recorded, but what was asked is unknown
    if name in cb.unknown:
        return f"{Path(cb.path).name}: {cb.unknown[name]}"
    for g in cb.graphs:
        reasons = dict(g.unknown)
        if name in reasons:
            return f"{Path(cb.path).name}: {reasons[name]}"
    return f"{Path(cb.path).name}: {getter} not recorded"


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def suggestions(causes: list[Cause], cand: ContextBinary, dsp_arch: int | None) -> list[dict]:
    """For each root cause, the change that makes the candidate's build match the reference; a graph
    setting names the candidate's graphs (`graphs`), which its qairt line configures. `dsp_arch`: the
    reference's (or the --target device's), which a qairt soc_model line names beside it; None: unread."""
    out = []
    for c in causes:
        if c.role != "root" or c.name not in FIX_TARGETS or _has_unknown(c.b):
            continue
        value = c.b
        if isinstance(value, int) and BY_CAUSE[c.name].per_unit > 1:  # bytes recorded, MiB configured
            value = value // BY_CAUSE[c.name].per_unit
        t = FIX_TARGETS[c.name]
        graphs = tuple(g.name for g in cand.graphs)
        targets = {"qairt": qairt_fix(c.name, value, graphs, dsp_arch)}
        ext_value = f"v{value}" if c.name == "dsp_arch" else value
        targets["htp_backend_ext_config"] = {t["htp_backend_ext_config"]: ext_value}
        if "ort_qnn" in t:
            targets["ort_qnn"] = {t["ort_qnn"]: str(value)}
        executorch = executorch_fix(t.get("executorch"), value)
        if executorch:
            targets["executorch"] = executorch
        targets["qnn_cli"] = (
            "--config_file wrapper -> backend extension JSON"
            f" {t['htp_backend_ext_config']} = {json.dumps(ext_value)}"
        )
        per_graph = "{name}" in t["qairt"]
        extra = {"unit": BY_CAUSE[c.name].unit} if BY_CAUSE[c.name].unit else {}
        extra.update({"graphs": list(graphs)} if per_graph else {})
        out.append({"setting": c.name, "value": value, **extra, "targets": targets})
    return out


def executorch_fix(template: str | None, value) -> str | None:
    """The ExecuTorch compile-spec line for `value`; None where its spec has no such field or its
    QcomChipset names no such soc_model (executorch 1.5.1: q9diff.read.tables.EXECUTORCH_CHIPSETS)."""
    from q9diff.read.tables import EXECUTORCH_CHIPSETS

    if template is None:
        return None
    if "{chipset}" in template:
        chipset = EXECUTORCH_CHIPSETS.get(value) if isinstance(value, int) else None
        return None if chipset is None else template.replace("{chipset}", chipset)
    return template.replace("{bool}", "True" if value else "False")


def merged_suggestions(suggestions: list[dict]) -> list[dict]:
    """The parts' suggestions, each change once: a graph setting with the same value in several parts
    becomes one suggestion over all their graphs (one graphs entry, one qairt loop), in part order."""
    out: dict[str, dict] = {}
    for s in suggestions:
        whole = {"setting": s["setting"], "value": s["value"]} if "graphs" in s else s
        key = json.dumps(whole, sort_keys=True, default=str)
        if key not in out:
            out[key] = s
        elif "graphs" in s:
            graphs = out[key]["graphs"] + [g for g in s["graphs"] if g not in out[key]["graphs"]]
            qairt = qairt_fix(s["setting"], s["value"], tuple(graphs), None)
            out[key] = {**out[key], "graphs": graphs, "targets": {**out[key]["targets"], "qairt": qairt}}
    return list(out.values())


def to_json(res: DiffResult) -> dict:
    if res.summary is not None:
        return res.summary
    return {
        "schema": SCHEMA,
        "a": inspect_summary(res.a),
        "b": inspect_summary(res.b),
        "identical": res.identical,
        "size_delta": res.b.size - res.a.size,
        "size_delta_percent": percent(res.b.size - res.a.size, res.a.size),
        "regions": res.regions,
        "causes": [c.to_json() for c in res.causes],
        "suggestions": res.suggestions,
        "unknown": res.unknown,
        "attribution": res.attribution,
        "weights_verdict": res.weights_verdict,
        **_models_json(res.different_models),
        "settings": res.settings,
        "structure": res.structure,
    }


def _models_json(evidence: tuple[str, ...]) -> dict:
    """Only for builds of different models, so one model's JSON stays as it was."""
    if not evidence:
        return {}
    return {"different_models": {"evidence": list(evidence), "byte_attribution": NOT_MEANINGFUL}}


@dataclass
class SetDiff:
    """Two sets of parts paired part by part; a different number of parts is itself a finding."""

    pairs: list[tuple[Path, Path, DiffResult]]
    unpaired_a: list[Path]
    unpaired_b: list[Path]

    @property
    def identical(self) -> bool:
        return not self.unpaired_a and not self.unpaired_b and all(r.identical for _, _, r in self.pairs)

    @property
    def split_cause(self) -> Cause | None:
        na, nb = len(self.pairs) + len(self.unpaired_a), len(self.pairs) + len(self.unpaired_b)
        if na == nb:
            return None
        return Cause("split", "root", na, nb, None, (f"{na} parts vs {nb} parts",))


def diff_sets(a: Path, b: Path, on_part=None) -> SetDiff:
    """Pair the parts and diff each pair; `on_part(pa, pb, result)` runs while both files are mapped,
    then the pair's JSON is kept and both mappings are released."""
    from q9diff.read.openers import open_binary

    la, lb = kinds.parts_of(a), kinds.parts_of(b)
    names_b = {p.name: p for p in lb}
    pairs, ua = [], []
    for i, pa in enumerate(la):
        pb = names_b.get(pa.name) or (
            lb[i] if i < len(lb) and lb[i].name not in {x.name for x in la} else None
        )
        if pb is None:
            ua.append(pa)
            continue
        r = diff(open_binary(pa), open_binary(pb))
        if on_part is not None:
            on_part(pa, pb, r)
        r.summary = to_json(r)
        r.a.release(), r.b.release()
        pairs.append((pa, pb, r))
    used = {pb for _, pb, _ in pairs}
    return SetDiff(pairs, ua, [p for p in lb if p not in used])


def distinct_causes(parts: list[dict]) -> list[dict]:
    """The parts' causes over a set, each (name, a, b) once, in part order."""
    causes, seen = [], set()
    for p in parts:
        for c in p["causes"]:
            key = (
                c["name"],
                c.get("option"),
                json.dumps(c["a"], default=str),
                json.dumps(c["b"], default=str),
            )
            if key not in seen:
                seen.add(key)
                causes.append(c)
    return causes


def set_to_json(sd: SetDiff) -> dict:
    parts = [dict(to_json(r), part=pa.name) for pa, _, r in sd.pairs]
    split = [] if not sd.split_cause else [{**sd.split_cause.to_json(), "bytes": None}]
    causes = split + distinct_causes(parts)
    sugg = merged_suggestions([s for p in parts for s in p["suggestions"]])
    from q9diff.read.openers import size_of  # a part may be FILE#LABEL, which is no file to stat

    unpaired = {"a": [size_of(p) for p in sd.unpaired_a], "b": [size_of(p) for p in sd.unpaired_b]}
    a_total = sum(r.a.size for _, _, r in sd.pairs) + sum(unpaired["a"])
    b_total = sum(r.b.size for _, _, r in sd.pairs) + sum(unpaired["b"])
    return {
        "schema": "q9diff.setdiff/1",
        "identical": sd.identical,
        "a_total": a_total,
        "b_total": b_total,
        "size_delta": b_total - a_total,
        "size_delta_percent": percent(b_total - a_total, a_total),
        "unpaired_a": [str(p) for p in sd.unpaired_a],
        "unpaired_b": [str(p) for p in sd.unpaired_b],
        # The unpaired parts' sizes, so a saved result draws the set's table without the files.
        "unpaired_sizes": unpaired,
        "causes": causes,
        "suggestions": sugg,
        "parts": parts,
        **_models_json(different_models(*([g for p in parts for g in p[s]["graphs"]] for s in "ab"))),
    }
