"""Every compile setting q9diff knows, one row each, with every name it has in every place: the cause a diff
reports, its unit, the recipe field, the backend extension JSON key and section, the qairt config class and
keyword, the ONNX Runtime QNN EP option, and how the compiler's options string names it. The tables other
modules used to keep (the fix targets, the recipe fields, the qairt and ORT option maps) are views of these
rows, derived below; a new setting is one row.

Sources: Qualcomm's backend extension schema inside libQnnHtpNetRunExtensions.so (QAIRT 2.51: `devices[]`
soc_model/soc_id/dsp_arch, `graphs[]` vtcm_mb/O/hvx_threads/dlbc/weights_packing/finalize_config,
`context.weight_sharing_enabled`), qairt-dev's Htp*Config classes (which serialise each keyword to that key),
ONNX Runtime's QNN EP provider options (soc_model, htp_arch, vtcm_mb,
htp_graph_finalization_optimization_mode, htp_performance_mode, enable_htp_fp16_precision).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# PerfProfile values of qairt.api.configs.common (qairt-dev 0.13), as written in the backend extension JSON.
PERF_PROFILES = (
    "low_balanced", "balanced", "default", "high_performance", "sustained_high_performance", "burst",
    "extreme_power_saver", "low_power_saver", "power_saver", "high_power_saver", "system_settings",
    "no_user_input", "custom",
)  # fmt: skip


def _int_in(name: str, allowed: range) -> Callable[[Any], int]:
    def convert(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v not in allowed:
            last = allowed.stop - 1
            raise ValueError(
                f"{name} {v!r} is not accepted: it must be an integer in {allowed.start}..{last}"
            )
        return v

    return convert


def _dsp_arch(v: Any) -> str:
    m = re.fullmatch(r"v?(\d{2})", str(v).strip().lower())
    if not m:
        raise ValueError(f"dsp_arch {v!r} is not accepted: write the Hexagon arch as 'v73', 'v75', ...")
    return f"v{m.group(1)}"


def _perf_profile(v: Any) -> str:
    if str(v).lower() not in PERF_PROFILES:
        raise ValueError(f"perf_profile {v!r} is not accepted: choose one of {', '.join(PERF_PROFILES)}")
    return str(v).lower()


def _precision(v: Any) -> int:
    if str(v).lower() != "fp16":
        raise ValueError(
            f"precision {v!r} has no HTP compile option: quantized precisions come from the model "
            "(QDQ nodes or an encodings file); only 'fp16' maps, to fp16_relaxed_precision=1"
        )
    return 1


def _bool(name: str) -> Callable[[Any], bool]:
    def convert(v: Any) -> bool:
        if not isinstance(v, bool):
            raise ValueError(f"{name} {v!r} is not accepted: it must be true or false")
        return v

    return convert


def _ort_only(name: str) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        raise ValueError(
            f"{name} {v!r} is not accepted here: q9diff passes compiler options by key only through the "
            "ort-qnn backend (its compile child checks the binary for them)"
        )

    return convert


@dataclass(frozen=True)
class Setting:
    """One compile setting and its name in every place q9diff reads or writes it."""

    recipe: str  # the field of a recipe's settings (q9diff.recipes.recipe.Settings)
    cause: str | None  # the root cause a diff names, when a binary records the setting
    to_recipe: Callable[[Any], Any]  # a suggested value (in `unit`) as the recipe field holds it
    section: str  # "device", "graph", "core" or "context": where qairt and the extension JSON keep it
    qairt_class: str
    qairt_kwarg: str
    ext_key: str  # the backend extension JSON key (qairt serialises the keyword to exactly this key)
    check: Callable[[Any], Any]  # the recipe value as the SDKs take it, or ValueError naming it
    unit: str = ""  # of the suggested value: "MiB" for VTCM (vtcm_mb 8 records 8388608 bytes)
    qairt_value: str = "{v}"  # how the fix line writes a value, e.g. '"v{v}"' for an arch
    ort_option: str | None = None  # ONNX Runtime QNN EP provider option; None: the EP has none
    ort_convert: Callable[[Any], str] = str
    ort_note: str | None = None  # where ONNX Runtime takes it when not as a provider option
    ort_hook: bool = False  # q9diff's ort-qnn backend passes it to the compiler through graphCreate
    # The Graph field a binary records it in, and bytes per unit of the extension value, where that record
    # is what the compiler used (VTCM, O). hvx_threads is not one: every QAIRT 2.51 fixture records 0 HVX
    # threads beside options hvx_threads=4.
    recorded: str | None = None
    per_unit: int = 1
    # How an ExecuTorch user sets it (executorch 1.5.1's Qualcomm backend: generate_htp_compiler_spec and
    # generate_qnn_executorch_compiler_spec); None where its compile spec has no such field (VTCM and
    # dsp_arch come from its SoC table, the optimization level is not in the spec).
    executorch: str | None = None

    @property
    def ext_path(self) -> str:
        """Where the fix line points in an htp_backend_ext_config.json."""
        return {
            "device": f"devices[0].{self.ext_key}",
            "graph": f"graphs[0].{self.ext_key}",
            "core": f"devices[0].cores[0].{self.ext_key}",
            "context": f"context.{self.ext_key}",
        }[self.section]


_DEVICE, _GRAPH = ("device", "HtpDeviceConfig"), ("graph", "HtpGraphConfig")

SETTINGS: tuple[Setting, ...] = (
    Setting("soc_model", "soc_model", int, *_DEVICE, "soc_model", "soc_model",
            _int_in("soc_model", range(1 << 16)), ort_option="soc_model",
            executorch="generate_qnn_executorch_compiler_spec(soc_model=QcomChipset.{chipset},"
                       " backend_options=backend_options)"),
    Setting("dsp_arch", "dsp_arch", lambda v: f"v{v}", *_DEVICE, "dsp_arch", "dsp_arch", _dsp_arch,
            qairt_value='"v{v}"', ort_option="htp_arch", ort_convert=lambda v: str(v).lower().lstrip("v")),
    Setting("vtcm_mb", "vtcm_size", int, *_GRAPH, "vtcm_size_in_mb", "vtcm_mb",
            _int_in("vtcm_mb", range(1024)), unit="MiB", ort_option="vtcm_mb",
            recorded="vtcm_size", per_unit=2**20),
    Setting("optimization_level", "optimization_level", int, *_GRAPH, "optimization_type", "O",
            _int_in("optimization_level", range(1, 4)),
            ort_option="htp_graph_finalization_optimization_mode", recorded="optimization_level"),
    Setting("hvx_threads", "hvx_threads", int, *_GRAPH, "hvx_threads", "hvx_threads",
            _int_in("hvx_threads", range(64))),
    Setting("dlbc", "dlbc", int, *_GRAPH, "dlbc", "dlbc", _int_in("dlbc", range(2)),
            executorch="generate_htp_compiler_spec(use_fp16=..., use_dlbc={bool})"),
    Setting("weights_packing", "weights_packing", bool, *_GRAPH, "weights_packing", "weights_packing",
            _bool("weights_packing"), ort_hook=True),
    Setting("finalize_options", None, dict, *_GRAPH, "finalize_config", "finalize_config",
            _ort_only("finalize_options"), ort_hook=True),
    Setting("precision", None, str, *_GRAPH, "fp16_relaxed_precision", "fp16_relaxed_precision", _precision,
            ort_option="enable_htp_fp16_precision", ort_convert=lambda v: {"fp16": "1"}[str(v).lower()]),
    Setting("perf_profile", None, str, "core", "HtpDeviceCoreConfig", "perf_profile", "perf_profile",
            _perf_profile, ort_option="htp_performance_mode", ort_convert=lambda v: str(v).lower()),
    Setting("weight_sharing", "weight_sharing", bool, "context", "HtpContextConfig", "weight_sharing_enabled",
            "weight_sharing_enabled", _bool("weight_sharing"),
            ort_note="ep.share_ep_contexts (session option)",
            executorch="generate_htp_compiler_spec(use_fp16=..., use_weight_sharing={bool})"),
)  # fmt: skip

BY_RECIPE: dict[str, Setting] = {s.recipe: s for s in SETTINGS}
BY_CAUSE: dict[str, Setting] = {s.cause: s for s in SETTINGS if s.cause}


def fix_targets() -> dict[str, dict[str, str]]:
    """Where each root-cause setting is set, as the fix lines print it: the qairt call (`{v}` is the
    reference's value), the extension JSON path, and the ONNX Runtime option where it has one."""
    out = {}
    for s in BY_CAUSE.values():
        name = "name={name}, " if s.qairt_class == "HtpGraphConfig" else ""  # its required field
        arch = "{arch}" if s.cause == "soc_model" else ""  # HtpDeviceConfig's other target field
        row = {
            "qairt": f"{s.qairt_class}({name}{s.qairt_kwarg}={s.qairt_value}{arch})",
            "htp_backend_ext_config": s.ext_path,
        }
        if s.ort_option or s.ort_note:
            row["ort_qnn"] = s.ort_option or s.ort_note
        if s.executorch:
            row["executorch"] = s.executorch
        out[s.cause] = row
    return out


def recipe_fields() -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """cause -> (recipe field, conversion of the suggested value): how --apply writes a recipe."""
    return {s.cause: (s.recipe, s.to_recipe) for s in BY_CAUSE.values()}


def ep_options() -> dict[str, tuple[str, Callable[[Any], str]]]:
    """recipe field -> (ONNX Runtime QNN EP provider option, conversion)."""
    return {s.recipe: (s.ort_option, s.ort_convert) for s in SETTINGS if s.ort_option}


def not_in_ort() -> tuple[str, ...]:
    """Recipe fields the ort-qnn backend cannot give the compiler (no EP option, not through its hook)."""
    return tuple(s.recipe for s in SETTINGS if not s.ort_option and not s.ort_hook and s.section != "context")


def recorded_graph_settings() -> tuple[Setting, ...]:
    """Graph settings an extension file sets and a binary records: doctor compares the two places."""
    return tuple(s for s in SETTINGS if s.section == "graph" and s.recorded)
