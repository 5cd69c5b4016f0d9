"""Measure `q9diff layers`' first-divergence rule on our own planted-fault models, and write that rule with
its evidence under "planted" in q9diff/layers/measured.json (the shipped rule is fitted on real trained models
by scripts/fit_layers_rule.py; every other key of the file is left as it is).

    python scripts/measure_layers.py [--corpus DIR] [--check]

1. The corpus: scripts/make_layers_faults.py --set measure (decoders and convnets, w8a16 and w8a8, clean and
   with one fault each in the first and a later block), and fixtures/qwen-mini's four graphs (prompt and
   token, parts 1 and 2) against its float models, fed as Genie feeds them.
2. Every model compiled with every tensor tapped, run on the x86 HTP emulator beside its float model on the
   CPU: each tensor's local SQNR (the error its node adds itself, q9diff.layers.local), and its drop below
   the noise of the tensors before it (a percentile of their local SQNRs) for the percentiles tried.
3. A fault *has an effect* where its tensor's local SQNR is at least 10 dB below the same tensor's in the
   clean model (its node's own error at least ten times the clean build's there); a weaker one (a window
   slid where few values lie) is at the level of quantization noise: it is listed with its effect, and not
   asked to be found.
4. The rule: for each percentile, the floor and margin that leave the widest gap (in dB) between every
   effective fault's tensor (below the floor, dropped by at least the margin) and every clean tensor (the
   clean models' and, in a faulty model, those before its fault: above the floor, or dropped by less).
   No clean tensor may fire and every effective fault must. The rule takes the lowest (percentile 0):
   a narrowed run measures a subset of the tensors, and the lowest of a subset is never lower than the
   whole's, so a narrowed run is never less sensitive than a whole one; a higher percentile of a subset
   can fall either way (measured: with the 10th, floor 30 and margin 18.5, nine faults found with every
   tensor tapped were missed narrowed). The other percentiles' gaps are kept as evidence.
5. `q9diff layers` as users run it (at most 64 taps a compile: decoders narrowed block by block) on every
   model with that rule: what it named, whether that is the fault's tensor or its node, time and compiles.

--check measures again and compares the rule with the file's "planted" rule (exit 1 when it differs).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import make_layers_faults as faults  # noqa: E402

from q9diff.layers import figures as fig  # noqa: E402
from q9diff.layers.run import layers  # noqa: E402

OUT = REPO / "q9diff" / "layers" / "measured.json"
PERCENTILES = (0, 10, 25, 50)  # tried, and kept as evidence
PERCENTILE = 0  # the rule's: see step 4
NO_EFFECT_DB = 10.0
QWEN = REPO / "fixtures" / "qwen-mini" / "reference" / "recipe.json"
FULL = 10**6  # taps a compile: every tensor at once


def corpus(folder: Path) -> list[dict]:
    """The models measured: the fault script's measure set and qwen-mini's graphs."""
    faults.main([str(folder), "--set", "measure", "--qwen-float", str(folder / "qwen-float")])
    rows = json.loads((folder / "manifest.json").read_text())["models"]
    for r in rows:
        for key in ("recipe", "reference", "inputs"):
            r[key] = str(folder / r[key])
    for part in (1, 2):
        for kind in ("prompt", "token"):
            ar = 32 if kind == "prompt" else 1
            graph = f"{kind}_ar{ar}_cl128_{part}_of_2"
            rows.append(
                {
                    "name": graph,
                    "family": "qwen-mini",
                    "quantization": "w8a16",
                    "fault": None,
                    "expected": None,
                    "recipe": f"{QWEN}#part_{part}_of_2/{graph}",
                    "reference": str(folder / "qwen-float"),
                    "inputs": None,
                }
            )
    return rows


def profile(row: dict) -> list[tuple[str, str, float]]:
    """(tensor, node, local SQNR: what the rule judges) of every tensor in graph order, every tensor tapped
    in one compile."""
    inputs = Path(row["inputs"]) if row["inputs"] else None
    res = layers(row["recipe"], row["reference"], inputs=inputs, max_taps=FULL)
    return [
        (r.tensor, r.node, fig.judged(r.figures))
        for g in res.graphs
        for r in g.rows
        if fig.judged(r.figures) is not None
    ]


def drops(sqnrs: list[float], q: float) -> list[float]:
    return [fig.noise_before(sqnrs[:i], q) - s for i, s in enumerate(sqnrs)]


def hit_index(prof, expected: dict) -> int:
    return next(i for i, (t, n, _) in enumerate(prof) if t == expected["tensor"] or n == expected["node"])


def choose(points_clean, points_fault) -> dict:
    """The floor and margin with the widest gap for one percentile: (gap, floor, margin)."""
    s_fault = max(s for s, _ in points_fault)
    d_fault = min(d for _, d in points_fault)
    best = None
    for floor in np.arange(math.floor(s_fault) + 0.5, 45.0, 0.5):
        below = [d for s, d in points_clean if s < floor]
        clean_drop = max(below, default=-math.inf)
        if clean_drop >= d_fault:
            continue
        margin = (d_fault + clean_drop) / 2 if math.isfinite(clean_drop) else d_fault - 5.0
        dropped = [s for s, d in points_clean if d >= margin]
        gap = min(
            d_fault - margin, margin - clean_drop, floor - s_fault, min(dropped, default=math.inf) - floor
        )
        if best is None or gap > best["gap_db"]:
            best = {
                "gap_db": round(float(gap), 2),
                "floor_db": float(floor),
                "margin_db": round(float(margin) * 2) / 2,
            }
    return best or {"gap_db": -math.inf, "floor_db": None, "margin_db": None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="build the corpus here (default: a temporary folder)")
    parser.add_argument(
        "--check", action="store_true", help="compare the rule with the file's; write nothing"
    )
    parser.add_argument(
        "--profiles", type=Path, help="keep the profiles in this JSON file, reuse what it holds"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="q9diff-layers-measure-") as tmp:
        folder = args.corpus or Path(tmp)
        rows = corpus(folder)
        kept = json.loads(args.profiles.read_text()) if args.profiles and args.profiles.is_file() else {}
        profiles = {}
        for row in rows:
            key = f"{row['family']}/{row['name']}"
            if key not in kept:
                kept[key] = profile(row)
                print(f"profiled {key}", file=sys.stderr, flush=True)
                if args.profiles:
                    args.profiles.write_text(json.dumps(kept))
            profiles[row["name"], row["family"]] = [tuple(x) for x in kept[key]]
        return decide(rows, profiles, args.check)


def decide(rows: list[dict], profiles: dict, check: bool) -> int:
    effective, benign = [], []
    for row in rows:
        if row["expected"] is None:
            continue
        prof = profiles[row["name"], row["family"]]
        clean = dict((t, s) for t, _, s in profiles[f"{row['quantization']}_clean", row["family"]])
        i = hit_index(prof, row["expected"])
        effect = clean.get(prof[i][0], math.inf) - prof[i][2]
        (effective if effect >= NO_EFFECT_DB else benign).append((row, i, round(effect, 1)))
    tried = {}
    for q in PERCENTILES:
        clean_pts, fault_pts = [], []
        for row in rows:
            prof = profiles[row["name"], row["family"]]
            sq = [s for _, _, s in prof]
            d = drops(sq, q)
            upto = len(sq)
            hit = next((i for r, i, _ in effective if r is row), None)
            if hit is not None:
                fault_pts.append((sq[hit], d[hit]))
                upto = hit
            elif row["expected"] is not None:
                upto = hit_index(prof, row["expected"])  # a fault with no effect: its prefix is clean
            clean_pts += [
                (s, x) for s, x in zip(sq[:upto], d[:upto]) if math.isfinite(s) and math.isfinite(x)
            ]
        tried[str(q)] = choose(clean_pts, fault_pts) | {
            "clean_tensors": len(clean_pts),
            "faults": len(fault_pts),
            "fault_sqnr_max_db": round(max(s for s, _ in fault_pts), 1),
            "fault_drop_min_db": round(min(d for _, d in fault_pts), 1),
        }
    q = str(PERCENTILE)  # the lowest: a narrowed run measures a subset, whose lowest is never lower
    best = tried[q]
    if best["floor_db"] is None:
        print("no floor and margin separate the clean tensors from the faults", file=sys.stderr)
        return 1
    families = sorted({r["family"] for r in rows})
    rule = fig.Rule(
        float(q),
        best["margin_db"],
        best["floor_db"],
        f"{len(rows)} graphs ({', '.join(families)}; w8a16 and w8a8): scripts/measure_layers.py",
    )
    runs = validate(rows, rule, {(r["name"], r["family"]) for r, _, _ in benign})
    # The shipped rule is fitted on real trained models (scripts/fit_layers_rule.py) and the corpus is listed
    # by scripts/score_layers_real.py: this measurement of our own planted models goes under "planted" and
    # leaves every other key of measured.json as it is.
    data = json.loads(OUT.read_text())
    planted = {
        "rule": rule.to_json() | {"gap_db": best["gap_db"]},
        "percentiles_tried": tried,
        "faults_without_effect": [
            {"model": f"{r['family']}/{r['name']}", "effect_db": e, "fault": r["fault"]} for r, _, e in benign
        ],
        "runs": runs,
    }
    print(json.dumps({k: planted[k] for k in ("rule", "percentiles_tried")}, indent=1))
    if check:
        old = data.get("planted", {}).get("rule")
        same = isinstance(old, dict) and all(
            old.get(k) == planted["rule"][k] for k in ("percentile", "margin_db", "floor_db")
        )
        print("rule unchanged" if same else f"rule differs: was {old}")
        return 0 if same else 1
    data |= {"domain": domain(rows), "planted": planted}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    wrong = [r for r in runs if r["correct"] is False]
    print(f"wrote {OUT}; {len(wrong)} run(s) named the wrong tensor", file=sys.stderr)
    return 0


def domain(rows: list[dict]) -> dict:
    """The element types of the weights and activations measured (what a result outside them is told)."""
    from q9diff.layers import graph as gr
    from q9diff.layers.targets import candidate_graphs

    weights, activations = set(), set()
    for row in rows:
        for sel in candidate_graphs(row["recipe"]):
            g = gr.read(sel.model)
            weights |= set(g.weights)
            activations |= set(g.activations)
    return {"weights": sorted(weights), "activations": sorted(activations)}


def validate(rows: list[dict], rule: fig.Rule, benign: set) -> list[dict]:
    """`q9diff layers` as users run it, with `rule`, on every model: right when it names the fault's tensor
    or node, or nothing for a clean model or a fault without effect (for which its tensor is right too)."""
    out = []
    for row in rows:
        started = time.monotonic()
        inputs = Path(row["inputs"]) if row["inputs"] else None
        res = layers(row["recipe"], row["reference"], inputs=inputs, rule=rule)
        fd = res.first_divergence
        exp = row["expected"]
        named = fd is not None and exp is not None and (fd.tensor == exp["tensor"] or fd.node == exp["node"])
        quiet = (row["name"], row["family"]) in benign
        out.append(
            {
                "model": f"{row['family']}/{row['name']}",
                "fault": row["fault"],
                "expected": exp,
                "named": None
                if fd is None
                else {
                    "tensor": fd.tensor,
                    "node": fd.node,
                    "op": fd.op,
                    "sqnr_db": round(fd.figures.sqnr_db, 1),
                },
                "effect": None if exp is None else ("none at its tensor" if quiet else "yes"),
                "correct": named or (fd is None and (exp is None or quiet)),
                "seconds": round(time.monotonic() - started, 1),
                "compiles": len(res.compiles),
                "cached": sum(c.cached for c in res.compiles),
                "measured": sum(len(g.rows) for g in res.graphs),
                "tappable": sum(g.tappable for g in res.graphs),
            }
        )
        print(
            f"ran {out[-1]['model']}: {out[-1]['named']} correct={out[-1]['correct']} {out[-1]['seconds']} s",
            file=sys.stderr,
            flush=True,
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
