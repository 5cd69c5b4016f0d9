"""Where the changed bytes went: moved (the same content is elsewhere in the other file's region) or
new, and one bucket per byte so the causes table adds up to the totals, bloaty-style.

Moved content is found by hashing BLOCK-byte blocks of both sides' corresponding regions with numpy and
verifying every hash match byte for byte. The block size is measured on the fixtures: at 32, 64 and 128
bytes every changed byte of the weights pool in the VTCM-only and optimization-only pairs, and of qwen-mini's
shared WEIGHTS pool (soc + VTCM + O), is found re-laid out in the other file (at 256 bytes 98.6%, at
1 KiB 1.4%), while an fp16-vs-w8a16 pair finds 2.6%; 128 halves the work of 64.
"""

from __future__ import annotations

import numpy as np

from q9diff.units import nbytes

BLOCK = 128
_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93] * (BLOCK // 32),
    dtype=np.uint64,
)
_CHUNK = 1 << 15  # rows per step: 4 MiB of blocks, cache-sized


def _blocks(buf, offset: int, size: int) -> np.ndarray:
    n = size // BLOCK
    return np.frombuffer(buf, dtype=np.uint8, count=n * BLOCK, offset=offset).reshape(n, BLOCK)


def _hash(blocks: np.ndarray) -> np.ndarray:
    words = blocks.view(np.uint64)
    with np.errstate(over="ignore"):
        return (words * _MULT).sum(axis=1, dtype=np.uint64)


def _hashes(view: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Hashes of `view`'s blocks (those at `rows`, or all), computed a cache-sized chunk at a time."""
    n = len(view) if rows is None else len(rows)
    out = np.empty(n, dtype=np.uint64)
    for s in range(0, n, _CHUNK):
        part = view[s : s + _CHUNK] if rows is None else view[rows[s : s + _CHUNK]]
        out[s : s + _CHUNK] = _hash(part)
    return out


def _found(
    needles: np.ndarray, nrows: np.ndarray | None, hay: np.ndarray, hrows: np.ndarray | None
) -> np.ndarray:
    """For each block of `needles` (at `nrows`, or all), whether the same 128 bytes are a block of `hay`
    (at `hrows`, or all): hashes sorted on both sides, then every match verified byte for byte."""
    nn = len(needles) if nrows is None else len(nrows)
    nh_all = len(hay) if hrows is None else len(hrows)
    if not nn or not nh_all:
        return np.zeros(nn, dtype=bool)
    hh = _hashes(hay, hrows)
    order = np.argsort(hh)
    sorted_h = hh[order]
    nh = _hashes(needles, nrows)
    norder = np.argsort(nh)  # searching sorted needles walks the haystack once: ~5x faster than random
    pos = np.searchsorted(sorted_h, nh[norder])
    pos[pos == len(sorted_h)] = 0
    hit = np.empty(nn, dtype=bool)
    cand = np.empty(nn, dtype=np.int64)
    hit[norder] = sorted_h[pos] == nh[norder]
    cand[norder] = order[pos]
    if hrows is not None:
        cand = hrows[cand]
    idx = np.flatnonzero(hit)
    for s in range(0, len(idx), _CHUNK):
        part = idx[s : s + _CHUNK]
        own = part if nrows is None else nrows[part]
        hit[part] = (hay[cand[part]] == needles[own]).all(axis=1)
    return hit


def moved_new(a, ra: list, b, rb: list) -> tuple[int, int, int]:
    """(changed, moved, new) bytes between two groups of same-named regions, paired in order; a size
    difference counts as changed bytes too. moved + new == changed."""
    changed = moved = 0
    for x, y in zip(ra, rb):
        n = min(x.size, y.size)
        full = n - n % BLOCK
        xa = _blocks(a.data, x.offset, full)
        xb = _blocks(b.data, y.offset, full)
        diff_rows, diff_counts = [], []
        for s in range(0, len(xa), _CHUNK):
            ne = xa[s : s + _CHUNK] != xb[s : s + _CHUNK]
            if not ne.any():  # most of a near-identical pair: nothing more to do here
                continue
            counts = np.count_nonzero(ne, axis=1)
            rows = np.flatnonzero(counts)
            diff_rows.append(rows + s)
            diff_counts.append(counts[rows])
        rows = np.concatenate(diff_rows) if diff_rows else np.zeros(0, dtype=np.int64)
        counts = np.concatenate(diff_counts) if diff_counts else np.zeros(0, dtype=np.int64)
        tail_a = np.frombuffer(a.data, dtype=np.uint8, count=n - full, offset=x.offset + full)
        tail_b = np.frombuffer(b.data, dtype=np.uint8, count=n - full, offset=y.offset + full)
        tail_changed = int(np.count_nonzero(tail_a != tail_b))
        extra = abs(x.size - y.size)
        changed += int(counts.sum()) + tail_changed + extra
        if not len(rows) and not extra:
            continue
        if x.size == y.size:
            # Content that moved left a changed position behind: look among the changed blocks of `a`.
            hit = _found(xb, rows, xa, rows)
        else:
            hit = _found(xb, rows, _blocks(a.data, x.offset, x.size), None)
        moved += int(counts[hit].sum())
        if extra:
            longer, lr, other, orr = (b, y, a, x) if y.size > x.size else (a, x, b, y)
            k = (extra // BLOCK) * BLOCK
            ext = np.frombuffer(longer.data, dtype=np.uint8, count=k, offset=lr.offset + n).reshape(-1, BLOCK)
            moved += int(_found(ext, None, _blocks(other.data, orr.offset, orr.size), None).sum()) * BLOCK
    for extra_regions in (ra[len(rb) :], rb[len(ra) :]):
        changed += sum(r.size for r in extra_regions)
    return changed, moved, changed - moved


# Which effect a region's changed bytes belong to, by the kind its walker gave it (Region.kind). Moved
# bytes anywhere are the re-laying-out of the same content; new bytes go to the region's own bucket.
KIND_BUCKETS: dict[str, str] = {
    "weights": "weights",
    "weights_header": "weights",
    "options": "compiler_options",
    "schedule": "schedule",
    "padding": "padding",
    "unknown": "unexplained",
}
DEFAULT_BUCKET = "metadata_and_headers"  # metadata, directory, ROOT, pickle headers, sizes, tails
MOVED_BUCKET = "re_tiling"  # the same content, re-laid out by the compiler


def bucket_of(kind: str) -> str:
    """The bucket of a region of this kind (q9diff.format.model.KINDS)."""
    return KIND_BUCKETS.get(kind, DEFAULT_BUCKET)


def buckets(rows: list[dict]) -> list[dict]:
    """One row per bucket: every changed byte and every byte of size delta in exactly one row."""
    out: dict[str, dict] = {}

    def add(name: str, changed: int, delta: int) -> None:
        row = out.setdefault(name, {"bucket": name, "changed_bytes": 0, "size_delta": 0})
        row["changed_bytes"] += changed
        row["size_delta"] += delta

    for r in rows:
        if not r["changed_bytes"] and not r["delta"]:
            continue
        own = bucket_of(r["kind"])
        if r["moved_bytes"]:
            add(MOVED_BUCKET, r["moved_bytes"], 0)
        add(own, r["new_bytes"], r["delta"])
    return [row for row in out.values() if row["changed_bytes"] or row["size_delta"]]


def weights_verdict(rows: list[dict], roots: list[str]) -> str | None:
    """One sentence on the weights: identical but re-laid out, or new content. Its numbers are bytes, as
    in the attribution table: the weights' moved bytes are part of the `re_tiling` row, which also holds
    what moved elsewhere (padding, tails), so both are named where they differ."""
    w = [r for r in rows if bucket_of(r["kind"]) == "weights"]
    changed = sum(r["changed_bytes"] for r in w)
    if not changed:
        return None
    moved, new = sum(r["moved_bytes"] for r in w), sum(r["new_bytes"] for r in w)
    all_moved = sum(r["moved_bytes"] for r in rows)
    of = f", within {MOVED_BUCKET}'s {nbytes(all_moved)}"
    of = f", all of {MOVED_BUCKET}" if all_moved == moved else of
    by = f": an effect of {', '.join(roots)}" if roots else ""
    if new == 0:
        return f"weights identical, re-laid out ({nbytes(moved)} moved{of}; 0 new){by}"
    if new < changed // 20:
        return f"weights re-laid out ({nbytes(moved)} moved{of}) with {nbytes(new)} of new constant data{by}"
    return f"weights differ: {nbytes(new)} new content ({nbytes(moved)} moved{of if moved else ''})"
