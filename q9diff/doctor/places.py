"""The checks of `q9diff doctor` that hand files to Qualcomm's own parsers (libQnnHtpNetRunExtensions on
the extension file, libGenie on the config), then the extension file against the binaries ("the two
places": soc_model, dsp_arch, weight sharing, graph settings) and runtime sizing (spill-fill, mmap
budget). Hits and Notes as in q9diff.doctor.checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from q9diff.doctor.checks import Context, Hit, Note, as_int, js, mib, parts_text, requested_soc
from q9diff.genie.bundle import Bundle, CtxBin
from q9diff.read.tables import SOCS, measured, soc_name
from q9diff.settings import recorded_graph_settings


def ext_devices(b: Bundle) -> list[dict]:
    devices = b.extension_doc.get("devices") if isinstance(b.extension_doc, dict) else None
    if isinstance(devices, dict):
        devices = [devices]
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _ext_graphs(b: Bundle) -> list[dict]:
    graphs = b.extension_doc.get("graphs") if isinstance(b.extension_doc, dict) else None
    if isinstance(graphs, dict):
        graphs = [graphs]
    return [g for g in graphs if isinstance(g, dict)] if isinstance(graphs, list) else []


def ext_where(b: Bundle, path: str) -> str:
    return f"{b.extension.path.name if b.extension and b.extension.path else 'extension file'}: {path}"


def check_paths(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    refs = [p.ref for p in b.parts] + [r for r in (b.extension, b.tokenizer) if r is not None]
    bad = [r for r in refs if r.kind in ("outside", "placeholder", "not-a-path")]
    for r in bad:
        fix = "name a file inside the bundle folder" if r.kind == "outside" else "write the real file name"
        yield Hit(r.where, r.problem, f"{fix} ({r.where.split(': ', 1)[-1]})")
    if not bad:
        yield Note(b.name, f"all {len(refs)} paths the config names resolve inside {b.folder}")
    yield from _start_folders(b, refs)


def _from(path: Path, start: Path) -> Path:
    """`path` as written from `start` (relative when it lies below it)."""
    full, top = path.resolve(), start.resolve()
    return full.relative_to(top) if full.is_relative_to(top) else full


def _start_folders(b, refs) -> Iterator[Hit | Note]:
    """Genie resolves relative paths against the folder it is started in: which folder the verdict
    assumed, and a config whose paths need different start folders (Genie started in one misses some)."""
    base = b.config_path.parent if b.config_path is not None else None
    starts: dict[Path, list] = {}
    for r in refs:
        if r.start is not None:
            starts.setdefault(r.start, []).append(r)
    if base is None or not starts or set(starts) == {base}:
        return
    if len(starts) > 1:
        said = "; ".join(
            f"{len(rs)} from {s} ({rs[0].where.split(': ', 1)[-1]}, ...)" for s, rs in starts.items()
        )
        yield Hit(
            b.name,
            f"the config's relative paths need different start folders: {said}; Genie resolves them all"
            " against the one folder it is started in, so it misses some",
            f"write every path relative to one folder, e.g. the config's ({base})",
        )
        return
    (start,) = starts
    yield Note(
        b.name,
        f"the paths resolve from {start}, not from the config's folder: this verdict assumes Genie is started"
        f" in {start} (e.g. genie-t2t-run -c {_from(b.config_path, start)})",
        False,  # an assumption the user should see, not a check that passed
    )


def check_extension_file(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    if b.config is None:
        return
    if b.extension is None:
        yield Note(
            f"{b.name}: {b.backend()[0]}",
            "no extensions file: the device runs with QNN's defaults (no soc_model, no graph settings)",
            False,
        )
    elif b.extension.kind in ("outside", "placeholder", "not-a-path"):
        return  # config.paths has said it
    elif b.extension_problem:
        yield Hit(
            b.extension.where,
            b.extension_problem,
            "write the extension file with the binaries' soc_model and dsp_arch (devices[0])",
        )
    else:
        yield Note(b.extension.where, f"{b.extension.path.name} is a JSON object")


def _soc_arch(soc_model: int) -> tuple[int | None, str]:
    """The Hexagon arch of a soc_model and where that is known from: the SoC table's sources, or the
    arch the compiler records when asked for that id alone (measured); (None, why) when neither says."""
    soc, m = SOCS.get(soc_model), measured().get(soc_model)
    if soc is not None and soc.dsp_arch:
        return soc.dsp_arch, f"{soc.name}, v{soc.dsp_arch} ({', '.join(soc.sources)})"
    if m is not None and m.dsp_arch and not m.error:
        return m.dsp_arch, f"{m.soc_type or '?'}, v{m.dsp_arch} (the compiler's own choice, measured)"
    return None, "q9diff's SoC table and the compiler's measured ids do not know it"


def check_extension_soc(ctx: Context) -> Iterator[Hit | Note]:
    """The extension file on its own, when no ctx-bin is at hand: each device's soc_model against the SoC
    table (an id nothing knows; a dsp_arch that is not the SoC's, which the runtime overrides with a
    warning: "Arch .. set by custom config is different from arch associated with SoC .., will overwrite
    it", measured on QAIRT 2.51)."""
    b = ctx.bundle
    if b.readable_parts():
        return  # with ctx-bins at hand, two-places.soc_model and .dsp_arch judge the file against them
    for i, d in enumerate(ext_devices(b)):
        key, value = ext_soc(d)
        where = ext_where(b, f"devices[{i}].{key}")
        soc = as_int(value)
        if value is None or soc == 0:
            continue  # no SoC, or the generic one: extension.generic says it
        if soc is None or soc < 0:
            yield Hit(where, f"{key} {js(value)} is not a soc_model number", "write the SoC's soc_model")
            continue
        arch, known = _soc_arch(soc)
        m = measured().get(soc)
        if arch is None:
            refused = f"; the compiler refuses it ({m.error})" if m is not None and m.error else ""
            yield Hit(
                where,
                f"{key} {soc}: {known}{refused}; the runtime reports an unknown socModel ('Unknown config"
                " socModel', 'SoC model name not found')",
                "write the soc_model of the device (q9diff doctor --target DEVICE names it)",
            )
            continue
        written = d.get("dsp_arch")
        match = re.fullmatch(r"v(\d+)", written) if isinstance(written, str) else None
        if match and int(match.group(1)) != arch:
            yield Hit(
                ext_where(b, f"devices[{i}]"),
                f"{key} {soc} is {known}, but dsp_arch is {written}: the runtime overrides the arch to the"
                " SoC's with a warning, so one of them is not the device",
                f'set dsp_arch "v{arch}" for soc_model {soc}, or the soc_model of the {written} device',
            )
        else:
            yield Note(where, f"{key} {soc}: {known}" + (f", dsp_arch {written} agrees" if match else ""))


def check_extension_generic(ctx: Context) -> Iterator[Hit | Note]:
    """soc_model 0 in the extension file, with no ctx-bin at hand (two-places.soc_model judges it against
    the binaries otherwise)."""
    b = ctx.bundle
    if b.readable_parts():
        return
    for i, d in enumerate(ext_devices(b)):
        key, value = ext_soc(d)
        if as_int(value) == 0:
            yield Hit(
                ext_where(b, f"devices[{i}].{key}"),
                f"{key} 0: the runtime is told no SoC (the generic target), the setting the motivating bug"
                " left out at build time",
                f"set devices[{i}].{key} to the device's soc_model (q9diff doctor --target DEVICE names it)",
            )


def check_extension_qualcomm(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    if b.extension_text is None or b.extension_problem:
        return
    from q9diff.fix import extconfig  # start-up: fix.extconfig

    try:
        verdict = extconfig.check([b.extension_text])[0]
    except extconfig.Unavailable as exc:
        yield Note(b.extension.where, f"Qualcomm's parser not asked: {exc}", False)
        return
    for e in verdict.errors:
        yield Hit(
            b.extension.where, f"libQnnHtpNetRunExtensions.so: {e}", "fix the file as Qualcomm's parser says"
        )
    if not verdict.errors:
        yield Note(b.extension.where, "libQnnHtpNetRunExtensions.so (Qualcomm's parser) accepts it")


def check_genie_parser(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    if b.config_text is None:
        return
    from q9diff.genie import parser as genieconfig  # start-up: genie.parser

    try:
        verdict = genieconfig.check(b.config_text)
    except genieconfig.Unavailable as exc:
        yield Note(b.name, f"libGenie's parser not asked: {exc}", False)
        return
    if verdict.accepted:
        yield Note(b.name, "libGenie's config parser (GenieDialogConfig_createFromJson) accepts it")
    else:
        text = " ".join(verdict.errors) or "no message"
        yield Hit(
            b.name,
            f"libGenie refuses the config ({verdict.status}): {text}",
            "fix the config as libGenie says",
        )


def ext_soc(d: dict) -> tuple[str, object]:
    for key in ("soc_model", "soc_id"):  # both integers in Qualcomm's schema (QNN_FACTS)
        if key in d:
            return key, d[key]
    return "soc_model", None


def check_two_places_soc(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    devices = ext_devices(b)
    if b.extension_doc is None:
        return
    if not devices:
        yield Note(ext_where(b, "devices"), "no devices section: the runtime is told no soc_model", False)
        return
    key, value = ext_soc(devices[0])
    where = ext_where(b, f"devices[0].{key}")
    socs: dict[int | None, list[CtxBin]] = {}
    for p in b.readable_parts():
        socs.setdefault(requested_soc(p), []).append(p)
    known = {s: ps for s, ps in socs.items() if s is not None}
    if value is None:
        yield Note(where, f"no soc_model/soc_id; the binaries target {sorted(known)}", False)
        return
    wrong = {s: ps for s, ps in known.items() if s != value}
    for s, ps in wrong.items():
        yield Hit(
            where,
            f"{key} {js(value)} ({soc_name(as_int(value))}) at run time; {parts_text(ps, len(b.parts))} "
            f"compiled for soc_model {s} ({soc_name(s)})",
            f"set devices[0].{key} to {s} in {b.extension.path.name}, the value the binaries were built for",
        )
    if known and not wrong:
        yield Note(where, f"{key} {value} at run time = the binaries' soc_model")


def check_two_places_arch(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    devices = ext_devices(b)
    if not devices or "dsp_arch" not in devices[0]:
        return
    value = devices[0]["dsp_arch"]
    m = re.fullmatch(r"v(\d+)", value) if isinstance(value, str) else None
    where = ext_where(b, "devices[0].dsp_arch")
    archs = {p.binary.dsp_arch for p in b.readable_parts() if p.binary.dsp_arch}
    if not m:
        yield Hit(where, f'dsp_arch {js(value)} is not an HTP arch like "v73"', "write the binaries' arch")
    elif archs and archs != {int(m.group(1))}:
        yield Hit(
            where,
            f"dsp_arch {value} at run time; the binaries are {', '.join(f'v{a}' for a in sorted(archs))}",
            f'set devices[0].dsp_arch to "v{min(archs)}"',
        )
    elif archs:
        yield Note(where, f"dsp_arch {value} = the binaries' arch")


def check_two_places_sharing(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    if b.extension_doc is None:
        return
    context = b.extension_doc.get("context")
    enabled = context.get("weight_sharing_enabled") if isinstance(context, dict) else None
    shared = [p for p in b.readable_parts() if any(r.name.startswith("WEIGHTS/") for r in p.binary.records)]
    where = ext_where(b, "context.weight_sharing_enabled")
    if shared and enabled is not True:
        yield Hit(
            where,
            f"{js(enabled)}; {parts_text(shared, len(b.parts))} share weights (a WEIGHTS/ record)",
            "set context.weight_sharing_enabled true, as AI Hub's device-side template does",
        )
    elif enabled is True and b.readable_parts() and not shared:
        yield Hit(
            where,
            "true, but no ctx-bin shares weights (no WEIGHTS/ record)",
            "drop it, or ship the shared build",
        )
    elif b.readable_parts():
        yield Note(where, f"{js(enabled)}, matching {len(shared)} weight-shared ctx-bins")


def check_two_places_graphs(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    present = {g.name: g for p in b.readable_parts() for g in p.binary.graphs}
    for i, entry in enumerate(_ext_graphs(b)):
        names = entry.get("graph_names")
        where = ext_where(b, f"graphs[{i}]")
        if not isinstance(names, list):
            continue
        named = list(present) if "*" in names else [n for n in names if n in present]
        absent = [n for n in names if n != "*" and n not in present]
        if absent:
            yield Hit(
                where,
                f"settings for graphs no ctx-bin holds: {absent[:3]}",
                "name the graphs the ctx-bins hold",
            )
        for key, field_, scale in ((s.ext_key, s.recorded, s.per_unit) for s in recorded_graph_settings()):
            want = entry.get(key)
            if (
                not isinstance(want, (int, float))
                or isinstance(want, bool)
                or (key == "vtcm_mb" and want == 0)
            ):
                continue
            off = [n for n in named if getattr(present[n], field_) not in (None, want * scale)]
            if off:
                have = sorted({getattr(present[n], field_) // scale for n in off})
                yield Hit(
                    f"{where}.{key}",
                    f"{key} {want:g} here; {len(off)} named graphs were compiled with {have}",
                    "rebuild with this file, or make it say what the binaries were built with",
                )
        if named and not absent:
            yield Note(where, f"settings for {len(named)} graphs the ctx-bins hold, as compiled")


def check_spill_fill(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    bwhere, backend = b.backend()
    htp = backend.get("QnnHtp") if isinstance(backend.get("QnnHtp"), dict) else {}
    value = htp.get("spill-fill-bufsize")
    sizes = [
        (g.spill_fill_buffer_size, p.label)
        for p in b.readable_parts()
        for g in p.binary.graphs
        if g.spill_fill_buffer_size is not None
    ]
    if value is None or not sizes:
        return
    largest, part = max(sizes)
    where = f"{b.name}: {bwhere}.QnnHtp.spill-fill-bufsize"
    if as_int(value) and value < largest:
        yield Hit(
            where, f"{value} bytes; {part} needs a spill/fill buffer of {largest}", f"set it to {largest}"
        )
    else:
        yield Note(
            where,
            f"{js(value)} bytes (0 = no shared spill-fill buffer); the binaries' largest spill/fill buffer "
            f"is {largest} bytes",
        )


# libGenie's own QnnHtp schema (read from libGenie.so, QAIRT 2.51) describes mmap-budget in MB, 0 meaning
# unset/unlimited, and spill-fill-bufsize in bytes, 0 disabling the shared spill-fill buffer. Its MB is
# 2**20 bytes, written MiB here as every size q9diff shows (q9diff.units).
MMAP_BUDGET_UNIT = 2**20


def check_mmap(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    bwhere, backend = b.backend()
    htp = backend.get("QnnHtp") if isinstance(backend.get("QnnHtp"), dict) else {}
    sizes = sorted((p.binary.size, p.label) for p in b.readable_parts())
    if not sizes or "use-mmap" not in htp:
        return
    budget, (largest, label) = htp.get("mmap-budget"), sizes[-1]
    where = f"{b.name}: {bwhere}.QnnHtp.mmap-budget"
    if htp["use-mmap"] is True and as_int(budget) and budget * MMAP_BUDGET_UNIT < largest:
        yield Hit(
            where,
            f"use-mmap true with mmap-budget {budget} MiB; {label} alone is {mib(largest)}",
            f"raise mmap-budget to at least {-(-largest // MMAP_BUDGET_UNIT)} (MiB), or 0 for no limit",
        )
    else:
        yield Note(
            where,
            f"use-mmap {js(htp['use-mmap'])}, mmap-budget {js(budget)} (MiB, 0 = no limit); ctx-bins "
            f"{mib(sum(s for s, _ in sizes))} in all, the largest {mib(largest)}",
        )
