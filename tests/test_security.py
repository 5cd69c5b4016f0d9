"""Hostile input (issue 9): a file from someone else never runs code, reads or writes outside its place.

Every test sets up what a downloaded bundle or recipe could hold and runs the real command on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.runners.local import LocalRunner

Q9DIFF = Path(sys.executable).with_name("q9diff")
VARIANT = FIXTURES / "variants" / "opt_1.bin"
needs_emulator = pytest.mark.skipif(LocalRunner().missing() is not None, reason="needs onnxruntime-qnn")

# A module named like one every q9diff child imports; importing it leaves a marker file beside it.
SHADOW = """\
import os, sys
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "IMPORTED"), "a") as f:
    f.write(" ".join(sys.argv) + "\\n")
raise SystemExit("shadow module imported")
"""


def _q9diff(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(Q9DIFF), *args], cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


def _plant(folder: Path) -> Path:
    """json.py and runpy.py in `folder`, as a downloaded bundle could carry them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("json.py", "runpy.py", "argparse.py"):
        (folder / name).write_text(SHADOW)
    return folder / "IMPORTED"


# ---- 1. children never import from the working directory, PYTHONPATH or the user's site ----


def test_oracle_child_does_not_import_from_the_working_directory(tmp_path):
    marker = _plant(tmp_path)
    shutil.copy(VARIANT, tmp_path / "model.bin")
    done = _q9diff(["inspect", "--oracle", "model.bin"], tmp_path)
    assert not marker.exists(), marker.read_text()
    assert "shadow module" not in done.stdout + done.stderr


def test_oracle_child_ignores_pythonpath(tmp_path, monkeypatch):
    from q9diff.oracle.reader import OracleUnavailable, read_binary_info_isolated

    marker = _plant(tmp_path / "evil")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "evil"))
    monkeypatch.chdir(tmp_path)
    try:
        read_binary_info_isolated(VARIANT)
    except OracleUnavailable:
        pass
    assert not marker.exists(), marker.read_text()


@needs_emulator
def test_verify_worker_does_not_import_from_the_working_directory(tmp_path):
    marker = _plant(tmp_path)
    for f in ("opt_1.bin", "opt_1.recipe.json"):
        shutil.copy(FIXTURES / "variants" / f, tmp_path / f)
    shutil.copytree(FIXTURES / "variants" / "models", tmp_path / "models")
    done = _q9diff(["verify", "opt_1.bin"], tmp_path)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stdout + done.stderr


@needs_emulator
def test_recompile_child_does_not_import_from_the_working_directory(tmp_path):
    marker = _plant(tmp_path)
    shutil.copy(FIXTURES / "variants" / "opt_1.recipe.json", tmp_path / "recipe.json")
    shutil.copytree(FIXTURES / "variants" / "models", tmp_path / "models")
    done = _q9diff(["recompile", "recipe.json", "--out", "out"], tmp_path)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "opt_1.bin").read_bytes() == VARIANT.read_bytes()


def test_genie_child_does_not_import_from_the_working_directory(tmp_path, monkeypatch):
    from q9diff.runners.genie import GenieRunner

    if GenieRunner().missing():
        pytest.skip(GenieRunner().missing())
    marker = _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = GenieRunner(timeout_s=120).generate(FIXTURES / "qwen-mini" / "local", [10, 20], 1)
    assert not marker.exists(), marker.read_text()
    assert len(result.tokens) == 1


def test_isolated_child_still_imports_this_q9diff(tmp_path):
    """The explicit path works without PYTHONPATH, from a folder holding a package named q9diff."""
    from q9diff.guard import package_root, python_argv

    (tmp_path / "q9diff").mkdir()
    (tmp_path / "q9diff" / "__init__.py").write_text(SHADOW)
    code = "import q9diff, sys; print(q9diff.__file__)"
    (tmp_path / "probe.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        python_argv("probe", [], paths=[package_root(), str(tmp_path)]), cwd=tmp_path, env=env,
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(Path(package_root()) / "q9diff" / "__init__.py")
    assert not (tmp_path / "q9diff" / "IMPORTED").exists()


# An editable install's finder as setuptools writes one, mapping q9diff.formats to another folder.
FORMATS_FINDER = """\
import importlib.util, sys

class Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "q9diff.formats":
            return importlib.util.spec_from_file_location(
                name, {init!r}, submodule_search_locations=[{folder!r}]
            )

sys.meta_path.append(Finder)
sys.path.extend({deps!r})
"""


def test_child_of_another_interpreter_reads_this_q9diffs_formats(tmp_path):
    """A child run by another interpreter (a QAIRT's venv given to make_fixtures --python-for) whose own
    q9diff install maps q9diff.formats to another checkout still takes this q9diff's byte layouts."""
    from q9diff.guard import package_root, python_argv

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    other = tmp_path / "other_checkout_formats"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('q9diff.formats of the other checkout')\n")
    deps = [p for p in sys.path if p.endswith("site-packages")]  # construct, which the layouts import
    finder = FORMATS_FINDER.format(init=str(other / "__init__.py"), folder=str(other), deps=deps)
    (site / "other_q9diff_finder.py").write_text(finder)
    (site / "other_q9diff.pth").write_text("import other_q9diff_finder\n")
    python = str(venv / "bin" / "python")
    probe = [python, "-I", "-c", f"import sys; sys.path.insert(0, {package_root()!r}); import q9diff.formats"]
    mapped = subprocess.run(probe, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "other checkout" in mapped.stderr  # the child's install does map it elsewhere
    done = subprocess.run(
        python_argv("q9diff.formats.context_binary", [], python), capture_output=True, text=True,
        timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


# ---- 3. writes stay inside --out and the rebuild cache ----


def _recipe(folder: Path, **part) -> Path:
    """soc_0's recipe in `folder` (its model copied beside), with the part's fields replaced."""
    shutil.copytree(FIXTURES / "variants" / "models", folder / "models", dirs_exist_ok=True)
    data = json.loads((FIXTURES / "variants" / "soc_0.recipe.json").read_text())
    data["parts"][0].update(part)
    (folder / "recipe.json").write_text(json.dumps(data))
    return folder / "recipe.json"


@pytest.mark.parametrize(
    "part",
    [{"output": "../escaped.bin"}, {"output": "{tmp}/escaped.bin"}, {"name": "../../escaped"}],
)
def test_recompile_refuses_names_that_leave_out(tmp_path, part):
    part = {k: v.format(tmp=tmp_path) for k, v in part.items()}
    recipe = _recipe(tmp_path / "src", **part)
    done = _q9diff(["recompile", str(recipe), "--out", str(tmp_path / "src" / "out")], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "recipe.json" in lines[0] and "internal error" not in lines[0], lines
    assert not list(tmp_path.rglob("escaped*")), list(tmp_path.rglob("escaped*"))


@needs_emulator
def test_unshared_rebuild_cache_refuses_a_part_name_that_climbs_out(tmp_path, monkeypatch):
    from q9diff.recipes.recipe import RecipeError
    from q9diff.runners.local import unshared_rebuild

    monkeypatch.setenv("Q9DIFF_CACHE", str(tmp_path / "cache" / "q9diff"))
    folder = tmp_path / "bundle"
    folder.mkdir()
    shutil.copy(FIXTURES / "variants" / "graphs_2.bin", folder / "graphs_2.bin")
    data = json.loads((FIXTURES / "variants" / "graphs_2.recipe.json").read_text())
    data["parts"][0]["name"] = "../../../escaped"
    shutil.copytree(FIXTURES / "variants" / "models", folder / "models")
    (folder / "graphs_2.recipe.json").write_text(json.dumps(data))
    with pytest.raises(RecipeError, match="part name '../../../escaped' must be a plain name"):
        unshared_rebuild(folder / "graphs_2.bin")
    assert not list(tmp_path.rglob("escaped*"))


def test_recompile_refuses_an_output_over_its_own_source_model(tmp_path):
    recipe = _recipe(tmp_path, output="models/mlp.onnx")
    model = (tmp_path / "models" / "mlp.onnx").read_bytes()
    done = _q9diff(["recompile", str(recipe), "--out", str(tmp_path)], tmp_path)
    assert done.returncode == 2 and "an input" in done.stderr, done.stdout + done.stderr
    assert (tmp_path / "models" / "mlp.onnx").read_bytes() == model


@needs_emulator
def test_recompile_with_a_relative_out_and_the_recipe_elsewhere(tmp_path):
    recipe = _recipe(tmp_path / "elsewhere")
    (tmp_path / "here").mkdir()
    done = _q9diff(["recompile", str(recipe), "--out", "out"], tmp_path / "here")
    assert done.returncode == 0, done.stdout + done.stderr
    built = tmp_path / "here" / "out" / "soc_0.bin"
    assert built.read_bytes() == (FIXTURES / "variants" / "soc_0.bin").read_bytes()


# ---- 4. suggest --recompile never builds over the inputs it compares ----


@pytest.mark.parametrize("out", ["ref", "ref/opt_1.bin", "."])
def test_suggest_recompile_refuses_an_out_holding_the_reference(tmp_path, out):
    (tmp_path / "ref").mkdir()
    reference = tmp_path / "ref" / "opt_1.bin"
    shutil.copy(FIXTURES / "variants" / "opt_1.bin", reference)
    shutil.copy(FIXTURES / "variants" / "soc_0.bin", tmp_path / "soc_0.bin")
    recipe = _recipe(tmp_path / "work")
    before = reference.read_bytes()
    done = _q9diff(
        ["suggest", str(tmp_path / "soc_0.bin"), str(reference), "--apply", str(recipe), "--recompile",
         "--out", out], tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds" in done.stderr and "Gap closed" not in done.stdout
    assert reference.read_bytes() == before
    assert json.loads(recipe.read_text())["settings"]["soc_model"] == 0, "refused before --apply wrote"


# ---- 5. tensor sizes read from a file are checked against the machine before anything is allocated ----


def _huge_input(tmp_path: Path) -> Path:
    """opt_1.bin with its input's dims (1, 16, 128) rewritten to 65535^3 where q9diff's parser reads them."""
    import struct

    from q9diff.read.binary import ContextBinary

    data = VARIANT.read_bytes()
    original = struct.pack("<3I", 1, 16, 128)
    at = data.find(original)
    while at >= 0:
        patched = data[:at] + struct.pack("<3I", 65535, 65535, 65535) + data[at + 12 :]
        graph = ContextBinary(patched, "x.bin").graphs[0]
        if graph.inputs[0].dims == (65535, 65535, 65535):
            out = tmp_path / "opt_1.bin"
            out.write_bytes(patched)
            shutil.copy(FIXTURES / "variants" / "opt_1.recipe.json", tmp_path / "opt_1.recipe.json")
            shutil.copytree(FIXTURES / "variants" / "models", tmp_path / "models")
            return out
        at = data.find(original, at + 1)
    pytest.fail("the input's dims are not where the parser reads them")


def test_graph_specs_refuse_io_larger_than_the_machine(tmp_path):
    from q9diff.runners.base import RunnerError, graph_specs

    with pytest.raises(RunnerError, match=r"refusing to run it.*largest: x \[65535, 65535, 65535\]"):
        graph_specs(_huge_input(tmp_path))
    assert graph_specs(VARIANT)[0].inputs[0].shape == (1, 16, 128)


def test_verify_of_a_binary_with_huge_dims_is_one_line_and_allocates_nothing(tmp_path):
    evil = _huge_input(tmp_path)
    done = _q9diff(["verify", str(evil)], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to run it" in lines[0] and "internal error" not in lines[0], lines


# ---- 9. malformed JSON and odd tool output: one line naming the file and what was expected ----


def _genie_bundle(tmp_path: Path, text: str) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "qwen-mini" / "local", bundle)
    for part in bundle.glob("*.bin"):  # the config, not the folder's own parts, names what runs
        part.unlink()
    (bundle / "genie_config.json").write_text(text)
    return bundle


def _config(path: str, value) -> str:
    """The qwen-mini config with dialog.PATH (dotted) set to value."""
    config = json.loads((FIXTURES / "qwen-mini" / "local" / "genie_config.json").read_text())
    keys = path.split(".")
    node = config["dialog"]
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return json.dumps(config)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"dialog": [1, 2]}', "expected a JSON object with a dialog object, got a list"),
        ("[1, 2]", "expected a JSON object with a dialog object, got a list"),
        (_config("engine.model.binary.ctx-bins", 5), "ctx-bins to be a list of file paths, got a number"),
        ('{"dialog": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
        (_config("context.bos-token", "2046"), "dialog.context.bos-token to be a number, got a string"),
        ("{not json", "not JSON"),
    ],
    ids=["dialog-list", "top-list", "int-ctx-bins", "deep", "string-bos", "not-json"],
)
@pytest.mark.parametrize("runner", ["local", "genie"])
def test_malformed_genie_config_is_one_line_naming_the_file(tmp_path, text, expected, runner):
    bundle = _genie_bundle(tmp_path, text)
    done = _q9diff(["verify", str(bundle), "--runner", runner, "--no-cpu", "--steps", "1"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], lines
    assert str(bundle / "genie_config.json") in lines[0] and expected in lines[0], lines


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"settings": [1]}, "expected settings to be an object"),
        ({"settings": {"soc_model": "77"}}, "expected setting soc_model to be int, got '77'"),
        ({"settings": {"weight_sharing": 1}}, "expected setting weight_sharing to be bool, got 1"),
        ({"backend": ["ort-qnn"]}, "expected backend to be a string"),
        ({"made_with": ["onnx"]}, "expected made_with to be an object of package: version strings"),
        ("deep", "nested too deep"),
        ("long", "a number with too many digits"),
    ],
    ids=["settings-list", "string-soc", "int-bool", "list-backend", "list-made-with", "deep", "long-number"],
)
@pytest.mark.parametrize("command", ["recompile", "verify"])
def test_malformed_recipe_is_one_line_naming_the_file(tmp_path, change, expected, command):
    recipe = tmp_path / "opt_1.recipe.json"
    data = json.loads((FIXTURES / "variants" / "opt_1.recipe.json").read_text())
    if change == "deep":
        text = "[" * 100_000 + "]" * 100_000
    elif change == "long":  # more digits than Python converts to an int: a ValueError, not a JSONDecodeError
        text = json.dumps(data).replace('"vtcm_mb": 8', '"vtcm_mb": ' + "9" * 100_000)
    else:
        text = json.dumps({**data, **change})
    recipe.write_text(text)
    shutil.copy(VARIANT, tmp_path / "opt_1.bin")
    args = (
        ["recompile", str(recipe), "--out", str(tmp_path / "out")]
        if command == "recompile"
        else ["verify", str(tmp_path / "opt_1.bin")]
    )
    done = _q9diff(args, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], lines
    assert str(recipe) in lines[0] and expected in lines[0], lines
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("answer", ["99999999999999999999", "\u00b2", "-1", "12abc"])
def test_odd_genie_t2t_run_answers_are_a_runner_error(answer):
    from q9diff.runners.base import RunnerError
    from q9diff.runners.ssh.runner import parse_genie_output

    with pytest.raises(RunnerError, match="not token ids"):
        parse_genie_output(f"[PROMPT TOKENS]: 1 2 \n[BEGIN]: 5 {answer} [END]\n")


# ---- 10. the worker's temporary folders go, also when the emulator kills the worker ----


@needs_emulator
@pytest.mark.parametrize("binary", ["graphs_1.bin", "graphs_2.bin"])  # graphs_2: weight-shared, crashes
def test_verify_leaves_no_worker_folder_in_the_temp_dir(tmp_path, binary):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "Q9DIFF_CACHE": str(tmp_path / "cache")}
    done = _q9diff(["verify", str(FIXTURES / "variants" / binary)], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    if binary == "graphs_2.bin":
        assert "weight-shared" in done.stdout, "the emulator child crashed and the runner rebuilt it"
    # onnxruntime keeps one `.ses` file in TMPDIR (its own, reused); q9diff leaves nothing of its own.
    assert [p.name for p in temp.iterdir() if p.name != ".ses"] == []


def test_diff_of_bundles_reads_only_their_own_well_formed_configs(tmp_path):
    outside = tmp_path / "elsewhere.bin"
    shutil.copy(VARIANT, outside)
    for name, text in (
        ("escapes", _config("engine.model.binary.ctx-bins", [str(outside)])),
        ("dialog-list", '{"dialog": []}'),
        ("deep", "[" * 100_000 + "]" * 100_000),
    ):
        bundle = tmp_path / name
        bundle.mkdir()
        (bundle / "genie_config.json").write_text(text)
        done = _q9diff(["diff", str(bundle), str(bundle)], tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "internal error" not in lines[0], lines
        assert str(bundle / "genie_config.json") in lines[0]


def test_qairt_interpreter_probe_does_not_import_from_the_working_directory(tmp_path, monkeypatch):
    from q9diff.backends.qairt import QairtBackend

    marker = _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    python = tmp_path / "python3.12"  # another interpreter, as Q9DIFF_QAIRT_PYTHON names one
    python.symlink_to(sys.executable)
    problem = QairtBackend(python=str(python), env=dict(os.environ)).missing()
    assert not marker.exists(), marker.read_text()
    assert "qairt-dev runs on Python 3.10 or 3.12" in problem, problem


def test_a_short_fuzz_round_finds_no_crash_hang_or_region_gap():
    """scripts/fuzz.py's first 300 cases (seed 1); the 100,000-case run is by hand (see its docstring)."""
    fuzz = FIXTURES.parent / "scripts" / "fuzz.py"
    args = [sys.executable, str(fuzz), "--cases", "300", "--seed", "1", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert report["cases"] == 300 and report["parsed"] + report["format_errors"] + report["crashes"] == 300
    assert report["parsed"] > 0 and report["format_errors"] > 0, "the mutations reach past the header"
    assert (report["crash_buckets"], report["region_map_faults"], report["hangs_over_2s"]) == ([], [], [])
    assert done.returncode == 0


def test_a_short_bundle_fuzz_round_finds_no_crash_or_hang():
    """scripts/fuzz.py --bundle: 150 cases of mutated Genie configs, tokenizers, extension files and
    EPContext node lists through doctor, diff, --apply and the openers (the 20,000-case run is by hand)."""
    fuzz = FIXTURES.parent / "scripts" / "fuzz.py"
    args = [sys.executable, str(fuzz), "--bundle", "--cases", "150", "--seed", "1", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert report["cases"] == 150 and report["parsed"] > 0 and report["format_errors"] > 0
    assert (report["crash_buckets"], report["region_map_faults"], report["hangs_over_2s"]) == ([], [], [])
    assert done.returncode == 0


@pytest.mark.parametrize(
    "command, target",
    [
        (["diff", "a.bin", "b.bin"], "a.bin"),
        (["diff", "a.bin", "b.bin"], "b.bin"),
        (["diff", "set_a", "set_b"], "set_b/part_1_of_1.bin"),
        (["doctor", "set_a"], "set_a/part_1_of_1.bin"),
        (["verify", "a.bin"], "a.bin"),
    ],
    ids=["diff-candidate", "diff-reference", "diff-set-part", "doctor-part", "verify-candidate"],
)
def test_html_report_never_overwrites_an_input(tmp_path, command, target):
    # Seen: `q9diff a.bin b.bin --html a.bin` replaced the candidate by the report, and `doctor BUNDLE
    # --html BUNDLE/part.bin` a part of the bundle. Inputs are never modified.
    shutil.copy(VARIANT, tmp_path / "a.bin")
    shutil.copy(FIXTURES / "variants" / "opt_3.bin", tmp_path / "b.bin")
    for name, src in (("set_a", "a.bin"), ("set_b", "b.bin")):
        (tmp_path / name).mkdir()
        shutil.copy(tmp_path / src, tmp_path / name / "part_1_of_1.bin")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.bin")}
    done = _q9diff([*command, "--html", target], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "would overwrite" in lines[0] and "an input" in lines[0], lines
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.bin")} == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(
        ["a.bin", "b.bin", "set_a", "set_b", "part_1_of_1.bin", "part_1_of_1.bin"]
    )
    new = tmp_path / "set_a" / "report.html"  # a new file beside the parts is fine
    done = _q9diff([*command, "--html", str(new)], tmp_path) if command[0] != "verify" else None
    assert done is None or (done.returncode in (0, 1) and new.is_file()), done and done.stderr
