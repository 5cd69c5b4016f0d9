"""The diff on real pairs: every single-setting variant pair names exactly that root, and nothing else."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_cli import q9diff

from q9diff.compare.diff import diff, to_json
from q9diff.read.binary import ContextBinary

# Recipe setting -> canonical root-cause name.
SETTING_CAUSE = {
    "vtcm_mb": "vtcm_size",
    "optimization_level": "optimization_level",
    "soc_model": "soc_model",
    "dsp_arch": "dsp_arch",
    "precision": "quantization",
    "weight_sharing": "weight_sharing",
    "hvx_threads": "hvx_threads",
    "dlbc": "dlbc",
    "weights_packing": "weights_packing",
    "finalize_options": "native_hmx_a16w4",  # int4_unpacked: finalize_options {native_hmx_a16w4: false}
}


def _recipes() -> dict[Path, dict]:
    out = {}
    for r in sorted((FIXTURES / "variants").glob("*.recipe.json")):
        b = r.with_name(r.name[: -len(".recipe.json")] + ".bin")
        if b.exists():
            out[b] = json.loads(r.read_text())
    return out


def _single_setting_pairs():
    recipes = _recipes()
    pairs = []
    for (a, ra), (b, rb) in itertools.combinations(recipes.items(), 2):
        models = lambda r: [g["model"] for p in r["parts"] for g in p["graphs"]]  # noqa: E731
        if models(ra) != models(rb) or ra.get("qairt_version") != rb.get("qairt_version"):
            continue
        sa, sb = ra.get("settings", {}), rb.get("settings", {})
        changed = {k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k)}
        if len(changed) == 1 or changed == {"soc_model", "dsp_arch"}:
            pairs.append(pytest.param(a, b, changed, id=f"{a.stem}-vs-{b.stem}"))
    return pairs


PAIRS = _single_setting_pairs()


@pytest.mark.parametrize("a,b,changed", PAIRS)
def test_single_setting_pair_names_exactly_that_root(a, b, changed):
    res = diff(ContextBinary.open(a), ContextBinary.open(b))
    roots = {c.name for c in res.causes if c.role == "root"}
    if res.identical:  # a setting the compiler ignores here (e.g. weight sharing on one graph)
        assert res.causes == []
        return
    expected = {SETTING_CAUSE[k] for k in changed}
    if "dsp_arch" in expected and res.a.dsp_arch == res.b.dsp_arch:
        expected.discard("dsp_arch")  # soc_model 0 + arch: the binary records the same arch
    if "soc_model" in expected and res.a.soc_model == res.b.soc_model:
        expected.discard("soc_model")
    if "soc_model" in expected and res.a.dsp_arch != res.b.dsp_arch:
        expected.add("dsp_arch")  # QAIRT 2.47-2.50's generic v79 build records v68 (generic_measured.json)
    if not expected:
        assert not res.identical or roots == set()
        return
    assert roots == expected, [(c.name, c.role, c.a, c.b) for c in res.causes]


@pytest.mark.parametrize(
    "a,b,root",
    [
        ("precision_fp16", "precision_w8a16", "quantization"),
        ("graphs_1", "graphs_2", "graph_set"),
        ("qairt_2.47", "qairt_2.51", "sdk_version"),
        ("qairt_2.50", "qairt_2.51", "sdk_version"),
    ],
)
def test_pairs_built_from_different_models_name_their_one_root(a, b, root):
    v = FIXTURES / "variants"
    res = diff(ContextBinary.open(v / f"{a}.bin"), ContextBinary.open(v / f"{b}.bin"))
    assert {c.name for c in res.causes if c.role == "root"} == {root}


def test_there_are_single_setting_pairs(fixtures_dir):
    assert len(PAIRS) >= 5


def test_identical_inputs_have_no_causes_and_exit_0(fixtures_dir):
    path = next(iter(_recipes()))
    res = diff(ContextBinary.open(path), ContextBinary.open(path))
    assert res.identical and res.causes == []
    r = q9diff(str(path), str(path))
    assert r.returncode == 0 and "Identical" in r.stdout


def test_qwen_mini_local_vs_reference(fixtures_dir):
    local, ref = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
    r = q9diff(str(local), str(ref), "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    roots = {c["name"]: c for c in data["causes"] if c["role"] == "root"}
    assert {"soc_model", "vtcm_size", "optimization_level"} <= set(roots)
    assert roots["soc_model"]["b"] == 77
    fixes = {s["setting"]: s for s in data["suggestions"]}
    assert fixes["soc_model"]["targets"]["qairt"] == (
        'HtpDeviceConfig(soc_model=77, dsp_arch="v73")'
        "  # soc_details is ignored once device_custom_configs is set"
    )
    # one suggestion over the set: the graphs of both parts, each named (HtpGraphConfig requires a name)
    graphs = [f"{kind}_cl128_{i}_of_2" for i in (1, 2) for kind in ("prompt_ar32", "token_ar1")]
    assert fixes["vtcm_size"]["graphs"] == graphs
    loop = ", ".join(f'"{g}"' for g in graphs)
    assert fixes["vtcm_size"]["targets"]["qairt"] == (
        f"[HtpGraphConfig(name=n, vtcm_size_in_mb=8) for n in ({loop})]"
    )
    assert fixes["vtcm_size"]["targets"]["htp_backend_ext_config"] == {"graphs[0].vtcm_mb": 8}
    for part in data["parts"]:
        for side in ("a", "b"):
            assert sum(x[f"{side}_size"] for x in part["regions"]) == part[side]["size"]
    text = q9diff(str(local), str(ref)).stdout
    assert text.splitlines()[0].startswith("Root causes over the set: soc_model")


def test_diff_json_regions_add_up(fixtures_dir):
    a, b = [p for p in _recipes()][:2]
    data = to_json(diff(ContextBinary.open(a), ContextBinary.open(b)))
    assert sum(r["a_size"] for r in data["regions"]) == a.stat().st_size
    assert sum(r["b_size"] for r in data["regions"]) == b.stat().st_size
    assert all(r["delta"] == r["b_size"] - r["a_size"] for r in data["regions"])


@pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian chromium not installed: apt-get install chromium (.ci/run installs it)",
)
def test_html_report_renders_in_chromium(tmp_path, fixtures_dir):
    local = FIXTURES / "qwen-mini" / "local" / "part_1_of_2.bin"
    ref = FIXTURES / "qwen-mini" / "reference" / "part_1_of_2.bin"
    out = tmp_path / "report.html"
    r = q9diff(str(local), str(ref), "--html", str(out))
    assert r.returncode == 1 and out.exists()
    page = out.read_text()
    assert "cdn.plot.ly" not in page.split("<script", 2)[1][:200] and page.count("plotly-graph-div") >= 5
    shot = tmp_path / "shot.png"
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
    flags += " --disable-background-networking --disable-component-update --disable-sync"
    flags += " --enable-logging=stderr --v=0"
    cmd = ["chromium", *flags.split(), f"--user-data-dir={tmp_path / 'prof'}", "--window-size=1200,2600"]
    cmd += [f"--screenshot={shot}", "--virtual-time-budget=8000", out.as_uri()]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 50_000, run.stderr[-2000:]
    console_errors = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln and "ERROR" in ln.upper()]
    assert console_errors == []
