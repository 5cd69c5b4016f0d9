"""Weights packing: the cause when two binaries' compress_weights differ, the notice from one binary, and
the loop that rebuilds the packed reference byte for byte (fixtures/variants/packing_*, int4_*)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, all_bins
from test_cli import q9diff

from q9diff.compare import packing
from q9diff.inputs import resolve
from q9diff.read.binary import ContextBinary

VARIANTS = FIXTURES / "variants"
OFF, ON = VARIANTS / "packing_off.bin", VARIANTS / "packing_on.bin"


def test_the_packing_pair_names_exactly_weights_packing():
    r = q9diff("diff", str(OFF), str(ON), "--json")
    assert r.returncode == 1, r.stderr  # the files differ
    d = json.loads(r.stdout)
    roots = [c for c in d["causes"] if c["role"] == "root"]
    assert [(c["name"], c["a"], c["b"]) for c in roots] == [("weights_packing", False, True)]
    assert d["size_delta"] == -131072  # the weights (2 x 128 KiB) stored two per byte
    [fix] = d["suggestions"]
    assert fix["setting"] == "weights_packing" and fix["value"] is True
    assert fix["targets"]["qairt"] == 'HtpGraphConfig(name="mlp_w4range", weights_packing=True)'
    assert fix["graphs"] == ["mlp_w4range"]
    assert fix["targets"]["htp_backend_ext_config"] == {"graphs[0].weights_packing": True}
    r = q9diff("diff", str(OFF), str(ON))
    assert "Root cause: weights_packing false → true" in r.stdout  # as the configs write it (issue 45)


def test_one_binary_says_its_4bit_weights_are_stored_one_per_byte():
    off = packing.packing_notice(ContextBinary.open(OFF))
    assert off is not None and off.kind == "not_packed" and off.compress_weights == "false"
    saved = OFF.stat().st_size - ON.stat().st_size  # what packing really saved
    assert abs(off.would_save - saved) < 0.1 * saved
    assert "Per-channel int8 weights do not pack in QAIRT 2.51" in off.message
    assert packing.packing_notice(ContextBinary.open(ON)) is None
    r = q9diff("inspect", str(OFF))
    assert r.returncode == 0 and "weights packing:" in r.stdout and "stored one per byte" in r.stdout
    assert "weights packing:" not in q9diff("inspect", str(ON)).stdout
    s = json.loads(q9diff("inspect", str(OFF), "--json").stdout)
    assert s["packing"]["kind"] == "not_packed" and s["packing"]["would_save"] == off.would_save


def test_int4_stored_unpacked_is_named_by_its_option():
    unpacked = packing.packing_notice(ContextBinary.open(VARIANTS / "int4_unpacked.bin"))
    assert unpacked is not None and unpacked.kind == "int4_unpacked"
    assert "native_hmx_a16w4=false" in unpacked.message
    assert packing.packing_notice(ContextBinary.open(VARIANTS / "int4_native.bin")) is None


def test_full_range_weights_get_no_notice(fixtures_dir):
    for path in (VARIANTS / "soc_77.bin", FIXTURES / "qwen-mini" / "reference" / "part_1_of_2.bin"):
        assert packing.packing_notice(ContextBinary.open(path)) is None, path


def test_suggest_apply_recompile_rebuilds_the_packed_reference(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    work = tmp_path / "variants"
    shutil.copytree(VARIANTS, work)
    recipe, new = work / "packing_off.recipe.json", tmp_path / "new"
    r = q9diff(
        "suggest", str(work / "packing_off.bin"), str(work / "packing_on.bin"),
        "--apply", str(recipe), "--recompile", "--out", str(new),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Gap closed" in r.stdout
    assert json.loads(recipe.read_text())["settings"]["weights_packing"] is True
    assert (new / "packing_off.bin").read_bytes() == ON.read_bytes()
    r = q9diff("verify", str(new / "packing_off.bin"), str(ON), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    by = {o["against"]: o for o in json.loads(r.stdout)["outputs"]}
    assert by["cpu"]["passed"] and by["cpu"]["metrics"]["cosine"] > 0.99
    assert by["reference"]["metrics"]["max_abs"] == 0.0


STORY = FIXTURES / "story"


def test_the_seed_story_step_by_step():
    """local -> +VTCM 8 -> +soc_model 77 -> reference (packed, O3): at each step q9diff names exactly the
    settings still missing, and only packing changes the size of this set."""
    from q9diff.compare.sets import diff_sets, set_to_json

    missing = {
        "local": {"soc_model", "vtcm_size", "optimization_level", "weights_packing"},
        "vtcm8": {"soc_model", "optimization_level", "weights_packing"},
        "soc77": {"optimization_level", "weights_packing"},
    }
    for step, roots in missing.items():
        d = set_to_json(diff_sets(resolve(STORY / step), resolve(STORY / "reference")))
        assert {c["name"] for c in d["causes"] if c["role"] == "root"} == roots, step
        assert (d["a_total"], d["b_total"]) == (1048576, 954368), step
    # The two layers of part 1 hold 98,304 bytes of int8 weights in [-7, 7]: 4 KiB blocks find exactly them.
    local = packing.packing_notice(ContextBinary.open(STORY / "local" / "part_1_of_2.bin"))
    assert local.kind == "not_packed" and local.four_bit_bytes == 98304 and local.would_save == 49152
    for part in ("part_1_of_2.bin", "part_2_of_2.bin"):
        assert packing.packing_notice(ContextBinary.open(STORY / "reference" / part)) is None
        assert [g.name for g in ContextBinary.open(STORY / "reference" / part).graphs] == [
            f"prompt_ar32_cl128_{part[5]}_of_2",
            f"token_ar1_cl128_{part[5]}_of_2",
        ]


def test_the_story_closes_with_one_suggest(tmp_path):
    """suggest --apply on the local recipe sets all four settings; the rebuild is the packed reference."""
    pytest.importorskip("onnxruntime_qnn")
    shutil.copytree(STORY, tmp_path / "story")
    local, ref, new = tmp_path / "story" / "local", tmp_path / "story" / "reference", tmp_path / "new"
    r = q9diff(
        "suggest",
        str(local),
        str(ref),
        "--apply",
        str(local / "recipe.json"),
        "--recompile",
        "--out",
        str(new),
    )
    assert r.returncode == 0 and "Gap closed" in r.stdout, r.stdout + r.stderr
    settings = json.loads((local / "recipe.json").read_text())["settings"]
    assert (settings["soc_model"], settings["vtcm_mb"], settings["optimization_level"]) == (77, 8, 3)
    assert settings["weights_packing"] is True
    for part in ("part_1_of_2.bin", "part_2_of_2.bin"):
        assert (new / part).read_bytes() == (ref / part).read_bytes()


def test_pool_stats_are_the_same_with_and_without_numpy(monkeypatch):
    """A diff (numpy loaded) counts the 4-bit blocks with numpy, inspect with bytes methods: the same
    statistics on every fixture binary with weights pools, the packed and unpacked ones included."""
    import types

    import numpy  # noqa: F401  (the numpy path: a diff has it loaded)

    binaries = all_bins()
    seen = 0
    for path in binaries:
        cb = ContextBinary.open(path)
        with_numpy = packing.pool_stats(cb)
        monkeypatch.setattr(packing, "sys", types.SimpleNamespace(modules={}))
        without = packing.pool_stats(cb)
        monkeypatch.undo()
        assert with_numpy == without, path
        seen += with_numpy is not None and with_numpy.four_bit_bytes > 0
    assert seen >= 2  # packing_off.bin and story's local part hold 4-bit blocks
