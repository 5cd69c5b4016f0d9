"""A graph DLC beside a context binary compiled from it: what the compile added, where the DLC's graph went.

A graph DLC is target-independent (FORMAT_FACTS "Which option changes what": soc_model, htp_arch, VTCM and
the optimization level leave no trace in it), so everything the binary records of its target was added by the
compile: the SoC, the arch, VTCM, the optimization level, the QAIRT build. The graphs pair by name (one each:
by position). Their inputs and outputs pair by name, and each one's data type, scale and offset is compared:
the compiler keeps the DLC's I/O encodings or it does not. The DLC's ops (QNN ops) become HTP kernels; they
are counted on both sides, not mapped one to one (the binary keeps no link from a kernel to its QNN op).
Written as q9diff.dlcdiff/1 with `compiled` true.
"""

from __future__ import annotations

from q9diff.compare.dlc import SCHEMA_DIFF
from q9diff.read.dlc import Dlc, DlcGraph
from q9diff.read.tables import DATATYPE_NAMES, soc_name


def compiled(dlc: Dlc, cb, cb_path: str) -> dict:
    """What compiling `dlc` into the context binary `cb` added and changed."""
    causes = [_cause("target", _target(cb))]
    if dlc.converter_version and cb.build_id and dlc.converter_version not in cb.build_id:
        causes.append(
            _cause("build_id", f"converted by QAIRT {dlc.converter_version}, compiled by {cb.build_id}")
        )
    names = [g.name for g in cb.graphs]
    for i, g in enumerate(dlc.graphs):
        j = names.index(g.name) if g.name in names else i if len(dlc.graphs) == len(names) == 1 else None
        if j is None:
            causes.append(
                _cause("graphs", f"graph {g.name} is not in the binary (it holds {', '.join(names)})")
            )
            continue
        causes += _graph(g, cb, j)
    for name in names:
        if name not in {g.name for g in dlc.graphs} and len(names) > 1:
            causes.append(_cause("graphs", f"the binary's graph {name} is not in the DLC"))
    return {
        "schema": SCHEMA_DIFF,
        "a": {"path": dlc.path, "size": dlc.size, "kind": dlc.kind},
        "b": {"path": cb_path, "size": cb.size, "kind": "context binary"},
        "identical": False,
        "only_timestamps": False,
        "compiled": True,
        "causes": causes,
        "records": [],
    }


def _cause(name: str, detail: str, **more) -> dict:
    return {"cause": name, "detail": detail} | more


def _target(cb) -> str:
    graphs = cb.graphs
    vtcm = sorted({g.vtcm_size for g in graphs if g.vtcm_size is not None})
    level = sorted({g.optimization_level for g in graphs if g.optimization_level is not None})
    said = [
        f"soc_model {cb.soc_model} ({soc_name(cb.soc_model)})",
        f"dsp_arch v{cb.dsp_arch}" if cb.dsp_arch else "dsp_arch not recorded",
        "vtcm_size " + (", ".join(f"{v >> 20} MiB" for v in vtcm) or "not recorded"),
        "optimization_level " + (", ".join(str(x) for x in level) or "not recorded") + " (0: not set)",
    ]
    return "the compile added " + ", ".join(said) + " (a graph DLC records no target)"


def _graph(g: DlcGraph, cb, j: int) -> list[dict]:
    out = []
    cg = cb.graphs[j]
    kernels = len(cb.ops(j))
    counts = ", ".join(f"{n} {t}" for t, n in sorted(_types(g).items()))
    out.append(
        _cause("ops", f"graph {g.name}: {len(g.ops)} QNN ops ({counts}) → {kernels} HTP ops in the binary")
    )
    theirs = {t.name: t for t in (*cg.inputs, *cg.outputs)}
    io = [x for x in g.tensors if x.type in (0, 1)]
    before = len(out)
    for t in io:
        c = theirs.get(t.name)
        if c is None:
            role = "input" if t.type == 0 else "output"
            out.append(_cause("io_encoding", f"{t.name}: a graph {role} the binary does not name"))
            continue
        ours = (DATATYPE_NAMES.get(t.data_type, f"{t.data_type:#x}"),) + _scale_offset(t)
        held = (c.dtype, c.scale, c.offset)
        if ours != held:
            out.append(
                _cause("io_encoding", f"{t.name}: {_said(ours)} in the DLC → {_said(held)} in the binary")
            )
    if len(out) == before:
        out.append(
            _cause(
                "io_encoding", f"all {len(io)} graph inputs and outputs keep the DLC's data type and encoding"
            )
        )
    return out


def _types(g: DlcGraph) -> dict[str, int]:
    out: dict[str, int] = {}
    for op in g.ops:
        out[op.type] = out.get(op.type, 0) + 1
    return out


def _scale_offset(t) -> tuple:
    e = t.encoding
    return (None, None) if e is None or e.axis is not None else (e.scale, e.offset)


def _said(v: tuple) -> str:
    dtype, scale, offset = v
    return dtype if scale is None else f"{dtype} scale {scale:.6g} offset {offset}"
