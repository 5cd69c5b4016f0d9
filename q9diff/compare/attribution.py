"""Where the changed bytes went: moved (the same content is elsewhere in the other file's region) or
new, and one bucket per byte so the causes table adds up to the totals, bloaty-style.

Moved content is found by hashing BLOCK-byte blocks of both sides' corresponding regions with numpy and
verifying every hash match byte for byte. The block size is measured on the fixtures: at 32, 64 and 128
bytes every changed byte of the weights pool in the VTCM-only and optimization-only pairs, and of qwen-mini's
shared WEIGHTS pool (soc + VTCM + O), is found re-laid out in the other file (at 256 bytes 98.6%, at
1 KiB 1.4%), while an fp16-vs-w8a16 pair finds 2.6%; 128 halves the work of 64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from q9diff.compare import blocks
from q9diff.compare.blocks import (
    BLOCK,
    KEY,
    SCAN,
    WORKERS,
    as_blocks,
    changed_counts,
    concat,
    could_match,
    find_blocks,
    follow,
    hashes,
    in_parallel,
    word_key,
)
from q9diff.units import nbytes

# Up to EXACT_BLOCKS blocks on a side every block is searched, as always. Beyond, a sample decides first:
# blocks whose content key falls below _SAMPLED (1 in 128, by content, so a moved block and the block it
# came from are sampled together) are searched exactly; when under 1/MOSTLY_NEW of their changed bytes
# moved, the region is mostly new and its moved bytes are estimated from the sample (said so in the
# output); otherwise the sample's matches are followed as anchors and what that leaves is searched block
# by block, exact, up to EXACT_MAX blocks a side (1 GiB: bounded memory; beyond, estimated).
EXACT_BLOCKS = 1 << 20
EXACT_MAX = 1 << 23
MOSTLY_NEW = 20
_SAMPLED = np.uint64(1 << 57)
_TOP = np.uint64(48)  # a key's top 16 bits: what the scan keeps of it
_SAMPLED_TOP = np.uint16(int(_SAMPLED) >> 48)  # key < _SAMPLED, seen in its top 16 bits


@dataclass(frozen=True)
class Sample:
    """How a region's moved bytes were estimated: `sampled` of its `blocks` changed blocks (chosen by
    content) were searched exactly and `found` of them are elsewhere in the other file's region."""

    blocks: int
    sampled: int
    found: int

    def __add__(self, other: Sample | None) -> Sample:
        if other is None:
            return self
        return Sample(self.blocks + other.blocks, self.sampled + other.sampled, self.found + other.found)


@dataclass(frozen=True)
class MovedNew:
    """A region's changed bytes split into moved and new; `estimate` says how, when moved is estimated."""

    changed: int
    moved: int
    new: int
    estimate: Sample | None = None


def _sampled(words: np.ndarray) -> np.ndarray:
    """Which blocks (rows of 16 words) the content sample takes: a key of one word (a read of one cache
    line per block), its top 7 bits 0."""
    return word_key(words[:, 5]) < _SAMPLED


class Parts:
    """Rows a scan found, kept as its steps' arrays (a step changed throughout as its (start, stop)) and
    joined only when a search needs them whole: a region found mostly new from its sample never needs
    them, and memory this VM faults in fresh costs 2-7 us a page (an all-differ 1 GB pair's rows were 31
    MB of it)."""

    def __init__(self, parts: list, dtype):
        self.parts, self.dtype, self._whole = parts, dtype, None
        self.n = sum(p[1] - p[0] if isinstance(p, tuple) else len(p) for p in parts)

    def __len__(self) -> int:
        return self.n

    def mark(self, mask: np.ndarray) -> None:
        """Set these rows in `mask`: a step's range as one slice (most rows of a seed part), not a
        scatter of each row."""
        if self._whole is not None:
            mask[self._whole] = True
        for p in self.parts:
            if isinstance(p, tuple):
                mask[p[0] : p[1]] = True
            else:
                mask[p] = True

    @property
    def whole(self) -> np.ndarray:
        if self._whole is None:
            parts = [np.arange(*p, dtype=self.dtype) if isinstance(p, tuple) else p for p in self.parts]
            self._whole, self.parts = concat(parts, self.dtype), []
        return self._whole


def _whole(rows):
    return rows.whole if isinstance(rows, Parts) else rows


def _search(needles, nrows, hay, hrows, weigh, total: int, sample, tops=None) -> tuple[int, Sample | None]:
    """The weight (`weigh(rows)`: bytes per needle; `total` that of all) of the needles found in hay;
    exact, or estimated from `sample` (content-sampled needle and hay rows) when both sets are large and
    mostly new. Large and mostly moved, the sample's matches are anchors to follow first, and only what
    following leaves is searched block by block (`tops`: the hay rows' key tops, where the scan kept them)."""
    nn = len(needles) if nrows is None else len(nrows)
    nh = len(hay) if hrows is None else len(hrows)
    if not nn or not nh:
        return 0, None
    if sample is not None and min(nn, nh) > EXACT_BLOCKS:
        s_n, s_h, *pre = sample  # pre: the sampled blocks' hashes and needles' weights, from the scan
        partner = np.full(len(s_n), -1, dtype=np.int64)
        hit = find_blocks(needles, s_n, hay, s_h, partner, *pre[:2])
        w = pre[2] if pre else weigh(s_n)
        found, of = int(w[hit].sum()), int(w.sum())
        if (of and found * MOSTLY_NEW < of) or max(nn, nh) > EXACT_MAX:
            moved = (total * found + of // 2) // of if of else 0
            return moved, Sample(nn, len(s_n), int(hit.sum()))
        in_hay = None
        if hrows is not None:
            in_hay = np.zeros(len(hay), dtype=bool)
            hrows.mark(in_hay) if isinstance(hrows, Parts) else in_hay.__setitem__(hrows, True)
        rows, hrows = _whole(nrows), _whole(hrows)
        rows = np.arange(nn) if rows is None else rows
        rows = rows[~follow(needles, rows, hay, in_hay, s_n[hit], partner[hit])]
        rest = _exact(needles, rows, hay, hrows, tops)
        return total - int(weigh(rows[~rest]).sum()), None
    rows, hrows = (np.arange(nn) if nrows is None else _whole(nrows)), _whole(hrows)
    return int(weigh(rows[_exact(needles, rows, hay, hrows, tops)]).sum()), None


def _exact(needles, rows: np.ndarray, hay, hrows, tops=None) -> np.ndarray:
    """find_blocks for the needles at `rows` (ascending); few against many are matched on a word first
    (narrowed by the hay's key `tops` where given)."""
    nn = len(rows)
    nh = len(hay) if hrows is None else len(hrows)
    if not nn or not nh:  # following found every row (a re-laying-out in runs), or no hay
        return np.zeros(nn, dtype=bool)
    if nh > 8 * nn:
        return find_blocks(needles, rows, hay, could_match(hay, hrows, needles, rows, tops))
    if nn > 8 * nh:
        keep = could_match(needles, rows, hay, hrows)
        hit = np.zeros(nn, dtype=bool)
        hit[np.searchsorted(rows, keep)] = find_blocks(needles, keep, hay, hrows)
        return hit
    return find_blocks(needles, rows, hay, hrows)


_GROUP = 64  # scan steps a worker takes at a time: 64 MiB of each side


@dataclass
class Scanned:
    """What one pass over a region pair found: its changed bytes and rows; with a sample, the sampled
    rows of a and b (all of them for regions of other sizes, else the changed ones) and b's changed
    sampled rows; also the sampled blocks' hashes (`hash_a`, `hash_b`) and b's sampled rows' changed
    bytes (`weight_b`), taken in the scan (no random reads after it), and `tops`, which narrows a
    few-against-many word match to reading 2 bytes a hay row, not its block's word."""

    changed: int
    rows: Parts
    sa: np.ndarray
    sb: np.ndarray
    sb_changed: np.ndarray
    hash_a: np.ndarray
    hash_b: np.ndarray
    weight_b: np.ndarray
    tops: np.ndarray | None  # word_key >> 48 by row: of a's changed rows, or (other sizes) the shorter's all


def _scan(a, x, b, y, nb: int, sample: bool, every: bool) -> Scanned:
    """One pass over the first `nb` blocks of region x of a and y of b, in groups of _GROUP steps that
    the workers take in file order (two groups at a time), each asking the kernel for the group after
    next."""
    wa = as_blocks(a.data, x.offset, nb * BLOCK).view(np.uint64)
    wb = as_blocks(b.data, y.offset, nb * BLOCK).view(np.uint64)
    dtype = np.int32 if nb < 1 << 31 else np.int64
    span = SCAN * _GROUP

    def ahead(lo: int) -> None:  # the region's own blocks only: asking for 64 MiB costs 0.3 ms, in cache
        if lo < nb:
            a.will_need(x.offset + lo * BLOCK, (min(nb, lo + span) - lo) * BLOCK)
            b.will_need(y.offset + lo * BLOCK, (min(nb, lo + span) - lo) * BLOCK)

    tops = np.empty(nb, dtype=np.uint16) if sample else None  # each worker its rows
    tops_b = every and x.size > y.size

    def group(lo: int):
        ahead(lo + WORKERS * span)
        return _steps(wa, wb, lo, min(nb, lo + span), dtype, sample, every, tops, tops_b)

    starts = range(0, nb, span)
    for lo in starts[:WORKERS]:
        ahead(lo)
    parts = in_parallel(group, list(starts))

    def joined(k: int, kind=dtype):  # the samples: small
        return concat([q for p in parts for q in p[k]], kind)

    return Scanned(
        sum(p[0] for p in parts),
        Parts([q for p in parts for q in p[1]], dtype),
        joined(2),
        joined(3),
        joined(4),
        joined(5, np.uint64),
        joined(6, np.uint64),
        joined(7, np.int64),
        tops,
    )


def _steps(wa, wb, lo: int, hi: int, dtype, sample: bool, every: bool, tops=None, tops_b: bool = False):
    """The scan of rows lo..hi (words `wa`, `wb`) a step of SCAN blocks at a time: changed bytes, and the
    lists of Scanned's arrays, in file order. A step changed throughout (every step of an all-differ
    pair) lists no rows: its range stands for them. By the compiled pass where the build made it, else
    by numpy's passes (the same arrays)."""
    if blocks.FUSED is not None:
        return _steps_compiled(wa, wb, lo, hi, dtype, sample, every, tops, tops_b)
    blocks.numpy_instead()
    xor = np.empty((min(hi - lo, SCAN), BLOCK // 8), dtype=np.uint64)
    nonzero = np.empty(xor.shape, dtype=bool)
    any_word = np.empty(len(xor), dtype=np.uint64)
    key_a, key_b = np.empty(len(xor), dtype=np.uint64), np.empty(len(xor), dtype=np.uint64)
    changed, clean = 0, True  # clean: the last step found no change
    inline = every  # the keys of every row taken with the xor: all are wanted, or most rows changed last
    rows, sa, sb, sb_changed = [], [], [], []
    for s in range(lo, hi, SCAN):
        ca, cb = wa[s : min(s + SCAN, hi)], wb[s : min(s + SCAN, hi)]
        if clean and not every and np.array_equal(ca, cb):  # most steps of a pair with few changes
            continue
        m = len(ca)
        keyed = sample and inline
        if keyed:
            xx = _xor_keys(ca, cb, xor[:m], key_a[:m], key_b[:m])
        else:
            xx = np.bitwise_xor(ca, cb, out=xor[:m])
        nz = np.not_equal(xx, 0, out=nonzero[:m]).view(np.uint64)  # a block's 16 words as 2 words
        row_changed = np.bitwise_or(nz[:, 0], nz[:, 1], out=any_word[:m])
        full = bool(row_changed.all())
        r = None if full else np.flatnonzero(row_changed).astype(dtype)
        n_changed = m if full else len(r)
        clean = not n_changed
        if n_changed:
            changed += int(np.count_nonzero(xx.view(np.uint8)))
            rows.append((s, s + m) if full else r + s)
        if not sample:
            continue
        if every:
            ka, kb = key_a[:m] < _SAMPLED, key_b[:m] < _SAMPLED
            tops[s : s + m] = (key_b if tops_b else key_a)[:m] >> _TOP
            sa.append(np.flatnonzero(ka) + s)
            sb.append(np.flatnonzero(kb) + s)
            sb_changed.append((np.flatnonzero(kb) if full else r[kb[r]]) + s)
        elif n_changed:
            if keyed and full:
                step_tops = tops[s : s + m]
                np.right_shift(key_a[:m], _TOP, out=key_a[:m])  # key_a is written again next step
                step_tops[:] = key_a[:m]
                ia, ib = np.flatnonzero(step_tops < _SAMPLED_TOP), np.flatnonzero(key_b[:m] < _SAMPLED)
            else:
                r = np.arange(m, dtype=dtype) if full else r
                # word 5 of the changed rows gathered (not the rows copied)
                ka, kb = (key_a[r], key_b[r]) if keyed else (word_key(ca[r, 5]), word_key(cb[r, 5]))
                ia, ib = r[ka < _SAMPLED], r[kb < _SAMPLED]
                tops[r + s] = ka >> _TOP
            sa.append(ia + s)
            sb_changed.append(ib + s)
            inline = 2 * n_changed > m
        else:
            inline = False
    return _sampled_hashes(wa, wb, dtype, sample, changed, rows, sa, sb, sb_changed)


def _steps_compiled(wa, wb, lo: int, hi: int, dtype, sample: bool, every: bool, tops=None, tops_b=False):
    """_steps by _scan.step: a step's blocks read once for its flags, its changed bytes and, sampling, the
    content sample's rows, the key tops (tops_b: b's) and the sampled blocks' hashes and b's weights,
    written by the pass while the blocks are in cache (numpy takes a pass and a temporary for
    each: 50 of the 100 ms an all-differ 1 GB pair's scan took, measured; hashing the sample after the
    group, read again from memory, took 25-28 ms of the two workers' time more)."""
    m0 = min(hi - lo, SCAN)
    flags = np.empty(m0, dtype=np.uint8)
    # the sample's rows of a, of b, of b's changed rows (b's all only for regions of other sizes)
    found = [np.empty(m0, dtype=np.int64) if sample and (k != 1 or every) else None for k in range(3)]
    hashed = sample
    # the hashes of a's sampled rows, of b's changed sampled rows, and b's weights: uint64, uint64, int64
    sums = [np.empty(m0, dtype=np.uint64 if k < 2 else np.int64) if hashed else None for k in range(3)]
    key, below, mult = int(KEY), int(_SAMPLED), blocks.MULT if hashed else None
    changed = 0
    rows, sa, sb, sb_changed = [], [], [], []
    hash_a, hash_b, weight_b = [], [], []
    for s in range(lo, hi, SCAN):
        ca, cb = wa[s : min(s + SCAN, hi)], wb[s : min(s + SCAN, hi)]
        m = len(ca)
        step_tops = None if tops is None else tops[s : s + m]
        step_changed, n_changed, *n = blocks.FUSED.step(
            ca, cb, flags[:m], step_tops, s, *found, every, key, below, mult, *sums, tops_b
        )
        if not n_changed and not every:
            continue
        if n_changed:
            changed += step_changed
            rows.append((s, s + m) if n_changed == m else np.flatnonzero(flags[:m]).astype(dtype) + s)
        sets = zip((sa, sb, sb_changed, hash_a, hash_b, weight_b), (*n, n[0], n[2], n[2]), (*found, *sums))
        for out, k, got in sets:  # each set's parts, joined once over the groups (_scan's joined)
            if got is not None:
                out.append(got[:k].copy())
    return changed, rows, sa, sb, sb_changed, hash_a, hash_b, weight_b


def _sampled_hashes(wa, wb, dtype, hashed: bool, changed: int, rows, sa, sb, sb_changed):
    """A group's scan as _steps returns it: with `hashed` (sampling), the group's
    sampled blocks hashed and b's weighed at its end in one set of calls (a set per step cost more than
    its work, and held the GIL the other worker waited for), read again from memory (the compiled pass
    takes them in the scan instead)."""
    hash_a, hash_b, weight_b = [], [], []
    if hashed and sa:
        ia, ib = concat(sa, dtype), concat(sb_changed, dtype)
        sa, sb_changed = [ia], [ib]
        hash_a, hash_b = [hashes(wa, ia)], [hashes(wb, ib)]
        weight_b = [np.count_nonzero(wa[ib].view(np.uint8) != wb[ib].view(np.uint8), axis=1)]
    return changed, rows, sa, sb, sb_changed, hash_a, hash_b, weight_b


_SUB = 1 << 11  # rows of a step xor-ed and keyed at a time: 256 KiB a side, in the core's cache


def _xor_keys(ca, cb, xor, key_a, key_b):
    """The xor of two steps' words into `xor` and each row's word_key into `key_a`, `key_b`, an L2-sized
    part at a time: word 5 read while its row is in cache (after a 1 MiB xor it is not, and the keys
    cost as much as the xor; measured 0.19-0.23 s against 0.145 s over 1 GB)."""
    for u in range(0, len(ca), _SUB):
        v = slice(u, u + _SUB)
        np.bitwise_xor(ca[v], cb[v], out=xor[v])
        np.multiply(ca[v, 5], KEY, out=key_a[v])
        np.multiply(cb[v, 5], KEY, out=key_b[v])
    return xor


def _sampled_rows(view: np.ndarray, start: int = 0) -> np.ndarray:
    """The content-sampled rows of `view` from `start` on."""
    words = view.view(np.uint64)
    parts = [np.flatnonzero(_sampled(words[s : s + SCAN])) + s for s in range(start, len(view), SCAN)]
    return concat(parts, np.int64)


def moved_new(a, ra: list, b, rb: list) -> MovedNew:
    """(changed, moved, new) bytes between two groups of same-named regions, paired in order; a size
    difference counts as changed bytes too. moved + new == changed."""
    changed = moved = 0
    estimate = None
    for x, y in zip(ra, rb):
        n = min(x.size, y.size)
        full = n - n % BLOCK
        sample = max(x.size, y.size) // BLOCK > EXACT_BLOCKS
        same = x.size == y.size
        scanned = _scan(a, x, b, y, full // BLOCK, sample, not same)
        block_changed, rows, sa, sb = scanned.changed, scanned.rows, scanned.sa, scanned.sb
        sb_changed = scanned.sb_changed
        xa = as_blocks(a.data, x.offset, full)
        xb = as_blocks(b.data, y.offset, full)
        tail_a = np.frombuffer(a.data, dtype=np.uint8, count=n - full, offset=x.offset + full)
        tail_b = np.frombuffer(b.data, dtype=np.uint8, count=n - full, offset=y.offset + full)
        tail_changed = int(np.count_nonzero(tail_a != tail_b))
        extra = abs(x.size - y.size)
        changed += block_changed + tail_changed + extra
        if not len(rows) and not extra:
            continue

        def weigh(r, xa=xa, xb=xb):
            return changed_counts(xa, xb, r)

        if same:
            # Content that moved left a changed position behind: look among the changed blocks of `a`.
            pre = (scanned.hash_b, scanned.hash_a, scanned.weight_b)
            found, est = _search(
                xb, rows, xa, rows, weigh, block_changed, (sb_changed, sa, *pre), scanned.tops
            )
        else:
            all_a = as_blocks(a.data, x.offset, x.size)
            pre = ()
            if sample:  # a's sampled rows past b's end too, hashed here (the scan hashed the others)
                past = _sampled_rows(all_a, len(xa))
                sa, hash_a = np.concatenate([sa, past]), np.concatenate([scanned.hash_a, hashes(all_a, past)])
                pre = (scanned.hash_b, hash_a, scanned.weight_b)
            found, est = _search(xb, rows, all_a, None, weigh, block_changed, (sb_changed, sa, *pre))
        moved += found
        estimate = est + estimate if est else estimate
        if extra:
            longer, lr, other, orr = (b, y, a, x) if y.size > x.size else (a, x, b, y)
            k = (extra // BLOCK) * BLOCK
            ext = np.frombuffer(longer.data, dtype=np.uint8, count=k, offset=lr.offset + n).reshape(-1, BLOCK)
            hay = as_blocks(other.data, orr.offset, orr.size)
            hay_sample = (sa if other is a else sb) if sample else None
            ext_sample = (_sampled_rows(ext), hay_sample) if sample else None
            whole = lambda r: np.full(len(r), BLOCK)  # noqa: E731
            # the hay's key tops: the scan kept them for every row of the shorter side
            found, est = _search(ext, None, hay, None, whole, len(ext) * BLOCK, ext_sample, scanned.tops)
            moved += found
            estimate = est + estimate if est else estimate
    for extra_regions in (ra[len(rb) :], rb[len(ra) :]):
        changed += sum(r.size for r in extra_regions)
    return MovedNew(changed, moved, changed - moved, estimate)


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
    """The bucket of a region of this kind (q9diff.read.model.KINDS)."""
    return KIND_BUCKETS.get(kind, DEFAULT_BUCKET)


def buckets(rows: list[dict]) -> list[dict]:
    """One row per bucket: every changed byte and every byte of size delta in exactly one row. A bucket
    holding a region's estimated split (`moved_estimate`) says so: "estimated": true."""
    out: dict[str, dict] = {}

    def add(name: str, changed: int, delta: int, estimated: bool) -> None:
        row = out.setdefault(name, {"bucket": name, "changed_bytes": 0, "size_delta": 0})
        row["changed_bytes"] += changed
        row["size_delta"] += delta
        if estimated:
            row["estimated"] = True

    for r in rows:
        if not r["changed_bytes"] and not r["delta"]:
            continue
        own = bucket_of(r["kind"])
        estimated = "moved_estimate" in r
        if r["moved_bytes"]:
            add(MOVED_BUCKET, r["moved_bytes"], 0, estimated)
        add(own, r["new_bytes"], r["delta"], estimated and r["new_bytes"] > 0)
    return [row for row in out.values() if row["changed_bytes"] or row["size_delta"]]


def estimate_note(rows: list[dict]) -> str | None:
    """One sentence on how moved bytes were estimated, when any region's were."""
    est = [r["moved_estimate"] for r in rows if "moved_estimate" in r]
    if not est:
        return None
    blocks, sampled = sum(e["blocks"] for e in est), sum(e["sampled_blocks"] for e in est)
    found = sum(e["found_blocks"] for e in est)
    return (
        f"~ estimated: {len(est)} large region(s) mostly new, moved bytes scaled from {sampled} of their"
        f" {blocks} changed {BLOCK}-byte blocks sampled by content ({found} found elsewhere, each verified"
        " byte for byte); every other figure is exact"
    )


def weights_verdict(rows: list[dict], roots: list[str]) -> str | None:
    """One sentence on the weights: identical but re-laid out, or new content ("~" where estimated). Its
    numbers are bytes, as in the attribution table: the weights' moved bytes are part of the `re_tiling`
    row, which also holds what moved elsewhere (padding, tails), so both are named where they differ."""
    w = [r for r in rows if bucket_of(r["kind"]) == "weights"]
    changed = sum(r["changed_bytes"] for r in w)
    if not changed:
        return None
    moved, new = sum(r["moved_bytes"] for r in w), sum(r["new_bytes"] for r in w)
    about = "~" if any("moved_estimate" in r for r in w) else ""
    all_moved = sum(r["moved_bytes"] for r in rows)
    of = f", within {MOVED_BUCKET}'s {about}{nbytes(all_moved)}"
    of = f", all of {MOVED_BUCKET}" if all_moved == moved else of
    by = f": an effect of {', '.join(roots)}" if roots else ""
    if new == 0:
        return f"weights identical, re-laid out ({about}{nbytes(moved)} moved{of}; 0 new){by}"
    if new < changed // 20:
        return (
            f"weights re-laid out ({about}{nbytes(moved)} moved{of}) with {about}{nbytes(new)} of new"
            f" constant data{by}"
        )
    moved_text = f"{about}{nbytes(moved)} moved{of if moved else ''}"
    return f"weights differ: {about}{nbytes(new)} new content ({moved_text})"
