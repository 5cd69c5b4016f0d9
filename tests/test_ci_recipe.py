"""The GitHub Actions job of docs/q9diff-gate.yml, its q9diff step run as written on the fixtures (issue 39):
it gates on doctor's status, posts the Markdown as the job summary and leaves the HTML page to upload."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

yaml = pytest.importorskip("yaml")
JOB = ROOT / "docs" / "q9diff-gate.yml"


def _step(name: str) -> dict:
    job = yaml.safe_load(JOB.read_text())["jobs"]["q9diff"]
    return next(s for s in job["steps"] if s.get("name") == name)


def _run(tmp_path: Path, runtime: str) -> tuple[subprocess.CompletedProcess, Path]:
    job = yaml.safe_load(JOB.read_text())["jobs"]["q9diff"]
    summary = tmp_path / "summary.md"
    bin_dir = tmp_path / "bin"  # `q9diff` as the installed script runs it, from this checkout's venv
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "q9diff"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from q9diff.cli import run; run()' \"$@\"\n")
    script.chmod(0o755)
    env = {
        **os.environ,
        **{k: str(v) for k, v in job["env"].items()},
        "BUNDLE": str(FIXTURES / "qwen-mini" / "reference"),
        "RUNTIME": runtime,
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", _step("q9diff doctor")["run"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return done, summary


def test_the_gate_passes_a_bundle_that_loads_on_the_runtime_shipped(tmp_path):
    done, summary = _run(tmp_path, "2.51")
    assert done.returncode == 0, done.stdout + done.stderr
    text = summary.read_text()
    assert text.startswith("## q9diff doctor: 0 error(s)") and "--target QCS9100" in text
    assert (tmp_path / "q9diff.html").read_text().startswith("<!doctype html>")
    upload = _step("upload the HTML report")
    assert upload["with"]["path"] == "q9diff.html" and upload["if"] == "always()"


def test_the_gate_fails_a_bundle_newer_than_the_runtime_shipped(tmp_path):
    done, summary = _run(tmp_path, "2.48")
    assert done.returncode == 1, done.stdout + done.stderr
    text = summary.read_text()
    assert "load.runtime" in text and "will not load" in text
    assert (tmp_path / "q9diff.html").is_file()  # the page is written for the upload all the same
