"""Domain knowledge in one place: QNN enum names, the SoC table, and where each setting lives.

Sources: Qualcomm's public QnnTypes.h (enum values), ExecuTorch/LiteRT SoC tables, AI Hub device
attributes, and our own compiles (`../shared/docs/QNN_FACTS.md`). The names users say for a device
(`--target`) and AI Hub's build profile are data in devices.json beside this file; what the compiler
itself chooses for each soc_model is measured into soc_measured.json (scripts/measure_socs.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from q9diff.errors import Q9Error

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
    """A soc_model number: the SoC names, Hexagon arch and VTCM the sources give it, and which sources."""

    soc_model: int
    name: str  # every SoC name the sources give this number, " / "-joined
    dsp_arch: int | None
    vtcm_mb: int | None
    sources: tuple[str, ...]  # keys of SOC_SOURCES


SOC_SOURCES: dict[str, str] = {
    "litert": "google-ai-edge/LiteRT litert/vendors/qualcomm/supported_soc.csv @ e306bb30"
    " (../shared/real/litert_supported_soc.csv)",
    "facts": "the public tables these were read from: ExecuTorch's qc_schema.py (_soc_info_table), LiteRT's"
    " soc_table.h, AI Hub's device list (qai_hub.get_devices())",
    "executorch": "pytorch/executorch backends/qualcomm/serialization/qc_schema.py @ 0e9182a3 (Qualcomm's"
    " code): _soc_info_table, each SoC's HtpArch and VTCM size in MB",
    "compiled": "compiled here: the soc_type the compiler records (fixtures/variants/soc_*)",
}

SOCS: dict[int, Soc] = {
    s.soc_model: s
    for s in (
        Soc(0, "no SoC, generic target", None, None, ("compiled",)),
        Soc(21, "QRB5165LE / QRB5165U / SDM865 / SM8250", 66, None, ("litert",)),
        Soc(25, "SM7250", 66, None, ("litert",)),
        Soc(29, "SM6350 / SM7225", 66, None, ("litert",)),
        Soc(30, "SM8350 / SM8350P", 68, 4, ("litert", "facts", "executorch")),
        Soc(31, "SM4350 / SM6375", 66, None, ("litert",)),
        Soc(32, "SM7350", 68, None, ("litert",)),
        Soc(35, "QCM6490 / SM7325", 68, None, ("litert",)),
        Soc(36, "SM8450", 69, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(38, "SM7315", 68, None, ("litert",)),
        Soc(39, "SA8295", 68, 8, ("litert", "facts", "executorch")),
        Soc(40, "SM6225", 66, None, ("litert",)),
        Soc(41, "SM7450", 69, None, ("litert",)),
        Soc(42, "SM8475", 69, 8, ("litert", "facts", "executorch")),
        Soc(43, "SM8550", 73, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(45, "SXR1230P", 73, 2, ("litert", "facts", "executorch")),
        Soc(46, "SSG2115P / SAR2130P", 73, 2, ("litert", "facts", "executorch")),
        Soc(50, "SM6450", 73, None, ("litert",)),
        Soc(51, "QCS7230LA / QCS7230LE", 66, None, ("litert",)),
        Soc(52, "SA8255", 73, 8, ("litert", "facts", "executorch")),
        Soc(53, "SXR2230P", 69, 8, ("litert", "facts", "executorch")),
        Soc(54, "SM7475", 69, None, ("litert",)),
        Soc(57, "SM8650", 75, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(58, "SSG2125P", 73, 2, ("litert", "facts", "executorch")),
        Soc(60, "SC8380XP", 73, 8, ("litert", "facts", "compiled")),
        Soc(62, "SA8540", 68, 8, ("executorch",)),
        Soc(66, "QCM8550LA / QCM8550LE", 73, None, ("litert",)),
        Soc(68, "SM8635", 73, None, ("litert",)),
        Soc(69, "SM8750", 79, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(70, "SM7675", 73, None, ("litert",)),
        Soc(72, "SA8797", 81, 16, ("executorch",)),
        Soc(75, "SXR2330P", 79, 8, ("litert", "facts", "executorch")),
        Soc(77, "QCS9100 / QCS9075", 73, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(78, "QCM6690 / QCS6690", 73, None, ("litert",)),
        Soc(82, "QCS8300 / QCS8275", 75, None, ("litert", "facts")),
        Soc(83, "QCM2290 / QCS2290", None, None, ("litert",)),
        Soc(87, "SM8850", 81, 8, ("litert", "facts", "executorch", "compiled")),
        Soc(88, "SC8480XP", 81, None, ("litert",)),
        Soc(90, "QCS8625", 75, None, ("litert",)),
        Soc(93, "QCM6490", 68, 2, ("executorch",)),
        Soc(95, "SAR2230P", 81, 4, ("litert", "facts", "executorch")),
        Soc(96, "SW6100", 81, 4, ("litert", "facts", "executorch")),
        Soc(97, "SM8845 / SM8845P", 81, 8, ("litert", "executorch")),
    )
}


# ExecuTorch's names for the SoCs its Qualcomm backend builds for (executorch 1.5.1,
# backends/qualcomm/serialization/qc_schema.py: the QcomChipset enum, name -> soc_model): what an ExecuTorch
# user writes, `generate_qnn_executorch_compiler_spec(soc_model=QcomChipset.QCS9100, ...)`.
EXECUTORCH_CHIPSETS: dict[int, str] = {
    30: "SM8350", 36: "SM8450", 39: "SA8295", 42: "SM8475", 43: "SM8550", 45: "SXR1230P", 46: "SSG2115P",
    52: "SA8255", 53: "SXR2230P", 57: "SM8650", 58: "SSG2125P", 60: "SC8380XP", 69: "SM8750", 72: "SA8797",
    75: "SXR2330P", 77: "QCS9100", 87: "SM8850", 93: "QCM6490", 95: "SAR2230P", 96: "SW6100", 97: "SM8845",
}  # fmt: skip


def soc_name(soc_model: int | None) -> str:
    if soc_model is None:
        return "not recorded"
    soc = SOCS.get(soc_model)
    return soc.name if soc else f"not in q9diff's SoC table ({len(SOCS)} ids)"


# soc_model 0 with no arch: the options name no SoC (measured on every QAIRT, scripts/measure_generic.py).
# Which soc_model a build asked for is read with the measured rules in q9diff.read.generic.
GENERIC_SOC_TYPE = "UNKNOWN_SDM"


# ---------- devices: the names users say, resolved to a soc_model; what AI Hub builds use ----------

DEVICES_PATH = Path(__file__).with_name("devices.json")
SOC_MEASURED_PATH = Path(__file__).with_name("soc_measured.json")
# A device's VTCM size counts as documented only from these sources (QNN_FACTS marks others uncertain);
# the compiler records whatever VTCM it is asked for, so it cannot say what a device has.
VTCM_DOCUMENTED = ("executorch",)


class UnknownDevice(Q9Error, ValueError):
    """A --target name that resolves to no soc_model (or to several); the message names the nearest."""


@dataclass(frozen=True)
class Measured:
    """What QAIRT's compiler recorded for one soc_model asked alone (scripts/measure_socs.py)."""

    soc_model: int
    soc_type: str | None  # the compiler's name for the SoC (options soc_type)
    dsp_arch: int | None  # the dspArch the metadata records
    arch: int | None  # the arch it compiled for (options arch)
    default_vtcm_size: int | None  # the graph's recorded VTCM with no vtcm_mb asked
    modelled_vtcm_size: int | None  # options vtcm_size: the VTCM of the compiler's model of the SoC
    hvx_threads: int | None  # options hvx_threads
    error: str | None  # why the compiler built nothing for this soc_model


@dataclass(frozen=True)
class Device:
    """A device as `--target` names it: the soc_model a build for it sets, and what is documented."""

    name: str
    soc_model: int
    also: tuple[int, ...]  # other soc_model ids a build for this device may carry
    dsp_arch: int | None
    vtcm_mb: int | None  # the device's VTCM, documented (VTCM_DOCUMENTED); None where no source says
    part: str  # the SoC table's name for soc_model
    sources: tuple[str, ...]  # where the name -> soc_model comes from (source_text)
    note: str | None
    measured: Measured | None

    def accepts(self, soc_model: int | None) -> bool:
        return soc_model == self.soc_model or soc_model in self.also

    @property
    def label(self) -> str:
        arch = f"v{self.dsp_arch}" if self.dsp_arch else "dsp_arch unknown"
        vtcm = f"VTCM {self.vtcm_mb} MiB" if self.vtcm_mb else "VTCM not documented"
        return f"{self.name} (soc_model {self.soc_model}, {self.part}, {arch}, {vtcm})"

    def to_json(self) -> dict:
        m = self.measured
        return {
            "name": self.name,
            "soc_model": self.soc_model,
            "also": list(self.also),
            "dsp_arch": self.dsp_arch,
            "vtcm_mb": self.vtcm_mb,
            "part": self.part,
            "sources": {k: source_text(k) for k in self.sources},
            "note": self.note,
            "measured": None if m is None else {k: getattr(m, k) for k in Measured.__dataclass_fields__},
        }


@lru_cache(maxsize=1)
def _devices_data() -> dict:
    return json.loads(DEVICES_PATH.read_text(encoding="utf-8"))


def source_text(key: str) -> str:
    return SOC_SOURCES.get(key) or _devices_data()["sources"].get(key, key)


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v if isinstance(v, int) else None


@lru_cache(maxsize=1)
def measured() -> dict[int, Measured]:
    """The compiler's own choices per soc_model, as measured (empty when the data file is absent)."""
    if not SOC_MEASURED_PATH.is_file():
        return {}
    out = {}
    for key, row in json.loads(SOC_MEASURED_PATH.read_text(encoding="utf-8"))["socs"].items():
        rec, opt = row.get("recorded", {}), row.get("options", {})
        out[int(key)] = Measured(
            int(key),
            opt.get("soc_type"),
            rec.get("dsp_arch") or None,
            _int(opt.get("arch")),
            rec.get("vtcm_size"),
            _int(opt.get("vtcm_size")),
            _int(opt.get("hvx_threads")),
            row.get("error"),
        )
    return out


def _key(name: str) -> str:
    """A name as matched: case, spaces, dashes and a leading Qualcomm/Snapdragon/Dragonwing ignored."""
    key = re.sub(r"[^0-9a-z+]", "", name.casefold())
    for prefix in ("qualcomm", "snapdragon", "dragonwing"):
        key = key.removeprefix(prefix)
    return key


@lru_cache(maxsize=1)
def _names() -> dict[str, list[dict]]:
    """Every name q9diff resolves, by _key: devices.json rows, the SoC table's part numbers, and the
    compiler's own soc_type names (measured)."""
    index: dict[str, list[dict]] = {}

    def add(name: str, soc_model: int, sources: tuple[str, ...], also=(), note=None) -> None:
        rows = index.setdefault(_key(name), [])
        if all(r["soc_model"] != soc_model for r in rows):
            rows.append(
                {"name": name, "soc_model": soc_model, "sources": sources, "also": also, "note": note}
            )

    for row in _devices_data()["names"]:
        add(row["name"], row["soc_model"], tuple(row["sources"]), tuple(row.get("also", ())), row.get("note"))
    for soc in SOCS.values():
        if soc.soc_model:
            for part in soc.name.split(" / "):
                add(part, soc.soc_model, soc.sources)
    for m in measured().values():
        if m.soc_type and m.soc_type != GENERIC_SOC_TYPE and not m.error:
            add(m.soc_type.upper(), m.soc_model, ("compiled",))
    return index


def _device(row: dict) -> Device:
    soc, m = SOCS.get(row["soc_model"]), measured().get(row["soc_model"])
    documented = soc is not None and any(s in VTCM_DOCUMENTED for s in soc.sources)
    arch = soc.dsp_arch if soc and soc.dsp_arch else (m.dsp_arch if m else None)
    part = soc.name if soc else f"{m.soc_type} (the compiler's name)" if m and m.soc_type else "?"
    vtcm = soc.vtcm_mb if documented else None
    return Device(
        row["name"], row["soc_model"], row["also"], arch, vtcm, part, row["sources"], row["note"], m
    )


def find_device(name: str) -> Device:
    """The device `name` says (a name from devices.json, a part number, or a soc_model id), matched
    without regard to case, spaces or dashes; UnknownDevice lists the nearest known names."""
    text = name.strip()
    shown = (
        text
        if len(text) <= 60 and text.isprintable()
        else repr(text[:60]) + ("..." if len(text) > 60 else "")
    )
    if not text:
        raise UnknownDevice("--target needs a device name, e.g. --target QCS9100 (or a soc_model id)")
    if not text.isprintable() or len(text) > 100:
        raise UnknownDevice(f"--target {shown}: not a device name (printable text of at most 100 characters)")
    if text.isdigit() and not text.isascii():
        raise UnknownDevice(f"--target {shown}: give a soc_model id in the digits 0-9")
    if text.isdigit():
        soc_model = int(text)
        if soc_model == 0:
            raise UnknownDevice(
                "--target 0: soc_model 0 is no device but the generic target, the build q9diff exists to"
                " catch; name the device the build is for, e.g. --target QCS9100"
            )
        if soc_model in SOCS or soc_model in measured() and not measured()[soc_model].error:
            sources = SOCS[soc_model].sources if soc_model in SOCS else ("compiled",)
            row = {"name": f"soc_model {soc_model}", "soc_model": soc_model, "sources": sources}
            return _device(dict(row, also=(), note=None))
        raise UnknownDevice(f"--target {text}: soc_model {text} is in none of q9diff's sources")
    rows = _names().get(_key(text), [])
    if len(rows) > 1:
        ids = ", ".join(f"{r['soc_model']} ({', '.join(r['sources'])})" for r in rows)
        raise UnknownDevice(
            f"--target {text}: names several soc_model ids in q9diff's sources: {ids}; "
            f"give the soc_model itself, e.g. --target {rows[-1]['soc_model']}"
        )
    if rows:
        return _device(dict(rows[0], name=text if _key(text) != _key(rows[0]["name"]) else rows[0]["name"]))
    import difflib

    spelled = {_key(r["name"]): r["name"] for rows in _names().values() for r in rows}
    near = difflib.get_close_matches(_key(text), list(spelled), n=5, cutoff=0.5)
    hint = f"nearest: {', '.join(spelled[k] for k in near)}" if near else "no known name is close"
    raise UnknownDevice(f"--target {text}: not a device q9diff knows ({hint}; or give the soc_model id)")


@dataclass(frozen=True)
class ProfileSetting:
    """One setting of a profile: its value, the sources that give it and what it applies to."""

    value: object
    sources: tuple[str, ...]
    applies_to: str | None = None


@dataclass(frozen=True)
class Profile:
    """What a known-good build service's builds use (devices.json `profiles`), with its sources."""

    title: str
    optimization_level: ProfileSetting
    vtcm: ProfileSetting
    weight_sharing: ProfileSetting
    weights_packing: ProfileSetting
    devices_entry: ProfileSetting

    def sentence(self, device: Device) -> str:
        vtcm = f"VTCM {device.vtcm_mb} MiB, all the device has" if device.vtcm_mb else "all the device's VTCM"
        cores = self.devices_entry.value["cores"][0]
        arch = f"v{device.dsp_arch}" if device.dsp_arch else "its dsp_arch"
        return (
            f"{self.title} builds for {device.name} use soc_model {device.soc_model} with dsp_arch {arch}, "
            f"optimization level {self.optimization_level.value}, {vtcm}, weight sharing for "
            f"{self.weight_sharing.applies_to}, weights packing for {self.weights_packing.applies_to}, and "
            f"an extension file whose devices[0] carries soc_model {device.soc_model}, dsp_arch {arch} and "
            f"cores[0] perf_profile {cores['perf_profile']}, "
            f"rpc_control_latency {cores['rpc_control_latency']}"
        )

    def sources(self) -> dict[str, str]:
        keys = [k for f in Profile.__dataclass_fields__ if f != "title" for k in getattr(self, f).sources]
        return {k: source_text(k) for k in dict.fromkeys(keys)}


@lru_cache(maxsize=1)
def ai_hub_profile() -> Profile:
    data = _devices_data()["profiles"]["aihub"]
    settings = {
        k: ProfileSetting(v["value"], tuple(v["sources"]), v.get("applies_to"))
        for k, v in data.items()
        if k != "title"
    }
    return Profile(data["title"], **settings)
