"""The checks of `q9diff doctor` that say whether each ctx-bin will load on the runtime (`--runtime`, or
the libraries the bundle ships) and the device (`--target`): the rows of q9diff.load.rules, each finding a
Hit of its own severity (will not load: error; loads, recompile advised: warning), and a Note per part
that loads, saying on what and how that is known."""

from __future__ import annotations

from collections.abc import Iterator

from q9diff.doctor.checks import Context, Hit, Note, parts_text
from q9diff.load.rules import DEVICE, RUNTIME, WILL_NOT_LOAD, judge

SEVERITY = {WILL_NOT_LOAD: "error"}  # anything else that fires: a warning
# Device rules another doctor check already reports under --target (the same fact, one finding): said in
# the part's note by the check that reports it.
SAID_BY = {
    "load.vtcm": "target.vtcm-limit",
    "load.vtcm-other": "build.vtcm",
    "load.soc": "build.soc_model / target.other",
    "load.arch-other": "target.other",
}


def _verdicts(ctx: Context, needs: str):
    for p in ctx.bundle.readable_parts():
        v = judge(p.binary, p.label, ctx.runtime if needs == RUNTIME else None,
                  ctx.target if needs == DEVICE else None)  # fmt: skip
        yield p, v


def _items(ctx: Context, needs: str) -> Iterator[Hit | Note]:
    """One doctor item per load finding, the parts it holds for named together (the check id is the load
    rule's); one note for the parts that load, saying on what and what was not judged."""
    total = len(ctx.bundle.parts)
    found: dict[tuple, list] = {}
    loading, unread = [], {}
    also: dict[tuple[str, str], list] = {}
    for p, v in _verdicts(ctx, needs):
        for f in v.findings:
            if needs == DEVICE and f.rule in SAID_BY:
                also.setdefault((f.verdict, SAID_BY[f.rule]), []).append(p)
                continue
            found.setdefault((f.rule, f.verdict, f.evidence, f.error, f.fix, f.emulator), []).append(p)
        if not v.findings:
            loading.append(p)
        for why in v.not_judged:
            unread.setdefault(why, []).append(p)
    for (rule, verdict, evidence, error, fix, emulator), parts in found.items():
        said = f"; it prints {error}" if error else ""
        shown = "" if emulator else " (a device shows it, not the x86 emulator)"
        where = f"{ctx.bundle.name}: {parts_text(parts, total)}"
        yield Hit(where, f"{verdict}: {evidence}{said}{shown}", fix, SEVERITY.get(verdict, "warning"), rule)
    on = ctx.runtime.label if needs == RUNTIME else ctx.target.name
    for (verdict, check), parts in also.items():
        yield Note(
            f"{ctx.bundle.name}: {parts_text(parts, total)}", f"{verdict} on {on}: as {check} says", False
        )
    if loading:
        what = ""
        if needs == RUNTIME and ctx.runtime.backend_api:
            what = (
                f" (it loads binaries of backend API {'.'.join(map(str, ctx.runtime.backend_api))} or older)"
            )
        yield Note(f"{ctx.bundle.name}: {parts_text(loading, total)}", f"loads on {on}{what}")
    for why, parts in unread.items():
        yield Note(f"{ctx.bundle.name}: {parts_text(parts, total)}", f"not judged: {why}", False)


def check_runtime(ctx: Context) -> Iterator[Hit | Note]:
    yield from _items(ctx, RUNTIME)


def check_device(ctx: Context) -> Iterator[Hit | Note]:
    yield from _items(ctx, DEVICE)
