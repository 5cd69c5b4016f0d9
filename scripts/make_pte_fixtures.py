"""Make real ExecuTorch .pte files with QNN delegates, and read every QNN context binary inside them.

    python scripts/make_pte_fixtures.py [--out fixtures/pte]       # build, extract, read, write
    python scripts/make_pte_fixtures.py --check                     # rebuild in a temp dir, compare

Run by hand only (CI never runs it: it needs executorch). It runs in its own venv, outside the repo,
with exactly these versions (Linux x86_64, Python 3.11):

    python3.11 -m venv /work/venvs/et
    /work/venvs/et/bin/pip install executorch==1.5.1 torch==2.13.0 torchao==0.18.0
    /work/venvs/et/bin/pip install --no-deps onnxruntime-qnn==2.7.0     # QAIRT 2.51's x86 libraries
    /work/venvs/et/bin/python scripts/make_pte_fixtures.py

(torch 2.13.0 resolves to 2.13.0+cpu here; executorch 1.5.1 pins no torch.) A C compiler (`cc`) is
needed for the shim below. The oracle runs as `PYTHON -m q9diff.oracle FILE` from the repo root, with
PYTHON = --oracle-python, else $Q9_ORACLE_PYTHON, else the repo's .venv/bin/python, else this Python.

How the build works. ExecuTorch wants a QNN SDK at $QNN_SDK_ROOT/lib/x86_64-linux-clang/ (without
QNN_SDK_ROOT it tries to download one). The script makes a temporary one: symlinks to onnxruntime-qnn's
lib*.so, `lib/onnxruntime_qnn.libs` beside the folder (their RPATH is $ORIGIN/../onnxruntime_qnn.libs),
and, as libQnnHtp.so, a small shim built from scripts/pte_shim.c: executorch 1.5.1 was compiled against
QNN 2.37 headers whose HTP device custom config puts its union at offset 4, where QAIRT 2.51 reads it at
offset 8; the shim rewrites device configs into the new layout (see the C file). The build runs in a
child process started with that LD_LIBRARY_PATH; this process then reads the files with its own small
FlatBuffer reader (executorch's schema/program.fbs field order, qc_compiler_spec.fbs for the compile
spec) and asks the oracle about each extracted context binary.

Written per fixture NAME: NAME.pte; NAME.recipe.json (versions, model, compile spec asked for);
NAME.layout.json (this reader's reading: extended header, segments, every method's delegates, their
compile specs decoded, each QNN payload's header); NAME.oracle.json (libQnnSystem's reading of every
QNN context binary, one entry per method and delegate).

The default build makes every fixture in FIXTURES except those marked optional (w8a16_qcs9100, left
out of fixtures/pte to keep it small: `--only w8a16_qcs9100` builds it). Each fixture is built in a
fresh child process (see build()); a full run takes about 200 s here (2 shared cores, 17-33 s a fixture,
most of it imports), --check about the same.

--check rebuilds into a temp dir and compares with --out. ExecuTorch writes a build-time clock
(nanoseconds) into each QNN payload header (bytes +4..+12 of the payload, `signature`), so those 8
bytes are masked in the .pte comparison and the `signature` fields are left out of the layout
comparison; everything else (the Program FlatBuffer, the 256-byte payload headers otherwise, the
context binaries, the oracle readings) must be byte-identical, and is: with a fresh process per
fixture the build is deterministic for these models.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PINS = {"executorch": "1.5.1", "torch": "2.13.0+cpu", "torchao": "0.18.0", "onnxruntime-qnn": "2.7.0"}
QAIRT_OF_ORT_QNN = {"2.7.0": "2.51"}

# ----------------------------------------------------------------------------------------------
# The fixtures. Each entry is built in the child by build_fixture(); everything here is data.
# ----------------------------------------------------------------------------------------------

SM8650, QCS9100 = "SM8650", "QCS9100"

FIXTURES = [
    {
        "name": "fp16_sm8650",
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": SM8650,
        "precision": "fp16",
        "notes": "one method, one QNN delegate, fp16, SM8650 (soc_model 57, v75).",
    },
    {
        "name": "fp16_qcs9100",
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": QCS9100,
        "precision": "fp16",
        "notes": "fp16_sm8650's model and settings for QCS9100 (soc_model 77, v73).",
    },
    {
        "name": "w8a8_sm8650",
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": SM8650,
        "precision": "w8a8",
        "notes": "the MLP quantized by QnnQuantizer (8-bit activations and weights), SM8650.",
    },
    {
        "name": "w8a8_qcs9100",
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": QCS9100,
        "precision": "w8a8",
        "notes": "w8a8_sm8650's model and settings for QCS9100.",
    },
    {
        "name": "w8a16_qcs9100",
        "optional": True,
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": QCS9100,
        "precision": "w8a16",
        "notes": "the MLP quantized by QnnQuantizer with 16-bit activations, 8-bit weights, QCS9100.",
    },
    {
        "name": "two_delegates",
        "model": "mlp",
        "methods": {"forward": [1, 16]},
        "soc": SM8650,
        "precision": "fp16",
        "skip_ops": ["aten.relu.default"],
        "notes": "the MLP with its middle ReLU kept off QNN (skip_node_op_set), so the method holds two "
        "QNN delegates (one per Linear) around a CPU ReLU.",
    },
    {
        "name": "shared_weights",
        "model": "mlp",
        "methods": {"prefill": [4, 16], "decode": [1, 16]},
        "soc": SM8650,
        "precision": "fp16",
        "weight_sharing": True,
        "notes": "two methods (prefill: 4 rows, decode: 1 row) of the same weights lowered together with "
        "use_weight_sharing: one context binary with two graphs, named by both methods.",
    },
    {
        "name": "with_xnnpack",
        "model": "mlp_sigmoid",
        "methods": {"forward": [1, 16]},
        "soc": SM8650,
        "precision": "fp16",
        "skip_nodes": ["aten_sigmoid_default"],
        "xnnpack": True,
        "notes": "the MLP followed by a sigmoid kept off QNN (skip_node_id_set), then XnnpackPartitioner on "
        "what QNN left: the method holds a QNN delegate (the MLP) and an XNNPACK one (the sigmoid).",
    },
]

MODELS = {
    "mlp": "Linear(16, 32) -> ReLU -> Linear(32, 8), float32, weights from torch.manual_seed(0); "
    "calibration (quantized builds): 8 inputs from torch.manual_seed(1), randn.",
    "mlp_sigmoid": "the mlp (same weights) followed by torch.sigmoid.",
}

# ----------------------------------------------------------------------------------------------
# A small FlatBuffer reader (tables, scalars, strings, vectors), enough for the .pte's Program and
# the QNN compile spec. Slots are the fields' positions in their schema's table.
# ----------------------------------------------------------------------------------------------


class Table:
    """One FlatBuffer table at ``pos`` in ``buf``."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt_size = struct.unpack_from("<H", buf, self.vtable)[0]

    def _at(self, slot: int) -> int | None:
        entry = 4 + 2 * slot
        if entry >= self.vt_size:
            return None
        off = struct.unpack_from("<H", self.buf, self.vtable + entry)[0]
        return self.pos + off if off else None

    def present(self, slot: int) -> bool:
        return self._at(slot) is not None

    def scalar(self, slot: int, fmt: str, default=0):
        at = self._at(slot)
        return default if at is None else struct.unpack_from("<" + fmt, self.buf, at)[0]

    def _ref(self, slot: int) -> int | None:
        at = self._at(slot)
        return None if at is None else at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, slot: int) -> Table | None:
        ref = self._ref(slot)
        return None if ref is None else Table(self.buf, ref)

    def string(self, slot: int) -> str | None:
        ref = self._ref(slot)
        if ref is None:
            return None
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return self.buf[ref + 4 : ref + 4 + n].decode()

    def vector(self, slot: int) -> tuple[int, int]:
        """(start of the elements, count); (0, 0) when absent."""
        ref = self._ref(slot)
        if ref is None:
            return 0, 0
        return ref + 4, struct.unpack_from("<I", self.buf, ref)[0]

    def tables(self, slot: int) -> list[Table]:
        start, n = self.vector(slot)
        return [
            Table(self.buf, start + 4 * i + struct.unpack_from("<I", self.buf, start + 4 * i)[0])
            for i in range(n)
        ]

    def ubytes(self, slot: int) -> bytes:
        start, n = self.vector(slot)
        return self.buf[start : start + n]


def root(buf: bytes) -> Table:
    return Table(buf, struct.unpack_from("<I", buf, 0)[0])


# executorch schema/program.fbs: the slots read here.
PROGRAM = {"version": 0, "execution_plan": 1, "backend_delegate_data": 3, "segments": 4}
EXECUTION_PLAN = {"name": 0, "delegates": 7}
BACKEND_DELEGATE = {"id": 0, "processed": 1, "compile_specs": 2}
DATA_REFERENCE = {"location": 0, "index": 1}  # location: byte enum, INLINE = 0, SEGMENT = 1
COMPILE_SPEC = {"key": 0, "value": 1}
DATA_SEGMENT = {"offset": 0, "size": 1}
INLINE_DATA = {"data": 0}
LOCATIONS = {0: "INLINE", 1: "SEGMENT"}

# qc_compiler_spec.fbs (executorch 1.5.1): table -> [(slot, field, type)], type a struct format, "str",
# "bool", or another table's name. Enums are int32 ("i"); the decoded dict also names enum values.
QNN_OPTIONS_SCHEMA = {
    "QnnExecuTorchOptions": [
        (0, "soc_info", "SocInfo"),
        (1, "backend_options", "QnnExecuTorchBackendOptions"),
        (2, "library_path", "str"),
        (3, "log_level", "i"),
        (4, "online_prepare", "bool"),
        (5, "dump_intermediate_outputs", "bool"),
        (6, "profile_level", "i"),
        (7, "shared_buffer", "bool"),
        (8, "is_from_context_binary", "bool"),
        (9, "saver", "bool"),
        (10, "saver_output_dir", "str"),
        (11, "op_package_options", "QnnExecuTorchOpPackageOptions"),
        (12, "use_mha2sha", "bool"),
    ],
    "SocInfo": [(0, "soc_model", "i"), (1, "htp_info", "HtpInfo"), (2, "lpai_info", "LpaiInfo")],
    "HtpInfo": [(0, "htp_arch", "i"), (1, "vtcm_size_in_mb", "I")],
    "LpaiInfo": [(0, "lpai_hardware_version", "i")],
    "QnnExecuTorchBackendOptions": [
        (0, "backend_type", "i"),
        (1, "htp_options", "QnnExecuTorchHtpBackendOptions"),
        (2, "gpu_options", "QnnExecuTorchGpuBackendOptions"),
        (3, "lpai_options", "QnnExecuTorchLpaiBackendOptions"),
    ],
    "QnnExecuTorchHtpBackendOptions": [
        (0, "max_sf_buf_size", "i"),
        (1, "performance_mode", "i"),
        (2, "precision", "i"),
        (3, "pd_session", "i"),
        (4, "use_conv_hmx", "bool"),
        (5, "use_dlbc", "bool"),
        (6, "use_fold_relu", "bool"),
        (7, "use_multi_contexts", "bool"),
        (8, "use_weight_sharing", "bool"),
        (9, "use_slc_allocator", "bool"),
    ],
    "QnnExecuTorchGpuBackendOptions": [
        (0, "performance_mode", "i"),
        (1, "precision", "i"),
        (2, "use_memory_optimizations", "bool"),
        (3, "use_node_optimizations", "bool"),
        (4, "use_queue_recording", "bool"),
        (5, "use_weight_sharing", "bool"),
    ],
    "QnnExecuTorchLpaiBackendOptions": [
        (0, "fps", "i"),
        (1, "ftrt_ratio", "i"),
        (2, "client_perf_type", "i"),
        (3, "affinity", "i"),
        (4, "core_selection", "I"),
        (5, "target_env", "i"),
    ],
    "QnnExecuTorchOpPackageOptions": [(0, "op_package_infos", "[table]")],
}
ENUM_NAMES = {
    "soc_model": {0: "UNKNOWN_SM", 57: "SM8650", 77: "QCS9100", 43: "SM8550", 69: "SM8750"},
    "htp_arch": {0: "NONE", 68: "V68", 69: "V69", 73: "V73", 75: "V75", 79: "V79", 81: "V81"},
    "backend_type": {0: "kUndefinedBackend", 1: "kGpuBackend", 2: "kHtpBackend", 3: "kDspBackend"},
    "precision": {0: "kHtpQuantized", 1: "kHtpFp16"},
    "performance_mode": {0: "kHtpDefault", 1: "kHtpSustainedHighPerformance", 2: "kHtpBurst"},
    "pd_session": {0: "kHtpUnsignedPd", 1: "kHtpSignedPd"},
    "log_level": {0: "kLogOff", 1: "kLogLevelError", 5: "kLogLevelDebug"},
    "profile_level": {0: "kProfileOff", 2: "kProfileDetailed", 3: "kProfileOptrace"},
}


def decode_options(t: Table, kind: str = "QnnExecuTorchOptions") -> dict:
    """Every field of a qc_compiler_spec table: value, and which slots the writer stored."""
    out: dict = {"_slots_present": [slot for slot, _, _ in QNN_OPTIONS_SCHEMA[kind] if t.present(slot)]}
    for slot, field, typ in QNN_OPTIONS_SCHEMA[kind]:
        if typ in ("i", "I"):
            value = t.scalar(slot, typ)
        elif typ == "bool":
            value = bool(t.scalar(slot, "B"))
        elif typ == "str":
            value = t.string(slot)
        elif typ == "[table]":
            value = len(t.tables(slot))
        else:
            sub = t.table(slot)
            value = None if sub is None else decode_options(sub, typ)
        out[field] = value
        if field in ENUM_NAMES and isinstance(value, int) and kind != "QnnExecuTorchGpuBackendOptions":
            out[field + "_name"] = ENUM_NAMES[field].get(value, f"<{value}>")
    return out


# QnnContextCustomProtocol, the header ExecuTorch's QNN backend puts before each context binary.
PAYLOAD_MAGIC = 0x5678ABCD
PAYLOAD_HEADER = 256


def read_pte(data: bytes) -> dict:
    """The .pte's layout as this reader sees it; raises ValueError on anything unexpected."""
    if data[4:8] != b"ET12" or data[8:12] != b"eh00":
        raise ValueError(f"not an ExecuTorch program with an extended header: {data[:16].hex()}")
    length, program_size, base, seg_data = struct.unpack_from("<IQQQ", data, 12)
    program = root(data)
    segments = [
        {"offset": s.scalar(DATA_SEGMENT["offset"], "Q"), "size": s.scalar(DATA_SEGMENT["size"], "Q")}
        for s in program.tables(PROGRAM["segments"])
    ]
    inline = program.tables(PROGRAM["backend_delegate_data"])
    methods = []
    for plan in program.tables(PROGRAM["execution_plan"]):
        delegates = []
        for i, d in enumerate(plan.tables(EXECUTION_PLAN["delegates"])):
            ref = d.table(BACKEND_DELEGATE["processed"])
            location = ref.scalar(DATA_REFERENCE["location"], "b")
            index = ref.scalar(DATA_REFERENCE["index"], "I")
            if LOCATIONS.get(location) == "SEGMENT":
                seg = segments[index]
                start = base + seg["offset"]
                payload = data[start : start + seg["size"]]
            else:
                start = None
                payload = inline[index].ubytes(INLINE_DATA["data"])
            entry: dict = {
                "index": i,
                "id": d.string(BACKEND_DELEGATE["id"]),
                "processed": {"location": LOCATIONS.get(location, location), "index": index},
                "payload_offset": start,
                "payload_size": len(payload),
                "compile_specs": [],
            }
            for spec in d.tables(BACKEND_DELEGATE["compile_specs"]):
                key, value = spec.string(COMPILE_SPEC["key"]), spec.ubytes(COMPILE_SPEC["value"])
                row: dict = {"key": key, "size": len(value), "sha256": hashlib.sha256(value).hexdigest()}
                if key == "qnn_compile_spec":
                    row["decoded"] = decode_options(root(value))
                entry["compile_specs"].append(row)
            if entry["id"] != "QnnBackend":
                entry["payload_first_bytes"] = payload[:16].hex()
            else:
                magic, signature, size = struct.unpack_from("<IqQ", payload, 0)
                if magic != PAYLOAD_MAGIC:
                    raise ValueError(f"{entry['id']} payload magic {magic:#x}")
                rest = payload[20:PAYLOAD_HEADER]
                entry["qnn_payload"] = {
                    "magic": f"{magic:#010x}",
                    "signature": signature,
                    "binary_size": size,
                    "header_rest_zero": not any(rest),
                    "binary_offset": start + PAYLOAD_HEADER if start is not None else None,
                    "binary_first_bytes": payload[PAYLOAD_HEADER : PAYLOAD_HEADER + 8].hex(),
                    "size_matches_segment": PAYLOAD_HEADER + size == len(payload),
                }
            delegates.append(entry)
        methods.append({"name": plan.string(EXECUTION_PLAN["name"]), "delegates": delegates})
    return {
        "file_size": len(data),
        "root_offset": struct.unpack_from("<I", data, 0)[0],
        "file_identifier": data[4:8].decode(),
        "extended_header": {
            "magic": data[8:12].decode(),
            "length": length,
            "program_size": program_size,
            "segment_base_offset": base,
            "segment_data_size": seg_data,
        },
        "program_version": program.scalar(PROGRAM["version"], "I"),
        "segments": segments,
        "inline_delegate_data": len(inline),
        "methods": methods,
    }


def qnn_binaries(data: bytes, layout: dict):
    """(method, delegate index, context binary bytes) for every QNN delegate."""
    for m in layout["methods"]:
        for d in m["delegates"]:
            if d["id"] == "QnnBackend" and d["payload_offset"] is not None:
                start = d["qnn_payload"]["binary_offset"]
                yield m["name"], d["index"], data[start : start + d["qnn_payload"]["binary_size"]]


def oracle_reading(binary: bytes, python: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(binary)
        f.flush()
        env = {k: v for k, v in os.environ.items() if k not in ("QNN_SDK_ROOT", "LD_LIBRARY_PATH")}
        out = subprocess.run(
            [python, "-m", "q9diff.oracle", f.name], cwd=REPO, env=env, capture_output=True, text=True
        )
    if out.returncode != 0:
        raise RuntimeError(f"oracle failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def masked(data: bytes, layout: dict) -> bytes:
    """The .pte with every QNN payload's build-clock signature zeroed."""
    buf = bytearray(data)
    for m in layout["methods"]:
        for d in m["delegates"]:
            if "qnn_payload" in d and d["payload_offset"] is not None:
                buf[d["payload_offset"] + 4 : d["payload_offset"] + 12] = bytes(8)
    return bytes(buf)


def without_signatures(layout: dict) -> dict:
    copy = json.loads(json.dumps(layout))
    for m in copy["methods"]:
        for d in m["delegates"]:
            d.get("qnn_payload", {}).pop("signature", None)
    return copy


def dumps(obj, indent: str = "") -> str:
    """JSON with two-space indents, lists of scalars kept on one line."""
    inner = indent + "  "
    if isinstance(obj, dict) and obj:
        rows = [f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(rows) + "\n" + indent + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in obj) + "\n" + indent + "]"
    return json.dumps(obj)


def dump(obj, path: Path) -> None:
    path.write_text(dumps(obj) + "\n")


def describe(out: Path, oracle_python: str) -> None:
    """Write NAME.layout.json and NAME.oracle.json beside every NAME.pte in ``out``."""
    for pte in sorted(out.glob("*.pte")):
        data = pte.read_bytes()
        layout = read_pte(data)
        dump(layout, pte.with_suffix(".layout.json"))
        readings = []
        for method, index, binary in qnn_binaries(data, layout):
            readings.append(
                {
                    "method": method,
                    "delegate_index": index,
                    "binary_size": len(binary),
                    "binary_sha256": hashlib.sha256(binary).hexdigest(),
                    "oracle": oracle_reading(binary, oracle_python),
                }
            )
        dump(
            {"schema": "q9diff.pte-oracle/1", "file": pte.name, "binaries": readings},
            pte.with_suffix(".oracle.json"),
        )


# ----------------------------------------------------------------------------------------------
# The build (child process, executorch imported here only).
# ----------------------------------------------------------------------------------------------


def make_model(kind: str):
    import torch

    class Mlp(torch.nn.Module):
        def __init__(self, sigmoid: bool) -> None:
            super().__init__()
            self.l1 = torch.nn.Linear(16, 32)
            self.l2 = torch.nn.Linear(32, 8)
            self.sigmoid = sigmoid

        def forward(self, x):
            y = self.l2(torch.relu(self.l1(x)))
            return torch.sigmoid(y) if self.sigmoid else y

    torch.manual_seed(0)
    return Mlp(sigmoid={"mlp": False, "mlp_sigmoid": True}[kind]).eval()


def build_fixture(fx: dict, out: Path) -> dict:
    import torch
    from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
    from executorch.backends.qualcomm.utils.utils import (
        generate_htp_compiler_spec,
        generate_qnn_executorch_compiler_spec,
        to_edge_transform_and_lower_to_qnn,
    )

    chipset = getattr(QcomChipset, fx["soc"])
    model = make_model(fx["model"])
    modules, inputs = {}, {}
    for method, shape in fx["methods"].items():
        example = (torch.randn(*shape),)
        inputs[method] = example
        if fx["precision"] == "fp16":
            modules[method] = model
        else:
            modules[method] = quantize(model, example, fx["precision"], chipset)
    use_fp16 = fx["precision"] == "fp16"
    weight_sharing = bool(fx.get("weight_sharing"))
    specs = generate_qnn_executorch_compiler_spec(
        soc_model=chipset,
        backend_options=generate_htp_compiler_spec(use_fp16=use_fp16, use_weight_sharing=weight_sharing),
    )
    edge = to_edge_transform_and_lower_to_qnn(
        modules if len(modules) > 1 else modules[next(iter(modules))],
        inputs if len(inputs) > 1 else inputs[next(iter(inputs))],
        specs,
        skip_node_op_set=set(fx.get("skip_ops", [])),
        skip_node_id_set=set(fx.get("skip_nodes", [])),
    )
    if fx.get("xnnpack"):
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        edge = edge.to_backend(XnnpackPartitioner())
    program = edge.to_executorch()
    (out / f"{fx['name']}.pte").write_bytes(program.buffer)
    return {
        "soc_model": {"enum": f"QcomChipset.{chipset.name}", "value": int(chipset.value)},
        "generate_htp_compiler_spec": {"use_fp16": use_fp16, "use_weight_sharing": weight_sharing},
        "generate_qnn_executorch_compiler_spec": {"soc_model": chipset.name, "other arguments": "defaults"},
        "to_edge_transform_and_lower_to_qnn": {
            "skip_node_op_set": sorted(fx.get("skip_ops", [])),
            "skip_node_id_set": sorted(fx.get("skip_nodes", [])),
        },
        "then": ["EdgeProgramManager.to_backend(XnnpackPartitioner())"] if fx.get("xnnpack") else [],
    }


def quantize(model, example, precision: str, chipset):
    import torch
    from executorch.backends.qualcomm.quantizer.quantizer import QnnQuantizer, QuantDtype
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    dtype = {"w8a8": QuantDtype.use_8a8w, "w8a16": QuantDtype.use_16a8w}[precision]
    quantizer = QnnQuantizer(soc_model=chipset)
    quantizer.set_default_quant_config(dtype)
    graph = torch.export.export(model, example, strict=True).module()
    prepared = prepare_pt2e(graph, quantizer)
    torch.manual_seed(1)
    for _ in range(8):
        prepared(torch.randn(*example[0].shape))
    return convert_pt2e(prepared)


def versions() -> dict:
    from importlib.metadata import version

    got = {name: version(name) for name in PINS}
    got["QAIRT (from onnxruntime-qnn)"] = QAIRT_OF_ORT_QNN.get(got["onnxruntime-qnn"], "unknown")
    return got


def child(out: Path, name: str) -> None:
    got = versions()
    if {k: got[k] for k in PINS} != PINS:
        raise SystemExit(f"versions differ from the pins: {got} vs {PINS}")
    for fx in FIXTURES:
        if fx["name"] != name:
            continue
        t0 = time.monotonic()
        asked = build_fixture(fx, out)
        recipe = {
            "schema": "q9diff.pte-recipe/1",
            "name": fx["name"],
            "output": f"{fx['name']}.pte",
            "versions": got,
            "model": {"kind": fx["model"], "description": MODELS[fx["model"]], "methods": fx["methods"]},
            "precision": fx["precision"],
            "compile_spec_asked": asked,
            "build": "scripts/make_pte_fixtures.py (QAIRT 2.51 libraries from onnxruntime-qnn, device "
            "configs rewritten by scripts/pte_shim.c)",
            "notes": fx["notes"],
        }
        dump(recipe, out / f"{fx['name']}.recipe.json")
        print(f"built {fx['name']} in {time.monotonic() - t0:.1f} s", flush=True)


# ----------------------------------------------------------------------------------------------
# The parent: a temporary SDK folder with the shim, the child, then the readings.
# ----------------------------------------------------------------------------------------------


def make_sdk(root: Path) -> dict:
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime_qnn")
    if spec is None or spec.origin is None:
        raise SystemExit("onnxruntime-qnn is not installed in this Python (see the docstring)")
    ort = Path(spec.origin).parent
    libdir = root / "lib" / "x86_64-linux-clang"
    libdir.mkdir(parents=True)
    (root / "lib" / "onnxruntime_qnn.libs").symlink_to(ort.parent / "onnxruntime_qnn.libs")
    for lib in sorted(ort.glob("lib*.so")):
        if lib.name != "libQnnHtp.so":
            (libdir / lib.name).symlink_to(lib)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("a C compiler (cc) is needed for the shim")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wl,-soname,libQnnHtp.so", "-Wl,-z,nodelete"]
    subprocess.run(
        cmd + ["-o", str(libdir / "libQnnHtp.so"), str(REPO / "scripts" / "pte_shim.c"), "-ldl"], check=True
    )
    env = dict(os.environ)
    env.update(
        QNN_SDK_ROOT=str(root),
        LD_LIBRARY_PATH=str(libdir) + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""),
        Q9_REAL_QNN_HTP=str(ort / "libQnnHtp.so"),
        Q9_SHIM_VERBOSE="1",  # the shim says which device configs it rewrote
    )
    return env


def build(out: Path, names: list[str]) -> None:
    """One child process per fixture: executorch numbers a lowering's QNN tensors from a process-wide
    counter, so a fixture built after another in the same process gets other tensor ids."""
    unknown = set(names) - {fx["name"] for fx in FIXTURES}
    if unknown:
        raise SystemExit(f"no such fixture: {sorted(unknown)}")
    wanted = [fx["name"] for fx in FIXTURES if (fx["name"] in names if names else not fx.get("optional"))]
    with tempfile.TemporaryDirectory(prefix="q9-qnn-sdk-") as tmp:
        env = make_sdk(Path(tmp) / "sdk")
        for name in wanted:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--out", str(out)]
            subprocess.run(cmd, env=env, check=True)


def default_oracle_python() -> str:
    if os.environ.get("Q9_ORACLE_PYTHON"):
        return os.environ["Q9_ORACLE_PYTHON"]
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def check(out: Path, oracle_python: str, names: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="q9-pte-check-") as tmp:
        fresh = Path(tmp)
        build(fresh, names)
        describe(fresh, oracle_python)
        problems = []
        for new in sorted(fresh.glob("*.pte")):
            old = out / new.name
            if not old.exists():
                problems.append(f"{new.name}: not in {out}")
                continue
            a, b = old.read_bytes(), new.read_bytes()
            la, lb = read_pte(a), read_pte(b)
            if masked(a, la) != masked(b, lb):
                problems.append(f"{new.name}: bytes differ outside the payload signatures")
            if without_signatures(la) != without_signatures(lb):
                problems.append(f"{new.name}: layout differs")
            stem = new.name[: -len(".pte")]
            for suffix in (".oracle.json", ".recipe.json"):
                if (out / (stem + suffix)).read_text() != (fresh / (stem + suffix)).read_text():
                    problems.append(f"{stem}{suffix} differs")
        for p in problems:
            print("DIFF", p)
        print("check:", "OK" if not problems else f"{len(problems)} difference(s)")
        return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "fixtures" / "pte")
    ap.add_argument("--check", action="store_true", help="rebuild in a temp dir and compare with --out")
    ap.add_argument("--only", action="append", default=[], help="build only this fixture (repeatable)")
    ap.add_argument("--oracle-python", default=None, help="the Python that runs q9diff.oracle")
    ap.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.out, args.child)
        return 0
    oracle_python = args.oracle_python or default_oracle_python()
    t0 = time.monotonic()
    if args.check:
        status = check(args.out, oracle_python, args.only)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        build(args.out, args.only)
        describe(args.out, oracle_python)
        status = 0
    print(f"done in {time.monotonic() - t0:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
