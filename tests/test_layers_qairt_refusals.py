"""A reference (or candidate) recipe that names another QAIRT than q9diff's own onnxruntime-qnn compiles and
runs with the interpreter Q9DIFF_PYTHON_<major>_<minor> names (tests/test_layers_two_builds.py runs it on real
models); without one, or with one of another QAIRT, `q9diff layers` says so in one line, exit 2, before it
compiles anything. The fixtures' MLP (a w8a16 QDQ model) is all it reads: nothing here compiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from conftest import q9diff_cli as q9diff

from q9diff.runners.local import LocalRunner

pytestmark = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))

MLP = FIXTURES / "variants" / "models" / "mlp.onnx"


def _recipe(folder: Path, qairt: str | None, name: str = "ref") -> Path:
    data = {"schema": "q9diff.recipe/2", "backend": "ort-qnn", "qairt_version": qairt, "settings": {}}
    data["parts"] = [{"name": "p", "output": "p.bin", "graphs": [{"name": "g", "model": str(MLP)}]}]
    path = folder / f"{name}.recipe.json"
    path.write_text(json.dumps(data))
    return path


def _refused(*args: str) -> str:
    done = q9diff("layers", *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("Q9DIFF_CACHE", str(folder))
    monkeypatch.delenv("Q9DIFF_PYTHON_2_48", raising=False)
    return folder


def test_another_qairt_with_no_interpreter_for_it(tmp_path, cache):
    ref = _recipe(tmp_path, "2.48")
    line = _refused(str(MLP), "--reference", str(ref))
    assert line.startswith(f"q9diff: error: {ref}: asks for QAIRT 2.48, and this q9diff's onnxruntime-qnn is")
    assert "set Q9DIFF_PYTHON_2_48 to a Python 3.11" in line and "qairt-2.48.txt" in line
    line = _refused(
        str(_recipe(tmp_path, "2.48.40", "cand")), "--reference", str(MLP.with_name("mlp.float.onnx"))
    )
    assert "cand.recipe.json: asks for QAIRT 2.48.40" in line  # the candidate's recipe alike
    line = _refused(str(MLP), "--reference", str(_recipe(tmp_path, "2.48." + "9" * 5000)))
    assert "set Q9DIFF_PYTHON_2_48" in line and len(line) < 400
    assert not cache.exists() or not list(cache.rglob("*.bin"))  # nothing was compiled


def test_an_interpreter_of_another_qairt_or_none_at_all(tmp_path, cache, monkeypatch):
    ref = _recipe(tmp_path, "2.48")
    names = [Path(sys.executable).with_name(n) for n in ("python3", "python", "python3.11")]
    ours = next(p for p in names if p.exists() and str(p) != sys.executable)  # this one, by another name
    monkeypatch.setenv("Q9DIFF_PYTHON_2_48", str(ours))
    assert _refused(str(MLP), "--reference", str(ref)).endswith(f"Q9DIFF_PYTHON_2_48={ours} has 2.51.0")
    monkeypatch.setenv("Q9DIFF_PYTHON_2_48", str(tmp_path / "none"))
    line = _refused(str(MLP), "--reference", str(ref))
    assert line.endswith(
        f"Q9DIFF_PYTHON_2_48={tmp_path / 'none'} has no Python that answers (FileNotFoundError)"
    )
    assert not cache.exists() or not list(cache.rglob("*.bin"))


@pytest.mark.parametrize("version", ["v2.48", "two.48", "2." + "9" * 5000, "2.48; rm -rf ~"])
def test_a_qairt_version_that_is_none_is_said(tmp_path, cache, version):
    line = _refused(str(MLP), "--reference", str(_recipe(tmp_path, version)))
    assert "is no QAIRT version (expected e.g. 2.48)" in line and len(line) < 300
