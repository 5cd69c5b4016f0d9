"""Measure what Qualcomm's compiler itself chooses for each soc_model, and commit it as data.

    python scripts/measure_socs.py                 # the ids of q9diff's SoC table not measured yet
    python scripts/measure_socs.py --ids 1-112     # these ids too (ranges and single ids, comma-separated)
    python scripts/measure_socs.py --redo          # measure every id again

Each id is one compile of a tiny model (fixtures/variants/models/mlp.onnx, a w8a16 MLP, ~1 s) with the
ort-qnn backend and `soc_model` as the ONLY setting (no dsp_arch, no vtcm_mb, no optimization level),
then the binary is read back: the socModel and dspArch its metadata records, each graph's VTCM,
optimization level, HVX threads and DLBC, and the compiler options that describe the SoC it modelled
(`soc_type`, `arch`, its `vtcm_size`, `hvx_threads`, `num_nsps`, `l2tcm_kb`, ...). An id the embedded
compiler cannot build for is stored with the error it gave: unknown, never a guess.

A second probe asks for VTCM sizes (`--vtcm-probe 77`, `vtcm_mb` 0, 8, 16, 32) and stores what the
binary records, since the compiler records what it is asked, not what the device has. A third compares
two ids' builds whole (`--same 52:77`): the compiler options that differ, and the file sizes.

The result, q9diff/read/soc_measured.json, names the QAIRT build and the command; it is written after
every compile (atomically), so an interrupted run resumes where it stopped. The machine is shared:
one compile at a time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from q9diff.backends.ort_qnn import OrtQnnBackend  # noqa: E402
from q9diff.read.openers import open_binary  # noqa: E402
from q9diff.read.tables import SOC_MEASURED_PATH, SOCS  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402

MODEL = REPO / "fixtures" / "variants" / "models" / "mlp.onnx"
SCHEMA = "q9diff.soc_measured/1"
# The compiler options that describe the SoC the compiler modelled (QAIRT 2.51 options string).
OPTIONS = (
    "soc_type",
    "arch",
    "min_arch",
    "num_nsps",
    "hvx_threads",
    "vtcm_size",
    "vtcm_size_for_tiling",
    "l2tcm_kb",
    "hmx_type",
    "num_dma",
    "O",
    "relaxed_precision_flag",
)
GRAPH_FIELDS = ("vtcm_size", "optimization_level", "num_hvx_threads", "htp_dlbc", "spill_fill_buffer_size")
VTCM_ASKED = (0, 8, 16, 32)


def _ids(text: str) -> list[int]:
    out: list[int] = []
    for item in filter(None, text.split(",")):
        lo, _, hi = item.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _compile(settings: rcp.Settings, work: Path) -> tuple[dict, str, dict]:
    """One compile: (what the binary records, the QAIRT version, every compiler option and the file
    size), or ({"error": ...}, "", {})."""
    part = rcp.Part("m", "m.bin", (rcp.GraphSource("mlp", str(MODEL)),))
    recipe = rcp.Recipe(backend="ort-qnn", parts=(part,), settings=settings, notes="measure_socs")
    backend = OrtQnnBackend(timeout_s=600)
    try:
        backend.compile(recipe, work)
    except Exception as exc:  # the compiler's refusal is the measurement
        return {"error": " ".join(str(exc).split())[:300]}, "", {}
    cb = open_binary(work / "m.bin")
    g, options = cb.graphs[0], cb.options(0)
    recorded = {"soc_model": cb.soc_model, "dsp_arch": cb.dsp_arch, "build_id": cb.build_id}
    recorded |= {k: getattr(g, k) for k in GRAPH_FIELDS}
    qairt = backend.compiled[0].qairt_version
    whole = {"options": dict(options), "size": cb.size}
    return {"recorded": recorded, "options": {k: options.get(k) for k in OPTIONS}}, qairt, whole


def _empty() -> dict:
    return {"schema": SCHEMA, "socs": {}, "vtcm_asked": {}, "same_model": {}}


def _dump(data: dict) -> str:
    """The file as JSON with one line per measured row, so a diff of two runs reads row by row."""
    sections = ("socs", "vtcm_asked", "same_model")
    head = {k: v for k, v in data.items() if k not in sections}
    lines = [json.dumps(head, indent=1)[:-2] + ","]
    for n, section in enumerate(sections):
        rows = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data.get(section, {}).items()]
        tail = "," if n < len(sections) - 1 else ""
        lines.append(f" {json.dumps(section)}: {{\n" + ",\n".join(rows) + f"\n }}{tail}")
    return "\n".join(lines) + "\n}\n"


def _key(k: str) -> list[int]:
    return [int(x) for x in k.replace(":", "/").split("/")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", default="", help="soc_model ids to measure besides the table's: 1-112,120")
    ap.add_argument("--vtcm-probe", default="77", help="ids whose VTCM sizes to probe (0, 8, 16, 32 MB)")
    ap.add_argument("--same", default="52:77", help="pairs of ids whose whole builds to compare: 52:77,43:60")
    ap.add_argument("--redo", action="store_true", help="measure again what is already measured")
    ap.add_argument("--out", type=Path, default=SOC_MEASURED_PATH)
    args = ap.parse_args(argv)
    data = json.loads(args.out.read_text()) if args.out.is_file() else _empty()
    digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    if data.get("model_sha256") not in (None, digest):
        print(f"{MODEL} changed since the last measurement: measuring every id again", file=sys.stderr)
        data, args.redo = _empty(), True
    data |= {
        "schema": SCHEMA,
        "model": str(MODEL.relative_to(REPO)),
        "model_sha256": digest,
        "settings": "soc_model only: no dsp_arch, no vtcm_mb, no optimization level",
    }
    ids = sorted(set(SOCS) - {0} | set(_ids(args.ids)))
    jobs = [("socs", str(i), rcp.Settings(soc_model=i)) for i in ids]
    jobs += [
        ("vtcm_asked", f"{i}/{mb}", rcp.Settings(soc_model=i, vtcm_mb=mb))
        for i in _ids(args.vtcm_probe)
        for mb in VTCM_ASKED
    ]
    jobs += [("same_model", pair, None) for pair in filter(None, args.same.split(","))]
    data.setdefault("same_model", {})
    commands = set(data.get("commands", []))
    commands.add("python scripts/measure_socs.py" + "".join(f" {a}" for a in (argv or sys.argv[1:])))
    data["commands"] = sorted(commands)
    for section, key, settings in jobs:
        if key in data[section] and not args.redo:
            continue
        if settings is None:
            result, qairt = _same(key)
        else:
            result, qairt = _measure(settings)
        if qairt:
            if data.get("qairt_version") not in (None, qairt):
                was = data["qairt_version"]
                print(
                    f"QAIRT {qairt} here, the file was measured on {was}: --out another file", file=sys.stderr
                )
                return 2
            data["qairt_version"] = qairt
        data[section][key] = result
        data[section] = dict(sorted(data[section].items(), key=lambda kv: _key(kv[0])))
        rcp.write_atomic(args.out, _dump(data))
        shown = result if section == "same_model" else result.get("error") or result["options"]["soc_type"]
        print(section, key, shown, flush=True)
    rcp.write_atomic(args.out, _dump(data))
    return 0


def _measure(settings: rcp.Settings, whole: bool = False) -> tuple[dict, str]:
    work = Path(tempfile.mkdtemp(prefix="q9diff-measure-"))
    try:
        result, qairt, everything = _compile(settings, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return (everything if whole else result), qairt


def _same(pair: str) -> tuple[dict, str]:
    """Two ids' builds compared whole: which compiler options differ, and both file sizes."""
    (a, qairt), (b, _) = (_measure(rcp.Settings(soc_model=int(i)), whole=True) for i in pair.split(":"))
    if not a or not b:
        return {"error": "one of the two does not compile"}, qairt
    keys = sorted(set(a["options"]) | set(b["options"]))
    differ = [k for k in keys if a["options"].get(k) != b["options"].get(k)]
    return {"options_that_differ": differ, "options": len(keys), "sizes": [a["size"], b["size"]]}, qairt


if __name__ == "__main__":
    sys.exit(main())
