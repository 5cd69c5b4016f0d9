"""Context binaries made by other people's tools (../shared/real/binaries: QNN 2.22 to 2.40, ONNX Runtime
EPContext models, LiteRT models): q9diff reads what libQnnSystem reads, names every byte, and never turns
a value it could not read into a cause or a fix."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import pytest
from conftest import ROOT, all_bins
from conftest import q9diff_cli as q9diff

from q9diff.compare.diff import diff
from q9diff.compare.summary import inspect_summary, unknown_bytes
from q9diff.read.openers import contexts, locate

REAL = ROOT.parent / "shared" / "real" / "binaries"
NEGATIVE = ("not_a_context_binary_converter_tar.bin", "qnn_ctx_2_inputs_order_test.onnx")

pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"{REAL} is absent: the real third-party binaries live in the shared folder"
)


def real_files() -> list[Path]:
    return sorted(p for p in REAL.iterdir() if p.name not in NEGATIVE) if REAL.is_dir() else []


def real_contexts():
    return [(f"{p.name}#{n}", cb) for p in real_files() for n, cb in contexts(locate(p))]


def test_every_real_file_is_read_and_every_byte_named():
    seen = []
    for name, cb in real_contexts():
        s = inspect_summary(cb)
        assert sum(r["size"] for r in s["regions"]) == cb.size, name
        assert unknown_bytes(cb) <= 0.10 * cb.size, (name, unknown_bytes(cb))
        assert cb.graphs and all(g.inputs and g.outputs for g in cb.graphs), name
        seen.append(cb.build_id[:5])
    # QNN 2.22 (header 2 2 0 0, blob 3.1.1), 2.25 (3.2.0), 2.32 (3.2.2), 2.40 (3.3.3)
    assert {"v2.22", "v2.25", "v2.32", "v2.40"} <= set(seen)


def test_real_binaries_agree_with_libqnnsystem(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from q9diff.oracle.crosscheck import disagreements
    from q9diff.oracle.reader import read_binary_info_isolated, to_dict

    for i, (name, cb) in enumerate(real_contexts()):
        raw = tmp_path / f"{i}.bin"  # contexts inside .onnx/.tflite: the oracle reads the same bytes
        raw.write_bytes(bytes(cb.data))
        assert disagreements(cb, to_dict(read_binary_info_isolated(raw))) == [], name


def test_unknown_fields_are_declared_with_a_reason():
    by_build = {cb.build_id[:5]: cb for _, cb in real_contexts()}
    old = inspect_summary(by_build["v2.25"])  # BinaryInfo v1: no socModel, no graphBlobInfo
    assert old["soc_model"] is None and "socModel" in old["unknown"]["soc_model"]
    assert old["graphs"][0]["vtcm_size"] is None
    assert any(k.endswith(".vtcm_size") for k in old["unknown"])
    v232 = inspect_summary(by_build["v2.32"])  # absent socModel in v3 is 0, as libQnnSystem says
    assert v232["soc_model"] == 0 and v232["target"]["generic_target"]
    g = v232["graphs"][0]
    assert g["vtcm_size"] == 4 * 1024 * 1024 and g["optimization_level"] == 3
    assert (
        g["const_size"] is None
        and "graphBlobInfo version 1" in v232["unknown"][f"graphs[{g['name']}].const_size"]
    )


def test_litert_pair_names_the_settings_that_differ():
    a = contexts(locate(REAL / "simple_add_op_qc_v75_precompiled.tflite"))[0][1]
    b = contexts(locate(REAL / "simple_add_op.sm8750.tflite"))[0][1]
    res = diff(a, b)
    roots = {c.name: c for c in res.causes if c.role == "root"}
    assert set(roots) == {"soc_model", "dsp_arch", "vtcm_size", "sdk_version", "tensor_names"}
    assert (roots["soc_model"].a, roots["soc_model"].b) == (0, 69)
    assert (roots["dsp_arch"].a, roots["dsp_arch"].b) == (75, 79)
    assert (roots["vtcm_size"].a, roots["vtcm_size"].b) == (4 << 20, 8 << 20)
    assert "optimization_level" not in roots  # O3 in both
    assert {s["setting"] for s in res.suggestions} == {"soc_model", "dsp_arch", "vtcm_size"}


def _no_unknown(v) -> bool:
    if v is None:
        return False
    if isinstance(v, (list, tuple)):
        return all(_no_unknown(x) for x in v)
    if isinstance(v, dict):
        return all(_no_unknown(x) for x in v.values())
    return str(v) not in ("unknown", "None", "null")  # UNKNOWN_SDM is a soc_type the compiler wrote


def test_no_cause_or_suggestion_carries_an_unknown_value():
    pool = [cb for _, cb in real_contexts()]
    fixtures = [p for p in all_bins() if "variants" in p.parts][:6]
    from q9diff.read.binary import ContextBinary

    pool += [ContextBinary.open(p) for p in fixtures]
    for a, b in product(pool, pool):
        res = diff(a, b)
        for c in res.causes:
            assert _no_unknown(c.a) and _no_unknown(c.b), (a.path, b.path, c)
        for s in res.suggestions:
            assert _no_unknown(s["value"]) and _no_unknown(s["targets"]), (a.path, b.path, s)


def test_multi_context_epcontext_model_is_a_set():
    r = q9diff("inspect", "--json", str(REAL / "qnn_multi_ctx_embed.onnx"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert len(data["contexts"]) == 2
    r = q9diff("--json", str(REAL / "qnn_multi_ctx_embed.onnx"), str(REAL / "qnn_multi_ctx_embed.onnx"))
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["parts"]) == 2


def test_negative_cases_are_refused_in_one_line():
    for name in NEGATIVE:
        r = q9diff("inspect", str(REAL / name))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (name, r.stderr)
        assert "Traceback" not in r.stderr and name in r.stderr


def test_epcontext_path_outside_the_models_folder_is_refused(tmp_path):
    onnx = pytest.importorskip("onnx")
    helper, TensorProto = onnx.helper, onnx.TensorProto
    for ref in (str(all_bins()[0].resolve()), "../outside.bin"):
        node = helper.make_node(
            "EPContext", ["x"], ["y"], domain="com.microsoft", embed_mode=0, ep_cache_context=ref
        )
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        model = tmp_path / "m.onnx"
        onnx.save(helper.make_model(graph), model)
        r = q9diff("inspect", str(model))
        assert r.returncode == 2 and "inside" in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["simple_add_op.sm8750.tflite", "qnn_multi_ctx_embed.onnx"])
def test_contexts_inside_a_file_are_addressed_and_checked_by_the_oracle(name):
    # A context inside a .tflite or an embedded EPContext node has no file of its own: --oracle hands
    # libQnnSystem a copy of its bytes, and FILE#NAME (as inspect and set diffs list it) is accepted.
    r = q9diff("inspect", "--oracle", str(REAL / name))
    assert r.returncode == 0, r.stderr
    assert "oracle (libQnnSystem) agrees on every field" in r.stdout and "disagrees" not in r.stdout
    first = contexts(locate(REAL / name))[0][0]
    r = q9diff("inspect", "--json", "--oracle", f"{REAL / name}#{first}")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["path"] == f"{REAL / name}#{first}" and data["oracle_disagreements"] == []
    r = q9diff(f"{REAL / name}#{first}", f"{REAL / name}#{first}")
    assert r.returncode == 0 and "Identical" in r.stdout, r.stderr
    r = q9diff("inspect", f"{REAL / name}#no_such_context")
    assert r.returncode == 2 and "expected a context named 'no_such_context'" in r.stderr


def test_optimization_level_is_the_level_run_where_a_file_does_not_record_it():
    # QNN 2.25 records no optimizationLevel (GraphInfo without graphBlobInfo); both sides are then
    # compared on the options' O, which equals the recorded level wherever both exist.
    a, b = (
        contexts(locate(REAL / "simple_model_qualcomm.bin"))[0][1],
        contexts(locate(REAL / "simple_add_op_qc_v75_precompiled.tflite"))[0][1],
    )
    assert a.graphs[0].optimization_level is None and b.graphs[0].optimization_level == 3
    assert (a.options(0)["O"], b.options(0)["O"]) == ("2", "3")
    res = diff(a, b)
    cause = next(c for c in res.causes if c.name == "optimization_level")
    assert (cause.role, cause.a, cause.b) == ("root", 2, 3)
    assert any("options O" in e for e in cause.evidence)
    assert [s["value"] for s in res.suggestions if s["setting"] == "optimization_level"] == [3]
    assert all(u["setting"] != "optimization_level" for u in res.unknown)


def test_qnn_2_29_weights_are_named_and_compared_as_weights(tmp_path):
    # QNN 2.29 (blob 3.2.0) records no constSize: the inner pickle's Sz record bounds the pool. The
    # denoise model's weights are the last 221,184 bytes (28% of the file), up to the file's end.
    name = "denoise_229_htp_vtcm8mb.serialized.bin"
    cb = contexts(locate(REAL / name))[0][1]
    assert cb.build_id.startswith("v2.29") and cb.graphs[0].const_size is None
    pool = next(r for r in cb.regions if r.leaf == "const_pool")
    assert (pool.size, pool.end) == (221_184, cb.size)
    assert unknown_bytes(cb) == 0
    from q9diff.compare.packing import pool_stats

    assert pool_stats(cb).pool_bytes == pool.size
    # Two 4 KiB blocks of those weights swapped: a diff says the weights moved, none is new.
    raw = bytearray((REAL / name).read_bytes())
    a, b = pool.offset + 10 * 4096, pool.offset + 20 * 4096
    raw[a : a + 4096], raw[b : b + 4096] = raw[b : b + 4096], raw[a : a + 4096]
    (tmp_path / name).write_bytes(raw)
    r = q9diff("--json", str(REAL / name), str(tmp_path / name))
    assert r.returncode == 1, r.stderr  # the files differ
    res = json.loads(r.stdout)
    assert res["weights_verdict"].startswith("weights identical, re-laid out"), res["weights_verdict"]


def test_the_graph_line_shows_the_arch_read_and_labels_options_that_differ_from_the_records():
    # LiteRT's QNN 2.40 model: metadata dspArch 79 (the options name only min_arch), and options
    # vtcm_mb=4 / hvx_threads=6 beside a recorded VTCM of 8 MiB and 0 HVX threads.
    name = str(REAL / "simple_add_op.sm8750.tflite")
    r = q9diff("inspect", name)
    assert r.returncode == 0, r.stderr
    assert "dsp_arch v79 (options min_arch=79)" in r.stdout and "arch ?" not in r.stdout
    assert "vtcm_mb=4 asked, vtcm_size 8 MiB recorded" in r.stdout
    assert "hvx_threads=6 asked, num_hvx_threads 0 recorded" in r.stdout
    g = json.loads(q9diff("inspect", "--json", name).stdout)["graphs"][0]
    assert {(d["option"], d["asked"], d["recorded"]) for d in g["options_vs_recorded"]} == {
        ("vtcm_mb", "4", 8 << 20),
        ("hvx_threads", "6", 0),
    }
    r = q9diff("inspect", str(REAL / "simple_add_op_qc_v75_precompiled.tflite"))
    assert "dsp_arch v75 (options min_arch=75)" in r.stdout


def test_the_target_line_says_an_arch_not_recorded_once():
    # QNN 2.25's BinaryInfo v1 records neither socModel nor dspArch: the target line said "dsp_arch not
    # recorded recorded"; an arch that is recorded is still said so (QNN 2.29's v68)
    r = q9diff("inspect", str(REAL / "simple_model_qualcomm.bin"))
    assert r.returncode == 0, r.stderr
    assert "soc_model 0 (generic target), dsp_arch not recorded — " in r.stdout
    assert "not recorded recorded" not in r.stdout
    r = q9diff("inspect", str(REAL / "denoise_229_htp_vtcm8mb.serialized.bin"))
    assert "soc_model 0 (generic target), dsp_arch v68 recorded — " in r.stdout
