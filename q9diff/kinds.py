"""What a path given to q9diff is, decided in one place: an ordered registry of kinds, each declaring how it
recognises itself and what its parts are, as diffoscope's comparators do (`recognizes()`).

A single context (a `.bin`, an `.onnx`, `.tflite` or `.pte` carrying one, or `FILE#NAME` naming one of
several) is one part; a set is a folder of `*.bin`, a Genie bundle (its config's ctx-bins, read by the one
reader in q9diff.genie.config), a Genie config file, or a container with several contexts. Each kind reads
the path as `locate` told it (q9diff.read.openers.Part: the file, the context it names, its container
kind) and gives its parts as Parts, so nothing after it tells the path again. q9diff.inputs resolves a path
here once; `doctor` reads whole bundles through q9diff.genie.bundle over the same config reader.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from q9diff.read.openers import Part, container_parts, locate


class Kind(NamedTuple):  # a named tuple, not a dataclass: defined by every command that reads a path
    """A kind of input (a context binary, a folder of parts, a bundle...): how it is told and its parts."""

    name: str
    is_set: bool
    form: str  # "contexts" (a file carrying them, or one of them), "folder", "config", "other"
    recognizes: Callable[[Part], bool]
    parts: Callable[[Part], list[Part]]  # in part order; ConfigError naming the file when unreadable


def _part_key(p: Part):
    from q9diff.genie.layout import file_split  # a folder's parts only: one file given reads no Genie names

    split = file_split(p.file.name)
    return (0, split[0], p.file.name) if split else (1, 0, p.file.name)


def _folder_bins(at: Part) -> list[Part]:
    return sorted((locate(_kept(p, at.file)) for p in at.file.glob("*.bin")), key=_part_key)


def _kept(part: Path, folder: Path) -> Path:
    """A part of a folder, when it stays inside it: a link leading elsewhere is refused unread, in one
    line naming it (as doctor says of a bundle's)."""
    from q9diff.errors import InputError
    from q9diff.guard import inside  # start-up: guard

    if inside(part.name, folder) is None:
        real = os.path.realpath(part)
        raise InputError(
            f"{part}: leads to {real}, outside the folder {folder}; q9diff reads only the parts inside it"
        )
    return part


def _config_parts(at: Part) -> list[Part]:
    from q9diff.genie.config import read  # start-up: only a bundle or a config reads a Genie config

    return [locate(p) for p in read(at.file).ctx_bin_paths()]


def _one(at: Part) -> list[Part]:
    return [at]


def _none(at: Part) -> list[Part]:
    return []


def _folder_of_bins(at: Part) -> bool:
    return os.path.isdir(at.file) and any(at.file.glob("*.bin"))


def _bundle(at: Part) -> bool:
    if not os.path.isdir(at.file):
        return False
    from q9diff.genie.config import genie_config_of  # start-up: only a folder is looked into for a config

    return genie_config_of(at.file) is not None


def _config(at: Part) -> bool:
    return os.path.isfile(at.file) and at.file.suffix == ".json"


# The first kind that recognises a path is what it is: (name, is_set, form, recognizes, parts).
KINDS: tuple[Kind, ...] = (
    # `FILE#NAME`, as inspect and set diffs list the contexts of an EPContext model or a .tflite
    Kind("one context of a container", False, "contexts", lambda at: at.label is not None, _one),
    Kind("folder of parts", True, "folder", _folder_of_bins, _folder_bins),
    Kind("Genie bundle", True, "folder", _bundle, _config_parts),
    Kind("folder", True, "folder", lambda at: os.path.isdir(at.file), _none),  # nothing to compare: said so
    Kind("Genie config", True, "config", _config, _config_parts),
    Kind("container of contexts", True, "contexts", lambda at: bool(container_parts(at)), container_parts),
    Kind("context binary", False, "contexts", lambda at: os.path.isfile(at.file), _one),
    # a device, a FIFO, a link to nothing: its opener says what it is not, in one line
    Kind("not a regular file", False, "other", lambda at: os.path.lexists(at.file), _one),
)


def kind_of(at: Part) -> Kind | None:
    """The kind of the path `at` locates, or None when it does not exist."""
    return next((k for k in KINDS if k.recognizes(at)), None)
