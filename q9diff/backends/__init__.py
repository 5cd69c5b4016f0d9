"""Compile and run backends, each behind one small interface and chosen by name."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Protocol

from q9diff.recipe import Recipe


class BackendUnavailable(RuntimeError):
    """The backend cannot run on this machine; the message says what is missing."""


class CompileBackend(Protocol):
    name: str

    def missing(self) -> str | None:
        """None when usable here, else one sentence naming what is missing."""

    def compile(self, recipe: Recipe, out_dir: Path) -> list[Path]:
        """Build every part of the recipe into out_dir; return the .bin paths in part order."""


def compile_backend(name: str) -> CompileBackend:
    if name == "ort-qnn":
        from q9diff.backends.ort_qnn import OrtQnnBackend

        return OrtQnnBackend()
    if name == "qairt":
        from q9diff.backends.qairt import QairtBackend

        return QairtBackend()
    if name == "qnn-cli":
        from q9diff.backends.qnn_cli import QnnCliBackend

        return QnnCliBackend()
    raise BackendUnavailable(f"unknown compile backend {name!r}; choose ort-qnn, qairt or qnn-cli")


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def build_key(recipe: Recipe) -> str:
    """Everything that determines a build's bytes (the compiler is deterministic): the recipe's settings,
    parts and graphs, the source models' bytes and the QAIRT version."""
    from q9diff.backends.ort_qnn import _our_qairt

    data = {k: v for k, v in recipe.to_dict().items() if k != "notes"}
    models = [_file_digest(recipe.model_path(g)) for p in recipe.parts for g in p.graphs]
    text = json.dumps([data, models, recipe.qairt_version or _our_qairt()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_compile(recipe: Recipe, home: Path) -> tuple[Path, bool]:
    """`recipe` built into `home/<build_key>` unless it is there already; (that folder, was it cached).
    Used by the runners' unshared rebuilds and by `steps`."""
    from q9diff.recipe import output_path

    out = home / build_key(recipe)
    if all(output_path(out, p).is_file() for p in recipe.parts):
        return out, True
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=home))
    try:
        compile_backend(recipe.backend).compile(recipe, work)
        try:
            os.rename(work, out)
        except OSError:  # another run finished first; its bytes are the same
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out, False


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
    from q9diff.guard import child_env, python_argv

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
