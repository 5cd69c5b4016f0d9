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
    if name == "qairt":
        from q9diff.backends.qairt import QairtBackend

        return QairtBackend()
    if name == "qnn-cli":
        from q9diff.backends.qnn_cli import QnnCliBackend

        return QnnCliBackend()
    raise BackendUnavailable(f"unknown compile backend {name!r}; choose ort-qnn, qairt or qnn-cli")
