"""The whole loop on the bundled pair: suggest --apply fixes the local recipe, recompiles, and the
rebuilt binaries are byte-identical to the reference (the compiler is deterministic)."""

from __future__ import annotations

import json
import shutil
from importlib import metadata

import pytest
from conftest import FIXTURES
from test_cli import q9diff

pytest.importorskip("onnxruntime_qnn")


def test_suggest_apply_recompile_closes_the_gap(tmp_path, fixtures_dir):
    work = tmp_path / "qwen-mini"
    shutil.copytree(FIXTURES / "qwen-mini", work)
    local, ref, new = work / "local", work / "reference", tmp_path / "new"
    ext_before = (local / "htp_backend_ext_config.json").read_text()
    r = q9diff(
        "suggest", str(local), str(ref),
        "--apply", str(local / "recipe.json"),
        "--apply", str(local / "htp_backend_ext_config.json"),
        "--recompile", "--out", str(new),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Gap closed" in r.stdout
    for part in ("part_1_of_2.bin", "part_2_of_2.bin"):
        assert (new / part).read_bytes() == (ref / part).read_bytes()
    # The rebuilt set carries its recipe, so it can be run and compared like any build.
    rebuilt = json.loads((new / "recipe.json").read_text())
    assert rebuilt["settings"]["soc_model"] == 77
    assert rebuilt["made_with"]["onnxruntime-qnn"] == metadata.version("onnxruntime-qnn")  # this build's
    r = q9diff("verify", str(new), str(ref), "--steps", "2")
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    recipe = json.loads((local / "recipe.json").read_text())
    assert recipe["settings"]["soc_model"] == 77 and recipe["settings"]["vtcm_mb"] == 8
    assert (local / "recipe.json.bak").exists()
    ext = json.loads((local / "htp_backend_ext_config.json").read_text())
    assert ext["devices"][0]["soc_model"] == 77 and ext["graphs"][0]["vtcm_mb"] == 8
    assert (local / "htp_backend_ext_config.json.bak").read_text() == ext_before


def test_dry_run_writes_nothing_and_unknown_files_are_refused(tmp_path, fixtures_dir):
    work = tmp_path / "qwen-mini"
    shutil.copytree(FIXTURES / "qwen-mini", work)
    local, ref = work / "local", work / "reference"
    before = (local / "recipe.json").read_bytes()
    r = q9diff("suggest", str(local), str(ref), "--apply", str(local / "recipe.json"), "--dry-run")
    assert "+" in r.stdout and "soc_model" in r.stdout
    assert (local / "recipe.json").read_bytes() == before and not (local / "recipe.json.bak").exists()
    odd = tmp_path / "notes.txt"
    odd.write_text("soc_model: 0\n")
    r = q9diff("suggest", str(local), str(ref), "--apply", str(odd))
    assert r.returncode == 2 and "left untouched" in r.stderr and odd.read_text() == "soc_model: 0\n"
    script = tmp_path / "build.py"
    text = 'cfg = CompileConfig(backend="HTP", device_custom_configs=[HtpDeviceConfig(soc_model=0)])\n'
    script.write_text(text)
    r = q9diff("suggest", str(local), str(ref), "--apply", str(script))  # the change is shown, not made
    assert r.returncode == 0, r.stdout + r.stderr
    fixed = text.replace("soc_model=0", 'soc_model=77, dsp_arch="v73"')
    assert f"+{fixed}" in r.stdout
    assert script.read_text() == text
    assert not (tmp_path / "build.py.bak").exists()
