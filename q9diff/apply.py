"""`suggest --apply`: carry the suggested fixes into the user's files, safely.

Every edit is shown as a unified diff, written atomically, and the original kept as FILE.bak.
Files q9diff edits: q9diff recipes and `htp_backend_ext_config.json` (compile- or device-side),
reached directly or through the file that names it (a qnn-context-binary-generator `--config_file`
wrapper, a Genie `genie_config.json`). A Python script that builds a qairt `CompileConfig` gets the
exact change shown as a diff and is never written; anything else is refused untouched.
"""

from __future__ import annotations

import ast
import copy
import difflib
import io
import json
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from q9diff import recipe as recipe_mod
from q9diff.recipe import write_atomic

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
BACKEND_EXT_SECTIONS = {"devices", "graphs", "context"}

# Files that name the backend extension config instead of holding the settings:
# (what the file is, the keys leading to the referenced path, relative to the file's folder).
REFERRING_CONFIGS = (
    ("a qnn-context-binary-generator --config_file wrapper", ("backend_extensions", "config_file_path")),
    ("a Genie config", ("dialog", "engine", "backend", "extensions")),
)

# Older htp_backend_ext_config.json key -> the key QNN reads now. A file that still says `soc_id`
# fails with err 5005 (ai-hub-models #289; QNN_FACTS "Failure cases users report").
OLDER_EXT_KEYS = {"soc_id": "soc_model"}

# Calls that mark a Python script as one that builds a qairt CompileConfig.
QAIRT_CALLS = {"CompileConfig", "HtpDeviceConfig", "HtpGraphConfig", "HtpContextConfig"}

UNKNOWN = (
    "not a recipe, htp_backend_ext_config.json, qnn-context-binary-generator config, Genie config "
    "or CompileConfig script q9diff understands; left untouched"
)


class ApplyError(ValueError):
    """A file that q9diff will not edit; the message names it and says why."""


@dataclass(frozen=True)
class Edit:
    """One file's change: shown to the user first, then written unless it is advice only."""

    path: Path
    before: str
    after: str
    note: str = ""  # what the diff alone does not say: a file that led here, a key renamed, a call to add
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
        return "".join(f"{line}\n" for note in self.note.splitlines() for line in wrap.wrap(note)) + diff


def plan(path: Path, suggestions: list[dict]) -> Edit:
    """The edit that carries `suggestions` into `path` (or the file it names), or ApplyError if q9diff
    does not understand it; planning never writes, so --dry-run and refusals leave every file as it was."""
    before = _read(path)
    if path.suffix == ".py":
        return _plan_script(path, before, suggestions)
    doc = _parse_json(path, before)
    if isinstance(doc, dict) and doc.get("schema") in recipe_mod.SCHEMAS:
        return _plan_recipe(path, before, doc, suggestions)
    if _is_backend_ext(doc):
        return _plan_backend_ext(path, before, doc, suggestions)
    for kind, keys in REFERRING_CONFIGS:
        if isinstance(doc, dict) and keys[0] in doc:
            return _plan_referenced(path, doc, kind, keys, suggestions)
    raise ApplyError(f"{path}: {UNKNOWN}")


def write(edit: Edit) -> None:
    """Write the fixed file atomically, keeping the original as FILE.bak; advice is never written.

    A file already holding `edit.after` is left alone, so applying a wrapper and the extension file it
    names in one run does not overwrite the .bak of the original with the fixed text.
    """
    if edit.advice_only or edit.before == edit.after or edit.path.read_text() == edit.after:
        return
    shutil.copy2(edit.path, edit.path.with_name(edit.path.name + ".bak"))
    write_atomic(edit.path, edit.after)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApplyError(f"{path}: cannot read ({exc})") from None


def _parse_json(path: Path, text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ApplyError(f"{path}: {UNKNOWN}") from None


def _is_backend_ext(doc: object) -> bool:
    return isinstance(doc, dict) and (not doc or bool(BACKEND_EXT_SECTIONS & set(doc)))


def _dump_like(before: str, doc: object) -> str:
    """Serialise with the user's indentation, so the diff shows the settings and not a reformat."""
    indent = "  "
    for line in before.splitlines()[1:]:
        body = line.lstrip()
        if body and body != line:
            indent = line[: len(line) - len(body)]
            break
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


def _plan_recipe(path: Path, before: str, doc: dict, suggestions: list[dict]) -> Edit:
    new = copy.deepcopy(doc)
    settings = new.setdefault("settings", {})
    for s in suggestions:
        if s["setting"] in RECIPE_FIELDS:
            field, conv = RECIPE_FIELDS[s["setting"]]
            settings[field] = conv(s["value"])
    recipe_mod.Recipe.from_dict(new, str(path))  # still a valid recipe
    return Edit(path, before, _dump_like(before, new) if new != doc else before)


def _plan_referenced(
    path: Path, doc: dict, kind: str, keys: tuple[str, ...], suggestions: list[dict]
) -> Edit:
    """The settings of a wrapper or Genie config live in the extension file it names: edit that one."""
    node: object = doc
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, str) or not node:
        raise ApplyError(
            f"{path}: {kind} that names no backend extension file ({'.'.join(keys)}); left untouched"
        )
    target = path.parent / node
    if not target.is_file():
        raise ApplyError(
            f"{path}: {kind} whose {'.'.join(keys)} names {target}, which does not exist; nothing edited"
        )
    before = _read(target)
    try:
        ext = json.loads(before)
    except json.JSONDecodeError:
        ext = None
    if not _is_backend_ext(ext):
        raise ApplyError(
            f"{path}: {kind} naming {target}, which is not an htp_backend_ext_config.json "
            "q9diff understands; both left untouched"
        )
    edit = _plan_backend_ext(target, before, ext, suggestions)
    led = f"{path} is {kind}: its settings live in {target}, edited here"
    return replace(edit, note="\n".join(filter(None, (led, edit.note))))


def _plan_backend_ext(path: Path, before: str, doc: dict, suggestions: list[dict]) -> Edit:
    new = copy.deepcopy(doc)
    notes: list[str] = []
    for s in suggestions:
        for target, value in s["targets"].get("htp_backend_ext_config", {}).items():
            notes += _set_in_section(path, new, target, value)
    after = _dump_like(before, new) if new != doc else before
    return Edit(path, before, after, "\n".join(dict.fromkeys(notes)))


def _set_in_section(path: Path, doc: dict, target: str, value: object) -> list[str]:
    """Set `section[0].key` / `section.key` in every entry of the section, the way QNN reads it.

    Every entry, because a file with several `graphs` entries configures each graph through its own;
    a missing section is created in the target's shape. Returns notes on what the diff does not explain.
    """
    section_ref, key = target.split(".")
    section, is_list = section_ref.split("[")[0], "[" in section_ref
    notes = []
    if section not in doc:
        doc[section] = [{}] if is_list else {}
        if section == "graphs":
            notes.append("added a graphs entry: name the graphs it is for in its graph_names")
    entries = doc[section] if isinstance(doc[section], list) else [doc[section]]
    if not entries:
        entries.append({})
    for entry in entries:
        if not isinstance(entry, dict):
            raise ApplyError(f"{path}: {section} holds {entry!r}, not an object; left untouched")
        notes += _set_key(entry, key, value)
    return notes


def _set_key(entry: dict, key: str, value: object) -> list[str]:
    """Set `key`, renaming an older spelling of it in place so the user's key order is kept."""
    older = [old for old, new in OLDER_EXT_KEYS.items() if new == key and old in entry]
    if key in entry or not older:
        entry[key] = value
        return []
    items = [(key, value) if k == older[0] else (k, v) for k, v in entry.items()]
    entry.clear()
    entry.update(items)
    return [f"{older[0]} replaced by {key}: QNN reads {key}, and a file saying {older[0]} fails (err 5005)"]


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
