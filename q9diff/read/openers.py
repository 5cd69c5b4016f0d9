"""Files that carry context binaries: a plain `.bin`, an ONNX Runtime EPContext model (one context per
EPContext node, embedded or named), a LiteRT `.tflite` whose DISPATCH_OP nodes point at QNN bytecode, an
ExecuTorch `.pte` whose QNN delegates' payloads hold them. Each container's reader is a module of its own
(q9diff.read.epcontext, .tflite, .pte), loaded only for a file of its kind; here they become one index.

Each opener finds the bytes through its container's own structure and hands them to `ContextBinary`;
a container with several contexts is a set, like a directory. A context is its position in the container;
it is addressed as `FILE#LABEL`, its name escaped and made unique (q9diff.read.labels), and `FILE#LABEL`
is resolved by the container's index, never looked up in the file system.

A path is told once (`locate`: which file, which context of it, what container the file is) into a
`Part`; everything else here reads a Part, never the path again.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from q9diff.errors import FormatError, InputError
from q9diff.guard import nameable
from q9diff.read.binary import ContextBinary
from q9diff.read.files import identity, mapped
from q9diff.read.labels import label, listed, unique
from q9diff.read.parse import read_errors

# The suffixes of the files that carry contexts (the rest are context binaries themselves).
CONTAINERS = (".onnx", ".tflite", ".pte", ".dlc")
# FlatBuffer file identifiers at offset 4: a .pte or a .tflite is known by its bytes whatever its name
# (a model renamed model.bin is still read as what it is). ExecuTorch's is "ET" and two digits.
_IDENTIFIERS = {b"TFL3": ".tflite"}


def kind(path: str | os.PathLike) -> str | None:
    """The container kind of the file at `path` (".onnx", ".tflite" or ".pte"), None for a context
    binary: its suffix where it names one, else its FlatBuffer file identifier."""
    p = Path(path)
    if p.suffix in CONTAINERS:
        return p.suffix
    try:  # a FIFO or a device is never opened here (a FIFO's open would wait for a writer)
        if not stat.S_ISREG(os.stat(p).st_mode):
            return None
        with open(p, "rb") as f:
            head = f.read(8)
    except (OSError, ValueError):  # ValueError: a NUL in a path given from Python
        return None
    if head[:4] == b"PK\x03\x04":  # a ZIP: a DLC by its first record's name (a context DLC is *_qnn.bin)
        from q9diff.read.dlc import is_dlc  # start-up: read.dlc, with its kind

        return ".dlc" if is_dlc(p) else None
    ident = head[4:8]
    if ident[:2] == b"ET" and ident[2:].isdigit():
        return ".pte"
    return _IDENTIFIERS.get(ident)


def split_name(path: str | os.PathLike) -> tuple[Path, str | None]:
    """`FILE#NAME` as (FILE, NAME), the way sets list a container's contexts; any other path as (path,
    None). After a container, `#NAME` is a context's label, and `FILE#NAME` itself is never looked up (a
    label is no file name: it may be longer than a file name can be); after another file, a file whose own
    name holds the `#` is that file. InputError when what is looked up is no name the system can take: a
    part of it over 255 bytes or the whole over 4096 (os.stat raises "File name too long"), a NUL, a lone
    surrogate."""
    p = Path(path)
    file, hash_, name = p.name.rpartition("#")
    base = p.parent / file if hash_ and file else None
    # a file named with a `#` beside a plain binary is that file
    if base is None or not os.path.isfile(base) or kind(base) is None and os.path.lexists(p):
        base, name = p, None
    if not nameable(base):
        text = repr(str(path))
        shown = text if len(text) <= 100 else text[:99] + "…"
        raise InputError(
            f"{shown}: not a path the system can look up (a part of it over 255 bytes, the whole over 4096,"
            " or a NUL)"
        )
    return base, name


class Part(NamedTuple):  # a named tuple, not a dataclass: every command that reads a file defines it
    """Where one context binary is, as `locate` told it: a file (`label` None), or one context of a
    container file (`label`: its label, or another name its index resolves to one context, as FILE#NAME
    gives it). `container` is the file's container kind (kind()), None for a context binary itself;
    `path` is how reports and sets name it (FILE, or FILE#LABEL)."""

    file: Path
    label: str | None = None
    container: str | None = None

    @property
    def path(self) -> Path:
        return self.file if self.label is None else Path(f"{self.file}#{self.label}")

    def open(self) -> ContextBinary:
        """The context binary (a container given whole must hold one only; its #LABEL else), or the one-line
        error naming it: the opener's FormatError, or InputError for bytes a reader cannot make sense of
        (open_part leaves those to a caller that says them itself, as doctor does)."""
        try:
            return open_part(self)
        except FormatError:
            raise
        except read_errors() as exc:
            raise InputError(
                f"{self.path}: not a context binary q9diff can read ({type(exc).__name__}: {exc})"
            ) from exc

    def size(self) -> int:
        """Its size in bytes, without opening it: a context's within its container, else the file's."""
        if self.label is None or self.container is None:
            return os.stat(self.file).st_size
        index = _index(self.file)
        if self.label not in index.aliases:
            raise FormatError(
                str(self.file), None, f"a context named {self.label!r} (it holds {listed(index.labels)})"
            )
        return index.size(index.aliases[self.label])


def locate(path: str | os.PathLike) -> Part:
    """What the path names, told once: the file (FILE of FILE#NAME), the context it names in it, and the
    file's container kind when it is a file; InputError when it is no name the system can look up."""
    file, label = split_name(path)
    return Part(file, label, kind(file) if os.path.isfile(file) else None)


@dataclass(frozen=True)
class Slice:
    """A context in another file than the container: a cache of the context DLC an EPContext node names
    (its data's offset and size in that file)."""

    file: Path
    offset: int
    size: int


@dataclass(frozen=True)
class _Index:
    """Where a container's contexts are, read once per file: for each distinct context, in file order, its
    label (q9diff.read.labels: its name escaped and made unique) and source (the bytes of an embedded
    EPContext node, the resolved path of a context file, or the (offset, size) of DISPATCH_OP bytecode or
    a .pte's binary), and the names that address one as well (every node's own name where it names one
    context only, a .pte delegate's number).

    Nodes naming the same context file, or DISPATCH_OPs naming the same bytecode, are one context (the
    graphs of one binary; a hostile file repeats it 3000 times): it is listed, opened and compared once.
    Nodes of the same name naming different contexts are as many contexts, each with its own label."""

    path: Path
    entries: tuple[tuple[str, object], ...]  # (label, source)
    aliases: dict[str, int]  # every label, and every name that means one context only -> its entry
    container: object = None  # a .pte's walk (q9diff.read.pte.PteFile): its regions, delegates, notes

    @property
    def labels(self) -> list[str]:
        return [n for n, _ in self.entries]

    def build(self, i: int, given: Path | None = None) -> ContextBinary:
        """The i-th context, named after the path as the user gave it (`given`), not as resolved."""
        shown = self.path if given is None else given
        name, source = self.entries[i]
        if isinstance(source, Path):
            return ContextBinary.open(source)
        if isinstance(source, Slice):
            at = source.offset
            return ContextBinary(mapped(source.file)[at : at + source.size], f"{shown}#{name}")
        if isinstance(source, tuple):
            return ContextBinary(mapped(self.path)[source[0] : source[0] + source[1]], f"{shown}#{name}")
        return ContextBinary(source, f"{shown}#{name}")

    def size(self, i: int) -> int:
        """The i-th context's size in bytes, without opening it."""
        source = self.entries[i][1]
        if isinstance(source, Path):
            return os.stat(source).st_size
        if isinstance(source, Slice):
            return source.size
        return source[1] if isinstance(source, tuple) else len(source)


def _index(p: Path) -> _Index:
    """The container's index, cached for the file as it is now (path, inode, size and mtime): listing
    a set, opening each `FILE#NAME` and diffing them reads the container once, not once per part."""
    return _cached_index(*identity(p))


@lru_cache(maxsize=4)
def _cached_index(path: str, *_stat: int) -> _Index:
    p = Path(path)
    k = kind(p)
    pte = None
    if k == ".pte":  # each container's reader loads with its kind (the others' layouts, onnx, stay out)
        from q9diff.read import pte as walk  # start-up: read.pte

        pte = walk.read(mapped(p, "an ExecuTorch .pte"), str(p))
        found = pte.entries()
    elif k == ".onnx":
        from q9diff.read.epcontext import contexts as found_in  # a container's reader, with its kind

        found = _dlc_caches(found_in(p))
    elif k == ".dlc":
        from q9diff.read.dlc import contexts as found_in  # a container's reader, with its kind

        found = found_in(p)
    else:
        from q9diff.read.tflite import contexts as found_in  # a container's reader, with its kind

        found = found_in(p)
    names: list[str] = []
    sources: list[object] = []
    meant: dict[str, set[int]] = {}  # each name -> the entries it names
    first: dict[object, int] = {}  # a context file or bytecode range -> its entry
    for name, source in found:
        key = source if isinstance(source, (Path, tuple, Slice)) else None
        if key is not None and key in first:
            meant.setdefault(name, set()).add(first[key])
            continue
        if key is not None:
            first[key] = len(sources)
        meant.setdefault(name, set()).add(len(sources))
        names.append(name)
        sources.append(source)
    labels = unique([label(n, f"~{i}") for i, n in enumerate(names)])
    aliases = {n: next(iter(at)) for n, at in meant.items() if len(at) == 1}
    aliases |= {x: i for i, x in enumerate(labels)}  # a label is its context's, whatever a name means
    return _Index(p, tuple(zip(labels, sources)), aliases, pte)


def _dlc_caches(found: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """An EPContext model's contexts with each context file that is a multi-SoC DLC replaced by its caches
    (Slices of the DLC, named after the cache), the DLC read once however many nodes name it."""
    out: list[tuple[str, object]] = []
    seen: set[Path] = set()
    for name, source in found:
        if not isinstance(source, Path) or kind(source) != ".dlc":
            out.append((name, source))
            continue
        if source in seen:
            continue
        seen.add(source)
        from q9diff.read.dlc import contexts as caches  # start-up: read.dlc, with its kind

        out += [(cache, Slice(source, at, size)) for cache, (at, size) in caches(source)]
    return out


def contexts(part: Part) -> list[tuple[str, ContextBinary]]:
    """The context binaries at `part`, once each, with the name that addresses it: the one it names
    (FILE#LABEL), or every one its file carries (the file's own name for a plain binary)."""
    if part.label is not None:
        return [(part.path.name, open_part(part))]
    if part.container is None:
        return [(part.file.name, ContextBinary.open(part.file))]
    index = _index(part.file)
    return [(name, index.build(i, part.file)) for i, (name, _) in enumerate(index.entries)]


def open_part(part: Part) -> ContextBinary:
    """The context at `part`; a container with several contexts needs its label."""
    p, name = part.file, part.label
    if part.container is not None:
        index = _index(p)
        names = index.labels
        if name is not None:
            if name not in index.aliases:
                held = f"{len(names)}: {listed(names)}{_other(index, name)}"
                raise FormatError(str(p), None, f"a context named {name!r} (it holds {held})")
            return index.build(index.aliases[name], p)
        if not names and part.container == ".dlc":
            raise FormatError(
                str(p),
                None,
                "a context DLC (this graph DLC holds no context binary: inspect it, or diff it"
                " with another DLC)",
            )
        if len(names) != 1:
            raise FormatError(
                str(p), None, f"one context binary (it holds {len(names)}: {listed(names)}; diff it as a set)"
            )
        return index.build(0, p)
    if name not in (None, p.name):
        raise FormatError(str(p), None, f"a context named {name!r} (it holds {[p.name]})")
    return ContextBinary.open(p)


def container_parts(part: Part) -> list[Part]:
    """Every context of a container given whole that holds several, as parts (`FILE#LABEL`: addresses
    its index resolves, not names to look up in the file system); [] for any other file."""
    if part.container is None or part.label is not None:
        return []
    labels = _index(part.file).labels
    return [Part(part.file, x, part.container) for x in labels] if len(labels) > 1 else []


def container(part: Part):
    """The walk of the .pte `part` is (or is a context of), read once per file as the contexts are
    (q9diff.read.pte.PteFile: its regions, delegates and compile specs, its notes); None for any other
    file."""
    if part.container != ".pte":
        return None
    return _index(part.file).container


def labels(part: Part) -> dict[object, str]:
    """Each context's label by its source (a .pte's or a .tflite's (offset, size) of the binary), for a
    container's own views (q9diff.compare.container); {} for a file that is no container."""
    if part.container is None:
        return {}
    return {source: name for name, source in _index(part.file).entries if isinstance(source, (tuple, Path))}


@dataclass(frozen=True)
class Coverage:
    """What a diff of a container reads of it: its contexts' bytes (`compared`), where they lie in the
    file (`ranges`: None where the container does not say, an EPContext model's embedded contexts), and
    the file's size; the rest is the container's own (a program, other delegates, an ONNX graph). A plain
    context binary is read whole: `kind` None, `file` the path as given."""

    kind: str | None  # ".pte", ".tflite", ".onnx", "context" for FILE#LABEL, None for a context binary
    file: Path
    size: int
    compared: int
    ranges: tuple[tuple[int, int], ...] | None


def coverage(part: Part) -> Coverage:
    """What a diff reads of the container (or the one context FILE#LABEL) at `part`, or of a plain context
    binary (all of it)."""
    if part.container is None:
        size = part.size()
        return Coverage(None, part.path, size, size, None)
    p, name = part.file, part.label
    index = _index(p)
    size = os.stat(p).st_size
    chosen = range(len(index.entries)) if name is None else [index.aliases.get(name, 0)]
    sources = [index.entries[i][1] for i in chosen]
    compared = sum(index.size(i) for i in chosen if not isinstance(index.entries[i][1], (Path, Slice)))
    within = [s for s in sources if not isinstance(s, (Path, Slice))]
    ranges = tuple(sorted(s for s in within if isinstance(s, tuple)))
    known = all(isinstance(s, tuple) for s in within)
    kind_ = part.container if name is None else "context"
    return Coverage(kind_, p, size, compared, ranges if known else None)


def notes(part: Part) -> list[str]:
    """What a container's opener says beside its contexts (a .pte's delegates of other backends, listed
    and skipped), each line naming the file."""
    pte = container(part)
    return [] if pte is None else [f"{part.file}: {n}" for n in pte.notes]


def _other(index: _Index, name: str) -> str:
    """Why a .pte's delegate named `name` is no context: it is another backend's."""
    from q9diff.read.pte import cut, shown  # start-up: read.pte

    pte = index.container
    for d in pte.delegates if pte is not None else ():
        if not d.is_qnn and name in (str(d.number), d.method):
            return f"; delegate {d.number} of method {shown(d.method)} is {cut(d.backend)}, not QNN"
    return ""


def open_binary(path: str | os.PathLike) -> ContextBinary:
    """Open a context binary, or the one an EPContext model, LiteRT model or ExecuTorch program carries
    (`FILE#NAME` for one of several): for a path no input resolved (a build's own output, a test's)."""
    return open_part(locate(path))
