"""The terminal view of a build judged against a device (`q9diff.target/1`: the device and AI Hub's
profile, each part's causes with evidence, what is settled or unknown, the fix) and of the load verdict
(`load` in a diff's or a target's JSON: will each part load on the runtime and device named)."""

from __future__ import annotations

from q9diff.present.terminal import console, print_fix, print_more, text


def print_head(data: dict) -> None:
    """The device named, where its facts come from, and how AI Hub builds for it."""
    t = data["target"]
    arch = f"v{t['dsp_arch']}" if t["dsp_arch"] else "dsp_arch unknown"
    vtcm = f"VTCM {t['vtcm_mb']} MiB" if t["vtcm_mb"] else "VTCM not documented"
    console.print(
        text((f"Target: {t['name']}", "bold"), f" = soc_model {t['soc_model']} ({t['part']}), {arch}, {vtcm}")
    )
    note = f"; {t['note']}" if t["note"] else ""
    sources = ", ".join(t["sources"])
    console.print(text(f"  the device's facts from: {sources}{note} (q9diff explain sources)"))
    console.print(text(data["profile"]["sentence"]))


def print_target(data: dict, verbose: bool = False) -> None:
    """The terminal view, the verdict first: the root causes, what the device cannot run, each cause once
    with the parts it holds for (its evidence per part with --verbose), the fix in the candidate's
    toolchain, then the device and AI Hub's profile, and what needs a reference."""
    from q9diff.present.verdict import generic_soc, refused, root_line  # start-up: present.verdict
    from q9diff.units import value  # start-up: units

    name = data["target"]["name"]
    print_refusal(data.get("load"))  # the answer to --runtime first, where it refuses
    if data["matches"]:
        console.print(text((f"Every setting {name} determines matches it.", "bold green")))
    else:
        console.print(text((f"Root causes against {name}: {root_line(data['causes'])}", "bold")))
        if any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"]):
            said = generic_soc(data["target"]["soc_model"], refused(data.get("load")))
            console.print(text((said, "bold red")))
    for e in data["errors"]:
        console.print(text((f"error: {e}", "bold red")))
    if verbose:
        _per_part(data["parts"], value)
    else:
        _causes_once(data["parts"], value)
    if data["suggestions"]:
        print_fix(data["suggestions"], data=data, verbose=verbose)
    print_head(data)
    console.print(text(f"Needs --reference: {'; '.join(data['needs_reference'])}"))
    print_load(data.get("load"))
    print_more(verbose, data)


def _causes_once(parts: list[dict], value) -> None:
    """Each cause once, with the parts it holds for (`all N parts`), without its evidence."""
    seen: dict[tuple, list[str]] = {}
    for p in parts:
        for c in p["causes"]:
            seen.setdefault((c["name"], repr(c["a"]), repr(c["b"])), []).append(p["part"])
    if seen:
        console.print(text(("causes", "bold")))
    found = {(c["name"], repr(c["a"]), repr(c["b"])): c for p in parts for c in p["causes"]}
    for key, where in seen.items():
        c = found[key]
        which = f"all {len(parts)} parts" if len(where) == len(parts) > 1 else ", ".join(where)
        a, b = value(c["name"], c["a"]), value(c["name"], c["b"])
        console.print(text("  ", (c["name"], "bold"), f": {a} → {b} ({which})"), soft_wrap=True)


def _per_part(parts: list[dict], value) -> None:
    for p in parts:
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


def print_refusal(load: dict | None) -> None:
    """The answer to --runtime or --target, where it refuses the build: `Will not load on QAIRT 2.48` and
    each refusing finding with what the runtime prints and the fix, before anything else is said."""
    from q9diff.present.verdict import refusal, refused  # start-up: present.verdict

    if not refused(load):
        return
    head, rows = refusal(load)
    console.print(text((head, "bold red")))
    _rows(rows)


def print_load(load: dict | None) -> None:
    """Will it load: the verdict on the runtime and device named, each finding once with the parts it
    holds for, the error the runtime prints and the fix; where it refuses the build (said first by
    print_refusal), only the other findings."""
    from q9diff.present.verdict import WONT, load_on, load_rows, refused  # start-up: present.verdict

    if load is None:
        return
    _, rows = load_rows(load)
    if refused(load):
        # The build is refused: the other findings say what to rebuild, not that it loads.
        rows = [(*r[:2], r[2].removeprefix("loads, "), *r[3:]) for r in rows if not r[2].startswith(WONT)]
        if rows:
            console.print(text(("Also on ", "bold"), (load_on(load), "bold"), ":"))
    else:
        style = "yellow" if load["verdict"] == "loads, recompile advised" else "green"
        console.print(
            text(("Will it load on ", "bold"), (load_on(load), "bold"), ": ", (load["verdict"], style))
        )
    _rows(rows)
    for part in load["parts"]:
        for why in part["not_judged"]:
            console.print(text(("  not judged", "yellow"), f" ({part['part']}): {why}"))


def _rows(rows: list[tuple]) -> None:
    """Each load finding (q9diff.present.verdict.load_rows), its error and its fix, a sentence each."""
    for rule, which, said, error, fix in rows:
        console.print(text("  ", (rule, "bold"), f" ({which}): {said}"))
        if error:
            console.print(text(f"    it prints {error}"))
        if fix:
            console.print(text(("    fix: ", "green"), fix))  # a sentence: wrapped, never cut
