"""Attribution rules as data: which observed difference is a root cause (a setting someone chose)
and which is an effect of another, and where each setting is set in a user's configuration."""

from __future__ import annotations

import json
from dataclasses import dataclass

from q9diff import settings


@dataclass(frozen=True)
class Rule:
    name: str  # canonical cause name
    role: str  # "root" or "effect"
    getter: str  # name of the observation in q9diff.compare.diff.observe()
    explained_by: tuple[
        str, ...
    ] = ()  # an effect is not reported as its own root when one of these is a root


# Settings that change the compiled graph body (schedule, tiling, constants) as a consequence: when
# none of them differs and the op list or the weights still do, the model itself differs.
ROOT_SETTINGS = (
    "soc_model",
    "dsp_arch",
    "vtcm_size",
    "optimization_level",
    "hvx_threads",
    "dlbc",
    "quantization",
    "graph_set",
    "sdk_version",
    "weight_sharing",
    "weights_packing",
    "native_hmx_a16w4",
)

RULES: tuple[Rule, ...] = (
    Rule("soc_model", "root", "soc_model"),
    Rule("dsp_arch", "root", "dsp_arch"),
    Rule("vtcm_size", "root", "vtcm_size"),
    Rule("optimization_level", "root", "optimization_level"),
    Rule("hvx_threads", "root", "num_hvx_threads"),
    Rule("dlbc", "root", "htp_dlbc"),
    Rule("weight_sharing", "root", "weight_sharing", explained_by=("graph_set",)),
    Rule("weights_packing", "root", "compress_weights"),
    # INT4 weights are stored two per byte unless the compiler option native_hmx_a16w4 is false.
    Rule("native_hmx_a16w4", "root", "native_hmx_a16w4"),
    Rule("quantization", "root", "io_dtypes"),
    # A float model on an arch without fp16 HVX (soc_model 0 alone targets v68) gets no fp16 kernels:
    # then the kernel choice is an effect of the target, not a quantization setting.
    Rule("quantization", "root", "fp16_kernels", explained_by=("soc_model", "dsp_arch")),
    Rule("compute_precision", "effect", "fp16_kernels"),
    Rule("graph_set", "root", "num_graphs"),
    Rule("sdk_version", "root", "build_id"),
    Rule("graph_structure", "root", "io_signature", explained_by=("quantization", "graph_set")),
    # Graph I/O renamed with the same shapes (e.g. LiteRT 2.32 vs 2.40 exports): what it is, no setting.
    Rule("tensor_names", "root", "io_names", explained_by=("graph_structure", "graph_set")),
    Rule("soc_type", "effect", "soc_type", explained_by=("soc_model", "dsp_arch")),
    Rule("spill_fill", "effect", "spill_fill_buffer_size"),
    Rule("const_size", "effect", "const_size"),
    Rule("schedule", "effect", "op_kinds"),
    Rule("compiler_options", "effect", "other_options"),
)

# Where each root-cause setting is set: (qairt API, htp_backend_ext_config JSON path, ORT QNN EP option).
# `{v}` is the reference's value. A view of q9diff.settings, the one row per setting. The qairt lines
# construct against qairt-dev 0.13's classes (qairt/api/common/backends/htp/config.py): HtpGraphConfig
# requires `name`, the graph's name (no default), so a graph setting's line names the graph (`{name}`,
# see qairt_fix); the soc_model line carries the reference's dsp_arch (`{arch}`).
FIX_TARGETS: dict[str, dict[str, str]] = settings.fix_targets()
# qairt-dev 0.13's CompileConfig (qairt/api/compiler/config.py) turns `soc_details` into device configs
# only when device_custom_configs is unset: a device line says so, since a soc_details beside it is dropped.
DEVICE_NOTE = "  # soc_details is ignored once device_custom_configs is set"


def qairt_call(call: str, graphs: tuple[str, ...] | None) -> str:
    """`call` (an Htp*Config call, `{name}` where HtpGraphConfig's required name goes) for `graphs`:
    one graph is named, several (or none read) become a loop over their names, one config each."""
    if graphs is None or "{name}" not in call:
        return call
    if len(graphs) == 1:
        return call.replace("{name}", json.dumps(graphs[0]))
    names = ", ".join(json.dumps(g) for g in graphs)
    return f"[{call.replace('{name}', 'n')} for n in ({names})]"


def qairt_fix(setting: str, value: object, graphs: tuple[str, ...], dsp_arch: int | None) -> str:
    """The qairt line that sets `setting` to `value` in a build of `graphs` (the candidate's graph names),
    with the reference's `dsp_arch` beside a soc_model."""
    template = FIX_TARGETS[setting]["qairt"]
    arch = f', dsp_arch="v{dsp_arch}"' if dsp_arch is not None else ""
    line = qairt_call(template.replace("{v}", str(value)).replace("{arch}", arch), graphs)
    if not line.startswith("HtpDeviceConfig("):
        return line
    unread = "; the reference records no dsp_arch" if "{arch}" in template and not arch else ""
    return line + DEVICE_NOTE + unread
