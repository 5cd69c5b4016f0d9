"""Hostile input, round 5 (issue 43): a diff never says "identical" about files that differ, every walk is
bounded by the input, and every error from a hostile path, name or number is one line (Q9Error, exit 2).
Each hostile file is built here from the fixtures' own bytes; large ones are sparse. Commands run in a child
that reports its own peak memory (test_hostile_bundle.q9); the subprocess timeout guards hangs only.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_hostile_bundle import dispatch_tflite, q9, refused, sparse
from test_hostile_names import embedded_model, named_tflite

sys.path.insert(0, str(FIXTURES.parent / "scripts"))
import fuzz_surfaces  # noqa: E402
import pte_writer as W  # noqa: E402

from q9diff.formats import context_binary as CB  # noqa: E402
from q9diff.formats import flatbuffer_slots as S  # noqa: E402

PTE, VARIANTS = FIXTURES / "pte", FIXTURES / "variants"
G1 = (VARIANTS / "graphs_1.bin").read_bytes()
LONG = "x" * 300


# ---- 1. a diff that reads part of a file -----------------------------------------------------------------


def _xnnpack_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two programs of one QNN and one XNNPACK delegate that differ in one byte of the XNNPACK payload."""
    p = W.parts()
    methods = [W.Method("forward", [W.Delegate(1), W.Delegate(2, "XnnpackBackend", None)])]
    changed = bytearray(p.xnnpack)
    changed[100] ^= 0xFF
    a, b = tmp_path / "a.pte", tmp_path / "b.pte"
    a.write_bytes(W.write(methods, [b"", p.qnn["with_xnnpack"], p.xnnpack]))
    b.write_bytes(W.write(methods, [b"", p.qnn["with_xnnpack"], bytes(changed)]))
    return a, b


def test_programs_that_differ_only_outside_their_contexts_are_not_identical(tmp_path):
    """Two .pte differing inside their XNNPACK delegate were "Identical: no difference in any byte"."""
    a, b = _xnnpack_pair(tmp_path)
    done = q9("diff", a, b)
    assert done.returncode == 1 and "differ, outside what was compared" in done.stdout, done.stdout
    assert "no difference in any byte" not in done.stdout
    data = json.loads(q9("diff", a, b, "--json").stdout)
    assert data["identical"] is False
    assert data["outside"] | {"a": None, "b": None} == {
        "compared": "the QNN delegates' context binaries",
        "a": None,
        "b": None,
        "contexts_identical": True,
        "differs": True,
    }
    assert (data["outside"]["a"]["compared_bytes"], data["outside"]["a"]["size"]) == (49152, a.stat().st_size)
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    assert q9("diff", a, b, "--html", page, "--markdown", md).returncode == 1
    for text in (page.read_text(), md.read_text()):
        assert "outside what was compared" in text and "no difference in any byte" not in text
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(data))
    again = q9("report", saved)
    assert again.returncode == 1 and "outside what was compared" in again.stdout, again.stderr
    same = q9("diff", a, a)
    assert same.returncode == 0 and same.stdout.startswith("Identical: no difference in any byte.")


def test_models_that_differ_outside_their_contexts_are_not_identical(tmp_path):
    """The same for an EPContext model outside its nodes' contexts and a .tflite outside its bytecode."""
    a = embedded_model(tmp_path / "a.onnx", [("ctx", G1)])
    b = embedded_model(tmp_path / "b.onnx", [("renamed", G1)])  # the node's name differs, not its context
    assert a.read_bytes() != b.read_bytes()
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["outside"]["differs"] is True
    x, y = (named_tflite(tmp_path / f"{n}.tflite", [("p", G1)]) for n in "xy")
    with open(y, "r+b") as f:  # one byte of the model outside the bytecode, in the padding before it
        f.seek((1 << 19) - 1)
        f.write(b"\1")
    done = q9("diff", x, y)
    assert done.returncode == 1 and "outside what was compared" in done.stdout, done.stdout


def test_a_program_against_its_own_binary_says_what_was_not_compared(tmp_path):
    own = tmp_path / "own.bin"
    data = (PTE / "fp16_sm8650.pte").read_bytes()
    own.write_bytes(data[1536 : 1536 + 49152])
    done = q9("diff", PTE / "fp16_sm8650.pte", own)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Identical contexts:") and "not compared" in done.stdout
    named = q9("diff", f"{own}#own.bin", PTE / "fp16_sm8650.pte")  # a plain binary's FILE#FILE (the fuzzer's)
    assert named.returncode == 0 and "Identical contexts:" in named.stdout, named.stderr


# ---- 2. work bounded by the input ----------------------------------------------------------------------


def shaped(tensors: list[tuple[str, list[int]]]) -> bytes:
    """A 4.0-layout context binary of one graph `g` whose inputs are `tensors` (name, dims), built with
    the metadata's slot maps (as test_hostile_round4._many_graphs builds its graphs)."""
    flatbuffers = pytest.importorskip("flatbuffers")
    m = flatbuffers.Builder(0)

    def vector(items):
        m.StartVector(4, len(items), 4)
        for x in reversed(items):
            m.PrependUOffsetTRelative(x)
        return m.EndVector()

    made = []
    for name, dims in tensors:
        n = m.CreateString(name)
        m.StartVector(4, len(dims), 4)
        for d in reversed(dims):
            m.PrependUint32(d)
        dv = m.EndVector()
        m.StartObject(16)
        m.PrependUOffsetTRelativeSlot(S.TENSOR["name"].slot, n, 0)
        m.PrependUOffsetTRelativeSlot(S.TENSOR["dims"].slot, dv, 0)
        m.PrependUint32Slot(S.TENSOR["rank"].slot, len(dims), 0)
        m.PrependUint32Slot(S.TENSOR["data_type"].slot, 0x232, 0)
        made.append(m.EndObject())
    inputs, name = vector(made), m.CreateString("g")
    m.StartObject(5)
    m.PrependUOffsetTRelativeSlot(S.GRAPH_V1["name"].slot, name, 0)
    m.PrependUint32Slot(S.GRAPH_V1["num_inputs"].slot, len(made), 0)
    m.PrependUOffsetTRelativeSlot(S.GRAPH_V1["inputs"].slot, inputs, 0)
    body = m.EndObject()
    m.StartObject(3)
    m.PrependUint32Slot(S.WRAPPER["version"].slot, 1, 0)
    m.PrependUOffsetTRelativeSlot(S.WRAPPER["body"].slot, body, 0)
    graphs = vector([m.EndObject()])
    d = flatbuffers.Builder(0)
    d.StartVector(4, 0, 4)
    records = d.EndVector()
    d.StartObject(3)
    d.PrependUOffsetTRelativeSlot(S.DIRECTORY["records"].slot, records, 0)
    d.Finish(d.EndObject())
    directory = bytes(d.Output())
    blob = struct.pack("<4Q", 4, 0, 6, len(directory)) + directory
    blob += b"\0" * (-len(blob) % 64 + 64)
    s = S.slots(S.BINARY_INFO_V3)
    m.StartObject(17)
    m.PrependUint32Slot(s["num_graphs"], 1, 0)
    m.PrependUOffsetTRelativeSlot(s["graphs"], graphs, 0)
    m.PrependUint64Slot(s["context_blob_size"], len(blob), 0)
    info = m.EndObject()
    m.StartObject(3)
    m.PrependUint32Slot(S.WRAPPER["version"].slot, 3, 0)
    m.PrependUOffsetTRelativeSlot(S.WRAPPER["body"].slot, info, 0)
    wrapper = m.EndObject()
    m.StartObject(1)
    m.PrependUOffsetTRelativeSlot(S.METADATA_ROOT["binary_info"].slot, wrapper, 0)
    m.Finish(m.EndObject())
    meta = bytes(m.Output())
    at = -(-(CB.METADATA_OFFSET + len(meta)) // CB.PAGE) * CB.PAGE
    head = CB.FILE_MAGIC + struct.pack("<3Q", len(meta), at, len(blob)) + meta
    return head + b"\0" * (at - len(head)) + blob


def test_the_structure_diff_of_two_long_shapes_is_one_change_in_bounded_memory(tmp_path):
    """Two 282 KB binaries whose one input differs in each of 70,000 dims: DeepDiff listed every element
    (56 s, 622 MB, 19.5 MB of JSON, 841 KB of -v text)."""
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(shaped([("x", [1] * 70000)]))
    b.write_bytes(shaped([("x", [2] * 70000)]))
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1 and done.rss_mib < 300, (done.stderr, done.rss_mib)
    s = json.loads(done.stdout)["structure"]
    assert [c["path"] for c in s["changes"]] == [["graphs", "g", "inputs", "x", "dims"]]
    assert "left_out" not in s
    assert len(done.stdout) < 30 * a.stat().st_size
    text = q9("diff", a, b, "-v")
    assert text.returncode == 1 and len(text.stdout) < 20_000 and "(rank 70000)" in text.stdout


def test_the_structure_diff_lists_200_changes_and_counts_the_rest(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(shaped([(f"in_{i}", [1, i]) for i in range(600)]))
    b.write_bytes(shaped([(f"in_{i}", [2, i]) for i in range(600)]))
    s = json.loads(q9("diff", a, b, "--json").stdout)["structure"]
    assert len(s["changes"]) == 200 and s["left_out"] == 400
    assert len(s["words"]) == 201 and s["words"][-1].startswith("... and 400 more changes")


def _flex_keys_far_from_a_nul(path: Path) -> Path:
    """A DISPATCH_OP whose FlexBuffer map has 64 keys pointing at a 190 KB run with no NUL."""
    run = b"a" * 190_000 + b"\0"
    count, keys_at = 64, len(run) + 4
    keys = struct.pack("<I", count) + b"".join(struct.pack("<I", keys_at + 4 * i) for i in range(count))
    start = len(run) + len(keys)
    values_at = start + 12
    body = struct.pack("<III", values_at - 12 - keys_at, 4, count) + struct.pack("<I", 1) * count
    body += bytes([2 << 2 | 2]) * count
    options = run + keys + body + struct.pack("<I", start + len(body) - values_at) + bytes([9 << 2 | 2, 4])
    return dispatch_tflite(path, G1, [(0, len(G1))], at=1 << 18, options=options)


def test_flexbuffer_keys_are_read_in_one_search(tmp_path):
    """construct's NullTerminated read a byte per call: 64 keys over 190 KB took 67 s to refuse."""
    path = _flex_keys_far_from_a_nul(tmp_path / "flex.tflite")
    refused(q9("inspect", path), "flex.tflite", "FlexBuffer map")


def test_thousands_of_delegates_naming_one_payload_are_judged_once(tmp_path):
    """3,400 QNN delegates naming one payload: each compile-spec finding once, naming the delegates."""
    spec = W.parts().spec["fp16_qcs9100"]  # asks soc_model 77 of a binary built for 57
    methods = [W.Method("forward", [W.Delegate(1, spec=spec) for _ in range(3400)])]
    path = tmp_path / "many.pte"
    path.write_bytes(W.write(methods, [b"", W.parts().qnn["fp16_sm8650"]], inline=[bytes(800_000)]))
    done = q9("doctor", path, "--json")
    found = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "executorch.compile-spec"]
    assert found and len(found) <= 5, len(found)
    assert "and 3,397 more delegates" in found[0]["where"]
    view = q9("inspect", path)
    assert view.returncode == 0 and view.stdout.count("\n") < 1000 and "3,300 more delegates" in view.stdout


def test_thirty_thousand_one_byte_segments_are_summarised(tmp_path):
    """inspect: 47 s, 30,001 stderr lines and a 60,068-line table before."""
    segments = [b"", W.parts().qnn["fp16_sm8650"]] + [b"\1"] * 30000
    offsets = [0, 0] + [49408 + 1 + 2 * i for i in range(30000)]
    path = tmp_path / "segments.pte"
    path.write_bytes(W.write([W.Method("forward", [W.Delegate(1)])], segments, offsets=offsets))
    done = q9("inspect", path)
    assert done.returncode == 0, done.stderr
    assert len(done.lines) == 6 and "29,995 more segments are not 128-aligned" in done.lines[-1]
    assert done.stdout.count("\n") < 400 and "more regions (--json lists every one)" in done.stdout


# ---- 3. --runtime PATH: read by section, never mapped, never a kernel file ---------------------------


def test_a_runtime_library_is_read_by_its_rodata_in_bounded_memory(tmp_path):
    """A 1 GiB sparse file with an ELF magic was mapped and searched whole (1 GB resident)."""
    fixture = FIXTURES / "variants" / "qairt_2.48.bin"
    magic = sparse(tmp_path / "magic" / "libQnnHtp.so", 1 << 30)
    with open(magic, "r+b") as f:
        f.write(b"\x7fELF")
    run = q9("doctor", fixture, "--runtime", magic)
    refused(run, "libQnnHtp.so at offset 0x4", "an ELF class")
    assert run.rss_mib < 200, run.rss_mib
    lib = tmp_path / "libQnnHtp.so"
    # .rodata claims ~1 GiB (sparse): 128 MiB are read, a MiB at a time; the version sits where a read ends
    rodata = bytes((1 << 20) - 20) + b"AISW_VERSION: 2.48.40\0"
    lib.write_bytes(fuzz_surfaces.elf(rodata, rodata_size=(1 << 30) - 4096))
    os.truncate(lib, 1 << 30)
    run = q9("doctor", fixture, "--runtime", lib, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["runtime"]["qairt"] == "2.48.40", run.stderr
    assert run.rss_mib < 200, run.rss_mib


def test_the_embedded_runtime_reads_the_same_version_by_section_as_by_a_search_of_its_bytes():
    ort = pytest.importorskip("onnxruntime_qnn")
    import re

    from q9diff.load.runtime import from_library

    for name in ("libQnnHtp.so", "libGenie.so"):
        lib = Path(ort.__file__).parent / name
        whole = re.search(rb"AISW_VERSION: (\d+)\.(\d+)\.(\d+)", lib.read_bytes())
        assert from_library(lib).qairt == tuple(int(g) for g in whole.groups()), name


@pytest.mark.parametrize("case", ["typed", "read"])
def test_a_5000_digit_version_is_one_line(tmp_path, case):
    digits = "2." + "9" * 5000
    if case == "typed":
        value = digits
    else:
        value = tmp_path / "libQnnHtp.so"
        value.write_bytes(fuzz_surfaces.elf(f"AISW_VERSION: {digits}.0\0".encode()))
    run = q9("doctor", VARIANTS / "qairt_2.48.bin", "--runtime", value)
    refused(run, "at most 9 digits")
    assert len(run.lines[0]) < 300


def _kernel_file() -> Path | None:
    for p in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/power/state", "/sys/kernel/profiling"):
        if os.path.isfile(p):
            return Path(p)
    return None


@pytest.mark.parametrize("what", ["sysfs link", "proc", "device", "fifo"])
def test_a_runtime_that_is_a_kernel_file_device_or_fifo_is_refused_unread(tmp_path, what):
    """A link to a sysfs file was "internal error (OSError: No such device)": mapped as a library."""
    target = {"proc": Path("/proc/self/status"), "device": Path("/dev/zero")}.get(what) or _kernel_file()
    if what == "fifo":
        target = tmp_path / "fifo"
        os.mkfifo(target)
    if target is None:
        pytest.skip("no regular sysfs file here")
    link = tmp_path / "libQnnHtp.so"
    link.symlink_to(target)
    run = q9("doctor", VARIANTS / "qairt_2.48.bin", "--runtime", link)
    refused(run, "libQnnHtp.so", "expected a runtime library")


# ---- 4. paths no system call can take, and the Python API ----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", LONG),
        (LONG, "B"),
        ("A", LONG),
        ("doctor", LONG),
        ("suggest", LONG, "B"),
        ("report", LONG),
        ("verify", LONG, "B"),
        ("steps", LONG, "B"),
        ("recompile", LONG, "--out", "o"),
        ("A", "B", "--html", LONG),
        ("A", "B", "--markdown", LONG),
        ("A", "B", "--runtime", LONG),
        ("A", "B", "--runtime", f"/{LONG}.so"),
        ("suggest", "A", "B", "--apply", LONG),
        ("inspect", "A", "--meta", LONG),
    ],
)
def test_a_path_component_over_255_bytes_is_one_line_from_every_command(args):
    binary = str(VARIANTS / "graphs_1.bin")
    run = q9(*(binary if a in ("A", "B") else a for a in args))
    refused(run, "x" * 50)
    assert "not a path the system can look up" in run.stderr, run.stderr


def test_the_python_api_raises_a_q9error_naming_the_input():
    """Seven calls raised ValueError or OSError (File name too long, No such device, 5,000 digits)."""
    import q9diff

    binary = str(VARIANTS / "graphs_1.bin")
    calls = {
        "open": lambda: q9diff.open(LONG),
        "diff": lambda: q9diff.diff(binary, LONG),
        "target": lambda: q9diff.target(LONG, "QCS9100"),
        "doctor": lambda: q9diff.doctor(LONG),
        "digits": lambda: q9diff.will_load(binary, runtime="2." + "9" * 5000),
        "device file": lambda: q9diff.will_load(binary, runtime="/dev/zero"),
        "runtime path": lambda: q9diff.will_load(binary, runtime=f"/{LONG}.so"),
        "NUL": lambda: q9diff.open("a\0b"),
        "whole path": lambda: q9diff.open("/".join(["d" * 200] * 25)),
    }
    for name, call in calls.items():
        with pytest.raises(q9diff.Q9Error) as caught:
            call()
        message = str(caught.value)
        assert "\n" not in message and len(message) < 400, (name, message)
        named = ("xxxxx", "--runtime", "/dev/zero", "a\\x00b", "ddddd")
        assert any(w in message for w in named), (name, message)


# ---- 5. the fuzzers' short rounds ----------------------------------------------------------------------


def test_a_short_round_of_each_round_5_fuzzer_finds_nothing():
    """scripts/fuzz_surfaces.py: programs of hostile shape, runtime libraries and versions, the API. The
    thousands-of-cases runs are by hand (its docstring)."""
    script = FIXTURES.parent / "scripts" / "fuzz_surfaces.py"
    args = [sys.executable, str(script), "--pte", "--runtime", "--api", "--cases", "60", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900)
    report = json.loads(done.stdout)
    assert {m: r["cases"] for m, r in report.items()} == {"pte": 60, "runtime": 60, "api": 60}
    assert all(r["read"] > 0 and r["refused"] > 0 for r in report.values()), report
    assert {m: r["faults"] for m, r in report.items()} == {"pte": {}, "runtime": {}, "api": {}}
    assert done.returncode == 0
