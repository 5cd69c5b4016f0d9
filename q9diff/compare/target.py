"""One build judged against a device named with `--target`, when no reference build is at hand.

Every setting the device determines is compared with what AI Hub's builds for it use (the profile in
q9diff/read/devices.json): soc_model and dsp_arch from the device table, VTCM from the device's
documented size (the compiler records whatever it is asked, so it cannot say what a device has),
optimization level 3, weights packing where 4-bit weights sit one per byte (q9diff.compare.packing),
and weight sharing for parts with several graphs. Each finding is a `Cause` with the evidence and its
sources, and the fixes are the rows `q9diff.compare.diff.suggestions` gives for a reference diff, so
`suggest --apply/--recompile` works unchanged. What only a reference shows is listed, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from q9diff.compare.cause import Cause
from q9diff.compare.observe import observe
from q9diff.compare.packing import packing_notice
from q9diff.compare.sets import distinct_causes
from q9diff.compare.structure import precision
from q9diff.compare.suggestions import merged_suggestions, suggestions
from q9diff.compare.summary import inspect_summary, target
from q9diff.read.binary import ContextBinary
from q9diff.read.tables import Device, Profile, ai_hub_profile, soc_name

if TYPE_CHECKING:  # the api layer's resolved input, named in signatures only
    from q9diff.inputs import Input

SCHEMA = "q9diff.target/1"
MB = 1024 * 1024  # bytes in a MiB, the unit of vtcm_mb
# What a diff against a reference build shows and a device's name cannot.
NEEDS_REFERENCE = (
    "byte attribution (which regions changed, moved or are new)",
    "op schedules and kernels",
    "weights content and I/O encodings",
)


@dataclass
class TargetResult:
    """One binary against one device: root causes with evidence, the fix rows, what is settled, and
    what is unknown (a value the file does not record, a size no source documents)."""

    cb: ContextBinary
    device: Device
    profile: Profile
    causes: list[Cause] = field(default_factory=list)
    suggestions: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what the device cannot run
    settled: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.causes


def _sources(device: Device) -> str:
    return ", ".join(device.sources)


def _values(v) -> list:
    return list(v) if isinstance(v, tuple) else [v]


def _soc(r: TargetResult, obs: dict) -> None:
    d, asked, recorded = r.device, obs["soc_model"], r.cb.soc_model
    if asked is None and recorded is None:
        r.unknown.append(f"soc_model: {Path(r.cb.path).name} does not record it")
    elif asked is None and d.accepts(recorded):  # the device's SoC, asked or stood in for a generic build
        why = target(r.cb)["evidence"][-1]
        r.unknown.append(f"soc_model: {Path(r.cb.path).name} records socModel {recorded}, {d.name}'s; {why}")
    elif asked is None:  # recorded for another SoC, asked or not: either way not a build for the device
        device = f"{d.name} is soc_model {d.soc_model} ({d.part}; sources: {_sources(d)})"
        evidence = (f"records socModel {recorded} ({soc_name(recorded)})", *target(r.cb)["evidence"][1:])
        r.causes.append(Cause("soc_model", "root", recorded, d.soc_model, None, (*evidence, device)))
    elif not d.accepts(asked):
        generic = ": it loads everywhere and may compute garbage on the device" if asked == 0 else ""
        device = f"{d.name} is soc_model {d.soc_model} ({d.part}; sources: {_sources(d)})"
        evidence = (f"built for soc_model {asked} ({soc_name(asked)}){generic}", *target(r.cb)["evidence"])
        r.causes.append(Cause("soc_model", "root", asked, d.soc_model, None, (*evidence, device)))
    else:
        also = f"; {d.note}" if asked in d.also and d.note else ""
        r.settled.append(f"soc_model {asked} ({soc_name(asked)}), a build for {d.name}{also}")


def _arch(r: TargetResult, obs: dict) -> None:
    d, arch = r.device, obs["dsp_arch"]
    if d.dsp_arch is None or arch is None:
        what = (
            f"{d.name}'s dsp_arch is in none of q9diff's sources" if arch else "the file records no dspArch"
        )
        r.unknown.append(f"dsp_arch: {what}")
    elif arch != d.dsp_arch:
        r.causes.append(
            Cause(
                "dsp_arch",
                "root",
                arch,
                d.dsp_arch,
                None,
                (
                    f"dspArch v{arch}; {d.part} is v{d.dsp_arch}",
                    "a binary for another arch may give indeterminate results",
                ),
            )
        )
    else:
        r.settled.append(f"dsp_arch v{arch}, {d.part}'s")


def _vtcm(r: TargetResult, obs: dict) -> None:
    d, sizes = r.device, [s for s in _values(obs["vtcm_size"]) if s is not None]
    m = d.measured
    if d.vtcm_mb is None:
        modelled = (
            f"; the compiler's own model of it uses {m.modelled_vtcm_size // MB} MiB (measured, not used)"
            if m and m.modelled_vtcm_size
            else ""
        )
        r.unknown.append(
            f"vtcm_size: {d.part}'s VTCM size is in none of q9diff's documented sources{modelled}"
        )
        return
    if not sizes:
        r.unknown.append(f"vtcm_size: {Path(r.cb.path).name} does not record it")
        return
    have = d.vtcm_mb * MB
    over = [s for s in sizes if s > have]
    if over:
        r.errors.append(
            f"VTCM {max(over) // MB} MiB asked, {d.part} has {d.vtcm_mb} MiB: the compiler records any size "
            "it is asked for without a word, the device cannot provide it"
        )
    if over or any(s < have for s in sizes):
        profile = f"{r.profile.title} builds use all of it ({', '.join(r.profile.vtcm.sources)})"
        default = (
            f"; {m.default_vtcm_size // MB} MiB is what the compiler records when no VTCM is asked (measured)"
            if m and m.default_vtcm_size
            else ""
        )
        r.causes.append(
            Cause(
                "vtcm_size",
                "root",
                obs["vtcm_size"],
                have,
                None,
                (f"VTCM {', '.join(f'{s // MB} MiB' for s in sizes)}; {d.part} has {d.vtcm_mb} MiB",)
                + (f"{profile}{default}",),
            )
        )
    else:
        r.settled.append(f"VTCM {d.vtcm_mb} MiB, all the device has")


def _optimization(r: TargetResult, obs: dict) -> None:
    level = obs["optimization_level"]
    if level is None or (isinstance(level, tuple) and None in level):
        ran = {r.cb.options(i).get("O", "") for i in range(len(r.cb.graphs))}
        level = int(ran.pop()) if len(ran) == 1 and next(iter(ran)).isdigit() else None
    want = r.profile.optimization_level.value
    if level is None:
        r.unknown.append("optimization_level: not recorded, and the graphs' options disagree or lack O")
    elif level != want:
        r.causes.append(
            Cause(
                "optimization_level",
                "root",
                level,
                want,
                None,
                (
                    f"optimization level {level}; {r.profile.title} builds use {want} "
                    f"({', '.join(r.profile.optimization_level.sources)})",
                ),
            )
        )
    else:
        r.settled.append(f"optimization level {level}")


def _sharing(r: TargetResult, obs: dict) -> None:
    if obs["num_graphs"] < 2:
        r.settled.append(
            "one graph: weight sharing is for parts with several graphs (an LLM part's prompt and token "
            "graphs)"
        )
    elif not obs["weight_sharing"]:
        r.causes.append(
            Cause(
                "weight_sharing",
                "root",
                False,
                True,
                None,
                (
                    f"{obs['num_graphs']} graphs without shared weights; {r.profile.title} builds share them "
                    f"({', '.join(r.profile.weight_sharing.sources)})",
                ),
            )
        )
    else:
        r.settled.append(f"{obs['num_graphs']} graphs share their weights")


def _packing(r: TargetResult) -> None:
    notice = packing_notice(r.cb)
    source = ", ".join(r.profile.weights_packing.sources)
    if notice is None:
        r.settled.append("no 4-bit weights stored one per byte: packing has nothing to pack")
    elif notice.kind == "not_packed":
        r.causes.append(
            Cause(
                "weights_packing",
                "root",
                False,
                True,
                None,
                (notice.message, f"{r.profile.title} packs them ({source})"),
            )
        )
    elif notice.kind == "int4_unpacked":
        r.causes.append(
            Cause(
                "native_hmx_a16w4",
                "root",
                False,
                True,
                None,
                (notice.message, f"{r.profile.title} packs them ({source})"),
            )
        )
    else:
        r.settled.append(notice.message)


def judge(cb: ContextBinary, device: Device, profile: Profile | None = None) -> TargetResult:
    """`cb` against `device` as `profile` (AI Hub's) builds for it, in the order a reference diff lists
    its causes (q9diff.compare.rules), so the fix rows come out the same."""
    r = TargetResult(cb, device, profile or ai_hub_profile())
    obs = observe(cb, precision(cb))
    _soc(r, obs)
    _arch(r, obs)
    _vtcm(r, obs)
    _optimization(r, obs)
    _sharing(r, obs)
    _packing(r)
    r.suggestions = suggestions(r.causes, cb, device.dsp_arch)
    return r


def reference_finding(ref: ContextBinary, device: Device) -> str | None:
    """A sentence when the reference build is one for another device than the target, else None."""
    asked = target(ref)["soc_model_requested"]
    if asked is not None and not device.accepts(asked):
        return (
            f"the reference {Path(ref.path).name} was built for soc_model {asked} ({soc_name(asked)}), "
            f"not for the target {device.name} (soc_model {device.soc_model})"
        )
    if ref.dsp_arch is not None and device.dsp_arch is not None and ref.dsp_arch != device.dsp_arch:
        return (
            f"the reference {Path(ref.path).name} was built for v{ref.dsp_arch}, not for the target "
            f"{device.name} (v{device.dsp_arch})"
        )
    return None


def judged(build: Input, device: Device) -> dict:
    """Every part of `build` against `device`, as `q9diff.target/1`."""
    return to_json([(p.path.name, judge(p.open(), device)) for p in build.parts], device)


def reference_findings(reference: Input, device: Device) -> list[str]:
    """Why the reference is a build for another device than the target (one sentence per part)."""
    found = (reference_finding(p.open(), device) for p in reference.parts)
    return [f for f in found if f]


def to_json(results: list[tuple[str, TargetResult]], device: Device) -> dict:
    """`q9diff.target/1`: per part its causes, fixes, settled and unknown settings; over the set the
    distinct causes and fixes, the device (with its sources) and the profile sentence."""
    parts = [
        {
            "part": name,
            "a": inspect_summary(r.cb),
            "matches": r.matches,
            "causes": [c.to_json() for c in r.causes],
            "suggestions": r.suggestions,
            "errors": r.errors,
            "settled": r.settled,
            "unknown": r.unknown,
        }
        for name, r in results
    ]
    causes = distinct_causes(parts)
    profile = ai_hub_profile()
    return {
        "schema": SCHEMA,
        "target": device.to_json(),
        "profile": {"sentence": profile.sentence(device), "sources": profile.sources()},
        "matches": all(p["matches"] for p in parts),
        "causes": causes,
        "suggestions": merged_suggestions([s for p in parts for s in p["suggestions"]]),
        "errors": list(dict.fromkeys(e for p in parts for e in p["errors"])),
        "needs_reference": list(NEEDS_REFERENCE),
        "parts": parts,
    }
