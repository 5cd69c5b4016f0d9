"""Real logs from public threads with a known resolution (tests/data/explain_eval.json): every case the
rules were written against (split `tuned`) is explained right by `q9diff explain` (the thread's cause
leads the verdict, no wrong cause leads, every line accounted for). The held-out cases are scored by
`python scripts/explain_eval.py`, not held here: a test would make them tuned ones."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import explain_eval  # noqa: E402

TUNED = explain_eval.cases("tuned")


@pytest.mark.parametrize("case", TUNED, ids=[c["id"] for c in TUNED])
def test_a_real_log_is_explained_as_its_thread_resolved_it(case):
    right, why = explain_eval.judge(case)
    assert right, f"{case['url']}: {why}"


def test_every_case_names_its_thread_and_its_resolution():
    for case in explain_eval.cases():
        assert case["url"].startswith("https://github.com/") and case["resolution"], case["id"]
        assert case["split"] in ("tuned", "held-out") and case["expect"]["causes"], case["id"]
        assert 1 <= len(case["log"]) <= 12, case["id"]  # key lines only
