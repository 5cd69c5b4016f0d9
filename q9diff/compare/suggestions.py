"""The fix of each root cause: the change that makes the candidate's build match the reference, with its line
for every toolchain (`targets`: qairt, the backend extension JSON, ONNX Runtime's QNN EP,
qnn-context-binary-generator, ExecuTorch; from the rows of q9diff.compare.rules), and over a set's parts one
suggestion per change. How each form's lines are shown is q9diff.compare.toolchains'."""

from __future__ import annotations

import json

from q9diff.compare.cause import Cause
from q9diff.compare.observe import has_unknown
from q9diff.compare.rules import FIX_TARGETS, qairt_fix
from q9diff.read.binary import ContextBinary
from q9diff.read.tables import EXECUTORCH_CHIPSETS
from q9diff.settings import BY_CAUSE


def suggestions(causes: list[Cause], cand: ContextBinary, dsp_arch: int | None) -> list[dict]:
    """For each root cause, the change that makes the candidate's build match the reference; a graph
    setting names the candidate's graphs (`graphs`), which its qairt line configures. `dsp_arch`: the
    reference's (or the --target device's), which a qairt soc_model line names beside it; None: unread."""
    out = []
    for c in causes:
        if c.role != "root" or c.name not in FIX_TARGETS or has_unknown(c.b):
            continue
        value = c.b
        if isinstance(value, int) and BY_CAUSE[c.name].per_unit > 1:  # bytes recorded, MiB configured
            value = value // BY_CAUSE[c.name].per_unit
        t = FIX_TARGETS[c.name]
        graphs = tuple(g.name for g in cand.graphs)
        targets = {"qairt": qairt_fix(c.name, value, graphs, dsp_arch)}
        ext_value = f"v{value}" if c.name == "dsp_arch" else value
        targets["htp_backend_ext_config"] = {t["htp_backend_ext_config"]: ext_value}
        if "ort_qnn" in t:
            targets["ort_qnn"] = {t["ort_qnn"]: str(value)}
        executorch = executorch_fix(t.get("executorch"), value)
        if executorch:
            targets["executorch"] = executorch
        targets["qnn_cli"] = (
            "--config_file wrapper -> backend extension JSON"
            f" {t['htp_backend_ext_config']} = {json.dumps(ext_value)}"
        )
        per_graph = "{name}" in t["qairt"]
        extra = {"unit": BY_CAUSE[c.name].unit} if BY_CAUSE[c.name].unit else {}
        extra.update({"graphs": list(graphs)} if per_graph else {})
        out.append({"setting": c.name, "value": value, **extra, "targets": targets})
    return out


def executorch_fix(template: str | None, value) -> str | None:
    """The ExecuTorch compile-spec line for `value`; None where its spec has no such field or its
    QcomChipset names no such soc_model (executorch 1.5.1: q9diff.read.tables.EXECUTORCH_CHIPSETS)."""
    if template is None:
        return None
    if "{chipset}" in template:
        chipset = EXECUTORCH_CHIPSETS.get(value) if isinstance(value, int) else None
        return None if chipset is None else template.replace("{chipset}", chipset)
    return template.replace("{bool}", "True" if value else "False")


def merged_suggestions(suggestions: list[dict]) -> list[dict]:
    """The parts' suggestions, each change once: a graph setting with the same value in several parts
    becomes one suggestion over all their graphs (one graphs entry, one qairt loop), in part order."""
    out: dict[str, dict] = {}
    for s in suggestions:
        whole = {"setting": s["setting"], "value": s["value"]} if "graphs" in s else s
        key = json.dumps(whole, sort_keys=True, default=str)
        if key not in out:
            out[key] = s
        elif "graphs" in s:
            graphs = out[key]["graphs"] + [g for g in s["graphs"] if g not in out[key]["graphs"]]
            qairt = qairt_fix(s["setting"], s["value"], tuple(graphs), None)
            out[key] = {**out[key], "graphs": graphs, "targets": {**out[key]["targets"], "qairt": qairt}}
    return list(out.values())
