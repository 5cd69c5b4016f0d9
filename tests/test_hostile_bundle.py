"""Hostile bundles (issue 22): a downloaded Genie bundle, EPContext model or recipe must not make q9diff
write outside what it was given, drive the terminal, hang, or work beyond a small multiple of its size.

Every hostile file is built here; large ones are sparse (os.truncate), so they cost no disk. Commands run
as a user runs them, in a child that reports its own peak memory (ru_maxrss); a subprocess timeout is
only a hang guard, never a speed assertion.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.inputs import given, resolve

QWEN = FIXTURES / "qwen-mini"
LOCAL, REFERENCE = QWEN / "local", QWEN / "reference"
BUNDLE_FILES = ("genie_config.json", "htp_backend_ext_config.json", "tokenizer.json")
EXT = '{\n  "devices": [\n    {\n      "soc_model": 0,\n      "dsp_arch": "v73"\n    }\n  ]\n}\n'
HANG_GUARD_S = 120  # far above any case here: a child still running then is a hang, not a slow machine

# The child's own peak (VmHWM, per address space since exec): getrusage's ru_maxrss keeps the pre-exec
# peak of the forked parent, so in a long pytest process it reported the parent's size, not q9diff's.
_CHILD = """
import os, sys
from q9diff.cli import main
sys.argv[0] = "q9diff"
try:
    main()
finally:
    hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]
    with open(os.environ["Q9_RSS_FILE"], "w") as f:
        f.write(hwm)
"""


class Run:
    """A finished q9diff command: its status, output and peak resident memory in MiB."""

    def __init__(self, done: subprocess.CompletedProcess, rss_kib: int) -> None:
        self.returncode, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.rss_mib = rss_kib / 1024

    @property
    def lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def q9(*args: str | Path, cwd: Path | None = None) -> Run:
    """Run the command line in a child, as a user would; with its own peak memory."""
    rss = Path(os.environ.get("TMPDIR", "/tmp")) / f"q9-rss-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
            cwd=cwd,
            env={**os.environ, "Q9_RSS_FILE": str(rss), "COLUMNS": "200"},
        )
        return Run(done, int(rss.read_text()))
    finally:
        rss.unlink(missing_ok=True)


def refused(run: Run, *words: str) -> None:
    """One line on stderr holding `words` (the file's name among them), exit status 2."""
    assert run.returncode == 2, run.stdout + run.stderr
    assert len(run.lines) == 1, run.stderr
    for w in words:
        assert w in run.lines[0], run.lines[0]


def copy_bundle(dst: Path, src: Path = REFERENCE) -> Path:
    (dst / "genie").mkdir(parents=True)
    for name in BUNDLE_FILES:
        shutil.copy(src / name, dst / name)
    for b in (src / "genie").glob("*.bin"):
        shutil.copy(b, dst / "genie" / b.name)
    return dst


def files_under(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (a hole): what a hostile download may unpack to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    os.truncate(path, size)
    return path


# ---- 1. a write outside: the working-directory fallback of --apply -------------------------------


def test_apply_from_a_folder_above_never_edits_the_users_own_extension_file(tmp_path):
    # A downloaded Genie config names "htp_backend_ext_config.json", which its folder does not hold; run
    # from the folder above, the working-directory fallback found the user's own file there and edited
    # it (and backed it up). It may reach only a file inside the config's folder, or one the user named.
    user = tmp_path / "user"
    download = user / "download"
    download.mkdir(parents=True)
    own = user / "htp_backend_ext_config.json"
    own.write_text(EXT)
    config = json.loads((LOCAL / "genie_config.json").read_text())
    (download / "genie_config.json").write_text(json.dumps(config, indent=2))
    before = files_under(user)
    run = q9("suggest", LOCAL, REFERENCE, "--apply", "download/genie_config.json", cwd=user)
    refused(run, "download/genie_config.json", f"leads to {own}", "outside download", "--apply")
    assert files_under(user) == before  # not edited, no .bak
    config["dialog"]["engine"]["backend"]["extensions"] = "../htp_backend_ext_config.json"
    (download / "genie_config.json").write_text(json.dumps(config, indent=2))
    before = files_under(user)
    refused(q9("suggest", LOCAL, REFERENCE, "--apply", "download/genie_config.json", cwd=user), "outside")
    assert files_under(user) == before
    named = q9("suggest", LOCAL, REFERENCE, "--apply", "download/genie_config.json", "--apply", own, cwd=user)
    assert named.returncode == 0, named.stdout + named.stderr  # the user named it: then it is edited
    assert json.loads(own.read_text())["devices"][0]["soc_model"] == 77


# ---- 2. terminal injection: every string from a file goes through the one escape -----------------

HOSTILE = "\x1b[2J\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\\x9b31m\u202etxt.nib\u2066\x07"
RAW = ("\x1b", "\x9b", "\x07", "\u202e", "\u2066")


def test_doctor_shows_escape_sequences_and_bidi_controls_from_a_config_as_text(tmp_path):
    bundle = copy_bundle(tmp_path / "b")
    config = json.loads((bundle / "genie_config.json").read_text())
    bins = config["dialog"]["engine"]["model"]["binary"]["ctx-bins"]
    bins[0] = f"genie/{HOSTILE}.bin"  # missing: named in the findings
    bins[1] = f"../{HOSTILE}.bin"  # outside: named too
    config["dialog"]["tokenizer"]["path"] = f"{HOSTILE}.json"
    config["dialog"]["engine"]["backend"]["extensions"] = f"<{HOSTILE}>"
    (bundle / "genie_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))
    report = tmp_path / "report.html"
    run = q9("doctor", bundle, "--html", report)
    assert run.returncode == 1, run.stdout + run.stderr
    page = report.read_text(encoding="utf-8")
    for shown in (run.stdout, run.stderr, page):
        assert not any(c in shown for c in RAW), [c for c in RAW if c in shown]
    assert "\\x1b[2J\\x1b]8;;https://example.invalid/" in run.stdout and "\\u202etxt.nib" in run.stdout
    assert "\\x1b[2J" in page and "\\u202e" in page
    as_json = q9("doctor", bundle, "--json")
    assert not any(c in as_json.stdout for c in RAW)
    findings = json.loads(as_json.stdout)["findings"]
    assert any(HOSTILE in f["evidence"] for f in findings)  # --json keeps the value exact, JSON-escaped


# ---- 3. hangs and floods: one capped reader, a size limit before Qualcomm's parsers ----------------

GB = 1 << 30


@pytest.mark.parametrize("name", ["genie_config.json", "config.json"])
def test_a_sparse_600_mb_config_is_refused_by_its_size_not_read(tmp_path, name):
    bundle = copy_bundle(tmp_path / "b")
    (bundle / "genie_config.json").unlink()
    sparse(bundle / name, 600 << 20)
    run = q9("doctor", bundle if name == "genie_config.json" else bundle / name)
    refused(run, name, "over the 1048576 bytes")
    assert run.rss_mib < 300, run.rss_mib  # it was 1.3 GB: the file was read


@pytest.mark.parametrize(
    "name, check", [("tokenizer.json", "vocab.tokenizer"), ("htp_backend_ext_config.json", "extension.file")]
)
def test_a_sparse_600_mb_tokenizer_or_extension_file_is_a_finding_read_by_nothing(tmp_path, name, check):
    # The bundle is read; the one file it names that is no such file is said in its finding, by size.
    bundle = copy_bundle(tmp_path / "b")
    sparse(bundle / name, 600 << 20)
    run = q9("doctor", bundle, "--json")
    assert run.returncode in (0, 1), run.stderr
    said = [f["evidence"] for f in json.loads(run.stdout)["findings"] if f["check"] == check]
    assert any(name in e and "629145600 byte file, over the" in e for e in said), said
    assert run.rss_mib < 300, run.rss_mib


def test_a_fifo_is_never_opened_for_reading(tmp_path):
    bundle = copy_bundle(tmp_path / "b")
    for name in ("tokenizer.json", "htp_backend_ext_config.json"):
        (bundle / name).unlink()
        os.mkfifo(bundle / name)  # a read would wait for a writer forever
    run = q9("doctor", bundle, "--json")
    assert run.returncode in (0, 1), run.stderr
    evidence = " ".join(f["evidence"] for f in json.loads(run.stdout)["findings"])
    assert "tokenizer.json: no such file in the bundle" in evidence  # not a regular file: not opened
    refused(q9("suggest", LOCAL, REFERENCE, "--apply", bundle / "tokenizer.json"), "FIFO", "tokenizer.json")


def _empty_objects(size: int) -> str:
    """A valid Genie config padded to `size` bytes with a list of empty objects: what makes libGenie's
    parser quadratic (600 bytes gzipped for 300 KB)."""
    config = json.loads((REFERENCE / "genie_config.json").read_text())
    text = json.dumps(config)
    pad = (size - len(text)) // 3
    return text[:-1] + ', "padding": [' + ",".join(["{}"] * pad) + "]}"


def test_a_config_too_big_for_libgenies_parser_is_not_handed_to_it(tmp_path):
    from q9diff.genie import parser as genieconfig

    bundle = copy_bundle(tmp_path / "b")
    (bundle / "genie_config.json").write_text(_empty_objects(300 << 10))
    run = q9("doctor", bundle, "--json")  # took past 20 s in libGenie; the hang guard is 120 s
    assert run.returncode in (0, 1), run.stderr
    notes = [f["evidence"] for f in json.loads(run.stdout)["findings"] if f["check"] == "config.genie-parser"]
    assert notes and f"over the {genieconfig.MAX_TEXT_BYTES} q9diff hands libGenie.so" in notes[0], notes


def test_a_6_mb_config_is_refused_by_the_cap_q9diffs_own_parser_names(tmp_path):
    # q9diff's comment-tolerant parser needed 14 s and 800 MB for 6 MB: above 1 MB it reads nothing.
    from q9diff import jsonc

    bundle = copy_bundle(tmp_path / "b")
    text = "// a comment\n" + _empty_objects(6 << 20)
    (bundle / "genie_config.json").write_text(text)
    run = q9("doctor", bundle)
    refused(run, "genie_config.json", f"over the {jsonc.MAX_TEXT} bytes")
    assert run.rss_mib < 300, run.rss_mib
    with pytest.raises(jsonc.JsoncError, match=f"over the {jsonc.MAX_TEXT} q9diff reads as a config"):
        jsonc.parse(text)
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text('{"graphs": [' + ",".join(["{}"] * (2 << 20)) + "]}")
    before = ext.read_bytes()
    run = q9("suggest", LOCAL, REFERENCE, "--apply", ext)
    refused(run, str(ext), f"over the {jsonc.MAX_TEXT} q9diff reads as a config")
    assert ext.read_bytes() == before and not list(tmp_path.glob("*.bak*"))


def test_the_comment_tolerant_parser_works_in_proportion_to_its_text():
    # The cap's worst case: a 1 MB text of empty objects in memory a small multiple of its size.
    from q9diff import jsonc

    code = (
        "import resource; from q9diff import jsonc; "
        "t = '[' + ','.join(['{}'] * ((jsonc.MAX_TEXT - 2) // 3)) + ']'; "
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; n = jsonc.parse(t); "
        "print(len(n.items), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S)
    count, grew_kib = map(int, done.stdout.split())
    assert count == (jsonc.MAX_TEXT - 2) // 3
    assert grew_kib * 1024 < 100 * jsonc.MAX_TEXT, grew_kib  # 800 MB for 6 MB before: ~130 bytes a byte


# ---- 6. doctor reads only inside the folder named ---------------------------------------------


def test_a_config_planted_in_the_parent_of_a_folder_of_binaries_is_never_adopted(tmp_path):
    # Anyone who can write the parent (say /tmp) could plant a genie_config.json there naming the
    # folder's ctx-bins and, beside them, files of the parent's: doctor read them.
    parent = tmp_path / "shared"
    folder = parent / "genie"
    folder.mkdir(parents=True)
    for b in (REFERENCE / "genie").glob("*.bin"):
        shutil.copy(b, folder / b.name)
    secret = parent / "secret.json"
    secret.write_text('{"model": {"vocab": {"private": 123456}}}')
    config = json.loads((REFERENCE / "genie_config.json").read_text())
    config["dialog"]["tokenizer"]["path"] = "secret.json"
    (parent / "genie_config.json").write_text(json.dumps(config))
    run = q9("doctor", folder, "--json")
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert report["bundle"] == str(folder) and "123457" not in run.stdout
    assert report["notes"][0] == "no genie_config.json: only the 4 *.bin files were checked, in name order"
    assert f"{parent / 'genie_config.json'} is not read" in report["notes"][1]


# ---- 5. --html never replaces a file doctor reads, whatever its name -------------------------------


@pytest.mark.parametrize(
    "config, target",
    [
        ("genie_config.txt", "genie/part_1_of_2_prompt.bin"),  # the guard knew only configs named .json
        ("genie_config.txt", "tokenizer.json"),
        ("genie_config.txt", "genie_config.txt"),
        ("genie_config.json", "htp_backend_ext_config.json"),
    ],
)
def test_doctor_html_never_replaces_a_file_it_reads(tmp_path, config, target):
    bundle = copy_bundle(tmp_path / "b")
    (bundle / "genie_config.json").rename(bundle / config)
    before = files_under(tmp_path)
    run = q9("doctor", bundle / config, "--html", bundle / target)
    refused(run, "would overwrite", target, "an input")
    assert files_under(tmp_path) == before


def test_doctor_html_is_checked_against_every_file_read_once_they_are_known(tmp_path):
    # A reference given by its config under another name: its files are inputs too, checked once read.
    bundle, ref = copy_bundle(tmp_path / "b"), copy_bundle(tmp_path / "r")
    (ref / "genie_config.json").rename(ref / "dialog.conf")
    before = files_under(tmp_path)
    run = q9(
        "doctor", bundle, "--reference", ref / "dialog.conf", "--html", ref / "genie/part_2_of_2_token.bin"
    )
    refused(run, "would overwrite", "part_2_of_2_token.bin")
    assert files_under(tmp_path) == before
    from q9diff.doctor import run as doctor

    read = doctor.run(given(bundle), given(ref / "dialog.conf")).files()
    assert {p.name for p in read} == {
        *BUNDLE_FILES[1:],
        "genie_config.json",
        "dialog.conf",
        *(p.name for p in (ref / "genie").iterdir()),
    }
    new = bundle / "report.html"
    done = q9("doctor", bundle, "--html", new)
    assert done.returncode in (0, 1) and new.is_file(), done.stderr


# ---- 4. repeated work: a context named 3000 times is opened once -----------------------------------

CONTEXT = FIXTURES / "variants" / "graphs_1.bin"


def epcontext_model(path: Path, names: list[bytes | str], embed: int = 0) -> Path:
    onnx = pytest.importorskip("onnx")
    helper, tp = onnx.helper, onnx.TensorProto
    nodes = [
        helper.make_node("EPContext", ["x"], [f"y{i}"], name=f"node_{i}", domain="com.microsoft",
                         embed_mode=embed, ep_cache_context=name, source="QNNExecutionProvider")
        for i, name in enumerate(names)
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", tp.FLOAT, [1])],
        [helper.make_tensor_value_info(f"y{i}", tp.FLOAT, [1]) for i in range(len(names))],
    )
    onnx.save(helper.make_model(graph), path)
    return path


def dispatch_tflite(path: Path, bytecode: bytes, ranges: list[tuple[int, int]], at: int = 1 << 19,
                    names: list[str] | None = None, options: bytes | None = None) -> Path:  # fmt: skip
    """A LiteRT model whose DISPATCH_OPs name (offset, size) ranges of `bytecode`, placed at `at`
    (the public TFLite schema and LiteRT's dispatch options map, built with the flatbuffers package);
    each op named `graph_i`, or by `names`; `options`: every op's custom options as given instead."""
    flatbuffers = pytest.importorskip("flatbuffers")
    from flatbuffers import flexbuffers

    def flex(offset: int, size: int, name: str) -> bytes:
        fbb = flexbuffers.Builder()
        with fbb.Map():
            for key, value in (("bytecode_offset", offset), ("bytecode_size", size)):
                fbb.Key(key)
                fbb.UInt(value)
            fbb.Key("name")
            fbb.String(name)
        return bytes(fbb.Finish())

    b = flatbuffers.Builder(1024)

    def vector(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    def table(slots: int, fields: list[tuple[int, int, bool]]) -> int:
        b.StartObject(slots)
        for slot, value, is_offset in fields:
            (b.PrependUOffsetTRelativeSlot if is_offset else b.PrependUint32Slot)(slot, value, 0)
        return b.EndObject()

    code = table(2, [(1, b.CreateString("DISPATCH_OP"), True)])  # OperatorCode.custom_code
    names = names or [f"graph_{i}" for i in range(len(ranges))]
    ops = [
        table(6, [(5, b.CreateByteVector(options or flex(at + off, size, names[i])), True)])  # opcode 0
        for i, (off, size) in enumerate(ranges)
    ]
    subgraph = table(4, [(3, vector(ops), True)])
    b.Finish(table(3, [(1, vector([code]), True), (2, vector([subgraph]), True)]), file_identifier=b"TFL3")
    head = bytes(b.Output())
    assert len(head) <= at
    path.write_bytes(head + b"\0" * (at - len(head)) + bytecode)
    return path


def test_an_epcontext_model_naming_one_context_3000_times_opens_it_once(tmp_path):
    # 348 KB naming a 124 KB context 3000 times took over 60 s and 0.8 GB: it was opened and walked
    # once per node, and once per node again for every part of a set diff.
    shutil.copy(CONTEXT, tmp_path / "ctx.bin")
    model = epcontext_model(tmp_path / "repeated.onnx", ["ctx.bin"] * 3000)
    run = q9("inspect", model, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["size"] == CONTEXT.stat().st_size  # one context: the graphs of one binary
    assert run.rss_mib < 250, run.rss_mib
    run = q9("diff", model, model, "--json")
    assert run.returncode == 0 and run.rss_mib < 250, (run.stderr, run.rss_mib)
    from q9diff.read.openers import open_binary

    assert open_binary(f"{model}#node_2999").size == CONTEXT.stat().st_size  # every node still addresses it


def test_an_epcontext_file_name_with_a_nul_byte_is_one_line(tmp_path):
    # scripts/fuzz.py --bundle --seed 2026 --replay 16015: ValueError (embedded null byte) from the path calls
    shutil.copy(CONTEXT, tmp_path / "ctx.bin")
    model = epcontext_model(tmp_path / "nul.onnx", [b"ctx.bin\0.bin"])
    for args in (("inspect", model), ("diff", model, model)):
        run = q9(*args)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
        assert "name without a NUL byte" in run.stderr and str(model) in run.stderr, run.stderr


def test_a_set_of_distinct_contexts_reads_its_container_once_per_command(tmp_path, monkeypatch):
    # Each FILE#NAME of a set diff re-read the whole model and every context: N parts cost N * N.
    onnx = pytest.importorskip("onnx")
    from q9diff.compare.sets import diff_sets
    from q9diff.read import openers as inputs

    model = epcontext_model(tmp_path / "many.onnx", [CONTEXT.read_bytes()] * 200, embed=1)
    loads = []
    real_load = onnx.load
    monkeypatch.setattr(onnx, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    inputs._cached_index.cache_clear()
    result = diff_sets(resolve(model), resolve(model))
    assert len(result.pairs) == 200 and result.identical
    assert len(loads) == 1  # was 1 + 2 * 200 (each part opened re-read the model)
    model.write_bytes(model.read_bytes())  # rewritten in place: a new mtime, read afresh
    os.utime(model, ns=(1, 1))
    assert len(diff_sets(resolve(model), resolve(model)).pairs) == 200 and len(loads) == 2


def test_dispatch_ops_sharing_bytecode_are_one_context_and_overlapping_ranges_are_refused(tmp_path):
    data = CONTEXT.read_bytes()
    shared = dispatch_tflite(tmp_path / "shared.tflite", data, [(0, len(data))] * 3000)
    run = q9("inspect", shared, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["size"] == len(data), run.stderr
    assert run.rss_mib < 250, run.rss_mib
    two = dispatch_tflite(tmp_path / "two.tflite", data + data, [(0, len(data)), (len(data), len(data))])
    assert len(json.loads(q9("inspect", two, "--json").stdout)["contexts"]) == 2
    overlap = dispatch_tflite(tmp_path / "overlap.tflite", data, [(0, len(data)), (16, len(data) - 16)])
    refused(
        q9("inspect", overlap), "overlap.tflite", "DISPATCH_OP bytecode ranges that are the same or apart"
    )


# ---- 6. a recipe's source model that is no model ------------------------------------------------


def test_a_sparse_1_5_gb_source_model_is_one_line_not_an_internal_error(tmp_path):
    pytest.importorskip("onnxruntime")
    recipe = json.loads((LOCAL / "part_1_of_2.recipe.json").read_text())
    for graph in recipe["parts"][0]["graphs"]:
        graph["model"] = "big.onnx"
    (tmp_path / "recipe.json").write_text(json.dumps(recipe))
    sparse(tmp_path / "big.onnx", 1536 << 20)
    run = q9("verify", LOCAL / "part_1_of_2.bin", "--recipe", tmp_path / "recipe.json")
    refused(run, "big.onnx", "the recipe's source model, not one ONNX Runtime can load")
    assert "internal error" not in run.stderr and run.rss_mib < 400, run.rss_mib


def test_a_config_repeating_one_ctx_bin_opens_it_once_and_thousands_are_refused(tmp_path):
    bundle = copy_bundle(tmp_path / "b")
    config = json.loads((bundle / "genie_config.json").read_text())
    binary = config["dialog"]["engine"]["model"]["binary"]
    binary["ctx-bins"] = ["genie/part_1_of_2_prompt.bin"] * 200
    (bundle / "genie_config.json").write_text(json.dumps(config))
    run = q9("doctor", bundle, "--json")
    assert run.returncode == 1 and run.rss_mib < 300, (run.stderr, run.rss_mib)
    binary["ctx-bins"] = ["genie/part_1_of_2_prompt.bin"] * 12000  # took 17 s and 3 GB of mappings
    (bundle / "genie_config.json").write_text(json.dumps(config))
    refused(
        q9("doctor", bundle), "genie_config.json", "names 12000 ctx-bins in all; q9diff reads at most 256"
    )


@pytest.mark.parametrize(
    "name", ["genie/a\x00b.bin", "genie/\ud800.bin", "x" * 5000], ids=["nul", "surrogate", "long"]
)
def test_a_path_the_system_cannot_name_is_a_finding_not_a_crash(tmp_path, name):
    # Found by the bundle fuzz: ValueError, UnicodeEncodeError and OSError (ENAMETOOLONG) from os calls.
    bundle = copy_bundle(tmp_path / "b")
    config = json.loads((bundle / "genie_config.json").read_text())
    config["dialog"]["engine"]["model"]["binary"]["ctx-bins"][0] = name
    config["dialog"]["engine"]["backend"]["extensions"] = name
    (bundle / "genie_config.json").write_text(json.dumps(config))
    run = q9("doctor", bundle, "--json")
    assert run.returncode == 1 and "internal error" not in run.stderr, run.stderr
    checks = {f["check"] for f in json.loads(run.stdout)["findings"] if f["severity"] == "error"}
    assert checks & {"config.paths", "ctx-bins.exist"}, checks
    for command in (
        ["diff", bundle, REFERENCE],
        ["suggest", LOCAL, REFERENCE, "--apply", bundle / "genie_config.json"],
    ):
        refused(q9(*command), "genie_config.json")
