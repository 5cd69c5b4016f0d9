"""Compile and run backends, each behind one small interface and chosen by name."""

from __future__ import annotations

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
    if name in ("qairt", "qnn-cli"):
        raise BackendUnavailable(
            f"the {name} compile backend is not built yet; use --backend ort-qnn"
            " (onnxruntime-qnn, Linux x86_64, Python 3.11)"
        )
    raise BackendUnavailable(f"unknown compile backend {name!r}; choose ort-qnn, qairt or qnn-cli")
