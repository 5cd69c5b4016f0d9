"""The one reader of a Genie dialog config: which file it is, what it says, and every file it names.

`diff`, `verify`, `doctor`, the genie runner and the ssh runner's genie-t2t path all read a bundle's config
here, so they accept and refuse the same files with the same line. What q9diff accepts is what libGenie
accepts, measured with libGenie (QAIRT 2.51) on copies of fixtures/qwen-mini/local/genie_config.json:
a `//` or `/* */` line or a trailing comma is JSON_FORMAT ("parse error at line 1, column 1"), and
`dialog.engine` as a list is JSON_SCHEMA ("at '/engine' ... unexpected instance type"). So the config is
strict JSON with one engine object. Every file the config names (ctx-bins, tokenizer, extensions) is
resolved inside the bundle folder with any problem attached; the callers decide what is fatal.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from q9diff.errors import Q9Error
from q9diff.guard import inside, is_file, kind, nameable, read_text
from q9diff.jsonc import strict_fault

CONFIG_NAME = "genie_config.json"
CTX_BINS_KEYS = ("ctx-bins", "fcb")  # Genie's binary engine lists its context binaries under these
PLACEHOLDER = re.compile(r"<[^<>]*>")  # `<TODO>`, `<soc_model>` in Qualcomm's templates
EXPECTED = "a Genie config (a JSON object with a dialog object)"
MAX_CONFIG = 1 << 20  # a Genie config is kilobytes; the reader is linear, but nothing this size is one
MAX_CTX_BINS = 256  # real bundles list 1-32 splits; a config listing thousands is refused, not walked


class ConfigError(Q9Error, ValueError):
    """The config cannot be read at all; the message is one line naming the file."""


@dataclass
class FileRef:
    """A file the config names: what it says, where it says it, and what q9diff found."""

    request: object  # the value as written
    where: str  # `genie_config.json: dialog.engine.model.binary.ctx-bins[0]`
    path: Path | None = None  # resolved and inside the bundle, when it exists
    problem: str | None = None  # why it was not read: missing, refused, placeholder, not a path
    kind: str | None = None  # "missing", "outside", "placeholder", "not-a-path"
    note: str | None = None  # how it was found, when not plainly
    start: Path | None = None  # the folder a relative path was found from (Genie's working folder)

    @property
    def label(self) -> str:
        return str(self.request) if self.path is None else self.path.name


@dataclass
class GenieConfig:
    """A dialog config read: its file, the bundle folder nothing outside of is read, and its references."""

    path: Path
    root: Path  # the bundle folder (resolved): every file the config names must lie inside it
    given: Path  # what the user named
    text: str
    data: dict
    ctx_bins: list[FileRef] = field(default_factory=list)
    tokenizer: FileRef | None = None
    extension: FileRef | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def dialog(self) -> dict:
        return self.data["dialog"]

    @property
    def engine(self) -> dict:
        return self.dialog.get("engine") if isinstance(self.dialog.get("engine"), dict) else {}

    def get(self, *keys: str | int) -> object:
        """The value at `keys` (from the top: "dialog", ...), or None when any step is absent."""
        return lookup(self.data, *keys)

    def number(self, where: str, default, integer: bool = False):
        """`dialog.<where>` as a number (an integer if asked), `default` when absent; ConfigError naming
        the key when it holds something else."""
        value = self.get("dialog", *where.split("."))
        if value is None:
            return default
        want = (int,) if integer else (int, float)
        if not isinstance(value, want) or isinstance(value, bool):
            raise ConfigError(f"{self.path}: expected dialog.{where} to be a number, got {kind(value)}")
        return value

    def refusal(self, ref: FileRef) -> str:
        """The one line every command says about a file the config names that cannot be read."""
        return f"{self.path.parent / ref.where}: {ref.problem}"

    def ctx_bin_paths(self) -> list[Path]:
        """The ctx-bins in configured order; ConfigError with the line for the first that cannot be read."""
        expected = "dialog.engine.model.binary.ctx-bins to be a list of file paths"
        if not self.ctx_bins:
            raise ConfigError(f"{self.path}: expected {expected}, got nothing")
        for ref in self.ctx_bins:
            if ref.kind == "not-a-path" and not isinstance(ref.request, str):
                raise ConfigError(f"{self.path}: expected {expected}, got {kind(ref.request)}")
            if ref.path is None:
                raise ConfigError(self.refusal(ref))
        return [ref.path for ref in self.ctx_bins]

    def file(self, ref: FileRef | None, where: str) -> Path:
        """A named file (tokenizer, extensions) that a caller cannot do without, or ConfigError."""
        if ref is None:
            raise ConfigError(f"{self.path}: expected {where} to be a file path, got nothing")
        if ref.path is None:
            raise ConfigError(self.refusal(ref))
        return ref.path


def lookup(node: object, *keys: str | int) -> object:
    """The value at `keys` in a parsed config, or None when any step is absent or not a container."""
    for k in keys:
        if isinstance(k, int):
            node = node[k] if isinstance(node, list) and -len(node) <= k < len(node) else None
        else:
            node = node.get(k) if isinstance(node, dict) else None
    return node


def dialog_configs(folder: Path) -> list[Path]:
    """The JSON files in `folder` that are Genie dialog configs (an object holding a dialog object).
    Cheap on a folder of large JSON (a 10 MB tokenizer.json): only a config-sized file that mentions
    "dialog" is parsed."""
    found = []
    for p in sorted(folder.glob("*.json")):
        try:
            text = read_text(p, EXPECTED, ConfigError, MAX_CONFIG)  # a 10 MB tokenizer.json: not read
            if '"dialog"' not in text:
                continue
            doc = json.loads(text)
        except (ConfigError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("dialog"), dict):
            found.append(p)
    return found


def genie_config_of(folder: Path) -> Path | None:
    """A bundle folder's Genie config: genie_config.json, else the one dialog config under another name
    (ai-engine-direct-helper's config.json, AI Hub's <model>.json); None when there is none or several."""
    if (folder / CONFIG_NAME).is_file():
        return folder / CONFIG_NAME
    named = dialog_configs(folder)
    return named[0] if len(named) == 1 else None


def config_file(folder: Path) -> Path:
    """The Genie config of a bundle folder (see genie_config_of), or where genie_config.json would be."""
    return genie_config_of(folder) or folder / CONFIG_NAME


def find_config(given: Path) -> tuple[Path | None, Path]:
    """(config, bundle folder) for a config file, or a folder holding one (genie_config.json, or the one
    JSON file there that is a Genie dialog config). A folder without one is a folder of ctx-bins: the
    config of the folder above (the qwen-mini layout, genie_config.json beside genie/) is never adopted,
    since whoever can write that folder (say /tmp) would choose what q9diff reads outside the one named."""
    if given.is_file():
        return given, given.parent
    if not given.is_dir():
        raise ConfigError(f"{given}: no such file or folder")
    if (given / CONFIG_NAME).is_file():
        return given / CONFIG_NAME, given
    named = dialog_configs(given)
    if len(named) == 1:
        return named[0], given
    if named:
        names = ", ".join(p.name for p in named)
        raise ConfigError(f"{given}: several Genie configs ({names}): give the one to check")
    return None, given


def _text(path: Path) -> str:
    return read_text(path, EXPECTED, ConfigError, MAX_CONFIG)


def read(given: Path, also_inside: tuple[Path, ...] = ()) -> GenieConfig:
    """The config of `given` (a config file or a bundle folder), every named file resolved; ConfigError
    when there is none or it is not one libGenie would read. `also_inside`: folders q9diff filled itself
    (its rebuild cache), whose absolute paths a patched copy may name."""
    given = Path(given)
    path, root = find_config(given)
    if path is None:
        raise ConfigError(f"{given}: no {CONFIG_NAME} (nor one other Genie config), so not a Genie bundle")
    return load(path, root, given, also_inside)


def load(path: Path, root: Path, given: Path, also_inside: tuple[Path, ...] = ()) -> GenieConfig:
    """Read the config at `path` for the bundle folder `root` (see read)."""
    text = _text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON as libGenie reads it: {strict_fault(text, exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: expected {EXPECTED}, got JSON nested too deep to be one") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ConfigError(f"{path}: expected {EXPECTED}, holding a number with too many digits") from None
    dialog = data.get("dialog") if isinstance(data, dict) else None
    if not isinstance(dialog, dict):
        raise ConfigError(f"{path}: expected a JSON object with a dialog object, got {kind(dialog or data)}")
    engine = data["dialog"].get("engine")
    if isinstance(engine, list):
        raise ConfigError(
            f"{path}: dialog.engine is a list; libGenie's dialog schema takes one engine object "
            "(QAIRT 2.51: \"at '/engine' ... unexpected instance type\")"
        )
    if engine is not None and not isinstance(engine, dict):
        raise ConfigError(f"{path}: expected dialog.engine to be an object, got {kind(engine)}")
    cfg = GenieConfig(path, Path(os.path.realpath(root)), given, text, data)
    if path.parent.resolve() != given.resolve() and given.is_dir():
        cfg.notes.append(f"{given} holds no {CONFIG_NAME}; read {path}, which names its files")
    engine = engine or {}
    model = engine.get("model")
    binary = model.get("binary") if isinstance(model, dict) else None
    for key in CTX_BINS_KEYS:
        bins = binary.get(key) if isinstance(binary, dict) else None
        if bins is None:
            continue
        where = f"{path.name}: dialog.engine.model.binary.{key}"
        if not isinstance(bins, list):
            cfg.ctx_bins.append(FileRef(bins, where, None, f"{key} is not a list of paths", "not-a-path"))
            continue
        if len(cfg.ctx_bins) + len(bins) > MAX_CTX_BINS:
            raise ConfigError(
                f"{path}: dialog.engine.model.binary.{key} names {len(cfg.ctx_bins) + len(bins)} ctx-bins in "
                f"all; q9diff reads at most {MAX_CTX_BINS}, more than any model is split into"
            )
        cfg.ctx_bins += [resolve(cfg, req, f"{where}[{i}]", also_inside) for i, req in enumerate(bins)]
    backend = engine.get("backend")
    if isinstance(backend, dict) and "extensions" in backend:
        where = f"{path.name}: dialog.engine.backend.extensions"
        cfg.extension = resolve(cfg, backend["extensions"], where, also_inside)
    tokenizer = data["dialog"].get("tokenizer")
    if isinstance(tokenizer, dict) and "path" in tokenizer:
        cfg.tokenizer = resolve(cfg, tokenizer["path"], f"{path.name}: dialog.tokenizer.path", also_inside)
    return cfg


MAX_UP = 8  # how many folders above the config a start folder is looked for


def started_in(cfg: GenieConfig, relative: str) -> Path | None:
    """The folder Genie would be started in for `relative` to name a file of the bundle: Genie resolves
    a config's relative paths against its working folder, not the config's. Tried in order: the config's
    folder (where a bundle is run from as shipped), the working folder q9diff runs in, then each folder
    above the config (a README that runs `genie-t2t-run -c genie_bundle/genie_config.json` from its
    repository names `genie_bundle/...`). A start counts only where the path lands inside the bundle
    folder, or inside the working folder when the path is read from it (see readable_from); None when no
    start does."""
    base = cfg.path.parent
    starts = [base, Path.cwd(), *list(base.resolve().parents)[:MAX_UP]]
    for start in dict.fromkeys(starts):
        real = Path(os.path.realpath(start / relative))
        if readable_from(cfg, real, start) and is_file(real):
            return start
    return None


def readable_from(cfg: GenieConfig, real: Path, start: Path | None = None) -> bool:
    """May q9diff read `real` for this config: inside the bundle folder; or, read from the working folder
    q9diff runs in (`start`), inside that folder when it holds the config at most MAX_UP folders down
    (Genie started there, as READMEs say to: where the user stands and named the config from)."""
    if real.is_relative_to(cfg.root):
        return True
    cwd = Path(os.path.realpath(Path.cwd()))
    if start is None or Path(os.path.realpath(start)) != cwd:
        return False
    config = Path(os.path.realpath(cfg.path))
    return cwd in list(config.parents)[:MAX_UP] and real.is_relative_to(cwd)


def resolve(cfg: GenieConfig, request: object, where: str, also_inside: tuple[Path, ...] = ()) -> FileRef:
    """One path the config names, resolved as Genie would from the config's folder and kept inside the
    bundle: an absolute path is a path on the device, read by its name beside the config."""
    ref = FileRef(request, where)
    if not isinstance(request, str) or not request or not nameable(request):
        ref.problem, ref.kind = f"{json.dumps(request, default=str)} is not a path", "not-a-path"
        return ref
    if PLACEHOLDER.search(request):
        ref.problem, ref.kind = f"{json.dumps(request)} is a template placeholder, not a file", "placeholder"
        return ref
    base = cfg.path.parent
    posix = request.replace("\\", "/")
    absolute = PurePosixPath(posix).is_absolute() or re.match(r"[A-Za-z]:/", posix)
    ours = next((t for r in also_inside if absolute and (t := inside(posix, r)) is not None), None)
    if ours is not None:
        candidate = ours
    elif absolute and is_file(posix):  # a path that exists here is a host path: kept to the bundle below
        candidate = Path(posix)
    elif absolute:
        candidate = base / PurePosixPath(posix).name
        ref.note = f"{request} is a path on the device: read {candidate.name} beside the config"
    else:
        ref.start = started_in(cfg, posix)
        candidate = (ref.start or base) / posix
        if ref.start is not None and ref.start != base:
            ref.note = (
                f"{request} is not beside the config; found from {ref.start}, the folder Genie must be"
                " started in for it (Genie resolves relative paths against its working folder)"
            )
    real = Path(os.path.realpath(candidate))
    if ours is None and not readable_from(cfg, real, ref.start):
        ref.problem, ref.kind = (
            f"refusing {request} (it leads to {real}): it is outside the bundle folder {cfg.root}, and "
            "q9diff reads and pushes only files inside the folder that names them",
            "outside",
        )
        return ref
    if not is_file(real):
        also = (
            ""
            if absolute
            else "; nor from the working folder or a folder above the config, as Genie may be started"
        )
        ref.problem, ref.kind = (
            f"{request}: no such file in the bundle (looked for {candidate}{also})",
            "missing",
        )
        return ref
    ref.path = real
    return ref
