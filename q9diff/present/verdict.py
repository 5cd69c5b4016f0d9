"""The sentences every presenter leads with (terminal, HTML), read from the causes of a diff.

Causes are taken as `to_json` gives them (dicts) or as `diff.Cause` objects; nothing here imports the
diff engine, so the command line can use it without loading numpy or deepdiff.
"""

from __future__ import annotations

from pathlib import Path

from q9diff.read.generic import UNTOLD
from q9diff.read.inprocess import STATE
from q9diff.read.tables import soc_name
from q9diff.units import nbytes, value

GENERIC_SOC = (
    "The candidate targets a generic SoC (soc_model 0): it loads without error and can still compute"
    " garbage on the device. Set soc_model."
)
# Where the runtime or device named refuses the build, nothing may say it loads: only what the generic
# target costs once it does.
GENERIC_SOC_REFUSED = (
    "The candidate also targets a generic SoC (soc_model 0): where it loads, it can still compute garbage"
    " on the device. Set soc_model."
)


def generic_soc(to: int | None = None, refused: bool = False) -> str:
    """The generic-SoC warning, with the soc_model to set where it is known (the reference's, the
    target's); `refused`: the runtime or device named refuses the build, so it does not say it loads."""
    said = GENERIC_SOC_REFUSED if refused else GENERIC_SOC
    if to is None or to == 0:
        return said
    return said.removesuffix("Set soc_model.") + f"Set soc_model {to} ({soc_name(to)})."


def target_words(t: dict, dsp_arch: int | None) -> str:
    """What a build was made for (an inspect `target`): `soc_model 0 (generic target), dsp_arch v75`, or
    the recorded socModel where what was asked is not known; the evidence follows in each presenter."""
    req, rec = t["soc_model_requested"], t.get("soc_model_recorded")
    arch = f"dsp_arch v{dsp_arch}" if dsp_arch else "dsp_arch not recorded"
    if req == 0:
        return f"soc_model 0 (generic target), {arch}{' recorded' if dsp_arch else ''}"
    if req is not None:
        return f"soc_model {req} ({soc_name(req)}), {arch}"
    if rec is not None:
        return f"socModel {rec} ({soc_name(rec)}) recorded, {arch}; what the build asked for is not known"
    return f"soc_model not recorded, {arch}"


def _get(cause, key: str):
    return cause[key] if isinstance(cause, dict) else getattr(cause, key)


def roots(causes) -> list:
    return [c for c in causes if _get(c, "role") == "root"]


def ranked(causes) -> list:
    """The root causes, what decides correctness first, then accuracy, the model, loading, speed, size
    (q9diff.compare.rules.MATTERS); the diff's order within each."""
    from q9diff.compare.rules import MATTERS, MATTERS_ORDER  # start-up: compare.rules

    rank = {m: i for i, m in enumerate(MATTERS_ORDER)}
    found = roots(causes)
    return sorted(found, key=lambda c: rank.get(MATTERS.get(_get(c, "name"), ""), len(rank)))


def matters(cause) -> str:
    """What a root cause decides on the device: correctness, speed, size ... ('' where unsaid)."""
    from q9diff.compare.rules import MATTERS  # start-up: compare.rules

    return MATTERS.get(_get(cause, "name"), "")


def root_line(causes) -> str:
    """`soc_model 0 → 77 (correctness), vtcm_size 4 MiB → 8 MiB (speed)`, what decides correctness
    first, or '' when no setting differs (units.value)."""
    return ", ".join(change(c) + (f" ({matters(c)})" if matters(c) else "") for c in ranked(causes))


MAX_VALUE = 120  # characters of a value in a verdict line (a shape of 70,000 dims is not a line)


def change(cause) -> str:
    """`vtcm_size 4 MiB → 8 MiB`: a cause's name and both values in the units a person reads, each cut to
    MAX_VALUE characters (--json has them whole)."""
    name = _get(cause, "name")
    a, b = (str(value(name, _get(cause, side))) for side in ("a", "b"))
    return f"{name} {_cut(a)} → {_cut(b)}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def label(cause) -> str:
    """A cause's name as presenters show it: `compiler option relaxed_precision_flag` for an option that
    differs with no known cause, else its name."""
    option = cause.get("option") if isinstance(cause, dict) else getattr(cause, "option", None)
    return f"compiler option {option}" if option else _get(cause, "name")


def role(cause) -> str:
    """root, effect, model, or `cause not known` for a difference no setting q9diff reads explains."""
    r = _get(cause, "role")
    return "cause not known" if r == "unexplained" else r


def carried(causes) -> list:
    """Compiler options that differ as the state an earlier compile in the same process left (measured)."""
    return [c for c in causes if _get(c, "name") == "compiler_option" and _get(c, "role") == "effect"
            and any(STATE in e for e in _get(c, "evidence") or ())]  # fmt: skip


def unexplained(causes) -> list:
    return [c for c in causes if _get(c, "role") == "unexplained"]


def headline(causes, models: str = "", over_set: bool = False) -> str:
    """The first line: the root causes, ranked; where no setting q9diff reads differs, what differs with no
    known cause (never "no setting differs" while compiler options do); else only effects or data."""
    line, note = root_line(causes), soc_note(causes)
    if line:
        head = ("Settings that differ" if models else "Root causes") if over_set else (
            "Settings that differ" if models else "Root cause")  # fmt: skip
        state = carried(causes)  # e.g. fp16 where a float graph was compiled after an explicit-SoC build
        shown = ", ".join(f"{label(c)} {_plain(c, 'a')} → {_plain(c, 'b')}" for c in state[:3])
        moved = f"; {STATE} moved {shown}" if state else ""
        return f"{head}{' over the set' if over_set else ''}: {line}" + (f" ({note})" if note else "") + moved
    loose, state = unexplained(causes), carried(causes)
    effects = [c for c in causes if _get(c, "name") == "compiler_option" and _get(c, "role") == "effect"]
    untold = any(UNTOLD in e for c in effects for e in _get(c, "evidence") or ())
    if state and not loose:
        shown = ", ".join(f"{label(c)} {_plain(c, 'a')} → {_plain(c, 'b')}" for c in state[:3])
        also = "; whether soc_model differs cannot be told (see not compared)" if untold else ""
        return f"No setting q9diff reads differs; {STATE} moves {shown} (measured){also}"
    if untold and not loose:
        shown = ", ".join(f"{label(c)} {_plain(c, 'a')} → {_plain(c, 'b')}" for c in effects[:3])
        head = "Whether soc_model differs cannot be told (see not compared)"
        return f"{head}; options that follow it differ: {shown}"
    if loose:
        shown = ", ".join(f"{label(c)} {_plain(c, 'a')} → {_plain(c, 'b')}" for c in loose[:3])
        more = f" and {len(loose) - 3} more" if len(loose) > 3 else ""
        return f"No setting q9diff reads differs, but these differ with no known cause: {shown}{more}"
    return "No setting differs." if models else "No setting differs; only effects or data."


def _plain(cause, side: str) -> str:
    v = _get(cause, side)
    return "(not written)" if v is None else str(v) if not isinstance(v, list) else " / ".join(map(str, v))


def soc_note(causes) -> str:
    """`compiled for SM8550; reference for QCS9100 / QCS9075`: what the soc_model numbers are ('' for a
    generic candidate, which the warning says in full)."""
    soc = next((c for c in roots(causes) if _get(c, "name") == "soc_model"), None)
    if soc is None or _get(soc, "a") == 0:
        return ""
    return f"compiled for {soc_name(_get(soc, 'a'))}; reference for {soc_name(_get(soc, 'b'))}"


def warnings(causes, refused: bool = False) -> list[str]:
    """What a user must read before anything else: a generic-SoC candidate computes garbage silently.
    `refused`: a load verdict refuses the build (the warning then does not say it loads)."""
    soc = next((c for c in roots(causes) if _get(c, "name") == "soc_model" and _get(c, "a") == 0), None)
    if soc is not None:
        to = _get(soc, "b")
        return [generic_soc(to if isinstance(to, int) else None, refused)]
    return []


def undecided(parts) -> bool:
    """Whether a side records a SoC whose ask cannot be told (a generic build's stand-in, maybe): such a
    side may be the generic one, so it is no evidence that the other looks broken beside it."""
    return any(p["target"]["generic_target"] is None and p["target"]["soc_model_recorded"] for p in parts)


def doubts(parts) -> list[str]:
    """Why one side's build looks broken, from what its files record. `parts` are that side's files as
    inspect JSON (`target`, `dsp_arch`): one for a file, several for a set of parts. A value a file
    does not record (None) is no evidence either way."""
    out = []
    wanted = [p["target"]["soc_model_requested"] for p in parts]
    if 0 in wanted:
        out.append("targets a generic SoC (soc_model 0)")
    socs = sorted({w for w in wanted if w})
    if len(socs) > 1:
        out.append(
            "has parts built for different SoCs (" + ", ".join(f"{s} {soc_name(s)}" for s in socs) + ")"
        )
    archs = sorted({p["dsp_arch"] for p in parts if p["dsp_arch"] is not None})
    if len(archs) > 1:
        out.append("has parts built for different archs (" + ", ".join(f"v{a}" for a in archs) + ")")
    return out


def sides(data: dict) -> tuple[list[dict], list[dict]]:
    """The candidate's and the reference's files in a diff's JSON (`q9diff.diff/1` or a set's)."""
    pairs = [(p["a"], p["b"]) for p in data.get("parts", [])] or [(data["a"], data["b"])]
    return [a for a, _ in pairs], [b for _, b in pairs]


def reference_looks_wrong(causes, candidate=(), reference=()) -> str | None:
    """Why the REFERENCE looks like the broken build (the arguments swapped), or None.

    The reference is meant to be the known-good build. It looks like the broken one when it is
    built for the generic SoC (soc_model 0) against a candidate built for a real one, the bug itself
    on the wrong side; or when it (its files, as inspect JSON in `reference`) shows a sign of a broken
    build that the candidate does not: a generic target, or parts built for different SoCs or archs."""
    for c in roots(causes):
        a, b = _get(c, "a"), _get(c, "b")
        if _get(c, "name") == "soc_model" and b == 0 and isinstance(a, int) and a != 0:
            return (
                f"the reference targets a generic SoC (soc_model 0) and the candidate soc_model {a}"
                f" ({soc_name(a)}): the reference looks like the broken build"
            )
    ref = doubts(reference) if reference else []
    if ref and candidate and not doubts(candidate) and not undecided(candidate):
        return (
            f"the reference {' and '.join(ref)} and the candidate does not:"
            " the reference looks like the broken build"
        )
    return None


def swap_advice(candidate, reference, causes, command: str, sides) -> str | None:
    """A sentence when the reference looks like the broken build, with the line that gives the two in
    the other order (`command`: the q9diff command before the paths, "" for the main form). `sides`: the
    candidate's and the reference's files as inspect JSON, or as ContextBinary."""

    def facts(x) -> dict:
        if isinstance(x, dict):
            return x
        from q9diff.compare.summary import target  # start-up: compare.summary, construct

        return {"target": target(x), "dsp_arch": x.dsp_arch}

    cands, refs = ([facts(x) for x in side] for side in sides)
    why = reference_looks_wrong(causes, cands, refs)
    if why is None:
        return None
    from shlex import quote  # a line to copy: a path with a space or a ; stays one argument

    swapped = f"{quote(str(reference))} {quote(str(candidate))}"
    return f"{why}; the known-good build comes second: q9diff {command}{swapped}"


def models_line(evidence) -> str:
    """The first line of every report on builds of different models; '' for one model's builds."""
    if not evidence:
        return ""
    return (
        f"Builds of different models: {'; '.join(evidence)}. Their settings are compared; sizes and byte "
        "attribution between them are not meaningful."
    )


def load_rows(load: dict) -> tuple[str, list[tuple[str, str, str, str | None, str | None]]]:
    """Will it load, for every presenter: the heading (`Will it load on QCS9100 and QAIRT 2.48: will not
    load`) and each finding once with the parts it holds for: (rule, parts, verdict: evidence, error,
    fix)."""
    on = load_on(load)
    rows: dict[tuple, list[str]] = {}
    for part in load["parts"]:
        for f in part["findings"]:
            key = (f["rule"], f["verdict"], f["evidence"], f["error"], f["fix"])
            rows.setdefault(key, []).append(part["part"])
    total = len(load["parts"])
    out = []
    for (rule, verdict, evidence, error, fix), parts in rows.items():
        which = f"all {total} parts" if len(parts) == total > 1 else ", ".join(parts)
        out.append((rule, which, f"{verdict}: {evidence}", error, fix))
    return f"Will it load on {on}: {load['verdict']}", out


WONT = "will not load: "  # how a refusing row of load_rows begins


def refused(load: dict | None) -> bool:
    """A part will not load on the runtime or device named (a diff's or a target's `load`): the answer
    asked for, which every presenter then says first."""
    return bool(load) and load["verdict"] == "will not load"


def refusal(load: dict) -> tuple[str, list[tuple[str, str, str, str | None, str | None]]]:
    """What a refused build's report leads with, in doctor's words: `Will not load on QAIRT 2.48` and the
    rows of load_rows that refuse it (the rest of the load section stays where it is)."""
    _, rows = load_rows(load)
    return f"Will not load on {load_on(load)}", [r for r in rows if r[2].startswith(WONT)]


def load_on(load: dict) -> str:
    """What a load verdict was asked for: `SM8650 and QAIRT 2.48`."""
    runtime = f"QAIRT {load['runtime']['qairt']}" if load.get("runtime") else None
    return " and ".join(x for x in (load.get("device"), runtime) if x)


def counted(n: int, word: str) -> str:
    """`1 error`, `2 errors`, `no warning`: a count as a sentence says it."""
    return f"no {word}" if n == 0 else f"{n} {word}" + ("" if n == 1 else "s")


def doctor_on(result) -> str:
    """What doctor was asked to judge the bundle for: `QCS9100 and QAIRT 2.48`, '' when nothing named."""
    device = result.target["name"] if result.target else None
    runtime = f"QAIRT {result.runtime['qairt']}" if result.runtime else None
    return " and ".join(x for x in (device, runtime) if x)


def doctor_headline(result) -> tuple[str, str]:
    """doctor's verdict, the first thing every view of it says, and its class (`error`, `warning`, `ok`):
    `Will not load on QAIRT 2.48: 1 error` where a load check refused a part; `Not ready: ...` for other
    errors; `Loads on ...` or `No error` otherwise. `result`: a DoctorResult."""
    errors = [f for f in result.findings if f.severity == "error" and not f.ruled_out]
    e, w = len(errors), result.count("warning")
    counts = counted(e, "error") + (f", {counted(w, 'warning')}" if w or not e else "")
    on = doctor_on(result)
    refused = any(f.check.startswith("load.") for f in errors)
    if refused:
        return f"Will not load on {on}: {counts}", "error"
    if e:
        return f"Not ready: {counts}", "error"
    judged = result.runtime is not None or result.target is not None
    head = f"Loads on {on}" if judged else "No error"
    return (f"{head}: {counts}" if judged else f"{head}, {counted(w, 'warning')}"), "warning" if w else "ok"


def doctor_asked(result) -> str:
    """What the verdict is about, and what was not named: `fixtures/.../genie_config.json for QAIRT 2.48,
    no device named (--target DEVICE); 25 checks passed`. `result`: a DoctorResult."""
    said = result.bundle + (f" against the reference {result.reference}" if result.reference else "")
    on = doctor_on(result)
    unnamed = [
        what
        for what, named in (
            ("no device named (--target DEVICE)", result.target),
            ("no runtime named (--runtime VERSION)", result.runtime),
        )
        if named is None
    ]
    passed = sum(1 for f in result.findings if f.ruled_out)
    return ", ".join([said + (f" for {on}" if on else ""), *unnamed]) + f"; {passed} checks passed"


def short_verdict(causes, verb: str = "differ", most: int = 3) -> str:
    """`differ: soc_model 0 → 77, vtcm_size 4 MiB → 8 MiB`: the root causes of a result in a line (a
    repr, a log line), what decides correctness first; the rest counted, not listed."""
    found = ranked(causes)
    if not found:
        return f"{verb}: no setting differs (only effects or data)"
    more = f" and {len(found) - most} more" if len(found) > most else ""
    return f"{verb}: " + ", ".join(change(c) for c in found[:most]) + more


def set_root(data: dict, side: str) -> str:
    """Where a side's parts come from, for the title: the one container file they are contexts of
    (FILE#LABEL), else their folder (the common parent)."""
    paths = [p[side]["path"] for p in data["parts"]] + data[f"unpaired_{side}"]
    files = {p.partition("#")[0] for p in paths if "#" in p}
    if len(files) == 1 and all("#" in p for p in paths):
        return files.pop()
    parents = {p.rpartition("/")[0] or "." for p in paths}
    return parents.pop() if len(parents) == 1 else ", ".join(sorted(parents))


def clip(s: str, n: int) -> str:
    """At most `n` characters, cut at a word boundary with an ellipsis, never mid-word (a table cell, a
    chart's label); `s` itself when it fits."""
    if len(s) <= n:
        return s
    cut = s[: n - 1]
    space = max(cut.rfind(" "), cut.rfind(","))
    return (cut[:space] if space > n // 2 else cut).rstrip(" ,;") + " …"


def outside_headline(o: dict | None, identical: bool) -> str | None:
    """A diff of containers (`outside`, q9diff.compare.outside): the verdict a presenter leads with when
    nothing compared differs: "Identical" where no byte of the
    files differs, else what was compared and what is known of the rest; None when something compared
    differs (the causes lead)."""
    if o is not None and o["contexts_identical"]:
        return outside_words(o)
    return "Identical: no difference in any byte." if identical else None


def outside_words(o: dict) -> str:
    """The sentence every presenter says: what was compared and what is known of the rest."""
    a, b = o["a"], o["b"]
    name_a, name_b = Path(a["path"]).name, Path(b["path"]).name
    of = f"{nbytes(a['compared_bytes'])} of {nbytes(a['size'])} of {name_a}; {nbytes(b['compared_bytes'])}"
    compared = f"{o['compared']} ({of} of {nbytes(b['size'])} of {name_b})"
    if o["contexts_identical"]:
        if o["differs"] is False:
            return "Identical: no difference in any byte."
        if o["differs"] is True:
            return f"The files differ, outside what was compared: {compared} are identical."
        return f"Identical contexts: {compared} are identical; the rest of the files was not compared."
    rest = {
        True: "the files also differ outside them",
        False: "the files are the same outside them",
        None: "the rest of the files was not compared",
    }[o["differs"]]
    return f"Compared {compared}; {rest}."


def bundle_lines(data: dict) -> list[str]:
    """What differs in two Genie bundles beside their ctx-bins (`bundle`, q9diff.compare.bundles), one line
    each: a setting with both values, or a file that differs, is in one bundle only or was not read."""
    b = data.get("bundle")
    if not b:
        return []
    out = [f"{s['file']}: {s['key']} {s['a']} vs {s['b']}" for s in b["settings"]]
    if b.get("settings_left_out"):
        out.append(f"and {b['settings_left_out']} more settings")
    with_settings = {s["file"] for s in b["settings"]}
    out += [f"{f['file']}: {f['why']}" for f in b["files"] if f["file"] not in with_settings]
    return out
