"""`suggest --apply`: carry the suggested fixes into the user's files, safely.

Every edit is shown as a unified diff, written atomically, and the original kept as FILE.bak.
Files q9diff understands: q9diff recipes and `htp_backend_ext_config.json` (compile- or device-side).
A Python script gets the exact change printed instead; anything else is refused untouched.
"""

from __future__ import annotations

import copy
import difflib
import json
import shutil
from dataclasses import dataclass
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
}


class ApplyError(ValueError):
    """A file that q9diff will not edit; the message names it and says why."""


@dataclass(frozen=True)
class Edit:
    path: Path
    before: str
    after: str
    note: str = ""

    @property
    def unified(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(True),
                self.after.splitlines(True),
                f"{self.path}",
                f"{self.path} (fixed)",
            )
        )


def _set_path(doc: dict, path: str, value) -> None:
    """Set `a[0].b` in a JSON document, creating what is missing."""
    node = doc
    parts = path.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if "[" in part:
            key, idx = part[:-1].split("[")
            lst = node.setdefault(key, [])
            while len(lst) <= int(idx):
                lst.append({})
            if last:
                lst[int(idx)] = value
            else:
                node = lst[int(idx)]
        elif last:
            node[part] = value
        else:
            node = node.setdefault(part, {})


def plan(path: Path, suggestions: list[dict]) -> Edit:
    """The edit that carries `suggestions` into `path`, or ApplyError if q9diff does not understand it."""
    try:
        before = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApplyError(f"{path}: cannot read ({exc})") from None
    if path.suffix == ".py":
        lines = [s["targets"]["qairt"] for s in suggestions]
        raise ApplyError(
            f"{path}: a Python script is not edited; change its CompileConfig to use: " + "; ".join(lines)
        )
    try:
        doc = json.loads(before)
    except json.JSONDecodeError:
        raise ApplyError(
            f"{path}: not a recipe or htp_backend_ext_config.json q9diff understands; left untouched"
        ) from None
    new = copy.deepcopy(doc)
    if isinstance(doc, dict) and doc.get("schema") == recipe_mod.SCHEMA:
        settings = new.setdefault("settings", {})
        for s in suggestions:
            if s["setting"] in RECIPE_FIELDS:
                field, conv = RECIPE_FIELDS[s["setting"]]
                settings[field] = conv(s["value"])
        recipe_mod.Recipe.from_dict(new, str(path))  # still a valid recipe
    elif isinstance(doc, dict) and ({"devices", "graphs", "context"} & set(doc) or not doc):
        for s in suggestions:
            for json_path, value in s["targets"].get("htp_backend_ext_config", {}).items():
                _set_path(new, json_path, value)
    else:
        raise ApplyError(
            f"{path}: not a recipe or htp_backend_ext_config.json q9diff understands; left untouched"
        )
    after = json.dumps(new, indent=2) + "\n"
    return Edit(path, before, after if new != doc else before)


def write(edit: Edit) -> None:
    if edit.before == edit.after:
        return
    shutil.copy2(edit.path, edit.path.with_name(edit.path.name + ".bak"))
    write_atomic(edit.path, edit.after)
