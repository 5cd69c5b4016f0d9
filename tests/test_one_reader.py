"""One reader of a Genie config (q9diff.genie.config): doctor, diff, verify and the genie runner read a
bundle's config or refuse it alike, with the same line (issue 18). What they accept is what libGenie
accepts: strict JSON, one engine object (measured with libGenie, QAIRT 2.51, in test_libgenie_agrees)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, q9diff_cli

LOCAL = FIXTURES / "qwen-mini" / "local"


def _bundle(tmp_path: Path, change) -> Path:
    """A copy of the qwen-mini local bundle (config, ctx-bins, tokenizer, extension file), changed."""
    bundle = tmp_path / "bundle"
    top_parts = lambda d, names: [n for n in names if Path(d) == LOCAL and "part_" in n]  # noqa: E731
    shutil.copytree(LOCAL, bundle, ignore=top_parts)
    text = (bundle / "genie_config.json").read_text()
    name, text = change(text)
    (bundle / "genie_config.json").unlink()
    (bundle / name).write_text(text)
    return bundle


def _comment(text):
    return "genie_config.json", "// a note people write\n" + text


def _engine_list(text):
    config = json.loads(text)
    config["dialog"]["engine"] = [config["dialog"]["engine"]]
    return "genie_config.json", json.dumps(config, indent=2)


def _missing_ctx_bin(text):
    config = json.loads(text)
    config["dialog"]["engine"]["model"]["binary"]["ctx-bins"][2] = "genie/gone.bin"
    return "genie_config.json", json.dumps(config, indent=2)


def _other_name(text):
    return "qwen_mini.json", text


def _lines(done) -> list[str]:
    return [ln.removeprefix("q9diff: error: ") for ln in done.stderr.strip().splitlines()]


@pytest.mark.parametrize(
    "change, expected",
    [
        (_comment, "not JSON as libGenie reads it"),
        (_engine_list, "dialog.engine is a list"),
        (_missing_ctx_bin, "gone.bin: no such file in the bundle"),
    ],
    ids=["comment-line", "engine-list", "missing-ctx-bin"],
)
def test_every_command_refuses_alike_with_the_same_line(tmp_path, change, expected):
    bundle = _bundle(tmp_path, change)
    said = {}
    for label, args in (
        ("diff", ["diff", str(bundle), str(bundle)]),
        ("verify", ["verify", str(bundle), "--no-cpu", "--steps", "1"]),
        ("genie", ["verify", str(bundle), "--runner", "genie", "--no-cpu", "--steps", "1"]),
        ("doctor", ["doctor", str(bundle), "--json"]),
    ):
        done = q9diff_cli(*args, cwd=tmp_path)
        if label == "doctor" and change is _missing_ctx_bin:
            # doctor reads the rest of the bundle and reports the ctx-bin as an error finding, in the
            # reader's words, where the others refuse the bundle with them
            found = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
            assert done.returncode == 1 and expected in found["ctx-bins.exist"]["evidence"], done.stdout
            said["doctor's finding"] = found["ctx-bins.exist"]
            continue
        lines = _lines(done)
        assert done.returncode == 2 and len(lines) == 1, (label, done.stdout, done.stderr)
        said[label] = lines[0]
    finding = said.pop("doctor's finding", None)
    assert len(set(said.values())) == 1, said
    line = next(iter(said.values()))
    if finding is not None:
        assert line.endswith(finding["evidence"].split(": ", 1)[1].split(" (from the config's")[0])
    assert expected in line and str(bundle) in line, line


def test_a_config_under_another_name_is_read_by_every_command(tmp_path):
    bundle = _bundle(tmp_path, _other_name)
    assert q9diff_cli("diff", str(bundle), str(bundle), cwd=tmp_path).returncode == 0
    done = q9diff_cli("doctor", str(bundle), "--json", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert json.loads(done.stdout)["bundle"].endswith("qwen_mini.json")
    done = q9diff_cli("verify", str(bundle), "--no-cpu", "--steps", "1", cwd=tmp_path)
    assert done.returncode != 2 and "tokens candidate" in done.stdout, done.stdout + done.stderr


def test_libgenie_agrees_with_what_the_reader_refuses():
    """The reader's rules are libGenie's: its own parser refuses a comment line and an engine list."""
    parser = pytest.importorskip("q9diff.genie.parser")
    try:
        parser.library_dir()
    except parser.Unavailable as exc:
        pytest.skip(str(exc))
    text = (LOCAL / "genie_config.json").read_text()
    assert parser.check(text).status == "SUCCESS"
    assert parser.check(_comment(text)[1]).status == "JSON_FORMAT"
    assert parser.check(_engine_list(text)[1]).status == "JSON_SCHEMA"
