"""Every changed byte has a cause: moved vs new content per region, and buckets that add up."""

from __future__ import annotations

from itertools import product

from conftest import FIXTURES

from q9diff.compare.attribution import bucket_of
from q9diff.compare.diff import diff, to_json
from q9diff.read.binary import ContextBinary

V = FIXTURES / "variants"


def _weights(res) -> tuple[int, int, int]:
    w = [r for r in res.regions if bucket_of(r["kind"]) == "weights"]
    return (
        sum(r["changed_bytes"] for r in w),
        sum(r["moved_bytes"] for r in w),
        sum(r["new_bytes"] for r in w),
    )


def _diff(a: str, b: str):
    return diff(ContextBinary.open(V / a), ContextBinary.open(V / b))


def test_settings_only_pairs_move_the_weights():
    for a, b in [
        ("vtcm_2mb.bin", "vtcm_8mb.bin"),
        ("vtcm_2mb.bin", "vtcm_4mb.bin"),
        ("opt_1.bin", "opt_3.bin"),
    ]:
        res = _diff(a, b)
        changed, moved, new = _weights(res)
        assert changed > 10_000 and moved >= 0.99 * changed, (a, b, changed, moved, new)
        assert res.weights_verdict.startswith("weights identical, re-laid out"), res.weights_verdict
    qwen = diff(
        ContextBinary.open(FIXTURES / "qwen-mini/local/part_1_of_2.bin"),
        ContextBinary.open(FIXTURES / "qwen-mini/reference/part_1_of_2.bin"),
    )
    pool = next(r for r in qwen.regions if r["name"] == "WEIGHTS/0/pool")
    assert pool["changed_bytes"] > 100_000 and pool["moved_bytes"] == pool["changed_bytes"]


def test_other_weights_are_new_content():
    res = _diff("precision_w8a16.bin", "precision_fp16.bin")
    changed, moved, new = _weights(res)
    assert new > 0.9 * changed and res.weights_verdict.startswith("weights differ")


def test_moved_plus_new_is_changed_and_buckets_add_up_on_every_pair():
    bins = sorted(V.glob("*.bin"))
    opened = {p: ContextBinary.open(p) for p in bins}
    for pa, pb in product(bins, bins):
        res = diff(opened[pa], opened[pb])
        data = to_json(res)
        for r in data["regions"]:
            assert r["moved_bytes"] + r["new_bytes"] == r["changed_bytes"], (pa.name, pb.name, r)
        changed = sum(r["changed_bytes"] for r in data["regions"])
        assert sum(x["changed_bytes"] for x in data["attribution"]) == changed, (pa.name, pb.name)
        assert sum(x["size_delta"] for x in data["attribution"]) == res.b.size - res.a.size
        assert all(x["changed_bytes"] or x["size_delta"] for x in data["attribution"])


def test_the_html_report_carries_the_table_that_adds_up(tmp_path):
    from conftest import q9diff_cli

    out = tmp_path / "r.html"
    r = q9diff_cli(str(V / "vtcm_2mb.bin"), str(V / "vtcm_8mb.bin"), "--html", str(out))
    assert r.returncode == 1, r.stderr
    page = out.read_text()
    assert "Where the changed bytes went" in page and "re_tiling" in page
    assert "weights identical, re-laid out" in page
    res = _diff("vtcm_2mb.bin", "vtcm_8mb.bin")
    total = sum(x["changed_bytes"] for x in res.attribution)
    assert f">{total:,d} B</span>" in page  # the total row in bytes, as the terminal says it


def test_large_regions_are_sampled_first_and_exact_unless_mostly_new(monkeypatch):
    """With the sampling threshold lowered to 64 blocks (8 KiB), the fixtures' pools count as large:
    a region the content sample finds mostly moved is still searched block by block (the same figures
    as without sampling), and a mostly-new one carries its estimate, said in the JSON and the verdict."""
    from q9diff.compare import attribution

    pairs = [
        ("vtcm_2mb.bin", "vtcm_8mb.bin"),
        ("opt_1.bin", "opt_3.bin"),
        ("int4_unpacked.bin", "packing_off.bin"),
    ]
    exact = {p: to_json(_diff(*p)) for p in pairs}
    monkeypatch.setattr(attribution, "EXACT_BLOCKS", 64)
    for p in pairs[:2]:  # the pools mostly moved: searched exactly, the figures of an unsampled search
        pools = [r for r in to_json(_diff(*p))["regions"] if r["name"].endswith("const_pool")]
        assert pools == [r for r in exact[p]["regions"] if r["name"].endswith("const_pool")], p
        assert pools[0]["moved_bytes"] > 60_000
    data = to_json(_diff(*pairs[2]))
    pool = next(r for r in data["regions"] if r["name"].endswith("const_pool"))
    est = pool["moved_estimate"]
    assert 0 < est["sampled_blocks"] < est["blocks"] and est["found_blocks"] <= est["sampled_blocks"]
    assert pool["moved_bytes"] + pool["new_bytes"] == pool["changed_bytes"]
    assert pool["changed_bytes"] == next(
        r["changed_bytes"] for r in exact[pairs[2]]["regions"] if r["name"] == pool["name"]
    )
    assert data["weights_verdict"].startswith("weights differ: ~"), data["weights_verdict"]
    assert any(row.get("estimated") for row in data["attribution"])
    assert "moved_estimate" not in str(exact[pairs[2]])  # without sampling, nothing is estimated


def _pool_blocks(folder: str, part: str):
    from q9diff.compare.blocks import as_blocks

    cb = ContextBinary.open(FIXTURES / "qwen-mini" / folder / part)
    r = next(r for r in cb.regions if r.name == "PICKLE[0]/inner/const_pool")
    return as_blocks(cb._buf, r.offset, r.size)


def test_a_hash_is_not_the_content(monkeypatch):
    """find_blocks says found exactly where a byte comparison does: on qwen-mini's pools (whose blocks
    include some with two words swapped, which the old hash could not tell apart), and when every hash
    collides (one multiplier for all words: any reordering of a block's words hashes the same) with one
    round of candidates, so the rest are matched by content."""
    import numpy as np

    from q9diff.compare import blocks

    for part in ("part_1_of_2.bin", "part_2_of_2.bin"):
        hay, needles = _pool_blocks("local", part), _pool_blocks("reference", part)
        # the reference's blocks, and each with its words reordered: collisions for a sum of the words
        words = needles.view(np.uint64)
        needles = np.concatenate(
            [
                needles,
                words[:, ::-1].copy().view(np.uint8),
                words[:, 1:].repeat(2, 1)[:, :16].copy().view(np.uint8),
            ]
        )
        known = {bytes(h) for h in hay}
        truth = np.array([bytes(b) in known for b in needles])
        assert 0 < truth.sum() < len(truth)
        rows = np.arange(len(needles))[::-1].copy()
        for mult, rounds in ((blocks.MULT, blocks._ROUNDS), (np.ones_like(blocks.MULT), 1)):
            monkeypatch.setattr(blocks, "MULT", mult)
            monkeypatch.setattr(blocks, "_ROUNDS", rounds)
            partner = np.full(len(rows), -1, dtype=np.int64)
            hit = blocks.find_blocks(needles, rows, hay, None, partner)
            assert (hit == truth[rows]).all(), (part, rounds)
            assert all((hay[partner[i]] == needles[rows[i]]).all() for i in np.flatnonzero(hit))


def test_few_against_many_word_match_with_key_tops():
    """could_match narrowed by the scan's key tops (2 bytes a hay row) finds exactly the rows the word
    match finds, for one needle and for many; and a search left no needle (following found every
    moved row) answers nothing found instead of failing."""
    import numpy as np

    from q9diff.compare import attribution, blocks

    hay, needles = _pool_blocks("local", "part_1_of_2.bin"), _pool_blocks("reference", "part_1_of_2.bin")
    tops = (blocks.word_key(hay.view(np.uint64)[:, 5].copy()) >> np.uint64(48)).astype(np.uint16)
    hrows = np.arange(0, len(hay), 2)  # every other hay row, as a's changed rows
    for nrows in (np.array([3]), np.arange(0, len(needles), 7)):
        plain = blocks.could_match(hay, hrows, needles, nrows)
        narrowed = blocks.could_match(hay, hrows, needles, nrows, tops)
        assert len(plain) and (plain == narrowed).all()
    assert not len(attribution._exact(needles, np.zeros(0, np.int64), hay, hrows, tops))
    assert not len(blocks.could_match(hay, hrows, needles, np.zeros(0, np.int64)))


def test_distinct_is_numpys_unique_on_the_searches_inputs():
    """distinct (the search's sorted set, without np.unique's import of numpy.ma) answers what
    np.unique answers: values, order and dtype, for the dtypes the searches give it, empty and single
    arrays included; and a diff that searches (fp16 against w8a16: few blocks against many, matched
    on a word) no longer pulls numpy.ma in, as np.unique did."""
    import subprocess
    import sys

    import numpy as np

    from q9diff.compare.blocks import distinct

    rng = np.random.default_rng(7)
    for dtype in (np.uint16, np.uint64, np.int64, np.int32):
        for n in (0, 1, 2, 5, 4096):
            x = rng.integers(0, 50 if n > 5 else 3, n).astype(dtype)
            got, want = distinct(x), np.unique(x)
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), (dtype, n)
    code = (
        "import sys; from q9diff.compare.diff import diff, to_json; from q9diff.read.binary import"
        f" ContextBinary as C; to_json(diff(C.open({str(V / 'precision_fp16.bin')!r}),"
        f" C.open({str(V / 'precision_w8a16.bin')!r}))); print('numpy.ma' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_the_fused_scan_is_the_numpy_scan(monkeypatch):
    """The compiled pass (q9diff/compare/_scan.c) and the numpy passes it replaces give the same figures:
    the whole JSON of every variant pair, also with sampling forced (EXACT_BLOCKS 64: the keyed, sampled
    and different-size paths), and each of a scan's arrays on qwen-mini's shared pool. Where a C compiler
    and Python's headers are here, the build must have made it (else the fast path is silently lost)."""
    import sysconfig
    from pathlib import Path
    from shutil import which

    from q9diff.compare import attribution, blocks

    if blocks.FUSED is None:
        headers = Path(sysconfig.get_paths()["include"], "Python.h").exists()
        assert not (which("cc") and headers), "a compiler and Python.h are here, but no q9diff.compare._scan"
        import pytest

        pytest.skip("no C compiler or Python headers: q9diff.compare._scan was not built")
    fused = blocks.FUSED
    bins = sorted(V.glob("*.bin"))
    opened = {p: ContextBinary.open(p) for p in bins}
    pairs = list(product(bins[::2], bins[1::3]))
    for limit in (attribution.EXACT_BLOCKS, 64):
        monkeypatch.setattr(attribution, "EXACT_BLOCKS", limit)
        for pa, pb in pairs:
            monkeypatch.setattr(blocks, "FUSED", fused)
            mine = to_json(diff(opened[pa], opened[pb]))
            monkeypatch.setattr(blocks, "FUSED", None)
            assert mine == to_json(diff(opened[pa], opened[pb])), (limit, pa.name, pb.name)
    a = ContextBinary.open(FIXTURES / "qwen-mini/local/part_1_of_2.bin")
    b = ContextBinary.open(FIXTURES / "qwen-mini/reference/part_1_of_2.bin")
    x = next(r for r in a.regions if r.name == "WEIGHTS/0/pool")
    y = next(r for r in b.regions if r.name == "WEIGHTS/0/pool")
    nb = min(x.size, y.size) // 128
    for sample, every in ((False, False), (True, False), (True, True)):
        scans = []
        for kernel in (fused, None):
            monkeypatch.setattr(blocks, "FUSED", kernel)
            scans.append(attribution._scan(a, x, b, y, nb, sample, every))
        one, other = scans
        assert one.changed == other.changed > 0
        assert (one.rows.whole == other.rows.whole).all()
        for name in ("sa", "sb", "sb_changed", "hash_a", "hash_b", "weight_b"):
            assert (getattr(one, name) == getattr(other, name)).all(), (sample, every, name)
        if one.tops is not None:
            at = one.rows.whole
            assert (one.tops[at] == other.tops[at]).all()


def _scalar_build(tmp_path):
    """_scan.c built without its SSE2 path (the one aarch64 builds take), beside the test."""
    import importlib.util
    import subprocess
    import sysconfig
    from pathlib import Path

    import q9diff.compare

    src = Path(q9diff.compare.__file__).with_name("_scan.c")
    out = tmp_path / ("_scan" + sysconfig.get_config_var("EXT_SUFFIX"))
    flags = ["-O2", "-shared", "-fPIC", "-DQ9DIFF_SCALAR", "-I" + sysconfig.get_paths()["include"]]
    subprocess.run(["cc", *flags, str(src), "-o", str(out)], check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("_scan", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_compiled_passes_count_as_numpy_does(tmp_path):
    """_scan's step, same and hash, as built and without SSE2, against numpy on blocks made to catch a
    miscount: every byte value against every other in one lane or all, equal blocks, unaligned buffers (a
    region's offset in a file need not be a multiple of 8), rows in any order; and arguments that do not
    fit (rows outside, short buffers) are refused, not read past."""
    import pytest

    from q9diff.compare import blocks

    if blocks.FUSED is None:
        pytest.skip("q9diff.compare._scan was not built (see test_the_fused_scan_is_the_numpy_scan)")
    for fused in (blocks.FUSED, _scalar_build(tmp_path)):
        _kernel_as_numpy_does(fused)


def _kernel_as_numpy_does(fused):
    import numpy as np
    import pytest

    from q9diff.compare.blocks import KEY, MULT, block_hash

    rng = np.random.default_rng(7)
    m = 3000
    a = rng.integers(0, 256, (m, 128), dtype=np.uint8)
    b = a.copy()
    b[::2] = rng.integers(0, 256, (len(b[::2]), 128), dtype=np.uint8)  # mostly changed throughout
    b[1::7, 5] ^= np.uint8(0x80)  # one byte's top bit
    b[3::11] ^= np.uint8(0xFF)  # every byte
    b[4] = a[4] ^ np.arange(128, dtype=np.uint8)  # byte 0 the same, the rest each other
    for shift in (0, 1, 3):
        raw_a = np.zeros(m * 128 + shift, np.uint8)
        raw_b = np.zeros(m * 128 + shift, np.uint8)
        raw_a[shift:], raw_b[shift:] = a.ravel(), b.ravel()
        ua, ub = raw_a[shift:], raw_b[shift:]
        flags, tops = np.empty(m, np.uint8), np.zeros(m, np.uint16)
        outs = [np.empty(m, np.int64) for _ in range(3)]
        sums = [np.empty(m, np.uint64), np.empty(m, np.uint64), np.empty(m, np.int64)]
        differ = a != b
        changed_rows = differ.any(1)
        ka, kb = a.view(np.uint64)[:, 5] * KEY, b.view(np.uint64)[:, 5] * KEY
        below = 1 << 62  # a quarter of the rows sampled, so the sets are not empty
        for every in (False, True):
            hashing = (None, None, None, None) if every else (MULT, *sums)  # regions of one size hash
            got = fused.step(
                ua, ub, flags, None if every else tops, 1000, *outs, every, int(KEY), below, *hashing
            )
            changed, rows, *n = got
            assert changed == int(differ.sum()) and rows == int(changed_rows.sum())
            assert (flags.astype(bool) == changed_rows).all()
            taken = True if every else changed_rows  # rows a pass keys: all, or the changed ones
            wants = ((ka < below) & taken, (kb < below) & taken, (kb < below) & changed_rows)
            for out, k, want in zip(outs, n, wants):
                assert (out[:k] == np.flatnonzero(want) + 1000).all() and 0 < k < m, every
            if not every:
                assert (tops[changed_rows] == (ka[changed_rows] >> np.uint64(48))).all()
                assert not tops[~changed_rows].any()  # written for changed rows only
                # the sampled blocks' hashes (a's, b's changed) and b's weights, taken in the pass
                ra, rc = outs[0][: n[0]] - 1000, outs[2][: n[2]] - 1000
                assert (sums[0][: n[0]] == block_hash(a[ra])).all()
                assert (sums[1][: n[2]] == block_hash(b[rc])).all()
                assert (sums[2][: n[2]] == differ[rc].sum(1)).all() and sums[2][: n[2]].min() > 0
        nothing = (None, 0, None, None, None, False, 1, 0, None, None, None, None)  # no sets, no hashes
        assert fused.step(ua, ua, flags, *nothing) == (0,) * 5
        assert not flags.any()

    def step(x, y, f):
        return fused.step(x, y, f, None, 0, None, None, None, False, 1, 0, None, None, None, None)

    with pytest.raises(ValueError):
        step(a.ravel(), b.ravel()[:-128], flags)  # runs of other lengths
    with pytest.raises(ValueError):
        step(a.ravel(), b.ravel(), flags[:-1])  # a flag short
    with pytest.raises(ValueError):
        fused.step(a.ravel(), b.ravel(), flags, tops[:-1], 0, None, None, None, False, 1, 0, *[None] * 4)
    with pytest.raises(ValueError):
        fused.step(a.ravel(), b.ravel(), flags, None, 0, outs[0][:-1], None, None, True, 1, 0, *[None] * 4)
    with pytest.raises(ValueError):  # hashes without their multipliers, or without their rows
        fused.step(a.ravel(), b.ravel(), flags, None, 0, *outs, False, 1, 0, None, *sums)
    with pytest.raises(ValueError):
        fused.step(a.ravel(), b.ravel(), flags, None, 0, None, *outs[1:], False, 1, 0, MULT, *sums)
    with pytest.raises(ValueError):
        fused.step(a.ravel(), b.ravel(), flags, None, 0, *outs, False, 1, 0, MULT[:-1], *sums)
    with pytest.raises(ValueError):
        fused.step(a.ravel(), b.ravel(), flags, None, 0, *outs, False, 1, 0, MULT, sums[0][:-1], *sums[1:])
    with pytest.raises(ValueError):
        step(a.ravel()[:-1], b.ravel()[:-1], flags)  # not whole blocks
    # same and hash: at rows (ascending or not, repeated) and consecutive, and rows outside refused
    ia = rng.integers(0, m, 500)
    ib = np.where(np.arange(500) % 3 == 0, ia, rng.integers(0, m, 500))
    out = np.empty(500, np.uint8)
    fused.same(a, b, out, ia, ib)
    assert (out.astype(bool) == (a[ia] == b[ib]).all(1)).all() and out.any() and not out.all()
    whole = np.empty(m, np.uint8)
    fused.same(a, b, whole, None, None)
    assert (whole.astype(bool) == (a == b).all(1)).all()
    hashed = np.empty(500, np.uint64)
    fused.hash(b, ib, MULT, hashed)
    assert (hashed == block_hash(b[ib])).all()
    fused.hash(a, None, MULT, whole_h := np.empty(m, np.uint64))
    assert (whole_h == block_hash(a)).all()
    for bad in (np.array([m]), np.array([-1]), np.array([0], np.int32)):
        with pytest.raises(ValueError):
            fused.same(a, b, np.empty(1, np.uint8), bad, np.array([0]))
        with pytest.raises(ValueError):
            fused.hash(a, bad, MULT, np.empty(1, np.uint64))
    with pytest.raises(ValueError):
        fused.same(a[:10], b, np.empty(11, np.uint8), None, None)  # more flags than blocks
    with pytest.raises(ValueError):
        fused.hash(a, None, MULT[:-1], np.empty(1, np.uint64))  # a multiplier short
    for short in (MULT[:-1], MULT[:1], b""):  # read whole even when no hash asks for it (ASan saw it)
        with pytest.raises(ValueError):
            fused.step(
                a.ravel(), b.ravel(), flags, None, 0, None, None, None, False, 1, 0, short, None, None, None
            )
    with pytest.raises(ValueError):  # consecutive rows: more outputs than blocks, an error not a crash
        fused.hash(a[:10], None, MULT, np.empty(11, np.uint64))
