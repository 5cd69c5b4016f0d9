"""`q9diff explain`: error numbers and C names (issue 35), and pasted logs read line by line with one
verdict first (issue 48): every line explained, context or unknown; generic findings (a library that
could not be opened, the number the line writes) before the message's usual meaning; never a line
explained with another tool's meaning."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import q9diff_cli

from q9diff.explain import catalogue
from q9diff.explain.codes import CODES_PATH, primary
from q9diff.explain.log import curated
from q9diff.explain.query import explain

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


def stdin(text: str | bytes, *args: str) -> subprocess.CompletedProcess:
    data = text.encode() if isinstance(text, str) else text
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", "explain", "-", *args],
        input=data,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.parametrize("value", sorted(ASKED))
def test_every_number_users_paste_is_named(value):
    r = q9diff_cli("explain", str(value), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "q9diff.explain/1" and data["verdict"] is None and data["lines"] == []
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


def test_fastrpc_numbers_are_named_from_their_header_in_every_form_a_log_writes_them():
    for written in ("0x80000406", "AEE_EUNABLETOLOAD"):
        found = explain(written)
        assert [c.name for c in found.codes] == ["AEE_EUNABLETOLOAD"] and found.codes[0].hex == "0x80000406"
    line = "Error 0x80000416: apps_dev_init failed for domain 3, errno Success, ioErr -2147482602"
    f = explain(line).findings[0]
    assert {c.name for c in f.codes} == {"AEE_ERESOURCENOTFOUND"} and f.own_number  # the signed form too
    assert f.layer == "FastRPC transport" and f.hit is not None


@pytest.mark.parametrize(
    "line, code, own",
    [
        ("QnnDsp <E> Using newer context binary on old SDK", 5000, False),  # the code it usually ends with
        ("Stub lib id mismatch: expected (v2.20.0.240223114737), detected (v2.21.0)", None, False),
        ("<E> Failed to create context from binary with err 0x138d", 5005, True),
        ("Genie: Could not create context from binary for context index = 0 : err 5000", 5000, True),
        ('[ERROR] "Failed to create device: 1008"', 1008, True),  # not 14001, the code it usually ends with
        ("QnnDevice_create = 14001 / 0x36b1", 14001, True),
    ],
)
def test_a_line_is_explained_with_the_number_it_writes(line, code, own):
    found = explain(line)
    f = found.findings[0]
    assert f.status == "explained", line
    if code is not None:
        assert [c.value for c, _ in primary(f.codes)] == [code] and f.own_number == own
    r = q9diff_cli("explain", line)
    assert r.returncode == 0 and r.stdout.startswith("Verdict: line 1")


def test_a_piece_of_a_message_asked_alone_is_found():
    f = explain("Unsupported HTP arch").findings[0]
    assert f.status == "explained" and f.hit is not None and "Unsupported HTP" in f.hit.entry.text


def test_a_library_that_cannot_be_opened_is_named_with_what_ships_it_and_where_it_is_looked_for():
    log = 'W <W> Failed in loading stub: dlopen failed: library "libQnnHtpV79Stub.so" not found'
    v = explain(log).verdict
    assert v.decisive.line.number == 1 and v.layer == "library loading"
    lead = v.causes[0].cause
    assert lead.id == "missing:libQnnHtpV79Stub.so"
    assert "QAIRT SDK" in lead.cause and "LD_LIBRARY_PATH" in lead.cause
    skel = explain(
        "remote_handle_open_domain: dynamic loading failed for file:///libQnnHtpV73Skel.so?x on dom 3"
    )
    m = skel.findings[0].missing[0]
    assert m.on_dsp and m.library.variable == "ADSP_LIBRARY_PATH" and m.library.side == "DSP"
    rpc = explain('dlopen failed: library "libcdsprpc.so" not found').verdict.causes[0].cause
    assert "vendor partition" in rpc.cause and "uses-native-library" in rpc.cause  # the device's, not the SDK


def test_an_adsp_library_path_separated_by_colons_is_the_cause_named():
    line = "apps_std_fopen_fd done for /data/skel:/vendor/dsp/cdsp/./libQnnHtpV79Skel.so error_code 0x2"
    v = explain(line).verdict
    assert v.causes[0].cause.id == "adsp_separator" and "';'" in v.causes[0].cause.cause


def test_every_line_of_a_log_is_accounted_for_and_the_verdict_comes_first():
    log = "\n".join(
        [
            "$ ./genie-t2t-run -c genie_config.json -p hi",
            "=================",
            "01-05 15:23:12.073 2983 2983 E QnnDsp: <E> Stub lib id mismatch: expected (v2), detected (v1)",
            "01-05 15:23:12.074 2983 2983 E QnnDsp : <E> this line is in no library at all, fastrpc said so",
            "01-05 15:23:12.075 2983 2983 I QnnDsp : <I> some information",
            "Segmentation fault (core dumped)",
        ]
    )
    r = stdin(log, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    covered = [n for row in data["lines"] for n in range(row["first"], row["last"] + 1)]
    assert covered == list(range(1, 7))  # every line in exactly one entry, in order
    status = {n: row["status"] for row in data["lines"] for n in range(row["first"], row["last"] + 1)}
    assert status == {1: "context", 2: "context", 3: "explained", 4: "unknown", 5: "context", 6: "unknown"}
    assert data["verdict"]["line"] == 3 and data["verdict"]["unknown_error_lines"] == [4, 6]
    unknown = next(row for row in data["lines"] if row["first"] == 4)
    assert unknown["layer"] == "FastRPC transport"  # the layer its own words name
    text = stdin(log).stdout.decode()
    assert text.startswith("Verdict: line 3") and text.index("Verdict") < text.index("Lines (")


def test_a_line_is_never_explained_with_another_tools_meaning():
    genie_only = next(
        e for i in range(len(catalogue.rows()))
        if (e := catalogue.entry(i)).tools == {"Genie"} and e.letters > 30 and not e.fields
    )  # fmt: skip
    line = f"I/litert  (23348): [qnn_manager.cc:430] {genie_only.text}"
    f = explain(line).findings[0]
    assert f.hit is None or "Genie" not in f.hit.entry.tools
    assert explain(f'[ERROR] "{genie_only.text}"').findings[0].hit.entry is not None  # in a Genie log it is


def test_what_is_not_known_is_one_line():
    r = q9diff_cli("explain", "the", "weather")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'the weather'" in r.stderr
    assert q9diff_cli("explain", "4242").returncode == 2


@pytest.mark.parametrize(
    "data, says",
    [
        (b"QnnDsp <E> Using newer context binary on old SDK\n\x00\x01binary", "NUL byte at offset 49"),
        (b"err " * (300_000), "more than 1 MiB"),
        (bytes(range(1, 256)) * 200, "not text (60% of its characters"),
    ],
)
def test_input_that_is_not_a_log_is_one_line_and_exit_2(data, says):
    r = stdin(data)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and says in err and not r.stdout


def test_the_curated_messages_are_the_catalogues_or_say_whose_logs_show_them():
    """A message q9diff says more about is a catalogued one, word for word between its fields, or names
    the runtime whose logs show it (and is then not in the catalogue)."""
    keys = {catalogue.pieces_of(text)[0] for text, _, _ in catalogue.rows()}
    for c in curated():
        assert c.meaning and c.source, c.text
        assert (c.pieces in keys) != bool(c.library), c.text
        sample = catalogue.FIELD.sub("7", c.text)
        f = explain(sample).findings[0]
        assert f.status == "explained" and f.hit is not None, c.text


def test_every_source_a_cause_or_message_names_is_listed():
    data = json.loads(CODES_PATH.read_text(encoding="utf-8"))
    listed = {s["id"] for s in data["sources"]}
    named = {s for c in data["causes"].values() for s in c["source"].split(" / ")}
    named |= {s for m in data["messages"] for s in m["source"].split(" / ")}
    assert named - listed == set()
    assert all(c["evidence"] in ("measured", "documented", "reported") for c in data["causes"].values())


def test_a_long_paste_costs_work_linear_in_its_lines():
    """Work is counted, not timed: a line none of the lookups can name is found plain by the prefilter
    (one set test, two searches) and never read in full; a repeated line is looked at once; twice the
    distinct lines is twice the work, and nothing more is read in full."""
    from q9diff.explain import log

    real = "[ERROR] [Qnn ExecuTorch]:  <E> QnnBackend_validateOpConfig failed 3110\n"
    for n, copies in ((3000, 1), (6000, 1), (3000, 2)):
        log.WORK.clear()
        found = explain("".join(f"e{i:05x}\n" for i in range(n)) * copies + real * 50)
        assert len(found.findings) == n * copies + 50
        assert log.WORK["plain"] == n and log.WORK["read"] == 1, log.WORK
        assert all(f.status == "unknown" for f in found.findings[: n * copies])
