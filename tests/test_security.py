"""Hostile input (issue 9): a file from someone else never runs code, reads or writes outside its place.

Every test sets up what a downloaded bundle or recipe could hold and runs the real command on it.
"""

from __future__ import annotations

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
    from q9diff.oracle import OracleUnavailable, read_binary_info_isolated

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
