"""q9diff as a library: the functions `import q9diff` offers (docs/python.md), each returning the frozen
result the command line prints from (q9diff.results), each failing with a `Q9Error` subclass naming the
file, never with SystemExit.

    open(path)                                  what a path holds: a Build
    diff(candidate, reference)                  why a build differs from the known-good one: a DiffReport
    target(path, device)                        a build judged against a device alone: a TargetReport
    will_load(path, runtime=..., target=...)    will each part load there: a LoadReport
    doctor(bundle, reference=None, ...)         a whole Genie bundle checked: a DoctorReport
    layers(candidate, reference, ...)           the first tensor where a build leaves its float model

What a path is (a context binary, a folder of parts, a Genie bundle or config, an EPContext .onnx, a
LiteRT .tflite, an ExecuTorch .pte) is decided once, when a function here is called, by the one registry of
kinds (q9diff.kinds) over the openers of q9diff.read.openers: each path becomes a q9diff.inputs.Input, and
what is called below reads that. A Build is a path resolved already; the command line passes its own
Inputs. A new container is a row in the registry, and every function here takes it unchanged.

as_device and as_runtime, the names a user gives made a Device and a Runtime, are public to q9diff's own
modules, not part of the versioned API (`q9diff.__all__`); the steps the command line composes on Inputs
live in their layers (q9diff.load.verdicts, q9diff.compare.target, q9diff.compare.toolchains).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from shlex import quote

from q9diff import inputs
from q9diff.compare.toolchains import fixing
from q9diff.errors import InputError
from q9diff.inputs import Input

# Imported, not only named for type checkers: typing.get_type_hints(q9diff.diff) resolves the names of a
# public signature (every path a function reads imports them anyway).
from q9diff.load.runtime import Runtime, parse
from q9diff.load.verdicts import load_verdicts
from q9diff.read.openers import coverage
from q9diff.read.tables import Device, find_device
from q9diff.results import SWAPPED, Build, DiffReport, DoctorReport, LayersReport, LoadReport, TargetReport

PathLike = str | os.PathLike
Progress = Callable[[str], None]


def _input(p: PathLike | Build | Input) -> PathLike | Input:
    """A path given to the API, or the Input a Build (or the command line) resolved already."""
    return p.resolved if isinstance(p, Build) else p


def as_device(name: str | Device) -> Device:
    """The device a name means (QCS9100, SA8775P, Snapdragon 8 Gen 3, SM8650, a soc_model id), or
    UnknownDevice saying which names q9diff knows."""
    return name if isinstance(name, Device) else find_device(str(name))


def as_runtime(text: str | os.PathLike | Runtime) -> Runtime:
    """The QAIRT runtime a version (2.48, QAIRT 2.48.40, v2.48) or a runtime library or folder names, or
    UnknownRuntime."""
    return text if isinstance(text, Runtime) else parse(str(text))


def open(path: PathLike) -> Build:  # q9diff.open, as the page names it (the builtin is not used here)
    """What `path` holds: a context binary, a folder of parts, a Genie bundle or config, an EPContext
    .onnx or a LiteRT .tflite, with its parts in order. InputError when it does not exist or holds no
    context binary q9diff reads; FormatError when a file is none (a text file, /dev/zero)."""
    (found,) = inputs.resolved(path)
    _readable(found)
    return Build(found.given, found.kind.name, tuple(p.path for p in found.parts), found)


def _readable(found: Input) -> None:
    """A path said to be one context opened as one: a text file, /dev/zero or a FIFO is refused here, in
    one line naming it (FormatError, InputError), not returned as a build that fails when first read."""
    if not found.is_set:
        found.at.open().release()  # the header and metadata: what the opener checks first


def diff(
    candidate: PathLike | Build,
    reference: PathLike | Build,
    *,
    target: str | Device | None = None,
    runtime: str | Runtime | None = None,
    progress: Progress | None = None,
) -> DiffReport:
    """Why `candidate` differs from the known-good `reference`, and what to change: two files, or two
    sets compared part by part (a file against a set: its counterpart part, the same file name).
    `target`: also say whether the reference was built for that device; `target` or `runtime`: also
    whether each part of the candidate loads there. `progress(line)` hears which part is compared."""
    from q9diff.compare.outside import outside  # start-up: compare.outside
    from q9diff.compare.sets import compared  # start-up: compare.sets, numpy
    from q9diff.present.verdict import sides, swap_advice  # start-up: present.verdict

    aimed_at = None if target is None else as_device(target)
    on = None if runtime is None else as_runtime(runtime)
    given_a, given_b = _input(candidate), _input(reference)
    a, b, note = inputs.pair(given_a, given_b)
    notes = [note] if note else []
    said = [n for n in (a.read_as, b.read_as) if n]
    read_as = {"read_as": said} if said else {}  # what a folder was read as: -v and the JSON say it
    findings = []
    if aimed_at is not None:
        from q9diff.compare.target import reference_findings  # start-up: read where a device is named

        findings = reference_findings(b, aimed_at)
    notes += [f"warning: {f}" for f in findings]
    load = load_verdicts(a.parts, aimed_at, on)
    aimed = {"target": {"name": aimed_at.name, "reference_findings": findings}} if aimed_at else {}
    aimed |= {"load": load} if load else {}
    result, data = compared(a, b, progress)
    data |= aimed
    causes, files = (
        (data["causes"], sides(data)) if a.is_set or b.is_set else (result.causes, ([result.a], [result.b]))
    )
    swapped = swap_advice(a.given, b.given, causes, "", files)
    data |= read_as | fixing(a, f"q9diff suggest {quote(str(a.given))} {quote(str(b.given))}")
    # containers: what was compared of them, and whether the files differ outside it (`identical` then
    # speaks for every byte)
    o = outside(coverage(a.at), coverage(b.at), data["identical"])
    data |= _dlcs(a, b)
    if o is not None:
        data |= {"outside": o, "identical": data["identical"] and o["differs"] is not True}
    data |= _bundles(a, b, data)  # two Genie bundles: every file, not the ctx-bins alone
    if swapped:  # the fix would make the good build like the broken one: said first, no fix given
        data |= {"reference_looks_wrong": swapped, "suggestions": []}
        for part in data.get("parts", []):
            part["suggestions"] = []
        notes.append(f"{SWAPPED}{swapped}")
    return DiffReport(a.given, b.given, data, result, tuple(notes))


def _dlcs(a: Input, b: Input) -> dict:
    """`dlc`: the record-by-record diff of two context DLCs (given whole, or through the EPContext models
    that name them): SoCs added or removed, per-SoC settings, the shared weights; {} for other files."""
    from q9diff.compare.sets import dlcs  # start-up: compare.sets

    pair = dlcs(a, b)
    if pair is None:
        return {}
    from q9diff.compare.dlc import diff as dlc_diff  # start-up: compare.dlc

    return {"dlc": dlc_diff(*pair)}


def _bundles(a: Input, b: Input, data: dict) -> dict:
    """What a set diff's JSON gains when both sides are Genie bundles (q9diff.compare.bundles): `outside`
    over every file of both, `bundle` (each file and setting that differs), the extension config's root
    causes; `identical` then speaks for every file."""
    if not (a.is_set and b.is_set):
        return {}
    from q9diff.compare.bundles import compare  # start-up: compare.bundles

    found = compare(a, b, (data["a_total"], data["b_total"]), data["identical"])
    if found is None:
        return {}
    o, bundle = found
    known = {(c["name"], repr(c["a"]), repr(c["b"])) for c in data["causes"]}
    more = [c for c in bundle.pop("causes") if (c["name"], repr(c["a"]), repr(c["b"])) not in known]
    return {
        "outside": o,
        "bundle": bundle,
        "causes": data["causes"] + more,
        "identical": data["identical"] and not o["differs"],
    }


def target(
    path: PathLike | Build, device: str | Device, *, runtime: str | Runtime | None = None
) -> TargetReport:
    """`path` (a file or each part of a set) judged against `device` with no reference: every setting
    the device determines against what AI Hub's builds for it use, and whether each part loads there
    (on `runtime` too, when named)."""
    from q9diff.compare.target import judged  # start-up: compare.target, numpy

    d, on = as_device(device), None if runtime is None else as_runtime(runtime)
    (p,) = inputs.resolved(_input(path))
    p, chosen = _cache_for(p, d)
    data = judged(p, d) | {"toolchain": p.toolchain} | chosen
    load = load_verdicts(p.parts, d, on)
    data |= fixing(p, f"q9diff suggest {quote(str(p.given))} --target {quote(d.name)}")
    return TargetReport(p.given, data | ({"load": load} if load else {}))


def _cache_for(p: Input, d: Device) -> tuple[Input, dict]:
    """A multi-SoC context DLC (given whole, or through the EPContext model naming it) judged against a
    device: the runtime loads the cache built for the device's SoC, so that cache alone is judged, and
    `dlc_cache` says which; every other input as it is."""
    from q9diff.read.dlc import Dlc, behind  # start-up: read.dlc

    if p.at.label is not None or p.at.container not in (".dlc", ".onnx"):
        return p, {}
    found = behind(p.at.file, p.at.container)
    if found is None:
        return p, {}
    caches = [c for c in Dlc.open(found).caches if d.accepts(c.info.get("socModel"))]
    if len(caches) != 1:
        return p, {}
    (one,) = inputs.resolved(f"{p.at.file}#{caches[0].name}")
    return one, {"dlc_cache": {"name": caches[0].name, "of": str(p.given)}}


def will_load(
    path: PathLike | Build, *, runtime: str | Runtime | None = None, target: str | Device | None = None
) -> LoadReport:
    """Will each part of `path` load on `runtime` and `target` (either or both): the worst verdict,
    each part's findings with the error the runtime prints and the fix (q9diff.load.rules)."""
    if runtime is None and target is None:
        raise InputError("will_load: name the runtime (runtime='2.48') or the device (target='QCS9100')")
    d = None if target is None else as_device(target)
    on = None if runtime is None else as_runtime(runtime)
    (p,) = inputs.resolved(_input(path))
    return LoadReport(p.given, load_verdicts(p.parts, d, on))


def doctor(
    bundle: PathLike | Build,
    reference: PathLike | Build | None = None,
    *,
    target: str | Device | None = None,
    runtime: str | Runtime | None = None,
) -> DoctorReport:
    """A whole Genie bundle (its folder or config, a folder of parts or one .bin) checked: its ctx-bins,
    vocabulary and context, the nine hypotheses against the known-good `reference`, the two places a
    setting lives, and against `target` and `runtime` when named (a bundle that ships Qualcomm's runtime
    libraries names its runtime itself). BundleError when a bundle cannot be read."""
    from q9diff.doctor.run import run  # start-up: doctor.run

    d = None if target is None else as_device(target)
    on = None if runtime is None else as_runtime(runtime)
    # doctor reads what it can of a bundle and says the rest itself: resolved, not checked
    given = [
        b.resolved if isinstance(b, Build) else inputs.given(b) for b in (bundle, reference) if b is not None
    ]
    for found in given:  # a path that is no bundle, folder or context is one line, not a report of errors
        if found.kind is not None and not found.is_folder and found.at.label is None:
            if found.given.suffix != ".json":
                _readable(found)
    report = run(given[0], None if reference is None else given[1], target=d, runtime=on)
    return DoctorReport(report.result(), tuple(report.files()))


def layers(
    candidate: PathLike,
    reference: PathLike,
    *,
    inputs: PathLike | None = None,
    seed: int = 0,
    max_taps: int = 128,
    progress: Progress | None = None,
) -> LayersReport:
    """The first tensor where `candidate` (a recipe, `RECIPE#PART[/GRAPH]`, or a QDQ .onnx) leaves
    `reference` (its float .onnx, a folder of them, or a second recipe): the candidate compiled with its
    activations made graph outputs and run on the x86 HTP emulator (never the CPU), the reference on the CPU
    (or the emulator), each tensor compared in graph order. `inputs`: an .npz named by the model's inputs
    (default: Genie's inputs for an LLM part, else seeded). Needs `[ort]`; LayersError (one line)
    otherwise."""
    from q9diff.layers.run import layers as run  # start-up: layers.run, numpy

    given = None if inputs is None else Path(inputs)
    return LayersReport(
        run(candidate, reference, inputs=given, seed=seed, max_taps=max_taps, progress=progress)
    )
