"""A diff as its saved JSON records it (`q9diff.diff/1`, `q9diff.setdiff/1`): what presenters read, no
file open.

A `DiffResult` holds the two mapped binaries while it is computed; every presenter (terminal, HTML,
Markdown) reads only what `to_json` writes, so a result saved with `--json` renders the same later,
with the binaries gone (`q9diff report`). These types give the terminal the attributes it reads of a
`DiffResult` (`a.size`, `a.graphs[i].name`, `causes[i].name` ...) from that JSON. The JSON is checked
first (q9diff.present.saved): here it is taken as well-formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from q9diff.compare.cause import Cause


@dataclass(frozen=True)
class SavedGraph:
    name: str


@dataclass(frozen=True)
class SavedFile:
    """One compared file: its path, size and graphs, as the inspect summary in the result records them."""

    path: str
    size: int
    graphs: tuple[SavedGraph, ...]


@dataclass(frozen=True)
class SavedDiff:
    a: SavedFile
    b: SavedFile
    regions: list[dict]
    causes: list[Cause]
    suggestions: list[dict]
    unknown: list[dict]
    attribution: list[dict]
    weights_verdict: str | None
    settings: dict
    identical: bool
    different_models: tuple[str, ...]  # the evidence, () for one model's builds
    summary: dict  # the JSON itself: `to_json` of a saved diff gives it back unchanged
    structure: dict  # what changed in the structure (q9diff.compare.structure.compare)


def _file(side: dict) -> SavedFile:
    return SavedFile(side["path"], side["size"], tuple(SavedGraph(g["name"]) for g in side["graphs"]))


def saved_diff(data: dict) -> SavedDiff:
    causes = [
        Cause(c["name"], c["role"], c["a"], c["b"], c["bytes"], tuple(c["evidence"]), c.get("size_delta"))
        for c in data["causes"]
    ]
    return SavedDiff(
        _file(data["a"]),
        _file(data["b"]),
        data["regions"],
        causes,
        data["suggestions"],
        data["unknown"],
        data["attribution"],
        data["weights_verdict"],
        data.get("settings") or {},
        data["identical"],
        tuple(data.get("different_models", {}).get("evidence", ())),
        data,
        data.get("structure") or {"same": True},
    )


@dataclass(frozen=True)
class SavedSet:
    """A set diff: `pairs` as `SetDiff.pairs` gives them (candidate part, reference part, its diff)."""

    pairs: list[tuple[PurePath, PurePath, SavedDiff]]
    unpaired_a: list[PurePath]
    unpaired_b: list[PurePath]
    identical: bool
    data: dict


def saved_set(data: dict) -> SavedSet:
    pairs = [(PurePath(p["a"]["path"]), PurePath(p["b"]["path"]), saved_diff(p)) for p in data["parts"]]
    return SavedSet(
        pairs,
        [PurePath(p) for p in data["unpaired_a"]],
        [PurePath(p) for p in data["unpaired_b"]],
        data["identical"],
        data,
    )
