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

# Qnn_Definition_t of a tensor's quantize params (QnnTypes.h).
DEFINITION_NAMES: dict[int, str] = {0: "IMPL_GENERATED", 1: "DEFINED", 0x7FFFFFFF: "UNDEFINED"}
# Qnn_TensorDataFormat_t: 0 is DENSE, which qnn-context-binary-utility prints as FLAT_BUFFER (the same
# value in QnnTypes.h; every real utility dump shows FLAT_BUFFER). Other values are not named here.
DATA_FORMAT_NAMES: dict[int, str] = {0: "FLAT_BUFFER"}


@dataclass(frozen=True)
class Soc:
    soc_model: int
    name: str  # every SoC name the sources give this number, " / "-joined
    dsp_arch: int | None
    vtcm_mb: int | None
    sources: tuple[str, ...]  # keys of SOC_SOURCES


SOC_SOURCES: dict[str, str] = {
    "litert": "google-ai-edge/LiteRT litert/vendors/qualcomm/supported_soc.csv @ e306bb30"
    " (../shared/real/litert_supported_soc.csv)",
    "facts": "../shared/docs/QNN_FACTS.md: ExecuTorch qc_schema.py, LiteRT soc_table.h, AI Hub devices",
    "compiled": "compiled here: the soc_type the compiler records (fixtures/variants/soc_*)",
}

SOCS: dict[int, Soc] = {
    s.soc_model: s
    for s in (
        Soc(0, "no SoC, generic target", None, None, ("compiled",)),
        Soc(21, "QRB5165LE / QRB5165U / SDM865 / SM8250", 66, None, ("litert",)),
        Soc(25, "SM7250", 66, None, ("litert",)),
        Soc(29, "SM6350 / SM7225", 66, None, ("litert",)),
        Soc(30, "SM8350 / SM8350P", 68, 4, ("litert", "facts")),
        Soc(31, "SM4350 / SM6375", 66, None, ("litert",)),
        Soc(32, "SM7350", 68, None, ("litert",)),
        Soc(35, "QCM6490 / SM7325", 68, None, ("litert",)),
        Soc(36, "SM8450", 69, 8, ("litert", "facts", "compiled")),
        Soc(38, "SM7315", 68, None, ("litert",)),
        Soc(39, "SA8295", 68, 8, ("litert", "facts")),
        Soc(40, "SM6225", 66, None, ("litert",)),
        Soc(41, "SM7450", 69, None, ("litert",)),
        Soc(42, "SM8475", 69, 8, ("litert", "facts")),
        Soc(43, "SM8550", 73, 8, ("litert", "facts", "compiled")),
        Soc(45, "SXR1230P", 73, 2, ("litert", "facts")),
        Soc(46, "SSG2115P / SAR2130P", 73, 2, ("litert", "facts")),
        Soc(50, "SM6450", 73, None, ("litert",)),
        Soc(51, "QCS7230LA / QCS7230LE", 66, None, ("litert",)),
        Soc(52, "SA8255", 73, 8, ("litert", "facts")),
        Soc(53, "SXR2230P", 69, 8, ("litert", "facts")),
        Soc(54, "SM7475", 69, None, ("litert",)),
        Soc(57, "SM8650", 75, 8, ("litert", "facts", "compiled")),
        Soc(58, "SSG2125P", 73, 2, ("litert", "facts")),
        Soc(60, "SC8380XP", 73, 8, ("litert", "facts", "compiled")),
        Soc(66, "QCM8550LA / QCM8550LE", 73, None, ("litert",)),
        Soc(68, "SM8635", 73, None, ("litert",)),
        Soc(69, "SM8750", 79, 8, ("litert", "facts", "compiled")),
        Soc(70, "SM7675", 73, None, ("litert",)),
        Soc(75, "SXR2330P", 79, 8, ("litert", "facts")),
        Soc(77, "QCS9100 / QCS9075", 73, 8, ("litert", "facts", "compiled")),
        Soc(78, "QCM6690 / QCS6690", 73, None, ("litert",)),
        Soc(82, "QCS8300 / QCS8275", 75, None, ("litert", "facts")),
        Soc(83, "QCM2290 / QCS2290", None, None, ("litert",)),
        Soc(87, "SM8850", 81, 8, ("litert", "facts", "compiled")),
        Soc(88, "SC8480XP", 81, None, ("litert",)),
        Soc(90, "QCS8625", 75, None, ("litert",)),
        Soc(95, "SAR2230P", 81, 4, ("litert", "facts")),
        Soc(96, "SW6100", 81, 4, ("litert", "facts")),
        Soc(97, "SM8845 / SM8845P", 81, None, ("litert",)),
    )
}


def soc_name(soc_model: int | None) -> str:
    if soc_model is None:
        return "not recorded"
    soc = SOCS.get(soc_model)
    return soc.name if soc else f"not in q9diff's SoC table ({len(SOCS)} ids)"


# soc_model 0 (generic target) with a dsp_arch: the compiler picks a default SoC for the arch and
# records it in the metadata. What still tells such a build from an explicit one is the options
# string: `relaxed_precision_flag=false` (true in every explicit-SoC build). Evidence:
# fixtures/variants/soc_0.bin vs soc_43.bin (identical but for that option and ROOT), and
# fixtures/qwen-mini/local vs reference.
GENERIC_DEFAULT_SOC: dict[int, int] = {73: 43}
# soc_model 0 with no arch at all: no socModel in the metadata, soc_type UNKNOWN_SDM, dspArch 68.
GENERIC_SOC_TYPE = "UNKNOWN_SDM"
GENERIC_SIGNATURE_OPTION = ("relaxed_precision_flag", "false")


# The signature above is verified on QAIRT 2.47-2.51 builds only; older builds record socModel 0 for a
# generic build themselves (QNN 2.32 LiteRT binary), so the signature is not applied to them.
GENERIC_SIGNATURE_SINCE = (2, 47)


def _build_version(build_id: str) -> tuple[int, int] | None:
    parts = build_id.lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def requested_soc_model(
    soc_model: int | None, dsp_arch: int | None, options: dict[str, str], build_id: str = ""
) -> int | None:
    """The soc_model the build asked for: 0 when the bytes carry the generic-target signature."""
    if soc_model is None and options.get("soc_type") == GENERIC_SOC_TYPE:
        return 0
    key, value = GENERIC_SIGNATURE_OPTION
    version = _build_version(build_id)
    if (
        version is not None
        and version >= GENERIC_SIGNATURE_SINCE
        and dsp_arch in GENERIC_DEFAULT_SOC
        and soc_model == GENERIC_DEFAULT_SOC[dsp_arch]
        and options.get(key) == value
    ):
        return 0
    return soc_model
