"""What a user reads on an 80-column terminal, and the JSON beside it: a short verdict by default, one
number under one name, one unit per quantity, every size change with its percentage."""

from __future__ import annotations

import json

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


def test_a_wrapped_item_hangs_under_its_item_and_fix_lines_never_wrap():
    """At 80 columns doctor's findings wrap under their item (two spaces deeper), never at column 0, so
    the next item's name stands out; its fix lines stay whole to paste (issue 38 item 2)."""
    r = q9diff("doctor", str(LOCAL), str(REFERENCE), env=COLS)
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  build.soc_model (hypothesis 9)"))
    assert lines[at + 1] == "    part_1_of_2_token.bin, part_2_of_2_prompt.bin, part_2_of_2_token.bin"
    assert lines[at + 2].startswith("    soc_model 0: built for no SoC")
    assert lines[at + 3].startswith("      on the device")
    errors, warnings = lines.index("Errors"), lines.index("Warnings")
    assert all(ln.startswith("  ") for ln in lines[errors + 1 : warnings])  # nothing back at column 0
    fixes = [ln for ln in lines if ln.startswith("    fix: ")]
    assert len(fixes) == 3 and any(len(ln) > 80 for ln in fixes)  # whole, however long
