"""The inspect summary: one JSON-ready view of a ContextBinary, shared by inspect and diff."""

from __future__ import annotations

from dataclasses import asdict

from q9diff.compare.packing import packing_notice
from q9diff.compare.packing import to_json as packing_json
from q9diff.read.binary import BLOB_INFO_FIELDS, ContextBinary
from q9diff.read.tables import soc_name

SCHEMA = "q9diff.inspect/1"


def _tensor(t) -> dict:
    return {"name": t.name, "dtype": t.dtype, "dims": list(t.dims), "scale": t.scale, "offset": t.offset}


def inspect_summary(cb: ContextBinary) -> dict:
    graphs = []
    for i, g in enumerate(cb.graphs):
        d = {
            "name": g.name,
            "inputs": [_tensor(t) for t in g.inputs],
            "outputs": [_tensor(t) for t in g.outputs],
        }
        d.update({k: getattr(g, k) for k in BLOB_INFO_FIELDS})
        d["options"] = cb.options(i)
        d["options_vs_recorded"] = options_vs_recorded(cb, i)
        d["ops"] = list(cb.op_kinds(i))
        graphs.append(d)
    return {
        "schema": SCHEMA,
        "path": cb.path,
        "size": cb.size,
        "build_id": cb.build_id,
        "core_api_version": cb.core_api_version,
        "backend_api_version": cb.backend_api_version,
        "context_blob_version": cb.context_blob_version,
        # What the metadata records (0 where a v3 file omits it, as libQnnSystem reports); `target`
        # says what the build asked for and why; `unknown` lists what the file does not record.
        "soc_model": cb.soc_model,
        "dsp_arch": cb.dsp_arch,
        "target": target(cb),
        "unknown": unknown_fields(cb),
        "records": [asdict(r) for r in cb.records],
        "graphs": graphs,
        "regions": [{"name": r.name, "offset": r.offset, "size": r.size} for r in cb.regions],
        "packing": packing_json(packing_notice(cb)),  # None unless 4-bit weights are stored one per byte
    }


def target(cb: ContextBinary) -> dict:
    """One soc_model story for inspect, diff and JSON: recorded vs requested, with the evidence. What was
    requested is read with the rules measured on the compiler (q9diff.read.generic), or unknown; `rule`
    says which: metadata, measured, not measured, no version."""
    asked = cb.requested
    if cb.soc_model is None:
        evidence = [cb.unknown.get("soc_model", "soc_model not recorded")]
    elif cb.soc_model == 0:
        evidence = ["metadata socModel 0: built for no SoC"]
    else:
        evidence = [f"metadata socModel {cb.soc_model} ({soc_name(cb.soc_model)})"]
    return {
        "soc_model_recorded": cb.soc_model,
        "soc_model_requested": asked.soc_model,
        "generic_target": asked.generic,
        "rule": asked.rule,
        "evidence": evidence + list(asked.evidence),
    }


# Compiler options beside the value the file records for the same setting: (options key, recorded
# field, bytes per unit of the option). The options string is what the compiler was asked (with its
# defaults filled in); the metadata's graphBlobInfo and contextMetadata are what it recorded. They can
# disagree: LiteRT's QNN 2.40 sm8750 model says vtcm_mb=4 and hvx_threads=6 beside a recorded VTCM of
# 8 MiB and 0 HVX threads, and every QAIRT 2.51 fixture says hvx_threads=4 beside a recorded 0. Which of
# the two the compiled graph follows is not in the file, so both are shown, never one chosen.
OPTION_RECORDS = (
    ("vtcm_size", "vtcm_size", 1),
    ("vtcm_mb", "vtcm_size", 1024 * 1024),
    ("hvx_threads", "num_hvx_threads", 1),
    ("O", "optimization_level", 1),
    ("arch", "dsp_arch", 1),
    ("min_arch", "dsp_arch", 1),
)


def options_vs_recorded(cb: ContextBinary, graph_index: int) -> list[dict]:
    """Each option whose value differs from the one the file records for that setting. A negative
    option (vtcm_mb=-1) sets nothing, and a recorded optimizationLevel 0 means not set: neither differs."""
    g, opts, out = cb.graphs[graph_index], cb.options(graph_index), []
    for key, field, unit in OPTION_RECORDS:
        recorded = cb.dsp_arch if field == "dsp_arch" else getattr(g, field)
        try:
            asked = int(opts[key])
        except (KeyError, ValueError):
            continue
        if recorded is None or asked < 0 or (field == "optimization_level" and recorded == 0):
            continue
        if asked * unit != recorded:
            out.append({"option": key, "asked": opts[key], "field": field, "recorded": recorded})
    return out


def unknown_fields(cb: ContextBinary) -> dict[str, str]:
    """Every reported field the file does not record, with the reason (`graphs[NAME].FIELD` per graph)."""
    out = dict(cb.unknown)
    for g in cb.graphs:
        for k, why in g.unknown:
            out[f"graphs[{g.name}].{k}"] = why
    return out


def unknown_bytes(cb: ContextBinary) -> int:
    return sum(r.size for r in cb.regions if r.kind == "unknown")
