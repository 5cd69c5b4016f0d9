"""Two DLCs compared, and one summarised, as `inspect` and `diff` report them.

A graph DLC pair is compared by what it holds, never by generated names: ops are matched by structure (the
longest common sequence of op signatures: type, scalar attributes, output shapes), tensors through the
ops that produce or read them, weights by the static tensor a matched op reads. Each category that
differs is a root cause: the QAIRT converter version, ops added, removed or changed, quantization
(encodings per tensor), weights (bytes per tensor), the graph's name (it holds a hash of the source model's
path). Where every record but the metadata is byte-identical and the metadata differs only in its
timestamps, that is all that is said.

A context DLC pair is compared record by record: SoCs (caches) added or removed, each cache's soc_model,
dsp_arch and VTCM as the metadata lists them, the shared weights; each cache pair is then a context-binary
pair the usual diff reads (q9diff.read.openers lists them by cache name).

Every change reads candidate → reference, as the rest of q9diff does (what the candidate would become);
"added" is what the reference holds and the candidate lacks; pairs of values are [candidate, reference].
"""

from __future__ import annotations

import json
import re
import struct
from difflib import SequenceMatcher

import numpy as np

from q9diff.compare.cause import Cause
from q9diff.formats import dlc as D
from q9diff.read.dlc import Dlc, DlcGraph, DlcOp, DlcTensor, TensorAttribute
from q9diff.read.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES

SCHEMA_INSPECT = "q9diff.inspect-dlc/1"
SCHEMA_DIFF = "q9diff.dlcdiff/1"
# a "YYYY-MM-DD HH:MM:SS UTC" value, as the metadata writes every timestamp
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")


# -- inspect --------------------------------------------------------------------------------------


def summary(dlc: Dlc) -> dict:
    """What `q9diff inspect --json` prints for a DLC (q9diff.inspect-dlc/1)."""
    regions = dlc.regions
    unknown = sum(r.size for r in regions if r.kind == "unknown")
    return {
        "schema": SCHEMA_INSPECT,
        "path": dlc.path,
        "size": dlc.size,
        "kind": dlc.kind,
        "converter_version": dlc.converter_version,
        "records": [{"name": e.name, "offset": e.offset, "size": e.size} for e in dlc.entries],
        "graphs": [_graph_json(g) for g in dlc.graphs],
        "caches": [_cache_json(c) for c in dlc.caches],
        "regions": [{"name": r.name, "offset": r.offset, "size": r.size, "kind": r.kind} for r in regions],
        "unknown_bytes": unknown,
    }


def _graph_json(g: DlcGraph) -> dict:
    by_type: dict[str, int] = {}
    for op in g.ops:
        by_type[op.type] = by_type.get(op.type, 0) + 1
    return {
        "name": g.name,
        "ops_by_type": dict(sorted(by_type.items())),
        "ops": [
            {"name": o.name, "type": o.type, "inputs": list(o.inputs), "outputs": list(o.outputs)}
            for o in g.ops
        ],
        "tensors": [_tensor_json(t) for t in g.tensors],
        "weights": [{"name": w.name, "offset": w.offset, "size": w.size} for w in g.weights],
    }


def _tensor_json(t: DlcTensor) -> dict:
    return {
        "name": t.name,
        "type": TENSOR_TYPE_NAMES.get(t.type, str(t.type)),
        "dims": list(t.dims),
        "data_type": _dtype(t.data_type),
        "encoding": None if t.encoding is None else t.encoding.as_json(),
    }


def _dtype(v: int) -> str:
    return DATATYPE_NAMES.get(v, f"{v:#x}")


def _cache_json(c) -> dict:
    info = c.info
    graphs = info.get("graphs") or []
    blob = [g.get("graphBlobInfo") or {} for g in graphs if isinstance(g, dict)]
    meta = info.get("contextMetadata") or {}
    return {
        "name": c.name,
        "offset": c.offset,
        "size": c.size,
        "soc_model": info.get("socModel"),
        "dsp_arch": meta.get("dspArch") if isinstance(meta, dict) else None,
        "vtcm_size_mb": [b.get("vtcmSize") for b in blob],
        "build_id": info.get("buildId"),
        "graphs": [g.get("graphName") for g in graphs if isinstance(g, dict)],
    }


# -- diff -----------------------------------------------------------------------------------------


def diff(a: Dlc, b: Dlc) -> dict:
    """Why DLC `a` (the candidate) differs from `b` (the reference): q9diff.dlcdiff/1."""
    causes: list[dict] = []
    records = _records(a, b)
    if a.converter_version != b.converter_version and None not in (a.converter_version, b.converter_version):
        causes.append(_cause("converter_version", f"{a.converter_version} → {b.converter_version}"))
    if a.kind != b.kind:
        causes.append(_cause("kind", f"a {a.kind} DLC → a {b.kind} DLC"))
    elif a.kind == "graph":
        causes += _graphs(a, b)
    else:
        causes += _caches(a, b)
    meta = _metadata(a, b)
    if meta == "content" and not causes:  # no cause above explains it
        causes.append(_cause("metadata", "the metadata JSON differs beyond its timestamps"))
    apart = [r["name"] for r in records if not r["same"] and not r["name"].startswith(D.METADATA_PREFIX)]
    if apart and not causes:  # bytes differ that no category above says: never "only timestamps"
        causes.append(_unsaid(a, apart))
    identical = all(r["same"] for r in records)
    only_time = not identical and not causes and meta == "timestamps"
    if only_time:
        causes.append(
            _cause("timestamps", "only the metadata's timestamps differ (rebuilt a second or more apart)")
        )
    return {
        "schema": SCHEMA_DIFF,
        "a": {"path": a.path, "size": a.size, "kind": a.kind},
        "b": {"path": b.path, "size": b.size, "kind": b.kind},
        "identical": identical,
        "only_timestamps": only_time,
        "causes": causes,
        "records": records,
    }


def _unsaid(a: Dlc, apart: list[str]) -> dict:
    """Records whose bytes differ where no category says why: a context DLC's caches (each cache's own
    diff, a context binary's, says what differs in it), or a graph DLC's records."""
    named = ", ".join(apart[:4]) + (f" and {len(apart) - 4} more" if len(apart) > 4 else "")
    if a.kind == "context":
        return _cause("caches", f"the bytes of {named} differ (each cache's own diff says why)", differ=apart)
    return _cause("records", f"the bytes of {named} differ where no category read says why", differ=apart)


def _cause(name: str, detail: str, **more) -> dict:
    return {"cause": name, "detail": detail} | more


def _records(a: Dlc, b: Dlc) -> list[dict]:
    """Each record by name: in both and byte-identical or not, or in one only."""
    out = []
    for name in sorted(set(a.by_name) | set(b.by_name)):
        ea, eb = a.by_name.get(name), b.by_name.get(name)
        same = ea is not None and eb is not None and a.data(ea) == b.data(eb)  # memcmp, no copy
        out.append(
            {"name": name, "in": "both" if ea and eb else "a" if ea else "b", "same": same}
            | {"size_a": ea.size if ea else None, "size_b": eb.size if eb else None}
        )
    return out


def _metadata(a: Dlc, b: Dlc) -> str:
    """'same', 'timestamps' (they differ only in timestamp values) or 'content'."""
    ja, jb = (a.metadata, a.history), (b.metadata, b.history)
    if ja == jb:
        return "same"
    return "timestamps" if _untimed(ja) == _untimed(jb) else "content"


def _untimed(v):
    if isinstance(v, dict):
        return {k: _untimed(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_untimed(x) for x in v]
    return "<timestamp>" if isinstance(v, str) and _TIMESTAMP.match(v) else v


# -- graph DLCs -----------------------------------------------------------------------------------


def _graphs(a: Dlc, b: Dlc) -> list[dict]:
    ga, gb = a.graphs, b.graphs
    out = []
    if len(ga) != len(gb):
        out.append(_cause("graphs", f"{len(ga)} graphs → {len(gb)}"))
    for x, y in zip(ga, gb):
        if x.name != y.name:
            out.append(
                _cause(
                    "graph_name", f"{x.name} → {y.name} (the name holds a hash of the source model's path)"
                )
            )
        out += _graph_pair(x, y, a, b)
    return out


def _signature(op: DlcOp, g: DlcGraph, dlc: Dlc) -> tuple:
    """What an op is, without the names a converter generates: its type, its attributes (a tensor
    attribute by its shape and bytes, not its generated name) and the shapes of what it writes."""
    attrs = tuple(sorted((n, _attribute(v, dlc)) for n, v in op.attributes))
    shapes = tuple(t.dims if (t := g.tensor(o)) is not None else () for o in op.outputs)
    return op.type, attrs, shapes


def _attribute(v: object, dlc: Dlc) -> object:
    """A scalar attribute as it is; a tensor attribute as its values (32-bit integers, as strides, pads
    and perms are) or, for another data type, its bytes in hex."""
    if not isinstance(v, TensorAttribute):
        return v
    d = v.data
    if d is None:
        return ("dims", v.dims)
    raw = bytes(dlc.buf[d.offset : d.offset + d.size])
    code = _INTS.get(v.data_type)
    if code is not None and len(raw) % 4 == 0:
        return struct.unpack(f"<{len(raw) // 4}{code}", raw)
    return raw.hex()


_INTS = {0x0032: "i", 0x0132: "I"}  # Qnn_DataType_t INT_32, UINT_32: struct codes


def _graph_pair(x: DlcGraph, y: DlcGraph, a: Dlc, b: Dlc) -> list[dict]:
    sx, sy = [_signature(o, x, a) for o in x.ops], [_signature(o, y, b) for o in y.ops]
    matcher = SequenceMatcher(None, sy, sx, autojunk=False)
    pairs, added, removed, changed = [], [], [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        same_types = tag == "replace" and [s[0] for s in sy[i1:i2]] == [s[0] for s in sx[j1:j2]]
        if tag == "equal" or same_types:  # same_types: the same ops with another attribute or shape
            for i, j in zip(range(i1, i2), range(j1, j2)):
                pairs.append((x.ops[j], y.ops[i]))
                if sx[j] != sy[i]:
                    changed.append(f"{_op_label(x.ops[j])}: {_changes(sx[j], sy[i])}")
            continue
        added += [_op_label(y.ops[i]) for i in range(i1, i2)]  # the reference has them, the candidate not
        removed += [_op_label(x.ops[j]) for j in range(j1, j2)]
    out = []
    if added or removed or changed:
        detail = "; ".join(
            part
            for part in (
                f"added {', '.join(added)}" if added else "",
                f"removed {', '.join(removed)}" if removed else "",
                f"changed {', '.join(changed)}" if changed else "",
            )
            if part
        )
        out.append(_cause("ops", detail, added=added, removed=removed, changed=changed))
    tensors = _tensor_pairs(pairs, x, y)
    quant = [_encoding_change(t, u) for t, u in tensors if _quantization(t) != _quantization(u)]
    if quant:
        out.append(
            _cause("quantization", f"{_count(quant, 'tensor')}: encodings or data types", tensors=quant)
        )
    weights = _weight_changes(tensors, x, y, a, b)
    if weights:
        shown = ", ".join(f"{w['tensor']} ({w['bytes_differing']} B)" for w in weights)
        out.append(_cause("weights", f"{_count(weights, 'tensor')}, bytes: {shown}", tensors=weights))
    return out


def _count(items: list, what: str) -> str:
    return f"{len(items)} {what}" + ("s" if len(items) != 1 else "")


def _op_label(op: DlcOp) -> str:
    operation = dict(op.attributes).get("operation")
    return f"{op.type}" + (f"(operation {operation})" if operation is not None else "") + f" [{op.name}]"


def _changes(cand: tuple, ref: tuple) -> str:
    """What differs between two signatures of one op type (candidate → reference): each attribute, then the
    output shapes."""
    ra, ca = dict(ref[1]), dict(cand[1])
    said = [
        f"{n} {_shown(ca.get(n))} → {_shown(ra.get(n))}"
        for n in sorted(set(ra) | set(ca))
        if ra.get(n) != ca.get(n)
    ]
    if ref[2] != cand[2]:
        said.append(f"output shapes {_shown(cand[2])} → {_shown(ref[2])}")
    return ", ".join(said)


def _shown(v: object) -> str:
    return json.dumps(v)


def _tensor_pairs(pairs, x: DlcGraph, y: DlcGraph) -> list[tuple[DlcTensor, DlcTensor]]:
    """Tensors matched through matched ops (their inputs and outputs by position), and the graph's inputs
    and outputs by position; each tensor once."""
    out, seen = [], set()

    def add(n, m):
        t, u = x.tensor(n), y.tensor(m)
        if t is not None and u is not None and n not in seen:
            seen.add(n)
            out.append((t, u))

    for kind in (0, 1):
        for t, u in zip([t for t in x.tensors if t.type == kind], [u for u in y.tensors if u.type == kind]):
            add(t.name, u.name)
    for p, q in pairs:
        for n, m in zip(p.inputs + p.outputs, q.inputs + q.outputs):
            add(n, m)
    return out


def _quantization(t: DlcTensor) -> tuple:
    return t.data_type, t.encoding


def _encoding_change(t: DlcTensor, u: DlcTensor) -> dict:
    return {
        "tensor": t.name,
        "reference_tensor": u.name,
        "data_type": [_dtype(t.data_type), _dtype(u.data_type)],
        "encoding": [
            None if t.encoding is None else t.encoding.as_json(),
            None if u.encoding is None else u.encoding.as_json(),
        ],
    }


def _weight_changes(tensors, x: DlcGraph, y: DlcGraph, a: Dlc, b: Dlc) -> list[dict]:
    wx, wy = {w.name: w for w in x.weights}, {w.name: w for w in y.weights}
    out = []
    for t, u in tensors:
        p, q = wx.get(t.name), wy.get(u.name)
        if p is None or q is None or t.data_type != u.data_type:  # a type changed: quantization says it
            continue
        bp, bq = a.buf[p.offset : p.offset + p.size], b.buf[q.offset : q.offset + q.size]
        if bp == bq:
            continue
        common = min(len(bp), len(bq))
        x, y = np.frombuffer(bp, np.uint8, common), np.frombuffer(bq, np.uint8, common)
        n = int(np.count_nonzero(x != y)) + abs(len(bp) - len(bq))
        out.append(
            {"tensor": t.name, "reference_tensor": u.name, "size": [p.size, q.size], "bytes_differing": n}
        )
    return out


# -- context DLCs ---------------------------------------------------------------------------------


def _caches(a: Dlc, b: Dlc) -> list[dict]:
    out = []
    ca, cb = _by_soc(a), _by_soc(b)
    # candidate → reference, as every diff reads: + the reference has a cache the candidate lacks
    added, removed = [k for k in cb if k not in ca], [k for k in ca if k not in cb]
    if added or removed:
        said = [f"+{cb[k]['name']} (soc_model {cb[k]['soc_model']})" for k in added]
        said += [f"-{ca[k]['name']} (soc_model {ca[k]['soc_model']})" for k in removed]
        out.append(
            _cause(
                "caches",
                "SoCs " + ", ".join(said),
                added=[cb[k]["name"] for k in added],
                removed=[ca[k]["name"] for k in removed],
            )
        )
    for k in [k for k in ca if k in cb]:
        name = ca[k]["name"] if ca[k]["name"] == cb[k]["name"] else f"{ca[k]['name']} / {cb[k]['name']}"
        for key, cause, said in _PER_CACHE:
            if ca[k][key] != cb[k][key]:
                detail = f"{said(ca[k][key])} → {said(cb[k][key])} (in {name})"
                out.append(_cause(cause, detail, cache=name))
    wa = _shared(a)
    wb = _shared(b)
    if wa != wb:
        out.append(
            _cause(
                "shared_weights",
                f"the shared weights differ ({len(wa)} → {len(wb)} records, their names follow their "
                "content): the model's weights, or their layout for another setting (measured: VTCM moves "
                "them); each cache's diff says which settings differ",
            )
        )
    return out


def soc_set(a: Dlc, b: Dlc) -> dict | None:
    """The set-level root cause of two context DLCs whose caches are for different SoCs (q9diff.setdiff/1's
    cause `soc_set`): each side's soc_models in cache order, and the provider options that build the
    reference's list where every cache's metadata names its SoC and arch (None for either side: no line).
    None where both hold caches for the same SoCs, or either is no context DLC. It stands in for the set's
    "split": a cache more or fewer is a SoC more or fewer, not a model split differently."""
    if a.kind != "context" or b.kind != "context":
        return None
    by_a, by_b = _by_soc(a), _by_soc(b)
    if set(by_a) == set(by_b):
        return None
    ca, cb = list(by_a.values()), list(by_b.values())
    said = [f"{c['name']} (soc_model {c['soc_model']}) is in the reference only" for k, c in by_b.items()
            if k not in by_a]  # fmt: skip
    said += [f"{c['name']} (soc_model {c['soc_model']}) is in the candidate only" for k, c in by_a.items()
             if k not in by_b]  # fmt: skip
    socs, archs = [c["soc_model"] for c in cb], [c["dsp_arch"] for c in cb]
    read = all(isinstance(v, int) for v in socs + archs)
    options = {"soc_model": ",".join(map(str, socs)), "htp_arch": ",".join(map(str, archs))} if read else None
    evidence = [
        *said,
        "a device whose SoC has no cache in the build has no cache to load",
        *([] if read else ["a cache's metadata does not name its SoC or arch: no option line is given"]),
    ]
    cause = Cause("soc_set", "root", [c["soc_model"] for c in ca], socs, None, tuple(evidence))
    return {**cause.to_json(), "ort_options": options}


def _by_soc(dlc: Dlc) -> dict:
    """Each cache's JSON by the SoC it is for (its soc_model; its record name where the metadata names
    none), sorted by record name: QAIRT 2.49 names the records backend.metadata<n> and 2.51
    htp.cache.<soc>.0, so caches pair across versions by SoC."""
    caches = sorted((_cache_json(c) for c in dlc.caches), key=lambda c: c["name"])
    return {(c["soc_model"] if isinstance(c["soc_model"], int) else c["name"]): c for c in caches}


def _mib(v: list) -> str:
    return ", ".join(f"{x} MiB" for x in v) or "not listed"


# What each cache's metadata says, compared cache by cache: (field, cause, how a value is said).
_PER_CACHE = (
    ("soc_model", "soc_model", str),
    ("dsp_arch", "dsp_arch", lambda v: f"v{v}"),
    ("vtcm_size_mb", "vtcm_size", _mib),
    ("build_id", "build_id", str),
)


def _shared(d: Dlc) -> list[bytes]:
    return sorted(bytes(d.data(e)) for e in d.entries if e.name.startswith(D.SHARED_WEIGHTS_PREFIX))
