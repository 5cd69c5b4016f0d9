"""The terminal view of a diff: a pair's verdict, sizes, causes and fix, or a set's part by part; with
--verbose each cause's evidence, where the changed bytes went and every changed region (bloaty-style:
the rows add up to the totals). It reads a `DiffResult` or `SetDiff` (or the saved ones q9diff.compare.result
makes from a saved `--json`) with the result's JSON, as the HTML and Markdown presenters read that JSON."""

from __future__ import annotations

import json

from q9diff.present.terminal import console, print_fix, print_more, print_packing, print_soc_set, text, whole
from q9diff.present.terminal_target import print_refusal
from q9diff.present.verdict import (
    bundle_lines,
    change,
    clip,
    headline,
    label,
    models_line,
    refused,
    role,
    warnings,
)
from q9diff.present.verdict import outside_words as words
from q9diff.units import sizes, value


def show_pair(res, verbose: bool = False, data: dict | None = None) -> None:
    """One pair's terminal view: verdict, sizes, causes, the fix (also `q9diff report` of a saved diff).
    `data`: the diff's JSON (which toolchain the fix leads with, what to run next, a swap said last)."""
    data = data if data is not None else _json(res)
    print_refusal(data.get("load"))  # the answer to --runtime / --target first, where it refuses
    swapped(data, say=True)
    if _outside(data, lead=True):
        return
    print_diff(res, verbose, refused(data.get("load")))
    _outside(data)
    if res.identical:
        return
    if not swapped(data):
        print_fix(res.suggestions, "Fix (settings only)" if res.different_models else "Fix", data, verbose)
    print_more(verbose, data)


def _json(res) -> dict:
    from q9diff.compare.diff import to_json  # start-up: compare.diff, numpy, construct

    return to_json(res)


def _outside(data: dict, lead: bool = False) -> bool:
    """What a diff of containers compared and whether the files differ outside it (q9diff.compare.outside):
    with `lead`, the verdict itself where the contexts are identical (True: said); else the line after the
    verdict."""
    o = data.get("outside")
    if o is None or lead != o["contexts_identical"] or lead and o["differs"] is False:
        return False
    console.print(text((words(o), "bold") if lead else words(o)), soft_wrap=True)
    for line in bundle_lines(data):  # two bundles: each setting and file that differs beside the ctx-bins
        console.print(text("  ", line), soft_wrap=True)
    return True


def swapped(data: dict, say: bool = False) -> bool:
    """The reference looks like the broken build: no fix is given (it would break the good build), and
    with `say` the view starts with why, before anything a reader would act on."""
    why = data.get("reference_looks_wrong")
    if why and say:  # a sentence, wrapped; the command that gives the two in order, whole
        prose, command = why.split(": q9diff ", 1) if ": q9diff " in why else (why, None)
        tail = (": ", whole("q9diff " + command)) if command else ()
        console.print(text(("Arguments swapped? ", "bold red"), prose, *tail))
        console.print(text("No fix is shown: the fix would make the known-good build like the broken one."))
    return bool(why)


def print_set(sd, data: dict, verbose: bool = False) -> None:
    """The set's verdict, its sizes part by part, its causes and one fix when every part needs the same;
    with `verbose` each part's own report between the causes and the fix."""
    n_a, n_b = len(sd.pairs) + len(sd.unpaired_a), len(sd.pairs) + len(sd.unpaired_b)
    print_refusal(data.get("load"))  # the answer to --runtime / --target first, where it refuses
    swapped(data, say=True)
    if _outside(data, lead=True):
        return
    if sd.identical:
        console.print(f"Identical: no difference in any byte of the {n_a} parts.")
        return
    lead = models_line(data.get("different_models", {}).get("evidence"))
    if lead:
        console.print(text((lead, "bold")))
    console.print(text((headline(data["causes"], lead, over_set=True), "bold")))
    for w in warnings(data["causes"], refused(data.get("load"))):
        console.print(text((w, "bold red")))
    _outside(data)
    console.print(f"set: {n_a} vs {n_b} parts, {sizes(data['a_total'], data['b_total'])}")
    for pa, pb, r in sd.pairs:
        name = pa.name if pa.name == pb.name else f"{pa.name} vs {pb.name}"
        console.print(text(f"  {name}: ", sizes(r.a.size, r.b.size) if not r.identical else "identical"))
    for p in sd.unpaired_a + sd.unpaired_b:
        console.print(text(("  unpaired part", "red"), f": {p}"))
    _set_causes(sd, data)
    # The same settings and values in every part: one fix, its per-graph lines naming every part's graphs.
    parts = [[(s["setting"], s["value"]) for s in part["suggestions"]] for part in data["parts"]]
    agree = all(s == parts[0] for s in parts)
    if verbose:
        for pa, pb, r in sd.pairs:
            console.rule(text(f"{pa.name} vs {pb.name}"))
            print_diff(r, True, refused(data.get("load")))
            if not agree and not swapped(data):
                print_fix(r.suggestions, f"Fix for {pa.name}", data, verbose)
    if swapped(data):
        pass
    elif _soc_set_fix(data):
        pass
    elif agree:
        heading = "Fix (the same for every part)" if len(parts) > 1 else "Fix"
        print_fix(data["suggestions"], heading, data, verbose)
    elif not verbose:
        console.print(text(("Fix: the parts need different changes, each its own", "bold")))
        for (pa, _, _r), part in zip(sd.pairs, data["parts"]):
            if part["suggestions"]:
                print_fix(part["suggestions"], f"Fix for {pa.name}", data)
    print_more(verbose, data)


def _soc_set_fix(data: dict) -> bool:
    """The fix of two multi-SoC DLCs built for different SoCs, in place of the parts' (fixes.soc_set_fix)."""
    from q9diff.present import fixes  # start-up: present.fixes

    found = fixes.soc_set_fix(data)
    if found is not None:
        print_soc_set(found, "Fix: ")
    return found is not None


def _set_causes(sd, data: dict) -> None:
    """The set's root causes with the parts they are found in, and the names of their effects."""
    names = [part["part"] for part in data["parts"]]
    parts_of: dict[str, list[str]] = {}  # each part cause, by what it says, to the parts saying it
    for p in data["parts"]:
        for key in dict.fromkeys(_key(x) for x in p["causes"]):
            parts_of.setdefault(key, []).append(p["part"])
    console.print(text(("causes", "bold")))
    for c in data["causes"]:
        if c["role"] != "root":
            continue
        found = parts_of.get(_key(c), [])
        where = "" if c["name"] in ("split", "soc_set") or found == names else f" (in {', '.join(found)})"
        console.print(text("  ", (c["name"], "bold"), f" (root): {change(c).split(' ', 1)[1]}{where}"))
    effects = list(dict.fromkeys(label(c) for c in data["causes"] if c["role"] != "root"))
    if effects:
        console.print(text(f"  effects: {', '.join(effects)}"))


def _key(c: dict) -> str:
    """What a cause says (its name and both values), as a key: comparing every set cause with every part
    cause was causes x parts x part causes of work on a saved result."""
    return json.dumps([c["name"], c.get("option"), c["a"], c["b"]], sort_keys=True, default=str)


def print_diff(res, verbose: bool = False, refused: bool = False) -> None:
    """One pair's verdict, size and causes; `verbose` adds evidence, the attribution and region tables.
    `refused`: the runtime or device named refuses the build (the generic-SoC warning says so)."""
    from q9diff.compare.models import NOT_MEANINGFUL  # start-up: compare.models

    a, b = res.a, res.b
    if res.identical:
        console.print("Identical: no difference in any byte.")
        return
    lead = models_line(res.different_models)
    if lead:
        console.print(text((lead, "bold")))
    console.print(text((headline(res.causes, lead), "bold")))
    for w in warnings(res.causes, refused):
        console.print(text((w, "bold red")))
    console.print(f"size: {sizes(a.size, b.size)}")
    from q9diff.compare.diff import to_json  # start-up: compare.diff, numpy, construct

    data = to_json(res)  # computed while both files were mapped (a set releases them once compared)
    for side, key in (("candidate ", "a"), ("reference ", "b")):
        print_packing(side, data[key].get("packing"))
    _print_causes(res.causes, verbose)
    if verbose and not res.structure.get("same", True):
        console.print(
            text(("structure", "bold"), " (what the graphs hold and compute in, candidate → reference)")
        )
        for line in res.structure["words"]:
            console.print(text(f"  - {line}"))
    for u in res.unknown:  # what neither a cause nor a fix may come from: said, not guessed
        console.print(text(("not compared", "bold"), f" {u['setting']}: {u['why']}"))
    if res.weights_verdict:
        console.print(text((res.weights_verdict, "bold")))
    if lead:  # bytes of two models' builds: no setting explains them
        line = f"byte attribution: {NOT_MEANINGFUL} (`q9diff inspect` maps each file's own bytes)"
        console.print(text(line))
        if verbose:
            _print_regions(res)
        return
    if verbose:
        _print_attribution(res)
        _print_regions(res)


def _print_regions(res) -> None:
    """Every changed region of both files (bloaty-style: the rows add up to the totals), in bytes."""
    from rich.table import Table

    from q9diff.compare.attribution import estimate_note  # start-up: compare.attribution, numpy

    a, b = res.a, res.b
    graphs = [g.name for g in a.graphs]
    if any(r["name"].startswith("PICKLE[") for r in res.regions if r["delta"] or r["changed_bytes"]):
        named = ", ".join(f"PICKLE[{i}] is graph {n}" for i, n in enumerate(graphs))
        console.print(text(f"regions that changed (every byte of both files; {named}):"))
    else:
        console.print("regions that changed (every byte of both files):")
    rt = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, header_style="bold")
    for col in ("region", "candidate", "reference", "delta", "changed", "moved", "new"):
        left = col == "region"
        rt.add_column(col, justify="left" if left else "right", no_wrap=not left, overflow="fold")
    part = None
    for r in res.regions:
        if not (r["delta"] or r["changed_bytes"]):
            continue
        # One heading per graph's pickle: `PICKLE[0]/inner/op_list` shows as `  inner/op_list` below
        # `PICKLE[0]`, so the names fit 80 columns whole.
        head, _, rest = r["name"].partition("/")
        if head.startswith("PICKLE[") and rest:
            if head != part:
                rt.add_row(text(head))
            part, name = head, "  " + rest
        else:
            part, name = None, r["name"]
        about = "~" if "moved_estimate" in r else ""
        rt.add_row(
            text(name),
            str(r["a_size"]),
            str(r["b_size"]),
            f"{r['delta']:+d}",
            str(r["changed_bytes"]),
            f"{about}{r['moved_bytes']}",
            f"{about}{r['new_bytes']}",
        )
    about = "~" if estimate_note(res.regions) else ""
    rt.add_row(
        "total",
        str(a.size),
        str(b.size),
        f"{b.size - a.size:+d}",
        str(sum(r["changed_bytes"] for r in res.regions)),
        f"{about}{sum(r['moved_bytes'] for r in res.regions)}",
        f"{about}{sum(r['new_bytes'] for r in res.regions)}",
        end_section=False,
    )
    console.print(rt)
    if about:
        console.print(text(estimate_note(res.regions)))


def _print_attribution(res) -> None:
    """Every changed byte and byte of size delta in one row; the rows add up to the totals."""
    from rich.table import Table

    at = Table(title="where the changed bytes went (rows add up)")
    for col in ("effect", "changed bytes", "size delta"):
        at.add_column(col, justify="left" if col == "effect" else "right")
    for row in res.attribution:
        about = "~" if row.get("estimated") else ""
        at.add_row(text(row["bucket"]), f"{about}{row['changed_bytes']:,d}", f"{row['size_delta']:+,d}")
    at.add_row(
        "total",
        f"{sum(r['changed_bytes'] for r in res.attribution):,d}",
        f"{sum(r['size_delta'] for r in res.attribution):+,d}",
    )
    console.print(at)


def _cause_values(c) -> tuple[str, str]:
    if c.name == "compiler_options":  # a and b: each side's value of every option that differs
        return f"{len(set(c.a) | set(c.b))} options differ", ""
    return _cell(value(c.name, c.a)), _cell(value(c.name, c.b))


def _row_bytes(c) -> str:
    """An effect's two numbers, named as the attribution table names them (one number, one name)."""
    from q9diff.compare.rules import EFFECT_BUCKETS  # start-up: compare.rules

    if c.size_delta is None:
        return f"{c.bytes:,d} bytes"
    row = EFFECT_BUCKETS.get(c.name, c.name)
    return f"{row} row: {c.bytes:,d} changed bytes, {c.size_delta:+,d} size delta"


def _print_causes(causes, verbose: bool = False) -> None:
    """Each cause on a line; `verbose` adds its evidence: below it, wrapped at word boundaries, on a
    narrow terminal, in a table's column on a wide one."""
    import textwrap

    from rich.table import Table

    if not verbose or console.width < 120:
        console.print(text(("causes", "bold")))
        for c in causes:
            ca, cb = _cause_values(c)
            change = ca if c.name == "compiler_options" else f"{ca} → {cb}"
            console.print(text("  ", (label(c), "bold"), f" ({role(c)}): {change}"))
            if c.bytes is not None:
                console.print(text(f"      {_row_bytes(c)}"))
            if not verbose:
                continue
            evidence = clip("; ".join(c.evidence), 400)
            for line in textwrap.wrap(
                evidence, console.width - 6, break_long_words=False, break_on_hyphens=False
            ):
                console.print(text(f"      {line}"), soft_wrap=True)
        return
    t = Table(title="causes")
    t.add_column("cause", no_wrap=True)
    t.add_column("role", no_wrap=True)
    t.add_column("candidate", overflow="fold")
    t.add_column("reference", overflow="fold")
    t.add_column("changed bytes", justify="right", no_wrap=True)
    t.add_column("size delta", justify="right", no_wrap=True)
    t.add_column("evidence", ratio=1)
    for c in causes:
        ca, cb = _cause_values(c)
        changed = "" if c.bytes is None else f"{c.bytes:,d}"
        delta = "" if c.size_delta is None else f"{c.size_delta:+,d}"
        evidence = text(clip("; ".join(c.evidence), 400))
        t.add_row(text(label(c)), text(role(c)), text(ca), text(cb), changed, delta, evidence)
    console.print(t)


def _cell(v) -> str:
    s = str(v)
    return s if len(s) <= 30 else s[:29] + "…"
