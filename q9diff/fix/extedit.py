"""The edit of one `htp_backend_ext_config.json`, as text, checked against the binaries and Qualcomm's parser.

Graph settings go to the entries whose `graph_names` name the candidate's graphs (or `"*"`), else to a new
entry naming them, never to an entry without `graph_names` (QNN applies none of its settings). soc_model
and dsp_arch are set together from the reference binary, under the file's own SoC key (`soc_id` and
`soc_model` are both integers in Qualcomm's schema). Every value of the file that disagrees with what the
candidate binary was built with is said in one line. Where onnxruntime-qnn is installed, Qualcomm's own
parser reads the file before and after (q9diff.fix.extconfig): an edit never adds an error.

`graphs` written as one object (ai-engine-direct-helper's onnx2bin configs, QIDK's device_config.json) is
rejected by that parser (QAIRT 2.51: "Schema error: #/graphs ... expected array"), so an edit makes it the
list the schema wants, holding that entry first, then any new one; the parser's verdict before and after
is said.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from q9diff import jsonc
from q9diff.fix import extconfig
from q9diff.fix.edit import ApplyError

# Keys of a devices[] entry that say the SoC: Qualcomm's schema takes both as integers, so the file's
# own key is kept (QNN_FACTS "Where each setting lives").
SOC_KEYS = ("soc_model", "soc_id")


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
    """Graph names, the soc_model the build asked for (0 for a generic build, even where the metadata
    records the compiler's default SoC: one story with inspect and diff) and the dsp_arch."""
    if isinstance(b, dict):
        soc = (b.get("target") or {}).get("soc_model_requested", b.get("soc_model"))
        return [g.get("name") for g in b.get("graphs", [])], soc, b.get("dsp_arch")
    from q9diff.compare.summary import target  # start-up: compare.summary, construct

    return [g.name for g in b.graphs], target(b)["soc_model_requested"], b.dsp_arch


def _one(values: Iterable[object]) -> int | None:
    found = set(values)
    value = found.pop() if len(found) == 1 else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def writable(value: object) -> bool:
    """A value q9diff read and may write: a finite JSON scalar, never None."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (bool, int, str))


def unknown_soc(facts: BuildFacts) -> str:
    """Why the SoC pair cannot be written (the reference binary's soc_model or dsp_arch is unknown), or ""."""
    pair = {"soc_model": facts.reference_soc_model, "dsp_arch": facts.reference_dsp_arch}
    unknown = [k for k, v in pair.items() if v is None]
    if not unknown:
        return ""
    return (
        f"soc_model and dsp_arch go together and the reference binary's {unknown[0]} is unknown: "
        "neither is written"
    )


def edit_text(
    path: Path, before: str, root: jsonc.Node, suggestions: list[dict], facts: BuildFacts | None
) -> tuple[str, str]:
    """(new text, notes) that carry `suggestions` into the extension file `path` (text `before`, tree
    `root`, an object); ApplyError when q9diff will not edit it. See _ExtEdit."""
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
    e.list_graphs()
    after = e.editor.result()
    if after != before:
        try:
            jsonc.parse(after)  # an edit of ours that is not JSON is a bug, never a write
        except jsonc.JsoncError as exc:
            raise ApplyError(
                f"{path}: q9diff's edit would not be JSON ({exc}); please report it; left untouched"
            ) from None
        e.validate(after)
    return after, "\n".join(dict.fromkeys(e.notes))


class _ExtEdit:
    """The edit of one htp_backend_ext_config.json: graph settings go to the entries whose graph_names
    name the candidate's graphs (or "*"), else to a new entry naming them; soc_model and dsp_arch are set
    together from the reference binary under the file's own SoC key; every other byte stays."""

    def __init__(self, path: Path, text: str, root: jsonc.Node, facts: BuildFacts | None) -> None:
        self.path, self.text, self.root, self.facts = path, text, root, facts
        self.editor = jsonc.Editor(text, root)
        self.notes: list[str] = []
        self.new_graphs: list[dict[str, object]] = []  # entries after a one-object graphs (list_graphs)
        self.listed = False  # graphs was one object and is made a list

    def wanted(self, suggestions: list[dict]) -> dict[str, dict[str, object]]:
        """section -> key -> value from the suggestions' htp_backend_ext_config targets."""
        out: dict[str, dict[str, object]] = {}
        for s in suggestions:
            for target, value in s.get("targets", {}).get("htp_backend_ext_config", {}).items():
                if not writable(value):
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
            unknown = unknown_soc(f)
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
        made = "made it a list holding that entry first" + (", then the new one" if self.new_graphs else "")
        try:
            was, now = extconfig.check(texts)
        except extconfig.Unavailable as exc:
            if self.listed:
                self.notes.append(
                    f"{self.path.name}: graphs was one object, which QAIRT 2.51's parser rejects (its schema "
                    f"wants a list); q9diff {made}"
                )
            self.notes.append(f"not checked with Qualcomm's parser: {exc}")
            return
        how = "" if strict else " (read without its comments and trailing commas, which it does not accept)"
        added = [e for e in now.errors if e not in was.errors]
        if added and self.listed:
            # The list the parser asked for lets it read on, to a complaint one object hid.
            before, after = extconfig.said(was.errors), extconfig.said(now.errors)
            raise ApplyError(
                f"{self.path}: graphs is one object, which Qualcomm's parser rejects ({before}){how}; made a "
                f"list, the parser then reports: {after}; correct that in the file (q9diff does not change "
                "values it was not asked to); left untouched"
            )
        if added:
            raise ApplyError(
                f"{self.path}: the edit would add an error Qualcomm's parser reports{how}: {added[0]}; "
                "left untouched"
            )
        said = f"Qualcomm's parser ({extconfig.LIBRARY}){how}"
        if self.listed:
            self.notes.append(
                f"{self.path.name}: graphs was one object; {said} before the edit: "
                f"{extconfig.said(was.errors) or 'no errors'}. q9diff {made}; after the edit: "
                f"{extconfig.said(now.errors) or 'no errors'}"
            )
        elif was.errors:
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
            self.new_graphs.append(entry)
        self.notes.append(
            f"{self.path.name}: added a graphs entry naming the candidate's {len(missing)} graphs"
        )

    def list_graphs(self) -> None:
        """graphs as one object, which Qualcomm's parser rejects (its schema wants a list): made a list
        holding that entry first, then the entries set_graphs adds; a text edit around the object."""
        graphs = self.root.get("graphs")
        if graphs is not None and graphs.kind == "object":
            self.editor.wrap_in_list(graphs, self.new_graphs)
            self.listed = True

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
