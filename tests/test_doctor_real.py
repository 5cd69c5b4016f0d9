"""doctor on real bundles as their authors wrote them (issue 35, part 3): Genie's "unset" token, an
extension file judged on its own, paths resolved as Genie resolves them, a JSON error named for what it
is. Real files from ../shared/real/configs, laid out as their repositories lay them out."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.doctor import run as doctor
from q9diff.inputs import given

REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "configs"
pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"{REAL} is absent: no real third-party configs here"
)
QWEN = FIXTURES / "qwen-mini" / "reference"


def _findings(path: Path, check: str):
    return [f for f in doctor.run(given(path)).findings if f.check == check]


def test_bos_token_minus_one_is_genie_s_unset_not_an_error(tmp_path):
    """Qualcomm's ai-hub-apps ChatApp config (and two other projects) write bos-token -1, which Genie's
    own schema (libGenie.so) defines as unset; doctor called it outside the vocabulary."""
    config = json.loads((REAL / "ai-hub-apps" / "llm_on_genie" / "qwen2_5_7b_instruct.json").read_text())
    config["dialog"]["context"]["bos-token"] = -1
    path = tmp_path / "qwen2_5_7b_instruct.json"
    path.write_text(json.dumps(config))
    found = _findings(path, "vocab.special")
    assert not [f for f in found if f.severity == "error" and "bos-token" in f.where], found
    assert any("bos-token -1: unset" in f.evidence for f in found)
    config["dialog"]["context"]["bos-token"] = -2  # any other negative id is still outside
    path.write_text(json.dumps(config))
    bos = [f for f in _findings(path, "vocab.special") if "bos-token" in f.where]
    assert [f.severity for f in bos] == ["error"]


def _aedh_bundle(tmp_path: Path, arch: str | None = None) -> Path:
    """ai-engine-direct-helper's Genie sample as its repository lays it out (samples/genie/python/ with
    the config; samples/qai_libs/ with the extension file; models below the config's folder)."""
    samples = tmp_path / "samples"
    (samples / "genie" / "python" / "models" / "Qwen2.0-7B").mkdir(parents=True)
    (samples / "qai_libs").mkdir()
    shutil.copy(REAL / "aedh" / "genie" / "Qwen2.0-7B.config.json", samples / "genie" / "python")
    ext = json.loads((REAL / "aedh" / "genie" / "htp_backend_ext_config.json").read_text())
    if arch is not None:
        ext["devices"][0]["dsp_arch"] = arch
    (samples / "qai_libs" / "htp_backend_ext_config.json").write_text(json.dumps(ext))
    shutil.copy(QWEN / "tokenizer.json", samples / "genie" / "python" / "models" / "Qwen2.0-7B")
    return samples


def test_an_extension_file_whose_soc_and_arch_disagree_is_an_error_with_no_ctx_bin(tmp_path, monkeypatch):
    """A project shipped soc_id 60 (SC8380XP, v73) with dsp_arch v75 and fixed it two days later; doctor
    said nothing with no ctx-bin at hand."""
    samples = _aedh_bundle(tmp_path, "v75")
    monkeypatch.chdir(samples)  # where the sample is run from
    config = Path("genie/python/Qwen2.0-7B.config.json")
    (hit,) = [f for f in _findings(config, "extension.soc") if f.severity == "error"]
    assert "soc_id 60 is SC8380XP, v73" in hit.evidence and "dsp_arch is v75" in hit.evidence
    assert 'dsp_arch "v73"' in hit.fix
    fine = _aedh_bundle(tmp_path / "as-shipped")  # the file as committed: soc_id 60 with v73
    monkeypatch.chdir(fine)
    assert [f.severity for f in _findings(config, "extension.soc")] == ["info"]


@pytest.mark.parametrize("soc, expected", [(0, "extension.generic"), (4242, "extension.soc")])
def test_an_extension_file_for_no_soc_or_an_unknown_one(tmp_path, soc, expected):
    for name in ("genie_config.json", "tokenizer.json"):
        shutil.copy(QWEN / name, tmp_path / name)
    ext = json.loads((REAL / "ai-hub-apps" / "ChatApp" / "qualcomm-snapdragon-8-gen3.json").read_text())
    assert (ext["devices"][0]["soc_model"], ext["devices"][0]["dsp_arch"]) == (57, "v75")
    assert [f.severity for f in _findings_with(tmp_path, ext, "extension.soc")] == ["info"]
    ext["devices"][0]["soc_model"] = soc
    found = [f for f in _findings_with(tmp_path, ext, expected) if f.severity != "info"]
    assert len(found) == 1 and f"soc_model {soc}" in found[0].evidence


def _findings_with(folder: Path, ext: dict, check: str):
    (folder / "htp_backend_ext_config.json").write_text(json.dumps(ext))
    return _findings(folder, check)


def test_paths_are_resolved_from_the_folder_genie_is_started_in(tmp_path, monkeypatch):
    """A README runs `genie-t2t-run -c genie_bundle/genie_config.json` from its repository, and the config
    names genie_bundle/...: Genie resolves them against its working folder. doctor looked only beside the
    config and called the extension file missing."""
    bundle = tmp_path / "repo" / "genie_bundle"
    shutil.copytree(QWEN, bundle)
    config = json.loads((bundle / "genie_config.json").read_text())
    engine = config["dialog"]["engine"]
    engine["backend"]["extensions"] = "genie_bundle/htp_backend_ext_config.json"
    config["dialog"]["tokenizer"]["path"] = "genie_bundle/tokenizer.json"
    engine["model"]["binary"]["ctx-bins"] = [
        "genie_bundle/" + p for p in engine["model"]["binary"]["ctx-bins"]
    ]
    (bundle / "genie_config.json").write_text(json.dumps(config))
    for cwd in (tmp_path / "repo", tmp_path):  # from the repository, and from anywhere else
        monkeypatch.chdir(cwd)
        report = doctor.run(given(bundle / "genie_config.json"))
        assert not [f for f in report.findings if f.severity == "error"], report.findings
        (said,) = [f for f in report.findings if f.check == "config.paths" and "assumes Genie" in f.evidence]
        assert f"started in {tmp_path / 'repo'}" in said.evidence
    engine["backend"]["extensions"] = "htp_backend_ext_config.json"  # one path from another folder
    (bundle / "genie_config.json").write_text(json.dumps(config))
    errors = [f for f in doctor.run(given(bundle)).findings if f.severity == "error"]
    assert [f.check for f in errors] == ["config.paths"] and "different start folders" in errors[0].evidence


def test_samples_run_from_their_own_folder_read_files_beside_it_and_nothing_else(tmp_path, monkeypatch):
    """ai-engine-direct-helper's config names genie\\python\\models\\... and qai_libs\\... from samples/:
    doctor run there finds them all; run elsewhere, the extension file outside the config's folder is not
    read (q9diff reads only inside the folders it was given)."""
    samples = _aedh_bundle(tmp_path)
    monkeypatch.chdir(samples)
    report = doctor.run(given(Path("genie/python/Qwen2.0-7B.config.json")))
    assert [f.severity for f in report.findings if f.check == "extension.file"] == ["info"]
    monkeypatch.chdir(tmp_path)
    report = doctor.run(given(samples / "genie" / "python" / "Qwen2.0-7B.config.json"))
    (missing,) = [f for f in report.findings if f.check == "extension.file"]
    assert missing.severity == "error" and "no such file" in missing.evidence
    assert os.path.realpath(Path.cwd()) == os.path.realpath(tmp_path)


def test_a_json_error_names_the_actual_fault(tmp_path):
    """One closing brace too many was called "no comments or trailing commas"."""
    from q9diff.genie.bundle import BundleError

    text = (REAL / "ai-hub-apps" / "llm_on_genie" / "qwen2_5_7b_instruct.json").read_text()
    cases = {
        text.rstrip() + "\n}\n": "a closing brace too many",
        text.replace('"eot-token": 151643', '"eot-token": 151643,'): "a trailing comma before the }",
        "// Qwen\n" + text: "a comment at line 1",
        text[: len(text) // 2]: "ends early",
    }
    for body, said in cases.items():
        path = tmp_path / "genie_config.json"
        path.write_text(body)
        with pytest.raises(BundleError, match=said):
            doctor.run(given(path))
