"""Read a saved result (`--json` of diff, a set diff, verify or doctor) back for `q9diff report`.

A saved result is input like any other, and may come from anyone: it is checked against the shape its
schema declares before a presenter reads it, and anything else (not JSON, another schema, a field of
the wrong type, a number too large to show) is one `ResultError` naming the file and the field. The
shapes below list only what the presenters read; other fields are left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from q9diff.errors import Q9Error

DIFF, SET, VERIFY, DOCTOR = "q9diff.diff/1", "q9diff.setdiff/1", "q9diff.verify/1", "q9diff.doctor/1"
TARGET = "q9diff.target/1"
LAYERS = "q9diff.layers/1"
NON_FINITE = ("inf", "-inf", "nan")
LIMIT = 1 << 62  # sizes and counts beyond this are no file's: refused, not drawn
# The largest result q9diff writes for a real set is ~16 MB (six 1 GB parts of the seed, every region and
# op named); a saved result is read whole and drawn, ~20x its size in memory, so a bound is kept on it.
MAX_RESULT = 64 << 20
# A q9diff result nests a few levels (a set, its parts, a cause, its values); one nested deeper is no
# result of ours, and every presenter that walks values would recurse through it.
MAX_DEPTH = 24


class ResultError(Q9Error):
    pass


OPT = object()  # marks a key that may be absent (a result saved by an earlier q9diff)


class Maybe:
    """A value of `spec`, or null."""

    def __init__(self, spec) -> None:
        self.spec = spec


ANY = object()
INT, NUM, SIZE = "integer", "number", "size"  # SIZE: an integer >= 0 (a size, an offset, a count)
MAYBE_INT = Maybe(INT)


class OneOf:
    """One of these strings: a word a presenter styles or counts by (a severity, a status)."""

    def __init__(self, *words: str) -> None:
        self.words = words


_SIDE = {
    "path": str,
    "size": SIZE,
    "dsp_arch": MAYBE_INT,
    "target": {"soc_model_requested": MAYBE_INT},
    "graphs": [{"name": str, "ops": [str]}],
    "regions": [{"name": str, "offset": SIZE, "size": SIZE}],
    "packing": (OPT, Maybe({"message": str})),
}
_CAUSE = {
    "name": str,
    "role": str,
    "a": ANY,
    "b": ANY,
    "bytes": MAYBE_INT,
    "evidence": [str],
    "size_delta": (OPT, MAYBE_INT),
    "option": (OPT, str),
}
_MODELS = (OPT, {"evidence": [str], "byte_attribution": str})
# --target beside a reference: the device named and why the reference is a build for another one
_AIMED = (OPT, {"name": str, "reference_findings": [str]})
_SUGGESTION = {
    "setting": str,
    "value": ANY,
    "targets": {"qairt": str, "htp_backend_ext_config": dict, "qnn_cli": str, "ort_qnn": (OPT, dict)},
}
_VERDICT = OneOf("will not load", "loads, recompile advised", "loads")
# --runtime or --target named: will each part of the candidate load there (q9diff.load.rules)
_LOAD = (
    OPT,
    Maybe(
        {
            "verdict": _VERDICT,
            "device": Maybe(str),
            "runtime": Maybe({"qairt": str, "source": str}),
            "parts": [
                {
                    "part": str,
                    "verdict": _VERDICT,
                    "findings": [
                        {
                            "rule": str,
                            "verdict": _VERDICT,
                            "evidence": str,
                            "error": Maybe(str),
                            "fix": Maybe(str),
                        }
                    ],
                    "not_judged": [str],
                }
            ],
        }
    ),
)
# a diff of containers: what it compared of each file, and whether they differ outside it
_COMPARED = {"path": str, "size": SIZE, "compared_bytes": SIZE}
_OUTSIDE = (
    OPT,
    {"compared": str, "a": _COMPARED, "b": _COMPARED, "contexts_identical": bool, "differs": Maybe(bool)},
)
_DIFF = {
    "a": _SIDE,
    "b": _SIDE,
    "identical": bool,
    "size_delta": INT,
    "regions": [
        {k: SIZE for k in ("a_size", "b_size", "changed_bytes", "moved_bytes", "new_bytes")}
        | {"delta": INT}
        | {"name": str}
    ],
    "causes": [_CAUSE],
    "suggestions": [_SUGGESTION],
    "unknown": list,
    "attribution": [{"bucket": str, "changed_bytes": SIZE, "size_delta": INT}],
    "weights_verdict": Maybe(str),
    "settings": (OPT, {"a": dict, "b": dict}),
    "different_models": _MODELS,
    "target": _AIMED,
    "load": _LOAD,
    "structure": (OPT, {"same": bool, "words": (OPT, [str])}),
    "toolchain": (OPT, {"form": str, "why": str}),
    "next": (OPT, str),
    "reference_looks_wrong": (OPT, str),
    "read_as": (OPT, [str]),
    "outside": _OUTSIDE,
}
_SET = {
    "identical": bool,
    "a_total": SIZE,
    "b_total": SIZE,
    "size_delta": INT,
    "unpaired_a": [str],
    "unpaired_b": [str],
    "unpaired_sizes": (OPT, {"a": [SIZE], "b": [SIZE]}),
    "causes": [_CAUSE],
    "suggestions": [_SUGGESTION],
    "parts": [_DIFF | {"part": str}],
    "different_models": _MODELS,
    "target": _AIMED,
    "load": _LOAD,
    "toolchain": (OPT, {"form": str, "why": str}),
    "next": (OPT, str),
    "reference_looks_wrong": (OPT, str),
    "read_as": (OPT, [str]),
    "outside": _OUTSIDE,
    "bundle": (
        OPT,
        {
            "files": [{"file": str, "a": MAYBE_INT, "b": MAYBE_INT, "differs": Maybe(bool), "why": str}],
            "settings": [{"file": str, "key": str, "a": ANY, "b": ANY}],
            "settings_left_out": INT,
        },
    ),
}
_METRICS = Maybe({"max_abs": NUM, "rel": NUM, "cosine": NUM})
_VERIFY = {
    "passed": bool,
    "sides": [{"label": str, "source": str, "runner": str, "notes": [str]}],
    "notes": [str],
    "outputs": [{"graph": str, "output": str, "against": str, "metrics": _METRICS, "passed": bool}],
    "llm": Maybe(
        {
            "prompt": [INT],
            "tokens": {str: [INT]},
            "first_divergence": {str: MAYBE_INT},
            "steps": [
                {"step": INT, "tokens": {str: INT}, "vs_cpu": {str: _METRICS}, "vs_reference": _METRICS}
            ],
            "passed": bool,
            "texts": (OPT, {str: str}),
        }
    ),
    "tolerance": (OPT, Maybe({"min_cosine": NUM, "max_rel": NUM})),
    "targets": (OPT, [{"part": str, "soc_model": MAYBE_INT}]),
}
_DOCTOR = {
    "bundle": str,
    "reference": Maybe(str),
    "findings": [
        {
            "check": str,
            "severity": OneOf("error", "warning", "info"),
            "hypothesis": MAYBE_INT,
            "where": str,
            "evidence": str,
            "fix": Maybe(str),
        }
    ],
    "hypotheses": {str: {"title": str, "status": OneOf("implicated", "ruled out", "open"), "why": [str]}},
    "notes": [str],
    "passed": (OPT, [INT]),
    "target": (OPT, {"label": str}),
    "profile": (OPT, {"sentence": str}),
    "runtime": (OPT, {"qairt": str, "source": str}),
}
_TARGET = {
    "target": {
        "name": str,
        "soc_model": INT,
        "part": Maybe(str),
        "dsp_arch": MAYBE_INT,
        "vtcm_mb": MAYBE_INT,
        "sources": {str: str},
        "note": Maybe(str),
    },
    "profile": {"sentence": str},
    "matches": bool,
    "causes": [_CAUSE],
    "suggestions": [_SUGGESTION],
    "errors": [str],
    "needs_reference": [str],
    "parts": [{"part": str, "causes": [_CAUSE], "settled": [str], "unknown": [str]}],
    "load": _LOAD,
    "toolchain": (OPT, {"form": str, "why": str}),
    "next": (OPT, str),
}
# q9diff.layers/1: what LayersResult.from_json reads (q9diff.layers.result)
_FIGURES = {k: NUM for k in ("cosine", "max_abs", "rel", "sqnr_db")} | {
    "steps": Maybe(NUM),
    "local_sqnr_db": Maybe(NUM),
    "local_nodes": Maybe(SIZE),
    "elements": (OPT, Maybe(SIZE)),
    "grid_db": (OPT, Maybe(NUM)),
}
_DIVERGENCE = {"graph": str, "tensor": str, "node": str, "op": str, **_FIGURES,
               "before": {"sqnr_db": NUM, "cosine": NUM}, "previous": Maybe(str),
               "allowance_db": (OPT, NUM), "borderline": (OPT, bool)}  # fmt: skip
_LAYERS = {
    "candidate": str,
    "reference": str,
    "runs": {"candidate": str, "reference": str},
    "rule": {"percentile": NUM, "margin_db": NUM, "floor_db": NUM, "measured_on": str, "text": str,
             "grid_margin_db": (OPT, Maybe(NUM)), "spread": (OPT, NUM), "borderline_db": (OPT, NUM),
             "worst_gap_db": (OPT, NUM), "narrow_db": (OPT, Maybe(NUM)),
             "within_steps": (OPT, Maybe(NUM))},
    "first_divergence": Maybe(_DIVERGENCE),
    "compiles": {"total": SIZE, "cached": SIZE},
    "seconds": NUM,
    "notes": [str],
    "graphs": [
        {
            "graph": str, "part": str, "model": str, "reference": str, "tappable": SIZE, "measured": SIZE,
            "inputs": {"source": OneOf("npz", "seeded", "genie"), "detail": str},
            "first_divergence": Maybe(_DIVERGENCE),
            "tensors": [{"tensor": str, "node": str, "op": str, "order": SIZE, "stage": INT,
                         "figures": Maybe(_FIGURES), "resolved": bool}],
            "untapped": [{"tensor": str, "node": str, "op": str, "side": OneOf("reference", "candidate"),
                          "stand_in": Maybe(str)}],
            "unmatched": [str],
            "compiles": [{"side": OneOf("candidate", "reference"), "label": str, "taps": SIZE, "binary": str,
                          "size": SIZE, "cached": bool, "seconds": NUM,
                          "vs_untapped": Maybe({"size": [SIZE], "ops": [SIZE], "words": [str],
                                                "outputs": Maybe(_FIGURES)})}],
            "notes": [str],
            "worst": (OPT, Maybe(_DIVERGENCE)),
            "near": (OPT, Maybe(_DIVERGENCE)),
            "encodings": (OPT, [{"kind": OneOf("bit_width", "qdq_mismatch"), "tensor": str, "node": str,
                                 "text": str}]),
            "cpu": (OPT, [{"tensor": str, "cpu_db": NUM, "htp_db": NUM, "why": str}]),
        }
    ],
}  # fmt: skip
SHAPES = {DIFF: _DIFF, SET: _SET, VERIFY: _VERIFY, DOCTOR: _DOCTOR, TARGET: _TARGET, LAYERS: _LAYERS}


def _check(v, spec, where: str) -> None:
    """Raise ValueError('WHERE: expected WHAT') unless `v` has the shape `spec`."""
    if spec is ANY:
        return
    if isinstance(spec, Maybe):
        if v is not None:
            _check(v, spec.spec, where)
        return
    if spec == NUM and v in NON_FINITE:  # verify writes a non-finite metric as a string
        return
    if spec in (INT, NUM, SIZE):
        ok = isinstance(v, int) if spec in (INT, SIZE) else isinstance(v, (int, float))
        if not ok or isinstance(v, bool) or abs(v) > LIMIT or (spec == SIZE and v < 0):
            what = {INT: "an integer (at most 2^62)", SIZE: "a size (0 to 2^62)", NUM: "a number"}[spec]
            raise ValueError(f"{where}: expected {what}")
        return
    if isinstance(spec, OneOf):
        if v not in spec.words:
            raise ValueError(f"{where}: expected one of {', '.join(spec.words)}")
        return
    if isinstance(spec, type):
        if not isinstance(v, spec) or (spec is int and isinstance(v, bool)):
            raise ValueError(f"{where}: expected {_NAMES.get(spec, spec.__name__)}")
        return
    if isinstance(spec, list):
        if not isinstance(v, list):
            raise ValueError(f"{where}: expected a list")
        for i, x in enumerate(v):
            _check(x, spec[0], f"{where}[{i}]")
        return
    if not isinstance(v, dict):
        raise ValueError(f"{where}: expected an object")
    if str in spec:  # a mapping: any keys, each value of one shape
        for k, x in v.items():
            _check(x, spec[str], f"{where}.{k}")
        return
    for k, sub in spec.items():
        optional = isinstance(sub, tuple) and sub[0] is OPT
        sub = sub[1] if optional else sub
        if k not in v:
            if optional:
                continue
            raise ValueError(f"{where}: no {k!r}" if where else f"no {k!r}")
        _check(v[k], sub, f"{where}.{k}" if where else k)


_NAMES = {str: "a string", bool: "true or false", dict: "an object", list: "a list"}


@dataclass(frozen=True)
class Saved:
    schema: str
    data: dict


def load(path: Path) -> Saved:
    """The result saved in `path`, its shape checked; ResultError (one line naming the file) otherwise."""
    from q9diff.guard import read_text  # start-up: guard

    text = read_text(path, "a saved q9diff result (--json)", ResultError, MAX_RESULT)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ResultError(
            f"{path}: not JSON{where}: expected the --json output of a q9diff command"
        ) from None
    deep = _depth_over(data, MAX_DEPTH)
    if deep:
        raise ResultError(
            f"{path}: not a q9diff result: a value at {deep} is nested over {MAX_DEPTH} levels deep"
        )
    schema = data.get("schema") if isinstance(data, dict) else None
    if not isinstance(schema, str) or schema not in SHAPES:
        names = ", ".join(SHAPES)
        raise ResultError(
            f'{path}: not a q9diff result: expected "schema" one of {names}, got {_quote(schema)}'
        )
    try:
        _check(data, SHAPES[schema], "")
    except ValueError as exc:
        raise ResultError(f"{path}: a {schema} result q9diff cannot read: {exc}") from None
    except RecursionError:
        raise ResultError(f"{path}: a {schema} result q9diff cannot read: nested too deep") from None
    return Saved(schema, data)


def _depth_over(value, limit: int) -> str:
    """Where the first value nested deeper than `limit` is (walked without recursion), or ''."""
    todo = [(value, 0, None)]  # (value, depth, (key, parent's entry)): a path is made only when needed
    while todo:
        entry = todo.pop()
        v, depth, _ = entry
        if depth > limit:
            keys = []
            while entry[2] is not None:
                keys.append(entry[2][0])
                entry = entry[2][1]
            return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in reversed(keys)).lstrip(".")
        if isinstance(v, dict):
            todo.extend((x, depth + 1, (k, entry)) for k, x in v.items())
        elif isinstance(v, list):
            todo.extend((x, depth + 1, (i, entry)) for i, x in enumerate(v))
    return ""


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _quote(v) -> str:
    s = json.dumps(v)[:40] if not isinstance(v, (dict, list)) else type(v).__name__
    return s


def verify_result(data: dict):
    """A `VerifyResult` from its JSON (infinite metrics, written as strings, come back as floats)."""
    from q9diff.verify.run import (  # start-up: verify.run, numpy
        LlmCheck,
        Metrics,
        OutputCheck,
        Side,
        StepDrift,
        Tolerance,
        VerifyResult,
    )

    def m(x):
        return None if x is None else Metrics(float(x["max_abs"]), float(x["rel"]), float(x["cosine"]))

    llm = data["llm"]
    check = None
    if llm is not None:
        steps = tuple(
            StepDrift(s["step"], s["tokens"], {k: m(v) for k, v in s["vs_cpu"].items()}, m(s["vs_reference"]))
            for s in llm["steps"]
        )
        check = LlmCheck(
            tuple(llm["prompt"]),
            {k: tuple(v) for k, v in llm["tokens"].items()},
            llm["first_divergence"],
            steps,
            llm["passed"],
            llm.get("texts", {}),
        )
    outputs = tuple(
        OutputCheck(o["graph"], o["output"], o["against"], m(o["metrics"]), o["passed"])
        for o in data["outputs"]
    )
    sides = tuple(Side(s["label"], s["source"], s["runner"], tuple(s["notes"])) for s in data["sides"])
    tol = data.get("tolerance")
    tolerance = None if tol is None else Tolerance(float(tol["min_cosine"]), float(tol["max_rel"]))
    targets = tuple((x["part"], x["soc_model"]) for x in data.get("targets", []))
    return VerifyResult(sides, outputs, check, tuple(data["notes"]), targets=targets, tolerance=tolerance)
