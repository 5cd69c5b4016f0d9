"""What a path given to q9diff is, decided in one place: an ordered registry of kinds, each declaring how it
recognises itself and what its parts are, as diffoscope's comparators do (`recognizes()`).

A single context (a `.bin`, an `.onnx`, `.tflite` or `.pte` carrying one, or `FILE#NAME` naming one of
several) is one part; a set is a folder of `*.bin`, a Genie bundle (its config's ctx-bins, read by the one
reader in q9diff.genie.config), a Genie config file, or a container with several contexts. `diff`, `verify`
and the CLI ask here; `doctor` reads whole bundles through q9diff.genie.bundle over the same config reader.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from q9diff.genie import config as genie_config
from q9diff.genie.layout import file_split
from q9diff.read.openers import part_paths, split_name


@dataclass(frozen=True)
class Kind:
    """A kind of input (a context binary, a folder of parts, a bundle...): how it is told and its parts."""

    name: str
    is_set: bool
    recognizes: Callable[[Path], bool]
    parts: Callable[[Path], list[Path]]  # in part order; ConfigError naming the file when unreadable


def _part_key(p: Path):
    split = file_split(p.name)
    return (0, split[0], p.name) if split else (1, 0, p.name)


def _folder_bins(path: Path) -> list[Path]:
    return sorted(path.glob("*.bin"), key=_part_key)


def _config_parts(path: Path) -> list[Path]:
    return genie_config.read(path).ctx_bin_paths()


def _one_of_container(path: Path) -> bool:
    """`FILE#NAME`, as inspect and set diffs list the contexts of an EPContext model or a .tflite."""
    file, name = split_name(path)
    return name is not None and os.path.isfile(file)


# The first kind that recognises a path is what it is.
KINDS: tuple[Kind, ...] = (
    Kind("one context of a container", False, _one_of_container, lambda p: [p]),
    Kind("folder of parts", True, lambda p: os.path.isdir(p) and any(p.glob("*.bin")), _folder_bins),
    Kind(
        "Genie bundle",
        True,
        lambda p: os.path.isdir(p) and genie_config.genie_config_of(p) is not None,
        _config_parts,
    ),
    Kind("folder", True, os.path.isdir, lambda p: []),  # nothing to compare: said by the caller
    Kind("Genie config", True, lambda p: os.path.isfile(p) and p.suffix == ".json", _config_parts),
    Kind("container of contexts", True, lambda p: bool(part_paths(p)), part_paths),
    Kind("context binary", False, os.path.isfile, lambda p: [p]),
)


def kind_of(path: Path) -> Kind | None:
    """The kind of `path`, or None when it is nothing q9diff reads (it does not exist)."""
    path = Path(path)
    return next((k for k in KINDS if k.recognizes(path)), None)


def is_set(path: Path) -> bool:
    """A folder of parts, a Genie bundle or config, or one file carrying several contexts."""
    k = kind_of(path)
    return k is not None and k.is_set


def parts_of(path: Path) -> list[Path]:
    """The context binaries of `path` in part order (`FILE#NAME` for the contexts of a container)."""
    k = kind_of(path)
    return [] if k is None else k.parts(Path(path))
