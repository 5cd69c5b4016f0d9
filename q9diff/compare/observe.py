"""What a context binary records, as the rules compare it: one observation per setting (`observe`); where a
file records none, what stands in for it (the recorded socModel where what was asked is unknown, the level
the compiler ran); and why an observation is unknown (a file that does not record it). An unknown value is
never a cause (q9diff.compare.diff says it apart)."""

from __future__ import annotations

from dataclasses import astuple
from itertools import chain
from pathlib import Path

from q9diff.compare.structure import Precision
from q9diff.read.binary import ContextBinary

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


def one(values):
    """A per-graph value as one value when all graphs agree, else the tuple."""
    vals = tuple(values)
    return vals[0] if len(set(vals)) == 1 else vals


def observe(cb: ContextBinary, computes: Precision) -> dict:
    """What `cb` records, one observation per setting the rules compare (`computes`: what it computes in,
    q9diff.compare.structure.precision, as its structure tree has it)."""
    graphs = cb.graphs
    opts = [cb.options(i) for i in range(len(graphs))]
    op_kinds = tuple(cb.op_kinds(i) for i in range(len(graphs)))  # the walk's own tuples, no copy
    return {
        "soc_model": cb.requested.soc_model,
        "dsp_arch": cb.dsp_arch,
        "vtcm_size": one(g.vtcm_size for g in graphs),
        "optimization_level": one(g.optimization_level for g in graphs),
        "num_hvx_threads": one(g.num_hvx_threads for g in graphs),
        "htp_dlbc": one(g.htp_dlbc for g in graphs),
        "weight_sharing": any(r.name.startswith("WEIGHTS/") for r in cb.records),
        **{k: one(PACKING.get(o.get(k)) for o in opts) if opts else None for k in PACKING_OPTIONS},
        "io_dtypes": tuple(sorted({t.dtype for g in graphs for t in g.inputs + g.outputs})),
        # Whether the compiler picked float (fp16) kernels: the kernel names carry it. Each distinct name
        # is tested once (a graph of thousands of ops has a few dozen kinds).
        # What it computes in: weights, activations and I/O (q9diff.compare.structure.precision).
        "precision": astuple(computes)[:2],  # weights, activations (I/O: io_dtypes)
        "num_graphs": len(graphs),
        "build_id": cb.build_id,
        # Shapes apart from names: two exports of one model may name their tensors differently.
        "io_signature": tuple(tuple(t.dims for t in g.inputs + g.outputs) for g in graphs),
        "io_names": tuple(sorted(t.name for g in graphs for t in g.inputs + g.outputs)),
        "soc_type": one(o.get("soc_type") for o in opts),
        "spill_fill_buffer_size": one(g.spill_fill_buffer_size for g in graphs),
        "const_size": one(g.const_size for g in graphs),
        "op_kinds": op_kinds,
        "other_options": tuple(
            tuple(sorted((k, v) for k, v in o.items() if k not in SETTING_OPTIONS)) for o in opts
        ),
    }


# Where an observation comes from, to say why it is unknown: binary-level or per-graph blob info.
OBSERVED_FROM = {
    "soc_model": "soc_model",
    "dsp_arch": "dsp_arch",
    "vtcm_size": "vtcm_size",
    "optimization_level": "optimization_level",
    "num_hvx_threads": "num_hvx_threads",
    "htp_dlbc": "htp_dlbc",
    "spill_fill_buffer_size": "spill_fill_buffer_size",
    "const_size": "const_size",
}


def soc_recorded(a: ContextBinary, b: ContextBinary, oa: dict, ob: dict) -> bool:
    """Where what one side asked is unknown (a QAIRT whose generic builds were not measured) but the two
    record different SoCs, compare on the recorded socModel of that side: the builds differ in the SoC the
    compiler modelled either way. Where both record the same socModel, the SoC modelled is the same and a
    known side's ask (soc_model 0, with the compiler's stand-in recorded) is no difference from it: left
    unknown. True when the observations were replaced."""
    if a.soc_model is not None and a.soc_model == b.soc_model:
        return False
    ra = oa["soc_model"] if oa["soc_model"] is not None else a.soc_model
    rb = ob["soc_model"] if ob["soc_model"] is not None else b.soc_model
    if None not in (oa["soc_model"], ob["soc_model"]) or ra is None or rb is None or ra == rb:
        return False
    oa["soc_model"], ob["soc_model"] = ra, rb
    return True


def optimization_ran(a: ContextBinary, b: ContextBinary, oa: dict, ob: dict) -> bool:
    """Where a file records no optimizationLevel (GraphInfo without graphBlobInfo, QNN 2.22-2.34), compare
    both on the level the compiler ran, the options' O: it equals the recorded level wherever that is
    set (fixtures/variants/opt_1..3, the real QNN 2.32 and 2.40 files) and is 2 where 0 means "not set".
    True when the observations were replaced."""
    if not (has_unknown(oa["optimization_level"]) or has_unknown(ob["optimization_level"])):
        return False
    ran = []
    for cb in (a, b):
        values = [cb.options(i).get("O", "") for i in range(len(cb.graphs))]
        if not values or not all(v.isdigit() for v in values):
            return False
        ran.append(one(int(v) for v in values))
    oa["optimization_level"], ob["optimization_level"] = ran
    return True


def has_unknown(v) -> bool:
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


def unknown_reason(cb: ContextBinary, getter: str) -> str | None:
    name = OBSERVED_FROM.get(getter, getter)
    asked = cb.requested
    if name == "soc_model" and cb.soc_model is not None and asked.soc_model is None and asked.evidence:
        return f"{Path(cb.path).name}: {asked.evidence[-1]}"  # recorded, but what was asked is unknown
    if name in cb.unknown:
        return f"{Path(cb.path).name}: {cb.unknown[name]}"
    for g in cb.graphs:
        reasons = dict(g.unknown)
        if name in reasons:
            return f"{Path(cb.path).name}: {reasons[name]}"
    return f"{Path(cb.path).name}: {getter} not recorded"


def jsonable(v):
    if isinstance(v, tuple):
        return [jsonable(x) for x in v]
    return v
