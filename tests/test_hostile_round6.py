"""Hostile input, round 6 (issue 52): every file `layers` opens (its --inputs, a reference folder's models,
external data) goes through the one guard (regular files only, inside the place given, read within a bound
set by the input's size), an .npz is checked on its headers before a byte is inflated, a part of a folder
that leads outside it is never read, a report is never written over an input wherever it lives, and a
Genie bundle's diff compares everything the bundle is. Each hostile file is built here; commands run in a
child that reports its own peak memory (test_hostile_bundle.q9), the subprocess timeout guards hangs only.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES
from test_hostile_bundle import q9, refused

from q9diff.errors import Q9Error
from q9diff.runners.local import LocalRunner

VARIANTS = FIXTURES / "variants"
MLP = VARIANTS / "vtcm_8mb.recipe.json"
MLP_QDQ = VARIANTS / "models" / "mlp.onnx"
MLP_FLOAT = VARIANTS / "models" / "mlp.float.onnx"
emulator = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))


def _external(model: Path, out: Path, data: str = "weights.bin") -> Path:
    """`model` saved at `out` with every initializer's data in the file `data` beside it."""
    import onnx

    m = onnx.load(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(m, out, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
              size_threshold=0)  # fmt: skip
    return out


# ---- 1. a reference folder's model that is a device or a FIFO ---------------------------------------------


@pytest.mark.parametrize("what", ["/dev/zero", "fifo"])
def test_a_reference_model_that_is_a_device_or_fifo_is_one_line_unread(tmp_path, what):
    """A float.onnx linked to /dev/zero was read until memory ran out; a FIFO of that name blocked."""
    ref = tmp_path / "float"
    ref.mkdir()
    bad = ref / "float.onnx"
    if what == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to(what)
    run = q9("layers", MLP, "--reference", ref)
    refused(run, "float.onnx")
    assert run.rss_mib < 400, run.rss_mib
    refused(q9("layers", MLP, "--reference", bad), str(bad))  # the file given itself


def test_an_inputs_file_that_is_a_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    refused(q9("layers", MLP, "--reference", MLP_FLOAT, "--inputs", fifo), str(fifo), "FIFO")


# ---- 2. an .npz checked on its headers before it is inflated ----------------------------------------------


def _npz_declaring(path: Path, shape: tuple[int, ...], name: str = "x", data: bytes = b"") -> Path:
    """An .npz whose member `name` declares `shape` of float32 and holds `data` after its header."""
    head = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
    head["shape"] = shape
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, head)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}.npy", b.getvalue() + data)
    return path


def test_a_192_byte_header_asking_for_36_tib_is_one_line_from_layers_and_verify(tmp_path):
    """It was an internal error (MemoryError): every member was loaded before any shape was checked."""
    big = _npz_declaring(tmp_path / "big.npz", (1 << 20, 1 << 20, 9))
    assert big.stat().st_size < 300
    run = q9("layers", MLP, "--reference", MLP_FLOAT, "--inputs", big)
    refused(run, str(big), "x is [1048576, 1048576, 9]", "takes [1, 16, 128]")
    run = q9("verify", VARIANTS / "graphs_1.bin", "--inputs", big)
    refused(run, str(big), "39,582,418,599,936 bytes", "1 GiB")
    assert run.rss_mib < 400, run.rss_mib


def test_a_small_archive_inflating_to_gigabytes_is_refused_on_its_header(tmp_path):
    """A 3 MB archive inflated to a 3 GiB array (3.2 GB resident) before its shape was checked."""
    bomb = _npz_declaring(tmp_path / "bomb.npz", (3 << 28,), data=bytes(64 << 20))
    assert bomb.stat().st_size < 1 << 20
    run = q9("verify", VARIANTS / "graphs_1.bin", "--inputs", bomb)
    refused(run, str(bomb), "3,221,225,472 bytes", "1 GiB")
    assert run.rss_mib < 400, run.rss_mib


def test_an_npz_whose_member_is_shorter_than_declared_or_not_numbers_is_one_line(tmp_path):
    from q9diff.read.arrays import read_npz
    from q9diff.runners.base import RunnerError

    short = _npz_declaring(tmp_path / "short.npz", (1, 16, 128), data=bytes(100))
    with pytest.raises(RunnerError, match=r"short.npz: member x ends after 100 of the 8,192 bytes"):
        read_npz(short, RunnerError)
    objects = tmp_path / "objects.npz"
    np.savez(objects, x=np.array([1, "a"], dtype=object), allow_pickle=True)
    with pytest.raises(RunnerError, match=r"objects.npz: member x holds object values"):
        read_npz(objects, RunnerError)
    good = tmp_path / "good.npz"
    np.savez(good, x=np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    assert (read_npz(good, RunnerError)["x"] == np.arange(12.0).reshape(3, 4)).all()


# ---- 3. a part of a folder that leads outside it ----------------------------------------------------------


def test_a_part_linking_outside_its_folder_is_refused_by_diff_and_inspect(tmp_path):
    """diff said "Identical" and inspect printed the outside file's build; doctor refused it already."""
    shutil.copy(VARIANTS / "graphs_1.bin", tmp_path / "outside.bin")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.bin").symlink_to("../outside.bin")
    shutil.copy(VARIANTS / "graphs_1.bin", tmp_path / "b" / "x.bin")
    for args in (("diff", "a", "b"), ("b", "a"), ("inspect", "a")):
        run = q9(*args, cwd=tmp_path)
        refused(run, "a/x.bin", "outside the folder a")
        assert run.stdout == ""


# ---- 4. external data that is a FIFO; 6. given by a relative path -----------------------------------------


def test_external_data_that_is_a_fifo_is_one_line_before_any_compile(tmp_path):
    """The digest of the tapped model opened it plainly: layers hung before the first compile."""
    model = _external(MLP_QDQ, tmp_path / "m" / "mlp.onnx")
    (tmp_path / "m" / "weights.bin").unlink()
    os.mkfifo(tmp_path / "m" / "weights.bin")
    refused(q9("layers", model, "--reference", MLP_FLOAT), "weights.bin", "FIFO")


@emulator
def test_a_float_reference_with_external_data_given_by_a_relative_path_works(tmp_path):
    """It ended in an internal error (`relative_to`) after both compiles."""
    _external(MLP_FLOAT, tmp_path / "float" / "mlp.float.onnx")
    run = q9("layers", MLP, "--reference", "float/mlp.float.onnx", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["graphs"][0]["measured"] == 5


# ---- 5. a report over a recipe's model that lives outside the recipe's folder -----------------------------


def test_a_report_is_never_written_over_a_recipes_model_outside_its_folder(tmp_path):
    """The story fixture's layout (recipe/recipe.json naming ../models/mlp.onnx): --html there wrote over it
    (exit 0)."""
    shutil.copytree(VARIANTS / "models", tmp_path / "models")
    (tmp_path / "recipe").mkdir()
    recipe = json.loads(MLP.read_text())
    recipe["parts"][0]["graphs"][0]["model"] = "../models/mlp.onnx"
    (tmp_path / "recipe" / "recipe.json").write_text(json.dumps(recipe))
    before = (tmp_path / "models" / "mlp.onnx").read_bytes()
    for flag in ("--html", "--markdown"):
        run = q9(
            "layers", "recipe/recipe.json", "--reference", MLP_FLOAT, flag, "models/mlp.onnx", cwd=tmp_path
        )
        refused(run, f"{flag} models/mlp.onnx would overwrite", "an input")
    assert (tmp_path / "models" / "mlp.onnx").read_bytes() == before


# ---- 7. a negative dimension ------------------------------------------------------------------------------


def test_an_input_declaring_a_negative_dimension_is_one_line(tmp_path):
    import onnx

    m = onnx.load(MLP_FLOAT)
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = -5
    onnx.save(m, tmp_path / "neg.onnx")
    refused(q9("layers", tmp_path / "neg.onnx", "--reference", MLP_FLOAT), "neg.onnx", "[1, -5, 128]")


# ---- issue 54: a relative --reference is relative to the working directory --------------------------------


def test_a_relative_reference_is_read_from_the_working_directory_not_the_recipes(tmp_path, monkeypatch):
    """`layers 'fixtures/qwen-mini/reference/recipe.json#part_1_of_2' --reference ../lay/float` looked for the
    float models beside the recipe; the CPU decode for Genie's inputs then failed (CLI and Python alike)."""
    import subprocess
    import sys

    from q9diff.layers import targets

    floats = tmp_path / "lay" / "float"
    done = subprocess.run(
        [sys.executable, str(FIXTURES.parent / "scripts" / "make_layers_faults.py"), "--qwen-float", floats],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    recipe = FIXTURES / "qwen-mini" / "reference" / "recipe.json"
    selected = targets.candidate_graphs(f"{recipe}#part_1_of_2")
    pairs, _, _ = targets.reference_pairs("../lay/float", selected)
    feeds = targets.feeds_for(selected, pairs, "../lay/float", None, 0)
    assert {f.source for f in feeds.values()} == {"genie"}


def test_every_refusal_here_is_a_q9error():
    from q9diff.layers.graph import LayersError
    from q9diff.read.arrays import read_npz

    assert issubclass(LayersError, Q9Error)
    with pytest.raises(LayersError, match="nope.npz"):
        read_npz(Path("nope.npz"), LayersError)


# ---- 8. two Genie bundles whose ctx-bins are alike and whose other files are not --------------------------


def _bundle(dst: Path, theta: float, eos: int, soc_model: int) -> Path:
    """The qwen-mini reference bundle with the settings given."""
    src = FIXTURES / "qwen-mini" / "reference"
    (dst / "genie").mkdir(parents=True)
    for b in (src / "genie").glob("*.bin"):
        shutil.copy(b, dst / "genie" / b.name)
    shutil.copy(src / "tokenizer.json", dst / "tokenizer.json")
    cfg = json.loads((src / "genie_config.json").read_text())
    cfg["dialog"]["engine"]["backend"]["QnnHtp"]["rope-theta"] = theta
    cfg["dialog"]["context"]["eos-token"] = eos
    (dst / "genie_config.json").write_text(json.dumps(cfg, indent=2))
    ext = json.loads((src / "htp_backend_ext_config.json").read_text())
    ext["devices"][0]["soc_model"] = soc_model
    (dst / "htp_backend_ext_config.json").write_text(json.dumps(ext, indent=2))
    return dst


def test_bundles_whose_configs_differ_are_not_identical(tmp_path):
    """Both got "Identical: no difference in any byte", exit 0: the diff compared the ctx-bins only."""
    import jsonschema

    from q9diff.schemas import schema

    _bundle(tmp_path / "a", 10000.0, 2045, 43)
    _bundle(tmp_path / "b", 500000.0, 2044, 57)
    for args in (("a", "b"), ("a/genie_config.json", "b/genie_config.json")):
        run = q9(*args, cwd=tmp_path)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "Identical" not in run.stdout and "ctx-bins" in run.stdout and "are identical" in run.stdout
        for line in (
            "genie_config.json: dialog.engine.backend.QnnHtp.rope-theta 10000.0 vs 500000.0",
            "genie_config.json: dialog.context.eos-token 2045 vs 2044",
            "htp_backend_ext_config.json: devices[0].soc_model 43 vs 57",
        ):
            assert line in run.stdout, run.stdout
    data = json.loads(q9("a", "b", "--json", cwd=tmp_path).stdout)
    jsonschema.validate(data, schema("q9diff.setdiff/1"))
    assert data["identical"] is False and data["outside"]["differs"] is True
    assert data["outside"]["contexts_identical"] is True
    soc = [c for c in data["causes"] if c["name"] == "soc_model"]
    assert [(c["role"], c["a"], c["b"]) for c in soc] == [("root", 43, 57)]  # a root cause, as in a ctx-bin
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(data))
    again = q9("report", saved)
    assert again.returncode == 1 and "devices[0].soc_model 43 vs 57" in again.stdout, again.stderr
    assert q9("a", "a", cwd=tmp_path).returncode == 0  # a bundle against itself is identical


def test_a_tokenizer_or_any_other_file_that_differs_is_said(tmp_path):
    a = _bundle(tmp_path / "a", 10000.0, 2045, 77)
    b = _bundle(tmp_path / "b", 10000.0, 2045, 77)
    tok = json.loads((b / "tokenizer.json").read_text())
    tok["added"] = True
    (b / "tokenizer.json").write_text(json.dumps(tok))
    (b / "notes.txt").write_text("only here")
    (a / "outside.txt").symlink_to(FIXTURES / "variants" / "graphs_1.bin")
    run = q9("a", "b", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    for line in ("tokenizer.json: its bytes differ", "notes.txt: only in b", "outside.txt: leads outside"):
        assert line in run.stdout, run.stdout


# ---- 9. the fuzzers cover layers --------------------------------------------------------------------------


def test_a_short_round_of_the_layers_fuzzer_finds_nothing():
    """scripts/fuzz_layers.py: recipes, .npz archives and external data of hostile shape, read as layers
    reads them before its first compile. The 300-case runs are by hand (its docstring)."""
    import subprocess
    import sys

    script = FIXTURES.parent / "scripts" / "fuzz_layers.py"
    args = [sys.executable, str(script), "--recipes", "--npz", "--external", "--cases", "30", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900)
    report = json.loads(done.stdout)
    assert {m: r["cases"] for m, r in report.items()} == {"recipes": 30, "npz": 30, "external": 30}
    assert all(r["read"] > 0 and r["refused"] > 0 for r in report.values()), report
    assert {m: r["faults"] for m, r in report.items()} == {"recipes": {}, "npz": {}, "external": {}}
    assert done.returncode == 0


# ---- issue 54 (low): a float model as the candidate ------------------------------------------------------


@emulator
def test_a_float_model_as_the_candidate_is_said_on_stderr(tmp_path):
    run = q9("layers", MLP_FLOAT, "--reference", MLP_FLOAT, "--json")
    assert run.returncode in (0, 1), run.stderr
    assert f"warning: {MLP_FLOAT}: a float model as the candidate" in run.stderr
    assert "warning" not in q9("layers", MLP, "--reference", MLP_FLOAT, "--json").stderr
