"""The GitHub Actions job of docs/q9diff-gate.yml, run step by step as pasted into a repository that builds a
bundle (issues 39 and 45): the checkouts are local git clones (the user's repository, whose build.sh writes
the bundle from the fixtures, and this checkout as q9diff's repository), setup-python is a fresh venv,
the install is the step's own `pip install ./q9diff` (of this checkout's last commit), every `run` is
bash as GitHub runs it. The job gates on doctor's status, posts the Markdown (or, when the bundle cannot
be read, q9diff's one line) as the job summary, and leaves the HTML page to upload."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

yaml = pytest.importorskip("yaml")
JOB = ROOT / "docs" / "q9diff-gate.yml"
_EXPR = re.compile(r"\$\{\{\s*env\.(\w+)\s*\}\}")

# The user's build step as a user would write it: here it writes the reference bundle of the fixtures.
BUILD_SH = f"""#!/bin/sh
set -e
mkdir -p "$1"
cp -R {FIXTURES / "qwen-mini" / "reference"}/. "$1"
"""


def _job() -> dict:
    return yaml.safe_load(JOB.read_text())["jobs"]["q9diff"]


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


class Runner:
    """One job's steps on this machine, as a GitHub runner takes them: a workspace, the job's env, a
    step summary file, each `run` by `bash --noprofile --norc -eo pipefail`, each `uses` simulated."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.workspace = tmp, tmp / "workspace"
        self.summary = tmp / "summary.md"
        self.uploaded: list[Path] = []
        self.env = {**os.environ, **env, "GITHUB_WORKSPACE": str(self.workspace)}
        self.env["GITHUB_STEP_SUMMARY"] = str(self.summary)
        self.failed = False

    def _with(self, step: dict) -> dict:
        return {k: _EXPR.sub(lambda m: self.env[m.group(1)], str(v)) for k, v in step.get("with", {}).items()}

    def uses(self, step: dict) -> None:
        action, given = step["uses"].split("@")[0], self._with(step)
        if action == "actions/checkout":  # a clone of the repository named (the user's own without one)
            origin = self.tmp / "github" / given.get("repository", "your-org/your-build")
            where = self.workspace / given.get("path", "")
            where.parent.mkdir(parents=True, exist_ok=True)
            _git("clone", "-q", str(origin), str(where), cwd=self.tmp)
        elif action == "actions/setup-python":  # a fresh Python of that version first on PATH
            venv = self.tmp / "python"
            subprocess.run(
                [f"python{given['python-version']}", "-m", "venv", str(venv)], check=True, timeout=300
            )
            # q9diff's dependencies from this test's environment, so pip finds them installed and installs
            # only q9diff: the step's command is run as written, with no download from an index
            site = next(venv.glob("lib/python*/site-packages"))
            (site / "ci-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
            self.env["PATH"] = f"{venv / 'bin'}:{self.env['PATH']}"
        elif action == "actions/upload-artifact":
            found = self.workspace / given["path"]
            assert found.is_file() or given.get("if-no-files-found") == "ignore", found
            self.uploaded += [found] if found.is_file() else []
        else:
            raise AssertionError(f"{step['uses']}: an action this test does not simulate")

    def run(self, step: dict) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=self.workspace, env=self.env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip

    def steps(self, steps: list[dict]) -> list[subprocess.CompletedProcess]:
        done = []
        for step in steps:
            if self.failed and step.get("if") != "always()":
                continue
            if "uses" in step:
                self.uses(step)
                continue
            r = self.run(step)
            done.append(r)
            self.failed = self.failed or r.returncode != 0
        return done


def _repositories(tmp: Path, q9diff_repository: str) -> None:
    """The two repositories the job checks out: the user's (its build.sh) and q9diff's (this checkout)."""
    user = tmp / "github" / "your-org" / "your-build"
    user.mkdir(parents=True)
    (user / "build.sh").write_text(BUILD_SH)
    (user / "build.sh").chmod(0o755)
    _git("init", "-q", cwd=user)
    _git("add", "build.sh", cwd=user)
    _git("-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "commit", "-qm", "build", cwd=user)
    q9 = tmp / "github" / q9diff_repository
    q9.parent.mkdir(parents=True, exist_ok=True)
    _git("clone", "-q", "--bare", str(ROOT), str(q9), cwd=tmp)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Runner:
    """Every step up to and including `install q9diff`, once: what the three runs below share."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed (the checkouts are git clones): apt-get install git")
    tmp = tmp_path_factory.mktemp("ci")
    job = _job()
    _repositories(tmp, job["env"]["Q9DIFF_REPOSITORY"])
    runner = Runner(tmp, {k: str(v) for k, v in job["env"].items()})
    runner.workspace.mkdir()
    names = [s.get("name", s.get("uses")) for s in job["steps"]]
    done = runner.steps(job["steps"][: names.index("install q9diff") + 1])
    assert not runner.failed, "\n".join(r.stdout + r.stderr for r in done)[-3000:]
    return runner


def _gate(installed: Runner, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess, Runner]:
    """The job's steps after the install, in a copy of the installed workspace, with `env` set."""
    runner = Runner(tmp, {**{k: v for k, v in installed.env.items() if k != "GITHUB_STEP_SUMMARY"}, **env})
    shutil.copytree(installed.workspace, runner.workspace, symlinks=True)
    steps = _job()["steps"]
    names = [s.get("name", s.get("uses")) for s in steps]
    (gate,) = runner.steps(steps[names.index("install q9diff") + 1 :])
    return gate, runner


def test_the_job_installs_q9diff_from_its_sources_as_written(installed):
    q9diff = shutil.which("q9diff", path=installed.env["PATH"])
    assert q9diff and Path(q9diff).is_relative_to(installed.tmp / "python")  # the job's own install
    assert (installed.workspace / "build" / "genie_bundle" / "genie_config.json").is_file()  # the build ran
    assert "pip install q9diff" not in JOB.read_text()  # no such package on PyPI
    assert "pip install q9diff" not in (ROOT / "docs" / "ci.md").read_text()


def test_the_gate_passes_a_bundle_that_loads_on_the_runtime_shipped(installed, tmp_path):
    done, runner = _gate(installed, tmp_path, RUNTIME="2.51")
    assert done.returncode == 0, done.stdout + done.stderr
    text = runner.summary.read_text()
    assert text.startswith("## Loads on QCS9100 and QAIRT 2.51: no error")
    assert runner.uploaded == [runner.workspace / "q9diff.html"]
    assert runner.uploaded[0].read_text().startswith("<!doctype html>")


def test_the_gate_fails_a_bundle_newer_than_the_runtime_shipped(installed, tmp_path):
    done, runner = _gate(installed, tmp_path, RUNTIME="2.48")
    assert done.returncode == 1, done.stdout + done.stderr
    text = runner.summary.read_text()
    assert text.startswith("## Will not load on QCS9100 and QAIRT 2.48: 1 error") and "load.runtime" in text
    assert runner.uploaded == [runner.workspace / "q9diff.html"]  # the page is uploaded all the same


def test_a_bundle_q9diff_cannot_read_fails_the_gate_and_says_why_in_the_summary(installed, tmp_path):
    """issue 45: on exit 2 the job summary stayed empty."""
    done, runner = _gate(installed, tmp_path, BUNDLE="build/no_bundle_here")
    assert done.returncode == 2, done.stdout + done.stderr
    text = runner.summary.read_text()
    assert text.startswith(
        "## q9diff could not check build/no_bundle_here\n\n```\nq9diff: error: build/no_bundle"
    )
    assert runner.uploaded == []
