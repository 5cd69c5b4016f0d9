"""A fix in each toolchain's own form: the qairt Python API, the backend extension JSON, ONNX Runtime's QNN
EP, qnn-context-binary-generator, ExecuTorch. A suggestion carries its line for every form (`targets`, made
by q9diff.compare.suggestions); here are the forms, their labels and one suggestion's lines in a form, for
the presenters and for doctor's fixes alike. A per-graph qairt setting loops over `graphs`, a tuple said
once. `fixing` says which form a diff's or a target's fix leads with, as the candidate's own files say.
"""

from __future__ import annotations

import json
import re
from shlex import quote
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the presenters load these forms without the readers
    from q9diff.inputs import Input

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


def fixing(candidate: Input, suggest: str) -> dict:
    """Which toolchain the fix leads with (the candidate's own files say, Input.toolchain), and the command
    that makes it: `suggest --apply` the config found, where one is."""
    config = candidate.fix_config
    if config is None:
        return {"toolchain": candidate.toolchain}
    return {"toolchain": candidate.toolchain, "next": f"{suggest} --apply {quote(str(config))}"}


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
