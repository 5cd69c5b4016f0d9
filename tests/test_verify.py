"""`q9diff verify` as a user runs it: real binaries on Qualcomm's x86 HTP emulator, the recipe's ONNX on
the CPU, verdicts and drift read from what the command prints."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES
from test_cli import q9diff

from q9diff.runners.base import TensorSpec, from_device, to_device
from q9diff.runners.local import LocalRunner

pytestmark = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))

QWEN = FIXTURES / "qwen-mini"
VARIANTS = FIXTURES / "variants"


def verify_json(*args: str) -> tuple[int, dict]:
    r = q9diff("verify", *args, "--json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


@pytest.fixture(scope="module")
def qwen_verdict() -> tuple[int, dict]:
    return verify_json(str(QWEN / "local"), str(QWEN / "reference"), "--steps", "8")


def test_split_llm_local_vs_reference_vs_cpu(qwen_verdict):
    code, v = qwen_verdict
    assert v["schema"] == "q9diff.verify/1"
    assert [s["label"] for s in v["sides"]] == ["candidate", "reference", "cpu"]
    llm = v["llm"]
    assert set(llm["tokens"]) == {"candidate", "reference", "cpu"}
    assert all(len(t) == 8 for t in llm["tokens"].values())
    assert (
        llm["prompt"][0]
        == json.loads((QWEN / "local" / "genie_config.json").read_text())["dialog"]["context"]["bos-token"]
    )
    # Measured: the emulator computes the soc_model 0 and soc_model 77 builds bit-identically.
    assert llm["first_divergence"]["candidate~reference"] is None
    assert all(step["vs_reference"]["max_abs"] == 0.0 for step in llm["steps"])
    assert len(llm["steps"]) == 8 and all("candidate" in s["vs_cpu"] for s in llm["steps"])
    assert code == 0 and v["passed"]


def test_an_llm_pass_says_its_rule_and_the_drift_the_chart_draws(qwen_verdict):
    """The verdict, the rule and the chart tell one story (issue 38): a PASS rests on the tokens, and the
    drift from the CPU reference the chart draws is said beside it, both builds' lowest cosine."""
    _, v = qwen_verdict
    headline = v["verdict"]["headline"]
    assert "the candidate's greedy tokens are the reference's at every one of 8 steps" in headline
    worst = {
        s: min(step["vs_cpu"][s]["cosine"] for step in v["llm"]["steps"]) for s in ("candidate", "reference")
    }
    assert f"candidate {worst['candidate']:.4f}, reference {worst['reference']:.4f}" in headline


def test_weight_shared_binaries_run_rebuilt_unshared_and_say_so(qwen_verdict, q9diff_cache):
    _, v = qwen_verdict
    notes = " ".join(n for s in v["sides"] if s["label"] != "cpu" for n in s["notes"])
    # one note a side, naming both of its weight-shared parts (24 lines of the same crash were too many)
    assert notes.count("2 weight-shared binaries (part_1_of_2.bin (2 graphs), part_2_of_2.bin") == 2
    assert "verified only on a device" in notes
    # where each rebuild is kept, inside q9diff's cache: no path of this machine in a saved result
    kept = re.findall(r"(?:kept|cached) in q9diff's cache as (unshared/[0-9a-f]+)", notes)
    assert len(kept) == 4 and all((q9diff_cache / k).is_dir() for k in kept)
    assert not re.search(r"(^|[\s(])/", notes) and str(q9diff_cache) not in json.dumps(v)
    # the fallback said as what it is, the crash as what was tried (issue 45)
    assert "the x86 emulator does not load weight-shared binaries (as tried: " in notes
    # The emulator's crash is recorded (a signal, the same every run), so a later open skips the attempt.
    memos = list((q9diff_cache / "emulator").glob("*.crash"))
    assert memos and all("crashed (signal" in m.read_text() for m in memos)
    session = LocalRunner().open([QWEN / "local" / "part_1_of_2.bin"])
    session.close()
    assert "cached in" in session.notes[0]  # the compiler is deterministic: the rebuild is reused
    crashes = (q9diff_cache / "emulator").glob("*.crash")
    assert any(f"(as tried: {m.read_text()})" in session.notes[0] for m in crashes)


def test_single_graph_soc_model_pair_and_cpu_reference():
    code, v = verify_json(str(VARIANTS / "soc_0.bin"), str(VARIANTS / "soc_77.bin"))
    assert code == 0 and v["llm"] is None
    by = {o["against"]: o for o in v["outputs"]}
    assert by["reference"]["metrics"]["max_abs"] == 0.0 and by["reference"]["passed"]
    assert by["cpu"]["metrics"]["cosine"] > 0.999 and by["cpu"]["passed"]


EMULATOR_PASS = "PASS on the x86 HTP emulator, which cannot show a wrong target SoC"


def test_a_pass_names_its_reach_and_a_generic_candidate_is_never_a_bare_pass(tmp_path, qwen_verdict):
    """The motivating bug passes on the emulator (it computes soc_model 0 and 77 alike): the verdict says
    where it ran and, for a generic candidate, that this pass cannot show what is wrong with it, in the
    terminal (80 columns), the JSON and the HTML headline. Exit 0: the outputs agree where they ran."""
    soc0, soc77 = str(VARIANTS / "soc_0.bin"), str(VARIANTS / "soc_77.bin")
    out = tmp_path / "v.html"
    r = q9diff("verify", soc0, soc77, "--html", str(out), env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert f"{EMULATOR_PASS}: the candidate computes what the reference does." in text
    assert "PASS:" not in text
    assert "But the candidate is a generic soc_model 0 build (soc_0.bin)" in text
    assert f"  q9diff {soc0} {soc77}" in r.stdout.splitlines()  # the command to run next, whole
    assert r.stdout.startswith(EMULATOR_PASS)  # the verdict first (issue 45: it came last)
    body = out.read_text().split("<body>", 1)[1]
    assert body.startswith(f"\n<h1>q9diff verify: PASS</h1><p class='ok'><b>{EMULATOR_PASS}")
    assert '<p class="warn">But the candidate is a generic soc_model 0 build' in body
    # the other way round the candidate is a real SoC's build: a pass with its reach, no caveat
    code, v = verify_json(soc77, soc0)
    assert code == 0 and v["verdict"]["headline"].startswith(EMULATOR_PASS) and v["verdict"]["caveats"] == []
    # the 2-part LLM: both parts generic, said once in the JSON verdict
    _, v = qwen_verdict
    verdict = v["verdict"]
    assert verdict["status"] == "PASS" and verdict["runner"] == "local"
    assert [Path(p).name for p in verdict["generic_target_parts"]] == ["part_1_of_2.bin", "part_2_of_2.bin"]
    assert verdict["caveats"][0].startswith("But the candidate is a generic soc_model 0 build (all 2 parts)")
    assert verdict["next_command"] == f"q9diff {QWEN / 'local'} {QWEN / 'reference'}"


def test_wrong_weights_fail_against_the_reference(tmp_path):
    """A candidate built from the same recipe but another model (other weights) must fail."""
    import onnx

    from q9diff.backends.ort_qnn import OrtQnnBackend
    from q9diff.recipes.recipe import load

    recipe = load(VARIANTS / "soc_77.recipe.json")
    model = onnx.load(str(recipe.model_path(recipe.parts[0].graphs[0])))
    weights = [
        i for i in model.graph.initializer if i.data_type == onnx.TensorProto.UINT8 and len(i.raw_data) > 64
    ]
    assert weights, "the variant model has no uint8 weight tensors"
    for init in weights:
        init.raw_data = init.raw_data[::-1]  # the same shape, other weights
    onnx.save(model, tmp_path / "other.onnx")
    other = recipe.__class__.from_dict(
        {**recipe.to_dict(), "parts": [{"name": "p", "output": "other.bin",
                                        "graphs": [{"name": recipe.parts[0].graphs[0].name,
                                                    "model": "other.onnx"}]}]},
        "test", tmp_path / "other.recipe.json",
    )  # fmt: skip
    OrtQnnBackend().compile(other, tmp_path)
    r = q9diff("verify", str(tmp_path / "other.bin"), str(VARIANTS / "soc_77.bin"), "--no-cpu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL on the x86 HTP emulator: the candidate does not compute what the reference does" in " ".join(
        r.stdout.split()
    )
    assert "NO" in r.stdout and "But the candidate" not in r.stdout


def test_genie_runtime_equals_the_plain_graph_run(tmp_path):
    """Genie's own dialog on the emulator gives the tokens q9diff's decoding of the same ctx-bins gives:
    q9diff feeds the graphs as Genie does, so a difference would be runtime glue, not the binaries."""
    from q9diff.runners.genie import GenieRunner

    if GenieRunner().missing():
        pytest.skip(GenieRunner().missing())
    code, v = verify_json("--runner", "genie", str(QWEN / "local"), str(QWEN / "reference"), "--steps", "6")
    tokens = v["llm"]["tokens"]
    assert tokens["candidate"] == tokens["emulator"] == tokens["reference"]
    assert v["llm"]["first_divergence"]["candidate~emulator"] is None
    assert code == 0


def test_html_report_has_the_drift_chart(tmp_path, qwen_verdict):
    out = tmp_path / "verify.html"
    r = q9diff("verify", str(VARIANTS / "soc_0.bin"), str(VARIANTS / "soc_77.bin"), "--html", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "q9diff verify: PASS" in page and "Cosine similarity per output" in page and "plotly" in page
    r = q9diff("verify", str(QWEN / "local"), str(QWEN / "reference"), "--steps", "3", "--html", str(out))
    assert r.returncode == 0 and "Drift per step" in out.read_text()


def test_bad_inputs_are_one_line_errors(tmp_path):
    text = tmp_path / "notes.bin"
    text.write_text("not a context binary\n")
    for args in (
        [str(text)],
        [str(tmp_path / "missing.bin")],
        [str(VARIANTS / "soc_0.bin"), "--prompt-ids", "a,b"],
    ):
        r = q9diff("verify", *args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(b"garbage")
    r = q9diff("verify", str(VARIANTS / "soc_0.bin"), "--inputs", str(inputs))
    assert r.returncode == 2 and "in.npz" in r.stderr


def test_given_inputs_are_used(tmp_path):
    x = np.full((1, 16, 128), 0.25, np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    code, v = verify_json(str(VARIANTS / "soc_0.bin"), "--inputs", str(tmp_path / "in.npz"))
    assert code == 0 and v["outputs"][0]["against"] == "cpu"


def test_verify_leaves_inputs_untouched(tmp_path):
    work = tmp_path / "local"
    shutil.copytree(QWEN / "local", work)
    before = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    q9diff("verify", str(work), "--steps", "2")
    after = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    assert before == after


def test_quantized_io_follows_qnn_scale_offset():
    """QNN: real = scale * (q + offset); a uint16 tensor with offset -32768 centres on 0."""
    spec = TensorSpec("x", "uint16", (4,), scale=0.001, offset=-32768)
    values = np.array([-1.0, 0.0, 0.5, 40.0], np.float32)
    q = to_device(spec, values)
    assert q.dtype == np.uint16 and q.tolist() == [31768, 32768, 33268, 65535]
    np.testing.assert_allclose(from_device(spec, q), [-1.0, 0.0, 0.5, 32.767], atol=1e-6)


def test_genie_bundle_of_weight_shared_ctx_bins_runs_their_unshared_rebuild(tmp_path):
    """AI Hub's bundle layout (one weight-shared binary per part) crashes Genie on x86; verify runs the
    same recipes rebuilt unshared and says that the shared binaries themselves need a device."""
    from q9diff.runners.genie import GenieRunner

    if GenieRunner().missing():
        pytest.skip(GenieRunner().missing())
    shutil.copytree(QWEN / "local", tmp_path / "local", ignore=shutil.ignore_patterns("genie"))
    shutil.copytree(QWEN / "models", tmp_path / "models")
    config = tmp_path / "local" / "genie_config.json"
    data = json.loads(config.read_text())
    data["dialog"]["engine"]["model"]["binary"]["ctx-bins"] = ["part_1_of_2.bin", "part_2_of_2.bin"]
    config.write_text(json.dumps(data))
    code, v = verify_json("--runner", "genie", str(tmp_path / "local"), "--steps", "4")
    assert code == 0, v
    genie = next(s for s in v["sides"] if s["label"] == "candidate")
    assert sum("Genie on x86 cannot load" in n for n in genie["notes"]) == 2
    assert v["llm"]["tokens"]["candidate"] == v["llm"]["tokens"]["emulator"]


def test_tolerances_decide_and_the_verdict_names_what_failed():
    """O1 and O3 builds compute bit-identically; against the CPU they differ a little (fp arithmetic):
    a zero tolerance fails that comparison, and the verdict says it was the source model, not the
    reference, that the candidate left."""
    args = (str(VARIANTS / "opt_1.bin"), str(VARIANTS / "opt_3.bin"))
    r = q9diff("verify", *args, "--min-cosine", "1.0", "--max-rel", "0")
    said = " ".join(r.stdout.split())  # the sentence, however the terminal's width folds it
    assert r.returncode == 1 and "FAIL" in said and "source model" in said, r.stdout + r.stderr
    assert q9diff("verify", *args).returncode == 0


def test_dialog_values_come_from_a_config_with_another_name(tmp_path):
    # n-vocab, bos/eos and the context size decide how verify feeds the graphs: a bundle whose config is
    # config.json or <model>.json must not silently run on defaults.
    from q9diff.verify.run import DialogConfig

    local = FIXTURES / "qwen-mini" / "local"
    shutil.copy(local / "genie_config.json", tmp_path / "qwen_mini.json")
    expected = DialogConfig.of(local)
    assert expected != DialogConfig()  # the fixture's config sets values the defaults do not have
    assert DialogConfig.of(tmp_path) == expected
    assert DialogConfig.of(tmp_path / "qwen_mini.json") == expected


def test_a_side_already_fed_the_anchors_tokens_is_not_decoded_again():
    """The teacher-forced run feeds the CPU's tokens; a side whose own greedy run fed the same tokens
    would give every graph the same inputs again, so its graphs run once, not twice. What that rests
    on, measured: the emulator's logits for the same inputs are the same when run again."""
    import numpy as np

    from q9diff.runners.local import cpu_session
    from q9diff.verify import llm
    from q9diff.verify.run import DialogConfig, check_llm, cpu_recipe

    bins = [QWEN / "local" / "part_1_of_2.bin", QWEN / "local" / "part_2_of_2.bin"]
    emulator, cpu = LocalRunner().open(bins), cpu_session(cpu_recipe(bins, None))
    runs = []

    class Counted:
        graphs = emulator.graphs

        def run(self, graph, inputs):
            runs.append(graph.name)
            return emulator.run(graph, inputs)

    try:
        d = DialogConfig.of(QWEN / "local")
        prompt, pad = [d.bos, 5, 6, 7], d.eos or 0
        check = check_llm({"candidate": Counted(), "cpu": cpu}, prompt, 4, d.theta, pad)
        assert check.tokens["candidate"] == check.tokens["cpu"]  # measured: the greedy tokens agree
        assert len(runs) == 2 * 4  # 2 parts x (the prompt + 3 tokens): decoded once, not twice
        lay = llm.layout(emulator.graphs)
        free = llm.greedy(emulator, lay, prompt, 4, theta=d.theta, pad=pad)
        forced = llm.greedy(emulator, lay, prompt, 4, theta=d.theta, pad=pad, force=check.tokens["cpu"])
        assert np.array_equal(free.logits, forced.logits)
    finally:
        emulator.close()
