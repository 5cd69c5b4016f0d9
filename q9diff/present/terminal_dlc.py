"""The terminal view of a DLC: what `inspect` says of one (q9diff.inspect-dlc/1) and what `diff` says of two
(q9diff.dlcdiff/1). Strings from the file are data: every one is printed through `text`/`whole`."""

from __future__ import annotations

from q9diff.present.terminal import console, text, whole
from q9diff.units import nbytes

MAX_ROWS = 100


def print_dlc(s: dict, verbose: bool = True) -> None:
    """A DLC's summary: kind, version, graphs (ops by type, tensors with encodings, weights) or caches,
    and every byte's region."""
    from rich.table import Table

    version = s["converter_version"] or "not recorded (a context DLC records each cache's buildId)"
    console.print(
        text(whole(s["path"]), f" {nbytes(s['size'])} · a {s['kind']} DLC · QAIRT converter {version}")
    )
    for g in s["graphs"]:
        ops = ", ".join(f"{n} {t}" for t, n in g["ops_by_type"].items())
        console.print(text("graph ", whole(g["name"]), f": {len(g['ops'])} ops ({ops})"))
        table = Table(title="tensors", title_justify="left")
        for col in ("tensor", "type", "dims", "data type", "bits", "scale", "offset"):
            table.add_column(col, justify="right" if col in ("bits", "scale", "offset") else "left")
        for t in g["tensors"][:MAX_ROWS]:
            e = t["encoding"] or {}
            scale = f"{e['scale']:.6g}" if e else "-"
            if "axis" in e:
                scale = f"per axis {e['axis']} ({len(e['per_axis'])})"
            dims = "×".join(map(str, t["dims"]))
            bits, offset = str(e.get("bitwidth", "-")), str(e.get("offset", "-"))
            table.add_row(text(whole(t["name"])), t["type"], dims, t["data_type"], bits, scale, offset)
        console.print(table)
        weights = sum(w["size"] for w in g["weights"])
        console.print(f"  weights: {len(g['weights'])} tensors, {nbytes(weights)} in model.params.bin")
    for c in s["caches"]:
        vtcm = ", ".join(f"{v} MiB" for v in c["vtcm_size_mb"]) or "not listed"
        console.print(
            text(
                "cache ",
                whole(c["name"]),
                f" {nbytes(c['size'])}: soc_model {c['soc_model']}, dsp_arch v{c['dsp_arch']}, vtcm {vtcm},"
                f" build {c['build_id']}, graphs ",
                whole(", ".join(str(g) for g in c["graphs"])),
            )
        )
    if not verbose:
        return
    table = Table(title="regions", title_justify="left")
    for col, justify in (("region", "left"), ("offset", "right"), ("size", "right")):
        table.add_column(col, justify=justify)
    for r in s["regions"][:MAX_ROWS]:
        table.add_row(text(whole(r["name"])), f"{r['offset']:#x}", f"{r['size']:,d}")
    console.print(table)
    named = s["size"] - s["unknown_bytes"]
    console.print(
        f"named: {named:,d} B ({100 * named / max(s['size'], 1):.1f}%), unknown: {s['unknown_bytes']:,d} B"
    )


def print_dlc_diff(d: dict, verbose: bool = False) -> None:
    """Why two DLCs differ: each root cause in a line, then (verbose) each record's verdict."""
    if d.get("compiled"):
        console.print(
            text("What compiling ", whole(d["a"]["path"]), " into ", whole(d["b"]["path"]), " did:")
        )
    elif d["identical"]:
        console.print("identical: every record byte for byte")
    elif d["only_timestamps"]:
        console.print(
            "Only timestamps differ: the metadata's per-second timestamps; every other byte is the same."
        )
    else:
        console.print(f"Root causes: {', '.join(c['cause'] for c in d['causes']) or 'none read'}")
    role = "" if d.get("compiled") else " (root)"
    for c in d["causes"]:
        console.print(text(f"  {c['cause']}{role}: ", whole(c["detail"])))
        for t in c.get("tensors", [])[:MAX_ROWS] if verbose else ():
            console.print(text("    ", whole(str(t))))
    if verbose:
        for r in d["records"]:
            verdict = "same" if r["same"] else f"only in {r['in']}" if r["in"] != "both" else "differs"
            console.print(text("  record ", whole(r["name"]), f": {verdict}"))
