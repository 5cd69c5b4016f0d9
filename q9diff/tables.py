"""Domain knowledge in one place: QNN enum names, the SoC table, and where each setting lives.

Sources: Qualcomm's public QnnTypes.h (enum values), ExecuTorch/LiteRT SoC tables, AI Hub device
attributes, and our own compiles (`../shared/docs/QNN_FACTS.md`).
"""

from __future__ import annotations

from dataclasses import dataclass

DATATYPE_NAMES: dict[int, str] = {
    0x0008: "INT_8",
    0x0016: "INT_16",
    0x0032: "INT_32",
    0x0064: "INT_64",
    0x0108: "UINT_8",
    0x0116: "UINT_16",
    0x0132: "UINT_32",
    0x0164: "UINT_64",
    0x0216: "FLOAT_16",
    0x0226: "BFLOAT_16",
    0x0232: "FLOAT_32",
    0x0264: "FLOAT_64",
    0x0304: "SFIXED_POINT_4",
    0x0308: "SFIXED_POINT_8",
    0x0316: "SFIXED_POINT_16",
    0x0332: "SFIXED_POINT_32",
    0x0404: "UFIXED_POINT_4",
    0x0408: "UFIXED_POINT_8",
    0x0416: "UFIXED_POINT_16",
    0x0432: "UFIXED_POINT_32",
    0x0508: "BOOL_8",
    0x0608: "STRING",
    0x7FFFFFFF: "UNDEFINED",
}

TENSOR_TYPE_NAMES: dict[int, str] = {
    0: "APP_WRITE",
    1: "APP_READ",
    2: "APP_READWRITE",
    3: "NATIVE",
    4: "STATIC",
    5: "NULL",
    6: "UPDATEABLE_STATIC",
    7: "UPDATEABLE_NATIVE",
    8: "UPDATEABLE_APP_WRITE",
    9: "UPDATEABLE_APP_READ",
    10: "UPDATEABLE_APP_READWRITE",
    11: "OPTIONAL_APP_WRITE",
    12: "OPTIONAL_APP_READ",
    13: "OPTIONAL_APP_READWRITE",
    0x7FFFFFFF: "UNDEFINED",
}


@dataclass(frozen=True)
class Soc:
    soc_model: int
    name: str
    dsp_arch: int | None
    vtcm_mb: int | None


SOCS: dict[int, Soc] = {
    s.soc_model: s
    for s in (
        Soc(0, "unknown (generic target)", None, None),
        Soc(30, "SM8350", 68, 4),
        Soc(36, "SM8450", 69, 8),
        Soc(39, "SA8295", 68, 8),
        Soc(42, "SM8475", 69, 8),
        Soc(43, "SM8550", 73, 8),
        Soc(45, "SXR1230P", 73, 2),
        Soc(46, "SSG2115P", 73, 2),
        Soc(52, "SA8255", 73, 8),
        Soc(53, "SXR2230P", 69, 8),
        Soc(57, "SM8650", 75, 8),
        Soc(58, "SSG2125P", 73, 2),
        Soc(60, "SC8380XP", 73, 8),
        Soc(69, "SM8750", 79, 8),
        Soc(75, "SXR2330P", 79, 8),
        Soc(77, "QCS9100", 73, 8),
        Soc(82, "QCS8300", 75, None),
        Soc(87, "SM8850", 81, 8),
        Soc(95, "SAR2230P", 81, 4),
        Soc(96, "SW6100", 81, 4),
    )
}


def soc_name(soc_model: int | None) -> str:
    if soc_model is None:
        return "not recorded"
    soc = SOCS.get(soc_model)
    return soc.name if soc else f"soc_model {soc_model} (not in q9diff's table)"


# soc_model 0 (generic target) with a dsp_arch: the compiler picks a default SoC for the arch and
# records it in the metadata. What still tells such a build from an explicit one is the options
# string: `relaxed_precision_flag=false` (true in every explicit-SoC build). Evidence:
# fixtures/variants/soc_0.bin vs soc_43.bin (identical but for that option and ROOT), and
# fixtures/qwen-mini/local vs reference.
GENERIC_DEFAULT_SOC: dict[int, int] = {73: 43}
# soc_model 0 with no arch at all: no socModel in the metadata, soc_type UNKNOWN_SDM, dspArch 68.
GENERIC_SOC_TYPE = "UNKNOWN_SDM"
GENERIC_SIGNATURE_OPTION = ("relaxed_precision_flag", "false")


def requested_soc_model(soc_model: int | None, dsp_arch: int | None, options: dict[str, str]) -> int | None:
    """The soc_model the build asked for: 0 when the bytes carry the generic-target signature."""
    if soc_model is None and options.get("soc_type") == GENERIC_SOC_TYPE:
        return 0
    key, value = GENERIC_SIGNATURE_OPTION
    if (
        dsp_arch in GENERIC_DEFAULT_SOC
        and soc_model == GENERIC_DEFAULT_SOC[dsp_arch]
        and options.get(key) == value
    ):
        return 0
    return soc_model
