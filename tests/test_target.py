"""`--target DEVICE`, no reference at hand: the device table, the compiler's measured choices per SoC
(q9diff/read/soc_measured.json, made by scripts/measure_socs.py), and doctor, diff and suggest judging
the qwen-mini builds against the device as AI Hub builds for it, through the real command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import q9diff_cli

from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.compare.target import judge
from q9diff.inputs import resolve
from q9diff.read.binary import ContextBinary
from q9diff.read.tables import (
    SOC_MEASURED_PATH,
    SOCS,
    VTCM_DOCUMENTED,
    UnknownDevice,
    ai_hub_profile,
    find_device,
    measured,
)

ROOT = Path(__file__).resolve().parent.parent
QWEN = ROOT / "fixtures" / "qwen-mini"
LOCAL, REFERENCE = QWEN / "local", QWEN / "reference"
SHARED = ROOT.parent / "shared"
MB = 1024 * 1024


def _ort_qnn() -> bool:
    from q9diff.backends.ort_qnn import OrtQnnBackend

    return OrtQnnBackend().missing() is None


@pytest.mark.parametrize(
    "name, soc_model, arch",
    [
        ("QCS9100", 77, 73),
        ("qcs 9075", 77, 73),
        ("IQ-9100 EVK", 77, 73),
        ("Dragonwing IQ-9075 EVK", 77, 73),
        ("sa8775p", 77, 73),
        ("Snapdragon 8 Gen 2", 43, 73),
        ("qualcomm-snapdragon-8-gen2", 43, 73),
        ("8 gen 3", 57, 75),
        ("Snapdragon 8 Elite", 69, 79),
        ("Snapdragon 8 Elite Gen 5", 87, 81),
        ("Snapdragon X Elite", 60, 73),
        ("SM8650", 57, 75),
        ("sm-8550", 43, 73),
        ("77", 77, 73),
        ("SA8797", 72, 81),
    ],
)
def test_the_names_users_say_resolve_with_their_sources(name: str, soc_model: int, arch: int) -> None:
    d = find_device(name)
    assert (d.soc_model, d.dsp_arch) == (soc_model, arch)
    assert d.sources and all(d.to_json()["sources"].values())


def test_device_vtcm_is_documented_or_unknown_never_the_compilers() -> None:
    assert find_device("QCS9100").vtcm_mb == 8
    assert find_device("SA8797").vtcm_mb == 16  # ExecuTorch's table (Qualcomm's code)
    x_elite = find_device("X Elite")
    assert x_elite.vtcm_mb is None  # QNN_FACTS marks its 8 MB uncertain
    assert x_elite.measured.modelled_vtcm_size == 8 * MB  # what the compiler models, shown, not used


def test_sa8775p_is_the_qcs9100s_chip_and_accepts_ai_hubs_52() -> None:
    d = find_device("SA8775P")
    assert d.accepts(77) and d.accepts(52) and not d.accepts(57)
    assert not find_device("QCS9100").accepts(52)


@pytest.mark.parametrize("name, near", [("QCS9010", "QCS9100"), ("Snapdragon 8 Gen 4", "Snapdragon 8 Gen 3")])
def test_an_unknown_name_is_one_line_with_the_nearest_and_exit_2(name: str, near: str) -> None:
    with pytest.raises(UnknownDevice, match=near):
        find_device(name)
    done = q9diff_cli("doctor", str(LOCAL), "--target", name)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and near in lines[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "name, said",
    [
        ("", "needs a device name"),
        ("0", "soc_model 0 is no device but the generic target"),
        ("9" * 6000, "not a device name"),  # int() of it was a ValueError (more than 4300 digits)
        ("qcs\n9100", "not a device name"),
        ("\u0667\u0667", "digits 0-9"),  # Arabic-Indic 77 read as soc_model 77 before
    ],
)
def test_a_target_that_names_no_device_is_one_line(name: str, said: str) -> None:
    with pytest.raises(UnknownDevice, match=said):
        find_device(name)
    for command in (("doctor", str(LOCAL)), ("diff", str(LOCAL)), ("suggest", str(LOCAL))):
        done = q9diff_cli(*command, "--target", name)
        assert done.returncode == 2 and done.stdout == "" and said in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and len(done.stderr) < 300, done.stderr


def test_a_name_with_two_ids_in_the_sources_is_refused_naming_both() -> None:
    with pytest.raises(UnknownDevice, match=r"35 \(litert\), 93 \(executorch\)"):
        find_device("QCM6490")


# --- what the compiler itself chooses, measured ------------------------------------------------------


def test_the_measured_table_names_its_command_and_qairt_and_covers_the_soc_table() -> None:
    data = json.loads(SOC_MEASURED_PATH.read_text())
    assert data["qairt_version"] == "2.51.0"
    assert any(c.startswith("python scripts/measure_socs.py") for c in data["commands"])
    assert {s for s in SOCS if s} <= {int(k) for k in data["socs"]}
    refused = [k for k, v in data["socs"].items() if "error" in v]
    assert refused and all(data["socs"][k]["error"] for k in refused)  # unknown, with the compiler's word


def test_qcs9100_records_4_mb_unasked_and_any_size_asked_beyond_its_8() -> None:
    m, asked = measured()[77], json.loads(SOC_MEASURED_PATH.read_text())["vtcm_asked"]
    assert (m.soc_type, m.dsp_arch, m.default_vtcm_size) == ("QCS9100", 73, 4 * MB)
    assert {k: v["recorded"]["vtcm_size"] // MB for k, v in asked.items()} == {
        "77/0": 4,
        "77/8": 8,
        "77/16": 16,
        "77/32": 32,
    }


def test_documented_vtcm_equals_the_compilers_own_model_of_each_soc() -> None:
    documented = [s for s in SOCS.values() if any(k in VTCM_DOCUMENTED for k in s.sources)]
    assert len(documented) >= 20
    for s in documented:
        m = measured()[s.soc_model]
        assert m.modelled_vtcm_size == s.vtcm_mb * MB, s
        assert m.dsp_arch == s.dsp_arch, s


def test_52_and_77_build_alike_but_for_the_name_and_the_fixture_agrees_with_the_table() -> None:
    same = json.loads(SOC_MEASURED_PATH.read_text())["same_model"]["52:77"]
    assert same["options_that_differ"] == ["soc_type"] and len(set(same["sizes"])) == 1
    soc77 = ContextBinary.open(ROOT / "fixtures" / "variants" / "soc_77.bin")
    assert soc77.options(0)["soc_type"] == measured()[77].soc_type


def test_ai_hub_profile_is_said_with_its_sources() -> None:
    p = ai_hub_profile()
    sentence = p.sentence(find_device("QCS9100"))
    assert sentence.startswith("AI Hub builds for QCS9100 use soc_model 77 with dsp_arch v73")
    assert "optimization level 3" in sentence and "VTCM 8 MiB" in sentence
    assert "aihub-dumps" in p.sources() and "utility" in p.sources()["aihub-dumps"]
    dumps = SHARED / "real" / "utility"
    if not dumps.is_dir():
        pytest.skip("../shared/real/utility is absent")
    for f in ("whisper_encoder.json", "sd15_vae_decoder.json"):  # the profile's O3 and VTCM, read
        info = json.loads((dumps / f).read_text())["info"]["graphs"][0]["info"]["graphBlobInfo"]["info"]
        assert (info["optimizationLevel"], info["vtcmSize"]) == (3, 8)


# --- doctor, diff and suggest with --target ----------------------------------------------------------


def _doctor(*args: str) -> tuple[int, dict]:
    done = q9diff_cli("doctor", *args, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def _errors(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["severity"] == "error"]


def test_doctor_local_bundle_for_qcs9100_is_an_error_soc_model_0_to_77() -> None:
    code, report = _doctor(str(LOCAL), "--target", "QCS9100")
    assert code == 1 and report["target"]["soc_model"] == 77
    soc = [f for f in _errors(report) if f["check"] == "build.soc_model"]
    assert len(soc) == 1 and "soc_model 0 → 77" in soc[0]["evidence"]
    assert "soc_model = 77" in soc[0]["fix"]
    warned = {f["check"] for f in report["findings"] if f["severity"] == "warning"}
    assert {"build.vtcm", "build.optimization"} <= warned
    assert any(f["check"] == "target.two-places" for f in _errors(report))  # devices[0].soc_model 0
    assert report["profile"]["sentence"].startswith("AI Hub builds for QCS9100 use")


def test_doctor_reference_bundle_passes_qcs9100_and_fails_sm8650() -> None:
    code, report = _doctor(str(REFERENCE), "--target", "QCS9100")
    assert code == 0 and not _errors(report)
    code, report = _doctor(str(REFERENCE), "--target", "SM8650")
    assert code == 1
    soc = [f for f in _errors(report) if f["check"] == "build.soc_model"]
    assert "soc_model 77 → 57" in soc[0]["evidence"]


def test_doctor_takes_one_bin_and_says_what_needs_a_reference() -> None:
    code, report = _doctor(str(REFERENCE / "part_1_of_2.bin"), "--target", "QCS9100")
    assert code == 0
    code, report = _doctor(str(LOCAL / "part_1_of_2.bin"), "--target", "QCS9100")
    assert code == 1 and {f["check"] for f in _errors(report)} == {"build.soc_model"}
    open_ = [f for f in report["findings"] if f["check"] == "quantization.gather"]
    assert "only a reference build shows it" in open_[0]["evidence"]


def test_doctor_a_reference_built_for_another_device_is_a_finding() -> None:
    code, report = _doctor(str(LOCAL), "--reference", str(REFERENCE), "--target", "SM8650")
    found = [f for f in _errors(report) if f["check"] == "target.reference"]
    assert code == 1 and "soc_model 77" in found[0]["evidence"] and "SM8650" in found[0]["evidence"]
    code, report = _doctor(str(LOCAL), "--reference", str(REFERENCE), "--target", "QCS9100")
    assert not [f for f in _errors(report) if f["check"] == "target.reference"]


def test_diff_target_gives_the_reference_diffs_fix_rows() -> None:
    done = q9diff_cli(str(LOCAL), "--target", "QCS9100", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 1 and data["schema"] == "q9diff.target/1"
    assert [(c["name"], c["a"], c["b"]) for c in data["causes"]] == [
        ("soc_model", 0, 77),
        ("vtcm_size", 4 * MB, 8 * MB),
        ("optimization_level", 0, 3),
    ]
    assert data["suggestions"] == set_to_json(diff_sets(resolve(LOCAL), resolve(REFERENCE)))["suggestions"]
    assert data["needs_reference"]
    done = q9diff_cli(str(REFERENCE), "--target", "QCS9100")
    assert done.returncode == 0 and "Every setting QCS9100 determines matches it." in done.stdout


def test_diff_without_reference_or_target_is_one_line() -> None:
    done = q9diff_cli(str(LOCAL))
    assert done.returncode == 2 and "--target DEVICE" in done.stderr and len(done.stderr.splitlines()) == 1


def test_diff_with_a_reference_for_another_device_warns_and_exits_1() -> None:
    done = q9diff_cli(str(REFERENCE), str(REFERENCE), "--target", "SM8650")
    assert done.returncode == 1 and "not for the target SM8650 (soc_model 57)" in done.stderr


def test_target_finds_unpacked_4bit_weights_as_a_reference_would() -> None:
    story = ROOT / "fixtures" / "story"
    part = ContextBinary.open(story / "soc77" / "part_1_of_2.bin")
    found = judge(part, find_device("QCS9100"))
    assert [(c.name, c.a, c.b) for c in found.causes] == [
        ("optimization_level", 0, 3),
        ("weights_packing", False, True),
    ]
    against_ref = set_to_json(diff_sets(resolve(story / "soc77"), resolve(story / "reference")))
    own = against_ref["parts"][0]["suggestions"]  # this part's rows: its qairt lines name its graphs
    assert found.suggestions == [s for s in own if s in found.suggestions]
    assert {s["setting"] for s in against_ref["suggestions"]} == {s["setting"] for s in found.suggestions}


@pytest.mark.skipif(not _ort_qnn(), reason="onnxruntime-qnn (the embedded compiler) is not installed")
def test_more_vtcm_than_the_device_has_is_an_error(tmp_path: Path) -> None:
    from q9diff.backends.ort_qnn import OrtQnnBackend
    from q9diff.recipes import recipe as rcp

    model = ROOT / "fixtures" / "variants" / "models" / "mlp.onnx"
    part = rcp.Part("big", "big.bin", (rcp.GraphSource("mlp", str(model)),))
    settings = rcp.Settings(soc_model=77, dsp_arch="v73", vtcm_mb=16, optimization_level=3)
    OrtQnnBackend().compile(rcp.Recipe(backend="ort-qnn", parts=(part,), settings=settings), tmp_path)
    found = judge(ContextBinary.open(tmp_path / "big.bin"), find_device("QCS9100"))
    assert found.errors and "16 MiB asked" in found.errors[0]
    assert [(c.name, c.a, c.b) for c in found.causes] == [("vtcm_size", 16 * MB, 8 * MB)]
    code, report = _doctor(str(tmp_path / "big.bin"), "--target", "QCS9100")
    assert code == 1 and [f["check"] for f in _errors(report)] == ["target.vtcm-limit"]


@pytest.mark.skipif(not _ort_qnn(), reason="onnxruntime-qnn (the embedded compiler) is not installed")
def test_suggest_target_sa8775p_rebuilds_the_reference_byte_for_byte(tmp_path: Path) -> None:
    qm = tmp_path / "qm"
    shutil.copytree(QWEN, qm)
    done = q9diff_cli(
        "suggest", str(qm / "local"), "--target", "SA8775P",
        "--apply", str(qm / "local" / "recipe.json"),
        "--apply", str(qm / "local" / "htp_backend_ext_config.json"),
        "--recompile", "--out", str(qm / "new"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Gap closed" in done.stdout
    for name in ("part_1_of_2.bin", "part_2_of_2.bin"):
        assert (qm / "new" / name).read_bytes() == (REFERENCE / name).read_bytes()
    fixed = json.loads((qm / "local" / "htp_backend_ext_config.json").read_text())
    assert fixed == json.loads((REFERENCE / "htp_backend_ext_config.json").read_text())
    code, report = _doctor(str(qm / "new"), "--target", "QCS9100")
    assert code == 0, _errors(report)


def test_a_target_result_is_saved_drawn_and_shown_again(tmp_path) -> None:
    """--target alone writes --html and --markdown too, and `report` reads its saved --json back."""
    live = q9diff_cli(str(LOCAL), "--target", "QCS9100")
    saved = q9diff_cli(str(LOCAL), "--target", "QCS9100", "--json")
    assert live.returncode == saved.returncode == 1
    (tmp_path / "t.json").write_text(saved.stdout)
    again = q9diff_cli("report", str(tmp_path / "t.json"), "--html", str(tmp_path / "t.html"))
    assert again.returncode == 1 and again.stdout.startswith(live.stdout), again.stderr
    page = (tmp_path / "t.html").read_text()
    assert "<title>q9diff --target QCS9100: differs</title>" in page and "soc_model 0 → 77" in page
    direct = q9diff_cli(str(LOCAL), "--target", "QCS9100", "--html", str(tmp_path / "direct.html"))
    assert direct.returncode == 1 and (tmp_path / "direct.html").read_text() == page
    md = q9diff_cli("report", str(tmp_path / "t.json"), "--markdown", "-")
    assert md.returncode == 1 and "## q9diff --target QCS9100" in md.stdout
    assert "graphs[0].vtcm_mb = 8" in md.stdout  # the fix in the toolchain beside LOCAL, a block to paste
    ok = q9diff_cli(str(REFERENCE), "--target", "QCS9100", "--json")
    (tmp_path / "ok.json").write_text(ok.stdout)
    assert q9diff_cli("report", str(tmp_path / "ok.json")).returncode == 0


def test_a_target_beside_a_reference_is_kept_in_the_saved_result(tmp_path) -> None:
    """`diff REF REF --target SM8650` exits 1 (the reference is a build for another device): its saved
    --json says so, and `report` of it exits 1 with the same warnings."""
    live = q9diff_cli(str(REFERENCE), str(REFERENCE), "--target", "SM8650", "--json")
    data = json.loads(live.stdout)
    assert live.returncode == 1 and data["identical"] and data["target"]["name"] == "SM8650"
    assert len(data["target"]["reference_findings"]) == 2 and "not for the target SM8650" in live.stderr
    (tmp_path / "m.json").write_text(live.stdout)
    again = q9diff_cli("report", str(tmp_path / "m.json"))
    assert again.returncode == 1 and again.stderr.count("not for the target SM8650") == 2
