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


# Where a build's precision is chosen, per form: not by a compile setting (q9diff.settings: no HTP compile
# option quantizes; only fp16 maps, to fp16_relaxed_precision) but when the model is quantized or exported.
# {w}/{a}: the reference's weight and activation bits. Sources: onnxruntime.quantization's QNN config and
# ExecuTorch's QnnQuantizer (scripts/fixture_models.py and scripts/make_pte_fixtures.py build the fixtures
# with them), the QNN converter's calibration input list, AI Hub's compile option --quantize_full_type.
QUANTIZED = {
    "qairt": "quantize the model when it is converted (calibration data, {w}-bit weights, {a}-bit"
    " activations), then compile it",
    "ext": "no key: the extension JSON compiles the model it is given (fp16_relaxed_precision only runs a"
    " float model in fp16)",
    "ort": "a QDQ model: onnxruntime.quantization get_qnn_qdq_config(model, data,"
    " weight_type=QuantType.QUInt{w}, activation_type=QuantType.QUInt{a}), then quantize(...)",
    "qnn-cli": "qnn-onnx-converter --input_list (calibration data) with {w}-bit weights and {a}-bit"
    " activations, before the generator",
    "executorch": "QnnQuantizer with QuantDtype.use_{a}a{w}w, before to_edge_transform_and_lower_to_qnn",
}
EXECUTORCH_DTYPES = {(8, 8), (8, 16), (4, 16), (16, 16)}  # (w, a) of executorch 1.5.1's QuantDtype.use_*
_LABEL = re.compile(r"w(?P<w>\d+)a(?P<a>\d+)")


def precision_fix(causes: list) -> dict | None:
    """Where the reference's precision is chosen, where a root cause is a precision (`quantization fp16 →
    w8a16`): {"change", "lead" (the sentence), "lines" (form -> where), "ai_hub"}; None where none
    differs. A quantized model is made before any compile setting applies, so no fix line can make it."""
    from q9diff.settings import BY_RECIPE  # start-up: settings

    said = [c if isinstance(c, dict) else vars(c) for c in causes]  # the JSON's causes, or diff.Cause
    c = next((c for c in said if c.get("role") == "root" and c.get("name") == "quantization"), None)
    if c is None or not isinstance(c.get("b"), str) or not (_LABEL.fullmatch(c["b"]) or c["b"] == "fp16"):
        return None
    lead = "the precision is chosen when the model is quantized or exported, not by a compile setting"
    m = _LABEL.fullmatch(c["b"])
    if m:
        w, a = int(m["w"]), int(m["a"])
        found = {f: line.format(w=w, a=a) for f, line in QUANTIZED.items()}
        if (w, a) not in EXECUTORCH_DTYPES:
            found["executorch"] = f"QnnQuantizer: no QuantDtype has {w}-bit weights and {a}-bit activations"
        hub = f"--quantize_full_type {c['b']}"
    else:  # the float model, unquantized, compiled in fp16: the one precision a compile setting names
        s = BY_RECIPE["precision"]
        float_model = "the float model, no quantization step, compiled with "
        found = {
            "qairt": float_model + f"{s.qairt_class}(name=..., {s.qairt_kwarg}=1)",
            "ext": float_model + f"{s.ext_path} = 1",
            "ort": float_model + f"{s.ort_option}=1",
            "qnn-cli": float_model + f"the extension JSON's {s.ext_path} = 1",
            "executorch": float_model + "generate_htp_compiler_spec(use_fp16=True)",
        }
        hub = None
    return {"change": f"{c['a']} → {c['b']}", "lead": lead, "lines": found, "ai_hub": hub}
