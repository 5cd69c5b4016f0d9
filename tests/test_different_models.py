"""Two builds of different models (no graph name and no graph I/O signature in common): every output says
so, still compares their settings, marks byte attribution as not meaningful and suggests settings only.
Builds of one model (renamed graphs, another quantization) keep the output they always had."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import FIXTURES, ROOT
from conftest import q9diff_cli as q9diff

from q9diff.compare.diff import diff, to_json
from q9diff.compare.models import MODEL_CAUSES, different_models
from q9diff.compare.rules import FIX_TARGETS
from q9diff.read.openers import open_binary

REAL = ROOT.parent / "shared" / "real" / "binaries"
QNN_225 = REAL / "simple_model_qualcomm.bin"  # QNN 2.25, graph "simple"
LITERT = REAL / "simple_add_op.sm8750.tflite"  # LiteRT's test model, QNN 2.40, graph "qnn_partition_0"
LITERT_V75 = REAL / "simple_add_op_qc_v75_precompiled.tflite"
DENOISE = REAL / "denoise_229_htp_vtcm8mb.serialized.bin"  # QNN 2.29, graph "denoise"
VARIANTS = FIXTURES / "variants"
FIRST = "Builds of different models: no graph name in common"

needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent: no real third-party binaries")


@needs_real
@pytest.mark.parametrize("pair", [(QNN_225, LITERT), (DENOISE, LITERT_V75)], ids=["2.25-litert", "denoise"])
def test_json_says_different_models_compares_settings_and_counts_no_bytes(pair):
    r = q9diff("diff", *map(str, pair), "--json")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    models = d["different_models"]
    assert models["byte_attribution"] == "not meaningful: builds of different models"
    assert models["evidence"][0].startswith("no graph name in common (")
    assert models["evidence"][1].startswith("no graph I/O signature in common (")
    assert all(c["bytes"] is None for c in d["causes"]) and d["weights_verdict"] is None
    roots = {c["name"] for c in d["causes"] if c["role"] == "root"}
    assert roots and not roots & set(MODEL_CAUSES)  # settings (and the SDK), nothing the model brings
    assert {c["name"] for c in d["causes"] if c["role"] == "model"} & {"graph_structure", "schedule"}
    assert d["suggestions"] and {s["setting"] for s in d["suggestions"]} <= set(FIX_TARGETS)


@needs_real
def test_terminal_leads_with_it_and_prints_no_attribution():
    r = q9diff("diff", str(QNN_225), str(LITERT))
    lines = r.stdout.splitlines()
    assert " ".join(lines[:4]).startswith(f"{FIRST} (simple vs qnn_partition_0)")
    said = " ".join(lines)  # ranked: what decides correctness, then loading, then speed (issue 38)
    assert "Settings that differ: soc_model 0 → 69 (correctness), sdk_version v2.25" in said
    assert "(loading), optimization_level 2 → 3 (speed)" in said
    assert "Root cause" not in r.stdout and "where the changed bytes went" not in r.stdout
    assert "byte attribution: not meaningful: builds of different models" in " ".join(r.stdout.split())
    assert "graph_structure (model)" in r.stdout


@needs_real
def test_suggest_names_settings_only(tmp_path):
    r = q9diff("suggest", str(DENOISE), str(LITERT_V75))
    assert r.returncode == 1, r.stderr
    text = " ".join(r.stdout.split())
    assert text.startswith(f"{FIRST} (denoise vs qnn_partition_0)") and "Only settings are suggested." in text
    # every form lists the settings, each `    setting = value` under the form's label (qairt's loop
    # variable `graphs = (...)` is no setting)
    named = {m[1] for m in re.finditer(r"(?m)^    (\w+) = ", r.stdout)} - {"graphs"}
    assert named and set(named) <= set(FIX_TARGETS)


@needs_real
def test_html_and_sets_say_it_too(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copy(DENOISE, a / "model.bin")
    shutil.copy(QNN_225, b / "model.bin")
    page = tmp_path / "report.html"
    r = q9diff("diff", str(a), str(b), "--html", str(page))
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("Builds of different models")
    assert "Settings that differ over the set" in r.stdout
    html = page.read_text()
    assert "Builds of different models: no graph name in common (denoise vs simple)" in html
    assert "byte attribution: not meaningful" in html and "Where the changed bytes went" not in html
    d = json.loads(q9diff("diff", str(a), str(b), "--json").stdout)
    assert d["different_models"]["evidence"] == d["parts"][0]["different_models"]["evidence"]


@pytest.mark.parametrize(
    "pair",
    [
        ("qairt_2.47.bin", "qairt_2.51.bin"),  # ONNX Runtime's generated graph name vs "mlp": same shapes
        ("precision_fp16.bin", "precision_w8a16.bin"),  # "mlp.float" vs "mlp", float vs quantized I/O
        ("graphs_1.bin", "graphs_2.bin"),  # one graph vs two, one name shared
        ("opt_1.bin", "opt_3.bin"),
    ],
)
def test_one_models_builds_are_not_called_different(pair, fixtures_dir):
    a, b = (open_binary(VARIANTS / name) for name in pair)
    res = diff(a, b)
    assert res.different_models == () and "different_models" not in to_json(res)
    assert "Builds of different models" not in q9diff("diff", *(str(VARIANTS / n) for n in pair)).stdout


def test_one_shared_name_or_one_shared_signature_keeps_one_model():
    def graph(name, *dims):
        return {"name": name, "inputs": [{"dims": list(dims)}], "outputs": [{"dims": list(dims)}]}

    assert different_models([graph("a", 1, 2)], [graph("b", 3)])  # nothing shared
    assert not different_models([graph("a", 1, 2)], [graph("a", 3)])  # the name
    assert not different_models([graph("a", 1, 2)], [graph("b", 1, 2)])  # the shapes
    assert not different_models([graph("a", 1, 2), graph("x", 9)], [graph("b", 3), graph("x", 8)])
    assert not different_models([], [graph("b", 3)])  # no graph read: no evidence
