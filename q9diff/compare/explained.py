"""What explains a difference beyond the rule table: the model itself (weights' content and source-level ops,
never the compiler's own ops), and every compiler option that differs, a setting's or named with no known
cause. `res` is the q9diff.compare.diff.DiffResult
being built."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from q9diff.compare.attribution import bucket_of
from q9diff.compare.cause import Cause
from q9diff.compare.observe import one
from q9diff.compare.rules import ROOT_SETTINGS
from q9diff.read import generic, inprocess
from q9diff.read.binary import ContextBinary


def new_weights_bytes(rows: list[dict]) -> int:
    """Bytes of weights whose content differs: new bytes and size change, not bytes only moved."""
    return sum(max(r["new_bytes"], abs(r["delta"])) for r in rows if bucket_of(r["kind"]) == "weights")


def compiler_kinds(*builds: ContextBinary) -> frozenset[str]:
    """Op kinds (generic.op_base) measured to come and go with settings for one model on these builds' QAIRT
    (besides those named as the compiler's own, `@DmaCheckpointSet`, `*InputSlice`: source_ops)."""
    measured = [cb.measured for cb in builds if cb.measured is not None]
    return frozenset().union(*(m.op_kinds for m in measured))


def source_ops(a: ContextBinary, b: ContextBinary, oa: dict, ob: dict) -> list[str]:
    """Op kinds present on one side only that the compiler was not seen to add for settings: what the
    source model put there (generic.op_base names, sorted)."""
    own = compiler_kinds(a, b)
    ka = {generic.op_base(k) for g in oa["op_kinds"] for k in g}
    kb = {generic.op_base(k) for g in ob["op_kinds"] for k in g}
    return sorted(k for k in ka ^ kb if k[:1] not in ("@", "*") and k not in own)


def model_itself(res, a: ContextBinary, b: ContextBinary, oa: dict, ob: dict, roots: set[str]) -> None:
    """No setting that reshapes the graph body differs, yet the weights' content or the source-level ops do:
    the model itself differs (a root cause listed first, carrying the weights' bytes). Ops only the compiler
    adds (its own, or seen to come and go with settings) are the schedule, never the model: with no setting
    to explain them, the schedule is said to differ for a cause not known."""
    if roots & set(ROOT_SETTINGS) or "graph_structure" in roots:
        return
    weights, ops = new_weights_bytes(res.regions), source_ops(a, b, oa, ob)
    if weights or ops:
        said = ", ".join(ops[:6]) + (f" and {len(ops) - 6} more" if len(ops) > 6 else "")
        evidence = [f"{weights} bytes of weights differ in content"] if weights else []
        evidence += [f"op kinds on one side only: {said}"] if ops else []
        ops_a, ops_b = sum(map(len, oa["op_kinds"])), sum(map(len, ob["op_kinds"]))
        res.causes.insert(0, Cause("graph_structure", "root", ops_a, ops_b, weights, tuple(evidence)))
        return
    for i, c in enumerate(res.causes):
        if c.name == "schedule":
            why = ("no setting q9diff reads differs and every op kind that moved is the compiler's own:"
                   " the compiler scheduled otherwise, cause not known")  # fmt: skip
            res.causes[i] = Cause(c.name, "unexplained", c.a, c.b, c.bytes, (*c.evidence, why), c.size_delta)


# Options that are a setting under the compiler's own name: the option says what was asked.
MIRRORS = {"O": "optimization_level", "hvx_threads": "hvx_threads", "enable_dlbc": "dlbc",
           "compress_weights": "weights_packing", "native_hmx_a16w4": "native_hmx_a16w4", "arch": "dsp_arch",
           "min_arch": "dsp_arch", "soc_type": "soc_model", "vtcm_size": "vtcm_size",
           "vtcm_mb": "vtcm_size"}  # fmt: skip
# A root cause -> the measured setting whose options it moves (generic_measured.json `follows`).
FOLLOWS = {"soc_model": "soc_model", "dsp_arch": "soc_model", "vtcm_size": "vtcm_size",
           "optimization_level": "optimization_level", "graph_structure": "model"}  # fmt: skip


def option_changes(a: ContextBinary, b: ContextBinary) -> dict[str, tuple]:
    """Every compiler option that differs between graphs at the same position: key -> (a's, b's) value,
    each a value or, where graphs disagree, a list per graph."""
    apart: dict[str, tuple[list, list]] = {}
    for i in range(min(len(a.graphs), len(b.graphs))):
        oa, ob = a.options(i), b.options(i)
        for k in sorted(set(oa) | set(ob)):
            if oa.get(k) != ob.get(k):
                va, vb = apart.setdefault(k, ([], []))
                va.append(oa.get(k)), vb.append(ob.get(k))
    return {k: (one(va), one(vb)) for k, (va, vb) in apart.items()}


def unexplained_options(res, a: ContextBinary, b: ContextBinary, roots: set[str]) -> None:
    """Every compiler option that differs is a setting's (its mirror, or measured to follow a root cause on
    these builds' QAIRT), or is listed by name as a difference whose cause is not known."""
    if "sdk_version" in roots or res.different_models:
        return  # two compilers' or two models' options: every option may differ
    changes = option_changes(a, b)
    measured = [m for m in (a.measured, b.measured) if m]
    moved = set()
    for root in roots:
        moved |= {k for k, s in MIRRORS.items() if s == root}
        setting = FOLLOWS.get(root)
        for m in measured if setting else ():
            moved |= m.follows.get(setting, frozenset())
    where = (f"measured on QAIRT {', '.join(sorted({m.qairt for m in measured}))}" if measured else
             f"which options follow which setting is measured on QAIRT {generic.measured_range()}"
             " only")  # fmt: skip
    untold = set()  # options that follow soc_model where what one side asked cannot be told (res.unknown)
    if any(u["setting"] == "soc_model" for u in res.unknown):
        untold = set().union(*(m.follows.get("soc_model", frozenset()) for m in measured))
    sides = [(Path(x.path).name, generic.qairt_of(x.build_id), x.dsp_arch, x.graph_number) for x in (a, b)]
    for key, (va, vb) in changes.items():
        if key in moved:
            continue
        state = inprocess.carried(sides, key)
        if state or key in untold:  # a file shows the state the option moves with, or a setting not told
            untold_too = f"it {generic.UNTOLD} (soc_model, {where})"
            why = f"compiler option {key}: {va} → {vb}: " + (
                f"{state}; {untold_too}"
                if state and key in untold
                else state or f"{untold_too}; see `not compared`"
            )
            res.causes.append(Cause("compiler_option", "effect", va, vb, None, (why,), option=key))
            if state and key == "relaxed_precision_flag":  # what it does to a float graph: fp16 on HTP
                for i, c in enumerate(res.causes):
                    if c.name == "quantization" and c.role == "root":
                        fp16 = inprocess.fp16_clause(generic.qairt_of(a.build_id))
                        also = f"relaxed_precision_flag {va} → {vb} ({inprocess.STATE}): {fp16}"
                        res.causes[i] = replace(c, evidence=(*c.evidence, also))
            continue
        why = (
            f"compiler option {key}: {va} → {vb}, cause not known (no setting q9diff reads moves it; {where})"
        )
        res.causes.append(Cause("compiler_option", "unexplained", va, vb, None, (why,), option=key))


def vtcm_asked(res, a: ContextBinary, b: ContextBinary, roots: set[str]) -> set[str]:
    """The VTCM the compiler was given (its option vtcm_size, bytes) differing where the graphs record the
    same size: a vtcm_size root cause read from the option, added to `res.causes`; the roots with it."""
    others = roots & {"soc_model", "dsp_arch", "sdk_version", "graph_structure", "graph_set"}
    if others or res.different_models or any(u["setting"] == "soc_model" for u in res.unknown):
        return roots  # the option may follow the target, the compiler or the model: theirs to say
    asked = _vtcm_asked(*option_changes(a, b).get("vtcm_size", (None, None)), roots)
    if asked is None:
        return roots
    res.causes.append(asked)
    return roots | {"vtcm_size"}


def _vtcm_asked(va, vb, roots: set[str]) -> Cause | None:
    """The option's two values as that root cause. Measured on QAIRT 2.49, 2.50 and 2.51 (onnxruntime-qnn
    2.5.0-2.7.0, multi-SoC builds of magika and of the DLC fixtures' model; SC8380XP and SM8750): a SoC's
    cache built with no vtcm_mb records 4 MiB and its option holds the SoC's whole VTCM (8 MiB on
    SC8380XP); vtcm_mb 4 records 4 MiB and its option holds 4 MiB. None where vtcm_size is already a root,
    or either value is not one size in bytes."""
    if "vtcm_size" in roots:
        return None
    if not all(isinstance(v, str) and v.isdigit() and int(v) > 0 for v in (va, vb)):
        return None
    why = (
        f"compiler option vtcm_size: {va} → {vb}: the VTCM the compiler was given, where the graphs "
        "record the same size (a build without vtcm_mb records 4 MiB and gives the compiler the SoC's "
        "whole VTCM; measured on QAIRT 2.49-2.51)"
    )
    return Cause("vtcm_size", "root", int(va), int(vb), None, (why,))
