"""The QDQ model itself on ONNX Runtime's CPU EP, beside the HTP build: where a CPU debugger (ONNX Runtime's
`qdq_loss_debug`, any tool that runs the QDQ model) would see a node's own error the device does not add,
and why when the model's encodings say (q9diff.layers.encodings).

The CPU computes every QuantizeLinear and DequantizeLinear as written; the HTP build keeps one encoding per
tensor. Where the two disagree, a CPU run diverges and the device does not: the fault, if it is one, is in
the model the CPU tools read, not in what the device computes.
"""

from __future__ import annotations

import math

import numpy as np

from q9diff.layers import figures as fig
from q9diff.layers.graph import LayersError, ModelGraph
from q9diff.layers.local import local_values
from q9diff.layers.result import CpuOnly, Finding
from q9diff.layers.sides import CpuSide

RUNNER = "onnxruntime CPU, the QDQ model as written"
SHOWN = 5  # CPU-only divergences listed


def cpu_only(
    cand: ModelGraph,
    ref: ModelGraph,
    measured: dict[str, fig.Figures | None],
    feeds: dict[str, np.ndarray],
    rule: fig.Rule,
    found: list[Finding],
) -> tuple[tuple[CpuOnly, ...], str]:
    """The tensors of `measured` (the HTP build's figures, by source name, in graph order) that diverge on
    the CPU and not on the HTP; with why the CPU could not run ('' when it ran)."""
    if not cand.quantized:
        return (), ""
    sources = cand.by_name()
    names = [t for t in measured if sources[t].op != "input" and sources[t].tap is not None]
    try:
        got = CpuSide(cand).run(names, feeds)
    except LayersError as exc:
        return (), str(exc)
    values = {t: got[t] for t in names if t in got}  # CpuSide keys a QDQ model's values by source name
    local, problem = local_values(ref, list(values), values, feeds)
    why = {f.tensor: f.text for f in found if f.kind == "qdq_mismatch"}
    out = []
    for t in values:
        htp = measured[t]
        if t not in local or htp is None or fig.judged(htp) is None:
            continue
        own = fig.local_sqnr(values[t], local[t][0], sources[t].scale)
        if own is None or math.isnan(own):
            continue
        allowance = rule.allowance(htp)
        if own < allowance <= fig.judged(htp):
            out.append(CpuOnly(t, own, fig.judged(htp), why.get(t, "")))
    return tuple(out[:SHOWN]), problem
