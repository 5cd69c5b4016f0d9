"""Compare the parser's view with official metadata: libQnnSystem, or a qnn-context-binary-utility JSON."""

from __future__ import annotations

import json
from pathlib import Path

from q9diff.binary import ContextBinary
from q9diff.summary import BLOB_INFO_FIELDS

TOP_FIELDS = (
    "build_id",
    "core_api_version",
    "backend_api_version",
    "context_blob_version",
    "soc_model",
    "dsp_arch",
)
TENSOR_FIELDS = ("name", "id", "dtype", "dims", "scale", "offset", "tensor_type")


def disagreements(cb: ContextBinary, oracle: dict) -> list[str]:
    """Every field where the parser and the oracle's to_dict() differ, as 'path: parser != oracle'."""
    out = []

    def check(path: str, mine, theirs) -> None:
        if isinstance(theirs, list):
            theirs = tuple(theirs)
        if mine != theirs:
            out.append(f"{path}: parser {mine!r} != oracle {theirs!r}")

    for f in TOP_FIELDS:
        check(f, getattr(cb, f), oracle.get(f))
    check("context_blob_size", cb.blob_size, oracle.get("context_blob_size"))
    check("graphs", len(cb.graphs), len(oracle.get("graphs", [])))
    for g, og in zip(cb.graphs, oracle.get("graphs", [])):
        check(f"{g.name}.name", g.name, og["name"])
        for f in BLOB_INFO_FIELDS:
            check(f"{g.name}.{f}", getattr(g, f), og.get(f))
        for kind in ("inputs", "outputs"):
            mine, theirs = getattr(g, kind), og.get(kind, [])
            check(f"{g.name}.{kind}", len(mine), len(theirs))
            for t, ot in zip(mine, theirs):
                for f in TENSOR_FIELDS:
                    check(f"{g.name}.{kind}.{t.name}.{f}", getattr(t, f), ot.get(f))
    return out


def compare_with_oracle(cb: ContextBinary) -> list[str]:
    from q9diff.oracle import read_binary_info_isolated, to_dict

    return disagreements(cb, to_dict(read_binary_info_isolated(cb.path)))


def compare_with_utility_json(cb: ContextBinary, meta: Path) -> list[str]:
    """qnn-context-binary-utility's JSON: info.{buildId, socModel, graphs[].info.graphName ...}."""
    data = json.loads(Path(meta).read_text())
    info = data.get("info", data)
    out = []
    pairs = [("build_id", "buildId"), ("soc_model", "socModel"), ("dsp_arch", "dspArch")]
    for mine, theirs in pairs:
        if theirs in info and info[theirs] != getattr(cb, mine):
            out.append(f"{mine}: parser {getattr(cb, mine)!r} != meta {info[theirs]!r}")
    names = [g.get("info", g).get("graphName") for g in info.get("graphs", [])]
    if names and names != [g.name for g in cb.graphs]:
        out.append(f"graphs: parser {[g.name for g in cb.graphs]} != meta {names}")
    return out
