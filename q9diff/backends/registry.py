"""The compile backends by name, and the build cache keyed by everything that determines a build's bytes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from q9diff.backends.base import BackendUnavailable, CompileBackend
from q9diff.recipes.recipe import Recipe, RecipeError, output_path


def compile_backend(name: str) -> CompileBackend:
    if name == "ort-qnn":
        from q9diff.backends.ort_qnn import OrtQnnBackend  # start-up: backends.ort_qnn

        return OrtQnnBackend()
    if name == "qairt":
        from q9diff.backends.qairt import QairtBackend  # start-up: backends.qairt

        return QairtBackend()
    if name == "qnn-cli":
        from q9diff.backends.qnn_cli import QnnCliBackend  # start-up: backends.qnn_cli

        return QnnCliBackend()
    raise BackendUnavailable(f"unknown compile backend {name!r}; choose ort-qnn, qairt or qnn-cli")


def _file_digest(path: Path) -> str:
    from q9diff.guard import digest  # start-up: guard

    return digest(path, "a recipe's source model", RecipeError)


def build_key(recipe: Recipe) -> str:
    """Everything that determines a build's bytes (the compiler is deterministic): the recipe's settings,
    parts and graphs, the source models' bytes and the QAIRT version (not the notes, nor made_with: what
    an earlier build was made with)."""
    from q9diff.backends.ort_qnn import our_qairt  # start-up: backends.ort_qnn

    data = {k: v for k, v in recipe.to_dict().items() if k not in ("notes", "made_with")}
    models = [_file_digest(recipe.model_path(g)) for p in recipe.parts for g in p.graphs]
    text = json.dumps([data, models, recipe.qairt_version or our_qairt()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_compile(recipe: Recipe, home: Path) -> tuple[Path, bool]:
    """`recipe` built into `home/<build_key>` unless it is there already; (that folder, was it cached).
    Used by the runners' unshared rebuilds and by `steps`."""
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
