"""ExecuTorch .pte files with QNN delegates (issue 36), on the real files of fixtures/pte (made by
scripts/make_pte_fixtures.py with executorch 1.5.1 and QAIRT 2.51; their layout measured by the script's own
reader in NAME.layout.json, each context read by libQnnSystem in NAME.oracle.json):

1. the opener: every method and QNN delegate, payloads through the segments, the 256-byte header, a shared
   payload read once, other backends listed and skipped, FILE.pte#METHOD, the compile spec held against the
   binary, every byte in a region;
2. every command takes a .pte: inspect, diff (two .pte, a .pte and a .bin), --target, the load verdict,
   doctor, suggest (the ExecuTorch form leads), reports;
3. the fixtures are whole (a .pte, its recipe, layout and oracle);
4. hostile .pte files: one line naming the file, the offset and what was expected, exit 2, in bounded
   work and memory; the fuzzer's .pte round finds nothing.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_hostile_bundle import q9, refused

from q9diff.compare.container import container_json, spec_findings
from q9diff.formats import pte as P
from q9diff.oracle.crosscheck import disagreements
from q9diff.read import flatbuf
from q9diff.read.openers import container_parts, contexts, locate, open_binary

PTE = FIXTURES / "pte"
NAMES = ("fp16_sm8650", "fp16_qcs9100", "w8a8_sm8650", "w8a8_qcs9100", "two_delegates", "shared_weights",
         "with_xnnpack")  # fmt: skip
SRC = Path(os.environ.get("Q9DIFF_EXECUTORCH_SRC", "/nonexistent")) / "executorch" / "backends" / "qualcomm"


def layout(name: str) -> dict:
    return json.loads((PTE / f"{name}.layout.json").read_text())


def oracle(name: str) -> dict:
    return json.loads((PTE / f"{name}.oracle.json").read_text())


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


# ---- 1. the opener -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_method_and_delegate_is_found_where_the_layout_says(name):
    want, got = layout(name), container_json(locate(PTE / f"{name}.pte"))
    head = want["extended_header"]
    assert (got["size"], got["program_size"]) == (want["file_size"], head["program_size"])
    assert (got["segment_base_offset"], got["segment_data_size"]) == (
        head["segment_base_offset"],
        head["segment_data_size"],
    )
    base = head["segment_base_offset"]
    assert got["segments"] == [{"offset": base + s["offset"], "size": s["size"]} for s in want["segments"]]
    delegates = [(m["name"], d) for m in want["methods"] for d in m["delegates"]]
    assert len(got["delegates"]) == len(delegates)
    for mine, (method, d) in zip(got["delegates"], delegates):
        assert (mine["method"], mine["position"], mine["backend"]) == (method, d["index"], d["id"])
        assert (mine["location"], mine["index"]) == (
            d["processed"]["location"].lower(),
            d["processed"]["index"],
        )
        assert (mine["payload_offset"], mine["payload_size"]) == (d["payload_offset"], d["payload_size"])
        if d["id"] != P.QNN_BACKEND:
            assert mine["context"] is None
            continue
        q = d["qnn_payload"]
        assert (mine["binary_offset"], mine["binary_size"], mine["signature"]) == (
            q["binary_offset"],
            q["binary_size"],
            q["signature"],
        )
        (spec,) = [s for s in d["compile_specs"] if s["key"] == P.QNN_COMPILE_SPEC]
        decoded, htp = spec["decoded"], spec["decoded"]["backend_options"]["htp_options"]
        assert mine["compile_spec"] == {
            "size": spec["size"],
            "soc_model": decoded["soc_info"]["soc_model"],
            "htp_arch": decoded["soc_info"]["htp_info"]["htp_arch"],
            "vtcm_mb": decoded["soc_info"]["htp_info"]["vtcm_size_in_mb"],
            "backend_type": decoded["backend_options"]["backend_type"],
            "precision": {0: "quantized", 1: "fp16"}[htp["precision"]],
            "weight_sharing": htp["use_weight_sharing"],
            "dlbc": htp["use_dlbc"],
            "problem": None,
        }
        assert mine["compile_spec_findings"] == []  # every fixture's spec agrees with its binary


@pytest.mark.parametrize("name", NAMES)
def test_every_byte_of_the_pte_is_in_one_named_region(name):
    data = (PTE / f"{name}.pte").read_bytes()
    regions = container_json(locate(PTE / f"{name}.pte"))["regions"]
    end = 0
    for r in regions:
        assert r["offset"] == end and r["size"] > 0, r
        end += r["size"]
    assert end == len(data) == sum(r["size"] for r in regions)
    by_name = {r["name"]: r for r in regions}
    assert (
        by_name["pte/header"]["size"] + by_name["pte/program"]["size"]
        == layout(name)["extended_header"]["program_size"]
    )
    delegates = container_json(locate(PTE / f"{name}.pte"))["delegates"]
    binaries = sorted({(d["binary_offset"], d["binary_size"]) for d in delegates if d["context"]})
    found = [(r["offset"], r["size"]) for r in regions if r["kind"] == "context"]
    assert found == binaries
    for offset, _ in binaries:  # a 256-byte header before each, starting with the magic
        (header,) = [r for r in regions if r["name"].endswith("qnn_header") and r["offset"] + 256 == offset]
        assert struct.unpack_from("<I", data, header["offset"])[0] == P.QNN_PAYLOAD_MAGIC
        assert data[offset : offset + 8] == bytes.fromhex("0000000200000003")
    assert all(not data[r["offset"] : r["offset"] + r["size"]].strip(b"\0") for r in regions
               if r["kind"] == "padding")  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_each_context_inside_agrees_with_libqnnsystem(name):
    import hashlib

    found = contexts(locate(PTE / f"{name}.pte"))
    for b in oracle(name)["binaries"]:
        number = _number(name, b["method"], b["delegate_index"])
        cb = open_binary(f"{PTE / name}.pte#{number}")
        assert cb.size == b["binary_size"]
        assert hashlib.sha256(bytes(cb.data)).hexdigest() == b["binary_sha256"]
        assert disagreements(cb, b["oracle"]) == []
    # one context per distinct binary: shared_weights' two methods name one
    distinct = {x["binary_sha256"] for x in oracle(name)["binaries"]}
    assert len(found) == len(distinct) or name == "two_delegates"  # its two binaries differ in name only
    assert len(found) == len(oracle(name)["binaries"]) - (name == "shared_weights")


def _number(name: str, method: str, position: int) -> int:
    """A delegate's number in the file, from the layout's methods and places."""
    rows = [(m["name"], d["index"]) for m in layout(name)["methods"] for d in m["delegates"]]
    return rows.index((method, position))


def test_a_payload_two_methods_share_is_read_once_and_named_by_both():
    path = PTE / "shared_weights.pte"
    found = contexts(locate(path))
    assert [n for n, _ in found] == ["decode"]  # the first method in the program's order
    assert container_parts(locate(path)) == []  # one context: not a set
    graphs = [g.name for g in found[0][1].graphs]
    assert graphs == ["prefill", "decode"]
    for name in ("decode", "prefill", "0", "1"):
        cb = open_binary(f"{path}#{name}")
        assert (cb.size, [g.name for g in cb.graphs]) == (69632, graphs)
    data = container_json(locate(path))
    assert [(d["method"], d["context"]) for d in data["delegates"]] == [
        ("decode", "decode"),
        ("prefill", "decode"),
    ]
    assert len([r for r in data["regions"] if r["kind"] == "context"]) == 1


def test_other_backends_delegates_are_listed_and_skipped_with_a_line():
    path = PTE / "with_xnnpack.pte"
    done = run("inspect", path, "--json")
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "XnnpackBackend" in line and "listed, not read" in line and "with_xnnpack.pte" in line
    data = json.loads(done.stdout)
    assert data["schema"] == "q9diff.inspect/1" and data["path"].endswith("with_xnnpack.pte#forward")
    xnn = data["container"]["delegates"][1]
    assert (xnn["backend"], xnn["context"], xnn["payload_size"]) == ("XnnpackBackend", None, 368)
    assert [r["name"] for r in data["container"]["regions"]][-1] == "pte/segment[2]/XnnpackBackend"
    refused(
        q9("inspect", f"{path}#1"), "with_xnnpack.pte", "delegate 1 of method 'forward' is XnnpackBackend"
    )


def test_file_hash_method_or_number_picks_one_delegate():
    path = PTE / "two_delegates.pte"
    assert [p.path.name for p in container_parts(locate(path))] == [
        "two_delegates.pte#forward:0",
        "two_delegates.pte#forward:1",
    ]
    first, second = open_binary(f"{path}#forward:0"), open_binary(f"{path}#1")
    assert second.path.endswith("#forward:1") and first.data.tobytes() != second.data.tobytes()
    assert open_binary(f"{path}#0").data.tobytes() == first.data.tobytes()
    done = run("inspect", f"{path}#forward:1", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["size"] == 49152, done.stderr
    refused(q9("inspect", f"{path}#forward"), "two_delegates.pte", "a context named 'forward'", "forward:0")
    refused(
        q9("diff", PTE / "fp16_sm8650.pte#nope", PTE / "fp16_qcs9100.pte"), "fp16_sm8650.pte", "named 'nope'"
    )


def _spec_field(data: bytes, table: str, key: str) -> int:
    """The file offset of one compile spec field of the first delegate (fp16_sm8650.pte)."""
    program = flatbuf.root(memoryview(data), 0, struct.unpack_from("<Q", data, 0x10)[0], "x")
    d = program.get(P.PROGRAM["execution_plan"])[0].get(P.EXECUTION_PLAN["delegates"])[0]
    spec = d.get(P.BACKEND_DELEGATE["compile_specs"])[0]
    start, n = spec.raw_vector(P.COMPILE_SPEC["value"].slot)
    options = flatbuf.root(memoryview(data), start, n, "spec")
    soc = options.get(P.QNN_OPTIONS["soc_info"])
    tables = {
        "soc": soc,
        "htp_info": soc.get(P.SOC_INFO["htp_info"]),
        "htp": options.get(P.QNN_OPTIONS["backend_options"]).get(P.BACKEND_OPTIONS["htp_options"]),
    }
    maps = {"soc": P.SOC_INFO, "htp_info": P.HTP_INFO, "htp": P.HTP_OPTIONS}
    at = tables[table].field(maps[table][key].slot)
    assert at is not None, (table, key)
    return at


def test_a_compile_spec_that_disagrees_with_its_binary_is_a_finding(tmp_path):
    data = (PTE / "fp16_sm8650.pte").read_bytes()
    edits = {
        "soc_model": (
            ("soc", "soc_model"),
            77,
            "asks soc_model 77 (QcomChipset.QCS9100); the binary was built",
        ),
        "htp_arch": (("htp_info", "htp_arch"), 73, "asks htp_arch V73; the binary records dspArch v75"),
        "vtcm": (("htp_info", "vtcm_size_in_mb"), 4, "asks vtcm_size_in_mb 4; the binary records VTCM 8 MiB"),
        "precision": (("htp", "precision"), 0, "asks a quantized build; the binary computes in float16"),
    }
    for name, ((table, key), value, words) in edits.items():
        changed = bytearray(data)
        struct.pack_into("<i", changed, _spec_field(data, table, key), value)
        path = tmp_path / f"{name}.pte"
        path.write_bytes(changed)
        (finding,) = container_json(locate(path))["delegates"][0]["compile_spec_findings"]
        assert words in finding, finding
    path = tmp_path / "soc_model.pte"
    assert spec_findings(None, open_binary(path)) == []  # no spec: nothing compared
    done = run("doctor", path, "--json")
    found = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "executorch.compile-spec"]
    assert [(f["severity"], "soc_model 77" in f["evidence"]) for f in found] == [("warning", True)], found
    assert "method 'forward' delegate 0" in found[0]["where"] and done.returncode == 0
    text = run("inspect", path).stdout
    assert "compile spec disagrees: the compile spec asks soc_model 77" in text


@pytest.mark.skipif(
    not (SRC / "serialization" / "qc_compiler_spec.fbs").is_file(),
    reason="executorch 1.5.1's source is not here (set Q9DIFF_EXECUTORCH_SRC; .ci/run downloads it)",
)
def test_the_compile_spec_slots_are_executorchs():
    """Each slot formats/pte reads is its field's place in executorch's own schema (read, not copied)."""
    text = re.sub(r"//[^\n]*", "", (SRC / "serialization" / "qc_compiler_spec.fbs").read_text())
    fields = {
        m[1]: [(n, k) for n, k in re.findall(r"(\w+)\s*:\s*([\w\[\]]+)", m[2])]
        for m in re.finditer(r"table\s+(\w+)\s*\{([^}]*)\}", text)
    }
    maps = {
        "QnnExecuTorchOptions": P.QNN_OPTIONS,
        "SocInfo": P.SOC_INFO,
        "HtpInfo": P.HTP_INFO,
        "QnnExecuTorchBackendOptions": P.BACKEND_OPTIONS,
        "QnnExecuTorchHtpBackendOptions": P.HTP_OPTIONS,
    }
    for table, slots in maps.items():
        names = [name.strip() for name, _ in fields[table]]
        kinds = {name.strip(): kind.strip() for name, kind in fields[table]}
        for key, row in slots.items():
            assert names.index(key) == row.slot, (table, key)
            if kinds[key] == "bool":
                assert row.kind.sizeof() == 1, (table, key)  # booleans are one byte
    assert _enum(text, "QnnExecuTorchHtpPrecision") == {"kHtpQuantized": 0, "kHtpFp16": 1}
    assert {v: k for k, v in P.PRECISIONS.items()} == {"quantized": 0, "fp16": 1}
    assert _enum(text, "QnnExecuTorchBackendType")["kHtpBackend"] == P.HTP_BACKEND


def _enum(text: str, name: str) -> dict[str, int]:
    """An enum of the schema: each name and its value (one more than the one before, unless given)."""
    body = re.search(rf"enum\s+{name}\b[^{{]*\{{([^}}]*)\}}", text)[1]
    out, value = {}, -1
    for item in (e.strip() for e in body.split(",")):
        if item:
            key, _, given = item.partition("=")
            value = int(given, 0) if given.strip() else value + 1
            out[key.strip()] = value
    return out


# ---- the payload header, its checks and alignment ------------------------------------------------


def _program(data: bytes):
    return flatbuf.root(memoryview(data), 0, struct.unpack_from("<Q", data, 0x10)[0], "x")


def _segment_field(data: bytes, i: int, key: str) -> int:
    """The file offset of segment i's offset or size (a DataSegment table's slot)."""
    at = _program(data).get(P.PROGRAM["segments"])[i].field(P.DATA_SEGMENT[key].slot)
    assert at is not None, (i, key)
    return at


def _reference_field(data: bytes, method: int, delegate: int, key: str) -> int:
    """The file offset of a delegate's processed data location or index."""
    plan = _program(data).get(P.PROGRAM["execution_plan"])[method]
    ref = plan.get(P.EXECUTION_PLAN["delegates"])[delegate].get(P.BACKEND_DELEGATE["processed"])
    at = ref.field(P.DATA_REFERENCE[key].slot)
    assert at is not None, (method, delegate, key)
    return at


def _put(data: bytes, fmt: str, at: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


@pytest.mark.parametrize("name", NAMES)
def test_each_qnn_payload_is_its_256_byte_header_then_the_binary_it_sizes(name):
    data = (PTE / f"{name}.pte").read_bytes()
    for d in container_json(locate(PTE / f"{name}.pte"))["delegates"]:
        if d["backend"] != P.QNN_BACKEND:
            continue
        at = d["payload_offset"]
        magic, signature, size = struct.unpack_from("<IqQ", data, at)
        assert (magic, signature) == (P.QNN_PAYLOAD_MAGIC, d["signature"])
        assert (d["binary_offset"], d["binary_size"]) == (at + 256, size)
        assert size == d["payload_size"] - 256


def test_a_payload_header_that_does_not_check_is_refused(tmp_path):
    data = (PTE / "fp16_sm8650.pte").read_bytes()
    at = container_json(locate(PTE / "fp16_sm8650.pte"))["delegates"][0]["payload_offset"]  # 0x500
    magic = tmp_path / "magic.pte"
    magic.write_bytes(_put(data, "<I", at, 0x12345678))
    refused(q9("inspect", magic), "magic.pte at offset 0x500", "QNN payload header", "magic 0x5678abcd")
    size = tmp_path / "size.pte"
    size.write_bytes(_put(data, "<Q", at + 12, 49153))  # one byte more than the segment holds
    refused(q9("inspect", size), "size.pte at offset 0x50c", "inside its 49408-byte segment", "got 49153")
    short = tmp_path / "short.pte"  # a segment too small for the header
    short.write_bytes(_put(data, "<Q", _segment_field(data, 1, "size"), 100))
    refused(q9("inspect", short), "short.pte at offset 0x500", "QNN payload header", "256 bytes")


def test_a_segment_off_executorchs_alignment_is_read_and_said(tmp_path):
    """two_delegates with 64 zero bytes put before its second payload: that segment at +49472, not
    128-aligned; the binaries read as before, the 64 bytes are padding, one line says the alignment."""
    src = PTE / "two_delegates.pte"
    data = src.read_bytes()
    base, second = struct.unpack_from("<Q", data, 0x18)[0], 49408
    moved = bytearray(data[: base + second] + bytes(64) + data[base + second :])
    struct.pack_into("<Q", moved, 0x20, struct.unpack_from("<Q", data, 0x20)[0] + 64)
    struct.pack_into("<Q", moved, _segment_field(data, 2, "offset"), second + 64)
    path = tmp_path / "moved.pte"
    path.write_bytes(moved)
    for name in ("forward:0", "forward:1"):
        assert open_binary(f"{path}#{name}").data.tobytes() == open_binary(f"{src}#{name}").data.tobytes()
    regions = container_json(locate(path))["regions"]
    assert sum(r["size"] for r in regions) == len(moved)
    assert ("pte/padding", base + second, 64, "padding") in [
        (r["name"], r["offset"], r["size"], r["kind"]) for r in regions
    ]
    done = run("inspect", path, "--json")
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "moved.pte" in line and "segment 2 starts at +49472, not 128-aligned" in line, line


# ---- 2. every command takes a .pte -----------------------------------------------------------------


def _binary_of(name: str, tmp_path: Path) -> Path:
    """The context binary inside a one-delegate fixture, written out as a plain .bin."""
    (d,) = container_json(locate(PTE / f"{name}.pte"))["delegates"]
    data = (PTE / f"{name}.pte").read_bytes()
    out = tmp_path / f"{name}.bin"
    out.write_bytes(data[d["binary_offset"] : d["binary_offset"] + d["binary_size"]])
    return out


def test_diff_of_two_pte_builds_for_two_socs_names_soc_model():
    done = run("diff", PTE / "fp16_sm8650.pte", PTE / "fp16_qcs9100.pte", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    roots = {c["name"]: (c["a"], c["b"]) for c in data["causes"] if c["role"] == "root"}
    assert roots["soc_model"] == (57, 77) and roots["dsp_arch"] == (75, 73), roots
    assert data["a"]["path"].endswith("fp16_sm8650.pte#forward")
    same = run("diff", PTE / "w8a8_sm8650.pte", PTE / "w8a8_sm8650.pte")
    assert same.returncode == 0 and "Identical" in same.stdout, same.stderr
    sets = run("diff", PTE / "two_delegates.pte", PTE / "two_delegates.pte", "--json")
    assert sets.returncode == 0, sets.stderr
    assert json.loads(sets.stdout)["schema"] == "q9diff.setdiff/1"


def test_diff_of_a_pte_against_a_bin(tmp_path):
    own = _binary_of("fp16_sm8650", tmp_path)
    done = run("diff", PTE / "fp16_sm8650.pte", own)
    assert done.returncode == 0 and "Identical" in done.stdout, done.stdout + done.stderr
    other = run("diff", PTE / "fp16_qcs9100.pte", own, "--json")
    assert other.returncode == 1, other.stderr
    roots = {c["name"]: (c["a"], c["b"]) for c in json.loads(other.stdout)["causes"] if c["role"] == "root"}
    assert roots["soc_model"] == (77, 57), roots
    fp16_vs_int8 = run("diff", _binary_of("w8a8_sm8650", tmp_path), PTE / "fp16_sm8650.pte")
    assert fp16_vs_int8.returncode == 1, fp16_vs_int8.stderr


def test_target_and_the_load_verdict_on_a_pte():
    wrong = run("diff", PTE / "fp16_sm8650.pte", "--target", "QCS9100", "--json")
    assert wrong.returncode == 1, wrong.stderr
    data = json.loads(wrong.stdout)
    assert data["schema"] == "q9diff.target/1" and data["toolchain"]["form"] == "executorch"
    assert {c["name"]: (c["a"], c["b"]) for c in data["causes"]}["soc_model"] == (57, 77)
    assert data["load"]["verdict"] == "will not load"
    assert [f["rule"] for f in data["load"]["parts"][0]["findings"]][:1] == ["load.arch"]
    right = run("diff", PTE / "fp16_qcs9100.pte", "--target", "QCS9100")
    assert right.returncode == 0, right.stdout + right.stderr
    assert "Will it load on QCS9100: loads" in right.stdout
    old = run("diff", PTE / "w8a8_qcs9100.pte", PTE / "w8a8_qcs9100.pte", "--runtime", "2.48")
    assert old.returncode == 1 and old.stdout.startswith("Will not load on QAIRT 2.48\n"), old.stderr
    new = run("diff", PTE / "w8a8_qcs9100.pte", PTE / "w8a8_qcs9100.pte", "--runtime", "2.51")
    assert new.returncode == 0 and "Will it load on QAIRT 2.51: loads" in new.stdout, new.stderr


def test_doctor_takes_a_pte():
    wrong = run("doctor", PTE / "fp16_sm8650.pte", "--target", "QCS9100", "--json")
    assert wrong.returncode == 1, wrong.stderr
    errors = {f["check"] for f in json.loads(wrong.stdout)["findings"] if f["severity"] == "error"}
    assert {"build.soc_model", "load.arch"} <= errors, errors
    right = run("doctor", PTE / "with_xnnpack.pte", "--json")
    assert right.returncode == 0, right.stderr
    data = json.loads(right.stdout)
    assert not [f for f in data["findings"] if f["severity"] == "error"]
    spec = [f for f in data["findings"] if f["check"] == "executorch.compile-spec"]
    assert spec and all(f["severity"] == "info" for f in spec), spec
    assert any("XnnpackBackend" in n and "listed, not read" in n for n in data["notes"]), data["notes"]


def test_suggest_for_a_pte_leads_with_the_executorch_form(tmp_path):
    call = "generate_qnn_executorch_compiler_spec(soc_model=QcomChipset.QCS9100"
    done = run("suggest", PTE / "fp16_sm8650.pte", PTE / "fp16_qcs9100.pte")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()  # every toolchain's form, the candidate's own (ExecuTorch) first
    assert lines[0] == "  ExecuTorch:" and lines[1] == "    soc_model = 77", lines[:3]
    assert lines[2].strip().startswith(call), lines[:3]
    data = json.loads(run("suggest", PTE / "fp16_sm8650.pte", "--target", "QCS9100", "--json").stdout)
    assert data["toolchain"]["form"] == "executorch"
    soc = next(s for s in data["suggestions"] if s["setting"] == "soc_model")
    assert call in soc["targets"]["executorch"]
    # the same binary as a plain .bin: no ExecuTorch line first
    plain = run("suggest", _binary_of("fp16_sm8650", tmp_path), PTE / "fp16_qcs9100.pte")
    assert plain.returncode == 1 and plain.stdout.splitlines()[0] == "  qairt:", plain.stdout


def test_reports_of_pte_inputs_are_valid_against_the_shipped_schemas(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from q9diff.schemas import schema

    sm, qcs, two = PTE / "fp16_sm8650.pte", PTE / "fp16_qcs9100.pte", PTE / "two_delegates.pte"
    cases = {
        "inspect": (("inspect", sm, "--html", tmp_path / "inspect.html"), 0, "q9diff.inspect/1"),
        "inspect-set": (("inspect", two), 0, "q9diff.inspect-set/1"),
        "diff": (
            ("diff", sm, qcs, "--html", tmp_path / "diff.html", "--markdown", tmp_path / "diff.md"),
            1,
            "q9diff.diff/1",
        ),
        "setdiff": (("diff", two, two), 0, "q9diff.setdiff/1"),
        "target": (("diff", sm, "--target", "QCS9100"), 1, "q9diff.target/1"),
        "suggest": (("suggest", sm, qcs), 1, "q9diff.suggest/1"),
        "doctor": (
            ("doctor", sm, "--html", tmp_path / "doctor.html", "--markdown", tmp_path / "doctor.md"),
            0,
            "q9diff.doctor/1",
        ),
    }
    saved = {}
    for name, (args, code, schema_id) in cases.items():
        done = run(*args, "--json")
        assert done.returncode == code, (name, done.stderr)
        data = json.loads(done.stdout)
        assert data["schema"] == schema_id, name
        errors = [e.message for e in jsonschema.Draft202012Validator(schema(schema_id)).iter_errors(data)]
        assert errors == [], (name, errors[:3])
        saved[name] = tmp_path / f"{name}.json"
        saved[name].write_text(done.stdout)
    assert "container" in json.loads(saved["inspect"].read_text())
    assert "container" in json.loads(saved["inspect-set"].read_text())
    for page in ("inspect.html", "diff.html", "doctor.html"):
        assert "fp16_sm8650.pte" in (tmp_path / page).read_text(), page
    assert "pte/segment[1]/context_binary" in (tmp_path / "inspect.html").read_text()
    assert "generate_qnn_executorch_compiler_spec" in (tmp_path / "diff.md").read_text()
    again = run("report", saved["diff"], "--markdown", "-")
    assert again.returncode == 1 and "generate_qnn_executorch_compiler_spec" in again.stdout, again.stderr
    page = run("report", saved["doctor"], "--html", tmp_path / "again.html")
    assert page.returncode == 0 and "fp16_sm8650.pte" in (tmp_path / "again.html").read_text(), page.stderr


# ---- 3. the fixtures are whole ------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_fixture_is_a_small_pte_with_its_recipe_layout_and_oracle(name):
    data = (PTE / f"{name}.pte").read_bytes()
    assert len(data) < 128 << 10 and data[4:12] == b"ET12eh00"
    recipe = json.loads((PTE / f"{name}.recipe.json").read_text())
    assert (recipe["name"], recipe["output"]) == (name, f"{name}.pte")
    assert recipe["versions"]["executorch"] == "1.5.1" and recipe["versions"]["onnxruntime-qnn"] == "2.7.0"
    assert layout(name)["file_size"] == len(data)
    assert oracle(name)["file"] == f"{name}.pte" and oracle(name)["binaries"]


# ---- 4. hostile .pte files -----------------------------------------------------------------------------


def _repeated(data: bytes, into: int = 0) -> bytes:
    """two_delegates with its delegate list naming its first delegate twice (the second entry's offset
    rewritten to reach the first's table)."""
    plan = _program(data).get(P.PROGRAM["execution_plan"])[into]
    at = plan.field(P.EXECUTION_PLAN["delegates"].slot)
    vector = at + struct.unpack_from("<I", data, at)[0]
    first = vector + 4 + struct.unpack_from("<I", data, vector + 4)[0]
    return _put(data, "<I", vector + 8, first - (vector + 8))


def _cross_method(data: bytes) -> bytes:
    """shared_weights with its second method's delegate entry pointing at the first method's table."""
    plans = _program(data).get(P.PROGRAM["execution_plan"])
    ats = [p.field(P.EXECUTION_PLAN["delegates"].slot) for p in plans]
    vectors = [at + struct.unpack_from("<I", data, at)[0] for at in ats]
    first = vectors[0] + 4 + struct.unpack_from("<I", data, vectors[0] + 4)[0]
    return _put(data, "<I", vectors[1] + 4, first - (vectors[1] + 4))


ONE, TWO, SHARED = "fp16_sm8650", "two_delegates", "shared_weights"
# name: (fixture, mutation of its bytes, words of the one line: the offset and what was expected)
HOSTILE = {
    "segment_offset_out_of_range": (
        TWO,
        lambda d: _put(d, "<Q", _segment_field(d, 2, "offset"), 1 << 40),
        ("at offset 0x84", "segment 2 inside the 98816 bytes of segment data", "at 1099511627776"),
    ),
    "segment_size_out_of_range": (
        ONE,
        lambda d: _put(d, "<Q", _segment_field(d, 1, "size"), (1 << 64) - 1),
        ("at offset 0x7c", "segment 1 inside the 49408 bytes of segment data"),
    ),
    "segment_data_past_the_file": (
        ONE,
        lambda d: _put(d, "<Q", 0x20, 1 << 62),
        ("at offset 0x20", "segment data inside the file of 50688 bytes"),
    ),
    "binary_size_past_its_segment": (
        ONE,
        lambda d: _put(d, "<Q", 0x500 + 12, 1 << 62),
        ("at offset 0x50c", "a context binary inside its 49408-byte segment"),
    ),
    "segment_overlapping_the_program": (
        ONE,
        lambda d: _put(d, "<Q", 0x18, 1000),
        ("at offset 0x18", "segments placed after the program's 1200 bytes", "segment base of 1000"),
    ),
    "segments_overlapping_each_other": (
        TWO,
        lambda d: _put(d, "<Q", _segment_field(d, 2, "offset"), 128),
        ("at offset 0x780", "segments that are the same or apart"),
    ),
    "delegate_naming_a_missing_segment": (
        ONE,
        lambda d: _put(d, "<I", _reference_field(d, 0, 0, "index"), 7),
        ("at offset 0x204", "a segment index below 2 (got 7)"),
    ),
    "delegate_with_no_such_location": (
        ONE,
        lambda d: _put(d, "<b", _reference_field(d, 0, 0, "location"), 5),
        ("at offset 0x204", "a data location of 0 (inline) or 1 (segment) (got 5)"),
    ),
    "header_length_larger_than_the_file": (
        ONE,
        lambda d: _put(d, "<I", 0x0C, 0xFFFFFFF0),
        ("at offset 0xc", "an extended header of at least 32 bytes inside the file"),
    ),
    "program_size_larger_than_the_file": (
        ONE,
        lambda d: _put(d, "<Q", 0x10, len(d) + 1),
        ("at offset 0x10", "inside the file of 50688 bytes (got 50689)"),
    ),
    "root_offset_past_the_program": (
        ONE,
        lambda d: _put(d, "<I", 0, 0xFFFFFFFF),
        ("at offset 0x0", "a FlatBuffer root offset below 1200"),
    ),
    "truncated": (ONE, lambda d: d[:30000], ("at offset 0x20", "inside the file of 30000 bytes")),
    "cut_inside_the_header": (ONE, lambda d: d[:7], ("at offset 0x0", "an ExecuTorch .pte (file too short)")),
    "repeated_delegate": (TWO, _repeated, ("at offset 0x24c", "each delegate listed once")),
    "delegate_repeated_across_methods": (SHARED, _cross_method, ("each delegate listed once",)),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_pte_is_one_line_and_exit_2(case, tmp_path):
    fixture, mutate, words = HOSTILE[case]
    data = (PTE / f"{fixture}.pte").read_bytes()
    path = tmp_path / f"{case}.pte"
    path.write_bytes(mutate(data))
    assert (PTE / f"{fixture}.pte").read_bytes() == data  # the fixture is untouched
    done = q9("inspect", path, "--json")
    refused(done, f"{path}", *words)
    assert done.lines[0].startswith(f"q9diff: error: {path}"), done.lines
    assert "Traceback" not in done.stderr and done.stdout == "" and done.rss_mib < 300, done.rss_mib


def test_every_command_refuses_a_hostile_pte_in_the_same_one_line(tmp_path):
    path = tmp_path / "missing.pte"
    data = (PTE / f"{ONE}.pte").read_bytes()
    path.write_bytes(_put(data, "<I", _reference_field(data, 0, 0, "index"), 7))
    good = PTE / "fp16_sm8650.pte"
    for args in (
        ("diff", path, good),
        ("diff", good, path),
        ("diff", path, "--target", "SM8650"),
        ("diff", path, path, "--runtime", "2.48"),
        ("suggest", path, good),
        ("doctor", path),
    ):
        refused(q9(*args), "missing.pte at offset 0x204", "a segment index below 2 (got 7)")


def test_a_sparse_2_gib_trailer_is_read_in_bounded_memory(tmp_path):
    """Bytes after the last segment (executorch writes none) are the trailer, padding when zero. Deciding
    that read every page of a 2 GiB hole into memory (2 GiB resident, 13 s); a MiB at a time now."""
    path = tmp_path / "trailer.pte"
    path.write_bytes((PTE / "fp16_sm8650.pte").read_bytes())
    os.truncate(path, 2 << 30)
    done = q9("inspect", path, "--json")
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout)["container"]["regions"][-1]
    assert (last["name"], last["size"], last["kind"]) == ("pte/trailer", (2 << 30) - 50688, "padding")
    assert done.rss_mib < 300, done.rss_mib
    with open(path, "r+b") as f:  # one byte not zero, far in: unknown
        f.seek((2 << 30) - 5)
        f.write(b"\1")
    last = json.loads(q9("inspect", path, "--json").stdout)["container"]["regions"][-1]
    assert (last["name"], last["kind"]) == ("pte/trailer", "unknown")


def test_a_short_round_of_the_pte_fuzzer_finds_nothing():
    """scripts/fuzz.py --pte: 300 mutated .pte files through the opener, every context, the region map and
    a diff, in one process; every 25th also through `q9diff inspect` as a user runs it (exit 0, or 2 with
    one line). The several-thousand-case run is by hand (see its docstring)."""
    fuzz = FIXTURES.parent / "scripts" / "fuzz.py"
    args = [sys.executable, str(fuzz), "--pte", "--cases", "300", "--seed", "1", "--cli-every", "25"]
    done = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert report["seeds"] == sorted(f"{n}.pte" for n in NAMES)
    assert report["cases"] == 300 and report["parsed"] > 0 and report["format_errors"] > 0
    assert report["cli_runs"] == 12 and report["cli_refusals"] > 0
    assert (report["crash_buckets"], report["region_map_faults"], report["hangs_over_2s"]) == ([], [], [])
    assert done.returncode == 0


def test_a_pte_is_known_by_its_bytes_not_its_name(tmp_path):
    """A .pte renamed model.bin is read as the program it is (its FlatBuffer identifier "ET" and two
    digits at offset 4), not refused as a context binary with a bad header."""
    renamed = tmp_path / "model.bin"
    renamed.write_bytes((PTE / "fp16_sm8650.pte").read_bytes())
    done = q9("inspect", renamed, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["container"]["regions"][0]["name"] == "pte/header"
    diff = q9("diff", renamed, PTE / "fp16_qcs9100.pte")
    assert diff.returncode == 1 and diff.stdout.startswith("Root cause: soc_model 57 → 77"), diff.stdout
    assert "Fix, in ExecuTorch (the candidate is a .pte" in diff.stdout
