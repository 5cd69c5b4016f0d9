"""Measure which QNN context binaries load on which of Qualcomm's runtimes, and commit it as data.

    python scripts/measure_compat.py --python-for 2.47=/work/venvs/ort-2.3/bin/python \\
        --python-for 2.48=/work/venvs/ort-2.4/bin/python --python-for 2.49=/work/venvs/ort-2.5/bin/python \\
        --python-for 2.50=/work/venvs/ort-2.6/bin/python --python-for 2.51=/work/venvs/ort-2.7/bin/python \\
        --real ../shared/real/binaries
    python scripts/measure_compat.py ... --redo     # measure every attempt again

Each runtime is one Python 3.11 venv with onnx and one onnxruntime-qnn wheel (QAIRT's x86 libraries):
    python3.11 -m venv /work/venvs/ort-2.3 && /work/venvs/ort-2.3/bin/pip install onnx \\
        onnxruntime-qnn==2.3.0 onnxruntime==1.24.4   # QAIRT 2.47.0; its EP fails on onnxruntime 1.32
    the same with onnxruntime-qnn==2.4.0 / 2.5.0 / 2.6.0 / 2.7.0 and onnxruntime==1.32.0
                                                     # QAIRT 2.48.40 / 2.49.40 / 2.50.40 / 2.51.0
A `--python-for` label is only a name: the QAIRT version of a runtime is read from its libQnnHtp.so.

An attempt wraps one context binary in a one-node EPContext model (embed_mode 0, node named after the
binary's first graph), creates an ONNX Runtime session with the QNN EP (`backend_path` = the wheel's
libQnnHtp.so, log severity verbose, so QNN's own messages come out) and runs it once on zeros, in a
child process of its own with a timeout (Qualcomm's libraries can crash). It records whether the
session was created (loaded) and the run succeeded (ran); the error lines of QNN, of the HTP core
(its ERROR and WARNING lines) and of ONNX Runtime, trimmed to their stable text (no timestamps, paths
or addresses); the QNN error numbers in them; and the pickle's global kernel version the core logs.

Binaries: every context binary under fixtures/ (variants, the Genie bundles' single-graph parts, and
the weight-shared 2-graph parts, which the x86 emulator refuses whatever their version) and the
third-party contexts under --real (plain .bin files and the contexts embedded in .onnx / .tflite
files, opened with q9diff's own openers; files that hold none are listed as skipped). q9diff reads
their metadata. Two more probes: header-edited copies of the fixtures built by each QAIRT version (in a
temp dir, never kept), each changing one metadata field (or the three version fields together) to show
which field the runtime checks; and on the newest runtime, one binary per HTP arch (v73, v75, v79,
v81) loaded with `soc_model` / `htp_arch` / `vtcm_mb` provider options, with the QNN warnings those
options cause.

The result, q9diff/load/compat_measured.json, is written atomically after every attempt, so an
interrupted run resumes where it stopped. The machine is shared: one attempt at a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import mmap
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from q9diff.formats import context_binary as CB  # noqa: E402
from q9diff.formats import flatbuffer_slots as S  # noqa: E402
from q9diff.read import flatbuf  # noqa: E402
from q9diff.read.openers import contexts, locate  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402
from q9diff.runners.base import graph_specs  # noqa: E402

SCHEMA = "q9diff.compat_measured/1"
OUT = REPO / "q9diff" / "load" / "compat_measured.json"
FIXTURE_GLOBS = ("fixtures/variants/*.bin", "fixtures/story/*/*.bin", "fixtures/qwen-mini/*/*.bin")
FIXTURE_GLOBS += ("fixtures/qwen-mini/*/genie/*.bin",)
QAIRT_FIXTURES = "fixtures/variants/qairt_*.bin"  # one build of the same model by each QAIRT version
# The runtime libraries whose version strings are read, and the ones searched in each.
LIBS = ("libQnnHtp.so", "libGenie.so", "libQnnHtpNetRunExtensions.so", "libQnnSystem.so")
AISW = re.compile(rb"AISW_VERSION: (\d+\.\d+\.\d+)")
BUILD_ID = re.compile(rb"v(\d+\.\d+\.\d+)\.(\d{12})(?![\d])")
# Device-option probe on the newest runtime: one binary per HTP arch, and the options tried.
PROBE_BINARIES = (  # v73, v75, v79, v81
    "fixtures/variants/soc_77.bin",
    "fixtures/variants/soc_57.bin",
    "fixtures/variants/soc_69.bin",
    "fixtures/variants/soc_87.bin",
)
PROBE_OPTIONS = [{"soc_model": s} for s in ("43", "57", "69", "77", "87")]
PROBE_OPTIONS += [{"htp_arch": a} for a in ("68", "73", "75", "79", "81")]
PROBE_OPTIONS += [{"soc_model": "57", "htp_arch": "68"}, {"soc_model": "87", "htp_arch": "73"}]
PROBE_OPTIONS += [{"vtcm_mb": "2"}]

# The child: `python -c CHILD info {}` describes its runtime; `python -c CHILD load SPEC` is one attempt.
# Every line it means for the parent starts with "Q9COMPAT " and is JSON.
CHILD = r"""
import json, os, sys


def say(**kw):
    print("Q9COMPAT " + json.dumps(kw), flush=True)


mode, arg = sys.argv[1], json.loads(sys.argv[2])
import onnxruntime as ort
import onnxruntime_qnn as oq

if mode == "info":
    import ctypes
    from importlib import metadata

    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]

    class Provider(ctypes.Structure):  # the head of a QnnInterface_t record
        _fields_ = [("backend_id", ctypes.c_uint32), ("name", ctypes.c_char_p), ("core", Version),
                    ("backend", Version)]

    lib = ctypes.CDLL(oq.get_qnn_htp_path())
    lib.QnnInterface_getProviders.restype = ctypes.c_uint64
    found, count = ctypes.POINTER(ctypes.POINTER(Provider))(), ctypes.c_uint32()
    rc = lib.QnnInterface_getProviders(ctypes.byref(found), ctypes.byref(count))
    providers = []
    for i in range(count.value if rc == 0 else 0):
        p = found[i].contents
        providers.append({"backend_id": p.backend_id, "name": p.name.decode(),
                          "core_api": [p.core.major, p.core.minor, p.core.patch],
                          "backend_api": [p.backend.major, p.backend.minor, p.backend.patch]})
    say(onnxruntime=ort.__version__, package=metadata.version("onnxruntime-qnn"),
        lib_dir=os.path.dirname(oq.get_qnn_htp_path()), providers=providers, rc=rc)
    sys.exit(0)

import numpy as np
from onnx import helper, save

TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
         "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}
work = arg["work"]
ins, outs = arg["inputs"], arg["outputs"]
node = helper.make_node("EPContext", [t[0] for t in ins], [t[0] for t in outs], name=arg["graph"],
                        domain="com.microsoft", embed_mode=0, ep_cache_context=arg["link"],
                        main_context=1, source="QNNExecutionProvider")
value = helper.make_tensor_value_info
graph = helper.make_graph([node], "compat", [value(t[0], TYPES[t[1]], t[2]) for t in ins],
                          [value(t[0], TYPES[t[1]], t[2]) for t in outs])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 9
save(model, os.path.join(work, "compat.onnx"))
try:
    ort.set_default_logger_severity(0)
    so = ort.SessionOptions()
    so.log_severity_level = 0
    options = {"backend_path": oq.get_qnn_htp_path(), **arg["options"]}
    ort.register_execution_provider_library("QNNExecutionProvider", oq.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"]
    so.add_provider_for_devices(devices[:1], options)
    session = ort.InferenceSession(os.path.join(work, "compat.onnx"), so)
    say(stage="loaded")
    session.run(None, {t[0]: np.zeros(t[2], dtype=t[1]) for t in ins})
    say(stage="ran")
except Exception as exc:
    say(error=str(exc))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


@dataclass(frozen=True)
class Binary:
    """A context binary to load: its name in the data, a file holding exactly its bytes, the graph the
    EPContext node names with its I/O, and what its metadata records."""

    name: str
    path: Path
    graph: dict
    row: dict


@dataclass(frozen=True)
class Runtime:
    label: str
    python: str
    row: dict

    @property
    def qairt(self) -> str:
        return self.row["qairt"]


# -- the binaries ---------------------------------------------------------------------------------


def _vtuple(text: str | None) -> list[int] | None:
    return None if text is None else [int(x) for x in text.split(".")]


def _describe(name: str, path: Path) -> Binary:
    """What q9diff reads from the binary's metadata, and the first graph's I/O as the child needs it."""
    (_, cb), *_ = contexts(locate(path))
    data = bytes(cb.data)
    vtcm = [g.vtcm_size for g in cb.graphs if getattr(g, "vtcm_size", None)]
    row = {
        "name": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "build_id": cb.build_id,
        "core_api": _vtuple(cb.core_api_version),
        "backend_api": _vtuple(cb.backend_api_version),
        "context_blob": _vtuple(cb.context_blob_version),
        "soc_model": cb.soc_model,
        "dsp_arch": cb.dsp_arch,
        "vtcm_bytes": max(vtcm) if vtcm else None,
        "graphs": len(cb.graphs),
        "shared_weights": any(g.shared_weights_size for g in cb.graphs),
    }
    spec = graph_specs(path)[0]

    def io(tensors) -> list:
        return [[t.name, t.dtype, list(t.shape)] for t in tensors]

    graph = {"graph": spec.name, "inputs": io(spec.inputs), "outputs": io(spec.outputs)}
    return Binary(name, path, graph, row)


def _binaries(real: Path | None, scratch: Path) -> tuple[list[Binary], list[dict]]:
    """Every fixture context binary, and every context inside the third-party files under `real`
    (embedded ones written to `scratch`); files that hold no context binary are listed as skipped."""
    out: list[Binary] = []
    skipped: list[dict] = []
    for pattern in FIXTURE_GLOBS:
        for p in sorted(REPO.glob(pattern)):
            out.append(_describe(str(p.relative_to(REPO)), p))
    for p in sorted(real.iterdir()) if real is not None and real.is_dir() else []:
        try:
            found = contexts(locate(p))
        except Exception as exc:  # not a carrier of context binaries: say so, load nothing
            skipped.append(
                {"name": f"real:{p.name}", "why": " ".join(str(exc).split()).replace(str(p), p.name)}
            )
            continue
        for ctx_name, cb in found:
            if p.suffix not in (".onnx", ".tflite"):
                out.append(_describe(f"real:{p.name}", p))
                continue
            copy = scratch / f"{p.name}#{ctx_name}.bin".replace("/", "_")
            copy.write_bytes(bytes(cb.data))
            out.append(_describe(f"real:{p.name}#{ctx_name}", copy))
    return out, skipped


# -- the runtimes ---------------------------------------------------------------------------------


def _child(python: str, mode: str, arg: dict, cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Run the child; (its exit status or None on timeout, stdout + stderr)."""
    proc = subprocess.Popen(
        [python, "-c", CHILD, mode, json.dumps(arg)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"},
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace")


def _reports(text: str) -> list[dict]:
    return [json.loads(line[9:]) for line in text.splitlines() if line.startswith("Q9COMPAT ")]


def _strings(path: Path) -> tuple[str | None, str | None]:
    """The AISW_VERSION and the first build id string in a library's bytes."""
    if not path.is_file():
        return None, None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        aisw, build = AISW.search(m), BUILD_ID.search(m)
        return (
            aisw and aisw.group(1).decode(),
            build and f"v{build.group(1).decode()}.{build.group(2).decode()}",
        )


def _runtime(label: str, python: str, scratch: Path) -> Runtime:
    status, text = _child(python, "info", {}, scratch, 300)
    reports = _reports(text)
    if status != 0 or not reports:
        raise SystemExit(f"{python}: the runtime does not describe itself:\n{text[-2000:]}")
    info = reports[-1]
    lib_dir = Path(info["lib_dir"])
    versions = {lib: _strings(lib_dir / lib) for lib in LIBS}
    (htp_provider,) = [p for p in info["providers"] if p["name"].startswith("HTP")] or info["providers"][:1]
    qairt = versions["libQnnHtp.so"][0]
    if not qairt or not qairt.startswith(label + ".") and qairt != label:
        raise SystemExit(f"--python-for {label}={python}: its libQnnHtp.so says QAIRT {qairt}")
    row = {
        "package": f"onnxruntime-qnn=={info['package']}",
        "onnxruntime": info["onnxruntime"],
        "qairt": qairt,
        "build_id": versions["libQnnHtp.so"][1],
        "aisw_version": {lib: v[0] for lib, v in versions.items()},
        "core_api": htp_provider["core_api"],
        "backend_api": htp_provider["backend_api"],
        "provider": htp_provider["name"],
    }
    return Runtime(label, python, row)


# -- one attempt ----------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")
ORT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[([VIWEF]):onnxruntime:[^\]]*?(\w+)\]\s?(.*)$")
# What the EP's QnnLogging forwards: QNN's API log "<E> text", or the HTP core's "file.cc:123::ERROR:text".
QNN_API = re.compile(r"^<([VIWEDF])>\s*(.*)$")
HTP_CORE = re.compile(r"^[\w./-]+:\d+:+(ERROR|WARNING):\s*(.*)$")
PATH = re.compile(r"(?:/[\w.+#@-]+)+/([\w.+#@-]+)")
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{8,}\b")
CODE = re.compile(r"\berr(?:or)?(?: code)?[ :=]+(0x[0-9a-fA-F]+|\d+)\b")
SOC_SEEN = re.compile(r"SoC model name is (\S+)")
# The HTP core logs the kernel version a pickle was built for, shifted left by 32 bits.
KERNEL = re.compile(r"Pickle global kernel version encoded=(\d+)")
MAX_MESSAGES, MAX_CHARS = 16, 300


def _trim(text: str) -> str:
    text = ADDRESS.sub("0x?", PATH.sub(r"\1", text.strip()))
    return text[:MAX_CHARS]


def _lines(text: str) -> list[tuple[str, str, str]]:
    """(source, level, trimmed text) of every log line: source "qnn" (QNN's API log), "htp" (the HTP
    core's own log lines, ERROR and WARNING), "ort" or "raw" (anything else on stdout / stderr)."""
    out = []
    for line in ANSI.sub("", text).splitlines():
        line = line.strip()
        if not line or line.startswith("Q9COMPAT "):
            continue
        m = ORT_LINE.match(line)
        if m is None:
            out.append(("raw", "", _trim(line)))
            continue
        level, function, body = m.groups()
        if function != "QnnLogging":
            out.append(("ort", level, _trim(body)))
        elif q := QNN_API.match(body.strip()):
            out.append(("qnn", q.group(1), _trim(q.group(2))))
        elif h := HTP_CORE.match(body.strip()):
            out.append(("htp", h.group(1)[0], _trim(h.group(2))))
        else:
            out.append(("qnn", "V", _trim(body)))
    return out


def _messages(lines: list[tuple[str, str, str]], error: str | None, status: int | None) -> list[str]:
    """The error lines (and the HTP core's warnings) in order, deduplicated, without those another
    message already contains."""
    picked = [
        text
        for source, level, text in lines
        if (source in ("qnn", "ort") and level in ("E", "F"))
        or source == "htp"
        or (source == "raw" and ("ERROR" in text or "<E>" in text) and not text.startswith("File "))
    ]
    if error:
        picked.append(_trim(re.sub(r"^\[ONNXRuntimeError\] : \d+ : ", "", " ".join(error.split()))))
    if status is None:
        picked.append("no answer before the timeout")
    elif status < 0:
        picked.append(f"the process was ended by {signal.Signals(-status).name}")
    unique = list(dict.fromkeys(picked))
    return [m for m in unique if not any(m != o and m in o for o in unique)][:MAX_MESSAGES]


def _codes(messages: list[str]) -> list[int]:
    return sorted({int(c, 0) for m in messages for c in CODE.findall(m)})


def _attempt(rt: Runtime, b: Binary, options: dict, timeout: float, path: Path | None = None) -> dict:
    """Load `b` (or the edited copy at `path`) on `rt` once; the attempt's record, and its QNN warnings
    and the SoC the emulator took under "_warnings" / "_soc" for the caller."""
    work = Path(tempfile.mkdtemp(prefix="q9diff-compat-"))
    try:
        os.symlink((path or b.path).resolve(), work / "ctx.bin")
        arg = {**b.graph, "work": str(work), "link": "ctx.bin", "options": options}
        status, text = _child(rt.python, "load", arg, work, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    reports = _reports(text)
    stages = {r.get("stage") for r in reports}
    error = next((r["error"] for r in reports if "error" in r), None)
    lines = _lines(text)
    messages = _messages(lines, error, status)
    record = {"loaded": "loaded" in stages, "ran": "ran" in stages, "codes": _codes(messages)}
    record["messages"] = messages
    kernels = sorted({int(k) >> 32 for _, _, t in lines for k in KERNEL.findall(t)})
    if kernels:
        record["global_kernel_version"] = kernels[0] if len(kernels) == 1 else kernels
    record["_warnings"] = list(dict.fromkeys(t for s, lv, t in lines if s in ("qnn", "htp") and lv == "W"))
    record["_soc"] = sorted({m.group(1) for _, _, t in lines for m in [SOC_SEEN.search(t)] if m})
    return record


def _public(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


# -- header edits ---------------------------------------------------------------------------------


def _binary_info(buf: bytearray) -> flatbuf.Table:
    """The BinaryInfo table of a QNN 2.25+ binary's metadata (the 40-byte header files)."""
    if bytes(buf[: CB.MAGIC_SIZE]) != CB.FILE_MAGIC:
        raise ValueError("header edits need a QNN 2.25+ file header")
    h = CB.FileHeader.parse(bytes(buf[: CB.FILE_HEADER_SIZE])).sizes
    top = flatbuf.root(memoryview(buf), CB.METADATA_OFFSET, h.metadata_size, "edit")
    return top.table(S.METADATA_ROOT["binary_info"].slot).table(S.WRAPPER["body"].slot)


def _set_version(buf: bytearray, field: str, value: list[int]) -> None:
    pos = _binary_info(buf).field(S.BINARY_INFO_V3[f"{field}_version"].slot)
    struct.pack_into("<3I", buf, pos, *value)


def _set_build_id(buf: bytearray, text: str) -> None:
    """Point the build id at `text`: in place when it fits, else appended after the metadata (in the
    padding before the blob) with the header's metadata size grown to cover it."""
    info = _binary_info(buf)
    ref = info.field(S.BINARY_INFO_V3["build_id"].slot)
    old = ref + struct.unpack_from("<I", buf, ref)[0]
    raw = text.encode()
    if len(raw) <= struct.unpack_from("<I", buf, old)[0]:
        n_old = struct.unpack_from("<I", buf, old)[0]
        buf[old : old + 4 + n_old + 1] = struct.pack("<I", len(raw)) + raw.ljust(n_old + 1, b"\0")
        return
    h = CB.FileHeader.parse(bytes(buf[: CB.FILE_HEADER_SIZE])).sizes
    new = CB.METADATA_OFFSET + h.metadata_size
    new += -new % 4
    end = new + 4 + len(raw) + 1
    end += -end % 8
    if end > h.blob_offset:
        raise ValueError("no room for a longer build id before the blob")
    buf[new:end] = (struct.pack("<I", len(raw)) + raw).ljust(end - new, b"\0")
    struct.pack_into("<I", buf, ref, new - ref)
    struct.pack_into("<Q", buf, 16, end - CB.METADATA_OFFSET)


def _bumped_build(build_id: str) -> str:
    """The same build id one minor QAIRT version on: v2.51.0.x -> v2.52.0.x."""
    major, minor, rest = build_id[1:].split(".", 2)
    return f"v{major}.{int(minor) + 1}.{rest}"


def _edits(bases: list[Binary], rt: Runtime) -> list[tuple[Binary, str, dict]]:
    """(base, edit label, new field values) for one runtime: every QAIRT build newer than the runtime
    relabelled with the runtime's values one field at a time (and all three together); the runtime's
    own build with each field raised past it."""
    out = []
    r = rt.row
    mine = [r["core_api"], r["backend_api"], r["build_id"]]
    for b in bases:
        have = [b.row["core_api"], b.row["backend_api"], b.row["build_id"]]
        if b.row["backend_api"][:2] > r["backend_api"][:2]:
            for field, old, new in zip(("core_api", "backend_api", "build_id"), have, mine, strict=True):
                out.append((b, f"{field} {_show(old)} -> {_show(new)}", {field: new}))
            fields = dict(zip(("core_api", "backend_api", "build_id"), mine, strict=True))
            out.append((b, "core_api, backend_api and build_id -> the runtime's", fields))
        elif b.row["backend_api"] == r["backend_api"]:
            raised = {
                "core_api": [have[0][0], have[0][1] + 1, have[0][2]],
                "backend_api": [have[1][0], have[1][1] + 1, have[1][2]],
                "build_id": _bumped_build(have[2]),
            }
            blob = b.row["context_blob"]
            raised_blob = [[blob[0], blob[1] + 1, blob[2]], [blob[0] + 1, blob[1], blob[2]]]
            for field, new in raised.items():
                old = dict(zip(("core_api", "backend_api", "build_id"), have, strict=True))[field]
                out.append((b, f"{field} {_show(old)} -> {_show(new)}", {field: new}))
            for new in raised_blob:
                out.append((b, f"context_blob {_show(blob)} -> {_show(new)}", {"context_blob": new}))
    return out


def _show(v) -> str:
    return v if isinstance(v, str) else ".".join(map(str, v))


def _edited_copy(b: Binary, fields: dict, scratch: Path) -> Path:
    buf = bytearray(b.path.read_bytes())
    for field, value in fields.items():
        if field == "build_id":
            _set_build_id(buf, value)
        else:
            _set_version(buf, field, value)
    out = scratch / f"edited-{hashlib.sha256(buf).hexdigest()[:16]}.bin"
    out.write_bytes(buf)
    (_, cb), *_ = contexts(locate(out))  # q9diff reads back exactly the values written
    seen = {
        "core_api": _vtuple(cb.core_api_version),
        "backend_api": _vtuple(cb.backend_api_version),
        "build_id": cb.build_id,
        "context_blob": _vtuple(cb.context_blob_version),
    }
    if any(seen[k] != v for k, v in fields.items()):
        raise SystemExit(f"edit of {b.name} to {fields} reads back as {seen}")
    return out


# -- findings -------------------------------------------------------------------------------------


def _qairt_of(build_id: str) -> list[int]:
    return [int(x) for x in build_id[1:].split(".")[:2]]


def _count(rows: list[dict], holds) -> str:
    return f"{sum(1 for r in rows if holds(r))}/{len(rows)}"


def _chain(a: dict) -> str:
    codes = f" (codes {', '.join(map(str, a['codes']))})" if a["codes"] else ""
    return " -> ".join(a["messages"]) + codes


def _findings(data: dict) -> list[str]:
    """One sentence per rule the data shows, each with the count of attempts it holds for."""
    rts = {r["qairt"]: r for r in data["runtimes"]}
    bins = {b["name"]: b for b in data["binaries"]}
    plain = [a for a in data["attempts"] if not a["options"] and a["binary"] in bins and a["runtime"] in rts]
    single = [a for a in plain if not bins[a["binary"]]["shared_weights"]]
    shared = [a for a in plain if bins[a["binary"]]["shared_weights"]]

    def newer(a: dict, field: str) -> bool:
        b, r = bins[a["binary"]], rts[a["runtime"]]
        if field == "build_id":
            return _qairt_of(b["build_id"]) > [int(x) for x in r["qairt"].split(".")[:2]]
        return b[field][:2] > r[field][:2]

    out = []
    for field, rule in (
        ("backend_api", "its backend_api (major.minor) is not newer than the runtime's"),
        ("core_api", "its core_api (major.minor) is not newer than the runtime's"),
        ("build_id", "the QAIRT version in its build_id is not newer than the runtime's"),
    ):
        out.append(
            f"A binary without shared weights loads iff {rule}: "
            f"{_count(single, lambda a, f=field: a['loaded'] != newer(a, f))} attempts"
        )
    loaded = [a for a in plain if a["loaded"]]
    out.append(
        f"Every binary that loaded also ran once on zeros: {_count(loaded, lambda a: a['ran'])} attempts"
    )
    real = [a for a in plain if a["binary"].startswith("real:")]
    if real:
        versions = sorted({_show(_qairt_of(bins[a["binary"]]["build_id"])) for a in real}, key=_version_key)
        out.append(
            f"Third-party binaries (QNN {versions[0]} to {versions[-1]}) loaded and ran on every runtime: "
            f"{_count(real, lambda a: a['ran'])} attempts"
        )
    if shared:
        out.append(
            "Binaries with shared weights (several graphs over one weight pool) load on no runtime of the "
            f"x86 emulator: {_count(shared, lambda a: not a['loaded'])} attempts refused"
        )
    refusals = [
        (a, "binary newer than the runtime" if newer(a, "backend_api") else "binary not newer") for a in plain
    ]
    edits = [(e, f"header edit: {e['direction']} {', '.join(sorted(e['fields']))}") for e in data["edited"]]
    chains: dict[str, list[str]] = {}
    for a, why in refusals + edits:
        if not a["loaded"]:
            kind = (
                "shared weights, " if a.get("binary") in bins and bins[a["binary"]]["shared_weights"] else ""
            )
            chains.setdefault(_chain(a), []).append(kind + why)
    for chain, whys in chains.items():
        seen = "; ".join(f"{n} {w}" for w, n in sorted(_tally(whys).items()))
        out.append(f"Refusal chain in {len(whys)} attempts ({seen}): {chain}")
    groups: dict[str, list[dict]] = {}
    for e in data["edited"]:
        groups.setdefault(f"{e['direction']} {' + '.join(sorted(e['fields']))}", []).append(e)
    for key, rows in sorted(groups.items()):
        direction, fields = key.split(" ", 1)
        if direction == "lower":
            only = "" if " + " in fields else "only "
            what = f"a newer QAIRT build with {only}{fields} set to the older runtime's"
        else:
            what = f"a runtime's own build with only {fields} raised past it"
        out.append(
            f"Header edit, {what}: loaded {_count(rows, lambda e: e['loaded'])}, "
            f"ran {_count(rows, lambda e: e['ran'])}"
        )
    out += _kernel_findings(plain, data["edited"], bins, rts)
    out += _probe_findings([a for a in data["attempts"] if a["options"] and a["binary"] in bins], bins)
    return out


def _kernel_findings(plain: list[dict], edited: list[dict], bins: dict, rts: dict) -> list[str]:
    """What the HTP core logs about a pickle it loads: its global kernel version, and whether its build
    differs from the runtime's."""
    out = []
    kernels: dict[str, set] = {}
    for a in plain:
        if "global_kernel_version" in a:
            kernels.setdefault(bins[a["binary"]]["build_id"], set()).add(str(a["global_kernel_version"]))
    if kernels:
        one = {b: int(min(v)) for b, v in kernels.items() if len(v) == 1}
        out += _relabel_finding(edited, bins, rts, one)
        listed = ", ".join(f"{b}: {'/'.join(sorted(v))}" for b, v in sorted(kernels.items()))
        out.append(
            f"Global kernel version the HTP core logs for a pickle, by the binary's build_id: {listed}"
        )
    older = [
        a
        for a in plain
        if a["loaded"]
        and bins[a["binary"]]["build_id"] in kernels
        and _qairt_of(bins[a["binary"]]["build_id"])
        < [int(x) for x in rts[a["runtime"]]["qairt"].split(".")[:2]]
    ]
    if older:
        out.append(
            "A QAIRT 2.47+ binary loaded on a newer runtime logs the HTP core's 'Pickle and software version "
            "mismatch <binary build> vs <runtime build>' warning and still runs: "
            f"{_count(older, lambda a: a['ran'] and any('version mismatch' in m for m in a['messages']))}"
            " attempts"
        )
    return out


def _relabel_finding(edited: list[dict], bins: dict, rts: dict, kernels: dict[str, int]) -> list[str]:
    """Past the gate, does the content fit? Relabelled builds against the runtime's own build."""
    own = {r["qairt"]: b for r in rts.values() for b in bins.values() if b["build_id"] == r["build_id"]}
    rows = [e for e in edited if e["direction"] == "lower" and "backend_api" in e["fields"]]
    rows = [e for e in rows if e["runtime"] in own and e["base"] in bins]
    if not rows:
        return []

    def fits(e: dict) -> bool:
        base, mine = bins[e["base"]], own[e["runtime"]]
        same_kernel = kernels.get(base["build_id"]) == kernels.get(mine["build_id"])
        return same_kernel and base["context_blob"][0] == mine["context_blob"][0]

    return [
        "A newer build relabelled past the gate loads iff its pickle's global kernel version and context "
        "blob major version equal those of the runtime's own build: "
        f"{_count(rows, lambda e: e['loaded'] == fits(e))} edits ({sum(e['loaded'] for e in rows)} loaded)"
    ]


DEFAULT_SOC = re.compile(r"HTP ARCH (\d+) set without SoC id; applying default SoC (\d+)")


def _probe_findings(probes: list[dict], bins: dict) -> list[str]:
    """The device-option probe: which settings each arch's binary ran under, and what QNN said."""
    out = []
    for name in dict.fromkeys(a["binary"] for a in probes):
        rows = [a for a in probes if a["binary"] == name]
        b = bins[name]
        ran = [json.dumps(a["options"], sort_keys=True) for a in rows if a["ran"]]
        refused = [json.dumps(a["options"], sort_keys=True) for a in rows if not a["ran"]]
        text = (
            f"Device options on {rows[0]['runtime']}: the v{b['dsp_arch']} binary {name} (soc_model "
            f"{b['soc_model']}) ran under {len(ran)}/{len(rows)} soc_model / htp_arch / vtcm_mb settings"
        )
        if refused:
            text += f" ({', '.join(ran)}); refused under {', '.join(refused)}"
        out.append(text)
    defaults = {m.groups() for a in probes for n in a.get("notes", []) for m in [DEFAULT_SOC.search(n)] if m}
    if defaults:
        listed = ", ".join(f"{arch} -> {soc}" for arch, soc in sorted(defaults, key=lambda d: int(d[0])))
        out.append(f"htp_arch without soc_model makes QNN apply a default SoC per arch: {listed}")
    both = [a for a in probes if {"soc_model", "htp_arch"} <= set(a["options"])]
    if both:
        said = "SOC has already been set, therefore, ignoring this HTP ARCH config."
        out.append(
            f"soc_model wins over htp_arch when both are given ('{said}'): "
            f"{_count(both, lambda a: said in a.get('notes', []))} attempts"
        )
    chains: dict[str, int] = {}
    for a in probes:
        if not a["ran"]:
            chains[_chain(a)] = chains.get(_chain(a), 0) + 1
    for chain, n in chains.items():
        out.append(f"Refusal chain in {n} device-option attempts: {chain}")
    return out


def _tally(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


# -- the file -------------------------------------------------------------------------------------


def _dump(data: dict) -> str:
    """The file as JSON with one line per row, so a diff of two runs reads row by row."""
    sections = ("runtimes", "binaries", "skipped", "attempts", "edited", "findings")
    head = {k: v for k, v in data.items() if k not in sections}
    lines = [json.dumps(head, indent=1)[:-2] + ","]
    for n, section in enumerate(sections):
        rows = [f"  {json.dumps(row)}" for row in data.get(section, [])]
        tail = "," if n < len(sections) - 1 else ""
        lines.append(f" {json.dumps(section)}: [\n" + ",\n".join(rows) + f"\n ]{tail}")
    return "\n".join(lines) + "\n}\n"


def _empty() -> dict:
    return {"schema": SCHEMA, "runtimes": [], "binaries": [], "attempts": [], "edited": []}


def _version_key(v: str) -> list[int]:
    return [int(x) for x in v.split(".")]


def _save(data: dict, out: Path) -> None:
    order = {b["name"]: i for i, b in enumerate(data["binaries"])}
    data["runtimes"].sort(key=lambda r: _version_key(r["qairt"]))
    data["attempts"].sort(
        key=lambda a: (order.get(a["binary"], 1 << 30), _version_key(a["runtime"]), json.dumps(a["options"]))
    )
    data["edited"].sort(key=lambda e: (order.get(e["base"], 1 << 30), _version_key(e["runtime"]), e["edit"]))
    data["measured"] = dt.date.today().isoformat()
    data["findings"] = _findings(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    rcp.write_atomic(out, _dump(data))


def _merge(data: dict, runtimes: list[Runtime], binaries: list[Binary], skipped: list[dict]) -> None:
    """Keep what was measured on the same bytes with the same runtime; forget the rest."""
    rows = {r["qairt"]: r for r in data["runtimes"]}
    for rt in runtimes:
        if rows.get(rt.qairt, rt.row) != rt.row:
            data["attempts"] = [a for a in data["attempts"] if a["runtime"] != rt.qairt]
            data["edited"] = [e for e in data["edited"] if e["runtime"] != rt.qairt]
        rows[rt.qairt] = rt.row
    data["runtimes"] = list(rows.values())
    old = {b["name"]: b for b in data["binaries"]}
    for b in binaries:
        if b.name in old and old[b.name]["sha256"] != b.row["sha256"]:
            data["attempts"] = [a for a in data["attempts"] if a["binary"] != b.name]
            data["edited"] = [e for e in data["edited"] if e["base"] != b.name]
        old[b.name] = b.row
    data["binaries"] = [old[b.name] for b in binaries] + [
        r for n, r in old.items() if n not in {b.name for b in binaries}
    ]
    data["skipped"] = skipped or data.get("skipped", [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--python-for",
        action="append",
        default=[],
        metavar="QAIRT=PYTHON",
        help="a runtime: the Python of a venv with onnx and one onnxruntime-qnn (repeat per runtime)",
    )
    ap.add_argument("--real", type=Path, default=REPO.parent / "shared" / "real" / "binaries")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one attempt may take")
    ap.add_argument("--redo", action="store_true", help="measure again what is already measured")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    pythons = [item.split("=", 1) for item in args.python_for] or [["here", sys.executable]]
    data = json.loads(args.out.read_text()) if args.out.is_file() and not args.redo else _empty()
    data |= {
        "schema": SCHEMA,
        "command": "python scripts/measure_compat.py" + "".join(f" {a}" for a in (argv or sys.argv[1:])),
        "method": (
            "each context binary wrapped in a one-node EPContext model (embed_mode 0), an ONNX Runtime "
            "session created with the QNN EP (backend_path = the wheel's libQnnHtp.so, log severity "
            "verbose) and run once on zeros, one child process per attempt"
        ),
    }
    scratch = Path(tempfile.mkdtemp(prefix="q9diff-compat-"))
    try:
        runtimes = sorted(
            (_runtime(label, python, scratch) for label, python in pythons),
            key=lambda rt: _version_key(rt.qairt),
        )
        for rt in runtimes:
            print("runtime", rt.label, json.dumps(rt.row), flush=True)
        binaries, skipped = _binaries(args.real, scratch)
        _merge(data, runtimes, binaries, skipped)
        _save(data, args.out)
        for rt in runtimes:
            _measure_runtime(data, rt, binaries, scratch, args)
        if runtimes:
            _probe(data, runtimes[-1], binaries, args)
        _save(data, args.out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _done(rows: list[dict], **key) -> bool:
    return any(all(r[k] == v for k, v in key.items()) for r in rows)


def _measure_runtime(data: dict, rt: Runtime, binaries: list[Binary], scratch: Path, args) -> None:
    for b in binaries:
        if _done(data["attempts"], binary=b.name, runtime=rt.qairt, options={}):
            continue
        record = _public(_attempt(rt, b, {}, args.timeout))
        data["attempts"].append({"binary": b.name, "runtime": rt.qairt, "options": {}, **record})
        _save(data, args.out)
        print(rt.qairt, b.name, record["loaded"], record["ran"], record["codes"], flush=True)
    bases = [b for b in binaries if Path(b.name).match(QAIRT_FIXTURES)]
    for b, edit, fields in _edits(bases, rt):
        if _done(data["edited"], base=b.name, edit=edit, runtime=rt.qairt):
            continue
        direction = "lower" if b.row["backend_api"][:2] > rt.row["backend_api"][:2] else "raise"
        record = _public(_attempt(rt, b, {}, args.timeout, _edited_copy(b, fields, scratch)))
        row = {"base": b.name, "edit": edit, "runtime": rt.qairt, "direction": direction, "fields": fields}
        data["edited"].append({**row, **record})
        _save(data, args.out)
        print(rt.qairt, "edited", b.name, edit, record["loaded"], record["ran"], record["codes"], flush=True)


def _probe(data: dict, rt: Runtime, binaries: list[Binary], args) -> None:
    """Each probe binary with device options other than its own: the error lines, and the QNN
    warnings the options caused (those the same load without options does not give)."""
    for b in binaries:
        if b.name not in PROBE_BINARIES:
            continue
        todo = [
            o
            for o in PROBE_OPTIONS
            if not _done(data["attempts"], binary=b.name, runtime=rt.qairt, options=o)
        ]
        if not todo:
            continue
        base = _attempt(rt, b, {}, args.timeout)
        for options in todo:
            record = _attempt(rt, b, options, args.timeout)
            notes = [w for w in record["_warnings"] if w not in base["_warnings"]]
            notes += [f"SoC model name is {s}" for s in record["_soc"]]
            row = {
                "binary": b.name,
                "runtime": rt.qairt,
                "options": options,
                **_public(record),
                "notes": notes,
            }
            data["attempts"].append(row)
            _save(data, args.out)
            print(
                rt.qairt, b.name, options, record["loaded"], record["ran"], record["codes"], notes, flush=True
            )


if __name__ == "__main__":
    sys.exit(main())
