"""Finding BLOCK-byte blocks of one buffer among the blocks of another, exactly: numpy hashes narrow the
candidates and every candidate is verified byte for byte, so a block said to be found is there. Kept
apart from `attribution` (which decides what to search, in what order, and what the figures mean) so
each stays one reading.
"""

from __future__ import annotations

import numpy as np

BLOCK = 128
_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93] * (BLOCK // 32),
    dtype=np.uint64,
)
CHUNK = 1 << 15  # rows per step: 4 MiB of blocks, cache-sized
SCAN = 1 << 13  # blocks per step of the scan: 1 MiB of each side
_NEEDLES = 1 << 20  # needles hashed and searched per step, so memory stays bounded


def as_blocks(buf, offset: int, size: int) -> np.ndarray:
    n = size // BLOCK
    return np.frombuffer(buf, dtype=np.uint8, count=n * BLOCK, offset=offset).reshape(n, BLOCK)


def _hash(blocks: np.ndarray) -> np.ndarray:
    words = blocks.view(np.uint64)
    with np.errstate(over="ignore"):
        return (words * _MULT).sum(axis=1, dtype=np.uint64)


def hashes(view: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Hashes of `view`'s blocks (those at `rows`, or all), computed a cache-sized chunk at a time."""
    n = len(view) if rows is None else len(rows)
    out = np.empty(n, dtype=np.uint64)
    for s in range(0, n, CHUNK):
        part = view[s : s + CHUNK] if rows is None else view[rows[s : s + CHUNK]]
        out[s : s + CHUNK] = _hash(part)
    return out


def find_blocks(
    needles: np.ndarray, nrows: np.ndarray | None, hay: np.ndarray, hrows: np.ndarray | None
) -> np.ndarray:
    """For each block of `needles` (at `nrows`, or all), whether the same 128 bytes are a block of `hay`
    (at `hrows`, or all): hashes sorted on both sides, then every match verified byte for byte."""
    nn = len(needles) if nrows is None else len(nrows)
    nh_all = len(hay) if hrows is None else len(hrows)
    hit = np.zeros(nn, dtype=bool)
    if not nn or not nh_all:
        return hit
    hh = hashes(hay, hrows)
    order = np.argsort(hh)
    order = order.astype(np.uint32) if len(order) < 1 << 32 else order
    sorted_h = hh[order]
    del hh
    for s in range(0, nn, _NEEDLES):
        own = np.arange(s, min(nn, s + _NEEDLES)) if nrows is None else nrows[s : s + _NEEDLES]
        nh = hashes(needles, own)
        norder = np.argsort(nh)  # searching sorted needles walks the haystack once: ~5x faster than random
        pos = np.searchsorted(sorted_h, nh[norder])
        pos[pos == len(sorted_h)] = 0
        same = np.flatnonzero(sorted_h[pos] == nh[norder])
        who, cand = norder[same], order[pos[same]]
        if hrows is not None:
            cand = hrows[cand]
        own = own[who]
        good = np.empty(len(who), dtype=bool)
        for t in range(0, len(who), CHUNK):
            good[t : t + CHUNK] = (hay[cand[t : t + CHUNK]] == needles[own[t : t + CHUNK]]).all(axis=1)
        hit[s + who[good]] = True
    return hit


def changed_counts(xa: np.ndarray, xb: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Changed bytes of the blocks at `rows` (a's block against b's at the same place)."""
    out = np.empty(len(rows), dtype=np.int64)
    for s in range(0, len(rows), CHUNK):
        r = rows[s : s + CHUNK]
        out[s : s + CHUNK] = np.count_nonzero(xa[r] != xb[r], axis=1)
    return out


def _word5(view: np.ndarray, rows: np.ndarray | None, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one step (from `s`) of `view` (at `rows`, or all) and their blocks' word 5."""
    words = view.view(np.uint64)
    if rows is None:
        return np.arange(s, min(len(view), s + SCAN)), words[s : s + SCAN, 5]
    r = rows[s : s + SCAN]
    return r, words[r, 5]


def could_match(view: np.ndarray, rows: np.ndarray | None, other: np.ndarray, orows: np.ndarray | None):
    """The rows of `view` (at `rows`, or all) whose block's word 5 is word 5 of a block of `other`: the
    only ones that can equal one. Few blocks on one side then cost one read of a word per block of the
    other, not hashing and sorting every block."""
    n, no = (len(view) if rows is None else len(rows)), (len(other) if orows is None else len(orows))
    keys = np.unique(np.concatenate([_word5(other, orows, s)[1] for s in range(0, no, SCAN)]))
    out = []
    for s in range(0, n, SCAN):
        r, k = _word5(view, rows, s)
        pos = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
        out.append(r[keys[pos] == k])
    return concat(out, np.int64)


def concat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
