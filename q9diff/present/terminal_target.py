"""The terminal view of a build judged against a device (`q9diff.target/1`: the device and AI Hub's
profile, each part's causes with evidence, what is settled or unknown, the fix) and of the load verdict
(`load` in a diff's or a target's JSON: will each part load on the runtime and device named)."""

from __future__ import annotations

from q9diff.present.terminal import console, print_suggestions, text


def print_head(data: dict) -> None:
    t = data["target"]
    arch = f"v{t['dsp_arch']}" if t["dsp_arch"] else "dsp_arch unknown"
    vtcm = f"VTCM {t['vtcm_mb']} MiB" if t["vtcm_mb"] else "VTCM not documented"
    console.print(
        text(
            (f"Target: {t['name']}", "bold"), f" = soc_model {t['soc_model']} ({t['part']}), {arch}, {vtcm}"
        ),
        soft_wrap=True,
    )
    console.print(text(f"  from: {', '.join(t['sources'])}" + (f"; {t['note']}" if t["note"] else "")))
    console.print(text(data["profile"]["sentence"]))
    for e in data["errors"]:
        console.print(text((f"error: {e}", "bold red")))


def print_target(data: dict) -> None:
    """The terminal view: the device and profile, per part what differs with its evidence, what is
    settled and unknown, the fix rows, and what needs a reference."""
    from q9diff.present.verdict import GENERIC_SOC, root_line
    from q9diff.units import value

    print_head(data)
    if data["matches"]:
        console.print(text(("Every setting the target determines matches it.", "bold green")))
    else:
        line = f"Root causes against {data['target']['name']}: {root_line(data['causes'])}"
        console.print(text((line, "bold")))
        if any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"]):
            console.print(text((GENERIC_SOC, "bold red")))
    for p in data["parts"]:
        console.rule(text(p["part"]))
        for c in p["causes"]:
            a, b = value(c["name"], c["a"]), value(c["name"], c["b"])  # VTCM in MiB, as everywhere
            console.print(text("  ", (c["name"], "bold"), f": {a} → {b}"), soft_wrap=True)
            for line in c["evidence"]:
                console.print(text(f"      {line}"))
        for s in p["settled"]:
            console.print(text(("  as the target: ", "green"), s))
        for u in p["unknown"]:
            console.print(text(("  unknown: ", "yellow"), u))
    console.print(text(("Fix", "bold")))
    from q9diff.present.fixes import chosen

    print_suggestions(data["suggestions"], chosen(data))
    console.print(text(f"Needs --reference: {'; '.join(data['needs_reference'])}"))


def print_load(load: dict | None) -> None:
    """Will it load: the verdict on the runtime and device named, each finding once with the parts it
    holds for, the error the runtime prints and the fix."""
    if load is None:
        return
    on = " and ".join(
        x for x in (load["device"], f"QAIRT {load['runtime']['qairt']}" if load["runtime"] else None) if x
    )
    style = {"will not load": "bold red", "loads, recompile advised": "yellow"}.get(load["verdict"], "green")
    console.print(text(("Will it load on ", "bold"), (on, "bold"), ": ", (load["verdict"], style)))
    seen: dict[tuple, list[str]] = {}
    for part in load["parts"]:
        for f in part["findings"]:
            seen.setdefault((f["rule"], f["verdict"], f["evidence"], f["error"], f["fix"]), []).append(
                part["part"]
            )
    total = len(load["parts"])
    for (rule, verdict, evidence, error, fix), parts in seen.items():
        which = f"all {total} parts" if len(parts) == total > 1 else ", ".join(parts)
        console.print(text("  ", (rule, "bold"), f" ({which}): {verdict}: {evidence}"))
        if error:
            console.print(text(f"    it prints {error}"))
        if fix:
            console.print(text(("    fix: ", "green"), fix), soft_wrap=True)
    for part in load["parts"]:
        for why in part["not_judged"]:
            console.print(text(("  not judged", "yellow"), f" ({part['part']}): {why}"))
