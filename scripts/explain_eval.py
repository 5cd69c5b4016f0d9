"""Score `q9diff explain` on real logs from public threads with a known resolution
(tests/data/explain_eval.json): per case, whether the thread's cause leads the verdict, and per split
(tuned: read while the rules were written; held-out: collected after, never tuned on) the count right.

    python scripts/explain_eval.py [--split tuned|held-out] [-v]
    python scripts/explain_eval.py --threads [--split training|held-out] [--batch N] [-v] [--save NAME]

--threads scores the class corpus of issue 56 (tests/data/explain_threads.json, split before any rule
was written): a case is right when the verdict's first cause belongs to the thread's failure class (or
one it also allows); for a benign log, when no cause is given. A first cause of another class is a
"wrong class first"; no cause at all, or a refused log, is a miss of neither kind. --save NAME stores
the per-case outcome under tests/data/explain_threads_scores.json (the before and after figures).

A case is right when: one of its expected causes is among the verdict's first `within` (2 unless the
case says), the first cause is an expected or acceptable one (no wrong cause leads), the decisive line
and the codes it names are the ones the case gives (where it gives them), and every pasted line is
accounted for (explained, context or unknown; an unknown error line is listed in the verdict). A
one-line paste that is an error code's name is answered as that code: judged on the code's causes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "explain_eval.json"
THREADS = ROOT / "tests" / "data" / "explain_threads.json"
SCORES = ROOT / "tests" / "data" / "explain_threads_scores.json"
CLASSES = ROOT / "q9diff" / "explain" / "classes.json"


def cases(split: str | None = None) -> list[dict]:
    data = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
    return [c for c in data if split is None or c["split"] == split]


def _id(ranked) -> str:
    return ranked.cause.id.lower()


def judge(case: dict) -> tuple[bool, str]:
    """(right, why not) for one case."""
    from q9diff.explain.query import explain

    found = explain("\n".join(case["log"]))
    expect = case["expect"]
    want = [c.lower() for c in expect["causes"]]
    ok_first = want + [c.lower() for c in expect.get("acceptable", ())]
    v = found.verdict
    if v is None and len(case["log"]) == 1 and len(found.codes) == 1:
        return _judge_code(found.codes[0], want, ok_first, expect.get("within", 2))
    if v is None:
        return False, "no verdict (read as a term or not read)"
    ids = [_id(r) for r in v.causes]
    problems = []
    if len(found.findings) != len(case["log"]):
        problems.append(f"{len(found.findings)} findings for {len(case['log'])} lines")
    within = expect.get("within", 2)
    if not any(i in want for i in ids[:within]):
        problems.append(f"expected {want} in the first {within}, got {ids[:3]}")
    if ids and ids[0] not in ok_first:
        problems.append(f"a wrong cause leads: {ids[0]}")
    if "decisive" in expect and (v.decisive is None or v.decisive.line.number != expect["decisive"]):
        problems.append(
            f"decisive line {v.decisive.line.number if v.decisive else None}, expected {expect['decisive']}"
        )
    if "codes" in expect:
        named = {c.value for f in found.findings for c in f.codes if f.own_number}
        missing = set(expect["codes"]) - named
        if missing:
            problems.append(f"codes {sorted(missing)} not read from the lines")
    unknown_errors = {f.line.number for f in found.findings if f.status == "unknown" and f.failure}
    if unknown_errors - set(v.unknown_errors):
        problems.append("an unknown error line is not listed")
    return not problems, "; ".join(problems)


def _judge_code(code, want: list[str], ok_first: list[str], within: int) -> tuple[bool, str]:
    """A paste of one line that is an error code's name or number is answered as that code (what the
    user sees: its meaning and its causes, most likely first): judged on those causes as a verdict is."""
    ids = [c.id.lower() for c in code.causes]
    problems = []
    if not any(i in want for i in ids[:within]):
        problems.append(f"expected {want} in the first {within} causes of {code.name}, got {ids[:3]}")
    if ids and ids[0] not in ok_first:
        problems.append(f"a wrong cause leads: {ids[0]}")
    return not problems, "; ".join(problems)


def threads(split: str | None = None, batch: int | None = None) -> list[dict]:
    """The class corpus (optionally one split, one batch: 1 is the first collection, 2 the second)."""
    data = json.loads(THREADS.read_text(encoding="utf-8"))["cases"]
    return [
        c for c in data
        if (split is None or c["split"] == split) and (batch is None or c.get("batch", 1) == batch)
    ]  # fmt: skip


def cause_class(cause_id: str) -> str:
    """The failure class of a cause id (classes.json); a library that could not be opened is packaging."""
    if cause_id.startswith("missing:"):
        return "packaging"
    if cause_id.startswith("class:"):
        return cause_id.split(":", 1)[1]
    table = json.loads(CLASSES.read_text(encoding="utf-8"))["cause_class"]
    return table.get(cause_id, "?")


def judge_thread(case: dict) -> tuple[str, str]:
    """('right' | 'wrong' | 'miss', what the verdict led with) for one thread of the class corpus."""
    from q9diff.explain.query import explain

    found = explain("\n".join(case["log"]))
    want = {case["expect"]["class"], *case["expect"].get("also", ())}
    v = found.verdict
    if not found and not (v and getattr(v, "benign", ())):
        return "miss", "refused (nothing known)"
    first = v.causes[0].cause.id if v and v.causes else None
    if "benign" in want:
        ok = first is None and bool(getattr(v, "benign", ()))
        return ("right" if ok else ("wrong" if first else "miss")), first or "no cause"
    if first is None:
        return "miss", "no cause"
    got = cause_class(first)
    return ("right" if got in want else "wrong"), f"{first} ({got})"


def main_threads(args) -> None:
    rows = {}
    totals: dict[str, list[int]] = {}
    for case in threads(args.split, args.batch):
        outcome, led = judge_thread(case)
        split = case["split"] + (" (folded into the rules after it was scored)" if case.get("folded") else "")
        rows[case["id"]] = {"split": split, "outcome": outcome, "led": led}
        t = totals.setdefault(split, [0, 0, 0])
        t[0] += outcome == "right"
        t[1] += outcome == "wrong"
        t[2] += 1
        if args.v or outcome != "right":
            want = case["expect"]["class"]
            print(f"{outcome:<5} {case['split']:<8} {case['id']:<30} want {want}, led {led}")
    for split, (r, w, n) in sorted(totals.items()):
        print(f"{split}: {r}/{n} right, wrong class first {w}/{n}")
    if args.save:
        saved = json.loads(SCORES.read_text(encoding="utf-8")) if SCORES.exists() else {}
        figures = {k: {"right": r, "wrong_first": w, "of": n} for k, (r, w, n) in totals.items()}
        saved[args.save] = {"totals": figures, "cases": rows}
        SCORES.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=("tuned", "held-out", "training"))
    ap.add_argument("--threads", action="store_true", help="score the class corpus of issue 56")
    ap.add_argument("--save", metavar="NAME", help="with --threads: store the outcome under NAME")
    ap.add_argument("--batch", type=int, help="with --threads: only the threads of this collection batch")
    ap.add_argument("-v", action="store_true", help="print every case")
    args = ap.parse_args()
    if args.threads:
        main_threads(args)
        return
    totals: dict[str, list[int]] = {}
    for case in cases(args.split):
        right, why = judge(case)
        t = totals.setdefault(case["split"], [0, 0])
        t[0] += right
        t[1] += 1
        if args.v or not right:
            print(f"{'ok  ' if right else 'FAIL'} {case['split']:<8} {case['id']:<24} {why}")
    for split, (r, n) in sorted(totals.items()):
        print(f"{split}: {r}/{n} right")
    sys.exit(0 if all(r == n for r, n in totals.values()) else 1)


if __name__ == "__main__":
    main()
