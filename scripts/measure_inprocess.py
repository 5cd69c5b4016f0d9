"""Measure what a build records when it is compiled in ONE process after other builds, in every order, and
whether it computes the same as the same build made in a fresh process; commit what survives as data.

    python scripts/measure_inprocess.py --python-for 2.51=.venv/bin/python \\
        --python-for 2.48=/tmp/ort-2.4/bin/python [--keep DIR] [--emulate]
    python scripts/measure_inprocess.py --derive-only      # write the data again from the raw builds

An older QAIRT is one Python 3.11 venv beside (made as scripts/make_fixtures.py says):
    python3.11 -m venv /tmp/ort-2.4 && /tmp/ort-2.4/bin/pip install \
        -c scripts/fixtures-constraints/qairt-2.48.txt onnxruntime-qnn onnxruntime onnx -e .
Measured so far: QAIRT 2.51 and 2.48 (2.47, 2.49, 2.50: not measured, and q9diff says so for a build made
after another on them). Other front ends: ExecuTorch's QNN AOT path compiles a .pte's delegates in one
process (fixtures/pte/two_delegates.pte: its second context is PICKLE/257), not measured here in every order;
q9diff's own recompile (ort-qnn, qairt, qnn-cli backends, and the Genie bundles built through them) compiles
each part in a child process of its own, so each is its process's first compile.

A script that builds its variants in a loop (one ONNX Runtime process, one Python session) compiles each
after the ones before it. scripts/measure_generic.py builds each in a fresh process; this script builds
sequences in one child process per sequence (ORDERS), for every arch ONNX Runtime's QNN EP takes and a few
small models (MODELS), where G is a generic build (soc_model 0, htp_arch N), E the arch's stand-in SoC
(generic_measured.json's default_soc: what a fresh G records), S another SoC of the arch with VTCM 2 MiB
and optimization level 1, XE and XG an explicit and a generic build of another arch. Each build is read
back with q9diff's reader: socModel, dspArch, every compiler option, its record names (the compiler numbers
a process's graphs: PICKLE/256 is the first), op kinds; with --emulate, a fresh G and the G built after E
are run on the x86 HTP emulator (this interpreter's onnxruntime-qnn, so only builds of its QAIRT) on seeded
inputs, and their outputs compared bit for bit.

The committed data, q9diff/read/inprocess_measured.json, says per QAIRT and arch: which record number a
fresh build carries and whether every build made after another carries a higher one (so a file shows it);
for each option of the generic signature (generic_measured.json), its value in the generic and explicit
builds of every order, and whether it survives every order; the options and op kinds that do; and the
emulator comparison. q9diff reads it to say "cannot tell" where a signature does not survive the order the
file shows (q9diff.read.generic). Raw builds go to --raw (outside the repository), written after every
sequence. One compile at a time: the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from measure_generic import ARCHES, FALLBACK_DEFAULT, OTHERS, _conv_model  # noqa: E402

from q9diff.read.generic import GENERIC_MEASURED_PATH, op_base  # noqa: E402
from q9diff.read.inprocess import INPROCESS_BUILDS_PATH, INPROCESS_PATH  # noqa: E402
from q9diff.read.openers import open_binary  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402

SCHEMA = "q9diff.inprocess_measured/1"
SCHEMA_BUILDS = "q9diff.inprocess_builds/1"
# order name -> the builds one process compiles, in turn; the last build is the one measured against fresh
ORDERS = {
    "fresh_generic": ("G",),
    "fresh_explicit": ("E",),
    "explicit>generic": ("E", "G"),
    "generic>explicit": ("G", "E"),
    "generic>generic": ("G", "G"),
    "explicit>other>generic": ("E", "S", "G"),
    "generic>explicit>generic": ("G", "E", "G"),
    "other_arch_explicit>generic": ("XE", "G"),
    "other_arch_generic>generic": ("XG", "G"),
    "other>explicit": ("S", "E"),
}
MODELS = ("mlp", "mlp_float", "conv")


def models(folder: Path) -> dict[str, dict]:
    variants = REPO / "fixtures" / "variants" / "models"
    out = {
        "mlp": {"path": variants / "mlp.onnx", "what": "w8a16 MLP block (fixtures/variants)"},
        "mlp_float": {"path": variants / "mlp.float.onnx", "what": "the float MLP block, no precision asked"},
        "conv": {"path": _conv_model(folder), "what": "w8a8 convnet (scripts/measure_generic.py's)"},
    }
    for m in out.values():
        m["path"] = str(m["path"])
        m["sha256"] = hashlib.sha256(Path(m["path"]).read_bytes()).hexdigest()
    return out


def stand_in(label: str, arch: int) -> int:
    """The SoC a fresh generic build of `arch` records on this QAIRT (its explicit twin)."""
    data = json.loads(GENERIC_MEASURED_PATH.read_text())
    entry = data["qairt"].get(label, {}).get("arches", {}).get(str(arch), {})
    return entry.get("default_soc") or FALLBACK_DEFAULT[arch]


def asked(label: str, arch: int, role: str) -> dict[str, str]:
    """QNN EP provider options for one role of an arch's sequence."""
    other_arch = ARCHES[(ARCHES.index(arch) + 1) % len(ARCHES)]
    return {
        "G": {"soc_model": "0", "htp_arch": str(arch)},
        "E": {"soc_model": str(stand_in(label, arch))},
        "S": {
            "soc_model": str(OTHERS[arch][0]),
            "vtcm_mb": "2",
            "htp_graph_finalization_optimization_mode": "1",
        },
        "XE": {"soc_model": str(stand_in(label, other_arch))},
        "XG": {"soc_model": "0", "htp_arch": str(other_arch)},
    }[role]


# ---------- the child: one process compiles a sequence ----------


def child(job_path: Path) -> None:
    """Compile every build of the job in THIS process, in order, as a user's loop would."""
    import onnxruntime as ort
    import onnxruntime_qnn as oq

    from q9diff.backends.ort_qnn import EP_NAME, _session_options, _stable_model_path

    ort.set_default_logger_severity(3)
    job = json.loads(job_path.read_text())
    plugin = hasattr(ort, "register_execution_provider_library") and hasattr(oq, "get_library_path")
    devices = []
    if plugin:
        ort.register_execution_provider_library(EP_NAME, oq.get_library_path())
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME][:1]
    home, done = os.getcwd(), []
    for i, build in enumerate(job["builds"]):
        work = Path(job["work"]) / f"b{i}"
        work.mkdir(parents=True)
        so = _session_options(ort, work / "ctx.onnx", False, True)
        model = _stable_model_path(Path(build["model"]), "g", work / "graph0")
        options = {"backend_type": "htp", **build["options"]}
        try:
            if plugin:
                so.add_provider_for_devices(devices, options)
                ort.InferenceSession(model, so)
            else:
                classic = {**options, "backend_path": oq.get_qnn_htp_path()}
                ort.InferenceSession(model, so, providers=[(EP_NAME, classic)])
            binary = next(work.glob("*.bin"))
            os.replace(binary, build["out"])
            done.append({"out": build["out"]})
        except Exception as exc:  # the compiler's refusal is the measurement
            done.append({"error": " ".join(str(exc).split())[:300]})
        os.chdir(home)
    Path(job["result"]).write_text(json.dumps(done))


def run_sequence(python: str, builds: list[dict], work: Path) -> list[dict]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    job = {"builds": builds, "work": str(work / "w"), "result": str(work / "result.json")}
    (work / "job.json").write_text(json.dumps(job))
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    subprocess.run([python, str(Path(__file__).resolve()), "--child", str(work / "job.json")], env=env,
                   cwd=work, capture_output=True, timeout=900, check=True)  # fmt: skip
    return json.loads((work / "result.json").read_text())


def read_build(path: Path) -> dict:
    cb = open_binary(path)
    names = [r.name for r in cb.records if r.name.startswith("PICKLE/")]
    numbers = [int(n.split("/")[1]) for n in names if n.split("/")[1].isascii() and n.split("/")[1].isdigit()]
    return {
        "soc_model": cb.soc_model, "dsp_arch": cb.dsp_arch, "build_id": cb.build_id,
        "options": dict(cb.options(0)), "records": names, "graph_number": min(numbers, default=None),
        "graphs": [g.name for g in cb.graphs],
        "ops": dict(sorted(Counter(op_base(k) for k in cb.op_kinds(0)).items())),
        "tensor_types": sorted(set(cb.tensor_types(0))), "requested": cb.requested.generic, "size": cb.size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }  # fmt: skip


def measure(raw: dict, label: str, python: str, keep: Path, raw_path: Path, work: Path) -> None:
    for arch in ARCHES:
        for model in MODELS:
            for order, roles in ORDERS.items():
                key = f"{label}|v{arch}|{model}|{order}"
                if key in raw["sequences"]:
                    continue
                folder = keep / label / f"v{arch}" / model / order
                folder.mkdir(parents=True, exist_ok=True)
                path = raw["models"][model]["path"]
                builds = [
                    {"model": path, "options": asked(label, arch, r), "out": str(folder / f"{i}_{r}.bin")}
                    for i, r in enumerate(roles)
                ]
                results = run_sequence(python, builds, work)
                seq = []
                for role, build, result in zip(roles, builds, results, strict=True):
                    row = {"role": role, "asked": build["options"], "bin": build["out"]}
                    seq.append(row | (result if "error" in result else read_build(Path(build["out"]))))
                raw["sequences"][key] = seq
                rcp.write_atomic(raw_path, json.dumps(raw))
                last = seq[-1]
                print(key, last.get("error") or (last["graph_number"], last["options"].get(
                    "relaxed_precision_flag"), last["requested"]), flush=True)  # fmt: skip


# ---------- the emulator: is it the same program? ----------


def emulate(raw: dict, label: str) -> None:
    """Run a fresh generic build and the generic build made after an explicit one on the x86 HTP emulator
    (this interpreter's QAIRT), on three seeded inputs, and compare their outputs bit for bit."""
    import numpy as np

    from q9diff.runners.local import LocalRunner
    from q9diff.verify.run import seeded_inputs

    for arch in ARCHES:
        for model in MODELS:
            key = f"{label}|v{arch}|{model}"
            if key in raw["emulated"]:
                continue
            fresh = raw["sequences"].get(f"{key}|fresh_generic", [{}])[-1]
            later = raw["sequences"].get(f"{key}|explicit>generic", [{}])[-1]
            if "bin" not in fresh or "bin" not in later or "error" in fresh or "error" in later:
                continue
            outs = []
            for path in (fresh["bin"], later["bin"]):
                session = LocalRunner(timeout_s=600).open([Path(path)])
                try:
                    graph = session.graphs[0]
                    outs.append([session.run(graph, seeded_inputs(graph, seed)) for seed in range(3)])
                finally:
                    session.close()
            same = all(np.array_equal(a[k], b[k]) for a, b in zip(*outs) for k in a)
            worst = max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))))
                        for a, b in zip(*outs) for k in a)  # fmt: skip
            raw["emulated"][key] = {"identical": same, "max_abs_diff": worst, "inputs": 3,
                                    "same_bytes": fresh["sha256"] == later["sha256"]}  # fmt: skip
            print("emulated", key, raw["emulated"][key], flush=True)


# ---------- what the data says (the committed file) ----------


def derive(raw: dict) -> dict:
    """Per QAIRT and arch: the graph numbers fresh and later builds carry, the signature options' values
    per order and role, what survives every order, and the emulator comparison."""
    signatures = json.loads(GENERIC_MEASURED_PATH.read_text())["qairt"]
    out = {
        "schema": SCHEMA,
        "commands": raw.get("commands", []),
        "measured_on": raw.get("measured_on"),
        "orders": {k: " then ".join(v) for k, v in ORDERS.items()},
        "roles": {"G": "soc_model 0, htp_arch N (generic)", "E": "soc_model D, the SoC a fresh G records",
                  "S": "another SoC of the arch, VTCM 2 MiB, optimization level 1",
                  "XE": "the next arch's stand-in SoC", "XG": "soc_model 0, the next arch"},
        "models": {k: {"what": v["what"], "sha256": v["sha256"]} for k, v in raw["models"].items()},
        "qairt": {},
    }  # fmt: skip
    labels = sorted({k.split("|")[0] for k in raw["sequences"]}, key=lambda v: tuple(map(int, v.split("."))))
    for label in labels:
        # options that follow a setting a user asks (VTCM, optimization level): never a sign of the target
        follows = signatures.get(label, {}).get("follows", {})
        user_set = frozenset(follows.get("vtcm_size", []) + follows.get("optimization_level", []))
        arches = {}
        for arch in ARCHES:
            seqs = {k.split("|", 2)[2]: v for k, v in raw["sequences"].items()
                    if k.startswith(f"{label}|v{arch}|")}  # fmt: skip
            if seqs:
                sig = signatures.get(label, {}).get("arches", {}).get(str(arch), {}).get("signature", {})
                arches[str(arch)] = _arch(seqs, sig, raw.get("emulated", {}), f"{label}|v{arch}", user_set)
        out["qairt"][label] = {"arches": arches, "float_graphs": _float_graphs(raw, label)}
    return out


def _float_graphs(raw: dict, label: str) -> dict:
    """For the float model (no precision asked): how many builds had fp16 tensors (type codes with `e`, as
    q9diff's precision reading takes them), by the relaxed_precision_flag they wrote."""
    out: dict[str, dict[str, int]] = {}
    for key, seq in raw["sequences"].items():
        if key.startswith(f"{label}|") and key.split("|")[2] == "mlp_float":
            for b in seq:
                if "error" not in b and "tensor_types" in b:
                    flag = b["options"].get("relaxed_precision_flag")
                    kind = "fp16" if any(t.endswith("e") for t in b["tensor_types"]) else "no fp16"
                    at = out.setdefault(f"relaxed_precision_flag={flag}", {})
                    at[kind] = at.get(kind, 0) + 1
    return out


def rows(raw: dict) -> str:
    """Every build, one JSON line each: what q9diff.read.generic.requested reads (socModel, dspArch, build id,
    graph number, the signature options' values) and what was asked (role), so a test can run the rule
    on every measured build."""
    signatures = json.loads(GENERIC_MEASURED_PATH.read_text())["qairt"]
    out = []
    for key, seq in sorted(raw["sequences"].items()):
        label, arch, model, order = key.split("|")
        arches = signatures.get(label, {}).get("arches", {}).values()
        sig = sorted({k for a in arches for k in a.get("signature", {})})  # any arch's: XE, XG are another
        for i, b in enumerate(seq):
            if "error" in b:
                continue
            out.append({"qairt": label, "arch": int(arch[1:]), "model": model, "order": order, "position": i,
                        "role": b["role"], "soc_model": b["soc_model"], "dsp_arch": b["dsp_arch"],
                        "build_id": b["build_id"], "graph_number": b["graph_number"],
                        "options": {k: b["options"].get(k) for k in sig}})  # fmt: skip
    head = {"schema": SCHEMA_BUILDS, "commands": raw.get("commands", [])}
    body = ",\n".join("  " + json.dumps(r) for r in out)
    return json.dumps(head, indent=1)[:-2] + ',\n "builds": [\n' + body + "\n ]\n}\n"


def _builds(seqs: dict) -> list[dict]:
    """Every build of an arch's sequences with its model, order, position and whether one came before."""
    rows = []
    for key, seq in seqs.items():
        model, order = key.split("|")
        for i, b in enumerate(seq):
            if "error" not in b:
                rows.append(b | {"model": model, "order": order, "position": i, "after": i > 0})
    return rows


def _arch(seqs: dict, signature: dict, emulated: dict, prefix: str, user_set: frozenset) -> dict:
    rows = _builds(seqs)
    generic = [b for b in rows if b["role"] == "G"]
    explicit = [b for b in rows if b["role"] == "E"]
    first = sorted({b["graph_number"] for b in rows if not b["after"]}, key=str)
    later = sorted({b["graph_number"] for b in rows if b["after"]}, key=str)
    shows = bool(first) and None not in first + later and max(first) < min(later, default=max(first) + 1)
    values = {}  # signature option -> order -> role@position -> the values written
    for key in signature:
        for b in rows:
            if b["role"] in ("G", "E"):
                at = values.setdefault(key, {}).setdefault(b["order"], {})
                at.setdefault(f"{b['role']}@{b['position']}", set()).add(b["options"].get(key))
    survives = {k: _apart(generic, explicit, k, v) for k, v in signature.items()}
    keys = set().union(*(b["options"] for b in generic + explicit)) - set(user_set)
    survivors = sorted(k for k in keys if _apart_any(generic, explicit, k))
    g_ops = [frozenset(b["ops"].items()) for b in generic]
    e_ops = [frozenset(b["ops"].items()) for b in explicit]
    recorded = sorted({(b["soc_model"], b["dsp_arch"]) for b in generic}, key=str)
    return {
        "generic_recorded": [{"soc_model": s, "dsp_arch": a} for s, a in recorded],
        "builds": len(rows),
        "graph_number": {"first_in_process": first, "after_another": later, "file_shows_after": shows},
        "signature": signature,
        "signature_values": {
            k: {o: {r: sorted(v, key=str) for r, v in rs.items()} for o, rs in per.items()}
            for k, per in values.items()
        },  # fmt: skip
        "signature_survives": survives,
        "survivors": survivors,  # besides the options that follow VTCM or the optimization level
        "user_set_excluded": sorted(user_set),
        "ops_tell_apart": not (set(g_ops) & set(e_ops)) if g_ops and e_ops else None,
        "emulated": {k.rsplit("|", 1)[1]: v for k, v in emulated.items() if k.startswith(prefix + "|")},
    }


def _apart(generic: list[dict], explicit: list[dict], key: str, value: str) -> dict:
    """Whether option `key` keeps the generic `value` in every generic build and never in an explicit one,
    and the orders that break it."""
    broke_g = sorted({b["order"] for b in generic if b["options"].get(key) != value})
    broke_e = sorted({b["order"] for b in explicit if b["options"].get(key) == value})
    return {
        "holds": not broke_g and not broke_e,
        "generic_differs_in": broke_g,
        "explicit_matches_in": broke_e,
    }


def _apart_any(generic: list[dict], explicit: list[dict], key: str) -> bool:
    """An option whose one value every generic build writes and no explicit build does."""
    g = {b["options"].get(key) for b in generic}
    return len(g) == 1 and None not in g and not g & {b["options"].get(key) for b in explicit}


# ---------- the run ----------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-for", action="append", default=[], metavar="QAIRT=PYTHON")
    tmp = Path(tempfile.gettempdir())
    ap.add_argument("--raw", type=Path, default=tmp / "q9diff-measure-inprocess.json")
    ap.add_argument("--keep", type=Path, default=tmp / "q9diff-measure-inprocess")
    ap.add_argument("--out", type=Path, default=INPROCESS_PATH)
    ap.add_argument("--emulate", action="store_true", help="also run fresh vs later generic builds")
    ap.add_argument("--derive-only", action="store_true", help="write --out from --raw, compile nothing")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    raw = json.loads(args.raw.read_text()) if args.raw.is_file() else {}
    raw.setdefault("sequences", {})
    raw.setdefault("emulated", {})
    if not args.derive_only:
        work = Path(tempfile.mkdtemp(prefix="q9diff-measure-inprocess-"))
        try:
            raw["models"] = models(args.keep)
            for item in args.python_for or [f"{_here()}={sys.executable}"]:
                label, python = item.split("=", 1)
                measure(raw, label, python, args.keep, args.raw, work)
                if args.emulate and Path(python).resolve() == Path(sys.executable).resolve():
                    emulate(raw, label)
                    rcp.write_atomic(args.raw, json.dumps(raw))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        command = "python scripts/measure_inprocess.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
        raw["commands"] = sorted(set(raw.get("commands", [])) | {command})
        raw["measured_on"] = dt.date.today().isoformat()
        rcp.write_atomic(args.raw, json.dumps(raw))
    rcp.write_atomic(args.out, json.dumps(derive(raw), indent=1) + "\n")
    rcp.write_atomic(args.out.with_name(INPROCESS_BUILDS_PATH.name), rows(raw))
    print(f"wrote {args.out} and {INPROCESS_BUILDS_PATH.name} beside it", file=sys.stderr)
    return 0


def _here() -> str:
    from q9diff.backends.ort_qnn import our_qairt

    return ".".join((our_qairt() or "").split(".")[:2])


if __name__ == "__main__":
    sys.exit(main())
