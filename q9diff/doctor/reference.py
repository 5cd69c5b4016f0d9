"""The checks of `q9diff doctor` that compare a bundle with the known-good one (splits, QAIRT build,
I/O encodings, kernels) and the build settings (soc_model, VTCM, weights packing, optimization level):
every root cause `q9diff A B` finds per part, or without a reference the single-binary signs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from q9diff.compare.summary import target
from q9diff.doctor.checks import Context, Hit, Note, mib, parts_text, requested_soc
from q9diff.doctor.places import ext_devices, ext_soc
from q9diff.genie.bundle import Bundle, CtxBin
from q9diff.read.tables import SOCS, soc_name
from q9diff.units import config_value, opt_level


def one_fix(suggestions: list[dict]) -> dict | None:
    """The parts' suggestions of one change as one: a graph setting's qairt line names every part's
    graphs (q9diff.compare.diff.merged_suggestions), not only the last part's."""
    from q9diff.compare.suggestions import merged_suggestions  # start-up: compare.suggestions

    merged = merged_suggestions(suggestions)
    return merged[0] if merged else None


def suggestion_fix(s: dict, parts: str, bundle: Bundle | None = None) -> str:
    """The fix as a line to act on: which parts to rebuild with which setting, and the setting's key in
    the backend extension JSON (the file a bundle ships, which its build reads too), or for an ExecuTorch
    .pte (the bundle given) its compile-spec line where executorch has one; every other toolchain's line
    is `q9diff suggest`'s (q9diff.compare.toolchains)."""
    from q9diff.compare.toolchains import lines  # start-up: compare.toolchains

    value = config_value(s["setting"], s["value"])
    pte = bundle is not None and bundle.single_file and bundle.file.container == ".pte"
    if pte and lines(s, "executorch"):
        return (
            f"recompile {parts} with {s['setting']} = {value} (ExecuTorch: {lines(s, 'executorch')[0]};"
            " q9diff suggest shows qairt, the extension JSON and ONNX Runtime)"
        )
    ext = "; ".join(lines(s, "ext"))
    if pte:  # executorch's compile spec has no argument for this setting: the extension JSON's key
        return (
            f"recompile {parts} with {s['setting']} = {value} (ExecuTorch's compile spec has no argument for"
            f" it; htp_backend_ext_config.json: {ext}; q9diff suggest shows qairt and ONNX Runtime)"
        )
    return (
        f"recompile {parts} with {s['setting']} = {value}"
        f" (htp_backend_ext_config.json: {ext}; q9diff suggest shows qairt, ONNX Runtime and ExecuTorch)"
    )


def _layout(b: Bundle) -> str:
    groups = b.genie_groups()
    ars = ", ".join(f"AR {ar}" for ar, _ in groups)
    return f"{len(b.parts)} ctx-bins, {len(next(iter(groups.values()), []))} splits × {ars}"


def check_split(ctx: Context) -> Iterator[Hit | Note]:
    b, r = ctx.bundle, ctx.reference
    mine, theirs = _layout(b), _layout(r)
    names_b = {g.graph.name for g in b.graphs()}
    names_r = {g.graph.name for g in r.graphs()}
    if mine != theirs:
        yield Hit(b.name, f"{mine}; the reference has {theirs}", "split the model as the reference is split")
    if names_b != names_r:
        only_b, only_r = sorted(names_b - names_r), sorted(names_r - names_b)
        yield Hit(
            b.name,
            f"graph names differ: only here {only_b[:4]}, only in the reference {only_r[:4]}",
            "build the graphs under the reference's names (Genie orders splits by them)",
        )
    if mine == theirs and names_b == names_r:
        yield Note(b.name, f"{mine} and the same {len(names_b)} graph names as the reference")


def check_qairt_reference(ctx: Context) -> Iterator[Hit | Note]:
    mine = sorted({p.binary.build_id for p in ctx.bundle.readable_parts()})
    theirs = sorted({p.binary.build_id for p in ctx.reference.readable_parts()})
    if mine != theirs:
        yield Hit(
            ctx.bundle.name,
            f"QAIRT {mine}; the reference was built with {theirs}",
            f"compile with QAIRT {', '.join(theirs)}, or expect differences from the compiler itself",
        )
    else:
        yield Note(ctx.bundle.name, f"the same QAIRT build as the reference ({', '.join(mine)})")


def _trees(ctx: Context) -> list[tuple[CtxBin, dict, dict]]:
    """Each paired part's structure and the reference's (q9diff.compare.structure.tree, what `q9diff A
    B` compares), graphs paired as the diff pairs them: the three checks below read these."""
    from q9diff.compare.structure import paired, precision, tree  # start-up: compare.structure

    def whole(cb) -> dict:
        return tree(cb, precision(cb))

    return [(p, *paired(whole(p.binary), whole(q.binary))) for p, q in ctx.pairs]


def _io(tree: dict) -> dict[tuple[str, str], dict]:
    return {(g, name): t for g, v in tree["graphs"].items() for side in ("inputs", "outputs")
            for name, t in v[side].items()}  # fmt: skip


def _said(t: dict) -> str:
    q = t.get("encoding")
    return t["dtype"] + (f" scale {q['scale']:.6g} offset {q['offset']}" if q else "")


def check_quant_io(ctx: Context) -> Iterator[Hit | Note]:
    """Hypothesis 7: the I/O tensors' data types and encodings against the reference's, from the
    structure both sides' diff compares."""
    diffs, same, kinds = [], 0, set()
    for p, mine, theirs in _trees(ctx):
        ref = _io(theirs)
        for key, t in _io(mine).items():
            r = ref.get(key)
            if r is None:
                continue
            kinds.add(t["dtype"])
            if (t["dtype"], t["encoding"] is None) == (r["dtype"], r["encoding"] is None):
                same += 1
                continue
            if t["encoding"] is None and r["encoding"] is not None:
                what = "float where the reference is quantized"
            elif r["encoding"] is None and t["encoding"] is not None:
                what = "quantized where the reference is float"
            else:
                what = "another dtype"
            diffs.append((p, f"{key[1]}: {_said(t)}; the reference {_said(r)} ({what})"))
    for p, text in diffs[:6]:
        yield Hit(
            p.label,
            text,
            "quantize the model's I/O as the reference was (--quantize_io / the same encodings) and rebuild",
        )
    if not diffs and same:
        yield Note(
            ctx.bundle.name,
            f"all {same} I/O tensors have the reference's dtypes ({', '.join(sorted(kinds))}), quantized "
            "exactly where the reference's are",
        )


def check_gather(ctx: Context) -> Iterator[Hit | Note]:
    """Hypothesis 4: the embedding lookup's kernel (its name before the `@` layout suffix) carries its
    precision, e.g. `*InputGather2DDMAQuant` in qwen-mini: a Gather whose encodings were dropped would
    differ here. Read from the structure's op kinds."""
    found, kinds, compared = [], set(), 0
    for p, mine, theirs in _trees(ctx):

        def gathers(tree: dict) -> list[str]:
            return sorted(
                {k.split("@")[0] for g in tree["graphs"].values() for k in g["ops"] if "Gather" in k}
            )

        a, b = gathers(mine), gathers(theirs)
        if not a and not b:
            continue
        compared += 1
        kinds |= set(a)
        if a != b:
            found.append(
                Hit(
                    p.label,
                    f"Gather kernels {a}; the reference {b}",
                    "keep the embedding's encodings through conversion (quantization overrides) and rebuild",
                )
            )
    yield from found
    if not found and compared:
        yield Note(
            ctx.bundle.name,
            f"the reference's Gather kernels ({', '.join(sorted(kinds))}) in {compared} part(s); a dropped "
            "encoding would change the kernel or the dtype at the boundary",
        )
    elif not compared:
        yield Note(
            ctx.bundle.name,
            "no Gather kernel in the op lists: a dropped Gather encoding leaves no mark q9diff "
            "can read in a compiled bundle; the converter's quantization encodings file would show it",
            False,
        )


FLOATS = {"float16", "float32"}


def _precision(p: dict) -> str:
    from q9diff.compare.structure import Precision  # start-up: compare.structure

    return Precision(tuple(p["weights"]), tuple(p["activations"]), tuple(p["io"])).words()


def check_float_fallback(ctx: Context) -> Iterator[Hit | Note]:
    """Hypothesis 5: the candidate computes in float where the reference does not: float element types
    among its compiled weights or activations (the structure's precision) that the reference lacks."""
    found, labels = [], set()
    for p, mine, theirs in _trees(ctx):
        pa, pb = mine["precision"], theirs["precision"]
        labels.add(pb["label"])
        extra = sorted(
            (set(pa["weights"]) | set(pa["activations"]))
            & FLOATS - set(pb["weights"]) - set(pb["activations"])
        )
        if extra:
            found.append(
                Hit(
                    p.label,
                    f"computes in {'/'.join(extra)} where the reference does not: {_precision(pa)}; the"
                    f" reference {_precision(pb)}",
                    "find the ops that lost their encodings (the converter's log) and rebuild quantized",
                )
            )
    yield from found
    if not found and ctx.pairs:
        yield Note(
            ctx.bundle.name,
            f"no float weights or activations the reference lacks in all {len(ctx.pairs)} parts (the"
            f" reference is {', '.join(sorted(labels))})",
        )


def parts_short(parts: list[CtxBin], total: int) -> str:
    return f"all {total} parts" if len(parts) == total > 1 else ", ".join(p.label for p in parts)


def _option(p: CtxBin, key: str) -> str:
    values = sorted({p.binary.options(i).get(key, "not recorded") for i in range(len(p.binary.graphs))})
    return "/".join(values)


def _causes(ctx: Context, names: tuple[str, ...]) -> Iterator[Hit]:
    """Root causes `q9diff A B` finds per part against the reference, one Hit per distinct change."""
    seen: dict[tuple, list[CtxBin]] = {}
    info: dict[tuple, tuple] = {}
    pairs = {id(p): q for p, q, _ in ctx.diffs}
    for p, _, res in ctx.diffs:
        sugg = {s["setting"]: s for s in res.suggestions}
        for c in res.causes:
            if c.role == "root" and c.name in names:
                key = (c.name, json.dumps(c.a, default=str), json.dumps(c.b, default=str))
                seen.setdefault(key, []).append(p)
                info[key] = (c, [*info.get(key, (c, []))[1], *([sugg[c.name]] if c.name in sugg else [])])
    for key, parts in seen.items():
        c, s = info[key][0], one_fix(info[key][1])
        a, b = (c.a, c.b) if c.name != "vtcm_size" else (mib(c.a), mib(c.b))
        if c.name == "optimization_level":
            a, b = opt_level(a, _option(parts[0], "O")), opt_level(b, _option(pairs[id(parts[0])], "O"))
        evidence = f"{c.name} {a}; the reference {b}" + (
            f" ({'; '.join(c.evidence[1:])})" if len(c.evidence) > 1 else ""
        )
        where = parts_text(parts, len(ctx.bundle.parts))
        yield Hit(
            where,
            evidence,
            suggestion_fix(s, parts_short(parts, len(ctx.bundle.parts)), ctx.bundle)
            if s
            else f"rebuild with the reference's {c.name}",
        )


def check_soc(ctx: Context) -> Iterator[Hit | Note]:
    parts = ctx.bundle.readable_parts()
    generic = [p for p in parts if requested_soc(p) == 0]
    if generic:
        ref = sorted({requested_soc(q) for q in ctx.reference.readable_parts()}) if ctx.reference else []
        stood_in = [p for p in generic if p.binary.soc_model]
        evidence = "soc_model 0: built for no SoC; it loads everywhere and may compute garbage on the device"
        if stood_in:  # how the measured rule told it (q9diff.read.generic), said once for the set
            recorded = ", ".join(map(str, sorted({p.binary.soc_model for p in stood_in})))
            said = target(stood_in[0].binary)["evidence"][-1]
            evidence += f" (the metadata records {recorded}; {said})"
        if len(ref) == 1 and ref[0]:
            value = f"soc_model {ref[0]} (the reference's, {soc_name(ref[0])})"
        elif ctx.target is not None:
            value = f"soc_model {ctx.target.soc_model} ({ctx.target.name}'s)"
        else:
            value = "your device's soc_model (name the device with --target DEVICE and doctor says which)"
        devices = ext_devices(ctx.bundle)
        key, now = ext_soc(devices[0]) if devices else ("soc_model", None)
        device_side = (
            f"; the device-side {ctx.bundle.extension.path.name} has devices[0].{key} {now}: set it there too"
            if devices and ctx.bundle.extension
            else ""
        )
        fix = (
            f"set {value} in the compile config (htp_backend_ext_config.json devices[0].soc_model, qairt "
            f"HtpDeviceConfig(soc_model=...), ONNX Runtime soc_model) and recompile{device_side}"
        )
        yield Hit(parts_text(generic, len(ctx.bundle.parts)), evidence, fix)
    elif ctx.reference is not None:
        yield from _causes(ctx, ("soc_model",))
    if not generic and parts:
        socs = sorted({requested_soc(p) for p in parts}, key=str)
        yield Note(
            ctx.bundle.name,
            f"built for soc_model {', '.join(map(str, socs))} ({', '.join(soc_name(s) for s in socs)}), "
            "not the generic target",
        )


def check_vtcm(ctx: Context) -> Iterator[Hit | Note]:
    if ctx.reference is not None:
        hits = list(_causes(ctx, ("vtcm_size",)))
        yield from hits
        if not hits and ctx.pairs:
            sizes = sorted({mib(g.vtcm_size) for p, _ in ctx.pairs for g in p.binary.graphs})
            yield Note(ctx.bundle.name, f"VTCM {', '.join(sizes)}, as in the reference")
        return
    for p in ctx.bundle.readable_parts():
        soc = SOCS.get(requested_soc(p) or -1)
        sizes = {g.vtcm_size for g in p.binary.graphs}
        if soc and soc.vtcm_mb and sizes and max(s or 0 for s in sizes) < soc.vtcm_mb * 2**20:
            yield Note(
                p.label,
                f"VTCM {', '.join(mib(s) for s in sizes)} of {soc.name}'s {soc.vtcm_mb} MiB: slower, "
                "not wrong; a reference would say what was intended",
                False,
            )
    yield Note(ctx.bundle.name, "VTCM vs a known-good build needs --reference", False)


# The compiler options that say how weights are stored (QNN_FACTS "Knobs ONNX Runtime lacks"):
# compress_weights=true packs 4-bit-range int8 weights two per byte; native_hmx_a16w4 keeps INT4 packed.
PACKING_OPTIONS = ("compress_weights", "native_hmx_a16w4")


def check_packing(ctx: Context) -> Iterator[Hit | Note]:
    if ctx.reference is None:
        values = sorted({_option(p, "compress_weights") for p in ctx.bundle.readable_parts()})
        yield Note(
            ctx.bundle.name,
            f"compress_weights={'/'.join(values)}; whether 4-bit weights sit unpacked needs --reference "
            "(or the weights' value ranges)",
            False,
        )
        return
    seen: dict[tuple[str, str, str], list[CtxBin]] = {}
    for p, q in ctx.pairs:
        for key in PACKING_OPTIONS:
            mine, theirs = _option(p, key), _option(q, key)
            if mine != theirs:
                seen.setdefault((key, mine, theirs), []).append(p)
    for (key, mine, theirs), parts in seen.items():
        where = parts_text(parts, len(ctx.bundle.parts))
        fix = f"recompile {parts_short(parts, len(ctx.bundle.parts))} with the reference's {key}={theirs}"
        if key == "compress_weights":
            fix += (
                f" (htp_backend_ext_config.json graphs[].weights_packing = {theirs}, "
                "qairt HtpGraphConfig(weights_packing=...))"
            )
        yield Hit(where, f"{key}={mine}; the reference {key}={theirs}", fix)
    if not seen and ctx.pairs:
        same = ", ".join(f"{k}={_option(ctx.pairs[0][0], k)}" for k in PACKING_OPTIONS)
        yield Note(ctx.bundle.name, f"{same} in every part, as in the reference")


def check_optimization(ctx: Context) -> Iterator[Hit | Note]:
    if ctx.reference is None:
        levels = sorted(
            {str(g.optimization_level) for p in ctx.bundle.readable_parts() for g in p.binary.graphs}
        )
        yield Note(
            ctx.bundle.name, f"optimization level {', '.join(levels)}; compare with --reference", False
        )
        return
    hits = list(_causes(ctx, ("optimization_level", "hvx_threads", "dlbc")))
    yield from hits
    if not hits and ctx.pairs:
        yield Note(ctx.bundle.name, "optimization level, HVX threads and DLBC as in the reference")


def check_build_other(ctx: Context) -> Iterator[Hit | Note]:
    hits = list(_causes(ctx, ("dsp_arch", "weight_sharing", "graph_structure")))
    yield from hits
    if not hits and ctx.pairs:
        yield Note(ctx.bundle.name, "dsp_arch, weight sharing and the graphs' structure as in the reference")
