"""The real-model corpus of issue 55 (scripts/make_layers_real.py), cut to its smallest model: openWakeWord's
"alexa" head from the package's wheel, quantized as users do and with one fault planted per variant. The
corpus itself is far too slow for the suite; this builds one model's variants and runs `q9diff layers` on its
clean w8a16 build and on the activation-range fault."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from conftest import ROOT
from conftest import q9diff_cli as q9diff
from onnx import numpy_helper

from q9diff.runners.local import LocalRunner

pytestmark = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))

SCRIPT = ROOT / "scripts" / "make_layers_real.py"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("layers-real")
    wheels = out / "wheels"
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            "-d",
            str(wheels),
            "openwakeword==0.4.0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if got.returncode != 0:
        pytest.skip(f"openwakeword 0.4.0's wheel could not be downloaded: {got.stderr.strip()[-200:]}")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--only", "oww-alexa", "--cache", str(wheels)]
        + ["--variants", "w8a16_clean,w8a16_act_range,w8a16_qdq_disagree"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _inits(path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def _qdq(path, tensor: str):
    model = onnx.load(path)
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tensor)
    dqs = [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == q.output[0]]
    return q, dqs


def test_manifest_names_the_file_and_every_variant(corpus):
    manifest = json.loads((corpus / "manifest.json").read_text())
    model = manifest["models"]["oww-alexa"]
    assert (model["package"], model["version"], model["split"]) == ("openwakeword", "0.4.0", "fit")
    assert len(model["sha256"]) == 64
    names = {v["name"] for v in manifest["variants"]}
    assert names == {"oww-alexa.w8a16_clean", "oww-alexa.w8a16_act_range", "oww-alexa.w8a16_qdq_disagree"}
    disagree = next(v for v in manifest["variants"] if v["name"] == "oww-alexa.w8a16_qdq_disagree")
    assert disagree["htp_changes"] is False


def test_the_halves_share_no_family_and_a_third_was_held_out(corpus):
    # each held-out half is reported on its own; one family in two halves would be fitted and reported both
    halves = json.loads((corpus / "manifest.json").read_text())["split"]["halves"]
    families = [f for fs in halves.values() for f in fs]
    assert len(families) == len(set(families)), halves
    assert list(halves) == ["fit", "held_out", "held_out_3"]


def test_faults_are_planted_where_the_manifest_says(corpus):
    manifest = json.loads((corpus / "manifest.json").read_text())
    by = {v["name"]: v for v in manifest["variants"]}
    clean = corpus / "oww-alexa" / "w8a16_clean.onnx"
    ci = _inits(clean)
    v = by["oww-alexa.w8a16_act_range"]
    q, dqs = _qdq(corpus / v["candidate"], v["fault"]["target"])
    fi = _inits(corpus / v["candidate"])
    cq, _ = _qdq(clean, v["fault"]["target"])
    for n in (q, *dqs):
        assert np.isclose(fi[n.input[1]], ci[cq.input[1]] * 0.25)
    v = by["oww-alexa.w8a16_qdq_disagree"]
    q, dqs = _qdq(corpus / v["candidate"], v["fault"]["target"])
    fi = _inits(corpus / v["candidate"])
    assert fi[q.input[2]] == ci[q.input[2]]  # the QuantizeLinear keeps the clean zero point
    assert all(fi[n.input[2]] != ci[q.input[2]] for n in dqs)


def test_layers_names_the_range_fault_and_nothing_on_the_clean_build(corpus):
    manifest = json.loads((corpus / "manifest.json").read_text())
    by = {v["name"]: v for v in manifest["variants"]}
    for name in ("oww-alexa.w8a16_clean", "oww-alexa.w8a16_act_range"):
        v = by[name]
        done = q9diff(
            "layers",
            str(corpus / v["candidate"]),
            "--reference",
            str(corpus / v["reference"]),
            "--inputs",
            str(corpus / v["inputs"]),
            "--json",
        )
        data = json.loads(done.stdout)
        fd = data["first_divergence"]
        if v["expected"] is None:
            assert done.returncode == 0 and fd is None, fd
        else:
            assert done.returncode == 1
            assert fd["tensor"] == v["expected"]["tensor"] or fd["node"] == v["expected"]["node"], fd
