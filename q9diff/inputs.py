"""The paths a user gives q9diff, checked before any work: each exists, a set holds parts, a file given
against a set has its counterpart there, and a context opens. What a path *is* is decided by the one
registry of kinds (q9diff.kinds), and what a file carries by its opener (q9diff.read.openers); this
module turns their failures into the one-line errors a user reads (`InputError`, or the opener's own
`FormatError`), for the command line and the Python API alike.
"""

from __future__ import annotations

import os
from pathlib import Path

from q9diff.errors import FormatError, InputError


def read_errors() -> tuple[type[Exception], ...]:
    """What a reader raises on bytes it cannot make sense of."""
    import struct

    return (ValueError, IndexError, struct.error)


def nameable(path: str | os.PathLike) -> Path:
    """`path` as a Path, or InputError when it is no name the system can look up: a part of it over 255
    bytes or the whole over 4096 (os.stat raises "File name too long"), a NUL, a lone surrogate."""
    from q9diff.guard import nameable as can_name
    from q9diff.read.openers import split_name

    # FILE#NAME names a context of FILE, however long NAME is: only FILE is looked up
    if not can_name(path) and not (can_name(split_name(path)[0]) and split_name(path)[1] is not None):
        text = repr(str(path))
        shown = text if len(text) <= 100 else text[:99] + "…"
        raise InputError(
            f"{shown}: not a path the system can look up (a part of it over 255 bytes, the whole over 4096,"
            " or a NUL)"
        )
    return Path(path)


def exists(path: Path) -> None:
    """The path exists, or names one context of a file that does (`FILE#NAME`, as sets list them)."""
    from q9diff.read.openers import split_name

    nameable(path)
    if split_name(path)[1] is not None or os.path.lexists(path):
        return
    raise InputError(f"{path}: no such file or directory")


def is_set(path: Path) -> bool:
    """A folder of parts, a Genie bundle, or one file carrying several contexts (EPContext, LiteRT)."""
    from q9diff.kinds import is_set as kind_is_set

    return kind_is_set(path)


def parts(path: Path) -> list[Path]:
    """The context binaries of a set in part order; InputError when it holds none q9diff reads."""
    from q9diff.genie.config import ConfigError
    from q9diff.kinds import parts_of

    try:
        found = parts_of(path)
    except (ConfigError, FormatError):
        raise
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise InputError(f"{path}: not a folder of parts or a Genie bundle q9diff can read ({exc})") from exc
    if not found:
        from q9diff.genie.config import dialog_configs

        configs = dialog_configs(path) if os.path.isdir(path) else []
        if len(configs) > 1:
            names = ", ".join(p.name for p in configs)
            raise InputError(
                f"{path}: several Genie configs ({names}) and no *.bin in it: give the config file itself"
            )
        raise InputError(f"{path}: no context binaries in it (*.bin, or a Genie config naming ctx-bins)")
    return found


def check(path: Path) -> None:
    """`path` exists and, when it is a set, holds parts."""
    exists(path)
    if is_set(path):
        parts(path)


def _container(path: Path) -> bool:
    """A container file (.onnx, .tflite, .pte) given whole, however many contexts it holds."""
    from q9diff.read.openers import kind

    return os.path.isfile(path) and kind(path) is not None


def parts_or_self(path: Path) -> list[Path]:
    """The parts of a set, or the one file itself."""
    return parts(path) if is_set(path) else [path]


def open_context(path: str | os.PathLike):
    """The `ContextBinary` at `path` (`FILE#NAME` for one of several in a container)."""
    from q9diff.read.openers import open_binary

    try:
        return open_binary(path)
    except FormatError:
        raise
    except read_errors() as exc:
        raise InputError(
            f"{path}: not a context binary q9diff can read ({type(exc).__name__}: {exc})"
        ) from exc


def counterpart(candidate: Path, reference: Path) -> tuple[Path, Path, str | None]:
    """Both inputs checked before anything is compared; a file against a set of parts is compared with
    its counterpart part (the same file name), or refused. Returns the two paths to compare and, when a
    counterpart was chosen, the sentence that says so."""
    check(candidate)
    check(reference)
    if is_set(candidate) == is_set(reference) or (_container(candidate) and _container(reference)):
        return candidate, reference, None  # two containers: sets, whichever holds one context only
    file, folder = (candidate, reference) if is_set(reference) else (reference, candidate)
    match = [p for p in parts(folder) if p.name == file.name]
    if not match:
        names = ", ".join(p.name for p in parts(folder))
        raise InputError(
            f"{file} is a file and {folder} a set of parts ({names}), none named {file.name}:"
            " give two files or two folders"
        )
    note = f"comparing {file} with its counterpart {match[0]}"
    return (candidate, match[0], note) if file == candidate else (match[0], reference, note)


EXTENSION_FILE = "htp_backend_ext_config.json"


def toolchain_of(candidate: Path) -> dict:
    """Which toolchain the candidate was built with, as far as its own files say: {"form", "why"}, the
    form a fix leads with (q9diff.present.fixes). An ExecuTorch .pte, an ONNX Runtime EPContext model, a
    folder (or the folder of a file) holding a backend extension config, a q9diff recipe's backend; else
    the qairt Python API, the seed's own toolchain."""
    from q9diff.read.openers import kind, split_name

    p = Path(candidate)
    k = kind(split_name(p)[0])
    if k == ".pte":
        return {"form": "executorch", "why": "the candidate is a .pte"}
    if k == ".onnx":
        return {"form": "ort", "why": "the candidate is an EPContext model"}
    folder = p if os.path.isdir(p) else p.parent
    if (folder / EXTENSION_FILE).is_file():
        return {"form": "ext", "why": "the one beside the candidate"}
    return {"form": "qairt", "why": "no config beside the candidate"}


def which_parts(path: Path) -> str | None:
    """What a folder that is both a folder of parts and a Genie bundle is read as, said: diff and inspect
    read its *.bin, doctor its config's ctx-bins (the qwen-mini layout: AI Hub's weight-shared parts beside
    a Genie bundle of one binary per graph). None for a folder that is one or the other."""
    from q9diff.genie.config import genie_config_of

    p = Path(path)
    if not os.path.isdir(p):
        return None
    config = genie_config_of(p)
    bins = sorted(p.glob("*.bin"))
    if config is None or not bins:
        return None
    return (
        f"{p}: read as its {len(bins)} *.bin parts; its {config.name} names the ctx-bins Genie runs"
        f" (give {p / config.name} to read those; doctor reads the bundle)"
    )
