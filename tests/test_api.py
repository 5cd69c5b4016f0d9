"""The Python API (issue 39, item 1) as docs/python.md shows it: a notebook cell and a build script run as
written; every result's JSON is what the command line's --json prints, its HTML the page --html writes;
every error is a Q9Error, never SystemExit."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, q9diff_cli
from test_hostile_bundle import dispatch_tflite, epcontext_model

import q9diff

LOCAL, REFERENCE = "fixtures/qwen-mini/local", "fixtures/qwen-mini/reference"
VARIANTS = ROOT / "fixtures" / "variants"
DOCS = ROOT / "docs" / "python.md"


@pytest.fixture(autouse=True)
def at_the_root(monkeypatch):
    """The documentation's paths are relative to a clone's root, where its examples run."""
    monkeypatch.chdir(ROOT)


def _cli_json(*args: str) -> dict:
    done = q9diff_cli(*args, "--json", cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_example_in_the_documentation_runs_as_written():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 4
    runs = [
        subprocess.run([sys.executable, "-c", b], capture_output=True, text=True, cwd=ROOT) for b in blocks
    ]
    notebook, build_script, functions, errors = runs
    for done in (notebook, functions, errors):
        assert done.returncode == 0, done.stderr
    # the build script gates on doctor: the local bundle is a soc_model 0 build, two errors for QCS9100
    assert build_script.returncode == 1, build_script.stderr
    assert build_script.stdout.startswith("build.soc_model: ")
    said = errors.stdout.splitlines()
    assert [line.split(":", 1)[0] for line in said] == ["InputError", "UnknownDevice", "UnknownRuntime"]


def test_a_notebook_cell_shows_the_report_the_command_writes(tmp_path):
    result = q9diff.diff(LOCAL, REFERENCE)
    html = result._repr_html_()
    data = result.to_json()
    page = tmp_path / "set.html"
    assert q9diff_cli(LOCAL, REFERENCE, "--html", str(page), cwd=ROOT).returncode == 1
    assert html == page.read_text() and html.startswith("<!doctype html>")
    assert data == _cli_json(LOCAL, REFERENCE)
    assert data["schema"] == result.schema == "q9diff.setdiff/1" and not result.identical
    assert result.to_markdown() == q9diff_cli(LOCAL, REFERENCE, "--markdown", "-", cwd=ROOT).stdout


def test_a_pair_its_json_and_its_terminal_view_are_the_commands(capsys):
    a, b = "fixtures/variants/precision_fp16.bin", "fixtures/variants/precision_w8a16.bin"
    result = q9diff.diff(a, b)
    assert result.to_json() == _cli_json(a, b)
    assert result.schema == "q9diff.diff/1" and result.causes[0]["name"] == "quantization"
    result.show()
    assert capsys.readouterr().out == q9diff_cli(a, b, cwd=ROOT).stdout


def test_a_file_against_a_set_is_compared_with_its_counterpart_and_says_so():
    result = q9diff.diff(f"{LOCAL}/part_1_of_2.bin", REFERENCE)
    assert result.reference == Path(REFERENCE) / "part_1_of_2.bin"
    assert result.notes == (f"comparing {LOCAL}/part_1_of_2.bin with its counterpart {result.reference}",)
    swapped = q9diff.diff("fixtures/variants/soc_77.bin", "fixtures/variants/soc_0.bin")
    looks = swapped.to_json()["reference_looks_wrong"]
    assert looks.startswith("the reference targets a generic SoC (soc_model 0)")
    assert swapped.suggestions == [] and swapped.notes == ()  # no fix that would break the good build


def test_diff_with_a_target_and_a_runtime_is_the_commands_json():
    result = q9diff.diff(LOCAL, REFERENCE, target="QCS9100", runtime="2.48")
    assert result.to_json() == _cli_json(LOCAL, REFERENCE, "--target", "QCS9100", "--runtime", "2.48")
    assert result.load is not None and result.load.verdict == "will not load"


def test_target_and_will_load_are_the_commands_json():
    judged = q9diff.target(LOCAL, "QCS9100", runtime="2.48")
    data = _cli_json(LOCAL, "--target", "QCS9100", "--runtime", "2.48")
    assert judged.to_json() == data and data["schema"] == "q9diff.target/1"
    assert not judged.matches
    load = q9diff.will_load(LOCAL, runtime="2.48", target="QCS9100")
    assert load.to_json() == data["load"] and not load.loads
    assert "Will it load on" in load.to_html() and load.to_markdown().startswith("## q9diff: will not load")
    assert q9diff.target(LOCAL, "QCS9100").to_json() == _cli_json(LOCAL, "--target", "QCS9100")


def test_a_build_script_gates_on_doctor_as_the_command_exits():
    report = q9diff.doctor(LOCAL, target="QCS9100")
    done = q9diff_cli("doctor", LOCAL, "--target", "QCS9100", cwd=ROOT)
    assert (1 if report.errors else 0) == done.returncode == 1
    assert [f.check for f in report.errors] == ["build.soc_model", "target.two-places"]
    against = q9diff.doctor(LOCAL, REFERENCE, target="QCS9100", runtime="2.48")
    assert against.to_json() == _cli_json("doctor", LOCAL, "--reference", REFERENCE, "--target", "QCS9100",
                                           "--runtime", "2.48")  # fmt: skip
    assert against.to_json()["schema"] == "q9diff.doctor/1"
    assert against.hypotheses()[9]["status"] == "implicated"  # soc_model 0
    assert ROOT / LOCAL / "tokenizer.json" in set(against.files)  # what --html must not overwrite


def test_open_names_every_kind_of_input(tmp_path):
    one = q9diff.open("fixtures/variants/soc_0.bin")
    assert (one.kind, one.is_set, one.parts) == (
        "context binary",
        False,
        (Path("fixtures/variants/soc_0.bin"),),
    )
    assert one.to_json() == _cli_json("inspect", "fixtures/variants/soc_0.bin")
    assert one._repr_html_().startswith("<!doctype html>")
    folder = q9diff.open(LOCAL)
    assert folder.kind == "folder of parts" and [p.name for p in folder.parts] == [
        "part_1_of_2.bin",
        "part_2_of_2.bin",
    ]
    assert folder.to_json()["schema"] == "q9diff.inspect-set/1" and len(folder.to_json()["contexts"]) == 2
    config = q9diff.open(f"{LOCAL}/genie_config.json")  # a bundle's config names its ctx-bins
    assert config.kind == "Genie config" and [p.name for p in config.parts][:2] == [
        "part_1_of_2_prompt.bin",
        "part_1_of_2_token.bin",
    ]
    data = (VARIANTS / "graphs_1.bin").read_bytes()
    two = q9diff.open(
        dispatch_tflite(tmp_path / "two.tflite", data + data, [(0, len(data)), (len(data), len(data))])
    )
    assert two.kind == "container of contexts" and len(two.parts) == 2
    assert all(cb.size == len(data) for cb in two.contexts())
    shutil.copy(VARIANTS / "graphs_1.bin", tmp_path / "ctx.bin")
    model = q9diff.open(epcontext_model(tmp_path / "one.onnx", ["ctx.bin"]))
    assert model.kind == "context binary" and next(model.contexts()).size == len(data)


def test_errors_are_q9errors_naming_the_input_never_system_exit():
    with pytest.raises(q9diff.InputError, match="no-such.bin: no such file or directory"):
        q9diff.diff("fixtures/no-such.bin", "fixtures/variants/soc_77.bin")
    with pytest.raises(q9diff.InputError, match="no such file"):
        q9diff.open("fixtures/no-such.bin")
    with pytest.raises(q9diff.UnknownDevice, match="not a device q9diff knows"):
        q9diff.target("fixtures/variants/soc_0.bin", "no such device")
    with pytest.raises(q9diff.UnknownRuntime, match="expected a QAIRT version"):
        q9diff.will_load("fixtures/variants/soc_0.bin", runtime="banana")
    with pytest.raises(q9diff.InputError, match="name the runtime"):
        q9diff.will_load("fixtures/variants/soc_0.bin")
    with pytest.raises(q9diff.BundleError):
        q9diff.doctor("fixtures/no-such-bundle")
    with pytest.raises(q9diff.InputError, match="give two files or two folders"):
        q9diff.diff("fixtures/variants/opt_1.bin", REFERENCE)
    for error in (
        q9diff.InputError,
        q9diff.FormatError,
        q9diff.UnknownDevice,
        q9diff.UnknownRuntime,
        q9diff.BundleError,
    ):
        assert issubclass(error, q9diff.Q9Error) and not issubclass(error, SystemExit)


def test_results_are_frozen_and_their_json_a_fresh_copy():
    result = q9diff.diff("fixtures/variants/soc_0.bin", "fixtures/variants/soc_77.bin")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.notes = ()
    result.to_json()["causes"].clear()
    assert result.to_json()["causes"] and result.causes


def test_the_public_names_are_listed_versioned_and_doctor_stays_the_function():
    assert q9diff.API_VERSION == 1
    assert set(q9diff.__all__) >= {"open", "diff", "target", "will_load", "doctor", "Q9Error", "API_VERSION"}
    assert all(getattr(q9diff, name) is not None for name in q9diff.__all__)
    from q9diff.doctor.run import run  # the doctor package, imported under the API's name

    assert callable(run) and q9diff.doctor.__module__ == "q9diff.api"
    assert all(name in DOCS.read_text() for name in q9diff.__all__)
