"""The shipped explain catalogue is what scripts/build_explain_catalogue.py reads out of the libraries:
rebuilt here from every library that is installed (onnxruntime-qnn 2.7.0's in the test venv, QAIRT 2.51)
and compared message for message over those libraries and that version; the sources not at hand (the
other releases, the win_arm64 wheel, ExecuTorch's adaptor, a clone of FastRPC) are skipped with the
reason. Also: the filing words the catalogue stores are the ones the matcher computes, and the FastRPC
codes agree with their header where a clone is given."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import build_explain_catalogue as build  # noqa: E402

from q9diff.explain import catalogue  # noqa: E402

SHIPPED = json.loads(build.OUT.read_text(encoding="utf-8"))
FASTRPC = os.environ.get("Q9DIFF_FASTRPC_CLONE")  # a clone of github.com/qualcomm/fastrpc


def test_the_catalogue_is_what_the_installed_libraries_hold():
    files = build.installed_libraries()
    if not files:
        pytest.skip("onnxruntime-qnn 2.3.0-2.7.0 is not installed: no library to rebuild from")
    found, _ = build.build(None, None, None, installed=True)
    assert found, "the rebuild read no message"
    assert build.compare(SHIPPED, found) == []
    read = {lib for lib, _ in files}
    assert read == set(build.HOST)  # every x86_64 library of the wheel was rebuilt and compared


def test_the_sources_not_installed_here_are_named():
    listed = set(SHIPPED["libraries"])
    assert listed == set(build.LIBRARIES)
    counts = {lib: 0 for lib in listed}
    for _, place, _ in SHIPPED["messages"]:
        for lib in SHIPPED["places"][place]:
            counts[lib] += 1
    assert all(n > 100 for n in counts.values()), counts  # every source read holds messages
    specs = [spec.split(" ", 1)[1] for place in SHIPPED["places"] for spec in place.values()]
    versions = {v for spec in specs for v in build.unspan(spec)}
    assert {"2.47", "2.48", "2.49", "2.50", "2.51", "1.5.1", build.FASTRPC_COMMIT[:12]} <= versions


def test_the_filing_words_are_the_matchers_own():
    texts = [t for t, _, _ in SHIPPED["messages"]]
    assert [w for _, _, w in SHIPPED["messages"]] == catalogue.filing_words(texts)


def test_every_message_finds_itself():
    """Each catalogued message, its fields filled in, is found by the matcher (a sample of one in 25)."""
    rows = catalogue.rows()
    missed = []
    for i in range(0, len(rows), 25):
        e = catalogue.entry(i)
        if e.letters < catalogue.MIN_LETTERS:
            continue
        line = catalogue.normal(catalogue.collapse(catalogue.FIELD.sub("7", e.text)))
        hits = catalogue.find(line, set(catalogue.WORD.findall(line)))
        if not any(h.entry.text == e.text for h in hits):
            missed.append(e.text)
    assert missed == []


@pytest.mark.skipif(not FASTRPC, reason="Q9DIFF_FASTRPC_CLONE (a qualcomm/fastrpc clone) is not set")
def test_fastrpc_codes_and_messages_are_its_sources():
    assert build.fastrpc_codes(Path(FASTRPC)) == SHIPPED["fastrpc"]
    found, _ = build.build(None, None, Path(FASTRPC), installed=False)
    assert build.compare(SHIPPED, found) == []
