"""Which soc_model a build asked for, read from the binary with the rules measured on the compiler itself.

A build with `soc_model 0` (the generic target) loads everywhere and may compute garbage on the device. What
it records depends on the QAIRT version and the arch: socModel 0 on some, the arch's default SoC on others
(QAIRT 2.51 records SM8550 for a generic v73 build, SM8650 for v75, ...), and then only some compiler options
tell it from an explicit build for that SoC. Those rules are data, measured by scripts/measure_generic.py for
every QAIRT and arch it could install, in generic_measured.json beside this file; nothing here is a constant
learned from a sample. For a QAIRT or arch outside that data, the recorded value is shown and what was asked
is said to be unknown: one version's rule is never applied to another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from q9diff.read import inprocess
from q9diff.read.tables import GENERIC_SOC_TYPE

GENERIC_MEASURED_PATH = Path(__file__).with_name("generic_measured.json")
# Every build the rules were derived from, one row each (read by the tests, not by q9diff at run time).
GENERIC_BUILDS_PATH = Path(__file__).with_name("generic_builds.json")
SOURCE = "q9diff/read/generic_measured.json (scripts/measure_generic.py)"
# What a compiler option that follows soc_model is said to do where one side's soc_model cannot be told.
UNTOLD = "moves with a setting one side cannot tell"


@dataclass(frozen=True)
class Signature:
    """What a generic build of one arch records under one QAIRT, and the options that tell it apart."""

    qairt: str  # "2.51"
    arch: int  # the htp_arch asked
    soc_model: int  # the socModel it records
    dsp_arch: int  # the dspArch it records
    options: tuple[tuple[str, str], ...]  # (key, value) every generic build wrote and no explicit one
    explicit: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values) the explicit builds wrote
    models: int  # how many model/settings combinations were measured


@dataclass(frozen=True)
class Measured:
    """One QAIRT's measured generic builds: their signatures by (socModel, dspArch) recorded."""

    qairt: str
    signatures: dict[tuple[int, int], Signature]
    follows: dict[str, frozenset[str]]  # setting -> compiler options seen to move with it
    op_kinds: frozenset[str]  # op kinds (op_base) the compiler added or dropped as settings moved
    tensor_types: frozenset[str]  # tensor-type codes likewise


@dataclass(frozen=True)
class Requested:
    """The soc_model a build asked for (None: cannot be told), whether that is the generic target (None:
    cannot be told), the sentences that say how, and what decided it: "metadata" (the records alone),
    "measured" (a measured rule), "not measured" (no rule for this QAIRT) or "no version" (no QAIRT named)."""

    soc_model: int | None
    generic: bool | None
    evidence: tuple[str, ...]
    rule: str


@lru_cache(maxsize=1)
def measured() -> dict[str, Measured]:
    """The shipped measurement, by QAIRT major.minor ("2.51")."""
    data = json.loads(GENERIC_MEASURED_PATH.read_text())
    out = {}
    for qairt, entry in data["qairt"].items():
        signatures = {}
        for arch, a in entry["arches"].items():
            if not a.get("measured") or len(a["recorded"]) != 1 or not a["recorded"][0]["soc_model"]:
                continue  # socModel 0 recorded (the metadata says generic) or no single record
            rec = a["recorded"][0]
            explicit = tuple((k, tuple(v)) for k, v in sorted(a["explicit_values"].items()))
            signatures[(rec["soc_model"], rec["dsp_arch"])] = Signature(
                qairt, int(arch), rec["soc_model"], rec["dsp_arch"], tuple(sorted(a["signature"].items())),
                explicit, len(a.get("combos", ())),
            )  # fmt: skip
        follows = {k: frozenset(v) for k, v in entry["follows"].items()}
        moved = entry["come_and_go"]
        out[qairt] = Measured(qairt, signatures, follows, frozenset(moved["op_kinds"]),
                              frozenset(moved["tensor_types"]))  # fmt: skip
    return out


def qairt_of(build_id: str) -> str | None:
    """ "2.51" from "v2.51.0.260929181845"; None where the build id names no version."""
    parts = build_id.lstrip("v").split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return f"{int(parts[0])}.{int(parts[1])}"


def measured_range() -> str:
    versions = sorted(measured(), key=lambda v: tuple(map(int, v.split("."))))
    return f"{versions[0]}-{versions[-1]}" if versions else "none"


def requested(
    soc_model: int | None,
    dsp_arch: int | None,
    options: dict[str, str],
    build_id: str,
    graph_number: int | None = None,
) -> Requested:
    """What a build asked for, from what it records (see the module's note). `graph_number`: the lowest
    number the file's record directory gives a graph (q9diff.read.inprocess): above a process's first, the
    build was compiled after another in the same process, and only the signature options measured to keep
    their meaning then are read."""
    if soc_model is None and options.get("soc_type") == GENERIC_SOC_TYPE:
        return Requested(0, True, (f"options soc_type={GENERIC_SOC_TYPE}: built for no SoC",), "metadata")
    if soc_model is None:
        return Requested(None, None, (), "metadata")
    if soc_model == 0:
        return Requested(0, True, (), "metadata")
    qairt = qairt_of(build_id)
    if qairt is None:
        why = (f"the build id {build_id!r} names no QAIRT version, so whether soc_model {soc_model} was"
               " asked for or is the compiler's choice for a soc_model 0 (generic) build cannot be"
               " told")  # fmt: skip
        return Requested(None, None, (why,), "no version")
    data = measured().get(qairt)
    if data is None:
        why = (f"whether QAIRT {qairt} records socModel {soc_model} for a soc_model 0 (generic) build is not"
               f" measured (generic builds measured on QAIRT {measured_range()}), so what the build asked"
               " cannot be told")  # fmt: skip
        return Requested(None, None, (why,), "not measured")
    sig = data.signatures.get((soc_model, dsp_arch))
    if sig is None:
        why = (f"socModel {soc_model} on v{dsp_arch} is no generic build's stand-in on QAIRT {qairt}"
               " (measured): it was asked")  # fmt: skip
        return Requested(soc_model, False, (why,), "measured")
    if not sig.options:
        why = (f"on QAIRT {qairt} a generic v{sig.arch} build and an explicit soc_model {soc_model} build"
               " write the same options (measured): which one this is cannot be told")  # fmt: skip
        return Requested(None, None, (why,), "measured")
    doubts = {
        k: inprocess.doubt(qairt, sig.arch, graph_number, k, options.get(k), options.get(k) == v)
        for k, v in sig.options
    }
    usable = tuple((k, v) for k, v in sig.options if not doubts[k])
    if not usable:  # built after another in one process, where no signature option keeps its meaning
        said = "; ".join(dict.fromkeys(d for d in doubts.values() if d))
        why = (
            f"cannot tell from the file whether soc_model 0 was asked: {said}"
            f"; a fresh soc_model 0 build for v{sig.arch} records socModel {soc_model} too"
        )
        return Requested(None, None, (why,), "measured")
    apart = [(k, options.get(k)) for k, v in usable if options.get(k) != v]
    wrote = ", ".join(f"{k}={v}" for k, v in usable)
    later = inprocess.after_another(graph_number)
    held = f"; {later}, which does not move {'them' if len(usable) > 1 else 'it'} (measured)" if later else ""
    if not apart:
        why = (f"options {wrote}, as every soc_model 0 build for v{sig.arch} on QAIRT {qairt} and no explicit"
               f" soc_model {soc_model} one (measured): the compiler stood in its SoC{held}")  # fmt: skip
        return Requested(0, True, (why,), "measured")
    said = ", ".join(f"{k}={got}" for k, got in apart)
    why = (f"options {said}: an explicit build (every soc_model 0 build for v{sig.arch} on QAIRT {qairt}"
           f" writes {wrote}, measured){held}")  # fmt: skip
    return Requested(soc_model, False, (why,), "measured")


def op_base(kind: str) -> str:
    """An op kind without its layout (after @) and variant (after ^): `addsub_op^010@CH*3.fi` is addsub_op;
    the compiler's own ops (`@DmaCheckpointSet`) keep their name."""
    return kind if kind.startswith("@") else kind.split("@")[0].split("^")[0]


def of_build(build_id: str) -> Measured | None:
    """The measurement of this build's QAIRT; None: not measured."""
    qairt = qairt_of(build_id)
    return measured().get(qairt) if qairt else None


def follows(build_id: str, setting: str) -> frozenset[str] | None:
    """The compiler options seen to move when `setting` moved, on this build's QAIRT; None: not measured."""
    qairt = qairt_of(build_id)
    data = measured().get(qairt) if qairt else None
    if data is None or setting not in data.follows:
        return None
    return data.follows[setting]
