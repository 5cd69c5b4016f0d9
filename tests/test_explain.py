"""`q9diff explain`: what QNN and Genie error numbers and pasted log lines mean (issue 35), held to the
numbers users paste and to the strings inside Qualcomm's own runtime libraries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import q9diff_cli

from q9diff.explain import PLACEHOLDERS, explain, primary, table

ASKED = {  # the numbers users paste (issue 35), with the C name each has in Qualcomm's headers
    5000: "QNN_CONTEXT_ERROR_INVALID_ARGUMENT",
    5005: "QNN_CONTEXT_ERROR_CREATE_FROM_BINARY",
    1002: "QNN_COMMON_ERROR_MEM_ALLOC",
    1007: "QNN_COMMON_ERROR_SYSTEM_COMMUNICATION",
    1008: "QNN_COMMON_ERROR_INCOMPATIBLE_BINARIES",
    1009: "QNN_COMMON_ERROR_LOADING_BINARIES",
    14001: "QNN_DEVICE_ERROR_INVALID_CONFIG",
    3110: "QNN_OP_PACKAGE_ERROR_VALIDATION_FAILURE",
    30010: "QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY",
    6031: "QNN_GRAPH_ERROR_ABORTED",
}


@pytest.mark.parametrize("value", sorted(ASKED))
def test_every_number_users_paste_is_named(value):
    r = q9diff_cli("explain", str(value), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "q9diff.explain/1"
    assert ASKED[value] in [c["name"] for c in data["codes"]]
    assert all(c["value"] == value and c["meaning"] for c in data["codes"])
    hexed = q9diff_cli("explain", hex(value), "--json")
    assert json.loads(hexed.stdout)["codes"] == data["codes"]


def test_5000_says_the_runtime_is_older_and_which_command_tells():
    r = q9diff_cli("explain", "5000")
    assert r.returncode == 0 and r.stdout.startswith("5000 (0x1388) QNN_CONTEXT_ERROR_INVALID_ARGUMENT")
    text = " ".join(r.stdout.split())
    assert "newer QAIRT than the runtime" in text and "q9diff doctor BUNDLE --runtime VERSION" in text
    assert "[measured:" in text and "[reported:" in text  # how each cause is known


@pytest.mark.parametrize(
    "line, code",
    [
        ("QnnDsp <E> Using newer context binary on old SDK", 5000),
        ("[ERROR] Failed to find available PD for contextId 1 on deviceId 0 coreId 0", 1002),
        ("Stub lib id mismatch: expected (v2.20.0.240223114737), detected (v2.21.0)", 1008),
        ("Unsupported HTP arch", None),
        ("<E> Failed to create context from binary with err 0x138d", 5005),
        ("Genie: Could not create context from binary for context index = 0 : err 5000", 5000),
    ],
)
def test_pasted_lines_are_recognised(line, code):
    found = explain(line)
    assert found.messages, line
    if code is not None:
        assert [c.value for c, _ in primary(found.codes)] == [code]
    r = q9diff_cli("explain", line)
    assert r.returncode == 0 and found.messages[0].text in " ".join(r.stdout.split())


def test_a_log_pasted_on_stdin_explains_each_line():
    log = "\n".join(
        [
            "0.1ms [ ERROR ] QnnDsp <E> Using newer context binary on old SDK",
            "0.2ms [ ERROR ] QnnDsp <E> Fail to get context blob with err 5000",
            "Failed to load from EpContext model. Failed to create context from binary.",
        ]
    )
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", "explain", "-", "--json"],
        input=log,
        capture_output=True,
        text=True,
        timeout=60,
    )
    data = json.loads(r.stdout)
    texts = [m["text"] for m in data["messages"]]
    assert "Using newer context binary on old SDK" in texts and len(texts) >= 3
    assert [c["value"] for c in data["codes"]][0] == 5000


def test_what_is_not_known_is_one_line():
    r = q9diff_cli("explain", "the", "weather")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'the weather'" in r.stderr
    assert q9diff_cli("explain", "4242").returncode == 2


def _library(name: str) -> bytes | None:
    from importlib.util import find_spec

    spec = find_spec("onnxruntime_qnn")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / name
    return path.read_bytes() if path.is_file() else None


def test_measured_messages_are_in_the_runtime_libraries_they_name():
    """A message said to be in a QAIRT 2.51 library is in the installed 2.51 library, word for word."""
    from q9diff.cli.common import embedded_qairt

    if not (embedded_qairt() or "").startswith("QAIRT 2.51."):
        pytest.skip("onnxruntime-qnn 2.7.0 (QAIRT 2.51) is not installed")
    _, messages = table()
    checked = 0
    for m in messages:
        if "2.51" not in m.versions or not m.library.endswith(".so"):
            continue
        data = _library(m.library)
        if data is None:
            continue
        # the text between format fields, and between sentences (a library may join them at run time)
        pieces = [
            q for p in PLACEHOLDERS.split(m.text) for q in re.split(r"(?<=\.) ", p) if len(q.strip()) >= 8
        ]
        assert pieces and all(p.encode() in data for p in pieces), (m.library, m.text)
        checked += 1
    assert checked >= 30


def test_the_table_is_whole_and_its_patterns_find_their_own_text():
    codes, messages = table()
    names = [c.name for c in codes]
    assert len(names) == len(set(names)) and len(codes) >= 150
    for m in messages:
        sample = PLACEHOLDERS.sub("7", m.text)
        assert m.pattern.search(sample) or re.search(m.pattern.pattern, sample, re.I), m.text
        assert m.meaning and m.library, m.text
        assert all(c.evidence in ("measured", "documented", "reported") for c in m.causes)
