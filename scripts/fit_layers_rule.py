"""Fit `q9diff layers`' first-divergence rule on one half of a corpus of real trained models and report it on
the other half (issue 55), writing the rule and both figures to q9diff/layers/measured.json.

    python scripts/fit_layers_rule.py --corpus /work/lcorpus [--runs DIR] [--write]

1. The corpus: a folder whose manifest.json lists variants of real models (scripts/make_layers_real.py):
   family, split ("fit", "held_out" or a later held-out half), quantization, fault with its expected tensor
   and node, whether the HTP build computes the fault at all, candidate QDQ .onnx, float reference, inputs).
2. Each variant run once with `q9diff layers` as users run it, its result kept in --runs (reused when
   there): each tensor's own error (local SQNR), element count and grid SQNR.
3. A fault *has an effect* where its tensor's own error is at least 10 dB below the same tensor's in the
   clean build of its model and quantization; one without (or one the HTP does not compute) must leave the
   verdict quiet like a clean build.
4. The rule's parameters (floor, how far under the tensor's grid SQNR the allowance may go, how many σ of an
   SQNR over n values it is lowered by, the margin below the tensors before it) searched over a grid on the
   "fit" variants only: first no false alarm on a clean build or a quiet fault, then the most effective
   faults named where they sit, then the widest distance from the nearest clean tensor. The rule is then
   judged, unchanged, on the "held_out" variants: faults named, false alarms; and on each later held-out
   half (make_layers_real.SPLIT: "held_out_3", chosen after "held_out" was seen) on its own, once run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from q9diff.layers import figures as fig  # noqa: E402
from q9diff.layers.result import LayersResult  # noqa: E402
from q9diff.layers.run import layers  # noqa: E402

sys.path.insert(0, str(REPO / "scripts"))
from make_layers_real import SPLIT, split_of  # noqa: E402

OUT = REPO / "q9diff" / "layers" / "measured.json"
NO_EFFECT_DB = 10.0
FLOORS = [float(x) for x in range(0, 31)]  # dB
# the runs of the fit half carry no grid SQNR (they were made before it was recorded): the grid margin
# cannot be fitted on them and stays off
GRID_MARGINS = [None]
SPREADS = [0.0, 1.0, 2.0, 3.0]
WITHIN = [None, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0]  # steps of a tensor's grid (Rule.within_steps)
# A clean build is a control (nothing may be named) when its output is faithful to the float model: an
# SQNR of at least OUTPUT_DB (cosine ~0.95), or no value further than OUTPUT_STEPS steps of its own grid
# (a one-value sigmoid output at 1e-6). One that is not ("failing": magika's, MiniLM's w8a8, the
# openWakeWord embedding's w8a8, output SQNR -0.7 to 5.1 dB) already leaves the float model without a
# planted fault: naming a tensor there is no false alarm, and it is counted apart.
OUTPUT_DB = 10.0
OUTPUT_STEPS = 4.0
MARGINS = [x * 2.5 for x in range(0, 13)]  # 0 .. 30 dB
NOTES = [
    "Each variant was run once as users run it (narrowed block by block where large) and its saved figures "
    "re-judged by every rule tried: a tensor the run did not measure is not judged, so a fault inside a "
    "block the earlier rule did not narrow into counts as missed.",
    "The first held-out half (magika, MiniLM-L3, the SmolLM2 block) was scored with the rule before this "
    "one (5/15 faults named, 4/11 false alarms) and so was seen: it was folded into the fit half, and a new "
    "held-out half (OriNet, DeepCut: families and packages the corpus had not used) was chosen and built "
    "before this rule was fitted, and scored once with it.",
    "The second held-out half was scored once with that rule: 10/10 faults named, 1/6 false alarms "
    "(OriNet w8a16 with one Relu at 8 bits: the Conv before it, which the compiler computes with the Relu "
    "as one, came back holding the Relu's values). q9diff layers now says such a tap holds its reader's "
    "output and does not judge it; every variant of the fit and second halves was run again with that "
    "code, the rule refitted on the fit half by this same procedure (margin 10 -> 17.5 dB), and a third "
    "held-out half (basic-pitch, the arabic-name-romanizer decoder step: packages and families the corpus "
    "had not used), chosen and built before that change, was run and scored once with the refitted rule. "
    "The second half's figures with the refitted rule are given, but it was seen.",
    "The fit half's runs were made before element counts and grid SQNRs were recorded: element counts are "
    "read from the float model's shapes; the grid margin cannot be fitted and is off. Spreads 0-3 fit "
    "alike; the widest is taken (issue 55: a two-logit head's coin-toss SQNR is no divergence).",
    "A clean build whose output leaves the float model (SQNR below OUTPUT_DB and more than OUTPUT_STEPS "
    "steps off) is 'failing', not a control: magika's two, MiniLM's and the openWakeWord embedding's w8a8 "
    "(output SQNR -0.7 to 5.1 dB). A fault planted in such a build is still counted: the first divergence "
    "there is the one the build already has, so it counts as 'wrong'.",
    "The held-out half's runs were made with the rule before this one (its narrowing, floor 23 dB, is "
    "unchanged) and re-judged from their figures; the borderline band (words only) was widened from 3 to "
    "4 dB after the held-out half was scored, for a planted decoder fault 3.5 dB above its allowance.",
    "A fault has an effect where its tensor's own SQNR is at least 10 dB below the clean build's; one "
    "without, a bit-width change, and a DequantizeLinear that disagrees (which the HTP does not compute) "
    "must leave the verdict quiet and count with the clean builds.",
]
# a block is tapped inside below this: the floor scripts/measure_layers.py fitted on planted faults, under
# which every run of the corpus was narrowed (a fault's error is diluted over a block's nodes)
NARROW_DB = 23.0
BORDERLINE_DB = 4.0  # the band either side of a tensor's allowance the verdict calls borderline (words only:
# no divergence or figure of either half depends on it; the planted decoder's activation zero point, 3.5 dB
# above its allowance, is said borderline)
WORST_GAP_DB = 10.0  # the worst own error is named beside the first when this far below it


def rows_of(corpus: Path) -> list[dict]:
    data = json.loads((corpus / "manifest.json").read_text())
    rows = data["variants"]
    for r in rows:
        r["split"] = split_of(r["family"])  # the halves as scripts/make_layers_real.py has them now
        for key in ("candidate", "reference", "inputs"):
            if r.get(key) and not Path(r[key]).is_absolute():
                r[key] = str(corpus / r[key])
    return rows


def run(row: dict, runs: Path) -> LayersResult:
    path = runs / f"{row['name']}.json"
    if path.is_file():
        return LayersResult.from_json(json.loads(path.read_text()))
    inputs = Path(row["inputs"]) if row.get("inputs") else None
    res = layers(row["candidate"], row["reference"], inputs=inputs)  # as users run it
    path.write_text(json.dumps(res.to_json()))
    print(f"ran {path.name}: {res.seconds:.0f} s", file=sys.stderr, flush=True)
    return res


def series(res: LayersResult) -> list:
    """(tensor, node, figures, resolved) of every row, every graph in turn."""
    return [(r.tensor, r.node, r.figures, r.resolved) for g in res.graphs for r in g.rows]


def at(rows: list, expected: dict | None) -> int | None:
    if not expected:
        return None
    return next(
        (
            i
            for i, (t, n, _, _) in enumerate(rows)
            if t == expected.get("tensor") or n == expected.get("node")
        ),
        None,
    )


def label(variants: list[dict], results: dict) -> None:
    """Each variant's role: "clean", "fault" (with its index: an effective fault the HTP computes) or
    "quiet" (a fault without effect there, or one the HTP does not compute)."""
    for v in variants:
        rows = with_elements(series(results[v["key"]]), v["reference"])
        v["rows"] = rows
        if not v.get("fault"):
            v["role"], v["index"] = ("clean" if faithful(rows) else "failing"), None
            continue
        i = at(rows, v.get("expected"))
        clean = next(
            (
                w
                for w in variants
                if not w.get("fault")
                and w["family"] == v["family"]
                and w.get("quantization") == v.get("quantization")
                and w.get("model", w["family"]) == v.get("model", v["family"])
            ),
            None,
        )
        v["index"], v["effect_db"] = i, None
        if i is None or not v.get("htp_changes", True):
            v["role"] = "quiet"
            continue
        own = fig.judged(rows[i][2])
        base = {t: fig.judged(f) for t, _, f, _ in series(results[clean["key"]])} if clean else {}
        before = base.get(rows[i][0])
        effect = (before - own) if own is not None and before is not None else None
        v["effect_db"] = None if effect is None or not math.isfinite(effect) else round(effect, 1)
        v["role"] = "fault" if effect is None or effect >= NO_EFFECT_DB else "quiet"
    for v in variants:  # a fault without effect in a build that fails without it is judged with that build
        same = [w for w in variants if w.get("model") == v.get("model")]
        base = next(
            (
                w
                for w in same
                if w["role"] in ("clean", "failing") and w.get("quantization") == v.get("quantization")
            ),
            None,
        )
        v["failing_base"] = base is not None and base["role"] == "failing"
        if v["role"] == "quiet" and v["failing_base"]:
            v["role"] = "failing"


_SIZES: dict = {}


def with_elements(rows: list, reference: str) -> list:
    """The rows with each tensor's element count where the run did not record it (runs made before it was):
    read from the float model's inferred shapes (they are static: scripts/real_models.py fixes them)."""
    import onnx

    if all(f is None or f.elements is not None for _, _, f, _ in rows):
        return rows
    if reference not in _SIZES:
        model = onnx.shape_inference.infer_shapes(onnx.load(reference))
        g = model.graph
        sizes = {}
        for vi in [*g.value_info, *g.input, *g.output]:
            dims = vi.type.tensor_type.shape.dim
            if dims and all(d.dim_value > 0 for d in dims):
                sizes[vi.name] = math.prod(d.dim_value for d in dims)
        _SIZES[reference] = sizes
    sizes = _SIZES[reference]
    return [
        (t, n, f if f is None or f.elements is not None else replace(f, elements=sizes.get(t)), ok)
        for t, n, f, ok in rows
    ]


def faithful(rows: list) -> bool:
    """Whether a build's output (its last tensor measured) is faithful to the float model: OUTPUT_DB."""
    f = next((f for _, _, f, _ in reversed(rows) if f is not None), None)
    if f is None:
        return True
    return f.sqnr_db >= OUTPUT_DB or (f.steps is not None and f.steps <= OUTPUT_STEPS)


def arrays(v: dict) -> tuple:
    """A variant's rows as numpy arrays for the search: own error, grid SQNR, spread in dB, judged."""
    import numpy as np

    own = np.array([np.nan if fig.judged(f) is None else fig.judged(f) for _, _, f, _ in v["rows"]])
    grid = np.array([np.inf if f is None or f.grid_db is None else f.grid_db for _, _, f, _ in v["rows"]])
    sd = np.array(
        [fig.spread_db(f.elements) if f is not None and f.elements else 0.0 for _, _, f, _ in v["rows"]]
    )
    steps = np.array([np.inf if f is None or f.steps is None else f.steps for _, _, f, _ in v["rows"]])
    ok = np.array([bool(r) for _, _, _, r in v["rows"]]) & ~np.isnan(own)
    return own, grid, sd, ok, steps


def before_of(ok, own):
    """The lowest own error of the rows before each (+inf: none)."""
    import numpy as np

    seen = np.where(ok, own, np.inf)
    return np.concatenate([[np.inf], np.minimum.accumulate(seen)[:-1]]) if len(seen) else seen


def first_fired(v: dict, rule: fig.Rule) -> int | None:
    """fig.judge's first divergence with percentile 0, vectorised: the rows before the first that fires are
    the noise (their running lowest own error), unresolved rows neither fire nor join it."""
    import numpy as np

    own, grid, sd, ok, steps = v.setdefault("arrays", arrays(v))
    if rule.within_steps is not None:
        ok = ok & ~(steps <= rule.within_steps)
    before = v.setdefault("before", {}).get(rule.within_steps)
    if before is None:
        before = v["before"][rule.within_steps] = before_of(ok, own)
    allow = np.full(own.shape, rule.floor_db)
    if rule.grid_margin_db is not None:
        allow = np.minimum(allow, np.where(np.isfinite(grid), grid - rule.grid_margin_db, np.inf))
    allow = allow - rule.spread * sd
    with np.errstate(invalid="ignore"):
        fires = ok & (own < allow) & (own <= before - rule.margin_db)
    hit = np.flatnonzero(fires)
    if hit.size and v["role"] == "fault" and v["index"] is not None and hit[0] != v["index"]:
        # the headline's "worst:" beside the first: the own error furthest below its allowance, named
        # when it lies rule.worst_gap_db below the first's
        below = np.where(ok, own - allow, np.inf)
        w = int(np.argmin(below))
        v["worst"] = w if below[w] < 0 and own[w] <= own[hit[0]] - rule.worst_gap_db else None
    return int(hit[0]) if hit.size else None


def outcome(v: dict, rule: fig.Rule) -> str:
    """One of "named", "missed", "wrong" (another tensor named first), "false alarm" or "quiet"."""
    d = first_fired(v, rule)
    if v["role"] == "failing":
        return "quiet" if d is None else "named"
    if v["role"] != "fault":
        return "quiet" if d is None else "false alarm"
    if d is None:
        return "missed"
    if d == v["index"]:
        return "named"
    return "wrong, named as worst" if v.get("worst") == v["index"] else "wrong"


def score(variants: list[dict], rule: fig.Rule) -> dict:
    out = {"faults": 0, "named": 0, "clean": 0, "false_alarms": 0, "wrong": 0, "missed": 0}
    out |= {"failing": 0, "failing_named": 0}
    for v in variants:
        o = outcome(v, rule)
        if v["role"] == "failing":
            out["failing"] += 1
            out["failing_named"] += o == "named"
        elif v["role"] == "fault":
            out["faults"] += 1
            out["named"] += o == "named"
            out["wrong"] += o.startswith("wrong")
            out["named_as_worst"] = out.get("named_as_worst", 0) + (o == "wrong, named as worst")
            out["missed"] += o == "missed"
        else:
            out["clean"] += 1
            out["false_alarms"] += o == "false alarm"
    return out


def clearance(variants: list[dict], rule: fig.Rule) -> float:
    """The smallest distance (dB) of a clean tensor's own error above its allowance: how far the rule's
    line is from the clean tensors of the fit half."""
    low = math.inf
    for v in variants:
        if v["role"] not in ("clean", "quiet", "fault"):
            continue
        upto = v["index"] if v["role"] == "fault" and v["index"] is not None else len(v["rows"])
        for _, _, f, ok in v["rows"][:upto]:
            x = fig.judged(f)
            if ok and x is not None and math.isfinite(x) and not rule.within(f):
                low = min(low, x - rule.allowance(f))
    return low


def fit(variants: list[dict]) -> tuple[fig.Rule, dict]:
    """The rule with no false alarm on `variants` that names the most faults; among those, the (grid margin,
    spread) with the most such (floor, margin) pairs, and of them the pair nearest their middle: the
    widest room either side."""
    scored = {}
    for grid, spread, within, floor, margin in itertools.product(
        GRID_MARGINS, SPREADS, WITHIN, FLOORS, MARGINS
    ):
        rule = fig.Rule(
            0.0, margin, floor, "", grid, spread, BORDERLINE_DB, WORST_GAP_DB, within_steps=within
        )
        scored[grid, spread, within, floor, margin] = score(variants, rule)
    best = max((s["named"] for s in scored.values() if s["false_alarms"] == 0), default=0)
    good = [k for k, s in scored.items() if s["false_alarms"] == 0 and s["named"] == best]
    groups: dict = {}
    for grid, spread, within, floor, margin in good:
        groups.setdefault((grid, spread, within), []).append((floor, margin))
    for key, pairs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        floors, margins = [p[0] for p in pairs], [p[1] for p in pairs]
        print(
            f"fits ({best} named, no false alarm): grid {key[0]} spread {key[1]} steps {key[2]}: "
            f"{len(pairs)} (floor, margin) pairs, floors {min(floors):g}-{max(floors):g}, "
            f"margins {min(margins):g}-{max(margins):g}",
            file=sys.stderr,
        )
    # the most lenient allowance for few values the fit half permits first (the widest spread: an SQNR over
    # a few values is a coin toss, and a verdict that fires on a clean two-logit head is noise), then the
    # most (floor, margin) pairs that fit (the widest room), then the fewest steps
    (grid, spread, within), pairs = max(
        groups.items(), key=lambda kv: (kv[0][1], len(kv[1]), -(kv[0][2] or 0.0))
    )
    mid_f = sum(f for f, _ in pairs) / len(pairs)
    mid_m = sum(m for _, m in pairs) / len(pairs)
    floor, margin = min(pairs, key=lambda p: (p[0] - mid_f) ** 2 + (p[1] - mid_m) ** 2)
    rule = fig.Rule(0.0, margin, floor, "", grid, spread, BORDERLINE_DB, WORST_GAP_DB, within_steps=within)
    return rule, scored[grid, spread, within, floor, margin] | {"rules_that_fit": len(pairs)}


def goal(half: dict) -> dict:
    """Issue 55's goal on a half: at least 90% of the faults named, no false alarm on a control."""
    share = half["named"] / half["faults"] if half["faults"] else None
    return {
        "named_share": None if share is None else round(share, 3),
        "named_at_least_90_percent": share is not None and share >= 0.9,
        "no_false_alarm": half["false_alarms"] == 0,
    }


def htp_ignores_dq(variants: list[dict], results: dict) -> list[dict]:
    """For each variant whose DequantizeLinear disagrees with its QuantizeLinear: whether every tensor both
    it and its clean build measured has the same figures against the float model on the emulator."""
    out = []
    for v in variants:
        if (v.get("fault") or {}).get("kind") != "qdq_disagree":
            continue
        clean = next(
            (w for w in variants if not w.get("fault") and w.get("model") == v.get("model")
             and w.get("quantization") == v.get("quantization")),
            None,
        )  # fmt: skip
        if clean is None:
            continue
        mine = {t: f for t, _, f, _ in series(results[v["key"]]) if f is not None}
        base = {t: f for t, _, f, _ in series(results[clean["key"]]) if f is not None}
        both = set(mine) & set(base)
        same = sum(mine[t].sqnr_db == base[t].sqnr_db and mine[t].cosine == base[t].cosine for t in both)
        out.append({"model": v["key"], "tensors": len(both), "identical": same})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--runs", type=Path, default=Path("/tmp/q9diff-layers-fit-runs"))
    p.add_argument("--write", action="store_true", help="write the rule and figures to measured.json")
    p.add_argument("--run-only", action="store_true", help="run the variants not yet run, fit nothing")
    p.add_argument("--no-run", action="store_true", help="fit on the variants already run, run none")
    p.add_argument("--split", choices=tuple(SPLIT), help="run only the variants of this split")
    args = p.parse_args(argv)
    args.runs.mkdir(parents=True, exist_ok=True)
    variants = [v for v in rows_of(args.corpus) if Path(v["candidate"]).is_file()]
    variants.sort(key=lambda v: Path(v["candidate"]).stat().st_size)  # the quick ones first
    results = {}
    for v in variants:
        v["key"] = v["name"]
        done = (args.runs / f"{v['name']}.json").is_file()
        if not done and (args.no_run or (args.split and v.get("split") != args.split)):
            continue
        try:
            results[v["key"]] = run(v, args.runs)
        except Exception as exc:  # one variant q9diff refuses: said, and left out of the fit
            print(f"{v['name']}: {exc}", file=sys.stderr, flush=True)
    if args.run_only:
        return 0
    variants = [v for v in variants if v["key"] in results]
    label(variants, results)
    fit_half = [v for v in variants if v.get("split") == "fit"]
    held = [v for v in variants if v.get("split") == "held_out"]
    (rule, on_fit) = fit(fit_half)
    families = sorted({v["family"] for v in fit_half})
    rule = fig.Rule(
        rule.percentile, rule.margin_db, rule.floor_db,
        f"{len(fit_half)} builds of real trained models ({', '.join(families)}; the fit half): "
        "scripts/fit_layers_rule.py",
        rule.grid_margin_db, rule.spread, rule.borderline_db, rule.worst_gap_db, NARROW_DB, rule.within_steps,
    )  # fmt: skip
    on_held = score(held, rule)
    per = [
        {
            "model": v["key"], "split": v.get("split"), "fault": v.get("fault"), "role": v["role"],
            "effect_db": v.get("effect_db"), "outcome": outcome(v, rule),
        }
        for v in variants
    ]  # fmt: skip
    report = {"fit": on_fit, "held_out": on_held, "clearance_db": round(clearance(fit_half, rule), 1)}
    # a later held-out half (chosen after the one above was seen), reported on its own, only once run
    later = {h: [v for v in variants if v.get("split") == h] for h in SPLIT if h not in ("fit", "held_out")}
    later = {h: vs for h, vs in later.items() if vs}
    report |= {h: score(vs, rule) for h, vs in later.items()}
    report["floors_that_fit"] = on_fit.get("rules_that_fit")
    print(json.dumps({"rule": rule.to_json(), **report}, indent=1))
    for r in per:
        print(f"{r['split']:9} {r['model']:50} {r['role']:6} {r['outcome']:12} effect {r['effect_db']}")
    same = htp_ignores_dq(variants, results)
    print(f"qdq_disagree on the HTP: {same}")
    if args.write:
        data = json.loads(OUT.read_text())
        data["rule"] = rule.to_json()
        if "runs" in data:  # the planted corpus's runs, judged by the rule before this one
            data["planted"] = {
                "rule": "floor 23 dB, margin 2.5 dB (scripts/measure_layers.py), not this rule",
                "runs": data.pop("runs"),
            }
        data["real"] = {
            "corpus": str(args.corpus),
            "fit_families": families,
            "held_out_families": sorted({v["family"] for v in held}),
            "fit": on_fit,
            "held_out": on_held,
            **{f"{h}_families": sorted({v["family"] for v in vs}) for h, vs in later.items()},
            **{h: report[h] for h in later},
            "variants": per,
            "how": "python scripts/fit_layers_rule.py --corpus DIR --write",
            "faithful_output": {"sqnr_db": OUTPUT_DB, "steps": OUTPUT_STEPS},
            "goal": goal(on_held),
            **{f"goal_{h}": goal(report[h]) for h in later},
            "notes": NOTES,
        }
        data["qdq_disagree_on_htp"] = same
        OUT.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
