"""Shared fixtures: the committed real compiler outputs under fixtures/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def all_bins() -> list[Path]:
    """Every context binary of fixtures/; fixtures/dlc's `*_qnn.bin` are DLCs (tests/test_dlc.py)."""
    return sorted(p for p in FIXTURES.rglob("*.bin") if p.parent.name != "dlc")


def oracle_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name[: -len(".bin")] + ".oracle.json").read_text())


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not all_bins():
        pytest.fail("fixtures/ holds no .bin: run scripts/make_fixtures.py")
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def q9diff_cache(tmp_path_factory) -> Path:
    """Rebuilds cached by the runners go to a fresh folder, not the user's ~/.cache/q9diff."""
    import os

    cache = tmp_path_factory.mktemp("q9diff-cache")
    os.environ["Q9DIFF_CACHE"] = str(cache)
    return cache


def q9diff_cli(*args: str, cwd: Path | None = None, timeout: float = 900):
    """Run the real command line in a child, as a user would; the finished process."""
    import os
    import subprocess
    import sys

    # env given as os.environ says it: a module that called curses' setupterm (which putenv()s LINES and
    # COLUMNS) would otherwise hand the child a COLUMNS this process does not see, and a wrapped view
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=dict(os.environ),
    )


# Why tests were skipped, one line per reason at the end of a run (issue 39, item 5): a contributor on a
# fresh clone sees what the corpus, chromium or an extra would add, and where to get it. A reason that
# names the real corpus (tests word it differently) is counted under one line.
REAL = ROOT.parent / "shared" / "real"
CORPUS_REASON = f"the real corpus {REAL} is absent: other projects' files, see docs/formats.md"


# What to install for a module a test imports when it can (pytest.importorskip says only that it could
# not): the extra that brings it, from this checkout.
INSTALL = {
    "onnxruntime_qnn": "pip install -e '.[ort]' (Linux x86_64/aarch64, Python 3.11)",
    "onnxruntime": "pip install -e '.[ort]' (Linux x86_64/aarch64, Python 3.11)",
    "onnx": "pip install -e '.[ort]'",
    "flatbuffers": "pip install -e '.[ort]' (onnxruntime brings it)",
    "tokenizers": "pip install -e '.[ort]'",
    "yaml": "pip install -e '.[test]' (pyyaml)",
    "jsonschema": "pip install -e '.[test]'",
}
_NOT_IMPORTED = re.compile(r"could not import '([\w.]+)'")


def skip_reason(report) -> str:
    """The reason a test was skipped, as the summary says it: what is missing, and what to install or
    set to run it, and where."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    reason = reason.removeprefix("Skipped: ").strip()
    if "shared/real" in reason or "shared\\real" in reason or "third-party" in reason:
        return CORPUS_REASON
    missing = _NOT_IMPORTED.search(reason)
    if missing:
        module = missing.group(1).split(".")[0]
        return f"{module} is not installed: {INSTALL.get(module, 'pip install ' + module)}"
    return reason


def pytest_terminal_summary(terminalreporter) -> None:
    import collections

    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    counts = collections.Counter(skip_reason(r) for r in skipped)
    terminalreporter.write_line("skipped tests, by reason:")
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"  skipped {n}: {shown_reason(reason)}")


SHOWN_REASON = 200  # characters of a reason in the summary (issue 54: one was 600); -rs has it whole


def shown_reason(reason: str) -> str:
    """A skip reason for the summary's line: one line, at most SHOWN_REASON characters, cut at a word."""
    one = " ".join(reason.split())
    if len(one) <= SHOWN_REASON:
        return one
    return one[: SHOWN_REASON - 20].rsplit(" ", 1)[0] + " … (-rs: whole)"


# The tests that compile or run a model (onnxruntime-qnn's compiler or x86 emulator: recompile, steps,
# verify, layers, a rebuilt fixture, the ssh runner's worker) or run the CI job: most of the suite's time.
# `python -m pytest -m "not slow"` leaves them out (README: a quick subset); a module here is slow whole,
# a test of another module by its name. The README's console blocks that need [ort] are marked in test_docs.
SLOW_MODULES = {
    "test_verify",
    "test_layers_cmd",
    "test_layers_faults",
    "test_layers_real",
    "test_layers_two_builds",
    "test_layers_judgement",
    "test_steps",
    "test_fix_loop",
    "test_ort_qnn_hook",
    "test_ssh_runner",
    "test_security_ssh",
    "test_fixtures",
    "test_no_traces",
    "test_ci_recipe",
}
SLOW_TESTS = {
    "test_suggest_apply_recompile_rebuilds_the_packed_reference",
    "test_the_story_closes_with_one_suggest",
    "test_suggest_target_sa8775p_rebuilds_the_reference_byte_for_byte",
    "test_after_apply_a_next_line_says_how_to_rebuild_and_diff_again",
    "test_verify_worker_does_not_import_from_the_working_directory",
    "test_recompile_child_does_not_import_from_the_working_directory",
    "test_recompile_refuses_names_that_leave_out",
    "test_recompile_refuses_an_output_over_its_own_source_model",
    "test_recompile_with_a_relative_out_and_the_recipe_elsewhere",
    "test_suggest_recompile_refuses_an_out_holding_the_reference",
    "test_verify_leaves_no_worker_folder_in_the_temp_dir",
    "test_verify_of_a_binary_with_huge_dims_is_one_line_and_allocates_nothing",
    "test_verify_report_from_saved_json_and_its_drift_chart",
    "test_a_non_finite_metric_is_written_as_a_word_and_nothing_else",
    "test_qairt_child_runs_the_real_package",
}


def pytest_collection_modifyitems(config, items) -> None:
    slow = pytest.mark.slow
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in SLOW_MODULES or item.originalname in SLOW_TESTS:
            item.add_marker(slow)
