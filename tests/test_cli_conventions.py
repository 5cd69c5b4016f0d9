"""The conventions a command-line user expects: --version, -h, shell completion, the reference as an
argument everywhere, --json and --html where the other commands have them."""

from __future__ import annotations

import json
import os
import shlex
import shutil

from conftest import FIXTURES
from test_cli import q9diff

from q9diff import __version__

LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"


def test_version_and_short_help():
    r = q9diff("--version")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"q9diff {__version__}"
    # the embedded compiler's QAIRT, read from onnxruntime-qnn's build info where it is installed
    from importlib.util import find_spec

    if find_spec("onnxruntime_qnn") is not None:
        from onnxruntime_qnn import build_and_package_info as info

        qairt = f"QAIRT {info.qnn_version} (onnxruntime-qnn {info.__version__})"
        assert lines[1] == f"embedded compiler and emulator: {qairt}"
    for args in (["-h"], ["diff", "-h"], ["doctor", "-h"], [str(LOCAL), str(REFERENCE), "-h"]):
        r = q9diff(*args)
        assert r.returncode == 0 and r.stdout.startswith("Usage: q9diff"), (args, r.stderr)
    assert "--version" in q9diff("-h").stdout


def test_shell_completion_is_offered_and_completes_commands():
    # --show-completion names the shell it runs under (typer asks shellingham, which walks the parent
    # processes): run it from bash, as a user would, so the answer does not depend on how pytest was started
    import subprocess
    import sys

    line = f"{shlex.quote(sys.executable)} -c 'from q9diff.cli import main; main()' --show-completion"
    r = subprocess.run(["bash", "-c", line + "; exit $?"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "_Q9DIFF_COMPLETE=complete_bash" in r.stdout, r.stderr
    env = {"_Q9DIFF_COMPLETE": "complete_bash", "COMP_WORDS": "q9diff ins", "COMP_CWORD": "1"}
    assert q9diff(env=env).stdout.split() == ["inspect"]
    env = {**env, "COMP_WORDS": "q9diff diff --ver", "COMP_CWORD": "2"}
    assert q9diff(env=env).stdout.split() == ["--verbose"]


def test_doctor_takes_the_reference_as_an_argument_and_keeps_the_option(tmp_path):
    bundle, ref = str(LOCAL / "genie"), str(REFERENCE / "genie")
    positional = q9diff("doctor", bundle, ref, "--json")
    option = q9diff("doctor", bundle, "--reference", ref, "--json")
    assert positional.returncode == option.returncode == 1, positional.stderr
    assert json.loads(positional.stdout) == json.loads(option.stdout)
    assert f"{bundle} against the reference {ref}" in " ".join(q9diff("doctor", bundle, ref).stdout.split())
    r = q9diff("doctor", bundle, str(LOCAL), "--reference", ref)
    assert r.returncode == 2 and r.stdout == "" and "two references" in r.stderr


def test_suggest_json_carries_the_fixes_and_the_edits(tmp_path):
    r = q9diff("suggest", str(LOCAL), str(REFERENCE), "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "q9diff.suggest/1" and data["identical"] is False
    fixes = {s["setting"]: s for s in data["suggestions"]}
    assert fixes["vtcm_size"]["value"] == 8 and fixes["vtcm_size"]["unit"] == "MiB"
    assert (
        data["suggestions"] == json.loads(q9diff(str(LOCAL), str(REFERENCE), "--json").stdout)["suggestions"]
    )
    work = tmp_path / "qwen-mini"
    shutil.copytree(FIXTURES / "qwen-mini", work)
    recipe = work / "local" / "recipe.json"
    before = recipe.read_bytes()
    r = q9diff(
        "suggest", str(work / "local"), str(work / "reference"), "--apply", str(recipe), "--dry-run", "--json"
    )
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)  # stdout is the JSON alone
    (edit,) = data["edits"]
    assert data["dry_run"] and edit["path"] == str(recipe) and edit["backup"] is None
    assert '+    "soc_model": 77,' in edit["diff"] and recipe.read_bytes() == before
    r = q9diff("suggest", str(REFERENCE), str(LOCAL), "--json")  # swapped: refused, one line
    assert r.returncode == 2 and r.stdout == "" and "looks like the broken build" in r.stderr


def test_inspect_html_is_a_small_page_of_what_the_terminal_shows(tmp_path):
    part = LOCAL / "part_1_of_2.bin"
    out = tmp_path / "inspect.html"
    r = q9diff("inspect", str(part), "--html", str(out))
    assert r.returncode == 0 and f"wrote the HTML page: {out}" in r.stdout, r.stderr
    page = out.read_text()
    assert "<title>q9diff inspect: " in page and "Generic target (soc_model 0)" in page
    assert "0 (not set; the compiler ran O=2)" in page and ">4 MiB<" in page and "const_pool" in page
    assert os.path.getsize(out) < 100_000 and "<script" not in page
    r = q9diff("inspect", str(part), "--json", "--html", str(out))
    assert json.loads(r.stdout)["schema"] == "q9diff.inspect/1" and "wrote the HTML page" in r.stderr
    r = q9diff("inspect", str(part), "--html", str(part))
    assert r.returncode == 2 and "would overwrite" in r.stderr
