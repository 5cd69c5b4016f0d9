"""What a Genie bundle is beyond its ctx-bins, compared: its config and the backend extension config as
settings, its tokenizer and every other file byte for byte. A set diff compares the ctx-bins part by part;
two bundles whose ctx-bins are alike but whose configs differ (another rope-theta, eos token, soc_model)
run differently, so "identical" speaks for every file of both bundles.

A bundle given as a folder is every regular file under it (the ctx-bins aside, compared as parts); a config
given as a file is that config and the files it names. A file that leads outside the bundle, or is no
regular file, is listed and never read. The extension config's values that a ctx-bin records too are root
causes, as in a ctx-bin (settings.SETTINGS: the extension key, the cause it is); the rest are settings that
differ, each listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from q9diff.compare.cause import Cause
from q9diff.errors import Q9Error
from q9diff.guard import digest, inside, is_file, kind, load_json

if TYPE_CHECKING:  # the api layer's resolved input, named in signatures only
    from q9diff.inputs import Input

KINDS = ("Genie bundle", "Genie config")
MAX_FILES = 4096  # a bundle holds tens of files; a folder of more is compared up to this many, said so
MAX_SETTINGS = 200  # settings listed that differ; the rest counted
CONFIG, EXTENSION = "the Genie config", "the backend extension config"


@dataclass
class Side:
    """One bundle's files beside its ctx-bins: by name (relative to the bundle, or the role of its config
    and extension config, which two bundles may name differently), the file or why it was not read."""

    root: Path
    files: dict[str, Path | str] = field(default_factory=dict)
    data: dict[str, object] = field(default_factory=dict)  # a config's parsed settings, by the same name
    shown: dict[str, str] = field(default_factory=dict)  # a role's file name as the bundle names it
    more: int = 0  # files past MAX_FILES, not compared


def side(inp: Input) -> Side | None:
    """The files of a Genie bundle or config beside its ctx-bins; None for any other input."""
    if inp.kind is None or inp.kind.name not in KINDS:
        return None
    from q9diff.genie.config import read  # start-up: a bundle's diff only

    cfg = read(inp.given)
    s = Side(cfg.root)
    parts = {Path(p.path).resolve() for p in inp.parts}
    s.files[CONFIG], s.data[CONFIG], s.shown[CONFIG] = cfg.path, cfg.data, cfg.path.name
    if cfg.extension is not None and cfg.extension.path is not None:
        s.files[EXTENSION], s.shown[EXTENSION] = cfg.extension.path, cfg.extension.path.name
        try:
            s.data[EXTENSION] = load_json(cfg.extension.path, "a backend extension config")
        except Q9Error:
            pass  # compared byte for byte
    named = {Path(p).resolve() for p in s.files.values() if isinstance(p, Path)}
    if cfg.tokenizer is not None and cfg.tokenizer.path is not None and not inp.is_folder:
        s.files[cfg.tokenizer.path.name] = cfg.tokenizer.path
    if inp.is_folder:
        for rel in _walk(cfg.root, s):
            real = inside(rel, cfg.root)
            if real is None:
                s.files[rel] = "leads outside the bundle; not read"
            elif real in parts or real in named:
                continue
            elif not is_file(real):
                s.files[rel] = "not a regular file; not read"
            else:
                s.files[rel] = real
    return s


def _walk(root: Path, s: Side) -> list[str]:
    """The names under `root` (links not followed into folders), sorted, at most MAX_FILES."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if len(found) == MAX_FILES:
                s.more += 1
                continue
            found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def compare(a: Input, b: Input, sizes: tuple[int, int], parts_identical: bool) -> tuple[dict, dict] | None:
    """Two Genie bundles' files beside their ctx-bins: the diff's `outside` (what was compared, the
    ctx-bins, `sizes` their bytes; whether the bundles differ outside them) and its `bundle` (each file
    that differs, each setting, the extension config's causes); None unless both are bundles."""
    sa, sb = side(a), side(b)
    if sa is None or sb is None:
        return None
    files, settings, causes = [], [], []
    for name in sorted(set(sa.files) | set(sb.files)):
        fa, fb = sa.files.get(name), sb.files.get(name)
        shown = sa.shown.get(name) or sb.shown.get(name) or name
        row = {"file": shown, "a": _size(fa), "b": _size(fb)}
        if isinstance(fa, str) or isinstance(fb, str):
            files.append(row | {"differs": None, "why": fa if isinstance(fa, str) else fb})
        elif fa is None or fb is None:
            files.append(row | {"differs": True, "why": f"only in {'a' if fb is None else 'b'}"})
        elif row["a"] != row["b"] or digest(fa, "a bundle's file") != digest(fb, "a bundle's file"):
            files.append(row | {"differs": True, "why": "its bytes differ"})
            if name in sa.data and name in sb.data:
                changed = _changed(sa.data[name], sb.data[name])
                settings += [{"file": shown, "key": k, "a": va, "b": vb} for k, va, vb in changed]
                if name == EXTENSION:
                    causes += _causes(shown, changed)
    differs = any(f["differs"] for f in files)
    total = [sizes[0] + _total(sa), sizes[1] + _total(sb)]
    o = {
        "compared": "the ctx-bins",
        "a": {"path": str(a.given), "size": total[0], "compared_bytes": sizes[0]},
        "b": {"path": str(b.given), "size": total[1], "compared_bytes": sizes[1]},
        "contexts_identical": parts_identical,
        "differs": differs,
    }
    more = {"not_compared": sa.more + sb.more} if sa.more + sb.more else {}
    listed = settings[:MAX_SETTINGS]
    bundle = {"files": files, "settings": listed, "settings_left_out": len(settings) - len(listed)} | more
    return o, bundle | {"causes": [c.to_json() for c in causes]}


def _size(f: Path | str | None) -> int | None:
    return os.stat(f).st_size if isinstance(f, Path) else None


def _total(s: Side) -> int:
    return sum(os.stat(f).st_size for f in s.files.values() if isinstance(f, Path))


def _changed(a: object, b: object, at: str = "") -> list[tuple[str, object, object]]:
    """Each key path (`dialog.context.eos-token`, `devices[0].soc_model`) whose value differs, with both
    values (None where a side has no such key); containers are walked, without recursion."""
    out: list[tuple[str, object, object]] = []
    todo = [(at, a, b)]
    while todo:
        key, x, y = todo.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), reverse=True):
                todo.append((f"{key}.{k}" if key else str(k), x.get(k), y.get(k)))
        elif isinstance(x, list) and isinstance(y, list):
            for i in reversed(range(max(len(x), len(y)))):
                todo.append((f"{key}[{i}]", x[i] if i < len(x) else None, y[i] if i < len(y) else None))
        elif x != y or type(x) is not type(y):
            out.append((key, _leaf(x), _leaf(y)))
    return out


def _leaf(v: object) -> object:
    """A value as the diff lists it: a container stands as its kind."""
    return v if not isinstance(v, dict | list) else kind(v)


def _causes(file: str, changed: list[tuple[str, object, object]]) -> list[Cause]:
    """The extension config's keys a ctx-bin records too, each a root cause (settings.SETTINGS)."""
    from q9diff.settings import SETTINGS  # start-up: settings

    rows = {s.ext_key: s for s in SETTINGS if s.cause is not None and s.per_unit == 1}
    out = []
    for key, va, vb in changed:
        row = rows.get(key.rsplit(".", 1)[-1])
        if row is None or isinstance(va, bool | type(None)) or isinstance(vb, bool | type(None)):
            continue
        out.append(
            Cause(
                row.cause,
                "root",
                va,
                vb,
                None,
                (
                    f"{file}: {key} is {va!r} in the candidate's bundle and {vb!r} in the reference's: the "
                    "runtime extension config Genie passes to QNN HTP, read when the ctx-bins load",
                ),
            )  # fmt: skip
        )
    return out
