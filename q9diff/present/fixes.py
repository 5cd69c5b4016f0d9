"""A fix as the user pastes it: each setting's line in the toolchain they build with (the qairt Python API,
the backend extension JSON, ONNX Runtime's QNN EP, qnn-context-binary-generator, ExecuTorch), short enough
to read at 80 columns: a per-graph qairt setting loops over `graphs`, a tuple said once below the lines.

Every presenter draws a fix from these rows (terminal, HTML, Markdown): one home, one wording. Which
toolchain is the user's is said by the diff (`toolchain` in its JSON: from the candidate's own files, or
--toolchain); the other forms stay behind -v (the terminal) or below it (the reports).
"""

from __future__ import annotations

import json
import re

# (form, its label): the order the forms are listed in when all are shown
FORMS = (
    ("qairt", "qairt"),
    ("ext", "htp_backend_ext_config"),
    ("ort", "ONNX Runtime QNN EP"),
    ("qnn-cli", "qnn-context-binary-generator"),
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


def note(s: dict, form: str) -> str | None:
    """What a line needs said beside it (the qairt device config's soc_details caveat)."""
    if form == "qairt" and "  # " in s["targets"]["qairt"]:
        return s["targets"]["qairt"].split("  # ", 1)[1]
    return None


def lead_line(s: dict, form: str | None) -> str | None:
    """The ExecuTorch line a fix leads with when the candidate is a .pte (`form` "executorch"), said also
    where its compile spec has no such argument; None for another form, whose lines are shown as ever."""
    if form != "executorch":
        return None
    found = lines(s, "executorch")
    return found[0] if found else "no compile-spec argument of executorch 1.5.1 sets it"


def chosen(data: dict, asked: str | None = None) -> str:
    """The form to lead with: the one asked for (--toolchain), else the diff's `toolchain`, else qairt."""
    if asked and asked in LABELS:
        return asked
    picked = (data.get("toolchain") or {}).get("form")
    return picked if picked in LABELS else "qairt"
