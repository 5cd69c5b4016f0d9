"""A Genie bundle as the device sees it: the dialog config, the ctx-bins it names (opened lazily), the
extension file and the tokenizer, every path resolved inside the bundle folder.

Paths in a config are requests, never permissions: each is read as its tools write it (`\\` or `/`,
relative to the config's folder; a device path by its file name beside the config) and refused when it
leads outside the bundle folder. A file that is missing, refused or unreadable is recorded with the
reason; only a bundle whose config cannot be read at all is a `BundleError` (one line naming the file).
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from construct import ConstructError

from q9diff import jsonc
from q9diff.binary import ContextBinary, Graph, open_binary
from q9diff.errors import FormatError
from q9diff.guard import is_file, load_json, nameable, read_text

CONFIG_NAME = "genie_config.json"
CTX_BINS_KEYS = ("ctx-bins", "fcb")  # Genie's binary engine lists its context binaries under these
PLACEHOLDER = re.compile(r"<[^<>]*>")  # `<TODO>`, `<soc_model>` in Qualcomm's templates
MAX_CTX_BINS = 256  # real bundles list 1-32 splits; a config listing thousands is refused, not walked
SPLIT_SUFFIX = re.compile(r"_(\d+)_of_(\d+)$")  # AI Hub's `{prompt|token}_ar{N}_cl{CTX}_{i}_of_{n}`


class BundleError(ValueError):
    """The bundle cannot be read at all; the message is one line naming the file."""


@dataclass
class FileRef:
    """A file the config names: what it says, where it says it, and what q9diff found."""

    request: object  # the value as written
    where: str  # `genie_config.json: dialog.engine.model.binary.ctx-bins[0]`
    path: Path | None = None  # resolved and inside the bundle, when it exists
    problem: str | None = None  # why it was not read: missing, refused, placeholder, not a path
    kind: str | None = None  # "missing", "outside", "placeholder", "not-a-path"
    note: str | None = None  # how it was found, when not plainly

    @property
    def label(self) -> str:
        return str(self.request) if self.path is None else self.path.name


@dataclass
class Part:
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

    part: Part
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
    parts: list[Part] = field(default_factory=list)
    extension: FileRef | None = None
    extension_text: str | None = None
    extension_doc: object = None  # parsed, or None
    extension_problem: str | None = None
    tokenizer: FileRef | None = None
    tokenizer_size: int | None = None
    tokenizer_problem: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.config_path.name if self.config_path else str(self.root)

    def files(self) -> list[Path]:
        """The files q9diff read for this bundle (config, ctx-bins, extension file, tokenizer), resolved."""
        refs = [p.ref for p in self.parts] + [r for r in (self.extension, self.tokenizer) if r is not None]
        return [p for p in (self.config_path, *(r.path for r in refs)) if p is not None]

    def readable_parts(self) -> list[Part]:
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
                m = SPLIT_SUFFIX.search(g.name)
                out.append(SplitGraph(p, g, ar, cl, (int(m.group(1)), int(m.group(2))) if m else None))
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
        node: object = self.config
        for k in keys:
            if isinstance(k, int):
                node = node[k] if isinstance(node, list) and -len(node) <= k < len(node) else None
            else:
                node = node.get(k) if isinstance(node, dict) else None
        return node

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


def dialog_configs(folder: Path) -> list[Path]:
    """The JSON files in `folder` that are Genie dialog configs (an object holding a dialog object).
    Cheap on a folder of large JSON (a 10 MB tokenizer.json): a file larger than a config q9diff reads
    (jsonc.MAX_TEXT) is not one, by its size; only a file that mentions "dialog" is parsed, with the C
    parser first."""
    found = []
    for p in sorted(folder.glob("*.json")):
        try:
            text = read_text(p, "a Genie config", BundleError, jsonc.MAX_TEXT)
            if '"dialog"' not in text:
                continue
            try:
                doc = json.loads(text)
            except ValueError:
                doc = jsonc.loads(text)
        except (BundleError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("dialog"), dict):
            found.append(p)
    return found


def config_file(folder: Path) -> Path:
    """The Genie config of a bundle folder (see genie_config_of), or where genie_config.json would be."""
    return genie_config_of(folder) or folder / CONFIG_NAME


def genie_config_of(folder: Path) -> Path | None:
    """A bundle folder's Genie config: genie_config.json, else the one dialog config under another name
    (ai-engine-direct-helper's config.json, AI Hub's <model>.json); None when there is none or several."""
    if (folder / CONFIG_NAME).is_file():
        return folder / CONFIG_NAME
    named = dialog_configs(folder)
    return named[0] if len(named) == 1 else None


def find_config(given: Path) -> tuple[Path | None, Path]:
    """(config, bundle folder) for a config file, or a folder holding one (genie_config.json, or the one
    JSON file there that is a Genie dialog config). A folder without one is a folder of ctx-bins: the
    config of the folder above (the qwen-mini layout, genie_config.json beside genie/) is never adopted,
    since whoever can write that folder (say /tmp) would choose what q9diff reads outside the one named."""
    if given.is_file():
        return given, given.parent
    if not given.is_dir():
        raise BundleError(f"{given}: no such file or folder")
    if (given / CONFIG_NAME).is_file():
        return given / CONFIG_NAME, given
    named = dialog_configs(given)  # ai-engine-direct-helper's config.json, AI Hub's <model>.json
    if len(named) == 1:
        return named[0], given
    if named:
        names = ", ".join(p.name for p in named)
        raise BundleError(f"{given}: several Genie configs ({names}): give the one to check")
    return None, given


def read_bundle(given: Path) -> Bundle:
    """Read what the bundle names; BundleError only when its config (or its folder) cannot be read."""
    given = Path(given)
    config_path, root = find_config(given)
    if config_path is None:
        bins = sorted(given.glob("*.bin"))
        if not bins:
            raise BundleError(f"{given}: no {CONFIG_NAME} and no *.bin: not a Genie bundle")
        b = Bundle(root.resolve(), given, None, None, None)
        b.notes.append(f"no {CONFIG_NAME}: only the {len(bins)} *.bin files were checked, in name order")
        above = b.root.parent / CONFIG_NAME
        if above.is_file():  # said, never read: the folder above is not the one named
            b.notes.append(f"{above} is not read; to check the bundle with its config, give its folder")
        for i, p in enumerate(bins):
            b.parts.append(_open_part(i, _resolve(b, p.name, f"{given}/{p.name}")))
        return b
    text = read_text(config_path, "a Genie config", BundleError, jsonc.MAX_TEXT)
    try:
        config = jsonc.loads(text)
    except (jsonc.JsoncError, RecursionError) as exc:
        raise BundleError(f"{config_path}: not JSON ({exc})") from None
    if not isinstance(config, dict) or not isinstance(config.get("dialog"), dict):
        raise BundleError(f"{config_path}: no dialog object, so not a Genie dialog config")
    b = Bundle(Path(os.path.realpath(root)), given, config_path, config, text)
    index, opened = 0, {}
    for where, engine in b.engines():
        binary = engine.get("model", {}).get("binary") if isinstance(engine.get("model"), dict) else None
        for key in CTX_BINS_KEYS:
            bins = binary.get(key) if isinstance(binary, dict) else None
            if bins is None:
                continue
            if not isinstance(bins, list):
                b.parts.append(
                    Part(
                        index,
                        FileRef(
                            bins,
                            f"{b.name}: {where}.model.binary.{key}",
                            None,
                            f"{key} is not a list of paths",
                            "not-a-path",
                        ),
                    )
                )
                index += 1
                continue
            if index + len(bins) > MAX_CTX_BINS:
                raise BundleError(
                    f"{config_path}: {where}.model.binary.{key} names {index + len(bins)} ctx-bins in all; "
                    f"q9diff reads at most {MAX_CTX_BINS}, more than any model is split into"
                )
            for i, request in enumerate(bins):
                ref = _resolve(b, request, f"{b.name}: {where}.model.binary.{key}[{i}]")
                b.parts.append(_open_part(index, ref, opened))
                index += 1
    bwhere, backend = b.backend()
    if "extensions" in backend:
        b.extension = _resolve(b, backend["extensions"], f"{b.name}: {bwhere}.extensions")
        _read_extension(b)
    tok = b.get("dialog", "tokenizer", "path")
    if tok is not None:
        b.tokenizer = _resolve(b, tok, f"{b.name}: dialog.tokenizer.path")
        _read_tokenizer(b)
    return b


def _resolve(b: Bundle, request: object, where: str) -> FileRef:
    ref = FileRef(request, where)
    if not isinstance(request, str) or not request or not nameable(request):
        ref.problem, ref.kind = f"{_js(request)} is not a path", "not-a-path"
        return ref
    if PLACEHOLDER.search(request):
        ref.problem, ref.kind = f"{_js(request)} is a template placeholder, not a file", "placeholder"
        return ref
    base = b.config_path.parent if b.config_path else b.given
    posix = request.replace("\\", "/")
    if PurePosixPath(posix).is_absolute() or re.match(r"[A-Za-z]:/", posix):
        candidate = base / PurePosixPath(posix).name
        ref.note = f"{request} is a path on the device: read {candidate.name} beside the config"
    else:
        candidate = base / posix
    real = Path(os.path.realpath(candidate))
    if not real.is_relative_to(b.root):
        ref.problem, ref.kind = (
            f"{request} leads to {real}, outside the bundle folder {b.root}; not read",
            "outside",
        )
        return ref
    if not is_file(real):
        ref.problem, ref.kind = f"{request}: no such file in the bundle (looked for {candidate})", "missing"
        return ref
    ref.path = real
    return ref


def _js(value: object) -> str:
    return json.dumps(value, default=str)


def _open_part(index: int, ref: FileRef, opened: dict[Path, Part] | None = None) -> Part:
    """Open the ctx-bin and walk what the checks read (records, each graph's options and ops), so that a
    damaged part is one recorded problem here, not an exception in the middle of a check. A file named
    again (in `opened`, by resolved path) is the same binary, opened and walked once: a config listing
    one ctx-bin 3000 times must not cost 3000 mappings and walks."""
    part = Part(index, ref)
    if ref.path is None:
        return part
    seen = opened.get(ref.path) if opened is not None else None
    if seen is not None:
        part.binary, part.problem = seen.binary, seen.problem
        return part
    if opened is not None:
        opened[ref.path] = part
    try:
        cb = open_binary(ref.path)
        for i in range(len(cb.graphs)):
            cb.options(i)  # walks the record directory and this graph's pickle
        part.binary = cb
    except FormatError as exc:
        part.problem = str(exc)
    except (ValueError, IndexError, OSError, MemoryError, struct.error, ConstructError) as exc:
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
