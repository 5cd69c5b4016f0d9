"""The paths a user gives q9diff, resolved once, at the boundary (the command line, the Python API), into an
`Input`: what was given, where it points (q9diff.read.openers.Part: the file, the context it names, the
file's container kind), what it is (the one registry of kinds, q9diff.kinds) and its parts in order. The
layers below read the Input and never tell the path again.

The checks before any work are here too: each path exists, a set holds parts, and a file given against a
set has its counterpart there; the registry's failures become the one-line errors a user reads
(`InputError`), for the command line and the Python API alike. A part is opened by its Part (`Part.open`,
which says a context it cannot read in one line too).
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from q9diff.errors import InputError, Q9Error
from q9diff.kinds import Kind, kind_of
from q9diff.read.openers import Part, locate, split_name

EXTENSION_FILE = "htp_backend_ext_config.json"


class Input:
    """A path as the user gave it (`given`), resolved: where it points (`at`), what it is (`kind`, None
    for a path that does not exist) and its context binaries in part order (`parts`: the one context
    itself for a single one). A plain class, not a dataclass (defined by every command that reads a path,
    it stays cheap to define); what it learns later (its parts, its toolchain) is kept as it is read."""

    def __init__(self, given: Path, at: Part, kind: Kind | None) -> None:
        self.given, self.at, self.kind = given, at, kind

    def __repr__(self) -> str:
        return f"Input({str(self.given)!r}, {self.kind.name if self.kind else 'not found'})"

    @property
    def is_set(self) -> bool:
        """A folder of parts, a Genie bundle or config, or one file carrying several contexts."""
        return self.kind is not None and self.kind.is_set

    @property
    def is_folder(self) -> bool:
        return self.kind is not None and self.kind.form == "folder"

    @property
    def whole_container(self) -> bool:
        """A container file (.onnx, .tflite, .pte) given whole, however many contexts it holds."""
        return self.at.label is None and self.at.container is not None

    @property
    def folder(self) -> Path:
        """The folder its files sit in: the one given, or the file's (a fix's config is looked for there)."""
        return self.given if self.is_folder else self.at.file.parent

    @property
    def name(self) -> str:
        return self.given.name

    @cached_property
    def toolchain(self) -> dict:
        """Which toolchain it was built with, as far as its own files say: {"form", "why"}, the form a fix
        leads with (q9diff.compare.toolchains). An ExecuTorch .pte, an ONNX Runtime EPContext model, a
        folder (or the folder of a file) holding a backend extension config; else the qairt Python API,
        the seed's own toolchain."""
        if self.at.container == ".pte":
            return {"form": "executorch", "why": "the candidate is a .pte"}
        if self.at.container == ".onnx":
            return {"form": "ort", "why": "the candidate is an EPContext model"}
        if (self.folder / EXTENSION_FILE).is_file():
            return {"form": "ext", "why": "the one beside the candidate"}
        return {"form": "qairt", "why": "no config beside the candidate"}

    @cached_property
    def fix_config(self) -> Path | None:
        """The file `q9diff suggest --apply` edits for it: the extension config its toolchain is, else a
        q9diff recipe beside it; None where neither is."""
        if self.toolchain["form"] == "ext":
            return self.folder / EXTENSION_FILE
        recipe = self.folder / "recipe.json"
        return recipe if recipe.is_file() else None

    @cached_property
    def read_as(self) -> str | None:
        """What a folder that is both a folder of parts and a Genie bundle is read as, said: diff and
        inspect read its *.bin, doctor its config's ctx-bins (the qwen-mini layout: AI Hub's weight-shared
        parts beside a Genie bundle of one binary per graph). None for anything else."""
        if self.kind is None or self.kind.name != "folder of parts":
            return None
        from q9diff.genie.config import genie_config_of  # start-up: a folder of parts' only

        config = genie_config_of(self.given)
        if config is None:
            return None
        p = self.given
        return (
            f"{p}: read as its {len(self.parts)} *.bin parts; its {config.name} names the ctx-bins Genie"
            f" runs (give {p / config.name} to read those; doctor reads the bundle)"
        )

    @cached_property
    def parts(self) -> tuple[Part, ...]:
        """The context binaries in part order; InputError when a set holds none q9diff reads."""
        if not self.is_set:
            return (self.at,)
        try:
            found = self.kind.parts(self.at)
        except Q9Error:  # a config's or an opener's own line (ConfigError, FormatError)
            raise
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            raise InputError(
                f"{self.given}: not a folder of parts or a Genie bundle q9diff can read ({exc})"
            ) from exc
        if not found:
            from q9diff.genie.config import dialog_configs  # start-up: read for an empty folder only

            configs = dialog_configs(self.given) if self.is_folder else []
            if len(configs) > 1:
                names = ", ".join(p.name for p in configs)
                raise InputError(
                    f"{self.given}: several Genie configs ({names}) and no *.bin in it: give the config file"
                    " itself"
                )
            raise InputError(
                f"{self.given}: no context binaries in it (*.bin, or a Genie config naming ctx-bins)"
            )
        return tuple(found)


def nameable(path: str | os.PathLike) -> Path:
    """`path` as a Path, or InputError when it is no name the system can look up (see
    q9diff.read.openers.split_name: FILE#NAME names a context of FILE, however long NAME is, and only FILE
    is looked up)."""
    split_name(path)
    return Path(path)


def given(path: str | os.PathLike) -> Input:
    """What `path` is, as far as it is anything: nothing is checked but that it is a name (a doctor reads
    what it can of a bundle and says the rest itself)."""
    at = locate(path)
    return Input(Path(path), at, kind_of(at))


def existing(path: str | os.PathLike) -> Input:
    """What `path` is, once it is checked to exist (or to name one context of a file that does,
    `FILE#NAME`, as sets list them)."""
    found = given(path)
    if found.kind is None:
        raise InputError(f"{found.given}: no such file or directory")
    return found


def resolve(path: str | os.PathLike) -> Input:
    """`path` resolved and checked before any work: it exists, and a set holds parts."""
    return resolved(path)[0]


def resolved(*paths: str | os.PathLike | Input) -> list[Input]:
    """Several paths resolved and checked in order (see resolve), each first located, which checks it is a
    name (so a bad name is said before a missing file, whichever comes first); an Input given is resolved
    already."""
    ats = [p.at if isinstance(p, Input) else locate(p) for p in paths]
    found = [p if isinstance(p, Input) else Input(Path(p), at, kind_of(at)) for p, at in zip(paths, ats)]
    for f in found:
        if f.kind is None:
            raise InputError(f"{f.given}: no such file or directory")
        if f.is_set:
            f.parts  # noqa: B018 (the set's parts read now: a set of none is refused before any work)
    return found


def pair(
    candidate: str | os.PathLike | Input, reference: str | os.PathLike | Input
) -> tuple[Input, Input, str | None]:
    """The two inputs of a comparison, resolved and checked before anything is compared; a file against a
    set of parts is compared with its counterpart part (the same file name), or refused. Returns the two
    inputs to compare and, when a counterpart was chosen, the sentence that says so."""
    a, b = resolved(candidate, reference)
    if a.is_set == b.is_set or (a.whole_container and b.whole_container):
        return a, b, None  # two containers: sets, whichever holds one context only
    file, folder = (a, b) if b.is_set else (b, a)
    match = [p for p in folder.parts if p.path.name == file.name]
    if not match:
        names = ", ".join(p.path.name for p in folder.parts)
        raise InputError(
            f"{file.given} is a file and {folder.given} a set of parts ({names}), none named {file.name}:"
            " give two files or two folders"
        )
    chosen = Input(match[0].path, match[0], kind_of(match[0]))
    note = f"comparing {file.given} with its counterpart {chosen.given}"
    return (a, chosen, note) if file is a else (chosen, b, note)
