"""`--target DEVICE` where a reference would go, shared by `diff` and `suggest` (`doctor` takes it too):
the device resolved in one line or refused, each part judged (q9diff.compare.target), and the view."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import _exists, _fail, _is_set, _open, _parts, _print_suggestions, _t, console

TARGET = typer.Option(
    None,
    "--target",
    metavar="DEVICE",
    help="the device the build is for (QCS9100, SA8775P, Snapdragon 8 Gen 3, SM8650, a soc_model id): "
    "judge it against what AI Hub's builds for it use, with no reference",
)


RUNTIME = typer.Option(
    None,
    "--runtime",
    metavar="VERSION",
    help="the QAIRT runtime the build must load on (2.48, QAIRT 2.48.40, v2.48), or the path of a runtime "
    "library (libQnnHtp.so, libGenie.so) or of a folder that ships one: say whether each part loads there",
)


def runtime_or_fail(text: str):
    from q9diff.load.runtime import UnknownRuntime, parse

    try:
        return parse(text)
    except UnknownRuntime as exc:
        _fail(str(exc))


def device_or_fail(name: str):
    from q9diff.format.tables import UnknownDevice, find_device

    try:
        return find_device(name)
    except UnknownDevice as exc:
        _fail(str(exc))


def no_reference(candidate: Path, reference: Path | None, device) -> None:
    """A reference or a target is needed; the candidate must exist (and hold parts, if a set)."""
    if reference is None and device is None:
        _fail("give the known-good REFERENCE build, or the device: --target DEVICE (e.g. --target QCS9100)")
    _exists(candidate)
    if _is_set(candidate):
        _parts(candidate)


def judged(candidate: Path, device) -> dict:
    """Every part of `candidate` against `device`, as `q9diff.target/1`."""
    from q9diff.compare.target import judge, to_json

    paths = _parts(candidate) if _is_set(candidate) else [candidate]
    return to_json([(p.name, judge(_open(p), device)) for p in paths], device)


def reference_findings(reference: Path, device) -> list[str]:
    """Why the reference is a build for another device than the target (one sentence per part)."""
    from q9diff.compare.target import reference_finding

    paths = _parts(reference) if _is_set(reference) else [reference]
    return [f for f in (reference_finding(_open(p), device) for p in paths) if f]


def print_head(data: dict) -> None:
    t = data["target"]
    arch = f"v{t['dsp_arch']}" if t["dsp_arch"] else "dsp_arch unknown"
    vtcm = f"VTCM {t['vtcm_mb']} MiB" if t["vtcm_mb"] else "VTCM not documented"
    console.print(
        _t((f"Target: {t['name']}", "bold"), f" = soc_model {t['soc_model']} ({t['part']}), {arch}, {vtcm}"),
        soft_wrap=True,
    )
    console.print(_t(f"  from: {', '.join(t['sources'])}" + (f"; {t['note']}" if t["note"] else "")))
    console.print(_t(data["profile"]["sentence"]))
    for e in data["errors"]:
        console.print(_t((f"error: {e}", "bold red")))


def print_target(data: dict) -> None:
    """The terminal view: the device and profile, per part what differs with its evidence, what is
    settled and unknown, the fix rows, and what needs a reference."""
    from q9diff.present.verdict import GENERIC_SOC, root_line
    from q9diff.units import value

    print_head(data)
    if data["matches"]:
        console.print(_t(("Every setting the target determines matches it.", "bold green")))
    else:
        line = f"Root causes against {data['target']['name']}: {root_line(data['causes'])}"
        console.print(_t((line, "bold")))
        if any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"]):
            console.print(_t((GENERIC_SOC, "bold red")))
    for p in data["parts"]:
        console.rule(_t(p["part"]))
        for c in p["causes"]:
            a, b = value(c["name"], c["a"]), value(c["name"], c["b"])  # VTCM in MiB, as everywhere
            console.print(_t("  ", (c["name"], "bold"), f": {a} → {b}"), soft_wrap=True)
            for line in c["evidence"]:
                console.print(_t(f"      {line}"))
        for s in p["settled"]:
            console.print(_t(("  as the target: ", "green"), s))
        for u in p["unknown"]:
            console.print(_t(("  unknown: ", "yellow"), u))
    console.print(_t(("Fix", "bold")))
    _print_suggestions(data["suggestions"])
    console.print(_t(f"Needs --reference: {'; '.join(data['needs_reference'])}"))


def load_verdicts(candidate: Path, device, runtime) -> dict | None:
    """Will each part of `candidate` load on `runtime` and `device` (q9diff.load.rules): the worst
    verdict and each part's, as the JSON's `load`; None when neither is named."""
    if device is None and runtime is None:
        return None
    from q9diff.load.rules import ORDER, judge

    paths = _parts(candidate) if _is_set(candidate) else [candidate]
    parts = []
    for p in paths:
        cb = _open(p)
        parts.append(judge(cb, p.name, runtime, device).to_json())
        cb.release()
    worst = min((v["verdict"] for v in parts), key=ORDER.index)
    return {
        "verdict": worst,
        "runtime": None if runtime is None else runtime.to_json(),
        "device": None if device is None else device.name,
        "parts": parts,
    }


def print_load(load: dict | None) -> None:
    """Will it load: the verdict on the runtime and device named, each finding once with the parts it
    holds for, the error the runtime prints and the fix."""
    if load is None:
        return
    on = " and ".join(
        x for x in (load["device"], f"QAIRT {load['runtime']['qairt']}" if load["runtime"] else None) if x
    )
    style = {"will not load": "bold red", "loads, recompile advised": "yellow"}.get(load["verdict"], "green")
    console.print(_t(("Will it load on ", "bold"), (on, "bold"), ": ", (load["verdict"], style)))
    seen: dict[tuple, list[str]] = {}
    for part in load["parts"]:
        for f in part["findings"]:
            seen.setdefault((f["rule"], f["verdict"], f["evidence"], f["error"], f["fix"]), []).append(
                part["part"]
            )
    total = len(load["parts"])
    for (rule, verdict, evidence, error, fix), parts in seen.items():
        which = f"all {total} parts" if len(parts) == total > 1 else ", ".join(parts)
        console.print(_t("  ", (rule, "bold"), f" ({which}): {verdict}: {evidence}"))
        if error:
            console.print(_t(f"    it prints {error}"))
        if fix:
            console.print(_t(("    fix: ", "green"), fix), soft_wrap=True)
    for part in load["parts"]:
        for why in part["not_judged"]:
            console.print(_t(("  not judged", "yellow"), f" ({part['part']}): {why}"))
