"""Two inputs compared: two context binaries, or two sets paired part by part (a folder of parts, a Genie
bundle or config, a container of several contexts), a different number of parts being itself a finding;
and a set diff's JSON, `q9diff.setdiff/1`, its causes and fixes each said once over the parts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from q9diff.compare.cause import Cause
from q9diff.compare.diff import DiffResult, diff, to_json
from q9diff.compare.models import different_models, models_json
from q9diff.compare.suggestions import merged_suggestions
from q9diff.errors import FormatError, InputError
from q9diff.formats import dlc as D
from q9diff.read.parse import read_errors
from q9diff.units import percent

if TYPE_CHECKING:  # the api layer's resolved input, named in signatures only
    from q9diff.inputs import Input


@dataclass
class SetDiff:
    """Two sets of parts paired part by part; a different number of parts is itself a finding. Parts are
    named by their paths (FILE, or FILE#LABEL in a container); an unpaired part's size is kept beside it."""

    pairs: list[tuple[Path, Path, DiffResult]]
    unpaired_a: list[Path]
    unpaired_b: list[Path]
    unpaired_sizes: dict[str, list[int]] = field(default_factory=lambda: {"a": [], "b": []})

    @property
    def identical(self) -> bool:
        return not self.unpaired_a and not self.unpaired_b and all(r.identical for _, _, r in self.pairs)

    @property
    def split_cause(self) -> Cause | None:
        na, nb = len(self.pairs) + len(self.unpaired_a), len(self.pairs) + len(self.unpaired_b)
        if na == nb:
            return None
        return Cause("split", "root", na, nb, None, (f"{na} parts vs {nb} parts",))


def diff_sets(a: Input, b: Input, on_part=None) -> SetDiff:
    """Pair the parts of two inputs (q9diff.inputs) and diff each pair; `on_part(pa, pb, result)` runs
    while both files are mapped, then the pair's JSON is kept and both mappings are released."""
    la, lb = a.parts, b.parts
    key = _keys(la + lb)
    names_a = {key[x] for x in la}
    names_b = {key[p]: p for p in lb}
    pairs, ua = [], []
    for i, pa in enumerate(la):
        pb = names_b.get(key[pa])
        if pb is None and not key[pa].startswith(_SOC):  # else the part at the same place, if unpaired
            pb = lb[i] if i < len(lb) and key[lb[i]] not in names_a else None
        if pb is None:
            ua.append(pa)
            continue
        r = diff(pa.open(), pb.open())
        if on_part is not None:
            on_part(pa.path, pb.path, r)
        r.summary = to_json(r)
        r.a.release(), r.b.release()
        pairs.append((pa, pb, r))
    used = {pb for _, pb, _ in pairs}
    ub = [p for p in lb if p not in used]
    return SetDiff(
        [(pa.path, pb.path, r) for pa, pb, r in pairs],
        [p.path for p in ua],
        [p.path for p in ub],
        {"a": [p.size() for p in ua], "b": [p.size() for p in ub]},
    )


_SOC = "soc_model "  # the pairing key of a context DLC's cache
# A context DLC's cache records, as QAIRT 2.49 (backend.metadata<n>) and 2.50-2.51 (htp.cache.<soc>.<n>)
# name them: only such a label has the DLC's metadata read for its SoC (any other context of an EPContext
# model is paired by its label, its model read once).
_CACHE_NAMES = (D.CACHE_PREFIX, D.CACHE_PREFIX_2_49)


def _keys(parts: list) -> dict:
    """What pairs each part with its counterpart: a context DLC's cache by the SoC its metadata names
    (QAIRT 2.51 names the record htp.cache.<soc>.0, 2.49 backend.metadata<n>, so names do not pair
    across versions), and it pairs only so: a cache for another SoC at the same place is a SoC added and
    one removed, not a build for the wrong SoC. Any other context of a container by its label, any other
    part by its file name."""
    socs: dict = {}  # (file, container) -> {cache name: soc_model}, each DLC read once
    out = {}
    for p in parts:
        if p.label is not None and p.container in (".dlc", ".onnx") and p.label.startswith(_CACHE_NAMES):
            if (p.file, p.container) not in socs:
                socs[p.file, p.container] = _cache_socs(p.file, p.container)
            soc = socs[p.file, p.container].get(p.label)
            if soc is not None:
                out[p] = f"{_SOC}{soc}"
                continue
        out[p] = p.label if p.label is not None else p.path.name
    return out


def _cache_socs(file: Path, container: str) -> dict:
    """Each cache's soc_model, as the DLC a file is or names lists it ({} for no DLC)."""
    from q9diff.read.dlc import Dlc, behind  # start-up: read.dlc

    found = behind(file, container)
    if found is None:
        return {}
    return {c.name: c.info.get("socModel") for c in Dlc.open(found).caches}


def distinct_causes(parts: list[dict]) -> list[dict]:
    """The parts' causes over a set, each (name, a, b) once, in part order."""
    causes, seen = [], set()
    for p in parts:
        for c in p["causes"]:
            key = (
                c["name"],
                c.get("option"),
                json.dumps(c["a"], default=str),
                json.dumps(c["b"], default=str),
            )
            if key not in seen:
                seen.add(key)
                causes.append(c)
    return causes


def set_to_json(sd: SetDiff) -> dict:
    parts = [dict(r.summary, part=pa.name) for pa, _, r in sd.pairs]  # each pair's JSON, kept by diff_sets
    split = [] if not sd.split_cause else [{**sd.split_cause.to_json(), "bytes": None}]
    causes = split + distinct_causes(parts)
    sugg = merged_suggestions([s for p in parts for s in p["suggestions"]])
    unpaired = sd.unpaired_sizes
    a_total = sum(r.a.size for _, _, r in sd.pairs) + sum(unpaired["a"])
    b_total = sum(r.b.size for _, _, r in sd.pairs) + sum(unpaired["b"])
    return {
        "schema": "q9diff.setdiff/1",
        "identical": sd.identical,
        "a_total": a_total,
        "b_total": b_total,
        "size_delta": b_total - a_total,
        "size_delta_percent": percent(b_total - a_total, a_total),
        "unpaired_a": [str(p) for p in sd.unpaired_a],
        "unpaired_b": [str(p) for p in sd.unpaired_b],
        # The unpaired parts' sizes, so a saved result draws the set's table without the files.
        "unpaired_sizes": unpaired,
        "causes": causes,
        "suggestions": sugg,
        "parts": parts,
        **models_json(different_models(*([g for p in parts for g in p[s]["graphs"]] for s in "ab"))),
    }


def compared(a: Input, b: Input, progress=None) -> tuple[DiffResult | SetDiff, dict]:
    """Two inputs compared, with the result's JSON: part by part when either is a set (`progress(line)`
    hears each pair compared), else the two context binaries. Bytes a reader cannot make sense of are one
    InputError naming both."""

    def on_part(pa: Path, pb: Path, r) -> None:
        if progress is not None:
            progress(f"compared {pa.name} with {pb.name}")

    if a.is_set or b.is_set:  # two containers of one and of several contexts: sets
        try:
            sd = diff_sets(a, b, on_part=on_part)
        except FormatError:
            raise
        except (OSError, *read_errors()) as exc:
            raise InputError(f"{a.given} / {b.given}: {exc}") from exc
        data = set_to_json(sd)
        socs = _soc_set(a, b)
        if socs is not None:  # a cache more or fewer is a SoC more or fewer, not a model split otherwise
            data["causes"] = [socs, *(c for c in data["causes"] if c["name"] != "split")]
        return sd, data
    ca, cb = a.at.open(), b.at.open()
    try:
        pair = diff(ca, cb)
    except FormatError:
        raise
    except read_errors() as exc:
        raise InputError(
            f"{a.given} / {b.given}: not a context binary q9diff can read ({type(exc).__name__}: {exc})"
        ) from exc
    return pair, to_json(pair)


def dlcs(a: Input, b: Input) -> tuple | None:
    """The two context DLCs two inputs are, given whole or through the EPContext models naming them; None
    for any other pair."""
    if a.at.label is not None or b.at.label is not None:
        return None
    if not {a.at.container, b.at.container} <= {".dlc", ".onnx"}:  # only these can be or name a DLC
        return None
    from q9diff.read.dlc import Dlc, behind  # start-up: read.dlc

    fa, fb = behind(a.at.file, a.at.container), behind(b.at.file, b.at.container)
    return None if fa is None or fb is None else (Dlc.open(fa), Dlc.open(fb))


def _soc_set(a: Input, b: Input) -> dict | None:
    """Two multi-SoC context DLCs whose caches are for different SoCs: that set cause
    (q9diff.compare.dlc.soc_set); None for any other pair."""
    pair = dlcs(a, b)
    if pair is None:
        return None
    from q9diff.compare.dlc import soc_set  # start-up: compare.dlc

    return soc_set(*pair)
