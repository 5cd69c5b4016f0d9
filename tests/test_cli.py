"""The command line as a user runs it: real fixtures in, exit codes and one-line errors out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, all_bins

COMMANDS = ("inspect", "diff", "suggest", "recompile", "verify")


def q9diff(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_inspect_json_shape(fixtures_dir):
    path = all_bins()[0]
    r = q9diff("inspect", str(path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["schema"] == "q9diff.inspect/1"
    assert s["size"] == path.stat().st_size == sum(x["size"] for x in s["regions"])
    g = s["graphs"][0]
    for key in ("name", "inputs", "outputs", "spill_fill_buffer_size", "vtcm_size", "options", "ops"):
        assert key in g
    assert {"name", "dtype", "dims", "scale", "offset"} <= set(g["inputs"][0])


def test_inspect_oracle_agrees(fixtures_dir):
    r = q9diff("inspect", str(all_bins()[0]), "--oracle")
    assert r.returncode == 0, r.stderr
    assert "oracle (libQnnSystem) agrees on every field" in r.stdout


def test_bad_inputs_give_one_line_and_exit_2(tmp_path, fixtures_dir):
    good = all_bins()[0].read_bytes()
    cases = {
        "text.bin": b"hello, not a context binary\n" * 10,
        "empty.bin": b"",
        "truncated.bin": good[: len(good) // 2],
        "huge_length.bin": good[:0x20] + (2**62).to_bytes(8, "little") + good[0x28:],
        "bad_meta.bin": good[:0x28] + b"\xff" * 64 + good[0x28 + 64 :],
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        for cmd in (["inspect", str(p)], [str(p), str(all_bins()[0])]):
            r = q9diff(*cmd)
            assert r.returncode == 2, (name, r.stdout, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in r.stderr, (name, r.stderr)
    assert q9diff("inspect", str(tmp_path / "missing.bin")).returncode == 2


def test_epcontext_onnx_embedded_and_referenced(tmp_path, fixtures_dir):
    onnx = pytest.importorskip("onnx")
    helper, TensorProto = onnx.helper, onnx.TensorProto

    binary = tmp_path / "ctx.bin"  # ONNX Runtime names the context file beside the model, relatively
    binary.write_bytes(all_bins()[0].read_bytes())
    for embed in (1, 0):
        node = helper.make_node(
            "EPContext",
            ["x"],
            ["y"],
            domain="com.microsoft",
            embed_mode=embed,
            ep_cache_context=binary.read_bytes() if embed else binary.name,
            source="QNNExecutionProvider",
        )
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        model = tmp_path / f"ctx_{embed}.onnx"
        onnx.save(helper.make_model(graph), model)
        r = q9diff("inspect", str(model), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["size"] == binary.stat().st_size


# ---- the first ten minutes (issue 12) ----

QWEN = ROOT / "fixtures" / "qwen-mini"
LOCAL, REFERENCE = QWEN / "local", QWEN / "reference"


def _one_error_line(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("q9diff: error: ") and "Traceback" not in r.stderr, (
        r.stderr
    )
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.mark.parametrize("command", [[], ["suggest"]])
def test_wrong_paths_are_one_line_errors(tmp_path, fixtures_dir, command):
    typo = QWEN / "locl"
    _one_error_line(q9diff(*command, str(typo), str(REFERENCE)), str(typo), "no such file or directory")
    _one_error_line(q9diff(*command, str(LOCAL), str(typo)), str(typo), "no such file or directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_error_line(q9diff(*command, str(empty), str(REFERENCE)), str(empty), "no context binaries")
    other = ROOT / "fixtures" / "variants" / "opt_1.bin"
    _one_error_line(
        q9diff(*command, str(other), str(REFERENCE)), "opt_1.bin", "give two files or two folders"
    )


def test_a_file_against_a_folder_compares_its_counterpart_part(fixtures_dir):
    part = LOCAL / "part_1_of_2.bin"
    r = q9diff(str(part), str(REFERENCE), "--json")
    assert r.returncode == 1, r.stderr
    assert f"counterpart {REFERENCE / 'part_1_of_2.bin'}" in r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "q9diff.diff/1" and data["b"]["path"] == str(REFERENCE / "part_1_of_2.bin")
    assert [c["name"] for c in data["causes"] if c["role"] == "root"][0] == "soc_model"
    r = q9diff("suggest", str(LOCAL), str(REFERENCE / "part_2_of_2.bin"))
    assert r.returncode == 1 and "soc_model = 77" in r.stdout, r.stderr


def test_swapped_arguments_are_named_not_fixed(fixtures_dir):
    # The generic build (soc_model 0) given as the reference: suggest would recommend the bug itself.
    line = _one_error_line(
        q9diff("suggest", str(REFERENCE), str(LOCAL)), "soc_model 0", "looks like the broken"
    )
    assert line.endswith(f"q9diff suggest {LOCAL} {REFERENCE}")
    # diff says it first, before anything a reader would act on (issue 54; it was last, issue 38), and
    # prints no fix
    r = q9diff(str(REFERENCE / "part_1_of_2.bin"), str(LOCAL / "part_1_of_2.bin"))
    assert r.returncode == 1 and r.stderr == ""
    said, last, *_ = r.stdout.splitlines()
    assert said.startswith("Arguments swapped? the reference targets a generic SoC (soc_model 0)")
    assert said.endswith(f"q9diff {LOCAL / 'part_1_of_2.bin'} {REFERENCE / 'part_1_of_2.bin'}")
    assert last == "No fix is shown: the fix would make the known-good build like the broken one."
    assert "Fix" not in r.stdout and "soc_model = 0" not in r.stdout and "next:" not in r.stdout
    r = q9diff(str(LOCAL), str(REFERENCE))  # the right order: no warning, the fix
    assert r.returncode == 1 and "swapped" not in r.stdout + r.stderr and "soc_model = 77" in r.stdout


def test_the_swapped_command_to_copy_quotes_its_paths(tmp_path, fixtures_dir):
    odd = tmp_path / "sp ace;x"
    shutil.copytree(LOCAL, odd / "local")
    shutil.copytree(REFERENCE, odd / "reference")
    r = q9diff(str(odd / "reference"), str(odd / "local"))
    assert f"q9diff '{odd / 'local'}' '{odd / 'reference'}'" in r.stdout, r.stdout


def test_a_reference_set_with_parts_for_different_socs_is_named(tmp_path, fixtures_dir):
    # Both builds real SoCs, but the reference's parts disagree (77 and 43): one device cannot run both,
    # so the reference is the broken one, and suggest would copy its wrong part into the candidate.
    variants = ROOT / "fixtures" / "variants"
    for side, second in (("cand", "soc_77.bin"), ("ref", "soc_43.bin")):
        (tmp_path / side).mkdir()
        shutil.copy(variants / "soc_77.bin", tmp_path / side / "part_1_of_2.bin")
        shutil.copy(variants / second, tmp_path / side / "part_2_of_2.bin")
    cand, ref = tmp_path / "cand", tmp_path / "ref"
    line = _one_error_line(q9diff("suggest", str(cand), str(ref)), "different SoCs", "43 SM8550")
    assert line.endswith(f"q9diff suggest {ref} {cand}")
    r = q9diff(str(cand), str(ref))
    said = r.stdout.splitlines()[0]
    assert r.returncode == 1
    assert said.startswith("Arguments swapped? the reference has parts built for different")
    r = q9diff("suggest", str(ref), str(cand))  # the other order: the mixed set is fixed
    assert r.returncode == 1 and "soc_model = 77" in r.stdout and "warning" not in r.stderr
    out = tmp_path / "r.html"
    assert q9diff(str(cand), str(ref), "--html", str(out)).returncode == 1
    assert "Arguments swapped? the reference has parts built for different SoCs" in out.read_text()


def test_set_html_report_is_written_and_said(tmp_path, fixtures_dir):
    out = tmp_path / "set.html"
    r = q9diff(str(LOCAL), str(REFERENCE), "--html", str(out))
    assert r.returncode == 1, r.stderr
    assert f"wrote the HTML report: {out}" in r.stdout
    page = out.read_text()
    body = page.split("<body>", 1)[1]
    # the verdict first, then the set's totals part by part, then each part
    assert body.index("generic SoC") < body.index("Root causes over the set") < body.index("set total")
    assert body.index("set total") < body.index("part_1_of_2.bin vs part_1_of_2.bin")
    assert "part_2_of_2.bin vs part_2_of_2.bin" in body
    assert '<span title="+52 KiB">+53,248 B</span>' in body  # the set's delta in bytes, KiB on hover
    assert page.count("plotly-graph-div") >= 4 and 'src="https://cdn.plot.ly' not in page
    r = q9diff(str(LOCAL), str(REFERENCE), "--html", str(out), "--json")
    assert json.loads(r.stdout)["schema"] == "q9diff.setdiff/1"  # stdout stays JSON; the note goes to stderr
    assert f"wrote the HTML report: {out}" in r.stderr


def test_help_shows_the_main_form_and_exit_statuses():
    top = q9diff("--help", env={"COLUMNS": "100"})
    assert top.returncode == 0
    assert "q9diff CANDIDATE REFERENCE" in top.stdout
    for status in ("0  same", "1  different", "2  error"):
        assert status in top.stdout, top.stdout
    helps = {c: q9diff(c, "--help", env={"COLUMNS": "100"}).stdout for c in COMMANDS}
    for command, text in helps.items():
        assert "Exit status" in text, command
        assert "<bool>" not in text and "<list" not in text, (command, text)
    assert "1  something to change" in helps["suggest"] and "swapped" in helps["suggest"]
    assert "0  PASS" in helps["verify"] and "1  FAIL" in helps["verify"]
    assert "0 identical, 1 different, 2 error" in helps["diff"]
    # a flag takes no value: `--json true` is a usage error, not "true"
    r = q9diff("inspect", "--json", "true", str(LOCAL / "part_1_of_2.bin"))
    assert r.returncode == 2


def test_terminal_follows_its_width_and_keeps_copyable_lines(fixtures_dir):
    a, b = LOCAL / "part_1_of_2.bin", REFERENCE / "part_1_of_2.bin"
    # the fix in the candidate's toolchain (the extension config beside it), one setting a line
    fix = "  soc_model = 77          devices[0].soc_model = 77"
    device = '      HtpDeviceConfig(soc_model=77, dsp_arch="v73")'
    for columns in (80, 160):
        assert fix in q9diff(str(a), str(b), env={"COLUMNS": str(columns)}).stdout.splitlines()
        r = q9diff(str(a), str(b), "--verbose", env={"COLUMNS": str(columns)})
        assert r.returncode == 1, r.stderr
        lines = r.stdout.splitlines()
        # -v: every toolchain form, the candidate's first; the qairt line whole however narrow the terminal
        assert lines[lines.index("Fix") + 1] == "  htp_backend_ext_config.json:"
        assert any(ln.startswith(device) for ln in lines)
        table = [ln for ln in lines if ln.startswith(("┏", "│", "└"))]
        assert table and max(len(ln) for ln in table) <= columns
        assert "23 options differ" in r.stdout
        assert "22 → 22" not in r.stdout
        # every changed region's name whole on its line (graph regions below a PICKLE[i] heading)
        start = next(i for i, ln in enumerate(lines) if ln.startswith("region "))
        regions = lines[start : lines.index("Fix")]
        assert max(len(ln) for ln in regions) <= columns
        data = json.loads(q9diff(str(a), str(b), "--json").stdout)
        changed = [x["name"] for x in data["regions"] if x["changed_bytes"] or x["delta"]]
        for name in changed:
            head, _, rest = name.partition("/")
            shown = f"  {rest} " if head.startswith("PICKLE[") else f"{name} "
            assert any(ln.startswith(shown) for ln in regions), (columns, name)


def _hostile_copy(tmp_path) -> tuple[Path, Path]:
    """A binary with its graph name and build id replaced (same length) by markup and escape sequences
    (qairt_2.50.bin: its graph keeps ONNX Runtime's long hash name, room for the hostile one)."""
    from q9diff.read.binary import ContextBinary

    src = ROOT / "fixtures" / "variants" / "qairt_2.50.bin"
    cb = ContextBinary.open(src)
    data = src.read_bytes()
    for old, evil in (
        (cb.graphs[0].name, "[/]\x1b[31mRED\x1b]0;title\x07[bold]x"),
        (cb.build_id, "[/]\x1b[2J[u]"),
    ):
        new = evil.encode().ljust(len(old.encode()), b"_")
        assert len(new) == len(old.encode())
        data = data.replace(old.encode(), new)
    out = tmp_path / "hostile.bin"
    out.write_bytes(data)
    return src, out


def test_strings_from_a_file_are_text_not_markup_nor_escapes(tmp_path, fixtures_dir):
    src, hostile = _hostile_copy(tmp_path)
    for args, status in ((["inspect", str(hostile)], 0), ([str(hostile), str(src)], 1)):
        r = q9diff(*args, env={"COLUMNS": "200"})
        assert r.returncode == status, (args, r.stderr)
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    r = q9diff("inspect", str(hostile), env={"COLUMNS": "200"})
    assert "\ngraph [/]\\x1b[31mRED\\x1b]0;title\\x07[bold]x" in r.stdout  # shown, escaped, not interpreted
    assert "QAIRT build [/]\\x1b[2J[u]" in r.stdout


def test_json_is_strict_non_finite_numbers_are_null(fixtures_dir, capsys):
    from q9diff.cli.common import print_json
    from q9diff.compare.summary import inspect_summary
    from q9diff.read.binary import ContextBinary

    s = inspect_summary(ContextBinary.open(LOCAL / "part_1_of_2.bin"))
    s["graphs"][0]["inputs"][0]["scale"] = float("nan")  # what the parser returns for a NaN scale in a file
    s["graphs"][0]["inputs"][1]["scale"] = float("-inf")
    print_json(s)

    def reject(name):
        raise ValueError(f"not strict JSON: {name}")

    data = json.loads(capsys.readouterr().out, parse_constant=reject)
    assert data["graphs"][0]["inputs"][0]["scale"] is None and data["graphs"][0]["inputs"][1]["scale"] is None


@pytest.mark.skipif(
    shutil.which("script") is None,
    reason="util-linux script (a pseudo-terminal) not installed: apt-get install bsdutils",
)
def test_progress_on_a_terminal_quiet_in_a_pipe_and_with_json(fixtures_dir):
    command = f"{sys.executable} -c 'from q9diff.cli import main; main()' {LOCAL} {REFERENCE}"
    tty = subprocess.run(
        ["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=120
    )
    assert tty.returncode == 1 and "comparing the parts of local and reference" in tty.stdout
    for args in ([str(LOCAL), str(REFERENCE)], [str(LOCAL), str(REFERENCE), "--json"]):
        piped = q9diff(*args)
        assert piped.returncode == 1 and "comparing the parts" not in piped.stdout + piped.stderr
        assert "\x1b" not in piped.stdout + piped.stderr
    quiet = subprocess.run(
        ["script", "-qec", command + " --json", "/dev/null"], capture_output=True, text=True
    )
    assert quiet.returncode == 1 and "comparing the parts" not in quiet.stdout


def test_the_program_ends_as_main_does(tmp_path, fixtures_dir):
    """The `q9diff` script (q9diff.cli.run) ends the process without the interpreter's teardown: the
    same status, output and errors as main() for every kind of ending (a result, a difference, a bad
    input, a usage error, a large JSON into a pipe), the exit handlers still run, and a stream it cannot
    flush gets the normal exit's handling."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"q9diff": "q9diff.cli:run"}
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\0" * 64)
    cases = (
        ["--version"],
        ["inspect", "--json", str(all_bins()[0])],
        ["diff", "--json", str(LOCAL), str(REFERENCE)],
        [str(LOCAL), str(REFERENCE)],
        ["inspect", str(bad)],
        ["diff", "--no-such-option"],
    )

    def ran(entry: str, *args: str, pre: str = "") -> subprocess.CompletedProcess:
        code = f"{pre}from q9diff.cli import {entry}; {entry}()"
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
        )

    for args in cases:
        one, other = ran("main", *args), ran("run", *args)
        assert (one.returncode, one.stdout, one.stderr) == (other.returncode, other.stdout, other.stderr), (
            args
        )
    assert len(ran("run", *cases[2]).stdout) > 100_000  # a pipe's buffer many times over, all of it out
    handler = "import atexit; atexit.register(print, 'handler ran'); "
    done = ran("run", "--version", pre=handler)
    assert done.returncode == 0 and done.stdout.endswith("handler ran\n")
    ended = []  # a reader that stops after 10 bytes: the rest of the JSON meets a broken pipe
    for entry in ("main", "run"):
        argv = [sys.executable, "-c", f"from q9diff.cli import {entry}; {entry}()", *cases[2]]
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
            child.stdout.read(10)
            child.stdout.close()
            ended.append((child.wait(timeout=120), child.stderr.read()))
    assert ended[0] == ended[1] and b"Traceback" not in ended[1][1], ended


_RELEASE_CHECK = """
import json, sys
from pathlib import Path
from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.inputs import resolve

def mapped():
    return {ln.split(maxsplit=5)[-1] for ln in Path("/proc/self/maps").read_text().splitlines()}

seen = []

def on_part(pa, pb, r):
    seen.append([pa.name, sorted({str(p.resolve()) for p in (pa, pb)} & mapped())])

sd = diff_sets(resolve(sys.argv[1]), resolve(sys.argv[2]), on_part=on_part)
kept = sorted({str(p.resolve()) for pa, pb, _ in sd.pairs for p in (pa, pb)} & mapped())
data = set_to_json(sd)
parts = [p["part"] for p in data["parts"]]
print(json.dumps({"seen": seen, "kept": kept, "parts": parts, "a_total": data["a_total"]}))
"""


def test_a_directory_diff_releases_each_part_once_compared(fixtures_dir):
    # in a process of its own: what /proc/self/maps shows is this diff's alone, not an earlier test's too
    done = subprocess.run(
        [sys.executable, "-c", _RELEASE_CHECK, str(LOCAL), str(REFERENCE)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    part_1 = sorted(str((d / "part_1_of_2.bin").resolve()) for d in (LOCAL, REFERENCE))
    assert got["seen"][0] == ["part_1_of_2.bin", part_1]  # mapped while compared
    assert got["seen"][1][0] == "part_2_of_2.bin" and len(got["seen"][1][1]) == 2
    assert not set(part_1) & set(got["seen"][1][1])  # ... and let go of before the next part
    assert got["kept"] == []  # none mapped once the set is compared
    assert got["parts"] == ["part_1_of_2.bin", "part_2_of_2.bin"]  # the JSON from what was kept
    assert got["a_total"] == sum((LOCAL / f"part_{i}_of_2.bin").stat().st_size for i in (1, 2))


def test_every_package_is_installed_by_pip_install_dot():
    # `pip install .` (the README's first command) installs only the packages pyproject.toml lists: a
    # new package missing there works in the editable test venv and fails for every user.
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "q9diff").rglob("__init__.py")}
    assert found <= listed, found - listed


def test_a_genie_bundle_whose_config_has_another_name_is_diffed(tmp_path, fixtures_dir):
    # AI Hub's tutorial configs are <model>.json and ai-engine-direct-helper's config.json; the ctx-bins
    # sit in a subfolder here, so only the config can name the parts.
    for side, src in (("a", LOCAL), ("b", REFERENCE)):
        cfg = json.loads((src / "genie_config.json").read_text())
        binary = cfg["dialog"]["engine"]["model"]["binary"]
        (tmp_path / side / "bins").mkdir(parents=True)
        for name in binary["ctx-bins"]:
            shutil.copy(src / name, tmp_path / side / "bins" / Path(name).name)
        binary["ctx-bins"] = [f"bins/{Path(n).name}" for n in binary["ctx-bins"]]
        (tmp_path / side / "qwen_mini.json").write_text(json.dumps(cfg))
    a, b = tmp_path / "a", tmp_path / "b"
    for args in ([str(a), str(b)], [str(a / "qwen_mini.json"), str(b / "qwen_mini.json")]):
        r = q9diff(*args, "--json")
        assert r.returncode == 1, r.stderr
        data = json.loads(r.stdout)
        assert len(data["parts"]) == 4
        assert data["parts"][0]["a"]["path"].endswith("bins/part_1_of_2_prompt.bin")
        assert [c["name"] for c in data["causes"] if c["role"] == "root"][0] == "soc_model"
    shutil.copy(a / "qwen_mini.json", a / "other.json")  # two configs: which one is meant is not guessed
    r = q9diff(str(a), str(b))
    assert r.returncode == 2 and "several Genie configs (other.json, qwen_mini.json)" in r.stderr


def test_an_unknown_toolchain_is_refused_in_one_line_by_every_command_that_takes_it(fixtures_dir):
    # suggest --json skipped the check (exit 1, nothing said) and suggest without --json compared first
    pair = [str(fixtures_dir / "variants" / f) for f in ("generic_v68.bin", "soc_30.bin")]
    for cmd in ("diff", "suggest"):
        for extra in ([], ["--json"]):
            r = q9diff(cmd, *pair, *extra, "--toolchain", "bogus")
            assert r.returncode == 2 and r.stdout == "", (cmd, extra, r.stdout[:200])
            assert r.stderr.strip().splitlines() == [
                "q9diff: error: --toolchain bogus: expected one of qairt, ext, ort, qnn-cli, executorch, all"
            ]
    for typed, meant in (("qairtt", "qairt"), ("onnx", "ort"), ("executor", "executorch")):  # issue 54
        r = q9diff(*pair, "--toolchain", typed)
        assert r.returncode == 2 and r.stderr.endswith(f"; did you mean --toolchain {meant}?\n"), r.stderr


def test_diff_help_names_every_json_it_prints():
    """issue 54: `diff -h` named only the pair's schema; a set prints q9diff.setdiff/1."""
    said = " ".join(q9diff("diff", "-h").stdout.split())
    assert all(schema in said for schema in ("q9diff.diff/1", "q9diff.setdiff/1", "q9diff.target/1")), said
