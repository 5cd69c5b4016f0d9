"""`suggest --apply`: carry the suggested fixes into the user's files, safely.

Every edit is shown as a unified diff; writing is all or nothing over the files of one run, each file
replaced atomically and its original kept as FILE.bak (FILE.bak.1, ... when that name is taken, so no
backup is ever overwritten). Files q9diff edits: q9diff recipes and `htp_backend_ext_config.json`
(compile- or device-side), reached directly or through the file that names it (a
qnn-context-binary-generator `--config_file` wrapper, a Genie config). Extension files are edited as
text (q9diff.jsonc): only the values that change, keys added in the file's own layout, comments and
spelling kept. They are checked against what the binaries say, and against Qualcomm's own parser where
onnxruntime-qnn is installed (q9diff.extconfig): an edit never adds an error. A Python script that
builds a qairt `CompileConfig` gets the exact change shown as a diff and is never written; anything
else is refused untouched.
"""

from __future__ import annotations

import ast
import copy
import difflib
import io
import json
import math
import os
import re
import tempfile
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from q9diff import extconfig, jsonc
from q9diff import recipe as recipe_mod

# Suggestion setting -> (recipe settings field, value transform).
RECIPE_FIELDS = {
    "soc_model": ("soc_model", int),
    "dsp_arch": ("dsp_arch", lambda v: f"v{v}"),
    "vtcm_size": ("vtcm_mb", int),
    "optimization_level": ("optimization_level", int),
    "hvx_threads": ("hvx_threads", int),
    "dlbc": ("dlbc", int),
    "weight_sharing": ("weight_sharing", bool),
    "weights_packing": ("weights_packing", bool),
}

# Top-level sections that mark a JSON document as an HTP backend extension config.
BACKEND_EXT_SECTIONS = {"devices", "graphs", "context", "memory", "groupContext"}

# Files that name the backend extension config instead of holding the settings:
# (what the file is, the keys leading to the referenced path, relative to the file's folder).
REFERRING_CONFIGS = (
    ("a qnn-context-binary-generator --config_file wrapper", ("backend_extensions", "config_file_path")),
    ("a Genie config", ("dialog", "engine", "backend", "extensions")),
)

# Keys of a devices[] entry that say the SoC: Qualcomm's schema takes both as integers, so the file's
# own key is kept (QNN_FACTS "Where each setting lives").
SOC_KEYS = ("soc_model", "soc_id")

# Calls that mark a Python script as one that builds a qairt CompileConfig.
QAIRT_CALLS = {"CompileConfig", "HtpDeviceConfig", "HtpGraphConfig", "HtpContextConfig"}

PLACEHOLDER = re.compile(r"<[^<>]*>")  # `<soc_model>`, `<path to ext config>` in templates
MAX_BACKUPS = 1000

UNKNOWN = (
    "not a recipe, htp_backend_ext_config.json, qnn-context-binary-generator config, Genie config "
    "or CompileConfig script q9diff understands; left untouched"
)


class ApplyError(ValueError):
    """A file that q9diff will not edit; the message names it and says why."""


@dataclass(frozen=True)
class BuildFacts:
    """What the binaries say, read from them (None where unknown): the candidate's graph names, SoC and
    arch, to check a config against before editing it, and the reference's SoC and arch, set as a pair."""

    candidate_graphs: tuple[str, ...] = ()
    candidate_soc_model: int | None = None
    candidate_dsp_arch: int | None = None
    reference_soc_model: int | None = None
    reference_dsp_arch: int | None = None

    @classmethod
    def of(cls, candidates: Iterable[object], references: Iterable[object]) -> BuildFacts:
        """From ContextBinary objects or their q9diff.inspect/1 summaries; a value the binaries of one
        side do not agree on is unknown."""
        cands, refs = [_binary_facts(b) for b in candidates], [_binary_facts(b) for b in references]
        graphs = tuple(dict.fromkeys(g for c in cands for g in c[0]))
        return cls(graphs, _one(c[1] for c in cands), _one(c[2] for c in cands),
                   _one(r[1] for r in refs), _one(r[2] for r in refs))  # fmt: skip


def _binary_facts(b: object) -> tuple[list[str], object, object]:
    if isinstance(b, dict):
        return [g.get("name") for g in b.get("graphs", [])], b.get("soc_model"), b.get("dsp_arch")
    return [g.name for g in b.graphs], b.soc_model, b.dsp_arch


def _one(values: Iterable[object]) -> int | None:
    found = set(values)
    value = found.pop() if len(found) == 1 else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Edit:
    """One file's change: shown to the user first, then written unless it is advice only."""

    path: Path
    before: str
    after: str
    note: str = ""  # what the diff alone does not say: a file that led here, a disagreement, a check
    advice_only: bool = False  # a script: the user makes the change, `write` never touches the file

    @property
    def unified(self) -> str:
        """The diff, led by the note as a patch's preamble (`# ` lines) since this is what the user sees.

        Empty when there is nothing to change or advise, the caller's cue to say the file already matches.
        The note is wrapped under 100 columns so that no terminal breaks a line without its `# `.
        """
        diff = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in difflib.unified_diff(
                self.before.splitlines(True),
                self.after.splitlines(True),
                f"{self.path}",
                f"{self.path} (fixed)",
            )
        )
        if not self.note or not (diff or self.advice_only):
            return diff
        wrap = textwrap.TextWrapper(98, "# ", "#   ", break_long_words=False, break_on_hyphens=False)
        notes = [_printable(note) for note in self.note.split("\n")]  # names from binaries are data
        return "".join(f"{line}\n" for note in notes for line in wrap.wrap(note)) + diff


def _printable(text: str) -> str:
    """Control characters shown escaped, so a name read from a file cannot drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def plan(
    path: Path, suggestions: list[dict], facts: BuildFacts | None = None, named: Iterable[Path] = ()
) -> Edit:
    """The edit that carries `suggestions` into `path` (or the file it names), or ApplyError if q9diff
    does not understand it; planning never writes, so --dry-run and refusals leave every file as it was.

    `facts` (from the binaries) check the file and complete the SoC pair; `named` are the files the user
    gave, which a wrapper may name even outside its own folder. A symbolic link is edited at its target.
    """
    real, notes = _follow_link(path)
    before = _read(real)
    if path.suffix == ".py":
        return _plan_script(path, before, suggestions)
    try:
        root = jsonc.parse(before)
    except jsonc.JsoncError as exc:
        raise ApplyError(f"{path}: {UNKNOWN} (not JSON: {exc})") from None
    doc = root.to_python()
    if isinstance(doc, dict) and doc.get("schema") == recipe_mod.SCHEMA:
        edit = _plan_recipe(real, before, doc, suggestions, facts)
    elif isinstance(doc, dict) and any(keys[0] in doc for _, keys in REFERRING_CONFIGS):
        kind, keys = next((k, keys) for k, keys in REFERRING_CONFIGS if keys[0] in doc)
        edit = _plan_referenced(path, doc, kind, keys, suggestions, facts, named)
    elif _is_backend_ext(doc):
        edit = _plan_backend_ext(real, before, root, suggestions, facts)
    else:
        raise ApplyError(f"{path}: {UNKNOWN}")
    return replace(edit, note="\n".join(filter(None, (*notes, edit.note))))


def write(edit: Edit) -> list[tuple[Path, Path]]:
    """Write one edit; see write_all."""
    return write_all([edit])


def write_all(edits: list[Edit]) -> list[tuple[Path, Path]]:
    """Write every edit or none: all files are read back and prepared (backup and new text beside each)
    before the first is replaced; if a replacement fails, the ones already made are put back.

    Returns (file, its backup) for each file written. A file already holding its new text is left
    alone (a wrapper and the extension file it names, both given), and one changed since it was read is
    refused. Backups are created exclusively, so neither an existing .bak nor a symlink there is touched.
    """
    todo: dict[Path, Edit] = {}
    for e in edits:
        if e.advice_only or e.before == e.after:
            continue
        other = todo.get(e.path)
        if other is not None and other.after != e.after:
            raise ApplyError(f"{e.path}: two different edits of the same file; nothing written")
        todo[e.path] = e
    pending = []
    for path, e in todo.items():
        current = _read(path)
        if current == e.after:
            continue
        if current != e.before:
            raise ApplyError(f"{path}: changed since q9diff read it; nothing written")
        pending.append(e)
    prepared: list[tuple[Edit, Path, str]] = []  # (edit, its backup, its new text in a temporary file)
    for e in pending:
        try:
            backup = _backup(e.path)
            try:
                prepared.append((e, backup, _temp_beside(e.path, e.after)))
            except OSError:
                backup.unlink()
                raise
        except OSError as exc:
            _discard(prepared)
            raise ApplyError(f"{e.path}: cannot prepare the edit ({exc}); nothing written") from None
    done: list[Edit] = []
    for e, _, tmp in prepared:
        try:
            os.replace(tmp, e.path)
        except OSError as exc:
            for d in reversed(done):
                os.replace(_temp_beside(d.path, d.before), d.path)
            _discard(prepared)
            undone = f"; {len(done)} already written put back" if done else ""
            raise ApplyError(f"{e.path}: cannot write ({exc}){undone}; nothing changed") from None
        done.append(e)
    return [(e.path, backup) for e, backup, _ in prepared]


def _backup(path: Path) -> Path:
    """Copy `path` to the first free name of FILE.bak, FILE.bak.1, ...; never follows or replaces."""
    data = path.read_bytes()
    for n in range(MAX_BACKUPS):
        backup = path.with_name(path.name + (".bak" if n == 0 else f".bak.{n}"))
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(backup, path.stat().st_mode & 0o777)
        return backup
    raise OSError(f"{MAX_BACKUPS} backups of it exist already")


def _temp_beside(path: Path, text: str) -> str:
    """The new text in a fresh file next to `path` (same file system, so os.replace is atomic)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.q9diff-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _discard(prepared: list[tuple[Edit, Path, str]]) -> None:
    """Remove the backups and temporary files of a write that did not happen."""
    for _, backup, tmp in prepared:
        for leftover in (backup, Path(tmp)):
            if leftover.exists():
                leftover.unlink()


def _follow_link(path: Path) -> tuple[Path, list[str]]:
    """The file to edit for `path`: itself, or the target of a symbolic link, said in a note."""
    if not path.is_symlink():
        return path, []
    real = Path(os.path.realpath(path))
    return real, [f"{path} is a symbolic link: its target {real} is edited, the link stays"]


def _read(path: Path) -> str:
    """The text exactly as stored (line ends included), so unchanged lines are written back unchanged."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ApplyError(f"{path}: cannot read ({exc})") from None


def _is_backend_ext(doc: object) -> bool:
    return isinstance(doc, dict) and (not doc or bool(BACKEND_EXT_SECTIONS & set(doc)))


def _writable(value: object) -> bool:
    """A value q9diff read and may write: a finite JSON scalar, never None."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (bool, int, str))


def _dump_like(before: str, doc: object) -> str:
    """Serialise with the user's indentation, so the diff shows the settings and not a reformat."""
    indent = "  "
    for line in before.splitlines()[1:]:
        body = line.lstrip()
        if body and body != line:
            indent = line[: len(line) - len(body)]
            break
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


def _plan_recipe(
    path: Path, before: str, doc: dict, suggestions: list[dict], facts: BuildFacts | None
) -> Edit:
    new = copy.deepcopy(doc)
    settings = new.setdefault("settings", {})
    notes = []
    if facts is not None and {"soc_model", "dsp_arch"} & {s["setting"] for s in suggestions}:
        pair = {"soc_model": facts.reference_soc_model, "dsp_arch": facts.reference_dsp_arch}
        suggestions = [s for s in suggestions if s["setting"] not in pair]
        unknown = _unknown_soc(facts)
        if unknown:
            notes.append(unknown)
        else:
            suggestions += [{"setting": k, "value": v} for k, v in pair.items()]  # the SoC as a pair
    for s in suggestions:
        if s["setting"] in RECIPE_FIELDS:
            if not _writable(s.get("value")):
                notes.append(f"{s['setting']}: the reference's value is unknown, so it is not written")
                continue
            field, conv = RECIPE_FIELDS[s["setting"]]
            settings[field] = conv(s["value"])
    recipe_mod.Recipe.from_dict(new, str(path))  # still a valid recipe
    return Edit(path, before, _dump_like(before, new) if new != doc else before, "\n".join(notes))


def _unknown_soc(facts: BuildFacts) -> str:
    """Why the SoC pair cannot be written (the reference binary's soc_model or dsp_arch is unknown), or ""."""
    pair = {"soc_model": facts.reference_soc_model, "dsp_arch": facts.reference_dsp_arch}
    unknown = [k for k, v in pair.items() if v is None]
    if not unknown:
        return ""
    return (
        f"soc_model and dsp_arch go together and the reference binary's {unknown[0]} is unknown: "
        "neither is written"
    )


def _plan_referenced(
    path: Path,
    doc: dict,
    kind: str,
    keys: tuple[str, ...],
    suggestions: list[dict],
    facts: BuildFacts | None,
    named: Iterable[Path],
) -> Edit:
    """The settings of a wrapper or Genie config live in the extension file it names: edit that one."""
    node: object = doc
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    where = ".".join(keys)
    if not isinstance(node, str) or not node:
        raise ApplyError(f"{path}: {kind} that names no backend extension file ({where}); left untouched")
    target, notes = _resolve_reference(path, node, kind, where, named)
    before = _read(target)
    try:
        root = jsonc.parse(before)
    except jsonc.JsoncError as exc:
        raise ApplyError(
            f"{path}: {kind} naming {target}, which is not JSON ({exc}); both left untouched"
        ) from None
    ext = root.to_python()
    if not _is_backend_ext(ext) or any(k[0] in ext for _, k in REFERRING_CONFIGS):
        raise ApplyError(
            f"{path}: {kind} naming {target}, which is not an htp_backend_ext_config.json "
            "q9diff understands; both left untouched"
        )
    try:
        edit = _plan_backend_ext(target, before, root, suggestions, facts)
    except ApplyError as exc:
        raise ApplyError(f"{path}: {kind} naming {exc}") from None
    led = [f"{path} is {kind}: its settings live in {target}, edited here", *notes]
    own = sorted(BACKEND_EXT_SECTIONS & set(doc))
    if own:
        led.append(f"{path} also holds {', '.join(own)}: not what QNN's extension parser reads; left as is")
    return replace(edit, note="\n".join(filter(None, (*led, edit.note))))


def _resolve_reference(
    config: Path, ref: str, kind: str, where: str, named: Iterable[Path]
) -> tuple[Path, list[str]]:
    """The file a config names, as its tools find it: relative to the config, then to the working
    directory, `\\` or `/` alike; a device path by its file name beside the config (said in a note).

    A path that leads outside the folder it was resolved in is refused unless the user named that file.
    """
    if PLACEHOLDER.search(ref):
        raise ApplyError(
            f"{config}: {kind} whose {where} is the placeholder {ref!r}; pass the extension file itself "
            "with --apply; left untouched"
        )
    posix = ref.replace("\\", "/")
    allowed = {Path(os.path.realpath(p)) for p in named}
    if PurePosixPath(posix).is_absolute() or re.match(r"[A-Za-z]:/", posix):
        beside = config.parent / PurePosixPath(posix).name
        if not beside.is_file():
            raise ApplyError(
                f"{config}: {kind} whose {where} is {ref}, a path on the device, and there is no "
                f"{beside.name} beside it; pass the extension file itself with --apply; left untouched"
            )
        found = [(beside, config.parent)]
        note = [f"{ref} is a path on the device: edited {beside}, the file of that name beside {config.name}"]
    else:
        found = [(base / posix, base) for base in (config.parent, Path.cwd()) if (base / posix).is_file()]
        note = []
        if not found:
            tried = " or ".join(dict.fromkeys(str(b / posix) for b in (config.parent, Path.cwd())))
            raise ApplyError(
                f"{config}: {kind} whose {where} names {tried}, which does not exist; nothing edited"
            )
    target, base = found[0]
    real = Path(os.path.realpath(target))
    if real not in allowed and not real.is_relative_to(os.path.realpath(base)):
        raise ApplyError(
            f"{config}: {kind} whose {where} leads to {real}, outside {base}; q9diff edits only files in "
            "the config's folder or given with --apply; nothing edited"
        )
    if target.is_symlink():
        note.append(f"{target} is a symbolic link: its target {real} is edited, the link stays")
        return real, note
    return target, note


def _plan_backend_ext(
    path: Path, before: str, root: jsonc.Node, suggestions: list[dict], facts: BuildFacts | None
) -> Edit:
    """Set the suggested values in the extension file's own text; see _ExtEdit."""
    if root.kind != "object":
        raise ApplyError(f"{path}: {UNKNOWN}")
    e = _ExtEdit(path, before, root, facts)
    e.check_against_candidate()
    wanted = e.wanted(suggestions)
    for section, values in wanted.items():
        if section == "devices":
            e.set_devices(values)
        elif section == "graphs":
            e.set_graphs(values)
        else:
            e.set_section(section, values)
    after = e.editor.result()
    if after != before:
        try:
            jsonc.parse(after)  # an edit of ours that is not JSON is a bug, never a write
        except jsonc.JsoncError as exc:
            raise ApplyError(
                f"{path}: q9diff's edit would not be JSON ({exc}); please report it; left untouched"
            ) from None
        e.validate(after)
    return Edit(path, before, after, "\n".join(dict.fromkeys(e.notes)))


class _ExtEdit:
    """The edit of one htp_backend_ext_config.json: graph settings go to the entries whose graph_names
    name the candidate's graphs (or "*"), else to a new entry naming them; soc_model and dsp_arch are set
    together from the reference binary under the file's own SoC key; every other byte stays."""

    def __init__(self, path: Path, text: str, root: jsonc.Node, facts: BuildFacts | None) -> None:
        self.path, self.text, self.root, self.facts = path, text, root, facts
        self.editor = jsonc.Editor(text, root)
        self.notes: list[str] = []

    def wanted(self, suggestions: list[dict]) -> dict[str, dict[str, object]]:
        """section -> key -> value from the suggestions' htp_backend_ext_config targets."""
        out: dict[str, dict[str, object]] = {}
        for s in suggestions:
            for target, value in s.get("targets", {}).get("htp_backend_ext_config", {}).items():
                if not _writable(value):
                    self.notes.append(
                        f"{s.get('setting')}: the reference's value is unknown, so it is not written"
                    )
                    continue
                section, _, key = re.sub(r"\[\d*\]", "", target).partition(".")
                if key:
                    out.setdefault(section, {})[key] = value
        soc = {k: v for k, v in out.get("devices", {}).items() if k in ("soc_model", "dsp_arch")}
        if soc and self.facts is not None:
            f = self.facts
            unknown = _unknown_soc(f)
            if unknown:
                self.notes.append(unknown)
                soc = {}
            else:
                soc = {"soc_model": f.reference_soc_model, "dsp_arch": f"v{f.reference_dsp_arch}"}
            rest = {k: v for k, v in out["devices"].items() if k not in ("soc_model", "dsp_arch")}
            out["devices"] = {**rest, **soc}
            if not out["devices"]:
                del out["devices"]
        return out

    # --- checks ----------------------------------------------------------------------------------

    def _entries(self, section: str) -> list[jsonc.Node]:
        node = self.root.get(section)
        if node is None:
            return []
        items = node.items if node.kind == "array" else [node]
        for item in items:
            if item.kind != "object":
                what = self.text[item.start : item.end]
                raise ApplyError(f"{self.path}: {section} holds {what!r}, not an object; left untouched")
        return items

    def check_against_candidate(self) -> None:
        """One note per value of the file that disagrees with what the candidate binary was built with."""
        f = self.facts
        if f is None:
            return
        for i, d in enumerate(self._entries("devices")):
            for key in SOC_KEYS:
                v = d.get(key)
                if v is not None and f.candidate_soc_model is not None and v.value != f.candidate_soc_model:
                    self.notes.append(
                        f"{self.path.name}: devices[{i}].{key} is {self.text[v.start : v.end]}, but the "
                        f"candidate binary was built for soc_model {f.candidate_soc_model}"
                    )
            v = d.get("dsp_arch")
            if v is not None and f.candidate_dsp_arch is not None and v.value != f"v{f.candidate_dsp_arch}":
                self.notes.append(
                    f"{self.path.name}: devices[{i}].dsp_arch is {self.text[v.start : v.end]}, but the "
                    f"candidate binary was built for v{f.candidate_dsp_arch}"
                )
        for i, g in enumerate(self._entries("graphs")):
            names = _graph_names(g)
            if names is None:
                self.notes.append(
                    f"{self.path.name}: graphs[{i}] has no list of graph_names, "
                    "so QNN applies none of its settings"
                )
            elif f.candidate_graphs and "*" not in names and not set(names) & set(f.candidate_graphs):
                self.notes.append(
                    f"{self.path.name}: graphs[{i}].graph_names names {', '.join(names) or 'nothing'}, "
                    f"none of the candidate's {len(f.candidate_graphs)} graphs ({f.candidate_graphs[0]}, ...)"
                )

    def validate(self, after: str) -> None:
        """Qualcomm's parser on the file before and after: a new error refuses the edit."""
        strict = _is_strict(self.text) and _is_strict(after)
        texts = (
            [self.text, after]
            if strict
            else [json.dumps(jsonc.loads(t), indent=2) for t in (self.text, after)]
        )
        try:
            was, now = extconfig.check(texts)
        except extconfig.Unavailable as exc:
            self.notes.append(f"not checked with Qualcomm's parser: {exc}")
            return
        how = "" if strict else " (read without its comments and trailing commas, which it does not accept)"
        added = [e for e in now.errors if e not in was.errors]
        if added:
            raise ApplyError(
                f"{self.path}: the edit would add an error Qualcomm's parser reports{how}: {added[0]}; "
                "left untouched"
            )
        if was.errors:
            self.notes.append(
                f"Qualcomm's parser already reports for {self.path.name}{how}: {'; '.join(was.errors)}"
            )
        else:
            self.notes.append(
                f"{self.path.name} before and after the edit, checked with Qualcomm's parser "
                f"({extconfig.LIBRARY}){how}: no errors"
            )

    # --- edits -----------------------------------------------------------------------------------

    def set_value(self, entry: jsonc.Node, key: str, value: object, after: str | None = None) -> None:
        node = entry.get(key)
        if node is None:
            self.editor.add_member(entry, key, value, after=after)
        elif not _same(node.to_python(), value):
            self.editor.replace(node, value)

    def set_devices(self, values: dict[str, object]) -> None:
        devices = self.root.get("devices")
        if devices is None:
            self.editor.add_member(self.root, "devices", [values])
            return
        entries = self._entries("devices")
        if not entries and devices.kind == "array":
            self.editor.append_item(devices, values)
        for d in entries:
            for key, value in values.items():
                if key == "soc_model":
                    present = [k for k in SOC_KEYS if d.get(k) is not None]
                    for k in present or ["soc_model"]:
                        self.set_value(
                            d, k, value, after="dsp_arch" if d.get("dsp_arch") is not None else None
                        )
                elif key == "dsp_arch":
                    soc = next((k for k in SOC_KEYS if d.get(k) is not None), None)
                    self.set_value(d, key, value, after=soc)
                else:
                    self.set_value(d, key, value)

    def set_graphs(self, values: dict[str, object]) -> None:
        graphs = self.root.get("graphs")
        entries = self._entries("graphs")
        candidate = self.facts.candidate_graphs if self.facts else ()
        named = [(g, _graph_names(g) or []) for g in entries]
        covering = [g for g, names in named if "*" in names or set(names) & set(candidate)]
        if any("*" in names for _, names in named):
            missing = []
        else:
            missing = [c for c in candidate if not any(c in names for _, names in named)]
        if not covering and not missing:
            self.notes.append(
                f"graph settings ({', '.join(values)}) not written: the candidate's graph names are unknown "
                f'and no graphs entry of {self.path.name} says graph_names ["*"]'
            )
            return
        for g in covering:
            for key, value in values.items():
                self.set_value(g, key, value)
        if not missing:
            return
        entry = {"graph_names": missing, **values}
        if graphs is None:
            self.editor.add_member(self.root, "graphs", [entry])
        elif graphs.kind == "array":
            self.editor.append_item(graphs, entry)
        else:
            raise ApplyError(
                f"{self.path}: graphs is one object whose graph_names do not name the candidate's graphs, "
                "and q9diff keeps its form; name them there or make graphs a list; left untouched"
            )
        self.notes.append(
            f"{self.path.name}: added a graphs entry naming the candidate's {len(missing)} graphs"
        )

    def set_section(self, section: str, values: dict[str, object]) -> None:
        node = self.root.get(section)
        if node is None:
            self.editor.add_member(self.root, section, values)
            return
        for entry in self._entries(section):
            for key, value in values.items():
                self.set_value(entry, key, value)


def _graph_names(entry: jsonc.Node) -> list[str] | None:
    names = entry.get("graph_names")
    value = names.to_python() if names is not None else None
    if isinstance(value, list) and all(isinstance(n, str) for n in value):
        return value
    return None


def _same(old: object, new: object) -> bool:
    """Equal as settings: 3.0 is 3, but true is not 1."""
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    return old == new


def _is_strict(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Keyword:
    """One keyword of a suggested qairt call, e.g. HtpDeviceConfig(soc_model=77)."""

    call: str
    name: str
    value: ast.expr
    source: str


def _qairt_keywords(suggestions: list[dict]) -> list[_Keyword]:
    """The suggestions' qairt targets, parsed, so the script is matched on syntax and not on text."""
    out = []
    for s in suggestions:
        target = s["targets"].get("qairt")
        if not target:
            continue
        call = ast.parse(target, mode="eval").body
        if not isinstance(call, ast.Call):
            raise ValueError(f"qairt target {target!r} is not a call")
        for kw in call.keywords:
            out.append(
                _Keyword(
                    _called(call), kw.arg or "", kw.value, ast.get_source_segment(target, kw.value) or ""
                )
            )
    return out


def _called(call: ast.Call) -> str:
    """The called name, for `HtpDeviceConfig(...)` and `htp.HtpDeviceConfig(...)` alike."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _plan_script(path: Path, before: str, suggestions: list[dict]) -> Edit:
    """The change to a qairt script as a diff of its text: a keyword set or added, only inside the
    Htp*Config calls, because q9diff does not rewrite code it did not write; the user applies it."""
    try:
        tree = ast.parse(before, filename=str(path))
    except SyntaxError as exc:
        raise ApplyError(f"{path}: not valid Python ({exc.msg}, line {exc.lineno}); left untouched") from None
    calls: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.setdefault(_called(node), []).append(node)
    if not QAIRT_CALLS & set(calls):
        raise ApplyError(
            f"{path}: a Python script with no CompileConfig or Htp*Config call q9diff could change; "
            "left untouched"
        )
    wanted: dict[str, list[_Keyword]] = {}
    for kw in _qairt_keywords(suggestions):
        wanted.setdefault(kw.call, []).append(kw)
    lines = io.StringIO(before, newline="").readlines()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    changes: list[tuple[int, int, str]] = []
    notes = []
    for name, kws in wanted.items():
        if name not in calls:
            add = f"{name}({', '.join(f'{k.name}={k.source}' for k in kws)})"
            notes.append(f"{path} has no {name}(...) call: add {add} and pass it to CompileConfig")
        for call in calls.get(name, []):
            changes += _call_changes(before, call, kws, offset)
    after = before
    for start, end, text in sorted(changes, reverse=True):
        after = after[:start] + text + after[end:]
    if changes:
        notes.insert(0, f"{path} is a Python script: q9diff does not edit it, make this change yourself")
    return Edit(path, before, after, "\n".join(notes), advice_only=True)


def _call_changes(
    text: str, call: ast.Call, kws: list[_Keyword], offset: Callable[[int, int], int]
) -> list[tuple[int, int, str]]:
    """(start, end, replacement) spans that give `call` the wanted keywords, all within the call."""
    have = {kw.arg: kw for kw in call.keywords if kw.arg}
    changes, added = [], []
    for k in kws:
        old = have.get(k.name)
        if old is None:
            added.append(f"{k.name}={k.source}")
        elif ast.dump(old.value) != ast.dump(k.value):
            v = old.value
            changes.append((offset(v.lineno, v.col_offset), offset(v.end_lineno, v.end_col_offset), k.source))
    args = [*call.args, *call.keywords]
    if added and not args:
        at = text.index("(", offset(call.func.end_lineno, call.func.end_col_offset)) + 1
        changes.append((at, at, ", ".join(added)))
    elif added:
        last = max(args, key=lambda a: (a.end_lineno, a.end_col_offset))
        start, at = offset(last.lineno, last.col_offset), offset(last.end_lineno, last.end_col_offset)
        indent = text[text.rfind("\n", 0, start) + 1 : start]
        if indent.isspace() and call.end_lineno > last.end_lineno:
            # one argument a line and the parenthesis below: add lines in the same layout
            eol = text.index("\n", at) + 1
            newline = "\r\n" if text[:eol].endswith("\r\n") else "\n"
            if not text[at:eol].lstrip().startswith(","):
                changes.append((at, at, ","))
            changes.append((eol, eol, "".join(f"{indent}{a},{newline}" for a in added)))
        else:
            changes.append((at, at, ", " + ", ".join(added)))
    return changes
