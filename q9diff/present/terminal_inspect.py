"""The terminal view of `q9diff inspect`: what one context binary holds (build, target, each graph's
settings, every byte's region) from its `q9diff.inspect/1` summary, and the judgement of a
qnn-context-binary-utility dump (--meta) or of libQnnSystem (--oracle) beside it."""

from __future__ import annotations

from pathlib import Path

from q9diff.present.terminal import console, print_packing, text, whole
from q9diff.present.verdict import target_words
from q9diff.units import human, nbytes, opt_level, value, vtcm

MAX_ROWS = 100  # rows of a table (regions, delegates) shown; past it one line counts the rest


def _more(rows: list, what: str) -> None:
    """After a table cut at MAX_ROWS: how many rows were left out, and where they all are."""
    if len(rows) > MAX_ROWS:
        console.print(f"... {len(rows) - MAX_ROWS:,d} more {what} (--json lists every one)")


def _arch(v: int | None) -> str:
    return f"v{v}" if v else "not recorded"


def _arch_read(dsp_arch: int | None, options: dict[str, str]) -> str:
    """The dspArch the metadata records, beside the arch the options name (older files name only
    min_arch)."""
    key = "arch" if "arch" in options else "min_arch" if "min_arch" in options else None
    return f"dsp_arch {_arch(dsp_arch)}" + (f" (options {key}={options[key]})" if key else "")


def print_contexts(binaries: list, summaries: list[dict], meta: Path | None = None) -> None:
    """Each context of the file in turn (a container carries several), a rule between them."""
    for i, (cb, summary) in enumerate(zip(binaries, summaries)):
        if i:
            console.rule()
        print_inspect(cb, summary, meta)


def print_meta(meta: Path, m: dict, lines: list[str]) -> None:
    """The judgement of a qnn-context-binary-utility dump, in as few lines as it needs."""
    if not m["describes_this_binary"]:
        console.print(text(("meta", "red"), " ", whole(str(meta)), f": {lines[0]}"))
        return
    for d in lines:
        console.print(text(("meta disagrees", "red"), f": {d}"))
    keys = sorted({n.split(":", 1)[0].rsplit(".", 1)[-1].split("[", 1)[0] for n in m["not_compared"]})
    verdict = "agrees on all of them" if not lines else f"disagrees on {len(lines)}"
    console.print(
        text(
            f"meta ({m['header']}): {m['compared']} fields compared, {verdict}; "
            f"not compared ({len(m['not_compared'])}, q9diff does not read them): {', '.join(keys)}"
        )
    )


def print_inspect(cb, s: dict, meta: Path | None = None) -> None:
    from rich.table import Table

    from q9diff.compare.summary import unknown_bytes  # start-up: compare.summary, construct

    console.print(text((s["path"], "bold"), f" {nbytes(s['size'])} ({human(s['size'])})"), soft_wrap=True)
    console.print(
        text(
            f"QAIRT build {s['build_id']} · core API {s['core_api_version']}"
            f" · backend API {s['backend_api_version']}"
            f" · blob {s['context_blob_version']}"
        )
    )
    t = s["target"]
    head = "Target: " + target_words(t, s["dsp_arch"])
    console.print(text(head + (" — " + "; ".join(t["evidence"]) if t["evidence"] else "")))
    if t["generic_target"]:
        console.print(text(("  generic target: loads everywhere, may compute wrong on device", "bold red")))
    for g in s["graphs"]:
        o = g["options"]
        console.print()
        console.print(
            text(
                (f"graph {g['name']}", "bold"),
                f": {len(g['inputs'])} inputs, {len(g['outputs'])} outputs, {len(g['ops'])} ops",
            )
        )

        def v(key: str, value) -> str:
            return "unknown" if value is None else str(value)

        def b(value) -> str:
            return "unknown" if value is None else nbytes(value)

        console.print(
            text(
                f"  soc_type {o.get('soc_type', '?')} · {_arch_read(s['dsp_arch'], o)}"
                f" · vtcm_size {vtcm(g['vtcm_size'])}"
                f" · optimization_level {opt_level(g['optimization_level'], o.get('O'))}"
                f" · hvx_threads {v('h', g['num_hvx_threads'])} · dlbc {v('d', g['htp_dlbc'])}"
            )
        )
        console.print(
            text(
                f"  spill_fill {b(g['spill_fill_buffer_size'])} · const {b(g['const_size'])}"
                f" · shared weights {b(g['shared_weights_size'])} · io {b(g['io_tensor_size'])}"
                f" · op data {b(g['op_data_size'])}"
            )
        )
        if g["options_vs_recorded"]:
            asked = "; ".join(
                f"{d['option']}={d['asked']} asked, {d['field']} {value(d['field'], d['recorded'])} recorded"
                for d in g["options_vs_recorded"]
            )
            console.print(
                text(
                    ("  options differ from what the file records", "yellow"),
                    f" (options: what the compiler was asked; recorded: graphBlobInfo/contextMetadata):"
                    f" {asked}",
                )
            )
    if s["unknown"]:
        reasons: dict[str, list[str]] = {}
        for field, why in s["unknown"].items():
            reasons.setdefault(why, []).append(field.rsplit(".", 1)[-1])
        for why, fields in reasons.items():
            console.print(text((f"unknown: {', '.join(dict.fromkeys(fields))}: {why}", "yellow")))
    t = Table(title="regions", show_lines=False)
    t.add_column("region")
    t.add_column("offset", justify="right")
    t.add_column("size", justify="right")
    t.add_column("%", justify="right")
    for r in s["regions"][:MAX_ROWS]:
        share = f"{100 * r['size'] / s['size']:.1f}"
        t.add_row(text(r["name"]), f"{r['offset']:#x}", f"{r['size']:,d}", share)
    console.print(t)
    _more(s["regions"], "regions")
    unk = unknown_bytes(cb)
    console.print(
        f"named: {nbytes(s['size'] - unk)} ({100 * (s['size'] - unk) / s['size']:.1f}%),"
        f" unknown: {nbytes(unk)}"
    )
    for d in s.get("oracle_disagreements", []):
        console.print(text(("oracle disagrees", "red"), f": {d}"))
    if "oracle_disagreements" in s and not s["oracle_disagreements"]:
        console.print("oracle (libQnnSystem) agrees on every field")
    if "meta" in s:
        print_meta(meta, s["meta"], s["meta_disagreements"])
    print_packing("", s.get("packing"))


def print_container(c: dict) -> None:
    """An ExecuTorch .pte around its contexts (q9diff.compare.container): every delegate with where its
    compile spec disagrees with the binary, then every byte's region of the file; its contexts follow."""
    from rich.table import Table

    console.print(text((c["path"], "bold"), f" ExecuTorch program {nbytes(c['size'])} ({human(c['size'])})"))
    from q9diff.read.pte import cut, shown  # start-up: read.pte, construct

    for d in c["delegates"][:MAX_ROWS]:
        head = (
            f"  method {shown(d['method'])} delegate {d['position']}: {cut(d['backend'])},"
            f" {d['location']} {d['index']}"
        )
        if not d.get("context"):
            console.print(text(head + ": not read"))
            continue
        spec = d["compile_spec"]
        asked = (
            "no compile spec"
            if spec is None
            else f"compile spec unread: {spec['problem']}"
            if spec["problem"]
            else f"compile spec soc_model {spec['soc_model']}, htp_arch {spec['htp_arch']},"
            f" VTCM {spec['vtcm_mb']} MiB, {spec['precision']}"
        )
        console.print(text(head + f" -> context {d['context']} ({asked})"))
        for f in d["compile_spec_findings"]:
            console.print(text(("    compile spec disagrees", "yellow"), f": {f}"))
    _more(c["delegates"], "delegates")
    t = Table(title="regions of the .pte", show_lines=False)
    for column, justify in (("region", "left"), ("offset", "right"), ("size", "right")):
        t.add_column(column, justify=justify)
    for r in c["regions"][:MAX_ROWS]:
        t.add_row(text(r["name"]), f"{r['offset']:#x}", f"{r['size']:,d}")
    console.print(t)
    _more(c["regions"], "regions")
    console.rule()
