"""Measure what Qualcomm's compiler records for a generic build (soc_model 0) on every HTP arch and every
QAIRT at hand, against explicit builds, and commit what tells them apart as data.

    python scripts/measure_generic.py --python-for 2.47=/work/venvs/ort-2.3/bin/python \\
        --python-for 2.48=/work/venvs/ort-2.4/bin/python --python-for 2.49=/work/venvs/ort-2.5/bin/python \\
        --python-for 2.50=/work/venvs/ort-2.6/bin/python --python-for 2.51=/work/venvs/ort-2.7/bin/python
    python scripts/measure_generic.py ... --derive-only   # write the data again from the raw builds

Each runtime is one Python 3.11 venv with onnx and one onnxruntime-qnn wheel (see scripts/measure_compat.py
for how to make them) and this q9diff (`pip install --no-deps -e .`, so the compile child reads its own
formats/); a `--python-for` label is a QAIRT version, checked against the build id the compiler
writes. Without `--python-for`, only this interpreter's onnxruntime-qnn is measured.

For every QAIRT, every `htp_arch` ONNX Runtime's QNN EP takes (68, 69, 73, 75, 79, 81) and one it does not
(85), and several models and settings (MODELS, COMBOS), it compiles:
- generic: `soc_model 0` with `htp_arch` N, as a local build that forgot the SoC;
- default: `soc_model` D alone, where D is the arch's SoC the generic build recorded (or, where the generic
  build recorded 0, the arch's SoC the newest QAIRT recorded), and once D with the arch beside it;
- others: two more SoCs of the arch (OTHERS), for the options an explicit SoC choice moves;
- no arch: `soc_model 0` and nothing else;
- probes: one setting changed at a time on the default build (VTCM 2 and 8 MiB, optimization level 1 and 3),
  for which compiler options follow which setting.
Each build is read back with q9diff's own reader: the socModel and dspArch it records, every compiler option,
its op kinds and counts, its tensor types, its size. The raw builds go to `--raw` (outside the repository,
resumable: written after every compile); the committed data, q9diff/read/generic_measured.json, is
derived from them (`derive`): per QAIRT and arch, what a generic build records and the options whose value
tells it from every explicit build that records the same socModel, and per QAIRT, which options moved
when one setting moved. q9diff reads generic-build rules from that file only, and says "not measured"
for any QAIRT or arch it lacks. The machine is shared: one compile at a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from q9diff.backends.ort_qnn import OrtQnnBackend  # noqa: E402
from q9diff.read.generic import GENERIC_BUILDS_PATH, GENERIC_MEASURED_PATH, op_base  # noqa: E402
from q9diff.read.openers import open_binary  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402

SCHEMA = "q9diff.generic_measured/1"
SCHEMA_BUILDS = "q9diff.generic_builds/1"
ARCHES = (68, 69, 73, 75, 79, 81)
UNTAKEN_ARCH = 85  # an arch the 2.51 compiler knows (SM8975) that ONNX Runtime's htp_arch does not take
# Two more SoCs per arch (q9diff/read/soc_measured.json: recorded dspArch and options arch both N).
OTHERS = {68: (39, 62), 69: (53, 42), 73: (77, 52), 75: (67, 82), 79: (75, 104), 81: (95, 97)}
# Where the generic build records socModel 0, the explicit build asked is the newest QAIRT's default.
FALLBACK_DEFAULT = {68: 30, 69: 36, 73: 43, 75: 57, 79: 69, 81: 87}
COMBOS = (  # (model, settings name): the generic and default builds of every arch
    ("mlp", "plain"),
    ("mlp", "ai_hub"),
    ("mlp", "low"),
    ("mlp_float", "plain"),
    ("spill_fill", "plain"),
    ("conv", "plain"),
    ("decoder", "plain"),
    ("decoder", "ai_hub"),
)
SETTINGS = {
    "plain": {},
    "ai_hub": {"vtcm_mb": 8, "optimization_level": 3},  # what AI Hub's builds set beside the SoC
    "low": {"vtcm_mb": 2, "optimization_level": 1},  # the other end: a signature must hold there too
}
OTHER_COMBOS = (("mlp", "plain"), ("decoder", "plain"))
PROBE_ARCHES = (73, 75)
PROBES = {"vtcm_2": {"vtcm_mb": 2}, "vtcm_8": {"vtcm_mb": 8}, "O_1": {"optimization_level": 1},
          "O_3": {"optimization_level": 3}, "vtcm_2_O3": {"vtcm_mb": 2, "optimization_level": 3},
          "vtcm_8_O3": {"vtcm_mb": 8, "optimization_level": 3}}  # fmt: skip
# probe -> (the setting it moves, the build it is compared with: "plain" or another probe)
PROBE_SETTING = {"vtcm_2": ("vtcm_size", "plain"), "vtcm_8": ("vtcm_size", "plain"),
                 "O_1": ("optimization_level", "plain"), "O_3": ("optimization_level", "plain"),
                 "vtcm_2_O3": ("vtcm_size", "O_3"), "vtcm_8_O3": ("vtcm_size", "O_3")}  # fmt: skip
GRAPH_FIELDS = ("vtcm_size", "optimization_level", "num_hvx_threads", "htp_dlbc")


# ---------- the models: committed fixtures where one fits, else made here from a seed ----------


def _conv_model(folder: Path) -> Path:
    """A small w8a8 convnet (3 conv layers with ReLU, a residual add, a global pool), seeded, quantized
    with ONNX Runtime's QNN QDQ config: a model of another kind than the fixtures' MLPs and decoders."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    rng = np.random.default_rng(47)

    def w(name, shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape,
                                  (rng.standard_normal(shape) * 0.2).astype(np.float32).ravel())  # fmt: skip

    inits = [w("w1", [16, 3, 3, 3]), w("w2", [16, 16, 3, 3]), w("w3", [16, 16, 3, 3]), w("b1", [16])]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "r1"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    float_path, out = folder / "conv.float.onnx", folder / "conv.onnx"
    onnx.save(model, float_path)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            feeds = [{"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(4)]
            self.items = iter(feeds)

        def get_next(self):
            return next(self.items, None)

    config = get_qnn_qdq_config(
        model, Reader(), activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8
    )
    quantize(str(float_path), str(out), config)
    return out


def models(folder: Path) -> dict[str, dict]:
    """name -> {path, precision (a recipe setting or None), what}; the conv model is made in `folder`."""
    variants, qwen = REPO / "fixtures" / "variants" / "models", REPO / "fixtures" / "qwen-mini" / "models"
    out = {
        "mlp": {"path": variants / "mlp.onnx", "what": "w8a16 MLP block (fixtures/variants)"},
        # float, with no precision setting: ONNX Runtime refuses enable_htp_fp16_precision beside soc_model 0
        "mlp_float": {"path": variants / "mlp.float.onnx", "what": "the float MLP block, no precision asked"},
        "spill_fill": {"path": variants / "spill_fill.onnx", "what": "w8a16 MLP whose activations spill"},
        "decoder": {"path": qwen / "part_2_of_2_ar1.onnx",
                    "what": "w8a16 decoder part: 2 layers, GQA, RoPE, KV cache, LM head (qwen-mini token)"},
        "conv": {"path": _conv_model(folder), "what": "w8a8 convnet, seeded, made by this script"},
    }  # fmt: skip
    for m in out.values():
        m["sha256"] = hashlib.sha256(Path(m["path"]).read_bytes()).hexdigest()
    return out


# ---------- one build ----------


def _compile(label: str, python: str, model: dict, asked: dict, work: Path) -> dict:
    settings = dict(asked)
    if model.get("precision"):
        settings["precision"] = model["precision"]
    part = rcp.Part("m", "m.bin", (rcp.GraphSource("g", str(model["path"])),))
    recipe = rcp.Recipe(backend="ort-qnn", parts=(part,), settings=rcp.Settings(**settings),
                        qairt_version=label, notes="measure_generic")  # fmt: skip
    backend = OrtQnnBackend(pythons={label: python}, timeout_s=900)
    try:
        backend.compile(recipe, work)
    except Exception as exc:  # the compiler's refusal is the measurement
        return {"error": " ".join(str(exc).split())[:300]}
    cb = open_binary(work / "m.bin")
    g = cb.graphs[0]
    return {
        "recorded": {"soc_model": cb.soc_model, "dsp_arch": cb.dsp_arch, "build_id": cb.build_id}
        | {k: getattr(g, k) for k in GRAPH_FIELDS},
        "options": dict(cb.options(0)),
        "ops": dict(sorted(Counter(cb.op_kinds(0)).items())),
        "tensor_types": sorted(set(cb.tensor_types(0))),
        "size": cb.size,
        "sha256": hashlib.sha256((work / "m.bin").read_bytes()).hexdigest(),
    }


def _asked_text(asked: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in asked.items()) or "nothing"


def jobs(label: str, raw: dict) -> list[tuple[str, str, str, str, dict]]:
    """(key, role, model, settings name, asked) for one QAIRT, in the order they are measured; the default
    SoC of an arch is read from that QAIRT's generic build once it is measured."""
    out = []
    for model, sname in COMBOS:
        base = SETTINGS[sname]
        out.append((f"{label}|noarch|{model}|{sname}", "no_arch", model, sname, {"soc_model": 0, **base}))
        for arch in ARCHES:
            out.append((f"{label}|v{arch}|{model}|{sname}|generic", "generic", model, sname,
                        {"soc_model": 0, "dsp_arch": f"v{arch}", **base}))  # fmt: skip
    out.append((f"{label}|v{UNTAKEN_ARCH}|mlp|plain|generic", "untaken_arch", "mlp", "plain",
                {"soc_model": 0, "dsp_arch": f"v{UNTAKEN_ARCH}"}))  # fmt: skip
    return out


def explicit_jobs(label: str, raw: dict) -> list[tuple[str, str, str, str, dict]]:
    out = []
    for arch in ARCHES:
        d = default_soc(raw, label, arch)
        for model, sname in COMBOS:
            base = SETTINGS[sname]
            out.append((f"{label}|v{arch}|{model}|{sname}|soc{d}", "default", model, sname,
                        {"soc_model": d, **base}))  # fmt: skip
        out.append((f"{label}|v{arch}|mlp|plain|soc{d}+arch", "default_with_arch", "mlp", "plain",
                    {"soc_model": d, "dsp_arch": f"v{arch}"}))  # fmt: skip
        for other in OTHERS[arch]:
            for model, sname in OTHER_COMBOS:
                out.append((f"{label}|v{arch}|{model}|{sname}|soc{other}", "other", model, sname,
                            {"soc_model": other, **SETTINGS[sname]}))  # fmt: skip
        if arch in PROBE_ARCHES:
            for probe, extra in PROBES.items():
                for model in ("mlp", "decoder"):
                    out.append((f"{label}|v{arch}|{model}|{probe}|soc{d}", "probe:" + probe, model, probe,
                                {"soc_model": d, **extra}))  # fmt: skip
    return out


def default_soc(raw: dict, label: str, arch: int) -> int:
    """The SoC a generic build of `arch` records under QAIRT `label` (its mlp build), or the fallback."""
    b = raw["builds"].get(f"{label}|v{arch}|mlp|plain|generic", {})
    recorded = b.get("recorded", {})
    if recorded.get("soc_model") and recorded.get("dsp_arch") == arch:
        return recorded["soc_model"]
    return FALLBACK_DEFAULT[arch]


# ---------- what the data says (written to the committed file) ----------


def derive(raw: dict) -> dict:
    """The committed data: per QAIRT, per arch asked, the generic build's record and signature; the options
    that followed each setting; and a compact row per build (the options that differ from the generic
    build of the same arch, model and settings), so the rules can be checked against the builds."""
    builds = raw["builds"]
    out = {
        "schema": SCHEMA,
        "commands": raw.get("commands", []),
        "measured_on": raw.get("measured_on"),
        "models": {
            k: {"what": v["what"], "sha256": v["sha256"], "precision": v.get("precision")}
            for k, v in raw["models"].items()
        },  # fmt: skip
        "settings": {k: _asked_text(v) for k, v in {**SETTINGS, **PROBES}.items()},
        "qairt": {},
    }
    for label, runtime in sorted(raw["runtimes"].items(), key=lambda kv: _vkey(kv[0])):
        mine = {k: v for k, v in builds.items() if k.split("|")[0] == label and "error" not in v}
        errors = {k: v["error"] for k, v in builds.items() if k.split("|")[0] == label and "error" in v}
        entry = {"runtime": runtime, "arches": {}, "no_arch": _no_arch(mine), "follows": _follows(mine),
                 "come_and_go": _come_and_go(mine), "errors": errors}  # fmt: skip
        for arch in (*ARCHES, UNTAKEN_ARCH):
            entry["arches"][str(arch)] = _arch(mine, label, arch)
        out["qairt"][label] = entry
    out["builds"] = _rows(builds)
    return out


def _vkey(label: str) -> tuple[int, ...]:
    return tuple(int(x) for x in label.split("."))


def _key_parts(key: str) -> dict:
    label, arch, model, sname, *rest = key.split("|")
    return {"qairt": label, "arch": arch, "model": model, "settings": sname, "build": rest[0] if rest else ""}


def _no_arch(mine: dict) -> dict:
    rec = {(b["recorded"]["soc_model"], b["recorded"]["dsp_arch"], b["options"].get("soc_type"))
           for k, b in mine.items() if "|noarch|" in k}  # fmt: skip
    return {"recorded": [{"soc_model": s, "dsp_arch": a, "soc_type": t} for s, a, t in sorted(rec, key=str)]}


def _arch(mine: dict, label: str, arch: int) -> dict:
    generic = {k: b for k, b in mine.items() if k.startswith(f"{label}|v{arch}|") and k.endswith("|generic")}
    if not generic:
        return {"measured": False}
    recorded = sorted({(b["recorded"]["soc_model"], b["recorded"]["dsp_arch"]) for b in generic.values()})
    soc_types = sorted({b["options"].get("soc_type") for b in generic.values()}, key=str)
    entry = {
        "measured": True,
        "asked": f"soc_model 0, htp_arch {arch}",
        "generic_builds": len(generic),
        "recorded": [{"soc_model": s, "dsp_arch": a} for s, a in recorded],
        "soc_type": soc_types,
    }
    if len(recorded) != 1 or recorded[0][0] == 0:
        # socModel 0 (or no single record): the metadata itself says generic, no signature needed
        return entry | {"signature": {}, "told_apart": recorded[0][0] == 0 if len(recorded) == 1 else None}
    soc, dsp = recorded[0]
    # every explicit build of this QAIRT that records the same socModel and dspArch: they must all differ
    explicit = {k: b for k, b in mine.items() if k.split("|")[0] == label and not k.endswith("|generic")
                and "|noarch|" not in k
                and (b["recorded"]["soc_model"], b["recorded"]["dsp_arch"]) == (soc, dsp)}  # fmt: skip
    keys = set().union(*(b["options"] for b in generic.values()))
    signature, explicit_values = {}, {}
    for key in sorted(keys):
        values = {b["options"].get(key) for b in generic.values()}
        if len(values) != 1 or None in values:
            continue  # the generic builds do not agree on it: it follows the model or a setting
        value = values.pop()
        theirs = {b["options"].get(key) for b in explicit.values()}
        if explicit and value not in theirs:
            signature[key], explicit_values[key] = value, sorted(theirs, key=str)
    combos = {(p["model"], p["settings"]) for p in map(_key_parts, generic)}
    return entry | {
        "default_soc": soc,
        "explicit_builds": len(explicit),
        "explicit_asked": sorted({_key_parts(k)["build"] for k in explicit}),
        "signature": signature,
        "explicit_values": explicit_values,
        "told_apart": bool(signature),
        "combos": sorted(f"{m}/{s}" for m, s in combos),
        "ops_only_in_generic": _ops_apart(generic, explicit, mine),
    }


def _ops_apart(generic: dict, explicit: dict, mine: dict) -> dict:
    """Per model and settings: the op kinds whose count differs between the generic build and the explicit
    build of the same model and settings (the scheduler's doing), generic minus explicit."""
    out = {}
    for k, g in sorted(generic.items()):
        p = _key_parts(k)
        for ke, e in explicit.items():
            pe = _key_parts(ke)
            if (pe["model"], pe["settings"]) == (p["model"], p["settings"]) and pe["build"].startswith("soc"):
                delta = Counter(g["ops"])
                delta.subtract(e["ops"])
                moved = {kind: n for kind, n in sorted(delta.items()) if n}
                if moved:
                    out[f"{p['model']}/{p['settings']}"] = moved
                break
    return out


def _follows(mine: dict) -> dict:
    """Which compiler options moved when one setting moved: soc_model (any two builds of one model and
    settings for two SoCs, of one arch or two, generic or explicit), vtcm_size, optimization_level (the
    probes against the default build), and model (two models built with the same settings asked).
    {setting: sorted option keys}."""
    out: dict[str, set] = {"soc_model": set(), "vtcm_size": set(), "optimization_level": set()}
    by_group: dict[tuple, dict] = {}
    for k, b in mine.items():
        p = _key_parts(k)
        if p["settings"] in SETTINGS and p["arch"] != "noarch" and "+arch" not in p["build"]:
            by_group.setdefault((p["model"], p["settings"]), {})[k] = b
    for group in by_group.values():  # any two SoCs (or generic and explicit), within and across arches
        names = sorted(group)
        for i, x in enumerate(names):
            for y in names[i + 1 :]:
                out["soc_model"] |= _options_apart(group[x], group[y])
    by_asked: dict[tuple, list] = {}  # the same settings asked of different models
    for k, b in mine.items():
        p = _key_parts(k)
        by_asked.setdefault((p["arch"], p["settings"], p["build"]), []).append(b)
    out["model"] = set()
    for group in by_asked.values():
        for i, x in enumerate(group):
            for y in group[i + 1 :]:
                out["model"] |= _options_apart(x, y)
    for k, b in mine.items():
        p = _key_parts(k)
        if p["settings"] in PROBES:
            setting, against = PROBE_SETTING[p["settings"]]
            base = mine.get("|".join([p["qairt"], p["arch"], p["model"], against, p["build"]]))
            if base:
                out[setting] |= _options_apart(base, b)
    return {k: sorted(v) for k, v in out.items()}


def _come_and_go(mine: dict) -> dict:
    """What the compiler adds or drops for one model when only settings move (SoC, arch, generic or not,
    VTCM, optimization level): the op kinds (by op_base) and the tensor-type codes present in some builds of
    a model and absent from others. A difference in these between two builds is the compiler's doing, not
    the model's."""
    ops, types = {}, {}
    for k, b in mine.items():
        model = _key_parts(k)["model"]
        ops.setdefault(model, []).append({op_base(x) for x in b["ops"]})
        types.setdefault(model, []).append(set(b["tensor_types"]))
    moved_ops = set().union(*(set.union(*v) - set.intersection(*v) for v in ops.values()))
    moved_types = set().union(*(set.union(*v) - set.intersection(*v) for v in types.values()))
    return {"op_kinds": sorted(moved_ops), "tensor_types": sorted(moved_types)}


def _options_apart(a: dict, b: dict) -> set[str]:
    oa, ob = a["options"], b["options"]
    return {k for k in set(oa) | set(ob) if oa.get(k) != ob.get(k)}


def _rows(builds: dict) -> list[dict]:
    """One row per build: what was asked, what it recorded, and its options that differ from the generic
    build of the same QAIRT, arch, model and settings (all of them for the generic build itself: none)."""
    rows = []
    for k, b in sorted(builds.items()):
        p = _key_parts(k)
        row = {"key": k, **p}
        if "error" in b:
            rows.append(row | {"error": b["error"]})
            continue
        generic = builds.get("|".join([p["qairt"], p["arch"], p["model"], p["settings"], "generic"]))
        apart = None
        if generic and "error" not in generic and p["arch"] != "noarch":
            go, bo = generic["options"], b["options"]
            apart = {x: [go.get(x), bo.get(x)] for x in sorted(set(go) | set(bo)) if go.get(x) != bo.get(x)}
        rec = b["recorded"]
        rows.append(row | {"soc_model": rec["soc_model"], "dsp_arch": rec["dsp_arch"],
                           "build_id": rec["build_id"],
                           "soc_type": b["options"].get("soc_type"), "size": b["size"], "sha256": b["sha256"],
                           "options_vs_generic": apart})  # fmt: skip
    return rows


def _dump(data: dict) -> tuple[str, str]:
    """The rules (what q9diff loads on every run, kept small) and the build rows (what the tests check the
    rules against), each JSON with one line per row, so a diff of two runs reads row by row."""
    rows = data.pop("builds")
    head = {"schema": SCHEMA_BUILDS, "commands": data["commands"], "measured_on": data["measured_on"]}
    body = ",\n".join("  " + json.dumps(r) for r in rows)
    builds = json.dumps(head, indent=1)[:-2] + ',\n "builds": [\n' + body + "\n ]\n}\n"
    return json.dumps(data, indent=1) + "\n", builds


# ---------- the run ----------


def _qairt_of(python: str) -> dict:
    """The runtime's onnxruntime-qnn version (the QAIRT one is read from the builds' build id)."""
    import subprocess

    code = "from importlib import metadata; print(metadata.version('onnxruntime-qnn'))"
    out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    return {"onnxruntime_qnn": out.stdout.strip() or None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-for", action="append", default=[], metavar="QAIRT=PYTHON")
    ap.add_argument("--raw", type=Path, default=Path(tempfile.gettempdir()) / "q9diff-measure-generic.json")
    ap.add_argument("--out", type=Path, default=GENERIC_MEASURED_PATH)
    ap.add_argument("--derive-only", action="store_true", help="write --out from --raw, compile nothing")
    args = ap.parse_args(argv)
    raw = json.loads(args.raw.read_text()) if args.raw.is_file() else {"builds": {}, "runtimes": {}}
    if not args.derive_only:
        pythons = [item.split("=", 1) for item in args.python_for] or [["", sys.executable]]
        work = Path(tempfile.mkdtemp(prefix="q9diff-measure-generic-"))
        try:
            raw["models"] = {k: {kk: str(vv) if kk == "path" else vv for kk, vv in v.items()}
                             for k, v in models(work).items()}  # fmt: skip
            for label, python in pythons:
                label = label or _here_label(raw, work)
                raw["runtimes"][label] = _qairt_of(python)
                _measure(raw, label, python, args.raw, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        command = "python scripts/measure_generic.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
        raw["commands"] = sorted(set(raw.get("commands", [])) | {command})
        raw["measured_on"] = dt.date.today().isoformat()
        rcp.write_atomic(args.raw, json.dumps(raw))
    rules, builds = _dump(derive(raw))
    rcp.write_atomic(args.out, rules)
    rcp.write_atomic(args.out.with_name(GENERIC_BUILDS_PATH.name), builds)
    print(f"wrote {args.out} and {GENERIC_BUILDS_PATH.name} beside it", file=sys.stderr)
    return 0


def _here_label(raw: dict, work: Path) -> str:
    from q9diff.backends.ort_qnn import our_qairt

    version = our_qairt() or ""
    return ".".join(version.split(".")[:2]) or "here"


def _measure(raw: dict, label: str, python: str, raw_path: Path, work: Path) -> None:
    model_paths = {k: v for k, v in raw["models"].items()}
    for stage in (jobs, explicit_jobs):
        for key, role, model, _settings, asked in stage(label, raw):
            done = raw["builds"].get(key)
            if done and done.get("model_sha256") == model_paths[model]["sha256"]:
                continue
            out = work / "build"
            shutil.rmtree(out, ignore_errors=True)
            result = _compile(label, python, model_paths[model], asked, out)
            result |= {"role": role, "asked": asked, "model_sha256": model_paths[model]["sha256"]}
            build_id = result.get("recorded", {}).get("build_id", "")
            if build_id and not build_id.lstrip("v").startswith(label + "."):
                raise SystemExit(f"--python-for {label}={python}: its compiler wrote build id {build_id}")
            raw["builds"][key] = result
            rcp.write_atomic(raw_path, json.dumps(raw))
            rec = result.get("recorded", {})
            said = result.get("error") or f"socModel {rec.get('soc_model')} dspArch {rec.get('dsp_arch')}"
            print(key, said, flush=True)
    os.sync()


if __name__ == "__main__":
    sys.exit(main())
