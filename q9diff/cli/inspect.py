"""`q9diff inspect`: what one context binary holds."""

from __future__ import annotations

from pathlib import Path

import typer

from q9diff.cli.common import (
    _Command,
    _exists,
    _fail,
    _flag,
    _note,
    _print_json,
    _print_packing,
    _read_errors,
    _report_path,
    _t,
    _wrote,
    app,
    console,
)
from q9diff.errors import FormatError


def _arch(v: int | None) -> str:
    return f"v{v}" if v else "not recorded"


def _arch_read(dsp_arch: int | None, options: dict[str, str]) -> str:
    """The dspArch the metadata records, beside the arch the options name (older files name only
    min_arch)."""
    key = "arch" if "arch" in options else "min_arch" if "min_arch" in options else None
    return f"dsp_arch {_arch(dsp_arch)}" + (f" (options {key}={options[key]})" if key else "")


@app.command(cls=_Command, short_help="What a context binary holds, every byte's region.")
def inspect(
    file: Path = typer.Argument(..., metavar="FILE", help="a context binary or an EPContext .onnx"),
    as_json: bool = _flag("--json", "print the q9diff.inspect/1 JSON (strict: NaN/inf written as null)"),
    oracle: bool = _flag("--oracle", "also read libQnnSystem's BinaryInfo and flag disagreements"),
    meta: Path = typer.Option(
        None, "--meta", metavar="FILE", help="a qnn-context-binary-utility JSON as a second metadata source"
    ),
    html_out: Path = typer.Option(None, "--html", metavar="FILE", help="also write a simple HTML page"),
) -> None:
    """Show what a context binary holds: build, target, graphs, settings and every byte's region.

    \b
    Exit status: 0 read, 2 error; with --meta, 1 when the dump describes another
    binary or disagrees on any field."""
    from q9diff.compare.summary import inspect_summary
    from q9diff.format.openers import contexts, open_one

    _exists(file)
    _report_path(html_out, [file])
    try:
        # FILE#NAME: one context of a file that holds several (as `inspect FILE` and set diffs list them)
        found = [(file.name, open_one(file))] if not file.exists() else contexts(file)
        summaries = [inspect_summary(cb) for _, cb in found]
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{file}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")
    for (_, cb), summary in zip(found, summaries):
        if oracle:
            from q9diff.oracle.crosscheck import compare_with_oracle

            try:
                summary["oracle_disagreements"] = compare_with_oracle(cb)
            except Exception as exc:  # the oracle reports its own one-line errors
                _fail(f"{file}: oracle: {exc}")
        if meta is not None:
            from q9diff.oracle.crosscheck import MetaError, judge_utility_json

            try:
                report = judge_utility_json(cb, meta)
            except MetaError as exc:
                _fail(str(exc))
            except (OSError, ValueError, RecursionError) as exc:
                _fail(f"{meta}: {exc}")
            summary["meta"] = report.to_json()
            summary["meta_disagreements"] = report.lines()
    # A dump describes one binary: for a file of several contexts it must describe one of them.
    described = [s["meta"] for s in summaries if "meta" in s and s["meta"]["describes_this_binary"]]
    meta_failed = meta is not None and (not described or any(m["disagreements"] for m in described))
    if html_out is not None:
        from q9diff.present.pages import render_inspect
        from q9diff.recipes.recipe import write_atomic

        write_atomic(html_out, render_inspect(summaries))
    if as_json:
        data = (
            summaries[0]
            if len(summaries) == 1
            else {
                "schema": "q9diff.inspect-set/1",
                "path": str(file),
                "contexts": summaries,
            }
        )
        _print_json(data)
    else:
        for i, ((_, cb), summary) in enumerate(zip(found, summaries)):
            if i:
                console.rule()
            _print_inspect(cb, summary, meta)
    if html_out is not None:
        _wrote(html_out, "the HTML page") if not as_json else _note(f"wrote the HTML page: {html_out}")
    if meta_failed:
        raise typer.Exit(1)


def _print_meta(meta: Path, m: dict, lines: list[str]) -> None:
    """The judgement of a qnn-context-binary-utility dump, in as few lines as it needs."""
    if not m["describes_this_binary"]:
        console.print(_t(("meta", "red"), f" {meta}: {lines[0]}"), soft_wrap=True)
        return
    for d in lines:
        console.print(_t(("meta disagrees", "red"), f": {d}"), soft_wrap=True)
    keys = sorted({n.split(":", 1)[0].rsplit(".", 1)[-1].split("[", 1)[0] for n in m["not_compared"]})
    verdict = "agrees on all of them" if not lines else f"disagrees on {len(lines)}"
    console.print(
        _t(
            f"meta ({m['header']}): {m['compared']} fields compared, {verdict}; "
            f"not compared ({len(m['not_compared'])}, q9diff does not read them): {', '.join(keys)}"
        ),
        soft_wrap=True,
    )


def _print_inspect(cb, s: dict, meta: Path | None = None) -> None:
    from rich.table import Table

    from q9diff.compare.summary import unknown_bytes
    from q9diff.format.tables import soc_name
    from q9diff.units import human, nbytes, opt_level, value, vtcm

    console.print(_t((s["path"], "bold"), f" {human(s['size'])} ({nbytes(s['size'])})"), soft_wrap=True)
    console.print(
        _t(
            f"QAIRT build {s['build_id']} · core API {s['core_api_version']}"
            f" · backend API {s['backend_api_version']}"
            f" · blob {s['context_blob_version']}"
        )
    )
    t = s["target"]
    req = t["soc_model_requested"]
    head = (
        "Target: soc_model not recorded"
        if req is None
        else f"Target: soc_model {req} ({soc_name(req)}), dsp_arch {_arch(s['dsp_arch'])}"
    )
    console.print(_t(head + (" — " + "; ".join(t["evidence"]) if t["evidence"] else "")))
    if t["generic_target"]:
        console.print(_t(("  generic target: loads everywhere, may compute wrong on device", "bold red")))
    for g in s["graphs"]:
        o = g["options"]
        console.print()
        console.print(
            _t(
                (f"graph {g['name']}", "bold"),
                f": {len(g['inputs'])} inputs, {len(g['outputs'])} outputs, {len(g['ops'])} ops",
            )
        )

        def v(key: str, value) -> str:
            return "unknown" if value is None else str(value)

        def b(value) -> str:
            return "unknown" if value is None else nbytes(value)

        console.print(
            _t(
                f"  soc_type {o.get('soc_type', '?')} · {_arch_read(s['dsp_arch'], o)}"
                f" · vtcm_size {vtcm(g['vtcm_size'])}"
                f" · optimization_level {opt_level(g['optimization_level'], o.get('O'))}"
                f" · hvx_threads {v('h', g['num_hvx_threads'])} · dlbc {v('d', g['htp_dlbc'])}"
            )
        )
        console.print(
            _t(
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
                _t(
                    ("  options differ from what the file records", "yellow"),
                    f" (options: what the compiler was asked; recorded: graphBlobInfo/contextMetadata):"
                    f" {asked}",
                ),
                soft_wrap=True,
            )
    if s["unknown"]:
        reasons: dict[str, list[str]] = {}
        for field, why in s["unknown"].items():
            reasons.setdefault(why, []).append(field.rsplit(".", 1)[-1])
        for why, fields in reasons.items():
            console.print(_t((f"unknown: {', '.join(dict.fromkeys(fields))}: {why}", "yellow")))
    t = Table(title="regions", show_lines=False)
    t.add_column("region")
    t.add_column("offset", justify="right")
    t.add_column("size", justify="right")
    t.add_column("%", justify="right")
    for r in s["regions"]:
        t.add_row(_t(r["name"]), f"{r['offset']:#x}", str(r["size"]), f"{100 * r['size'] / s['size']:.1f}")
    console.print(t)
    unk = unknown_bytes(cb)
    console.print(
        f"named: {nbytes(s['size'] - unk)} ({100 * (s['size'] - unk) / s['size']:.1f}%),"
        f" unknown: {nbytes(unk)}"
    )
    for d in s.get("oracle_disagreements", []):
        console.print(_t(("oracle disagrees", "red"), f": {d}"))
    if "oracle_disagreements" in s and not s["oracle_disagreements"]:
        console.print("oracle (libQnnSystem) agrees on every field")
    if "meta" in s:
        _print_meta(meta, s["meta"], s["meta_disagreements"])
    _print_packing("", s.get("packing"))
