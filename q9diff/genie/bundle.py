"""A Genie bundle as the device sees it: the dialog config, the ctx-bins it names (opened lazily), the
extension file and the tokenizer, every path resolved inside the bundle folder.

Paths in a config are requests, never permissions: each is read as its tools write it (`\\` or `/`,
relative to the config's folder; a device path by its file name beside the config) and refused when it
leads outside the bundle folder. A file that is missing, refused or unreadable is recorded with the
reason; only a bundle whose config cannot be read at all is a `BundleError` (one line naming the file).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from q9diff import jsonc
from q9diff.errors import FormatError, Q9Error
from q9diff.genie.config import (
    CONFIG_NAME,
    PLACEHOLDER,
    ConfigError,
    FileRef,
    GenieConfig,
    find_config,
    load,
    lookup,
)
from q9diff.genie.layout import split_of
from q9diff.guard import is_file, load_json, read_text
from q9diff.read.binary import ContextBinary, Graph
from q9diff.read.openers import Part, notes, open_binary, open_part


class BundleError(Q9Error, ValueError):
    """The bundle cannot be read at all; the message is one line naming the file."""


@dataclass
class CtxBin:
    """One ctx-bin: its reference in the config and, when readable, the binary."""

    index: int
    ref: FileRef
    binary: ContextBinary | None = None
    problem: str | None = None  # not a context binary q9diff can read

    @property
    def label(self) -> str:
        return self.ref.label


@dataclass(frozen=True)
class SplitGraph:
    """A graph of a part as Genie sees it: AR and CL from `attention_mask`, the split from its name."""

    part: CtxBin
    graph: Graph
    ar: int | None
    cl: int | None
    split: tuple[int, int] | None  # (i, n) from the `_i_of_n` suffix

    def tensor(self, name: str, outputs: bool = False):
        for t in self.graph.outputs if outputs else self.graph.inputs:
            if t.name == name:
                return t
        return None


@dataclass
class Bundle:
    root: Path  # the bundle folder: nothing outside it is read
    given: Path  # what the user named
    config_path: Path | None
    config: dict | None
    config_text: str | None
    parts: list[CtxBin] = field(default_factory=list)
    extension: FileRef | None = None
    extension_text: str | None = None
    extension_doc: object = None  # parsed, or None
    extension_problem: str | None = None
    tokenizer: FileRef | None = None
    tokenizer_size: int | None = None
    tokenizer_problem: str | None = None
    notes: list[str] = field(default_factory=list)
    genie: GenieConfig | None = None  # the config as the one reader read it
    file: Part | None = None  # one file given, as the input was resolved: its contexts, no bundle

    @property
    def single_file(self) -> bool:
        """One file was given (a context binary, a container or one context of one), not a bundle."""
        return self.file is not None

    @property
    def name(self) -> str:
        if self.single_file:
            return str(self.given)
        return self.config_path.name if self.config_path else str(self.folder)

    @property
    def folder(self) -> Path:
        """The bundle folder as the user named it (a report carries no path of the machine beyond it)."""
        if self.config_path is not None:
            return self.config_path.parent
        return self.given.parent if self.single_file else self.given

    def files(self) -> list[Path]:
        """The files q9diff read for this bundle (config, ctx-bins, extension file, tokenizer), resolved."""
        refs = [p.ref for p in self.parts] + [r for r in (self.extension, self.tokenizer) if r is not None]
        return [p for p in (self.config_path, *(r.path for r in refs)) if p is not None]

    def readable_parts(self) -> list[CtxBin]:
        return [p for p in self.parts if p.binary is not None]

    def all_parts_read(self) -> bool:
        return bool(self.parts) and all(p.binary is not None for p in self.parts)

    def graphs(self) -> list[SplitGraph]:
        out = []
        for p in self.readable_parts():
            for g in p.binary.graphs:
                mask = next((t for t in g.inputs if t.name == "attention_mask"), None)
                ar, cl = (
                    (mask.dims[-2], mask.dims[-1])
                    if mask is not None and len(mask.dims) >= 2
                    else (None, None)
                )
                out.append(SplitGraph(p, g, ar, cl, split_of(g.name)))
        return out

    def genie_groups(self) -> dict[tuple[int | None, int | None], list[SplitGraph]]:
        """Graphs grouped by (AR, CL), each group in the order Genie runs its splits: by the `_i_of_n`
        suffix, then names without one sorted as strings (q9diff.runners.genie, measured)."""
        groups: dict[tuple[int | None, int | None], list[SplitGraph]] = {}
        for sg in self.graphs():
            groups.setdefault((sg.ar, sg.cl), []).append(sg)
        for members in groups.values():
            members.sort(key=lambda s: (0, s.split[0], s.graph.name) if s.split else (1, 0, s.graph.name))
        return dict(sorted(groups.items(), key=lambda kv: (-(kv[0][0] or 0), kv[0][1] or 0)))

    def get(self, *keys: str | int) -> object:
        """The config value at `keys` (dialog first), or None when any step is absent or not a container."""
        return lookup(self.config, *keys)

    def engines(self) -> list[tuple[str, dict]]:
        engine = self.get("dialog", "engine")
        if isinstance(engine, list):
            return [(f"dialog.engine[{i}]", e) for i, e in enumerate(engine) if isinstance(e, dict)]
        return [("dialog.engine", engine)] if isinstance(engine, dict) else []

    def backend(self) -> tuple[str, dict]:
        for where, e in self.engines():
            if isinstance(e.get("backend"), dict):
                return f"{where}.backend", e["backend"]
        return "dialog.engine.backend", {}


def read_bundle(given: Path, file: Part | None = None, contexts: list[Part] = ()) -> Bundle:
    """Read what the bundle names; BundleError only when its config (or its folder) cannot be read. One
    file given instead of a bundle comes resolved (q9diff.inputs): where it points (`file`) and its
    context binaries (`contexts`), each read as a part."""
    given = Path(given)
    if file is not None:  # one binary, or a container's contexts
        b = Bundle(given.parent.resolve(), given, None, None, None, file=file)
        b.notes.append(f"no {CONFIG_NAME}: {given.name} alone was checked, not a whole bundle's layout")
        for i, c in enumerate(contexts):
            b.parts.append(_open_part(i, FileRef(c.path.name, str(c.path), path=c.path), at=c))
        b.notes += _container_notes(file)
        return b
    try:
        config_path, root = find_config(given)
        cfg = None if config_path is None else load(config_path, root, given)
    except ConfigError as exc:
        raise BundleError(str(exc)) from None
    if cfg is None:
        bins = sorted(given.glob("*.bin"))
        if not bins:
            raise BundleError(f"{given}: no {CONFIG_NAME} and no *.bin: not a Genie bundle")
        b = Bundle(root.resolve(), given, None, None, None)
        b.notes.append(f"no {CONFIG_NAME}: only the {len(bins)} *.bin files were checked, in name order")
        above = b.root.parent / CONFIG_NAME
        if above.is_file():  # said, never read: the folder above is not the one named
            b.notes.append(f"{above} is not read; to check the bundle with its config, give its folder")
        for i, p in enumerate(bins):
            b.parts.append(_open_part(i, _beside(b, p)))
        return b
    b = Bundle(cfg.root, given, cfg.path, cfg.data, cfg.text, genie=cfg)
    b.notes += cfg.notes
    opened: dict[Path, CtxBin] = {}
    b.parts = [_open_part(i, ref, opened) for i, ref in enumerate(cfg.ctx_bins)]
    if cfg.extension is not None:
        b.extension = cfg.extension
        _read_extension(b)
    if cfg.tokenizer is not None:
        b.tokenizer = cfg.tokenizer
        _read_tokenizer(b)
    return b


def _container_notes(file: Part) -> list[str]:
    """What a container's opener says beside its contexts (a .pte's other backends, skipped); nothing
    when it cannot be read (its part says why)."""
    try:
        return notes(file)
    except (FormatError, ValueError, OSError):
        return []


def _beside(b: Bundle, path: Path) -> FileRef:
    """A *.bin of a folder without a config, kept inside that folder."""
    ref = FileRef(path.name, f"{b.given}/{path.name}")
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(b.root):
        ref.problem, ref.kind = (
            f"{path.name} leads to {real}, outside the folder {b.root}; not read",
            "outside",
        )
    elif not is_file(real):
        ref.problem, ref.kind = f"{path.name}: no such file", "missing"
    else:
        ref.path = real
    return ref


def _open_part(
    index: int, ref: FileRef, opened: dict[Path, CtxBin] | None = None, at: Part | None = None
) -> CtxBin:
    """Open the ctx-bin (`at`, where a resolved input says it is; else the file the config names) and walk
    what the checks read (records, each graph's options and ops), so that a damaged part is one recorded
    problem here, not an exception in the middle of a check. A file named again (in `opened`, by resolved
    path) is the same binary, opened and walked once: a config listing one ctx-bin 3000 times must not
    cost 3000 mappings and walks."""
    part = CtxBin(index, ref)
    if ref.path is None:
        return part
    seen = opened.get(ref.path) if opened is not None else None
    if seen is not None:
        part.binary, part.problem = seen.binary, seen.problem
        return part
    if opened is not None:
        opened[ref.path] = part
    try:
        cb = open_binary(ref.path) if at is None else open_part(at)
        for i in range(len(cb.graphs)):
            cb.options(i)  # walks the record directory and this graph's pickle
        part.binary = cb
    except FormatError as exc:
        part.problem = str(exc)
    except (ValueError, IndexError, OSError, MemoryError, struct.error) as exc:
        part.problem = f"{ref.path}: not a context binary q9diff can read ({type(exc).__name__}: {exc})"
    return part


def _read_extension(b: Bundle) -> None:
    ref = b.extension
    if ref.path is None:
        template = None
        if ref.kind == "missing" and b.config_path is not None and isinstance(ref.request, str):
            beside = b.config_path.parent / (PurePosixPath(ref.request.replace("\\", "/")).name + ".template")
            template = beside if is_file(beside) else None
        b.extension_problem = ref.problem
        if template is not None:
            try:
                text = read_text(template, "a template", BundleError, jsonc.MAX_TEXT)
                holes = sorted(set(PLACEHOLDER.findall(text)))
            except BundleError:
                holes = []
            b.extension_problem += f"; {template.name} beside the config is its template" + (
                f", with placeholders {', '.join(holes)} to fill" if holes else ""
            )
        return
    try:
        b.extension_text = read_text(ref.path, "a backend extension config", BundleError, jsonc.MAX_TEXT)
        b.extension_doc = jsonc.loads(b.extension_text)
    except BundleError as exc:
        b.extension_problem = str(exc)
    except (jsonc.JsoncError, RecursionError) as exc:
        found = PLACEHOLDER.findall(b.extension_text or "")
        extra = f" (it holds template placeholders {', '.join(dict.fromkeys(found))})" if found else ""
        b.extension_problem = f"{ref.path}: not JSON{extra}: {exc}"
    if b.extension_doc is not None and not isinstance(b.extension_doc, dict):
        b.extension_problem, b.extension_doc = f"{ref.path}: not a JSON object", None


def _read_tokenizer(b: Bundle) -> None:
    """The vocabulary size a HuggingFace tokenizer.json defines: the highest id of its model vocabulary
    and added tokens, plus one. Unknown (with the reason) when the file is not one."""
    ref = b.tokenizer
    if ref.path is None:
        b.tokenizer_problem = ref.problem
        return
    try:
        doc = load_json(ref.path, "a tokenizer.json", BundleError)
    except BundleError as exc:
        b.tokenizer_problem = str(exc)
        return
    vocab = (
        doc.get("model", {}).get("vocab")
        if isinstance(doc, dict) and isinstance(doc.get("model"), dict)
        else None
    )
    ids: list[int] = []
    if isinstance(vocab, dict):
        ids = [v for v in vocab.values() if isinstance(v, int)]
    elif isinstance(vocab, list):  # Unigram: a list of [piece, score], ids are positions
        ids = [len(vocab) - 1] if vocab else []
    added = doc.get("added_tokens") if isinstance(doc, dict) else None
    for t in added if isinstance(added, list) else []:
        if isinstance(t, dict) and isinstance(t.get("id"), int):
            ids.append(t["id"])
    if not ids:
        b.tokenizer_problem = f"{ref.path}: no model.vocab q9diff can count"
        return
    b.tokenizer_size = max(ids) + 1
