"""Qualcomm's own parser of backend extension configs (libQnnHtpNetRunExtensions.so from onnxruntime-qnn),
asked by q9diff in an isolated child: its verdicts on files whose answer the schema and docs give."""

from __future__ import annotations

import json

import pytest

from q9diff.fix import extconfig

pytest.importorskip("onnxruntime_qnn")


def test_qualcomms_parser_accepts_soc_id_and_soc_model_and_refuses_what_its_schema_refuses():
    device = {"dsp_arch": "v73", "cores": [{"perf_profile": "burst"}]}
    texts = [
        json.dumps({"devices": [{"soc_id": 60, **device}]}),
        json.dumps({"devices": [{"soc_model": 77, **device}]}),
        json.dumps({"devices": [{"soc_model": "77", **device}]}),
        json.dumps({"graphs": {"graph_names": ["g"], "vtcm_mb": 8}}),  # one object, not a list
        json.dumps({"graphs": [{"vtcm_mb": 8, "O": 3}]}),  # settings for no named graph
        json.dumps({"graphs": [{"graph_names": ["*"], "vtcm_mb": 8, "O": 3.0, "weights_packing": True}]}),
        '// a comment\n{"devices": []}',
    ]
    soc_id, soc_model, soc_string, graphs_object, no_names, star, commented = extconfig.check(texts)
    assert soc_id.errors == () and soc_model.errors == () and star.errors == ()
    assert "error in key: #/devices/0/soc_model" in " ".join(soc_string.errors)
    assert "error in key: #/graphs" in " ".join(graphs_object.errors)
    assert no_names.errors == ("Valid 'graph_names' must be specified to configure graph settings.",)
    assert any("not valid JSON" in e for e in commented.errors)


def test_the_parser_runs_where_a_planted_module_cannot_reach_it(tmp_path, monkeypatch):
    """A json.py or ctypes.py beside the user's files (issue 9.1) is never imported by the child."""
    marker = tmp_path / "ran"
    for name in ("json.py", "ctypes.py", "os.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').write('{name}')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    (verdict,) = extconfig.check(['{"devices": [{"soc_model": 77, "dsp_arch": "v73"}]}'])
    assert verdict.errors == () and not marker.exists()
