"""The origin bug on every arch (issue 47): a generic build (soc_model 0) is named as one on v68, v69, v73,
v75, v79 and v81 by the rules measured on the compiler (q9diff/read/generic_measured.json, made by
scripts/measure_generic.py), the shipped data agrees with the fixtures the fixture script builds, a QAIRT
outside the data is said not to be measured, and every compiler option that differs is either a setting's or
named with no known cause."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, q9diff_cli

from q9diff.read import generic

V = FIXTURES / "variants"
# (generic build, explicit build of the SoC the generic one records, arch): fixtures/variants, QAIRT 2.51
ARCH_PAIRS = [
    ("generic_v68", "soc_30", 68),
    ("generic_v69", "soc_36", 69),
    ("soc_0", "soc_43", 73),
    ("generic_v75", "soc_57", 75),
    ("generic_v79", "soc_69", 79),
    ("generic_v81", "soc_87", 81),
]


def _json(*args: str) -> dict:
    r = q9diff_cli(*args, "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _roots(data: dict) -> list[str]:
    return sorted(c["name"] for c in data["causes"] if c["role"] == "root")


@pytest.mark.parametrize("gen,exp,arch", ARCH_PAIRS, ids=[f"v{a}" for _, _, a in ARCH_PAIRS])
def test_a_generic_build_is_named_on_every_arch(gen, exp, arch):
    g, e = _json("inspect", str(V / f"{gen}.bin")), _json("inspect", str(V / f"{exp}.bin"))
    assert g["target"]["generic_target"] is True and g["target"]["soc_model_requested"] == 0
    assert e["target"]["generic_target"] is False and e["target"]["rule"] == "measured"
    assert g["dsp_arch"] == e["dsp_arch"] == arch
    said = q9diff_cli("inspect", str(V / f"{gen}.bin")).stdout
    assert "soc_model 0 (generic target)" in said
    for ref in {exp, "soc_77"}:  # the stand-in SoC's explicit build, and a SoC of another arch
        d = _json(str(V / f"{gen}.bin"), str(V / f"{ref}.bin"))
        want = ["soc_model"] + (["dsp_arch"] if d["a"]["dsp_arch"] != d["b"]["dsp_arch"] else [])
        assert _roots(d) == sorted(want), d["causes"]
        assert not [c for c in d["causes"] if c["role"] == "unexplained"], d["causes"]
        fix = next(s for s in d["suggestions"] if s["setting"] == "soc_model")
        assert fix["value"] == d["b"]["target"]["soc_model_requested"] != 0
        assert "QcomChipset" in fix["targets"].get("executorch", "QcomChipset") and fix["targets"]["ort_qnn"]


def test_two_explicit_socs_of_one_arch_name_soc_model_alone():
    d = _json(str(V / "soc_43.bin"), str(V / "soc_77.bin"))
    assert _roots(d) == ["soc_model"] and not [c for c in d["causes"] if c["role"] == "unexplained"]
    assert d["a"]["target"]["generic_target"] is False and d["b"]["target"]["generic_target"] is False


def test_qairt_2_48s_generic_v79_build_records_v68_and_both_are_named():
    """On QAIRT 2.48-2.50 soc_model 0 with htp_arch 79 gives a generic v68 binary (socModel 0, dspArch 68)."""
    d = _json(str(V / "generic_v79_qairt_2.48.bin"), str(V / "soc_69_v79_qairt_2.48.bin"))
    assert (d["a"]["soc_model"], d["a"]["dsp_arch"]) == (0, 68)
    assert _roots(d) == ["dsp_arch", "soc_model"]
    assert {s["setting"]: s["value"] for s in d["suggestions"]} == {"soc_model": 69, "dsp_arch": 79}


@pytest.mark.parametrize("gen,exp,arch", ARCH_PAIRS, ids=[f"v{a}" for _, _, a in ARCH_PAIRS])
def test_the_shipped_rules_hold_on_the_fixtures(gen, exp, arch):
    """The data is read against the fixture script's builds of another model than the measured ones' mix:
    what the generic build records and its signature, and the explicit build's other values."""
    from q9diff.read.openers import open_binary

    g, e = open_binary(V / f"{gen}.bin"), open_binary(V / f"{exp}.bin")
    assert generic.qairt_of(g.build_id) == "2.51"
    sig = generic.measured()["2.51"].signatures[(g.soc_model, g.dsp_arch)]
    assert sig.arch == arch and sig.options and sig.models >= 5
    assert all(g.options(0).get(k) == v for k, v in sig.options)
    explicit = dict(sig.explicit)
    assert all(e.options(0).get(k) in explicit[k] for k, _ in sig.options)


def test_the_data_names_every_qairt_and_arch_it_measured():
    data = json.loads(generic.GENERIC_MEASURED_PATH.read_text())
    assert data["schema"] == "q9diff.generic_measured/1"
    for version, entry in data["qairt"].items():
        assert re.fullmatch(r"2\.\d\d", version)
        for arch in ("68", "69", "73", "75", "79", "81"):
            a = entry["arches"][arch]
            assert a["measured"] and a["recorded"], (version, arch)
            # either the metadata itself says generic (socModel 0) or a signature tells it apart
            assert a["recorded"][0]["soc_model"] == 0 or a["told_apart"], (version, arch, a)
    builds = json.loads(generic.GENERIC_BUILDS_PATH.read_text())["builds"]
    assert len(builds) > 100 and all("sha256" in b or "error" in b for b in builds)
    for version in data["qairt"]:  # every rule's QAIRT has its builds, and each build its QAIRT's rules
        assert any(b["qairt"] == version for b in builds)


def _relabelled(src: Path, to: bytes, out: Path) -> Path:
    """A real binary whose build id names another QAIRT version (same length, so nothing else moves)."""
    data = bytearray(src.read_bytes())
    at = data.find(b"v2.51.0.")
    assert at > 0 and len(to) == 7
    data[at : at + 7] = to
    out.write_bytes(data)
    return out


def test_a_qairt_outside_the_data_is_not_measured_and_the_bytes_are_said(tmp_path):
    old = _relabelled(V / "soc_0.bin", b"v2.46.0", tmp_path / "old_generic.bin")
    t = _json("inspect", str(old))["target"]
    assert t["generic_target"] is None and t["soc_model_requested"] is None and t["rule"] == "not measured"
    assert t["soc_model_recorded"] == 43 and any("2.46" in e and "not measured" in e for e in t["evidence"])
    said = q9diff_cli("inspect", str(old)).stdout
    assert "socModel 43 (SM8550) recorded" in " ".join(said.split())
    # against a build of another SoC: compared on the recorded socModel, the fix is the reference's value
    d = _json(str(old), str(V / "soc_77.bin"))
    soc = next(c for c in d["causes"] if c["name"] == "soc_model")
    assert (soc["a"], soc["b"]) == (43, 77) and any("compared as recorded" in e for e in soc["evidence"])


def test_options_that_no_setting_explains_are_named_never_no_difference(tmp_path):
    """soc_0 and soc_43 differ in one compiler option only. Relabelled to a QAIRT outside the data, nothing
    says which setting moved it: the option is named with no known cause, and the diff exits 1."""
    a = _relabelled(V / "soc_0.bin", b"v2.46.0", tmp_path / "a.bin")
    b = _relabelled(V / "soc_43.bin", b"v2.46.0", tmp_path / "b.bin")
    r = q9diff_cli(str(a), str(b))
    assert r.returncode == 1, r.stderr
    first = " ".join(r.stdout.split("\n")[0].split())
    assert first.startswith("No setting q9diff reads differs, but these differ with no known cause:")
    assert "compiler option relaxed_precision_flag false → true" in first
    assert "No setting differs" not in r.stdout
    d = _json(str(a), str(b))
    loose = [c for c in d["causes"] if c["role"] == "unexplained"]
    assert [(c["option"], c["a"], c["b"]) for c in loose] == [("relaxed_precision_flag", "false", "true")]
    assert "not measured" not in loose[0]["evidence"][0] or "2.47" in loose[0]["evidence"][0]
    md = q9diff_cli(str(a), str(b), "--markdown", "-").stdout
    assert "no known cause" in md and "compiler option relaxed\\_precision\\_flag" in md  # Markdown-escaped


def test_the_compilers_own_ops_are_the_schedule_not_the_model():
    """generic_v68 vs soc_30: the generic build schedules two @DmaCheckpoint ops fewer (58 → 56 ops); the
    cause is the SoC, and no graph_structure (the model) is named."""
    d = _json(str(V / "generic_v68.bin"), str(V / "soc_30.bin"))
    names = {c["name"]: c for c in d["causes"]}
    assert "graph_structure" not in names and names["schedule"]["role"] == "effect"
    assert _roots(d) == ["soc_model"]


def test_a_vtcm_only_pair_has_no_precision_cause():
    d = _json(str(V / "vtcm_2mb.bin"), str(V / "vtcm_8mb.bin"))
    assert _roots(d) == ["vtcm_size"]
    assert not [c for c in d["causes"] if c["role"] == "unexplained"], d["causes"]
    assert d["a"]["target"]["generic_target"] is False


def test_target_names_a_generic_build_of_another_arch():
    d = _json(str(V / "generic_v75.bin"), "--target", "SM8650")
    soc = next(c for p in d.get("parts", [d]) for c in p["causes"] if c["name"] == "soc_model")
    assert (soc["a"], soc["b"]) == (0, 57)
