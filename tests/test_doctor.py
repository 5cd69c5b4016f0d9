"""`q9diff doctor` on copies of the qwen-mini Genie bundles with one defect planted each, on the local
bundle against the reference (the story of docs/bundle.md), and on real Genie configs from ../shared/real."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from q9diff.cli import app
from q9diff.doctor import run as doctor
from q9diff.doctor.result import HYPOTHESES
from q9diff.doctor.run import RULES
from q9diff.fix import extconfig
from q9diff.genie import parser as genieconfig
from q9diff.inputs import given
from q9diff.read.tables import soc_name

ROOT = Path(__file__).resolve().parent.parent
QWEN = ROOT / "fixtures" / "qwen-mini"
REFERENCE, LOCAL = QWEN / "reference", QWEN / "local"
REAL = ROOT.parent / "shared" / "real" / "configs"
BUNDLE_FILES = ("genie_config.json", "htp_backend_ext_config.json", "tokenizer.json")


def _qualcomm_available() -> bool:
    try:
        genieconfig.library_dir()
        extconfig.library_dir()
    except (genieconfig.Unavailable, extconfig.Unavailable):
        return False
    return True


QUALCOMM = _qualcomm_available()


def copy_bundle(src: Path, dst: Path) -> Path:
    """The Genie bundle of src (config, extension file, tokenizer, genie/*.bin), nothing else."""
    (dst / "genie").mkdir(parents=True)
    for name in BUNDLE_FILES:
        shutil.copy(src / name, dst / name)
    for b in (src / "genie").glob("*.bin"):
        shutil.copy(b, dst / "genie" / b.name)
    return dst


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def problems(report, severity: str = "error") -> list:
    return [f for f in report.findings if f.severity == severity]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return copy_bundle(REFERENCE, tmp_path / "bundle")


def _swap_first_and_third(doc: dict) -> None:
    bins = doc["dialog"]["engine"]["model"]["binary"]["ctx-bins"]
    bins[0], bins[2] = bins[2], bins[0]


def _named_splits() -> bool:
    """Whether the fixture's graphs carry AI Hub's _i_of_n names (then Genie ignores ctx-bins order)."""
    report = doctor.run(given(REFERENCE))
    return all(sg.split for sg in report.bundle.graphs())


DEFECTS = {
    # name: (file, change, the one error check, words its evidence must hold)
    "runtime soc_model": (
        "htp_backend_ext_config.json",
        lambda d: d["devices"][0].__setitem__("soc_model", 43),
        "two-places.soc_model",
        ["soc_model 43", "compiled for soc_model 77"],
    ),
    "n-vocab": (
        "genie_config.json",
        lambda d: d["dialog"]["context"].__setitem__("n-vocab", 4096),
        "vocab.logits",
        ["n-vocab 4096", "2048 columns"],
    ),
    "context size": (
        "genie_config.json",
        lambda d: d["dialog"]["context"].__setitem__("size", 256),
        "context.size",
        ["context.size 256", "is 128"],
    ),
    "kv-dim": (
        "genie_config.json",
        lambda d: d["dialog"]["engine"]["backend"]["QnnHtp"].__setitem__("kv-dim", 64),
        "context.kv",
        ["kv-dim 64", "[32]"],
    ),
    "runtime dsp_arch": (
        "htp_backend_ext_config.json",
        lambda d: d["devices"][0].__setitem__("dsp_arch", "v75"),
        "two-places.dsp_arch",
        ["dsp_arch v75 at run time", "the binaries are v73"],
    ),
    "pos-id-dim": (
        "genie_config.json",
        lambda d: d["dialog"]["engine"]["backend"]["QnnHtp"].__setitem__("pos-id-dim", 32),
        "context.pos-id",
        ["pos-id-dim 32", "[16]"],
    ),
    "bos outside the vocabulary": (
        "genie_config.json",
        lambda d: d["dialog"]["context"].__setitem__("bos-token", 5000),
        "vocab.special",
        ["bos-token 5000", "n-vocab 2048", "2048 ids"],
    ),
}


def test_clean_reference_bundle_has_no_error_alone_and_against_itself(bundle: Path) -> None:
    alone = doctor.run(given(bundle))
    assert problems(alone) == [] and problems(alone, "warning") == []
    assert alone.exit_code == 0
    against = doctor.run(given(bundle), given(REFERENCE))
    assert problems(against) == [] and problems(against, "warning") == []
    hyps = against.hypotheses()
    assert {n for n, h in hyps.items() if h["status"] == "ruled out"} == set(HYPOTHESES)


@pytest.mark.parametrize("name", list(DEFECTS))
def test_one_planted_config_defect_is_exactly_one_error(bundle: Path, name: str) -> None:
    file, change, check, words = DEFECTS[name]
    edit(bundle / file, change)
    errors = problems(doctor.run(given(bundle)))
    assert [f.check for f in errors] == [check], errors
    assert all(w in errors[0].evidence for w in words), errors[0].evidence
    assert errors[0].fix
    # against the untouched reference the same single error: the binaries are the reference's
    assert [f.check for f in problems(doctor.run(given(bundle), given(REFERENCE)))] == [check]


def test_ctx_bins_out_of_order(bundle: Path) -> None:
    edit(bundle / "genie_config.json", _swap_first_and_third)
    report = doctor.run(given(bundle))
    if _named_splits():  # Genie runs AI Hub-named splits by name: harmless, but said
        assert problems(report) == []
        assert [f.check for f in problems(report, "warning")] == ["ctx-bins.order-named"]
    else:
        errors = problems(report)
        assert [f.check for f in errors] == ["ctx-bins.order"], errors
        assert (
            "part_1_of_2_prompt.bin" in errors[0].evidence and "part_2_of_2_prompt.bin" in errors[0].evidence
        )
        assert "as strings" in errors[0].evidence


def test_missing_ctx_bin_is_one_error_and_no_cascade(bundle: Path) -> None:
    (bundle / "genie" / "part_2_of_2_token.bin").unlink()
    report = doctor.run(given(bundle), given(REFERENCE))
    errors = problems(report)
    assert [f.check for f in errors] == ["ctx-bins.exist"], errors
    assert "genie/part_2_of_2_token.bin" in errors[0].evidence
    assert errors[0].where.endswith("ctx-bins[3]")
    skipped = {f.check for f in report.findings if f.evidence.startswith("not checked: 1 of 4 ctx-bins")}
    assert {"ctx-bins.graphs", "vocab.logits", "context.size"} <= skipped


def test_part_from_another_qairt_build_by_its_build_label(bundle: Path) -> None:
    """The same part with every copy of its build label saying QAIRT 2.50: only the mix is wrong."""
    part = bundle / "genie" / "part_2_of_2_token.bin"
    data = part.read_bytes()
    assert data.count(b"v2.51.0.260929181845") == 3
    part.write_bytes(data.replace(b"v2.51.0.260929181845", b"v2.50.0.260929181845"))
    errors = problems(doctor.run(given(bundle)))
    assert [f.check for f in errors] == ["qairt.mix"], errors
    assert "part_2_of_2_token.bin: v2.50.0.260929181845" in errors[0].evidence
    assert "v2.51.0.260929181845" in errors[0].fix
    against = doctor.run(given(bundle), given(REFERENCE))
    assert {f.check for f in problems(against)} == {"qairt.mix"}
    assert [f.check for f in problems(against, "warning")] == ["qairt.reference"]


def test_part_from_another_qairt_build_swapped_in(bundle: Path) -> None:
    """fixtures/variants/qairt_2.50.bin renamed as a part: another build, and another model altogether."""
    shutil.copy(ROOT / "fixtures" / "variants" / "qairt_2.50.bin", bundle / "genie" / "part_2_of_2_token.bin")
    errors = problems(doctor.run(given(bundle)))
    mix = [f for f in errors if f.check == "qairt.mix"]
    assert len(mix) == 1 and "part_2_of_2_token.bin: v2.50.40" in mix[0].evidence
    # what else is wrong is that part not fitting Genie's chain, and said so
    assert {f.check for f in errors} == {"qairt.mix", "ctx-bins.graphs"}


def test_local_bundle_against_reference_names_soc_model_vtcm_and_optimization() -> None:
    report = doctor.run(given(LOCAL), given(REFERENCE))
    assert report.bundle.config_path == LOCAL / "genie_config.json"
    assert [f.check for f in problems(report)] == ["build.soc_model"]
    soc = problems(report)[0]
    assert soc.hypothesis == 9 and "soc_model 0" in soc.evidence
    assert (
        f"soc_model 77 (the reference's, {soc_name(77)})" in soc.fix and "devices[0].soc_model 0" in soc.fix
    )
    warnings = {f.check: f for f in problems(report, "warning")}
    assert set(warnings) == {"build.vtcm", "build.optimization"}
    assert warnings["build.vtcm"].evidence.startswith("vtcm_size 4 MiB; the reference 8 MiB")
    # the optimization level in diff's and inspect's one wording (q9diff.units.opt_level)
    assert warnings["build.optimization"].evidence.startswith(
        "optimization_level 0 (not set; the compiler ran O=2); the reference 3"
    ), warnings["build.optimization"].evidence
    hyps = report.hypotheses()
    assert {n for n, h in hyps.items() if h["status"] == "implicated"} == {6, 9}
    assert {n for n, h in hyps.items() if h["status"] == "ruled out"} == {1, 2, 3, 4, 5, 7, 8}
    # one fix for the change found in all 4 parts, in the bundle's own toolchain (its extension config),
    # short enough never to wrap (issue 38); the other forms are named, behind suggest
    fix = warnings["build.vtcm"].fix
    assert fix.startswith("recompile all 4 parts with vtcm_size = 8 MiB (htp_backend_ext_config.json:")
    assert "graphs[0].vtcm_mb = 8" in fix and "q9diff suggest shows qairt" in fix


def test_local_bundle_alone_still_finds_the_generic_target() -> None:
    report = doctor.run(given(LOCAL))
    assert [f.check for f in problems(report)] == ["build.soc_model"]
    assert "name the device with --target DEVICE" in problems(report)[0].fix  # issue 45: the way to say it


def test_paths_outside_the_bundle_are_refused_and_named(bundle: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.bin"
    shutil.copy(REFERENCE / "genie" / "part_1_of_2_prompt.bin", outside)
    edit(
        bundle / "genie_config.json",
        lambda d: d["dialog"]["engine"]["model"]["binary"]["ctx-bins"].__setitem__(0, "../elsewhere.bin"),
    )
    report = doctor.run(given(bundle))
    refused = [f for f in problems(report) if f.check == "config.paths"]
    assert (
        len(refused) == 1 and "../elsewhere.bin" in refused[0].evidence and "outside" in refused[0].evidence
    )
    assert report.bundle.parts[0].binary is None  # never opened


@pytest.mark.skipif(not QUALCOMM, reason="onnxruntime-qnn with libGenie is not installed")
def test_qualcomm_parsers_judge_the_config_and_the_extension_file(bundle: Path) -> None:
    edit(
        bundle / "genie_config.json", lambda d: d["dialog"]["engine"]["backend"]["QnnHtp"].__setitem__("x", 1)
    )
    edit(bundle / "htp_backend_ext_config.json", lambda d: d["graphs"][0].pop("graph_names"))
    errors = problems(doctor.run(given(bundle)))
    genie = [f for f in errors if f.check == "config.genie-parser"]
    assert len(genie) == 1 and "JSON_SCHEMA" in genie[0].evidence and "'x'" in genie[0].evidence
    ext = [f for f in errors if f.check == "extension.qualcomm"]
    assert ext and all("libQnnHtpNetRunExtensions.so" in f.evidence for f in ext)
    assert any("graph_names" in f.evidence for f in ext)


def test_rules_are_data() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert all(
        r.severity in doctor.SEVERITIES and (r.hypothesis is None or r.hypothesis in HYPOTHESES)
        for r in RULES
    )
    assert {r.hypothesis for r in RULES} - {None} == set(HYPOTHESES)


# --- the command line ----------------------------------------------------------------------------------


def test_cli_exit_codes_json_and_html(bundle: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    clean = runner.invoke(app, ["doctor", str(bundle), "--json"])
    assert clean.exit_code == 0, clean.output
    data = json.loads(clean.output)
    assert data["schema"] == "q9diff.doctor/1" and data["reference"] is None
    assert data["bundle"] == str(bundle / "genie_config.json")
    assert all(
        set(f) == {"check", "severity", "hypothesis", "where", "evidence", "fix"} for f in data["findings"]
    )
    html = tmp_path / "doctor.html"
    local = runner.invoke(app, ["doctor", str(LOCAL), "--reference", str(REFERENCE), "--html", str(html)])
    assert local.exit_code == 1
    # issue 38: the errors come before the nine hypotheses; issue 45: the verdict before both
    assert local.output.startswith("Not ready: 1 error, 2 warnings\n")
    assert local.output.index("Errors") < local.output.index("Hypotheses")
    assert f"wrote the HTML report: {html}" in local.output.replace("\n", "")
    page = html.read_text()
    assert "build.soc_model" in page and "<script" not in page
    bad = runner.invoke(app, ["doctor", str(QWEN / "local" / "tokenizer.json")])
    assert bad.exit_code == 2 and "tokenizer.json" in bad.output and "Traceback" not in bad.output


def test_cli_prints_file_strings_as_text_not_markup(bundle: Path) -> None:
    name = "genie/[bold red]x[/].bin"
    edit(
        bundle / "genie_config.json",
        lambda d: d["dialog"]["engine"]["model"]["binary"]["ctx-bins"].append(name),
    )
    result = CliRunner().invoke(app, ["doctor", str(bundle)])
    assert result.exit_code == 1
    assert "[bold red]x[/].bin" in result.output


def test_cli_not_json_config_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "genie_config.json").write_text('{"dialog": ')
    result = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert result.exit_code == 2
    assert "genie_config.json: not JSON" in result.output and len(result.output.strip().splitlines()) == 1


# --- real Genie configs --------------------------------------------------------------------------------


@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent: no real third-party configs here")
def test_ai_hub_apps_llm_on_genie_config_reads_with_clear_findings(tmp_path: Path) -> None:
    shutil.copytree(REAL / "ai-hub-apps" / "llm_on_genie", tmp_path / "b")
    report = doctor.run(given(tmp_path / "b" / "qwen2_5_7b_instruct.json"))
    errors = {f.check: f for f in problems(report)}
    assert "6 of 6 ctx-bins not in the bundle" in errors["ctx-bins.exist"].evidence
    ext = errors["extension.file"].evidence
    assert "htp_backend_ext_config.json.template" in ext and "<TODO>" in ext
    assert "bos-token 151644" in " ".join(f.evidence for f in problems(report) if f.check == "vocab.special")
    assert "not checked: 6 of 6 ctx-bins not read" in {f.evidence for f in report.findings}


@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent: no real third-party configs here")
def test_aedh_genie_config_with_windows_paths_reads_with_clear_findings(tmp_path: Path) -> None:
    shutil.copytree(REAL / "aedh" / "genie", tmp_path / "b")
    result = CliRunner().invoke(app, ["doctor", str(tmp_path / "b" / "Qwen2.0-7B.config.json"), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    errors = {f["check"]: f for f in data["findings"] if f["severity"] == "error"}
    assert set(errors) == {"ctx-bins.exist", "extension.file"}
    assert "5 of 5 ctx-bins" in errors["ctx-bins.exist"]["evidence"]
    assert "genie/python/models/Qwen2.0-7B/model-1.bin" in errors["ctx-bins.exist"]["evidence"]
    assert "qai_libs\\htp_backend_ext_config.json" in errors["extension.file"]["evidence"]


# --- hostile and damaged bundles -----------------------------------------------------------------------


@pytest.mark.parametrize("content", ["garbage", "truncated"])
def test_a_part_that_is_not_a_context_binary_is_one_error(bundle: Path, content: str) -> None:
    part = bundle / "genie" / "part_2_of_2_token.bin"
    part.write_bytes(b"not a context binary\n" * 50 if content == "garbage" else part.read_bytes()[:5000])
    report = doctor.run(given(bundle))
    errors = problems(report)
    assert [f.check for f in errors] == ["ctx-bins.binary"], errors
    assert "part_2_of_2_token.bin" in errors[0].evidence


def test_a_symlink_leading_outside_the_bundle_is_refused(bundle: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    shutil.copy(bundle / "genie" / "part_1_of_2_prompt.bin", outside)
    link = bundle / "genie" / "part_1_of_2_prompt.bin"
    link.unlink()
    link.symlink_to(outside)
    errors = problems(doctor.run(given(bundle)))
    assert [f.check for f in errors] == ["config.paths"]
    assert str(outside) in errors[0].evidence


def test_config_values_of_the_wrong_type_are_findings_not_crashes(bundle: Path) -> None:
    def damage(d: dict) -> None:
        d["dialog"]["context"] = {"size": "big", "n-vocab": True, "bos-token": [1, "x"]}
        d["dialog"]["engine"]["model"]["binary"]["ctx-bins"].append(7)
        d["dialog"]["engine"]["backend"]["QnnHtp"] = "fast"

    edit(bundle / "genie_config.json", damage)
    result = CliRunner().invoke(app, ["doctor", str(bundle), "--json"])
    assert result.exit_code == 1, result.output
    checks = {f["check"] for f in json.loads(result.output)["findings"] if f["severity"] == "error"}
    assert {"config.paths", "vocab.special"} <= checks
    assert "q9diff could not run this check" not in result.output


def test_runtime_sizing_spill_fill_and_mmap_budget(bundle: Path) -> None:
    """A ctx-bin with a 7.9 MB spill/fill buffer (fixtures/variants/spill_fill.bin) and one of 1.1 MB."""
    shutil.copy(ROOT / "fixtures" / "variants" / "spill_fill.bin", bundle / "spill.bin")
    shutil.copy(LOCAL / "part_1_of_2.bin", bundle / "big.bin")

    def sizing(d: dict) -> None:
        d["dialog"]["engine"]["model"]["binary"]["ctx-bins"] = ["spill.bin", "big.bin"]
        htp = d["dialog"]["engine"]["backend"]["QnnHtp"]
        htp.update({"spill-fill-bufsize": 4096, "use-mmap": True, "mmap-budget": 1})

    edit(bundle / "genie_config.json", sizing)
    report = doctor.run(given(bundle))
    spill = [f for f in problems(report) if f.check == "runtime.spill-fill"]
    assert len(spill) == 1 and "4096 bytes" in spill[0].evidence and "7929856" in spill[0].evidence
    assert spill[0].fix == "set it to 7929856"
    mmap = [f for f in problems(report, "warning") if f.check == "runtime.mmap"]
    assert len(mmap) == 1 and "mmap-budget 1 MiB" in mmap[0].evidence and "big.bin" in mmap[0].evidence
    assert "big.bin alone is 1.1 MiB" in mmap[0].evidence and "at least 2 (MiB)" in mmap[0].fix


WARNINGS = {
    "graph settings the binaries were not built with": (
        lambda d: d["graphs"][0].__setitem__("vtcm_mb", 4),
        "two-places.graphs",
        ["vtcm_mb 4", "4 named graphs were compiled with [8]"],
    ),
    "weight sharing no ctx-bin has": (
        lambda d: d.__setitem__("context", {"weight_sharing_enabled": True}),
        "two-places.weight-sharing",
        ["no ctx-bin shares weights"],
    ),
}


@pytest.mark.parametrize("name", list(WARNINGS))
def test_extension_file_disagreements_that_are_warnings(bundle: Path, name: str) -> None:
    change, check, words = WARNINGS[name]
    edit(bundle / "htp_backend_ext_config.json", change)
    report = doctor.run(given(bundle))
    assert problems(report) == []
    warnings = problems(report, "warning")
    assert [f.check for f in warnings] == [check]
    assert all(w in warnings[0].evidence for w in words), warnings[0].evidence


def test_float_fallback_against_a_quantized_reference(tmp_path: Path) -> None:
    """fixtures/variants: the same MLP compiled from the float model (fp16 kernels) and from its w8a16 QDQ
    model, each as a folder of bare ctx-bins (no Genie config)."""
    for name, src in (("candidate", "precision_fp16.bin"), ("reference", "precision_w8a16.bin")):
        (tmp_path / name).mkdir()
        shutil.copy(ROOT / "fixtures" / "variants" / src, tmp_path / name / "model.bin")
    report = doctor.run(given(tmp_path / "candidate"), given(tmp_path / "reference"))
    assert "no genie_config.json" in report.bundle.notes[0]
    fallback = [f for f in problems(report) if f.check == "quantization.float-fallback"]
    assert len(fallback) == 1 and fallback[0].hypothesis == 5
    assert fallback[0].evidence.startswith(
        "computes in float16 where the reference does not: fp16 (weights float16"
    )
    assert "the reference w8a16 (weights int8, activations uint16" in fallback[0].evidence
    hyps = report.hypotheses()
    assert hyps[5]["status"] == "implicated"
    assert hyps[7]["status"] == "ruled out"  # both take and give FLOAT_32: no --quantize_io on either side


def _io_model(path: Path, quantized_io: bool) -> None:
    """x [1, 16] -> MatMul with uint8 weights -> y, in QDQ form; with quantized_io the graph takes and
    gives uint8 (what --quantize_io leaves), else float with Quantize/Dequantize inside."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(np.random.default_rng(0).integers(0, 255, (16, 16)).astype(np.uint8), "W"),
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "z"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
    ]
    io_type = TensorProto.UINT8 if quantized_io else TensorProto.FLOAT
    nodes = [helper.make_node("DequantizeLinear", ["W", "ws", "z"], ["Wf"])]
    if quantized_io:
        nodes.append(helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]))
    else:
        nodes.append(helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]))
        nodes.append(helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]))
    nodes.append(helper.make_node("MatMul", ["xf", "Wf"], ["mf"]))
    nodes.append(helper.make_node("QuantizeLinear", ["mf", "s", "z"], ["y" if quantized_io else "yq"]))
    if not quantized_io:
        nodes.append(helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", io_type, [1, 16])],
        [helper.make_tensor_value_info("y", io_type, [1, 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def test_io_quantized_in_the_reference_and_float_here_is_hypothesis_7(tmp_path: Path) -> None:
    """Both binaries compiled here by Qualcomm's compiler in onnxruntime-qnn (soc_model 77, v73)."""
    from q9diff.backends.base import BackendUnavailable
    from q9diff.backends.registry import compile_backend
    from q9diff.recipes.recipe import Recipe

    backend = compile_backend("ort-qnn")
    if backend.missing():
        pytest.skip(backend.missing())
    for name, quantized in (("candidate", False), ("reference", True)):
        (tmp_path / name).mkdir()
        _io_model(tmp_path / name / "m.onnx", quantized)
        recipe = Recipe.from_dict(
            {
                "schema": "q9diff.recipe/1",
                "backend": "ort-qnn",
                "settings": {"soc_model": 77, "dsp_arch": "v73"},
                "parts": [{"name": "m", "output": "m.bin", "graphs": [{"name": "g", "model": "m.onnx"}]}],
            },
            name,
            path=tmp_path / name / "recipe.json",
        )
        try:
            backend.compile(recipe, tmp_path / name / "out")
        except BackendUnavailable as exc:
            pytest.skip(str(exc))
        (tmp_path / name / "out" / "m.bin").rename(tmp_path / name / "m.bin")
        shutil.rmtree(tmp_path / name / "out")
    report = doctor.run(given(tmp_path / "candidate"), given(tmp_path / "reference"))
    io = [f for f in problems(report) if f.check == "quantization.io"]
    assert [f.evidence.split(":")[0] for f in io] == ["x", "y"]
    assert all("FLOAT_32; the reference UFIXED_POINT_8 scale 0.02" in f.evidence for f in io)
    assert all("float where the reference is quantized" in f.evidence for f in io)
    assert report.hypotheses()[7]["status"] == "implicated"
    reverse = doctor.run(given(tmp_path / "reference"), given(tmp_path / "candidate"))
    assert all(
        "quantized where the reference is float" in f.evidence
        for f in problems(reverse)
        if f.check == "quantization.io"
    )


def test_a_part_left_out_of_ctx_bins_breaks_the_chain_and_the_split(bundle: Path) -> None:
    edit(bundle / "genie_config.json", lambda d: d["dialog"]["engine"]["model"]["binary"]["ctx-bins"].pop())
    report = doctor.run(given(bundle), given(REFERENCE))
    errors = problems(report)
    assert {f.check for f in errors} == {"ctx-bins.graphs", "split"}, errors
    chain = " ".join(f.evidence for f in errors if f.check == "ctx-bins.graphs")
    assert "produces no logits" in chain and "1 split(s) here; the other AR/CL groups have [2]" in chain
    split = " ".join(f.evidence for f in errors if f.check == "split")
    assert "3 ctx-bins" in split and "the reference has 4 ctx-bins" in split
    assert report.hypotheses()[1]["status"] == "implicated"


def test_a_config_with_another_name_is_found(bundle: Path) -> None:
    # ai-engine-direct-helper names its Genie configs config.json, AI Hub's tutorial <model>.json.
    expected = doctor.run(given(bundle)).to_json()
    (bundle / "genie_config.json").rename(bundle / "qwen-mini.json")
    found = doctor.run(given(bundle))
    assert found.bundle.config_path.name == "qwen-mini.json"
    assert [(f["check"], f["severity"]) for f in found.to_json()["findings"]] == [
        (f["check"], f["severity"]) for f in expected["findings"]
    ]
    shutil.copy(bundle / "qwen-mini.json", bundle / "other.json")
    result = CliRunner().invoke(app, ["doctor", str(bundle)])
    assert result.exit_code == 2
    assert "several Genie configs (other.json, qwen-mini.json): give the one to check" in result.output


def test_a_folder_of_binaries_alone_gets_no_config_fix(tmp_path: Path) -> None:
    # Without a config there is nothing to set n-vocab or context.size in: those checks are not run.
    for b in (LOCAL / "genie").glob("*.bin"):
        shutil.copy(b, tmp_path / b.name)
    report = doctor.run(given(tmp_path))
    assert report.bundle.config is None
    assert not any(f.fix and "dialog." in f.fix for f in report.findings)
    notes = {f.check: f.evidence for f in report.findings if f.severity == "info"}
    for check in ("vocab.logits", "context.size", "extension.file", "runtime.spill-fill", "vocab.tokenizer"):
        assert notes[check] == "not checked: no Genie config (only the *.bin files were read)", check
    assert [f.check for f in problems(report)] == ["build.soc_model"]  # what the binaries alone show
