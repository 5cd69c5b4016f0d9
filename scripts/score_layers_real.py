"""Score `q9diff layers` on the real-model corpus (scripts/make_layers_real.py) and list the corpus in
q9diff/layers/measured.json's "corpus" section.

    python scripts/score_layers_real.py CORPUS [--write-measured]

Per variant, from CORPUS/runs/<variant>.json judged again by the shipped rule: the headline (the first
divergence, or none), whether it is right, the own SQNR (local, what the rule judges) of the expected tensor
and of the noisiest clean tensor.

- A fault that changes what HTP computes is named right when the headline is its `expected` tensor or node
  (the tensor, or the output of the node reading the weight).
- A clean control, and a fault HTP does not compute (`htp_changes: false`: the Q/DQ-disagree fault), is right
  when nothing is called a divergence.
- `effect_db`: the expected tensor's own SQNR in the clean build of the same quantization minus in this one.
  Below 10 dB (scripts/measure_layers.py's NO_EFFECT_DB) the fault is at the level of quantization noise and
  is counted apart ("no measurable effect"): right if nothing, or its tensor, is named.
- `same_as_clean`: every measured tensor's SQNR equal to the clean build's (to 1e-9 dB): the device computed
  the same values.
- The noisiest clean tensor: the lowest own SQNR among the tensors before the expected one (all of a clean
  build's), the graph input excluded.

Writes CORPUS/scored.json and CORPUS/scored.md; with --write-measured, the "corpus" key of
q9diff/layers/measured.json (that key only; the rest of the file is left as it is).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURED = REPO / "q9diff" / "layers" / "measured.json"
NO_EFFECT_DB = 10.0


def num(x) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        return float(x)  # "inf", "-inf", "nan"
    return float(x)


def rows(result: dict) -> list[dict]:
    """The measured tensors of every graph (a tap not judged, off its grid or holding its reader's output, has
    no figures and is left out)."""
    return [t for g in result.get("graphs", []) for t in g.get("tensors", []) if t.get("figures")]


def own(row: dict) -> float | None:
    return num(row["figures"].get("local_sqnr_db"))


def score(v: dict, record: dict | None, clean: dict | None) -> dict:
    out = {
        "variant": v["name"],
        "model": v["model"],
        "family": v["family"],
        "split": v["split"],
        "quantization": v["quantization"],
        "fault": v["fault"]["kind"] if v["fault"] else "clean",
        "expected": v["expected"]["tensor"] if v["expected"] else None,
        "htp_changes": v["htp_changes"],
    }
    if record is None or record.get("result") is None:
        return out | {"measured": False, "error": (record or {}).get("stderr", "not run")[-300:]}
    res = record["result"]
    fd = rejudged(res, v["reference_path"])
    table = rows(res)
    exp = v["expected"]
    hit = next((r for r in table if exp and r["tensor"] == exp["tensor"]), None)
    before = [r for r in table if r["op"] != "input" and (hit is None or r["order"] < hit["order"])]
    finite = [r for r in before if own(r) is not None and math.isfinite(own(r))]
    noisiest = min(finite, key=own, default=None)
    clean_own = {r["tensor"]: own(r) for r in rows(clean["result"])} if clean and clean.get("result") else {}
    effect = None
    if hit is not None and own(hit) is not None and clean_own.get(hit["tensor"]) is not None:
        effect = round(clean_own[hit["tensor"]] - own(hit), 1)
    same = None
    if clean and clean.get("result") and v["fault"]:
        cs = {r["tensor"]: num(r["figures"]["sqnr_db"]) for r in rows(clean["result"])}
        pairs = [(num(r["figures"]["sqnr_db"]), cs.get(r["tensor"])) for r in table if r["tensor"] in cs]
        same = bool(pairs) and all(
            a == b or (a is not None and b is not None and abs(a - b) < 1e-9) for a, b in pairs
        )
    named = (
        fd is not None and exp is not None and (fd["tensor"] == exp["tensor"] or fd["node"] == exp["node"])
    )
    quiet = v["fault"] is None or not v["htp_changes"]
    no_effect = not quiet and effect is not None and effect < NO_EFFECT_DB
    if quiet:
        right = fd is None
    elif no_effect:
        right = fd is None or named
    else:
        right = named
    return out | {
        "measured": True,
        "exit": record["exit"],
        "seconds": record["wall_seconds"],
        "headline": None
        if fd is None
        else {
            "tensor": fd["tensor"],
            "node": fd["node"],
            "op": fd["op"],
            "own_db": rnd(num(fd["figures"].get("local_sqnr_db"))),
        },
        "right": right,
        "no_measurable_effect": no_effect,
        "expected_own_db": rnd(own(hit)) if hit else None,
        "expected_measured": hit is not None,
        "noisiest_clean": None
        if noisiest is None
        else {"tensor": noisiest["tensor"], "op": noisiest["op"], "own_db": rnd(own(noisiest))},
        "effect_db": effect,
        "same_as_clean": same,
    }


def rejudged(result: dict, reference: str) -> dict | None:
    """The first divergence of a saved run judged again by the shipped rule (measured.json), not the rule
    in force when it ran; element counts the run did not record are read from the float model."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "scripts"))
    from fit_layers_rule import with_elements

    from q9diff.layers import figures as fig

    rule = fig.rule()
    for g in result.get("graphs", []):
        table = [
            (t["tensor"], t["node"], t["figures"] and fig.Figures.from_json(t["figures"]), t["resolved"])
            for t in g["tensors"]
        ]  # a tap not judged (off its grid, or holding its reader's output) has no figures
        table = with_elements(table, reference)
        j = fig.judge([f for _, _, f, _ in table], rule, [ok for *_, ok in table])
        if j.divergence is not None:
            return g["tensors"][j.divergence.index]
    return None


def rnd(x: float | None) -> float | str | None:
    if x is None:
        return None
    return round(x, 1) if math.isfinite(x) else str(x)


def summary(scored: list[dict]) -> dict:
    out = {}
    # the two first halves always, then any later held-out half with variants in the corpus
    for half in dict.fromkeys(["fit", "held_out", *sorted({x["split"] for x in scored})]):
        everything = [x for x in scored if x["split"] == half]
        s = [x for x in everything if x.get("measured")]
        errors = [x for x in everything if "error" in x and x["error"] != "not run"]
        faults = [x for x in s if x["fault"] != "clean" and x["htp_changes"]]
        effective = [x for x in faults if not x["no_measurable_effect"]]
        weak = [x for x in faults if x["no_measurable_effect"]]
        clean = [x for x in s if x["fault"] == "clean"]
        ignored = [x for x in s if x["fault"] != "clean" and not x["htp_changes"]]
        out[half] = {
            "variants_measured": len(s),
            "faults_named": f"{sum(x['right'] for x in effective)}/{len(effective)}",
            "faults_without_measurable_effect": f"{sum(x['right'] for x in weak)}/{len(weak)} right",
            "false_alarms_clean": f"{sum(not x['right'] for x in clean)}/{len(clean)}",
            "false_alarms_htp_ignores": f"{sum(not x['right'] for x in ignored)}/{len(ignored)}",
            "seconds_max": max((x["seconds"] for x in s), default=None),
            "seconds_median": sorted(x["seconds"] for x in s)[len(s) // 2] if s else None,
            "not_measured_errors": [
                f"{x['variant']}: {x['error'].strip().splitlines()[-1][:160]}" for x in errors
            ],
            "not_run_yet": sum(x.get("error") == "not run" for x in everything),
            "qdq_disagree_same_as_clean": f"{sum(bool(x.get('same_as_clean')) for x in ignored)}/"
            f"{len(ignored)}",
        }
    return out


def markdown(scored: list[dict], summ: dict) -> str:
    lines = [
        "| variant | split | verdict | right | expected own dB | noisiest clean own dB | effect dB | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in scored:
        if not x.get("measured"):
            lines.append(f"| {x['variant']} | {x['split']} | not measured | | | | | |")
            continue
        h = x["headline"]
        verdict = "no divergence" if h is None else f"{h['tensor']} ({h['op']}, own {h['own_db']})"
        nc = x["noisiest_clean"]
        noisiest = "" if nc is None else f"{nc['own_db']} ({nc['tensor']})"
        lines.append(
            f"| {x['variant']} | {x['split']} | {verdict} | {'yes' if x['right'] else 'NO'} | "
            f"{x['expected_own_db']} | {noisiest} | "
            f"{x['effect_db']} | {x['seconds']} |"
        )
    lines += ["", "```", json.dumps(summ, indent=1), "```"]
    return "\n".join(lines) + "\n"


def corpus_section(manifest: dict, summ: dict, scored: list[dict]) -> dict:
    sys.path.insert(0, str(REPO / "scripts"))
    import make_layers_real as real

    return {
        "built_by": "scripts/make_layers_real.py (models: scripts/real_models.py); scored by "
        "scripts/score_layers_real.py: each saved run judged again by the shipped rule",
        "split": manifest["split"],
        "models": [
            {"name": k}
            | {
                f: m[f]
                for f in ("package", "version", "file", "sha256", "bytes", "license", "family", "split")
            }
            for k, m in manifest["models"].items()
        ],
        "inputs_made_with": sorted(
            {
                f"{r.package}=={r.version} {f}"
                for r in real.MODELS
                if r.name in manifest["models"]
                for f in r.needs
            }
        ),
        "excluded": manifest.get("excluded", {}),
        "packages": sorted({f"{m['package']}=={m['version']}" for m in manifest["models"].values()}),
        "variants": len(manifest["variants"]),
        # every clean build a control, whatever its output (q9diff/layers/measured.json's "real" counts a
        # clean build whose output already leaves the float model apart, as scripts/fit_layers_rule.py does)
        "score_strict": summ,
        "runs": [
            {
                "variant": x["variant"],
                "named": None if not x.get("headline") else x["headline"]["tensor"],
                "right": x.get("right"),
                "seconds": x.get("seconds"),
            }
            for x in scored
            if x.get("measured")
        ],
    }


def atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--write-measured", action="store_true", help="write measured.json's corpus key")
    args = parser.parse_args(argv)
    manifest = json.loads((args.corpus / "manifest.json").read_text())

    def record(name: str) -> dict | None:
        p = args.corpus / "runs" / f"{name}.json"
        return json.loads(p.read_text()) if p.is_file() else None

    scored = []
    for v in manifest["variants"]:
        v["reference_path"] = str(args.corpus / v["reference"])
        clean = record(f"{v['model']}.{v['quantization']}_clean")
        scored.append(score(v, record(v["name"]), clean))
    summ = summary(scored)
    atomic(args.corpus / "scored.json", json.dumps({"summary": summ, "variants": scored}, indent=1) + "\n")
    atomic(args.corpus / "scored.md", markdown(scored, summ))
    print(json.dumps(summ, indent=1))
    if args.write_measured:
        data = json.loads(MEASURED.read_text())
        data["corpus"] = corpus_section(manifest, summ, scored)
        atomic(MEASURED, json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
