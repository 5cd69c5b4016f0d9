"""Every changed byte has a cause: moved vs new content per region, and buckets that add up."""

from __future__ import annotations

from itertools import product

from conftest import FIXTURES

from q9diff.compare.attribution import bucket_of
from q9diff.compare.diff import diff, to_json
from q9diff.format.binary import ContextBinary

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
    assert f'title="{total:,d} bytes"' in page  # the total row, exact bytes on hover
