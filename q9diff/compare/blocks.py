"""Finding BLOCK-byte blocks of one buffer among the blocks of another, exactly: numpy hashes narrow the
candidates and every candidate is verified byte for byte, so a block said to be found is there. Kept
apart from `attribution` (which decides what to search, in what order, and what the figures mean) so
each stays one reading.
"""

from __future__ import annotations

import os
import threading

import numpy as np

BLOCK = 128


def _odd_constants(n: int) -> list[int]:
    """n distinct odd 64-bit multipliers, the splitmix64 sequence from 0 (fixed: the hash is the same in
    every run)."""
    out, x, m = [], 0, (1 << 64) - 1
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & m
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out.append((z ^ (z >> 31)) | 1)
    return out


# One multiplier per word: with the four of before repeated, a block with words 5 and 9 swapped hashed
# the same (qwen-mini's pools hold such blocks). Each word is folded (w ^ w >> 29) first, so its high bits
# reach the low ones instead of counting only as a parity.
MULT = np.array(_odd_constants(BLOCK // 8), dtype=np.uint64)
_FOLD = np.uint64(29)
CHUNK = 1 << 15  # rows per step: 4 MiB of blocks, cache-sized
SCAN = 1 << 13  # blocks per step of the scan: 1 MiB of each side
_NEEDLES = 1 << 20  # needles hashed and searched per step, so memory stays bounded
_ROUNDS = 4  # hay blocks of a needle's hash tried in turn; beyond, the rest are matched by content
_BATCH = 1 << 18  # blocks sorted by content at a time there (32 MiB)
_BYTES = np.dtype((np.void, BLOCK))  # a block as one value: sorted and compared as bytes
_ALL_TRUE = np.uint64(0x0101010101010101)  # 8 bools, all True, seen as one word
KEY = np.uint64(0x9E3779B97F4A7C15)  # word_key's multiplier (2^64 / golden ratio, odd)
_MATCH_STEP = 1 << 17  # rows of the many side could_match reads a word of per step (32 to 21 ms on 2.4M)
_INDEX_BITS = 22  # could_match's index of fingerprints: at most 4 Mi flags
_DISTANCES = 8  # the most common anchor distances tried after a row's neighbouring anchors


# The compiled passes (q9diff/compare/_scan.c), where the build made them: a block read once for what numpy
# takes a pass and a temporary per operation for. The same answers; Q9DIFF_NUMPY_SCAN=1 takes numpy's.
FUSED = None
INTERFACE = 2  # the form of _scan's calls (its INTERFACE): one built from an older _scan.c is not called
_UNBUILT = False  # no compiled scan because the build made none (a source tree run in place), not by choice
if not os.environ.get("Q9DIFF_NUMPY_SCAN"):
    try:
        from q9diff.compare import _scan as FUSED
    except ImportError:
        _UNBUILT = True
    if FUSED is not None and getattr(FUSED, "INTERFACE", None) != INTERFACE:
        FUSED, _UNBUILT = None, True  # a checkout updated in place, its module not built again
_SAID = threading.Lock()
UNBUILT_NOTE = (
    "q9diff: note: the compiled scan (q9diff/compare/_scan.c) is not built, or built from an older source,"
    " so diffs take numpy's passes (the same answers, slower); build it with `pip install -e .` or"
    " `python setup.py build_ext --inplace`"
)


def numpy_instead() -> None:
    """Where a diff takes numpy's pass because the compiled one was never built, say so once (one line on
    stderr, through the `q9diff` logger) with how to build it; a tree that has it, or a user who chose
    numpy (Q9DIFF_NUMPY_SCAN=1), hears nothing."""
    global _UNBUILT
    if not _UNBUILT:
        return
    with _SAID:
        if not _UNBUILT:
            return
        _UNBUILT = False
    import logging

    logging.getLogger("q9diff").warning(UNBUILT_NOTE)


def _rows(rows) -> np.ndarray | None:
    return None if rows is None else np.ascontiguousarray(rows, dtype=np.int64)


def _same(a: np.ndarray, ia, b: np.ndarray, ib) -> np.ndarray | None:
    """Whether block ia[i] of a is block ib[i] of b (rows None: consecutive), by the compiled pass; None
    without it (or for a view it cannot take whole), and the caller compares with numpy."""
    if FUSED is None or not (a.flags.c_contiguous and b.flags.c_contiguous):
        numpy_instead()
        return None
    out = np.empty(len(a) if ia is None else len(ia), dtype=np.uint8)
    FUSED.same(a, b, out, _rows(ia), _rows(ib))
    return out.view(bool)


WORKERS = 2  # the machines q9diff runs on have 2 cores or more; numpy lets go of the GIL over a step
_pool = None


def workers():
    """The threads that compare, hash and scan big regions in parallel, started once (a set of parts
    reuses them): numpy releases the GIL inside each call, so two halves of a pass run side by side."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _keep_freed_memory()
        _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="q9diff")
    return _pool


def stop_workers() -> None:
    """Let the workers go (they are idle between passes): at the program's end (q9diff.cli.run)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True)
        _pool = None


def _keep_freed_memory() -> None:
    """Ask glibc's malloc to keep what the big passes free for the next ones (arrays up to 32 MiB from
    the heap, the heap not trimmed below 1 GiB) instead of unmapping it: this VM takes 2-7 us a page to
    fault fresh memory in, and the passes over a 1 GB region allocate and free tens of MB each (a seed
    part's search: 60-80 ms first, then 14-22 ms, measured). Peak memory is unchanged, the freed
    memory is only not returned before exit. Elsewhere (not glibc) nothing changes."""
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD, glibc's largest


def in_parallel(fn, items: list) -> list:
    """fn over items, in the workers when there is more than one item, results in order."""
    return list(workers().map(fn, items)) if len(items) > 1 else [fn(x) for x in items]


def as_blocks(buf, offset: int, size: int) -> np.ndarray:
    n = size // BLOCK
    return np.frombuffer(buf, dtype=np.uint8, count=n * BLOCK, offset=offset).reshape(n, BLOCK)


def block_hash(blocks: np.ndarray) -> np.ndarray:
    words = blocks.view(np.uint64)
    with np.errstate(over="ignore"):
        return ((words ^ (words >> _FOLD)) * MULT).sum(axis=1, dtype=np.uint64)


def hashes(view: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Hashes of `view`'s blocks (those at `rows`, or all), computed a cache-sized chunk at a time."""
    n = len(view) if rows is None else len(rows)
    out = np.empty(n, dtype=np.uint64)
    if FUSED is not None and view.flags.c_contiguous:  # gathered and hashed in one go
        FUSED.hash(view, _rows(rows), MULT, out)
        return out
    numpy_instead()
    for s in range(0, n, CHUNK):
        part = view[s : s + CHUNK] if rows is None else view[rows[s : s + CHUNK]]
        out[s : s + CHUNK] = block_hash(part)
    return out


def find_blocks(
    needles: np.ndarray,
    nrows: np.ndarray | None,
    hay: np.ndarray,
    hrows: np.ndarray | None,
    partner: np.ndarray | None = None,
    needle_hashes: np.ndarray | None = None,
    hay_hashes: np.ndarray | None = None,
) -> np.ndarray:
    """For each block of `needles` (at `nrows`, or all), whether the same 128 bytes are a block of `hay`
    (at `hrows`, or all); where found, `partner` (if given) gets the hay row. Hashes sorted on both sides
    narrow the candidates and each is verified byte for byte. A hash is not the content: a needle whose
    candidate differs tries the next hay block of its hash, _ROUNDS in all, and one still unanswered (a
    hash shared by more blocks, as crafted input can make) is matched by content, so the answer is exact
    and the work bounded. The hashes (block_hash) may come computed, by a scan that had the blocks in
    cache."""
    nn = len(needles) if nrows is None else len(nrows)
    nh_all = len(hay) if hrows is None else len(hrows)
    hit = np.zeros(nn, dtype=bool)
    if not nn or not nh_all:
        return hit
    hh = hashes(hay, hrows) if hay_hashes is None else hay_hashes
    order = np.argsort(hh)
    order = order.astype(np.uint32) if len(order) < 1 << 32 else order
    sorted_h = hh[order]
    del hh
    for s in range(0, nn, _NEEDLES):
        own = np.arange(s, min(nn, s + _NEEDLES)) if nrows is None else nrows[s : s + _NEEDLES]
        nh = hashes(needles, own) if needle_hashes is None else needle_hashes[s : s + _NEEDLES]
        norder = np.argsort(nh)  # searching sorted needles walks the haystack once: ~5x faster than random
        wanted = nh[norder]
        pos = np.searchsorted(sorted_h, wanted)
        pos[pos == len(sorted_h)] = 0
        same = np.flatnonzero(sorted_h[pos] == wanted)  # positions in norder
        pos = pos[same]
        for _ in range(_ROUNDS):
            if not len(same):
                break
            who, cand = norder[same], order[pos]
            if hrows is not None:
                cand = hrows[cand]
            good = _equal(needles, own[who], hay, cand)
            hit[s + who[good]] = True
            if partner is not None:
                partner[s + who[good]] = cand[good]
            # the next hay block in hash order, while it has the same hash
            same, pos = same[~good], pos[~good] + 1
            more = pos < len(sorted_h)
            same, pos = same[more], pos[more]
            more = sorted_h[pos] == wanted[same]
            same, pos = same[more], pos[more]
        if len(same):
            groups = distinct(wanted[same])
            lo, hi = np.searchsorted(sorted_h, groups), np.searchsorted(sorted_h, groups, side="right")
            n_each = hi - lo
            at = np.repeat(lo - np.cumsum(n_each) + n_each, n_each) + np.arange(int(n_each.sum()))
            cand = order[at] if hrows is None else hrows[order[at]]
            who = norder[same]
            good, where = _by_content(needles, own[who], hay, cand)
            hit[s + who[good]] = True
            if partner is not None:
                partner[s + who[good]] = where[good]
    return hit


def _equal(needles: np.ndarray, nrows: np.ndarray, hay: np.ndarray, hrows: np.ndarray) -> np.ndarray:
    """Whether needle block nrows[i] is hay block hrows[i], byte for byte, a cache-sized step at a time."""
    out = _same(needles, nrows, hay, hrows)
    if out is not None:
        return out
    out = np.empty(len(nrows), dtype=bool)
    words_h, words_n = hay.view(np.uint64), needles.view(np.uint64)  # 16 words a block, not 128 bytes
    for t in range(0, len(nrows), CHUNK):
        eq = (words_h[hrows[t : t + CHUNK]] == words_n[nrows[t : t + CHUNK]]).view(np.uint64)
        out[t : t + CHUNK] = (eq[:, 0] & eq[:, 1]) == _ALL_TRUE
    return out


def _by_content(needles: np.ndarray, nrows: np.ndarray, hay: np.ndarray, hrows: np.ndarray):
    """Which needle blocks (at `nrows`) are among the hay blocks at `hrows`, and the hay row of each,
    by sorting the hay blocks as bytes: _BATCH of them at a time, so memory stays bounded."""
    found = np.zeros(len(nrows), dtype=bool)
    where = np.full(len(nrows), -1, dtype=np.int64)
    for t in range(0, len(hrows), _BATCH):
        hr = hrows[t : t + _BATCH]
        hv = np.ascontiguousarray(hay[hr]).view(_BYTES).ravel()
        by = np.argsort(hv)
        hv = hv[by]
        for u in range(0, len(nrows), _BATCH):
            todo = u + np.flatnonzero(~found[u : u + _BATCH])
            nv = np.ascontiguousarray(needles[nrows[todo]]).view(_BYTES).ravel()
            p = np.minimum(np.searchsorted(hv, nv), len(hv) - 1)
            ok = hv[p] == nv
            found[todo[ok]] = True
            where[todo[ok]] = hr[by[p[ok]]]
    return found, where


def follow(needles, rows: np.ndarray, hay, in_hay, at: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Which needle blocks at `rows` (ascending) are found by following anchors: needle row at[k]
    (ascending) is hay row to[k]. Moved content moves in runs (the seed-scale parts: 29 distances, 99.98%
    of neighbours at their neighbour's), so row r is tried at r plus the distance of the anchor before it,
    then after it, then the most common distances; every hit verified byte for byte, only in hay rows
    `in_hay` marks (a mask, or all). What it does not find may still be elsewhere: search that."""
    found = np.zeros(len(rows), dtype=bool)
    if not len(at) or not len(rows):
        return found
    dist = to.astype(np.int64) - at
    kinds, counts = np.unique(dist, return_counts=True)
    common = kinds[np.argsort(-counts)[:_DISTANCES]]
    words_n, words_h = needles.view(np.uint64), hay.view(np.uint64)
    starts = np.searchsorted(rows, at)  # anchor k's distance holds from rows[starts[k]] on
    _in_runs(words_n, rows, words_h, in_hay, starts, dist, found)
    left = np.flatnonzero(~found)
    for s in range(0, len(left), CHUNK):  # what runs left, a cache-sized step of rows at a time
        which = left[s : s + CHUNK]
        part, done = rows[which].astype(np.int64), np.zeros(len(which), dtype=bool)
        before = np.searchsorted(starts, which, side="right") - 1  # the anchor before each row, or -1
        for k, d in enumerate([None, None, *common]):
            sel = np.flatnonzero(~done)
            if not len(sel):
                break
            # the anchor before the row, the one after it, then the common distances
            target = part[sel] + (dist[np.clip(before[sel] + k, 0, len(at) - 1)] if d is None else d)
            ok = (target >= 0) & (target < len(hay))
            if in_hay is not None:
                ok[ok] = in_hay[target[ok]]
            sel, target = sel[ok], target[ok]
            equal = _same(needles, part[sel], hay, target)
            if equal is None:
                eq = (words_n[part[sel]] == words_h[target]).view(np.uint64)
                equal = (eq[:, 0] & eq[:, 1]) == _ALL_TRUE
            done[sel[equal]] = True
        found[which[done]] = True
    return found


def _segments(rows: np.ndarray, starts: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows (ascending) cut where they stop being consecutive or the anchor distance they follow
    changes: each segment's first index and distance (the anchor before it, the first one before any),
    found from the runs' and anchors' boundaries without a pass per row's target."""
    n = len(rows)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    cuts = distinct(np.concatenate([[0], breaks, starts[starts < n]]))
    d = dist[np.maximum(np.searchsorted(starts, cuts, side="right") - 1, 0)]
    keep = np.ones(len(cuts), dtype=bool)
    keep[1:] = d[1:] != d[:-1]
    keep[np.searchsorted(cuts, breaks)] = True  # a break in the rows is a break in the targets
    return cuts[keep], d[keep]


def _in_runs(words_n, rows, words_h, in_hay, starts, dist, found: np.ndarray) -> None:
    """Mark in `found` the needle rows equal to the hay row their anchor distance points at, comparing
    each segment (consecutive rows, one distance) as slices, a cache-sized step at a time (no copies,
    one call per segment); where segments are short (under 64 rows on average) the row-by-row passes
    are cheaper, and do it."""
    cuts, d = _segments(rows, starts, dist)
    if len(cuts) * 64 > len(rows):
        return
    ends = [*cuts[1:].tolist(), len(rows)]
    segs = list(zip(cuts.tolist(), ends, (rows[cuts] + d).tolist()))
    half = len(rows) // 2  # the two workers take the segments before and after the middle row
    cut = next((k for k, (s, _, _) in enumerate(segs) if s >= half), len(segs))

    fused = FUSED is not None and words_n.flags.c_contiguous and words_h.flags.c_contiguous

    def compare(part: list) -> None:
        for s, e, t0 in part:
            r0 = int(rows[s])
            if t0 < 0 or t0 + e - s > len(words_h):
                continue  # partly outside the hay: the row-by-row passes check each row
            if fused:  # the segment in one compiled pass, into `found`
                FUSED.same(
                    words_n[r0 : r0 + e - s], words_h[t0 : t0 + e - s], found[s:e].view(np.uint8), None, None
                )
                if in_hay is not None:
                    found[s:e] &= in_hay[t0 : t0 + e - s]
                continue
            for u in range(0, e - s, CHUNK):
                n = min(CHUNK, e - s - u)
                eq = (words_n[r0 + u : r0 + u + n] == words_h[t0 + u : t0 + u + n]).view(np.uint64)
                hit = (eq[:, 0] & eq[:, 1]) == _ALL_TRUE
                if in_hay is not None:
                    hit &= in_hay[t0 + u : t0 + u + n]
                found[s + u : s + u + n] = hit

    in_parallel(compare, [p for p in (segs[:cut], segs[cut:]) if p])


def changed_counts(xa: np.ndarray, xb: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Changed bytes of the blocks at `rows` (a's block against b's at the same place)."""
    out = np.empty(len(rows), dtype=np.int64)
    for s in range(0, len(rows), CHUNK):
        r = rows[s : s + CHUNK]
        out[s : s + CHUNK] = np.count_nonzero(xa[r] != xb[r], axis=1)
    return out


def _word5(view: np.ndarray, rows, s: int, step: int = SCAN) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one step (`step` rows from `s`) of `view` (at `rows`, or all) and their blocks' word 5."""
    words = view.view(np.uint64)
    if rows is None:
        return np.arange(s, min(len(view), s + step)), words[s : s + step, 5]
    r = rows[s : s + step]
    return r, words[r, 5]


def word_key(word5: np.ndarray) -> np.ndarray:
    """A block's key: its word 5 times an odd constant (one to one, so equal keys are equal words), the
    bits well mixed for the content sample to take the blocks whose key's top bits are 0."""
    return word5 * KEY


def could_match(view, rows: np.ndarray | None, other, orows: np.ndarray | None, tops=None) -> np.ndarray:
    """The rows of `view` (at `rows`, or all) whose block's word 5 is word 5 of a block of `other`: the
    only ones that can equal one. Few blocks on one side then cost one read of a word per block of the
    other, not hashing and sorting every block. The wanted words' fingerprints (the top bits of their
    word_key) are flags in an index built once; a row costs a look-up there, and the search among the
    wanted words is only for the rows whose flag is set (a binary search for every row of a 1 GB
    region's 8.1M took 1.2-1.4 s). Words repeated in quantized weights set one flag, not many. With
    `tops` (the top 16 bits of word_key of each row of `view`, kept by the scan) the look-up reads 2
    bytes a row, and the word only where its flag is set (a word read a row is a cache line a row: 157 MB
    for a seed part's 2.4M rows, 18-20 ms)."""
    n, no = (len(view) if rows is None else len(rows)), (len(other) if orows is None else len(orows))
    if not n or not no:
        return np.zeros(0, dtype=np.int64)
    wanted = distinct(np.concatenate([_word5(other, orows, s)[1] for s in range(0, no, SCAN)]))
    narrowed = tops is not None
    # 16 bits for the tops; else enough that at most 1 in 16 flags is set, up to 4 Mi flags (4 MiB)
    bits = 16 if narrowed else min(_INDEX_BITS, max(16, len(wanted).bit_length() + 4))
    shift = np.uint64(64 - bits)
    index = np.zeros(1 << bits, dtype=bool)
    index[word_key(wanted) >> shift] = True
    words = view.view(np.uint64)

    def among(k, values):  # one value (a needle left): one compare, not a search per row
        if len(values) == 1:
            return k == values[0]
        return values[np.minimum(np.searchsorted(values, k), len(values) - 1)] == k

    def step(s: int) -> np.ndarray:
        if narrowed:
            if rows is None:
                r = np.arange(s, min(n, s + _MATCH_STEP))
                r = r[index[tops[s : s + len(r)]]]
            else:
                r = rows[s : s + _MATCH_STEP]
                r = r[index[tops[r]]]
            k = words[r, 5]
        else:
            r, k = _word5(view, rows, s, _MATCH_STEP)
            flagged = index[word_key(k) >> shift]
            r, k = r[flagged], k[flagged]
        return r[among(k, wanted)]

    return concat(in_parallel(step, list(range(0, n, _MATCH_STEP))), np.int64)


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending: np.unique's answer without its first call's import of numpy.ma
    (8 ms of every diff that searched, for a masked-array check on plain arrays)."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def concat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
