"""DLCs read, inspected and diffed on the real fixtures of scripts/make_dlc_fixtures.py (onnxruntime-qnn
2.7.0, QAIRT 2.51): graph DLCs differing in one weight, an op, quantization or only target options, and
multi-SoC context DLCs of two and three SoCs, with the EPContext models that name them."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
from conftest import FIXTURES
from conftest import q9diff_cli as q9diff

from q9diff.compare.dlc import diff, summary
from q9diff.formats import dlc as D
from q9diff.read.binary import ContextBinary
from q9diff.read.dlc import Dlc, is_dlc
from q9diff.read.parse import parse

HERE = FIXTURES / "dlc"
GRAPHS = sorted(HERE.glob("*.dlc"))
CONTEXTS = sorted(HERE.glob("ctx_*_qnn.bin"))
VERSION = "2.51.0.260929181845"


def _causes(a: str, b: str) -> list[str]:
    return [c["cause"] for c in diff(Dlc.open(HERE / a), Dlc.open(HERE / b))["causes"]]


def test_the_fixtures_are_there_and_small():
    assert len(GRAPHS) == 10 and len(CONTEXTS) == 7
    assert sum(p.stat().st_size for p in HERE.iterdir()) < 1 << 20


@pytest.mark.parametrize("path", GRAPHS + CONTEXTS, ids=lambda p: p.name)
def test_every_record_is_stored_with_crc_0_and_every_byte_is_named(path):
    dlc = Dlc.open(path)
    assert is_dlc(path)
    for e in dlc.entries:
        h = parse(D.LocalHeader, dlc.buf, e.header, str(path), "a local header")
        assert (h.method, h.crc32, h.time, h.date) == (D.STORED, 0, 0, 0)
    regions = dlc.regions
    assert sum(r.size for r in regions) == dlc.size
    assert [r for r in regions if r.kind == "unknown"] == []


def test_a_graph_dlc_holds_netd_netp_and_the_weights_by_offset():
    dlc = Dlc.open(HERE / "mlp_w8a16.dlc")
    assert {e.name for e in dlc.entries} == {
        "model",
        "model.params",
        "model.params.bin",
        "dlc.metadata2.3.0",
        "dlc.metadata.history.2.3.0",
    }
    assert dlc.converter_version == VERSION and dlc.kind == "graph"
    (g,) = dlc.graphs
    assert g.name.startswith("QNNExecutionProvider_QNNExecutionProvider_")
    assert sorted(o.type for o in g.ops) == [
        "Dequantize",
        "Eltwise_Binary",
        "Eltwise_Binary",
        "FullyConnected",
        "FullyConnected",
        "Quantize",
    ]
    w1 = g.tensor("w1_quantized_transpose")
    assert w1.dims == (16, 8) and w1.encoding.bitwidth == 8 and w1.encoding.scale > 0
    assert g.tensor("x").encoding is None and g.tensor("x_QuantizeLinear_Output").encoding.bitwidth == 16
    params = dlc.by_name["model.params.bin"]
    assert sum(w.size for w in g.weights) == params.size  # the weights tile model.params.bin
    assert {w.name for w in g.weights} == {t.name for t in g.tensors if t.type == 4}


def test_a_context_dlc_lists_every_cache_and_each_is_the_context_binary_it_says():
    dlc = Dlc.open(HERE / "ctx_3soc_qnn.bin")
    s = summary(dlc)
    assert s["kind"] == "context" and s["unknown_bytes"] == 0
    assert [(c["soc_model"], c["dsp_arch"]) for c in s["caches"]] == [(60, 73), (57, 75), (69, 79)]
    for c in dlc.caches:  # the metadata JSON agrees with the cache read as a context binary
        cb = ContextBinary(dlc.buf[c.offset : c.offset + c.size], c.name)
        assert cb.soc_model == c.info["socModel"] and cb.dsp_arch == c.info["contextMetadata"]["dspArch"]
        assert cb.build_id == c.info["buildId"]


@pytest.mark.parametrize(
    "a, b, causes",
    [
        ("mlp_fp32_target.dlc", "mlp_fp32.dlc", ["timestamps"]),
        ("mlp_fp32_weight.dlc", "mlp_fp32.dlc", ["weights"]),
        ("mlp_fp32_op.dlc", "mlp_fp32.dlc", ["ops"]),
        ("mlp_w8a16.dlc", "mlp_fp32.dlc", ["ops", "quantization"]),  # weights retyped: quantization
        ("mlp_w8a8.dlc", "mlp_w8a16.dlc", ["quantization"]),  # biases retyped u16 -> u8
        ("mlp_fp32.dlc", "mlp_fp32.dlc", []),
        ("mlp_fp32_qairt_2.48.dlc", "mlp_fp32.dlc", ["converter_version"]),
        ("cnn_w8a8_per_tensor.dlc", "cnn_w8a8_per_channel.dlc", ["quantization", "weights"]),
        ("cnn_w8a8_stride.dlc", "cnn_w8a8_per_channel.dlc", ["ops", "quantization"]),
        ("ctx_3soc_qnn.bin", "ctx_2soc_qnn.bin", ["caches"]),
        ("ctx_2soc_vtcm_qnn.bin", "ctx_2soc_qnn.bin", ["vtcm_size", "vtcm_size"]),
        ("ctx_2soc_weight_qnn.bin", "ctx_2soc_qnn.bin", ["shared_weights"]),
    ],
)
def test_each_pair_names_what_differs(a, b, causes):
    assert _causes(a, b) == causes


def test_ops_are_matched_by_structure_not_by_their_generated_names():
    found = diff(Dlc.open(HERE / "mlp_fp32_op.dlc"), Dlc.open(HERE / "mlp_fp32.dlc"))
    (ops,) = found["causes"]
    # candidate → reference: the candidate's Tanh is not in the reference
    assert len(ops["removed"]) == 1 and ops["removed"][0].startswith("Neuron(operation 8)")
    assert ops["added"] == [] and ops["changed"] == []


def test_a_changed_op_is_said_by_what_changed_in_it_not_added_and_removed():
    found = diff(Dlc.open(HERE / "cnn_w8a8_stride.dlc"), Dlc.open(HERE / "cnn_w8a8_per_channel.dlc"))
    ops = found["causes"][0]
    assert ops["added"] == ops["removed"] == []
    assert ops["changed"][0].startswith("Conv2d") and "stride [2, 2] → [1, 1]" in ops["changed"][0]


def test_per_channel_encodings_are_read_per_axis():
    g = Dlc.open(HERE / "cnn_w8a8_per_channel.dlc").graphs[0]
    (w,) = [t for t in g.tensors if t.name.startswith("w_")]
    assert (
        w.encoding.axis == 3 and len(w.encoding.per_axis) == 8 and all(s > 0 for s, _ in w.encoding.per_axis)
    )
    (w,) = [
        t for t in Dlc.open(HERE / "cnn_w8a8_per_tensor.dlc").graphs[0].tensors if t.name.startswith("w_")
    ]
    assert w.encoding.axis is None and w.encoding.scale > 0


def test_qairt_2_48_against_2_51_changes_only_the_converter_version():
    found = diff(Dlc.open(HERE / "mlp_fp32_qairt_2.48.dlc"), Dlc.open(HERE / "mlp_fp32.dlc"))
    assert found["causes"][0]["detail"].startswith("2.48.") and found["causes"][0]["detail"].endswith(VERSION)
    assert {r["name"] for r in found["records"] if r["same"]} == {"model", "model.params", "model.params.bin"}


def test_one_weight_changed_is_said_by_tensor_with_its_bytes():
    (w,) = diff(Dlc.open(HERE / "mlp_fp32_weight.dlc"), Dlc.open(HERE / "mlp_fp32.dlc"))["causes"]
    assert [(t["tensor"], t["bytes_differing"]) for t in w["tensors"]] == [
        ("w1", w["tensors"][0]["bytes_differing"])
    ]
    assert 1 <= w["tensors"][0]["bytes_differing"] <= 4  # one float32


def test_only_target_options_leave_only_timestamps():
    found = diff(Dlc.open(HERE / "mlp_fp32_target.dlc"), Dlc.open(HERE / "mlp_fp32.dlc"))
    assert found["only_timestamps"] and not found["identical"]
    assert {r["name"] for r in found["records"] if not r["same"]} == {
        "dlc.metadata2.3.0",
        "dlc.metadata.history.2.3.0",
    }


def test_inspect_and_diff_on_the_command_line():
    r = q9diff("inspect", str(HERE / "mlp_w8a8.dlc"))
    assert r.returncode == 0 and f"QAIRT converter {VERSION}" in r.stdout and "unknown: 0 B" in r.stdout
    r = q9diff("inspect", str(HERE / "ctx_2soc_qnn.bin"))
    assert r.returncode == 0 and "soc_model 60" in r.stdout and "soc_model 69" in r.stdout
    r = q9diff(str(HERE / "mlp_fp32_target.dlc"), str(HERE / "mlp_fp32.dlc"))
    assert r.returncode == 1 and r.stdout.startswith("Only timestamps differ")
    r = q9diff(str(HERE / "mlp_fp32.dlc"), str(HERE / "mlp_fp32.dlc"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["identical"]


def test_epcontext_models_that_name_context_dlcs_diff_as_the_dlcs_do():
    by_dlc = q9diff(str(HERE / "ctx_3soc_qnn.bin"), str(HERE / "ctx_2soc_qnn.bin"), "--json")
    by_onnx = q9diff(str(HERE / "ctx_3soc.onnx"), str(HERE / "ctx_2soc.onnx"), "--json")
    assert by_dlc.returncode == by_onnx.returncode == 1
    a, b = json.loads(by_dlc.stdout), json.loads(by_onnx.stdout)
    assert a["dlc"]["causes"] == b["dlc"]["causes"] and [c["cause"] for c in a["dlc"]["causes"]] == ["caches"]
    # the caches pair by name: the SoC both have is identical, the added one unpaired
    assert [p.rsplit("#", 1)[1] for p in b["unpaired_a"]] == ["htp.cache.sm8650.0"]


def test_a_graph_dlc_beside_its_compiled_binary_says_what_the_compile_added():
    r = q9diff(str(HERE / "mlp_w8a16.dlc"), str(HERE / "mlp_w8a16_compiled_qnn.bin"), "--json")
    found = json.loads(r.stdout)
    assert r.returncode == 1 and found["compiled"] and found["b"]["kind"] == "context binary"
    said = {c["cause"]: c["detail"] for c in found["causes"]}
    assert "soc_model 60" in said["target"] and "dsp_arch v73" in said["target"] and "8 MiB" in said["target"]
    assert "6 QNN ops" in said["ops"] and said["io_encoding"].startswith(
        "all 2 graph inputs and outputs keep"
    )
    # the EPContext model that names the binary, given first, reads the same
    r = q9diff(str(HERE / "mlp_w8a16_compiled.onnx"), str(HERE / "mlp_w8a16.dlc"), "--json")
    assert [c["detail"] for c in json.loads(r.stdout)["causes"]] == [c["detail"] for c in found["causes"]]


def test_a_dlc_is_known_by_its_bytes_not_its_name(tmp_path):
    renamed = tmp_path / "model.bin"
    shutil.copyfile(HERE / "mlp_fp32.dlc", renamed)
    r = q9diff("inspect", str(renamed), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["schema"] == "q9diff.inspect-dlc/1"


@pytest.mark.parametrize("cut", [10, 200, 3000, 5000, 5060])
def test_a_truncated_dlc_is_one_line_exit_2(tmp_path, cut):
    data = (HERE / "mlp_fp32.dlc").read_bytes()[:cut]
    bad = tmp_path / "bad.dlc"
    bad.write_bytes(data)
    r = q9diff("inspect", str(bad))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "expected" in lines[0] and "Traceback" not in r.stderr


def test_a_garbled_weight_offset_is_named(tmp_path):
    dlc = Dlc.open(HERE / "mlp_fp32.dlc")
    data = bytearray((HERE / "mlp_fp32.dlc").read_bytes())
    e = dlc.by_name["model.params"]
    flat = bytes(data[e.offset : e.end])
    at = flat.find((592).to_bytes(8, "little"))  # w2's offset in model.params.bin
    assert at > 0
    data[e.offset + at : e.offset + at + 8] = (1 << 40).to_bytes(8, "little")
    bad = tmp_path / "bad.dlc"
    bad.write_bytes(bytes(data))
    r = q9diff("inspect", str(bad))
    assert (
        r.returncode == 2
        and "a weight inside model.params.bin" in r.stderr
        and len(r.stderr.splitlines()) == 1
    )


ORACLE = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_qnn") is None, reason="libQnnSystem comes with onnxruntime-qnn"
)


@ORACLE
@pytest.mark.parametrize("path", GRAPHS + CONTEXTS, ids=lambda p: p.name)
def test_libqnnsystem_agrees_on_every_field_it_reports(path):
    from q9diff.oracle.dlc import judged, read_dlc_isolated

    theirs = read_dlc_isolated(path)
    compared, disagreements = judged(path, theirs)
    assert disagreements == [] and compared >= 19
    if theirs["caches"]:  # the check can fail: a soc_model libQnnSystem did not say is refused
        theirs["caches"][0]["soc_model"] += 1
        assert any("socModel" in d for d in judged(path, theirs)[1])
    else:
        theirs["graphs"][0]["inputs"][0]["dims"][1] += 1
        assert any("dims" in d for d in judged(path, theirs)[1])


@ORACLE
def test_inspect_oracle_of_a_dlc():
    r = q9diff("inspect", str(HERE / "ctx_2soc_qnn.bin"), "--oracle", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["dlc"]["oracle_disagreements"] == []
    r = q9diff("inspect", str(HERE / "mlp_w8a16.dlc"), "--oracle", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["oracle_disagreements"] == []


def test_a_short_dlc_fuzz_round_finds_no_crash_hang_or_region_gap():
    """scripts/fuzz.py --dlc: 200 mutated DLCs (seed 1) read, mapped and diffed; 3,000 by hand found none."""
    import subprocess
    import sys

    fuzz = FIXTURES.parent / "scripts" / "fuzz.py"
    args = [sys.executable, str(fuzz), "--dlc", "--cases", "200", "--seed", "1", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert report["cases"] == 200 and report["parsed"] > 0 and report["format_errors"] > 0
    assert (report["crash_buckets"], report["region_map_faults"], report["hangs_over_2s"]) == ([], [], [])
    assert done.returncode == 0


def test_a_context_dlc_judged_against_a_device_is_judged_by_the_cache_for_its_soc():
    jsonschema = pytest.importorskip("jsonschema")
    from q9diff.schemas import schema

    r = q9diff(str(HERE / "ctx_3soc.onnx"), "--target", "SM8650", "--json")
    data = json.loads(r.stdout)
    assert data["dlc_cache"]["name"] == "htp.cache.sm8650.0"
    assert {c["name"] for c in data["causes"]} <= {
        "vtcm_size",
        "optimization_level",
    }  # no soc_model, dsp_arch
    jsonschema.Draft202012Validator(schema(data["schema"])).validate(data)
    # a DLC with no cache for the device: every cache judged, each built for another SoC
    data = json.loads(q9diff(str(HERE / "ctx_2soc_qnn.bin"), "--target", "SM8650", "--json").stdout)
    assert "dlc_cache" not in data and "soc_model" in {c["name"] for c in data["causes"]}


def test_doctor_runtime_judges_every_cache_of_a_context_dlc():
    r = q9diff("doctor", str(HERE / "ctx_2soc_qnn.bin"), "--runtime", "2.48", "--json")
    found = json.loads(r.stdout)
    (load,) = [f for f in found["findings"] if f["check"] == "load.runtime"]
    assert r.returncode == 1 and load["severity"] == "error"
    assert "htp.cache.sc8380xp.0" in load["where"] and "htp.cache.sm8750.0" in load["where"]


@pytest.mark.parametrize("ext", ["_qnn.bin", ".onnx"])
def test_a_multi_soc_pair_whose_socs_differ_has_the_socs_as_its_set_root_cause_not_a_split(ext):
    """ctx_2soc (soc_model 60,69) against ctx_3soc (60,57,69): a cache more is a SoC more, and the fix is
    the reference's SoC list in the provider options that wrote it, read from each cache's metadata."""
    jsonschema = pytest.importorskip("jsonschema")
    from q9diff.schemas import schema

    a, b = str(HERE / f"ctx_2soc{ext}"), str(HERE / f"ctx_3soc{ext}")
    data = json.loads(q9diff(a, b, "--json").stdout)
    jsonschema.Draft202012Validator(schema(data["schema"])).validate(data)
    roots = [c for c in data["causes"] if c["role"] == "root"]
    assert [c["name"] for c in roots] == ["soc_set"]
    (socs,) = roots
    assert (socs["a"], socs["b"]) == ([60, 69], [60, 57, 69])
    assert socs["ort_options"] == {"soc_model": "60,57,69", "htp_arch": "73,75,79"}
    shown = q9diff(a, b).stdout
    assert "Root causes over the set: soc_set 60 / 69 → 60 / 57 / 69" in shown and "split" not in shown
    assert "soc_model=60,57,69" in shown and "htp_arch=73,75,79" in shown and "No setting" not in shown
    # the other way round, and through suggest: the candidate becomes the reference
    back = json.loads(q9diff(b, a, "--json").stdout)
    assert [c["ort_options"] for c in back["causes"] if c["name"] == "soc_set"] == [
        {"soc_model": "60,69", "htp_arch": "73,79"}
    ]
    said = q9diff("suggest", a, b)
    assert said.returncode == 1 and "soc_model=60,57,69" in said.stdout


def test_caches_for_other_socs_at_the_same_place_are_not_paired_as_a_build_for_the_wrong_soc():
    """ctx_2soc (60,69) against ctx_2soc_other (60,57): the same number of caches, one for another SoC. The
    SM8750 cache is no wrong-SoC build of the SM8650 one: a SoC removed and one added, nothing more."""
    a, b = str(HERE / "ctx_2soc_qnn.bin"), str(HERE / "ctx_2soc_other_qnn.bin")
    data = json.loads(q9diff(a, b, "--json").stdout)
    assert [c["name"] for c in data["causes"] if c["role"] == "root"] == ["soc_set"]
    assert [p["part"] for p in data["parts"]] == ["ctx_2soc_qnn.bin#htp.cache.sc8380xp.0"]
    assert data["unpaired_a"] == [a + "#htp.cache.sm8750.0"] and data["unpaired_b"] == [
        b + "#htp.cache.sm8650.0"
    ]
    assert data["causes"][0]["ort_options"] == {"soc_model": "60,57", "htp_arch": "73,75"}


def test_a_multi_soc_pair_with_the_same_socs_keeps_its_per_cache_causes_and_no_soc_set():
    data = json.loads(
        q9diff(str(HERE / "ctx_2soc_qnn.bin"), str(HERE / "ctx_2soc_vtcm_qnn.bin"), "--json").stdout
    )
    names = {c["name"] for c in data["causes"] if c["role"] == "root"}
    assert names == {"vtcm_size"}


def test_the_reports_of_a_multi_soc_pair_give_the_soc_list_as_the_fix(tmp_path):
    a, b = str(HERE / "ctx_2soc_qnn.bin"), str(HERE / "ctx_3soc_qnn.bin")
    r = q9diff(a, b, "--markdown", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 1
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("## q9diff set diff: ctx\\_2soc\\_qnn.bin vs ctx\\_3soc\\_qnn.bin\n")  # the files
    assert "soc\\_set 60 / 69 → 60 / 57 / 69" in md and "soc_model=60,57,69" in md
    page = (tmp_path / "r.html").read_text()
    fix = page.index("soc_model=60,57,69")  # the set's fix, once, before the parts' own sections
    assert page.count("soc_model=60,57,69") == 1 and fix < page.index("<hr><h2>")


def test_diff_runtime_judges_each_cache_of_a_context_dlc():
    r = q9diff(str(HERE / "ctx_2soc_qnn.bin"), str(HERE / "ctx_3soc_qnn.bin"), "--runtime", "2.48", "--json")
    load = json.loads(r.stdout)["load"]
    assert r.returncode == 1 and load["verdict"] == "will not load"
    assert [p["part"] for p in load["parts"]] == [
        "ctx_2soc_qnn.bin#htp.cache.sc8380xp.0",
        "ctx_2soc_qnn.bin#htp.cache.sm8750.0",
    ]
    assert all(p["verdict"] == "will not load" for p in load["parts"])


def test_a_vtcm_given_only_to_the_compiler_is_a_root_cause_and_never_only_timestamps():
    """ctx_2soc (no vtcm_mb) against ctx_2soc_vtcm4 (4,4): every cache records 4 MiB on both sides, and the
    SC8380XP cache's compiler option says 8 MiB (its whole VTCM) against 4 MiB: that is the root cause, and
    the fix sets it. The DLC's metadata differs only in time, but its caches do not: never 'only
    timestamps'."""
    a, b = str(HERE / "ctx_2soc_qnn.bin"), str(HERE / "ctx_2soc_vtcm4_qnn.bin")
    data = json.loads(q9diff(a, b, "--json").stdout)
    assert data["dlc"]["only_timestamps"] is False
    assert [c["cause"] for c in data["dlc"]["causes"]] == ["caches"]
    (part,) = [p for p in data["parts"] if p["part"].endswith("sc8380xp.0")]
    (vtcm,) = [c for c in part["causes"] if c["role"] == "root"]
    assert (vtcm["name"], vtcm["a"], vtcm["b"]) == ("vtcm_size", 8 << 20, 4 << 20)
    assert [(s["setting"], s["value"]) for s in part["suggestions"]] == [("vtcm_size", 4)]
    assert "Only timestamps" not in q9diff(a, b).stdout


def test_a_qairt_2_49_context_dlc_names_its_caches_otherwise_and_they_pair_by_soc():
    """QAIRT 2.49 names the cache records backend.metadata<n> (the metadata's cacheList says whose), 2.51
    htp.cache.<soc>.0: ctx_2soc from each pairs SoC by SoC, and the root cause is the QAIRT version."""
    old = HERE / "ctx_2soc_qairt_2.49_qnn.bin"
    dlc = Dlc.open(old)
    assert dlc.kind == "context"
    assert [(c.name, c.info["socModel"]) for c in dlc.caches] == [
        ("backend.metadata0", 60),
        ("backend.metadata1", 69),
    ]
    data = json.loads(q9diff(str(old), str(HERE / "ctx_2soc_qnn.bin"), "--json").stdout)
    pairs = {(p["a"]["path"].split("#")[1], p["b"]["path"].split("#")[1]) for p in data["parts"]}
    assert pairs == {
        ("backend.metadata0", "htp.cache.sc8380xp.0"),
        ("backend.metadata1", "htp.cache.sm8750.0"),
    }
    assert [c["name"] for c in data["causes"] if c["role"] == "root"] == ["sdk_version"]
    assert "caches" not in [c["cause"] for c in data["dlc"]["causes"]]
    # through the EPContext models, against three SoCs: the SoC added is all the DLC line adds
    data = json.loads(
        q9diff(str(HERE / "ctx_2soc_qairt_2.49.onnx"), str(HERE / "ctx_3soc.onnx"), "--json").stdout
    )
    assert [c["name"] for c in data["causes"] if c["role"] == "root"][:1] == ["soc_set"]
    (socs,) = [c for c in data["dlc"]["causes"] if c["cause"] == "caches"]
    assert (socs["added"], socs["removed"]) == (["htp.cache.sm8650.0"], [])
