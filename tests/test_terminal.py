"""What a user reads on an 80-column terminal, and the JSON beside it: a short verdict by default, one
number under one name, one unit per quantity, every size change with its percentage."""

from __future__ import annotations

import json
import re

from conftest import FIXTURES
from test_cli import q9diff

LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
PART_A, PART_B = LOCAL / "part_1_of_2.bin", REFERENCE / "part_1_of_2.bin"
COLS = {"COLUMNS": "80"}
FIX_LINE = "  vtcm_size = 8 MiB       graphs[0].vtcm_mb = 8"  # the extension config's form, beside LOCAL


def _json(*args: str) -> dict:
    r = q9diff(*args, "--json")
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def test_a_set_diff_is_short_by_default_with_one_fix_and_the_detail_behind_verbose(fixtures_dir):
    data = _json(str(LOCAL), str(REFERENCE))
    r = q9diff(str(LOCAL), str(REFERENCE), env=COLS)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 24, len(lines)  # it was 217, then 38: the verdict scrolled away at 80x24
    head = " ".join(lines[:2])
    assert head.startswith(
        "Root causes over the set: soc_model 0 → 77 (correctness), vtcm_size 4 MiB → 8 MiB"
    )
    assert "The candidate targets a generic SoC (soc_model 0)" in r.stdout
    # one fix for the set, since both parts need the same, in the candidate's toolchain; lines whole
    fix_head = "Fix (the same for every part), in htp_backend_ext_config.json"
    assert sum(ln.startswith(fix_head) for ln in lines) == 1
    assert lines.count("  soc_model = 77          devices[0].soc_model = 77") == 1 and FIX_LINE in lines
    assert "HtpDeviceConfig" not in r.stdout  # the other forms stay behind -v
    assert "regions that changed" not in r.stdout and "where the changed bytes went" not in r.stdout
    # sizes, for the set and per part, with their percentages read from the JSON
    pct = data["size_delta_percent"]
    assert (
        round(pct, 1) == 2.5
        and f"{data['size_delta']:+,d} B (+{pct:.1f}%)"
        in lines[next(i for i, ln in enumerate(lines) if ln.startswith("set: 2 vs 2 parts"))]
    )
    for part in data["parts"]:
        a, b = part["a"]["size"], part["b"]["size"]
        line = f"  {part['part']}: {a:,d} B → {b:,d} B, {b - a:+,d} B (+{part['size_delta_percent']:.1f}%)"
        assert line in lines, line
    nxt = f"next: q9diff suggest {LOCAL} {REFERENCE} --apply {LOCAL / 'htp_backend_ext_config.json'}"
    more = "more: -v (evidence, every toolchain form, where the bytes went), --json (all)"
    assert lines[-3:-1] == [nxt, more]
    assert lines[-1].startswith("terms: q9diff explain 'generic target' | soc_model | VTCM")
    verbose = q9diff(str(LOCAL), str(REFERENCE), "--verbose", env=COLS)
    vlines = verbose.stdout.splitlines()
    assert verbose.returncode == 1 and len(vlines) > 150
    assert "part_2_of_2.bin vs part_2_of_2.bin" in verbose.stdout and "regions that changed" in verbose.stdout
    fix = vlines.index("Fix (the same for every part)")  # still one fix, at the end, every form
    assert sum(ln.startswith("Fix") for ln in vlines) == 1 and FIX_LINE.replace("  ", "    ", 1) in vlines
    assert vlines[fix + 1] == "  htp_backend_ext_config.json:" and "    soc_model = 77" in vlines[fix:]
    assert q9diff(str(LOCAL), str(REFERENCE), "-v", env=COLS).stdout == verbose.stdout


def test_one_number_one_name_one_unit(fixtures_dir):
    data = _json(str(PART_A), str(PART_B))
    rows = {row["bucket"]: row for row in data["attribution"]}
    causes = {c["name"]: c for c in data["causes"]}
    out = q9diff(str(PART_A), str(PART_B), env=COLS).stdout
    verbose = q9diff(str(PART_A), str(PART_B), "-v", env=COLS).stdout
    # an effect's bytes are its attribution row's two numbers, in the JSON and on both screens
    sched = rows["schedule"]
    assert (causes["schedule"]["bytes"], causes["schedule"]["size_delta"]) == (
        sched["changed_bytes"],
        sched["size_delta"],
    )
    said = f"schedule row: {sched['changed_bytes']:,d} changed bytes, {sched['size_delta']:+,d} size delta"
    assert said in out and said in verbose
    row = next(ln for ln in verbose.splitlines() if ln.startswith("│ schedule "))
    assert f"{sched['changed_bytes']:,d}" in row and f"{sched['size_delta']:+,d}" in row
    # the weights' moved bytes are named as a part of re_tiling's, in the same unit
    weights = [r for r in data["regions"] if "const_pool" in r["name"] or "WEIGHTS/" in r["name"]]
    moved = sum(r["moved_bytes"] for r in weights)
    assert f"({moved:,d} B moved, within re_tiling's {rows['re_tiling']['changed_bytes']:,d} B)" in " ".join(
        out.split()
    )
    # VTCM in MiB wherever it is read (JSON values stay bytes), the level's 0 worded one way
    assert causes["vtcm_size"]["a"] == 4194304 and "4194304" not in out and "8388608" not in out
    assert "vtcm_size 4 MiB → 8 MiB" in " ".join(out.split())
    assert any(ln.startswith("  vtcm_size = 8 MiB  ") for ln in out.splitlines())
    assert "optimization_level 0 (not set) → 3" in " ".join(out.split())
    inspect = " ".join(q9diff("inspect", str(PART_A), env={"COLUMNS": "200"}).stdout.split())
    assert "vtcm_size 4 MiB" in inspect and "optimization_level 0 (not set; the compiler ran O=2)" in inspect
    # compiler_options: each side's values of the options that differ, not the count twice
    opts = causes["compiler_options"]
    differ = set(opts["a"]) | set(opts["b"])
    assert len(differ) == 23 and "23 options differ" in out
    assert opts["a"]["vtcm_size_for_tiling"] == "4" and opts["b"]["vtcm_size_for_tiling"] == "8"


def test_the_brief_form_prints_nothing_and_exits_like_cmp(fixtures_dir, tmp_path):
    for args, status in (([str(LOCAL), str(REFERENCE)], 1), ([str(PART_A), str(PART_A)], 0)):
        for flag in ("-q", "--brief"):
            r = q9diff(*args, flag)
            assert (r.returncode, r.stdout, r.stderr) == (status, "", ""), (args, flag, r.stderr)
    r = q9diff(str(PART_A), str(tmp_path / "missing.bin"), "-q")
    assert r.returncode == 2 and r.stdout == "" and "missing.bin" in r.stderr
    r = q9diff("-q", str(PART_B), str(PART_A))  # swapped: still said, on stderr
    assert r.returncode == 1 and r.stdout == "" and "looks like the broken build" in r.stderr


def test_parts_that_need_different_fixes_get_each_its_own(tmp_path):
    import shutil

    v = FIXTURES / "variants"
    for side, second in (("cand", "opt_3.bin"), ("ref", "opt_1.bin")):
        (tmp_path / side).mkdir()
        shutil.copy(v / "opt_3.bin", tmp_path / side / "part_1_of_2.bin")
        shutil.copy(v / second, tmp_path / side / "part_2_of_2.bin")
    r = q9diff(str(tmp_path / "cand"), str(tmp_path / "ref"), env=COLS)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert "  part_1_of_2.bin: identical" in lines
    assert "  optimization_level (root): 3 → 1 (in part_2_of_2.bin)" in lines
    assert not any(ln.startswith("Fix (the same for every part)") for ln in lines)
    assert sum(ln.startswith("Fix for part_2_of_2.bin") for ln in lines) == 1
    assert sum(ln.startswith("  optimization_level = 1  ") for ln in lines) == 1


def test_a_wrapped_item_hangs_under_its_item_and_prose_wraps_at_the_width():
    """At 80 columns doctor's findings wrap under their item (two spaces deeper), never at column 0, so
    the next item's name stands out (issue 38 item 2); its fix is a sentence and wraps too, hanging under
    `fix:` (issue 45: it ran to 290 columns and broke mid-word in the terminal)."""
    r = q9diff("doctor", str(LOCAL), str(REFERENCE), env=COLS)
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  build.soc_model (hypothesis 9)"))
    assert lines[at + 1] == "    part_1_of_2_token.bin, part_2_of_2_prompt.bin, part_2_of_2_token.bin"
    assert lines[at + 2].startswith("    soc_model 0: built for no SoC")
    assert lines[at + 3].startswith("      on the device")
    errors, warnings = lines.index("Errors"), lines.index("Warnings")
    assert all(ln.startswith("  ") for ln in lines[errors + 1 : warnings])  # nothing back at column 0
    fixes = [i for i, ln in enumerate(lines) if ln.startswith("    fix: ")]
    assert len(fixes) == 3 and all(lines[i + 1].startswith("      ") for i in fixes)
    assert max(map(len, lines)) <= 80


def test_commands_in_wrapped_prose_stay_whole():
    """The swapped-arguments warning wraps as prose; the command it ends with is one line to copy."""
    r = q9diff(str(REFERENCE), str(LOCAL), env=COLS)
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Arguments swapped? "))
    assert f"q9diff {LOCAL} {REFERENCE}" in lines[at : at + 5]
    assert all(len(ln) <= 80 for ln in lines[at : at + 5] if not ln.startswith("q9diff "))
    inspect = q9diff("inspect", str(FIXTURES / "pte" / "two_delegates.pte"), env=COLS).stdout.splitlines()
    at = next(i for i, ln in enumerate(inspect) if ln.startswith("  method 'forward' delegate 0"))
    assert inspect[at : at + 2] == [
        "  method 'forward' delegate 0: QnnBackend, segment 1 -> context forward:0",
        "    (compile spec soc_model 57, htp_arch 75, VTCM 8 MiB, fp16)",
    ]


def test_after_apply_a_next_line_says_how_to_rebuild_and_diff_again(tmp_path):
    """issue 45: after suggest --apply nothing said the binaries were still the old ones."""
    import shutil

    shutil.copytree(FIXTURES / "qwen-mini", tmp_path / "qm")
    local, ref = tmp_path / "qm" / "local", tmp_path / "qm" / "reference"
    args = ("suggest", str(local), str(ref), "--apply", str(local / "recipe.json"))
    r = q9diff(*args, env=COLS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == (
        f"next: q9diff recompile {local / 'recipe.json'} --out q9diff-out && q9diff q9diff-out {ref}"
    )
    target = q9diff(
        "suggest", str(local), "--target", "QCS9100", "--apply", str(local / "htp_backend_ext_config.json")
    )
    assert target.stdout.splitlines()[-1] == (
        "next: rebuild with the fixed config, then diff the new build again:"
        " q9diff NEW_BUILD --target QCS9100"
    )


def test_switches_are_true_or_false_and_the_arch_v73_everywhere(tmp_path):
    """issue 45: `weights_packing False → True` in Python's words, and `dsp_arch 73 → 75` beside `v73`."""
    variants = FIXTURES / "variants"
    packing = q9diff(str(variants / "packing_off.bin"), str(variants / "packing_on.bin"))
    assert "Root cause: weights_packing false → true (size)" in packing.stdout
    assert "False" not in packing.stdout and "True" not in packing.stdout.replace("weights_packing=True)", "")
    arch = q9diff(str(variants / "soc_0.bin"), "--target", "SM8650", env=COLS)
    assert "dsp_arch v73 → v75" in arch.stdout and "  dsp_arch = v75  " in arch.stdout
    page = tmp_path / "p.html"
    assert q9diff(str(PART_A), str(PART_B), "--html", str(page)).returncode == 1
    assert ">8,388,608 B</span>" not in page.read_text()  # VTCM in MiB, as the terminal says it
    spans = re.findall(r'<span title="[^"]*">([^<]*)</span>', page.read_text())
    assert spans and all(re.fullmatch(r"[+-]?\d{1,3}(,\d{3})* B", x) for x in spans), spans  # bytes
    regions = q9diff("inspect", str(PART_A)).stdout
    sizes = re.findall(r"│\s+0x[0-9a-f]+ │\s+([\d,]+) │", regions)
    assert sizes and all(re.fullmatch(r"\d{1,3}(,\d{3})*", x) for x in sizes)  # thousands separators


def test_a_precision_difference_says_where_precision_is_chosen_not_that_nothing_is_to_change(tmp_path):
    """issue 54: fp16 against a w8a16 reference said "No setting to change." and exited 1 ("different").
    No compile setting quantizes, so the fix says where the precision is made, in each toolchain; the
    text and the status then agree: there is something to change."""
    a, b = FIXTURES / "variants" / "precision_fp16.bin", FIXTURES / "variants" / "precision_w8a16.bin"
    r = q9diff(str(a), str(b), "--html", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "r.md"))
    assert r.returncode == 1 and "No setting to change" not in r.stdout, r.stdout
    fix = r.stdout[r.stdout.index("\nFix") + 1 :]
    assert fix.startswith("Fix: the precision is chosen when the model is quantized or exported")
    assert "AI Hub: the compile option --quantize_full_type w8a16" in fix
    text, page = (tmp_path / "r.md").read_text(), (tmp_path / "r.html").read_text()
    assert "No setting to change" not in text and "Nothing to change" not in page
    assert "QuantType.QUInt16" in text and "QuantDtype.use\\_16a8w" in text and "use_16a8w" in page
    said = q9diff("suggest", str(a), str(b), "--toolchain", "ort")  # suggest: the same, exit 1 agreeing
    assert said.returncode == 1 and "No setting to change" not in said.stdout, said.stdout
    assert "in ONNX Runtime QNN EP: a QDQ model" in said.stdout and "QuantType.QUInt16" in said.stdout
    back = q9diff(str(b), str(a), "-v")  # the other way: the float model, compiled in fp16
    assert back.returncode == 1 and "in ONNX Runtime QNN EP: the float model" in back.stdout
    assert "enable_htp_fp16_precision=1" in back.stdout
