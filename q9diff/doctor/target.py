"""The checks of `q9diff doctor --target DEVICE`: the build settings judged against the device and what
AI Hub's builds for it use (q9diff.compare.target), where no reference is given; the extension file
("the two places") against the device; a reference built for another device. With a reference, the
build.* rules compare with it as before (q9diff.doctor.reference); these wrappers choose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from q9diff.doctor import reference as r
from q9diff.doctor.checks import Context, Hit, Note, as_int, js, mib, parts_text
from q9diff.doctor.places import ext_devices, ext_soc, ext_where
from q9diff.genie.bundle import CtxBin
from q9diff.read.tables import soc_name


def _judged(ctx: Context, names: tuple[str, ...]) -> Iterator[Hit]:
    """The target's causes named `names`, one Hit per distinct change over the parts, with its fix."""
    seen: dict[tuple, list[CtxBin]] = {}
    info: dict[tuple, tuple] = {}
    for p, res in ctx.judged:
        fixes = {s["setting"]: s for s in res.suggestions}
        for c in res.causes:
            if c.name in names:
                key = (c.name, json.dumps(c.a, default=str), json.dumps(c.b, default=str))
                seen.setdefault(key, []).append(p)
                info[key] = (c, [*info.get(key, (c, []))[1], *([fixes[c.name]] if c.name in fixes else [])])
    total = len(ctx.bundle.parts)
    for key, parts in seen.items():
        c, s = info[key][0], r.one_fix(info[key][1])
        a, b = (mib(c.a), mib(c.b)) if c.name == "vtcm_size" and isinstance(c.a, int) else (c.a, c.b)
        evidence = f"{c.name} {a} → {b} for the target {ctx.target.name}: {'; '.join(c.evidence)}"
        fix = (
            r.suggestion_fix(s, r.parts_short(parts, total), ctx.bundle)
            if s
            else f"rebuild with {c.name} {c.b}"
        )
        yield Hit(parts_text(parts, total), evidence, fix)


def _settled(ctx: Context, word: str) -> Iterator[Note]:
    found = sorted({s for _, res in ctx.judged for s in res.settled if word in s})
    unknown = sorted({u for _, res in ctx.judged for u in res.unknown if word in u})
    for s in found:
        yield Note(ctx.bundle.name, f"as the target {ctx.target.name}: {s}")
    for u in unknown:
        yield Note(ctx.bundle.name, f"unknown: {u}", False)


def _only_target(ctx: Context) -> bool:
    return ctx.target is not None and ctx.reference is None


def _against_target(reference_check, causes: tuple[str, ...], *settled: str):
    """A check that, with --target and no reference, judges `causes` against the device (and says what
    is settled, by the words of its `settled` notes); with a reference it is `reference_check`."""

    def check(ctx: Context) -> Iterator[Hit | Note]:
        if not _only_target(ctx):
            yield from reference_check(ctx)
            return
        hits = list(_judged(ctx, causes))
        yield from hits
        if not hits:
            for word in settled:
                yield from _settled(ctx, word)

    return check


check_soc = _against_target(r.check_soc, ("soc_model",), "soc_model")
check_vtcm = _against_target(r.check_vtcm, ("vtcm_size",), "VTCM", "vtcm")
check_packing = _against_target(r.check_packing, ("weights_packing", "native_hmx_a16w4"), "pack")
check_optimization = _against_target(r.check_optimization, ("optimization_level",), "optimization")


def check_other(ctx: Context) -> Iterator[Hit | Note]:
    """dsp_arch and weight sharing against the target (without a reference, build.other cannot run)."""
    hits = list(_judged(ctx, ("dsp_arch", "weight_sharing")))
    yield from hits
    if not hits:
        yield from _settled(ctx, "dsp_arch")
        yield from _settled(ctx, "weight")


def check_vtcm_limit(ctx: Context) -> Iterator[Hit | Note]:
    """A build asking for more VTCM than the device has: the compiler records it without a word."""
    over: dict[str, list[CtxBin]] = {}
    for p, res in ctx.judged:
        for e in res.errors:
            over.setdefault(e, []).append(p)
    for e, parts in over.items():
        mb = ctx.target.vtcm_mb
        fix = f"recompile with vtcm_mb {mb} (graphs[].vtcm_mb, qairt HtpGraphConfig(vtcm_size_in_mb={mb}))"
        yield Hit(parts_text(parts, len(ctx.bundle.parts)), e, fix)
    if not over and ctx.target.vtcm_mb:
        yield Note(
            ctx.bundle.name,
            f"no graph asks for more than {ctx.target.name}'s {ctx.target.vtcm_mb} MiB of VTCM",
        )


def check_reference(ctx: Context) -> Iterator[Hit | Note]:
    """With --target and --reference: a reference built for another device is no reference for it."""
    from q9diff.compare.target import reference_finding  # start-up: compare.target, numpy

    found = [f for q in ctx.reference.readable_parts() if (f := reference_finding(q.binary, ctx.target))]
    for f in dict.fromkeys(found):
        yield Hit(ctx.reference.name, f, f"use a reference built for {ctx.target.name}, or name its device")
    if not found:
        yield Note(ctx.reference.name, f"the reference is a build for {ctx.target.name}")


def check_two_places(ctx: Context) -> Iterator[Hit | Note]:
    """The device-side extension file against the target: soc_model and dsp_arch as the device's."""
    b, t = ctx.bundle, ctx.target
    devices = ext_devices(b)
    if b.extension_doc is None or not devices:
        return
    key, value = ext_soc(devices[0])
    where = ext_where(b, f"devices[0].{key}")
    if as_int(value) is not None and not t.accepts(value):
        yield Hit(
            where,
            f"{key} {js(value)} ({soc_name(as_int(value))}) at run time; the target {t.name} is soc_model "
            f"{t.soc_model}",
            f"set devices[0].{key} to {t.soc_model} in {b.extension.path.name} (and build for it)",
        )
    arch = devices[0].get("dsp_arch")
    if t.dsp_arch and isinstance(arch, str) and arch != f"v{t.dsp_arch}":
        yield Hit(
            ext_where(b, "devices[0].dsp_arch"),
            f"dsp_arch {js(arch)} at run time; the target {t.name} is v{t.dsp_arch}",
            f'set devices[0].dsp_arch to "v{t.dsp_arch}" in {b.extension.path.name}',
        )
    if t.accepts(as_int(value)) and (not t.dsp_arch or arch == f"v{t.dsp_arch}"):
        yield Note(where, f"{key} {value}, dsp_arch {arch}: the target {t.name}'s")
