"""The inspect summary: one JSON-ready view of a ContextBinary, shared by inspect and diff."""

from __future__ import annotations

from dataclasses import asdict

from q9diff.binary import BLOB_INFO_FIELDS, ContextBinary
from q9diff.packing import packing_notice
from q9diff.packing import to_json as packing_json

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
        d["ops"] = [op.kind for op in cb.ops(i)]
        graphs.append(d)
    return {
        "schema": SCHEMA,
        "path": cb.path,
        "size": cb.size,
        "build_id": cb.build_id,
        "core_api_version": cb.core_api_version,
        "backend_api_version": cb.backend_api_version,
        "context_blob_version": cb.context_blob_version,
        "soc_model": cb.soc_model,
        "dsp_arch": cb.dsp_arch,
        "records": [asdict(r) for r in cb.records],
        "graphs": graphs,
        "regions": [{"name": r.name, "offset": r.offset, "size": r.size} for r in cb.regions],
        "packing": packing_json(packing_notice(cb)),  # None unless 4-bit weights are stored one per byte
    }


def unknown_bytes(cb: ContextBinary) -> int:
    return sum(r.size for r in cb.regions if r.leaf == "unknown")
