"""`suggest --apply`: carry the suggested fixes into the user's files, safely.

Every edit is shown as a unified diff; writing is all or nothing over the files of one run, each file
replaced atomically and its original kept as FILE.bak (FILE.bak.1, ... when that name is taken, so no
backup is ever overwritten). Files q9diff edits: q9diff recipes and `htp_backend_ext_config.json`
(compile- or device-side), reached directly or through the file that names it (a
qnn-context-binary-generator `--config_file` wrapper, a Genie config), found the way those tools find
it and only inside the config's folder (or given by the user). Extension files are edited as text
(q9diff.fix.extedit over q9diff.jsonc): only the values that change, keys added in the file's own layout,
comments and spelling kept, checked against the binaries and Qualcomm's own parser. Writes are
q9diff.fix.safewrite's. A Python script that builds a qairt `CompileConfig` gets the exact change shown as
a diff and is never written; anything else is refused untouched.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from q9diff import jsonc, settings
from q9diff.compare.rules import qairt_call
from q9diff.fix.edit import ApplyError, Edit
from q9diff.fix.extedit import BuildFacts, edit_text, unknown_soc, writable
from q9diff.fix.kept import taken_away
from q9diff.fix.safewrite import read_exact, write_all
from q9diff.guard import is_file, nameable
from q9diff.recipes import recipe as recipe_mod

# Suggestion setting -> (recipe settings field, value transform).
RECIPE_FIELDS = settings.recipe_fields()  # cause -> (recipe field, conversion): a view of q9diff.settings

# Top-level sections that mark a JSON document as an HTP backend extension config.
BACKEND_EXT_SECTIONS = {"devices", "graphs", "context", "memory", "groupContext"}

# Files that name the backend extension config instead of holding the settings:
# (what the file is, the keys leading to the referenced path, relative to the file's folder).
REFERRING_CONFIGS = (
    ("a qnn-context-binary-generator --config_file wrapper", ("backend_extensions", "config_file_path")),
    ("a Genie config", ("dialog", "engine", "backend", "extensions")),
)

# Calls that mark a Python script as one that builds a qairt CompileConfig.
QAIRT_CALLS = {"CompileConfig", "HtpDeviceConfig", "HtpGraphConfig", "HtpContextConfig"}

PLACEHOLDER = re.compile(r"<[^<>]*>")  # `<soc_model>`, `<path to ext config>` in templates

UNKNOWN = (
    "not a recipe, htp_backend_ext_config.json, qnn-context-binary-generator config, Genie config "
    "or CompileConfig script q9diff understands; left untouched"
)


def plan(
    path: Path, suggestions: list[dict], facts: BuildFacts | None = None, named: Iterable[Path] = ()
) -> Edit:
    """The edit that carries `suggestions` into `path` (or the file it names), or ApplyError if q9diff
    does not understand it; planning never writes, so --dry-run and refusals leave every file as it was.

    `facts` (from the binaries) check the file and complete the SoC pair; `named` are the files the user
    gave, which a wrapper may name even outside its own folder. A symbolic link is edited at its target.
    """
    real, notes = _follow_link(path)
    before = read_exact(real)
    if path.suffix == ".py":
        return _plan_script(path, before, suggestions)
    try:
        root = jsonc.parse(before)
    except jsonc.JsoncError as exc:
        raise ApplyError(f"{path}: {UNKNOWN} (not JSON: {exc})") from None
    doc = root.to_python()
    if isinstance(doc, dict) and doc.get("schema") in recipe_mod.SCHEMAS:
        edit = _plan_recipe(real, before, doc, suggestions, facts)
    elif isinstance(doc, dict) and any(keys[0] in doc for _, keys in REFERRING_CONFIGS):
        kind, keys = next((k, keys) for k, keys in REFERRING_CONFIGS if keys[0] in doc)
        edit = _plan_referenced(path, doc, kind, keys, suggestions, facts, named)
    elif _is_backend_ext(doc):
        edit = _plan_backend_ext(real, before, root, suggestions, facts)
    else:
        raise ApplyError(f"{path}: {UNKNOWN}")
    _keeps_every_value(edit)
    return replace(edit, note="\n".join(filter(None, (*notes, edit.note))))


def _keeps_every_value(edit: Edit) -> None:
    """Refuse an edit that would drop or reshape a value of the user's (q9diff.fix.kept)."""
    if edit.advice_only or edit.before == edit.after:
        return
    try:
        said = taken_away(jsonc.parse(edit.before).to_python(), jsonc.parse(edit.after).to_python())
    except ApplyError as exc:
        raise ApplyError(f"{edit.path}: {exc}") from None
    if said:
        what = "; ".join(said[:4])
        raise ApplyError(
            f"{edit.path}: the edit would take away what the file holds ({what}); left untouched"
        )


def write(edit: Edit) -> list[tuple[Path, Path]]:
    """Write one edit; see write_all."""
    return write_all([edit])


def _follow_link(path: Path) -> tuple[Path, list[str]]:
    """The file to edit for `path`: itself, or the target of a symbolic link, said in a note."""
    if not path.is_symlink():
        return path, []
    real = Path(os.path.realpath(path))
    return real, [f"{path} is a symbolic link: its target {real} is edited, the link stays"]


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


def _plan_recipe(
    path: Path, before: str, doc: dict, suggestions: list[dict], facts: BuildFacts | None
) -> Edit:
    new = copy.deepcopy(doc)
    settings = new.setdefault("settings", {})
    notes = []
    if facts is not None and {"soc_model", "dsp_arch"} & {s["setting"] for s in suggestions}:
        pair = {"soc_model": facts.reference_soc_model, "dsp_arch": facts.reference_dsp_arch}
        suggestions = [s for s in suggestions if s["setting"] not in pair]
        unknown = unknown_soc(facts)
        if unknown:
            notes.append(unknown)
        else:
            suggestions += [{"setting": k, "value": v} for k, v in pair.items()]  # the SoC as a pair
    for s in suggestions:
        if s["setting"] in RECIPE_FIELDS:
            if not writable(s.get("value")):
                notes.append(f"{s['setting']}: the reference's value is unknown, so it is not written")
                continue
            field, conv = RECIPE_FIELDS[s["setting"]]
            settings[field] = conv(s["value"])
    recipe_mod.Recipe.from_dict(new, str(path))  # still a valid recipe
    return Edit(path, before, _dump_like(before, new) if new != doc else before, "\n".join(notes))


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
    before = read_exact(target)
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
    directory when that folder holds the config (Genie run from a parent folder, as ai-engine-direct-helper
    does), `\\` or `/` alike; a device path by its file name beside the config (said in a note).

    Whichever way it is found, the file must resolve inside the config's own folder, or be a file the user
    named: a downloaded config naming a path it does not hold must not reach, through the working
    directory, a file of the user's own beside its download folder.
    """
    if PLACEHOLDER.search(ref):
        raise ApplyError(
            f"{config}: {kind} whose {where} is the placeholder {ref!r}; pass the extension file itself "
            "with --apply; left untouched"
        )
    if not nameable(ref):
        raise ApplyError(f"{config}: {kind} whose {where} is {ref!r}, not a file name; nothing edited")
    posix = ref.replace("\\", "/")
    allowed = {Path(os.path.realpath(p)) for p in named}
    absolute = PurePosixPath(posix).is_absolute() or re.match(r"[A-Za-z]:/", posix)
    if absolute and is_file(ref):  # a path on this machine: kept to what the user named
        found, note = [(Path(ref), config.parent)], []
    elif absolute:
        beside = config.parent / PurePosixPath(posix).name
        if not is_file(beside):
            raise ApplyError(
                f"{config}: {kind} whose {where} is {ref}, a path on the device, and there is no "
                f"{beside.name} beside it; pass the extension file itself with --apply; left untouched"
            )
        found = [(beside, config.parent)]
        note = [f"{ref} is a path on the device: edited {beside}, the file of that name beside {config.name}"]
    else:
        cwd = Path.cwd()
        bases = [config.parent] + (
            [cwd] if Path(os.path.realpath(config)).is_relative_to(cwd.resolve()) else []
        )
        found = [(base / posix, base) for base in bases if is_file(base / posix)]
        note = []
        if not found:
            tried = " or ".join(dict.fromkeys(str(b / posix) for b in bases))
            raise ApplyError(
                f"{config}: {kind} whose {where} names {tried}, which does not exist; nothing edited"
            )
    target, base = found[0]
    real = Path(os.path.realpath(target))
    home = config.parent
    if real not in allowed and not real.is_relative_to(os.path.realpath(home)):
        via = "" if base == home else f" (found from the working directory {base})"
        raise ApplyError(
            f"{config}: {kind} whose {where} leads to {real}{via}, outside {home}; q9diff edits only files "
            "in the config's folder or given with --apply; nothing edited"
        )
    if target.is_symlink():
        note.append(f"{target} is a symbolic link: its target {real} is edited, the link stays")
        return real, note
    return target, note


def _plan_backend_ext(
    path: Path, before: str, root: jsonc.Node, suggestions: list[dict], facts: BuildFacts | None
) -> Edit:
    if root.kind != "object":
        raise ApplyError(f"{path}: {UNKNOWN}")
    return Edit(path, before, *edit_text(path, before, root, suggestions, facts))


@dataclass(frozen=True)
class _Keyword:
    """One keyword of a suggested qairt call, e.g. HtpDeviceConfig(soc_model=77)."""

    call: str
    name: str
    value: ast.expr
    source: str


def _qairt_keywords(suggestions: list[dict]) -> list[_Keyword]:
    """The suggestions' qairt targets, parsed, so the script is matched on syntax and not on text. A
    graph's `name` picks the graph and is no setting: a script's HtpGraphConfig keeps its own."""
    out = []
    for s in suggestions:
        target = s["targets"].get("qairt")
        if not target:
            continue
        call = ast.parse(target, mode="eval").body
        if isinstance(call, ast.ListComp):  # [HtpGraphConfig(name=n, ...) for n in (...)]
            call = call.elt
        if not isinstance(call, ast.Call):
            raise ValueError(f"qairt target {target!r} is not a call")
        for kw in call.keywords:
            if kw.arg == "name":
                continue
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
    graphs = next((tuple(s["graphs"]) for s in suggestions if "graphs" in s), None)
    for name, kws in wanted.items():
        if name not in calls:
            named = "name={name}, " if name == "HtpGraphConfig" else ""
            add = qairt_call(f"{name}({named}{', '.join(f'{k.name}={k.source}' for k in kws)})", graphs)
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
