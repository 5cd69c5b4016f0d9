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
    html = result.to_html()
    data = result.to_json()
    page = tmp_path / "set.html"
    assert q9diff_cli(LOCAL, REFERENCE, "--html", str(page), cwd=ROOT).returncode == 1
    assert html == page.read_text() and html.startswith("<!doctype html>")
    shown = result._repr_html_()  # the same report's body, as a fragment of the notebook (issue 45)
    body = html.split("<body>", 1)[1]
    assert re.search(r"<h2>Root causes over the set: soc_model 0 → 77", shown)
    assert shown.count("<table") == body.count("<table") and shown.count('class="plotly-graph-div"') > 10
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
    assert swapped.suggestions == []  # no fix that would break the good build
    # issue 54: the notes carried nothing, though the command says it and docs/python.md says notes does
    assert swapped.notes == (f"warning: arguments swapped? {looks}",)
    assert repr(swapped).endswith("; arguments swapped? (see .notes)>")


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
    assert load.to_json() == {"schema": "q9diff.load/1", "path": LOCAL, **data["load"]} and not load.loads
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
    assert one.to_html().startswith("<!doctype html>") and "<!doctype" not in one._repr_html_()
    assert one.to_markdown().startswith("## q9diff inspect: fixtures/variants/soc\\_0.bin, 126,976 B\n")
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


def _results() -> list:
    return [
        q9diff.open(LOCAL),
        q9diff.open("fixtures/variants/soc_0.bin"),
        q9diff.diff(LOCAL, REFERENCE, runtime="2.48"),
        q9diff.diff("fixtures/variants/soc_0.bin", "fixtures/variants/soc_0.bin"),
        q9diff.target(LOCAL, "QCS9100", runtime="2.48"),
        q9diff.will_load(LOCAL, runtime="2.48"),
        q9diff.doctor(REFERENCE, runtime="2.48"),
    ]


def test_repr_is_one_short_line_saying_what_and_the_verdict():
    """issue 45: repr(q9diff.diff(...)) was 852,170 characters: a REPL, a debugger or a log line printed
    the whole result. The data stays in to_json()."""
    said = [repr(r) for r in _results()]
    assert all(len(x) < 250 and "\n" not in x for x in said), said
    assert said == [
        "<q9diff.Build 'fixtures/qwen-mini/local': folder of parts, 2 parts>",
        "<q9diff.Build 'fixtures/variants/soc_0.bin': context binary>",
        "<q9diff.DiffReport 'fixtures/qwen-mini/local' vs 'fixtures/qwen-mini/reference': differ: soc_model"
        " 0 → 77, vtcm_size 4 MiB → 8 MiB, optimization_level 0 (not set) → 3; will not load on QAIRT 2.48>",
        "<q9diff.DiffReport 'fixtures/variants/soc_0.bin' vs 'fixtures/variants/soc_0.bin': identical>",
        "<q9diff.TargetReport 'fixtures/qwen-mini/local' against QCS9100: differs: soc_model 0 → 77,"
        " vtcm_size 4 MiB → 8 MiB, optimization_level 0 (not set) → 3;"
        " will not load on QCS9100 and QAIRT 2.48>",
        "<q9diff.LoadReport 'fixtures/qwen-mini/local': will not load on QAIRT 2.48 (2 parts)>",
        "<q9diff.DoctorReport 'fixtures/qwen-mini/reference/genie_config.json': Will not load on QAIRT 2.48:"
        " 1 error>",
    ]


def test_the_notebook_view_is_a_fragment_with_scoped_styles_and_plotly_once():
    """issue 45: _repr_html_ was a whole page (`body{font-family...;max-width:1400px}`) with plotly.js
    inlined, ~2 MB a result in the .ipynb. How a browser shows it: tests/test_pages.py."""
    from q9diff.present import notebook

    notebook._sent = False  # as in a fresh kernel
    first, second = (
        q9diff.diff(LOCAL, REFERENCE),
        q9diff.diff("fixtures/variants/soc_0.bin", VARIANTS / "soc_77.bin"),
    )
    shown = [first._repr_html_(), second._repr_html_(), *(r._repr_html_() for r in _results())]
    for html in shown:
        assert not re.search(r"<(!doctype|html|head|body)\b", html, re.I), html[:200]
        root = re.match(
            r'<div class="q9diff-report" id="(q9diff-[0-9a-f]{8})"><style>(.*?)</style>', html, re.S
        )
        rules = re.findall(r"(?:^|})\s*([^{}@]+)\{", root.group(2).replace("@media (max-width:600px){", "}"))
        assert rules and all(
            all(sel.strip().startswith(f".q9diff-report#{root.group(1)}") for sel in r.split(","))
            for r in rules
        ), rules
    carried = '<script type="text/plain" class="q9diff-plotly-gz">'
    assert len(shown[0]) > 1_500_000 and carried in shown[0]  # the first carries plotly.js
    assert all(carried not in html and len(html) < 400_000 for html in shown[1:])
    ids = [re.findall(r'id="(q9diff-[0-9a-f]{8}-chart-\d+)"', html) for html in shown[:2]]
    assert ids[0] and ids[1] and not set(ids[0]) & set(ids[1])  # two results never share a chart's id


def test_type_hints_resolve_and_the_package_says_it_is_typed():
    """issue 45: typing.get_type_hints(q9diff.diff) raised NameError: 'Device' (will_load: 'Runtime'), and
    no py.typed was shipped, so type checkers ignored the annotations."""
    import inspect
    import typing

    import tomllib

    checked = []
    for name in q9diff.__all__:
        value = getattr(q9diff, name)
        if inspect.isfunction(value):
            checked.append((name, typing.get_type_hints(value)))
        elif inspect.isclass(value) and not issubclass(value, Exception):
            for attr, member in vars(value).items():
                fn = member.fget if isinstance(member, property) else member
                if inspect.isfunction(fn) and not attr.startswith("__"):
                    checked.append((f"{name}.{attr}", typing.get_type_hints(fn)))
    hints = dict(checked)
    assert hints["diff"]["target"] == str | q9diff.api.Device | None
    assert hints["will_load"]["runtime"] == str | q9diff.api.Runtime | None
    assert hints["Build.contexts"]["return"].__args__[0].__name__ == "ContextBinary"
    assert len(checked) > 30
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["q9diff"] and (ROOT / "q9diff" / "py.typed").is_file()


def test_dir_shows_the_public_names_only():
    import q9diff as fresh

    shown = {n for n in dir(fresh) if not n.startswith("__")}
    assert shown == set(fresh.__all__) - {"__version__"}


def test_a_path_that_is_no_build_is_refused_at_once(tmp_path):
    """issue 45: open("notes.txt") and open("/dev/zero") returned a Build that failed when first read, and
    `q9diff doctor README.md` exited 1 with a 25-line report."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a context binary\n")
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)
    for path, error in (
        (notes, q9diff.FormatError),
        (Path("/dev/zero"), q9diff.FormatError),
        (fifo, q9diff.FormatError),
    ):
        with pytest.raises(error, match=re.escape(str(path))):
            q9diff.open(path)
        with pytest.raises(error, match=re.escape(str(path))):
            q9diff.doctor(path)
    done = q9diff_cli("doctor", "README.md", cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "q9diff: error: README.md at offset 0x0: expected a QNN context binary header (big-endian words"
        " 2 3 0 1, or 2 2 0 0 before QNN 2.25)\n"
    )


def test_reports_carry_the_paths_as_given_not_the_machines():
    """issue 45: reports embedded absolute paths of the machine that ran them (CI artifacts carry them)."""
    for args in (
        ("doctor", LOCAL, "--target", "QCS9100", "--runtime", "2.48"),
        ("doctor", "fixtures/variants/soc_0.bin"),
        (LOCAL, REFERENCE, "--runtime", "2.48"),
        (LOCAL, "--target", "QCS9100"),
    ):
        done = q9diff_cli(*args, "--json", cwd=ROOT)
        assert done.returncode in (0, 1), done.stderr
        assert str(ROOT) not in done.stdout, args
