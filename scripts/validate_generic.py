"""Check q9diff's generic-target rules on builds it has never seen: held-out models, every arch, every QAIRT.

    python scripts/validate_generic.py --python-for 2.48=/work/venvs/ort-2.4/bin/python \\
        --python-for 2.49=/work/venvs/ort-2.5/bin/python --python-for 2.50=/work/venvs/ort-2.6/bin/python \\
        --python-for 2.51=/work/venvs/ort-2.7/bin/python [--out DIR] [--json]

scripts/measure_generic.py measured what the compiler does on five models; this script builds three others
(HELD_OUT: a SiLU-gated MLP of other widths, a 5x5 convnet with 16-bit activations, the qwen-mini prompt
graph)
for every arch under every QAIRT given: a generic build (soc_model 0 with htp_arch N), the arch's stand-in
SoC and another SoC of the arch (generic_measured.json's default_soc and scripts/measure_generic.OTHERS), and
judges what the real command line says of them (with --vtcm, also a VTCM 2 MiB / 8 MiB pair on the
stand-in SoC, whose root cause must be vtcm_size alone):
- `q9diff inspect --json`: target.generic_target is true for the generic build and false for the others;
- `q9diff A B --json` for generic vs stand-in, generic vs the other SoC, and stand-in vs other: the root
  causes are soc_model alone (with dsp_arch where the generic build recorded another arch), no difference is
  left with no known cause, and the suggestion sets the reference's soc_model.
With --in-process the three builds of each model and arch are compiled in ONE process, as a script that
builds its variants in a loop does, in each of IN_PROCESS_ORDERS (scripts/measure_inprocess.py's child): each
side must be told as asked or said "cannot tell", and no diff may name a root cause other than soc_model
and dsp_arch, a soc_model the reference did not ask, a fix to it, or "arguments swapped" (the reference is
always an explicit build); a pair is counted told (soc_model named, fixed to the reference's SoC) or untold
(soc_model "not compared", with the reason).
Builds are kept in --out (default: a temp dir) and reused on a second run. Exit 0 when every check holds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import fixture_models as fm  # noqa: E402
from measure_generic import ARCHES, FALLBACK_DEFAULT, OTHERS  # noqa: E402

from q9diff.backends.ort_qnn import OrtQnnBackend  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402


def _silu_mlp(path: Path) -> Path:
    """A SiLU-gated MLP block (x * sigmoid(x)), widths unlike the measured ones, w8a16. (Erf, for GELU, falls
    back to the CPU on v68, which the compile refuses.)"""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(4711)
    seq, width, hidden = 24, 96, 320

    def init(name, shape, scale):
        values = (rng.standard_normal(shape) * scale).astype(np.float32).ravel()
        return helper.make_tensor(name, TensorProto.FLOAT, shape, values)

    inits = [init("w1", [width, hidden], width**-0.5), init("w2", [hidden, width], hidden**-0.5),
             init("wg", [width, hidden], width**-0.5)]  # fmt: skip
    nodes = [
        helper.make_node("MatMul", ["x", "wg"], ["gate"]),
        helper.make_node("Sigmoid", ["gate"], ["sg"]),
        helper.make_node("Mul", ["gate", "sg"], ["silu"]),
        helper.make_node("MatMul", ["x", "w1"], ["up"]),
        helper.make_node("Mul", ["silu", "up"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["m"]),
        helper.make_node("Add", ["x", "m"], ["y"]),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "silu_mlp", [helper.make_tensor_value_info("x", f, [1, seq, width])],
                              [helper.make_tensor_value_info("y", f, [1, seq, width])], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return fm.quantize_w8a16(model, fm.mlp_calibration(model, seed=9), path)


def _conv_a16(path: Path) -> Path:
    """A convnet of 5x5 kernels with 16-bit activations and 8-bit weights."""
    import numpy as np
    from onnx import TensorProto, helper
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    rng = np.random.default_rng(1234)

    def w(name, shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape,
                                  (rng.standard_normal(shape) * 0.1).astype(np.float32).ravel())  # fmt: skip

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[2, 2, 2, 2]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Conv", ["s1", "w2"], ["c2"], pads=[2, 2, 2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv_a16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 24, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])],
        [w("w1", [8, 4, 5, 5]), w("w2", [8, 8, 5, 5])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    float_path = path.with_name("conv_a16.float.onnx")
    import onnx

    onnx.save(model, float_path)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(
                [{"x": rng.standard_normal((1, 4, 24, 24)).astype(np.float32)} for _ in range(4)]
            )

        def get_next(self):
            return next(self.items, None)

    config = get_qnn_qdq_config(
        model, Reader(), activation_type=QuantType.QUInt16, weight_type=QuantType.QUInt8
    )
    quantize(str(float_path), str(path), config)
    return path


HELD_OUT = {
    "silu_mlp": _silu_mlp,
    "conv_a16": _conv_a16,
    "qwen_prompt": lambda path: REPO / "fixtures" / "qwen-mini" / "models" / "part_1_of_2_ar32.onnx",
}


def _stand_in(version: str, arch: int) -> int:
    """The arch's SoC a generic build records on this QAIRT, from the shipped data (its explicit twin)."""
    data = json.loads((REPO / "q9diff" / "read" / "generic_measured.json").read_text())
    entry = data["qairt"].get(version, {}).get("arches", {}).get(str(arch), {})
    return entry.get("default_soc") or FALLBACK_DEFAULT[arch]


def _build(out: Path, version: str, python: str, model: Path, name: str, settings: dict) -> Path:
    target = out / version / f"{name}.bin"
    if target.is_file():
        return target
    part = rcp.Part(name, f"{name}.bin", (rcp.GraphSource("g", str(model)),))
    recipe = rcp.Recipe(backend="ort-qnn", parts=(part,), settings=rcp.Settings(**settings),
                        qairt_version=version, notes="validate_generic")  # fmt: skip
    OrtQnnBackend(pythons={version: python}, timeout_s=900).compile(recipe, out / version)
    return target


def _q9diff(*args: str) -> dict:
    argv = [sys.executable, "-c", "from q9diff.cli import main; main()", *args, "--json"]
    run = subprocess.run(argv, capture_output=True, text=True,
                         timeout=300, cwd=REPO)  # fmt: skip
    if run.returncode not in (0, 1):
        raise SystemExit(f"q9diff {' '.join(args)}: exit {run.returncode}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def check(out: Path, version: str, python: str, model_name: str, model: Path, arch: int) -> list[dict]:
    d, o = _stand_in(version, arch), OTHERS[arch][0]
    builds = {
        "generic": _build(out, version, python, model, f"{model_name}_v{arch}_generic",
                          {"soc_model": 0, "dsp_arch": f"v{arch}"}),
        f"soc{d}": _build(out, version, python, model, f"{model_name}_v{arch}_soc{d}", {"soc_model": d}),
        f"soc{o}": _build(out, version, python, model, f"{model_name}_v{arch}_soc{o}", {"soc_model": o}),
    }  # fmt: skip
    results = []
    inspected = {k: _q9diff("inspect", str(p)) for k, p in builds.items()}
    for k, s in inspected.items():
        want = k == "generic"
        got = s["target"]["generic_target"]
        results.append({"check": f"inspect {k}", "ok": got is want, "said": s["target"]["evidence"][-1:]})
    for a, b in (("generic", f"soc{d}"), ("generic", f"soc{o}"), (f"soc{d}", f"soc{o}")):
        r = _q9diff(str(builds[a]), str(builds[b]))
        roots = sorted(c["name"] for c in r["causes"] if c["role"] == "root")
        loose = [c.get("option", c["name"]) for c in r["causes"] if c["role"] == "unexplained"]
        want = ["soc_model"] + (["dsp_arch"] if r["a"]["dsp_arch"] != r["b"]["dsp_arch"] else [])
        fix = [s["value"] for s in r["suggestions"] if s["setting"] == "soc_model"]
        ok = roots == sorted(want) and not loose and fix == [r["b"]["target"]["soc_model_requested"]]
        results.append({"check": f"diff {a} {b}", "ok": ok, "roots": roots, "unexplained": loose, "fix": fix})
    for r in results:
        r.update(qairt=version, model=model_name, arch=arch)
    return results


# Orders one process builds an arch's three builds in (a user's loop): D the stand-in SoC, G generic,
# O another SoC of the arch
IN_PROCESS_ORDERS = {"D>G>O": ("D", "G", "O"), "O>G>D": ("O", "G", "D"), "G>D>O": ("G", "D", "O")}


def _build_in_process(out: Path, version: str, python: str, model: Path, name: str, arch: int, order: str):
    """The three builds of `check`, compiled in ONE process in `order` (scripts/measure_inprocess.py's
    child), as a script that builds its variants in a loop does."""
    from measure_inprocess import run_sequence

    d, o = _stand_in(version, arch), OTHERS[arch][0]
    options = {"G": {"soc_model": "0", "htp_arch": str(arch)}, "D": {"soc_model": str(d)},
               "O": {"soc_model": str(o)}}  # fmt: skip
    folder = out / version / "in_process" / f"{name}_v{arch}_{order.replace('>', '')}"
    paths = {r: folder / f"{r}.bin" for r in IN_PROCESS_ORDERS[order]}
    if not all(p.is_file() for p in paths.values()):
        folder.mkdir(parents=True, exist_ok=True)
        builds = [{"model": str(model), "options": options[r], "out": str(paths[r])}
                  for r in IN_PROCESS_ORDERS[order]]  # fmt: skip
        done = run_sequence(python, builds, out / "work")
        bad = [b["error"] for b in done if "error" in b]
        if bad:
            raise SystemExit(f"{name} v{arch} {order}: {bad[0]}")
    return {"generic": paths["G"], f"soc{d}": paths["D"], f"soc{o}": paths["O"]}, d, o


def check_in_process(out: Path, version: str, python: str, model_name: str, model: Path, arch: int,
                     order: str) -> list[dict]:  # fmt: skip
    """Builds made in one process after others: each side is told as asked or said "cannot tell" (with
    the words), and no diff gets a wrong root cause (anything but soc_model and dsp_arch), a fix to a SoC
    the reference did not ask, or an "arguments swapped" (the reference is always an explicit build)."""
    builds, d, o = _build_in_process(out, version, python, model, model_name, arch, order)
    results = []
    for k, p in builds.items():
        t = _q9diff("inspect", str(p))["target"]
        want, got = k == "generic", t["generic_target"]
        untold = got is None and "cannot tell" in " ".join(t["evidence"])
        results.append({"check": f"inspect {k}", "ok": got is want or untold, "told": got,
                        "said": t["evidence"][-1:]})  # fmt: skip
    asked = {"generic": 0, f"soc{d}": d, f"soc{o}": o}
    for a, b in (("generic", f"soc{d}"), ("generic", f"soc{o}"), (f"soc{d}", f"soc{o}")):
        r = _q9diff(str(builds[a]), str(builds[b]))
        roots = sorted(c["name"] for c in r["causes"] if c["role"] == "root")
        loose = [c.get("option", c["name"]) for c in r["causes"] if c["role"] == "unexplained"]
        fix = [s["value"] for s in r["suggestions"] if s["setting"] == "soc_model"]
        soc = next((c for c in r["causes"] if c["name"] == "soc_model" and c["role"] == "root"), None)
        wrong = [x for x in roots if x not in ("soc_model", "dsp_arch")]
        wrong += [f"soc_model {soc['a']} -> {soc['b']}"] if soc and soc["b"] != asked[b] else []
        wrong += [f"fix {fix}"] if fix and fix != [asked[b]] else []
        wrong += ["arguments swapped"] if r.get("reference_looks_wrong") else []
        told = bool(soc) and fix == [asked[b]]
        untold = not soc and any(u["setting"] == "soc_model" for u in r.get("unknown", []))
        results.append({"check": f"diff {a} {b}", "ok": not wrong and (told or untold), "roots": roots,
                        "told": told, "unexplained": loose, "fix": fix, "wrong": wrong})  # fmt: skip
    for r in results:
        r.update(qairt=version, model=model_name, arch=arch, order=order)
    return results


def check_vtcm(out: Path, version: str, python: str, model_name: str, model: Path, arch: int) -> list[dict]:
    """VTCM 2 MiB against 8 MiB on the arch's stand-in SoC: the root cause is vtcm_size alone (no
    precision, no unexplained compiler option) and the suggestion sets 8 MiB."""
    d = _stand_in(version, arch)
    a, b = (
        _build(
            out,
            version,
            python,
            model,
            f"{model_name}_v{arch}_soc{d}_vtcm{mb}",
            {"soc_model": d, "vtcm_mb": mb},
        )
        for mb in (2, 8)
    )
    r = _q9diff(str(a), str(b))
    roots = sorted(c["name"] for c in r["causes"] if c["role"] == "root")
    loose = [c.get("option", c["name"]) for c in r["causes"] if c["role"] == "unexplained"]
    fix = [s["value"] for s in r["suggestions"] if s["setting"] == "vtcm_size"]
    ok = roots == ["vtcm_size"] and not loose and len(fix) == 1
    return [{"check": "diff vtcm 2 MiB 8 MiB", "ok": ok, "roots": roots, "unexplained": loose, "fix": fix,
             "qairt": version, "model": model_name, "arch": arch}]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-for", action="append", default=[], metavar="QAIRT=PYTHON", required=True)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "q9diff-validate-generic")
    ap.add_argument("--json", action="store_true", help="print every check as JSON")
    ap.add_argument(
        "--vtcm", action="store_true", help="also VTCM 2 MiB vs 8 MiB on each arch's stand-in SoC"
    )
    ap.add_argument("--arch", type=int, action="append", help="only these arches (default: every one)")
    ap.add_argument("--in-process", action="store_true", help="builds made in one process after others")
    ap.add_argument("--model", action="append", help="only these held-out models (default: every one)")
    args = ap.parse_args(argv)
    models_dir = args.out / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, make in HELD_OUT.items():
        if args.model and name not in args.model:
            continue
        path = models_dir / f"{name}.onnx"
        models[name] = path if path.is_file() else make(path)
    results = []
    for item in args.python_for:
        version, python = item.split("=", 1)
        for name, model in models.items():
            for arch in args.arch or ARCHES:
                if args.in_process:
                    checks = [
                        r
                        for order in IN_PROCESS_ORDERS
                        for r in check_in_process(args.out, version, python, name, model, arch, order)
                    ]
                else:
                    checks = check(args.out, version, python, name, model, arch)
                if args.vtcm:
                    checks += check_vtcm(args.out, version, python, name, model, arch)
                for r in checks:
                    results.append(r)
                    if not r["ok"]:
                        print("FAIL", json.dumps(r), file=sys.stderr, flush=True)
    bad = [r for r in results if not r["ok"]]
    if args.json:
        print(json.dumps(results, indent=1))
    print(f"{len(results) - len(bad)} of {len(results)} checks hold", file=sys.stderr)
    if args.in_process:
        sides = [r for r in results if r["check"].startswith("inspect")]
        pairs = [r for r in results if r["check"].startswith("diff")]
        told = sum(r["told"] is not None for r in sides)
        wrong = sum(not r["ok"] for r in sides)
        print(f"sides: {told} told ({wrong} wrong), {len(sides) - told} cannot tell; pairs:"
              f" {sum(r['told'] for r in pairs)} soc_model named and fixed,"
              f" {sum(not r['told'] and r['ok'] for r in pairs)} not compared (cannot tell),"
              f" {sum(bool(r['wrong']) for r in pairs)} with a wrong cause or fix",
              file=sys.stderr)  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
