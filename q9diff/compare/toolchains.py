"""The fix of each root cause, in each toolchain's own form: the qairt Python API, the backend extension JSON,
ONNX Runtime's QNN EP, qnn-context-binary-generator, ExecuTorch. `suggestions` makes a suggestion per root
cause with its line for every form (`targets`, from the rows of q9diff.compare.rules), `merged_suggestions`
one per change over a set's parts; here too are the forms, their labels and one suggestion's lines in a
form, for the presenters and for doctor's fixes alike. A per-graph qairt setting loops over `graphs`, a
tuple said once.
"""

from __future__ import annotations

import json
import re

from q9diff.compare.cause import Cause
from q9diff.compare.observe import has_unknown
from q9diff.compare.rules import FIX_TARGETS, qairt_fix
from q9diff.read.binary import ContextBinary
from q9diff.settings import BY_CAUSE

# (form, its label): the order the forms are listed in when all are shown
FORMS = (
    ("qairt", "qairt"),
    ("ext", "htp_backend_ext_config.json"),
    ("ort", "ONNX Runtime QNN EP"),
    ("qnn-cli", "qnn-context-binary-generator (--config_file's extension JSON)"),
    ("executorch", "ExecuTorch"),
)
LABELS = dict(FORMS)
_LOOP = re.compile(r"^\[(?P<call>.*) for n in \((?P<names>.*)\)\]$")


def lines(s: dict, form: str) -> list[str]:
    """One suggestion in one toolchain form (its lines, [] where the form has no such setting). A qairt
    loop over graph names becomes a loop over `graphs` (see graphs_line)."""
    t = s["targets"]
    if form == "qairt":
        call = t["qairt"].split("  # ")[0]
        m = _LOOP.match(call)
        return [f"[{m['call']} for n in graphs]" if m else call]
    if form == "ext":
        return [f"{k} = {json.dumps(v)}" for k, v in t["htp_backend_ext_config"].items()]
    if form == "ort":
        return [f"{k}={v}" for k, v in (t.get("ort_qnn") or {}).items()]
    if form == "qnn-cli":
        return [t["qnn_cli"].removeprefix("--config_file wrapper -> backend extension JSON ")]
    if form == "executorch":
        return [t["executorch"]] if t.get("executorch") else []
    raise ValueError(form)


def graphs_line(suggestions: list[dict]) -> str | None:
    """`graphs = ("prompt_ar32_cl128_1_of_2", ...)`: the graph names the qairt loops name, once; None when
    no qairt line loops."""
    for s in suggestions:
        m = _LOOP.match(s["targets"]["qairt"].split("  # ")[0])
        if m:
            return f"graphs = ({m['names']}{',' if m['names'].count(',') == 0 else ''})"
    return None


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
    from q9diff.read.tables import EXECUTORCH_CHIPSETS

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
