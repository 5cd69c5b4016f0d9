"""What every compile backend is: its interface, its one error, and how its compile child is run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Protocol

from q9diff.errors import Q9Error
from q9diff.recipes.recipe import Recipe


class BackendUnavailable(Q9Error, RuntimeError):
    """The backend cannot run on this machine; the message says what is missing."""


class CompileBackend(Protocol):
    name: str

    def missing(self) -> str | None:
        """None when usable here, else one sentence naming what is missing."""

    def compile(self, recipe: Recipe, out_dir: Path) -> list[Path]:
        """Build every part of the recipe into out_dir; return the .bin paths in part order."""


def run_compile_child(
    label: str,
    python: str,
    job: Path,
    env: dict[str, str],
    timeout_s: float,
    part: str,
    cwd: Path | None = None,
) -> dict:
    """Run `python -m q9diff.backends.<label> JOB.json` and return its result.json: a compiler crash or
    failure in Qualcomm's libraries ends the child, and comes back here as one line."""
    from q9diff.guard import child_env, python_argv  # start-up: guard

    module = "q9diff.backends." + label.replace("-", "_")
    job = Path(job).resolve()
    try:
        proc = subprocess.run(
            python_argv(module, [str(job)], python),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=child_env(job.parent, env),  # job.parent: the caller's private work folder
            cwd=cwd or job.parent,
        )
    except FileNotFoundError:
        raise BackendUnavailable(f"interpreter {python} not found") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{label}: compiling part {part} took longer than {timeout_s:.0f} s") from None
    result_file = job.with_name("result.json")
    if proc.returncode == 0 and result_file.is_file():
        return json.loads(result_file.read_text())
    if proc.returncode < 0:
        raise RuntimeError(f"{label}: compiler process for part {part} crashed (signal {-proc.returncode})")
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and "LIBNATIVE" not in ln]
    last = lines[-1] if lines else f"exit code {proc.returncode}"
    if "ModuleNotFoundError" in last:
        raise BackendUnavailable(f"{python}: {last}")
    raise RuntimeError(f"{label}: compiling part {part} failed: {last}")
