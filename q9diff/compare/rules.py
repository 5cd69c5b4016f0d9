"""Attribution rules as data: which observed difference is a root cause (a setting someone chose)
and which is an effect of another, how each is shown (its values and evidence), which attribution
bucket's bytes it carries, and where each setting is set in a user's configuration. `diff()` is a loop
over these rows that names none of them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from q9diff import settings
from q9diff.units import value


@dataclass(frozen=True)
class Sides:
    """What a rule's note may read: both binaries, both observations, and the flags diff() raised
    (`O_ran`: the optimization levels compared are the options' O, the files record none)."""

    a: Any
    b: Any
    oa: dict
    ob: dict
    flags: frozenset[str] = frozenset()


def short(name: str, v) -> str:
    """A value in evidence: in its unit (units.value), strings quoted, cut at 80 characters."""
    worded = isinstance(v, int) or (isinstance(v, (list, tuple)) and all(isinstance(x, int) for x in v))
    s = value(name, v) if worded else repr(v)
    return s if len(s) < 80 else s[:77] + "..."


def _plain(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    return va, vb, [f"{getter}: {short(getter, va)} -> {short(getter, vb)}"]


def _counted(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    return va, vb, [f"{getter} differs ({len(va)} vs {len(vb)} entries)"]


def options_apart(side: tuple, other: tuple) -> dict:
    """The options of `side` (per graph, (key, value) pairs) that the other side's graph at the same
    position lacks or sets otherwise: {key: value}, or {key: [values]} where graphs disagree. An option
    a side does not write is absent from its dict, never null."""
    values: dict[str, list[str]] = {}
    for k, v in sorted({kv for g, o in zip(side, other) for kv in set(g) - set(o)}):
        values.setdefault(k, []).append(v)
    return {k: vs[0] if len(vs) == 1 else vs for k, vs in values.items()}


def _precision(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    """What each side computes in, said as builds are named: `fp16 (weights float16, ...)`."""
    from q9diff.compare.structure import Precision  # start-up: compare.structure

    a, b = Precision(*va, ()), Precision(*vb, ())
    said = [
        f"{what} {'/'.join(x) or 'none read'} -> {'/'.join(y) or 'none read'}"
        for what, x, y in (("weights", a.weights, b.weights), ("activations", a.activations, b.activations))
        if x != y
    ]
    return a.label, b.label, [f"{', '.join(said)} (the compiled graphs' tensor types)"]


def _io(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    """The I/O's data types, as QNN names them: `FLOAT_32 -> UFIXED_POINT_16` (--quantize_io)."""
    a, b = "/".join(va) or "none", "/".join(vb) or "none"
    return f"I/O {a}", f"I/O {b}", [f"the graphs' I/O tensors: {a} -> {b} (metadata)"]


def _options(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    """a and b: each side's value of every option that differs."""
    keys = sorted({k for ga, gb in zip(va, vb) for k, _ in set(ga) ^ set(gb)})
    shown = f"options that differ: {', '.join(keys[:12])}" + (" ..." if len(keys) > 12 else "")
    return options_apart(va, vb), options_apart(vb, va), [shown]


def op_list_change(a: tuple[str, ...], b: tuple[str, ...]) -> str:
    ca, cb = Counter(a), Counter(b)
    added, removed = sum((cb - ca).values()), sum((ca - cb).values())
    if not added and not removed:
        return f"{len(a)} ops, same kinds, re-ordered"
    return f"{len(a)} -> {len(b)} ops: {added} added, {removed} removed (by kind)"


def _ops(getter: str, va, vb) -> tuple[Any, Any, list[str]]:
    """Per graph: the op count, and what changed in its op list."""
    return [len(x) for x in va], [len(x) for x in vb], [op_list_change(ga, gb) for ga, gb in zip(va, vb)]


def _ran_o(s: Sides) -> str | None:
    if "O_ran" in s.flags:
        return "the level the compiler ran (options O): a file records no optimizationLevel"
    return None


def _generic_target(s: Sides) -> str | None:
    """soc_model 0 on either side: the generic target, with the evidence of the side built for it; where a
    side's request is unknown and its recorded socModel stands in (`soc_recorded`), that is said."""
    from q9diff.compare.summary import target  # start-up: compare.summary, construct

    if "soc_recorded" in s.flags:
        unknown = [(n, t) for n, t in (("candidate", target(s.a)), ("reference", target(s.b)))
                   if t["soc_model_requested"] is None]  # fmt: skip
        why = "; ".join(
            f"the {n} records socModel {t['soc_model_recorded']}, {t['evidence'][-1]}" for n, t in unknown
        )
        return f"compared as recorded: {why}"
    if s.oa["soc_model"] != 0 and s.ob["soc_model"] != 0:
        return None
    side = s.a if s.oa["soc_model"] == 0 else s.b
    return "soc_model 0: generic target (" + "; ".join(target(side)["evidence"]) + ")"


@dataclass(frozen=True)
class Rule:
    """How one cause is judged: its name, root or effect, the observation it reads and what explains it."""

    name: str  # canonical cause name
    role: str  # "root" or "effect"
    getter: str  # name of the observation in q9diff.compare.diff.observe()
    # an effect is not reported as its own root when one of these is a root
    explained_by: tuple[str, ...] = ()
    # the attribution bucket (q9diff.compare.attribution) whose changed bytes and size delta it carries
    bucket: str | None = None
    # (getter, a, b) -> the values it reports and its evidence
    shown: Callable[[str, Any, Any], tuple[Any, Any, list[str]]] = _plain
    # a sentence added to its evidence, when it applies to these two builds
    note: Callable[[Sides], str | None] | None = None
    leads: bool = False  # listed first when its note applies (the generic target)


# Settings that change the compiled graph body (schedule, tiling, constants) as a consequence: when
# none of them differs and the op list or the weights still do, the model itself differs.
ROOT_SETTINGS = (
    "soc_model",
    "dsp_arch",
    "vtcm_size",
    "optimization_level",
    "hvx_threads",
    "dlbc",
    "quantization",
    "graph_set",
    "sdk_version",
    "weight_sharing",
    "weights_packing",
    "native_hmx_a16w4",
)

# What each root cause decides on the device, the order a verdict names them in: a build for the wrong SoC or
# arch computes garbage (or does not load), a QAIRT or model difference changes what runs (a multi-SoC
# build's SoCs, soc_set, which devices have a cache to load), VTCM, the
# optimization level, HVX threads and DLBC change only how fast, packing and sharing only how big.
MATTERS: dict[str, str] = {
    "soc_model": "correctness", "dsp_arch": "correctness", "quantization": "accuracy",
    "graph_structure": "the model", "graph_set": "the model", "tensor_names": "the model",
    "split": "the model", "soc_set": "loading", "sdk_version": "loading", "vtcm_size": "speed",
    "optimization_level": "speed", "hvx_threads": "speed", "dlbc": "speed", "weights_packing": "size",
    "native_hmx_a16w4": "size", "weight_sharing": "size",
}  # fmt: skip
MATTERS_ORDER = ("correctness", "accuracy", "the model", "loading", "speed", "size")

RULES: tuple[Rule, ...] = (
    Rule("soc_model", "root", "soc_model", note=_generic_target, leads=True),
    Rule("dsp_arch", "root", "dsp_arch"),
    Rule("vtcm_size", "root", "vtcm_size"),
    Rule("optimization_level", "root", "optimization_level", note=_ran_o),
    Rule("hvx_threads", "root", "num_hvx_threads"),
    Rule("dlbc", "root", "htp_dlbc"),
    Rule("weight_sharing", "root", "weight_sharing", explained_by=("graph_set",)),
    Rule("weights_packing", "root", "compress_weights"),
    # INT4 weights are stored two per byte unless the compiler option native_hmx_a16w4 is false.
    Rule("native_hmx_a16w4", "root", "native_hmx_a16w4"),
    Rule("quantization", "root", "io_dtypes", shown=_io),
    # What the graph computes in (weights, activations, I/O), from its tensor types. A float model on an
    # arch without fp16 HVX (soc_model 0 alone targets v68) computes in float32: then the precision is an
    # effect of the target, not a quantization setting.
    Rule("quantization", "root", "precision", explained_by=("soc_model", "dsp_arch"), shown=_precision),
    Rule("graph_set", "root", "num_graphs"),
    Rule("sdk_version", "root", "build_id"),
    Rule(
        "graph_structure", "root", "io_signature", explained_by=("quantization", "graph_set"), shown=_counted
    ),
    # Graph I/O renamed with the same shapes (e.g. LiteRT 2.32 vs 2.40 exports): what it is, no setting.
    Rule("tensor_names", "root", "io_names", explained_by=("graph_structure", "graph_set")),
    Rule("soc_type", "effect", "soc_type", explained_by=("soc_model", "dsp_arch")),
    Rule("spill_fill", "effect", "spill_fill_buffer_size"),
    Rule("const_size", "effect", "const_size", bucket="weights"),
    Rule("schedule", "effect", "op_kinds", bucket="schedule", shown=_ops),
    Rule("compiler_options", "effect", "other_options", bucket="compiler_options", shown=_options),
)
# The attribution bucket whose bytes an effect cause carries: a view of RULES.
EFFECT_BUCKETS: dict[str, str] = {r.name: r.bucket for r in RULES if r.bucket}

# Where each root-cause setting is set: (qairt API, htp_backend_ext_config JSON path, ORT QNN EP option).
# `{v}` is the reference's value. A view of q9diff.settings, the one row per setting. The qairt lines
# construct against qairt-dev 0.13's classes (qairt/api/common/backends/htp/config.py): HtpGraphConfig
# requires `name`, the graph's name (no default), so a graph setting's line names the graph (`{name}`,
# see qairt_fix); the soc_model line carries the reference's dsp_arch (`{arch}`).
FIX_TARGETS: dict[str, dict[str, str]] = settings.fix_targets()
# qairt-dev 0.13's CompileConfig (qairt/api/compiler/config.py) turns `soc_details` into device configs
# only when device_custom_configs is unset: a device line says so, since a soc_details beside it is dropped.
DEVICE_NOTE = "  # soc_details is ignored once device_custom_configs is set"


def qairt_call(call: str, graphs: tuple[str, ...] | None) -> str:
    """`call` (an Htp*Config call, `{name}` where HtpGraphConfig's required name goes) for `graphs`:
    one graph is named, several (or none read) become a loop over their names, one config each."""
    if graphs is None or "{name}" not in call:
        return call
    if len(graphs) == 1:
        return call.replace("{name}", json.dumps(graphs[0]))
    names = ", ".join(json.dumps(g) for g in graphs)
    return f"[{call.replace('{name}', 'n')} for n in ({names})]"


def qairt_fix(setting: str, value: object, graphs: tuple[str, ...], dsp_arch: int | None) -> str:
    """The qairt line that sets `setting` to `value` in a build of `graphs` (the candidate's graph names),
    with the reference's `dsp_arch` beside a soc_model."""
    template = FIX_TARGETS[setting]["qairt"]
    arch = f', dsp_arch="v{dsp_arch}"' if dsp_arch is not None else ""
    line = qairt_call(template.replace("{v}", str(value)).replace("{arch}", arch), graphs)
    if not line.startswith("HtpDeviceConfig("):
        return line
    unread = "; the reference records no dsp_arch" if "{arch}" in template and not arch else ""
    return line + DEVICE_NOTE + unread
