"""The moved-vs-new search gives the figures the search before it gave: the earlier algorithm is kept here,
as the reference, and both run on the same pairs (the fixtures' and bench-style quantized pools with
repeated words, at a small size, large-region paths included)."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from conftest import FIXTURES

from q9diff.compare import attribution, blocks
from q9diff.compare.diff import diff, to_json
from q9diff.read.binary import ContextBinary
from q9diff.read.model import Region

V = FIXTURES / "variants"


def reference_could_match(view, rows, other, orows, tops=None) -> np.ndarray:
    """could_match as it was: a binary search among the wanted words (or their key tops) for every row."""
    n, no = (len(view) if rows is None else len(rows)), (len(other) if orows is None else len(orows))
    if not n or not no:
        return np.zeros(0, dtype=np.int64)
    wo = other.view(np.uint64)[:, 5] if orows is None else other.view(np.uint64)[orows, 5]
    wanted = np.unique(wo)
    wanted_tops = np.unique((blocks.word_key(wanted) >> np.uint64(48)).astype(np.uint16))

    def among(k, values):
        return values[np.minimum(np.searchsorted(values, k), len(values) - 1)] == k

    if tops is not None and rows is not None:
        r = rows[among(tops[rows], wanted_tops)]
        return r[among(view.view(np.uint64)[r, 5], wanted)].astype(np.int64)
    r = np.arange(n) if rows is None else rows
    return r[among(view.view(np.uint64)[r, 5], wanted)].astype(np.int64)


class Pool:
    """A buffer as moved_new reads a file: its bytes and a read-ahead hint (a no-op in memory)."""

    def __init__(self, data: bytes):
        self.data = memoryview(data)

    def will_need(self, offset: int, size: int) -> None:
        pass


def _quantized(rng, n: int) -> np.ndarray:
    """n bytes of w8 weights as ONNX Runtime's QNN config quantizes N(0, 1/64) values (per tensor, uint8,
    asymmetric), as the shared bench pairs hold them: few values, so 8-byte words repeat."""
    w = rng.standard_normal(n) / 64
    scale = (w.max() - w.min()) / 255
    return np.clip(np.round(w / scale) + np.round(-w.min() / scale), 0, 255).astype(np.uint8)


def _bench_style_pairs() -> list[tuple[bytes, bytes, str]]:
    """(a, b, what) pools of a few MiB: weights from another seed (all differ), the same weights with a
    third of their blocks moved, and each of those one size against a longer other; zero blocks (a
    word repeated thousands of times) and a tail of moved blocks in the longer side."""
    rng = np.random.default_rng(7)
    n = 3 << 20
    a = _quantized(rng, n)
    a[: 64 * 1024] = 0  # padding: 512 zero blocks, word 5 the same in each
    other = _quantized(np.random.default_rng(8), n)
    other[: 64 * 1024] = 0
    moved = a.copy().reshape(-1, blocks.BLOCK)
    rows = rng.choice(len(moved), len(moved) // 3, replace=False)
    moved[rows] = moved[rng.permutation(rows)]
    moved = moved.ravel()
    tail = np.concatenate([a[4096:8192], _quantized(rng, 3000), a[: 2 * blocks.BLOCK]])
    out = []
    for b, what in ((other, "all differ"), (moved, "a third moved")):
        out.append((a.tobytes(), b.tobytes(), what))
        out.append((a.tobytes(), np.concatenate([b, tail]).tobytes(), what + ", b longer"))
        out.append((np.concatenate([a, tail[::-1]]).tobytes(), b.tobytes(), what + ", a longer"))
    return out


def _figures(a: bytes, b: bytes):
    ra, rb = [Region("pool", 0, len(a), "weights")], [Region("pool", 0, len(b), "weights")]
    return attribution.moved_new(Pool(a), ra, Pool(b), rb)


@pytest.mark.parametrize("exact_blocks", [attribution.EXACT_BLOCKS, 64])
def test_bench_style_pools_give_the_reference_figures(monkeypatch, exact_blocks):
    """Every changed byte moved or new as the reference search says, on pools too small for sampling
    and, with the threshold lowered to 64 blocks, through the sample, the estimate and the follow."""
    monkeypatch.setattr(attribution, "EXACT_BLOCKS", exact_blocks)
    seen = set()
    for a, b, what in _bench_style_pairs():
        new = _figures(a, b)
        with monkeypatch.context() as m:
            m.setattr(attribution, "could_match", reference_could_match)
            old = _figures(a, b)
        assert new == old, what
        assert new.moved + new.new == new.changed
        seen.add((new.moved > 0, new.estimate is not None))
    assert (True, False) in seen  # moved bytes found exactly
    if exact_blocks == 64:
        assert (False, True) in seen or (True, True) in seen  # and estimated from the sample


def test_fixture_pairs_give_the_reference_figures(monkeypatch):
    """The region rows of every pair of the compiled variants, as the reference search gives them."""
    bins = sorted(V.glob("*.bin"))
    opened = {p: ContextBinary.open(p) for p in bins}
    for pa, pb in product(bins, bins):
        if pa == pb:
            continue
        new = to_json(diff(opened[pa], opened[pb]))["regions"]
        with monkeypatch.context() as m:
            m.setattr(attribution, "could_match", reference_could_match)
            old = to_json(diff(opened[pa], opened[pb]))["regions"]
        assert new == old, (pa.name, pb.name)


def test_could_match_is_the_reference_on_repeated_words():
    """The index of fingerprints answers what a search among the wanted words answers, with and without
    the scan's key tops, when one word repeats in most rows and when the wanted words are many."""
    rng = np.random.default_rng(3)
    hay = _quantized(rng, 1 << 20).reshape(-1, blocks.BLOCK)
    hay[::3] = 0  # a third of the rows share word 5
    needles = np.concatenate(
        [hay[rng.choice(len(hay), 40)], _quantized(rng, 40 * blocks.BLOCK).reshape(-1, 128)]
    )
    tops = (blocks.word_key(hay.view(np.uint64)[:, 5].copy()) >> np.uint64(48)).astype(np.uint16)
    hrows = np.arange(1, len(hay), 2)
    for nrows in (np.arange(len(needles)), np.array([1]), np.array([0])):
        for rows, t in ((None, None), (None, tops), (hrows, None), (hrows, tops)):
            got = blocks.could_match(hay, rows, needles, nrows, t)
            assert (got == reference_could_match(hay, rows, needles, nrows, t)).all()
    many = np.arange(0, len(hay), 2)  # wanted words many: the index at its larger sizes
    assert (blocks.could_match(hay, None, hay, many) == reference_could_match(hay, None, hay, many)).all()


@pytest.mark.parametrize("longer", ["a", "b"])
def test_regions_of_other_sizes_are_scanned_as_numpy_does(monkeypatch, longer):
    """For regions of other sizes the scan keeps every row's key tops of the shorter side (the longer's
    extra blocks are searched among its rows) and hashes the content sample: the compiled pass and numpy's
    passes give the same arrays, and the tops are word_key's top 16 bits of each of the shorter's rows."""
    fused = blocks.FUSED
    if fused is None:
        pytest.skip("no C compiler or Python headers: q9diff.compare._scan was not built")
    a, b, _ = next(p for p in _bench_style_pairs() if p[2] == f"a third moved, {longer} longer")
    x, y = Region("pool", 0, len(a), "weights"), Region("pool", 0, len(b), "weights")
    nb = min(len(a), len(b)) // blocks.BLOCK
    monkeypatch.setattr(attribution, "_SAMPLED", np.uint64(1 << 62))  # a quarter of the rows sampled
    scans = []
    for kernel in (fused, None):
        monkeypatch.setattr(blocks, "FUSED", kernel)
        scans.append(attribution._scan(Pool(a), x, Pool(b), y, nb, True, True))
    one, other = scans
    for name in ("sa", "sb", "sb_changed", "hash_a", "hash_b", "weight_b", "tops"):
        assert len(getattr(one, name)) and (getattr(one, name) == getattr(other, name)).all(), name
    shorter = np.frombuffer(b if longer == "a" else a, np.uint64, count=nb * 16).reshape(nb, 16)
    assert (one.tops == blocks.word_key(shorter[:, 5]) >> np.uint64(48)).all()
    assert (one.hash_a == blocks.block_hash(blocks.as_blocks(a, 0, len(a))[one.sa])).all()


def _resident_pages(path) -> int:
    """How many of the file's pages are in the page cache (mincore over a mapping of it)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = path.stat().st_size
    with open(path, "rb") as f:
        at = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), 0)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    try:
        assert libc.mincore(at, size, vec) == 0, ctypes.get_errno()
    finally:
        libc.munmap(at, size)
    return sum(v & 1 for v in vec)


def test_read_ahead_brings_regular_files_in_and_leaves_the_rest(tmp_path):
    """read_ahead asks for the first bytes of each regular file (they are in the page cache when its
    thread is done, after they were dropped from it); a folder, a FIFO and a missing path are left to the
    reading that reports them, without a wait."""
    import os
    import time

    from q9diff.read.files import read_ahead

    files = [tmp_path / "a.bin", tmp_path / "b.bin"]
    for i, f in enumerate(files):
        f.write_bytes(np.random.default_rng(i).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes())
        fd = os.open(f, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    if any(_resident_pages(f) for f in files):
        pytest.skip("this file system keeps the pages in memory (tmpfs): nothing to read ahead")
    thread = read_ahead([*files, None], first=2 << 20)
    thread.join(timeout=60)
    assert not thread.is_alive()
    pages = (2 << 20) // 4096
    for _ in range(600):  # the kernel reads what was asked for after the call returns: wait for it
        if all(_resident_pages(f) >= pages for f in files):
            break
        time.sleep(0.05)
    assert all(_resident_pages(f) >= pages for f in files)
    os.mkfifo(tmp_path / "fifo")
    assert read_ahead([tmp_path, tmp_path / "fifo", tmp_path / "missing"]) is None
