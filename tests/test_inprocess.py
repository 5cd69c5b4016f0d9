"""Builds compiled in one process after other builds (issue 51): a generic build made after an explicit one
writes relaxed_precision_flag=true as explicit builds do, so it is said "cannot tell", never "explicit"; a
diff of it never says "Arguments swapped?" nor fixes from that guess; and the rules measured on every
order (q9diff/read/inprocess_measured.json, scripts/measure_inprocess.py) hold on every measured build.
The files are fixtures/inprocess/, made by scripts/make_inprocess_fixtures.py (QAIRT 2.51, a tiny w8a8
MatMul): twice/ is a generic v73 build twice in one process, loop/ SM8550 then the generic v73 build."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, q9diff_cli

from q9diff.read import generic, inprocess
from q9diff.read.binary import ContextBinary

F = FIXTURES / "inprocess"
FIRST, AGAIN = F / "twice" / "1_generic_v73.bin", F / "twice" / "2_generic_v73.bin"
EXPLICIT, AFTER = F / "loop" / "1_soc_43.bin", F / "loop" / "2_generic_v73.bin"


def _json(*args: str) -> dict:
    r = q9diff_cli(*args, "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_the_record_number_shows_a_compile_after_another_in_the_same_process():
    assert [ContextBinary.open(p).graph_number for p in (FIRST, AGAIN, EXPLICIT, AFTER)] == [
        256,
        257,
        256,
        257,
    ]
    assert inprocess.after_another(256) is None
    assert "2nd graph its process compiled (record PICKLE/257)" in inprocess.after_another(257)


def test_the_flag_the_generic_rule_reads_is_what_the_order_left():
    options = [
        ContextBinary.open(p).options(0)["relaxed_precision_flag"] for p in (FIRST, AGAIN, EXPLICIT, AFTER)
    ]
    assert options == ["false", "false", "true", "true"]  # the generic build after SM8550 writes true


def test_a_generic_build_after_an_explicit_one_is_said_cannot_tell_never_explicit():
    t = _json("inspect", str(AFTER))["target"]
    assert t["generic_target"] is None and t["soc_model_requested"] is None and t["rule"] == "measured"
    said = t["evidence"][-1]
    assert said.startswith("cannot tell from the file whether soc_model 0 was asked")
    assert "PICKLE/257" in said and "relaxed_precision_flag=true" in said


def test_generic_builds_that_keep_the_generic_value_are_told_generic_in_any_order():
    for path in (FIRST, AGAIN):
        r = ContextBinary.open(path).requested
        assert (r.soc_model, r.generic) == (0, True), r
    assert "does not move it" in ContextBinary.open(AGAIN).requested.evidence[-1]
    r = ContextBinary.open(EXPLICIT).requested  # its process's first compile: the fresh rule
    assert (r.soc_model, r.generic) == (43, False)


def test_a_diff_against_the_explicit_build_names_no_wrong_cause_no_swap_no_fix():
    d = _json(str(AFTER), str(EXPLICIT))
    assert not [c for c in d["causes"] if c["role"] in ("root", "unexplained")], d["causes"]
    assert "reference_looks_wrong" not in d and not d["suggestions"]
    assert [u["setting"] for u in d["unknown"]] == ["soc_model"]
    assert "cannot tell" in d["unknown"][0]["why"] and "2_generic_v73.bin" in d["unknown"][0]["why"]
    head = q9diff_cli(str(AFTER), str(EXPLICIT)).stdout.splitlines()[0]
    assert head.startswith("Whether soc_model differs cannot be told")


def test_a_diff_against_a_fresh_generic_build_says_state_from_an_earlier_compile():
    d = _json(str(AFTER), str(FIRST))
    assert not [c for c in d["causes"] if c["role"] in ("root", "unexplained")], d["causes"]
    assert "reference_looks_wrong" not in d and not d["suggestions"]
    flag = next(c for c in d["causes"] if c.get("option") == "relaxed_precision_flag")
    assert flag["role"] == "effect" and inprocess.STATE in flag["evidence"][0]
    out = q9diff_cli(str(AFTER), str(FIRST)).stdout
    assert "Arguments swapped" not in out
    assert out.splitlines()[0].startswith(f"No setting q9diff reads differs; {inprocess.STATE} moves")


def test_an_explicit_candidate_against_a_fresh_generic_reference_still_looks_swapped():
    d = _json(str(EXPLICIT), str(FIRST))  # both told: the reference is the generic build
    assert "reference_looks_wrong" in d and not d["suggestions"]


ROWS = json.loads(inprocess.INPROCESS_BUILDS_PATH.read_text())["builds"]


def test_the_shipped_data_measures_every_arch_on_two_qairt_versions():
    data = json.loads(inprocess.INPROCESS_PATH.read_text())
    assert data["schema"] == "q9diff.inprocess_measured/1"
    assert {"2.51", "2.48"} <= set(data["qairt"])
    for qairt, entry in data["qairt"].items():
        assert set(entry["arches"]) == {"68", "69", "73", "75", "79", "81"}, qairt
        for arch, a in entry["arches"].items():
            assert a["graph_number"]["first_in_process"] == [256], (qairt, arch)
            assert a["graph_number"]["file_shows_after"], (qairt, arch)


@pytest.mark.parametrize("qairt", sorted({r["qairt"] for r in ROWS}))
def test_the_rule_never_calls_a_measured_build_what_it_was_not_asked(qairt):
    """Every build measured in every order: told generic only if asked soc_model 0, explicit only if asked a
    SoC, else "cannot tell"; and a generic build after an explicit one is among those measured."""
    told, wrong = {True: 0, False: 0, None: 0}, []
    for r in (r for r in ROWS if r["qairt"] == qairt):
        got = generic.requested(r["soc_model"], r["dsp_arch"], r["options"], r["build_id"], r["graph_number"])
        told[got.generic] += 1
        if got.generic is not None and got.generic != (r["role"] in ("G", "XG")):
            wrong.append((r, got))
    assert not wrong, wrong[:3]
    assert told[True] and told[False]
    assert any(r["role"] == "G" and r["order"] == "explicit>generic" for r in ROWS if r["qairt"] == qairt)


def test_a_float_graph_after_an_explicit_build_is_another_program_and_the_diff_says_why():
    """The float model, no precision asked: the generic build made after SM8550 is compiled fp16, the fresh
    one fp32 (what the emulator measurement found: other outputs); the diff names the precision and the
    state, and gives no fix."""
    after, fresh = F / "float_loop" / "2_generic_v73.bin", F / "float" / "generic_v73.bin"
    assert any(t.endswith("e") for t in ContextBinary.open(after).tensor_types(0))
    assert not any(t.endswith("e") for t in ContextBinary.open(fresh).tensor_types(0))
    d = _json(str(after), str(fresh))
    quantization = next(c for c in d["causes"] if c["name"] == "quantization")
    assert quantization["role"] == "root" and inprocess.STATE in quantization["evidence"][-1]
    assert "fp16 tensors in every measured build" in quantization["evidence"][-1]
    assert "reference_looks_wrong" not in d and not d["suggestions"]
    head = q9diff_cli(str(after), str(fresh)).stdout.splitlines()[0]
    assert head.endswith(f"{inprocess.STATE} moved compiler option relaxed_precision_flag true → false")


def test_the_emulator_measurement_ships_with_the_data():
    data = json.loads(inprocess.INPROCESS_PATH.read_text())["qairt"]["2.51"]
    emulated = {(a, m): e for a, x in data["arches"].items() for m, e in x["emulated"].items()}
    assert len(emulated) == 18  # 6 arches x 3 models
    assert all(e["identical"] for (a, m), e in emulated.items() if m != "mlp_float")
    assert not any(e["identical"] for (a, m), e in emulated.items() if m == "mlp_float" and a != "68")
    assert data["float_graphs"]["relaxed_precision_flag=true"] == {"fp16": 65}


def test_a_hostile_record_name_is_no_graph_number():
    assert inprocess.graph_number(["PICKLE/²/g", "PICKLE//", "PICKLE/x/g", "ROOT"]) is None
    assert inprocess.graph_number(["PICKLE/258/b", "PICKLE/257/a", "WEIGHTS/0"]) == 257


def test_builds_made_through_q9diffs_recipe_path_are_each_their_processs_first_compile():
    """q9diff's backends compile each part in a child process of its own (recompile, make_fixtures.py):
    every committed fixture with a recipe beside it, Genie bundles' parts included, is a process's first."""
    made = [p for p in FIXTURES.rglob("*.bin") if p.with_name(p.stem + ".recipe.json").is_file()]
    assert len(made) > 40
    assert {ContextBinary.open(p).graph_number for p in made} <= {256, None}
