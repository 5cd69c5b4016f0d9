"""Qualcomm's real libGenie runs qwen-mini on the x86 HTP emulator: greedy, deterministic, KV zeroed.

Genie orders the splits of a bundle by the `_<i>_of_<n>` suffix of the graph names. The committed
bundles carry AI Hub's names (prompt_ar32_cl128_1_of_2, ...), so they run in split order whatever the
ctx-bins order. The refusal test rebuilds the same four graphs from a schema-1 recipe, which keeps
ONNX Runtime's hash names; those put part 2's token graph first.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from q9diff.read.openers import open_binary
from q9diff.runners.genie import CONFIG_NAME, GenieError, GenieRunner

RUNNER = GenieRunner(timeout_s=120)
pytestmark = pytest.mark.skipif(RUNNER.missing() is not None, reason=str(RUNNER.missing()))

QWEN = Path(__file__).resolve().parent.parent / "fixtures" / "qwen-mini"
PROMPT = [10, 20, 30, 40, 50]
STEPS = 6
BOS, EOS, AR = 2046, 2045, 32
# AI Hub's names as labels of a schema-1 recipe: the EP hashes them into QNN graph names
# (QNNExecutionProvider_QNNExecutionProvider_<hash>_1_0) that sort part 2's token graph first.
PLAIN_NAMES = {
    "part_1_of_2_ar32": "prompt_ar32_cl128_1_of_2",
    "part_2_of_2_ar32": "prompt_ar32_cl128_2_of_2",
    "part_1_of_2_ar1": "token_ar1_cl128_1_of_2",
    "part_2_of_2_ar1": "token_ar1_cl128_2_of_2",
}


@pytest.fixture(scope="session")
def ordered_bundle() -> Path:
    """The committed local Genie bundle: one graph per ctx-bin, graph names in split order."""
    return QWEN / "local"


@pytest.fixture(scope="session")
def misordered_bundle(tmp_path_factory) -> Path:
    """qwen-mini's local Genie bundle rebuilt under AI Hub's plain graph names."""
    from q9diff.backends.ort_qnn import OrtQnnBackend
    from q9diff.recipes.recipe import Recipe

    out = tmp_path_factory.mktemp("genie-bundle")
    parts = [
        {
            "name": stem,
            "output": f"genie/{stem}.bin",
            "graphs": [{"name": name, "model": str(QWEN / "models" / f"{stem}.onnx")}],
        }
        for stem, name in PLAIN_NAMES.items()
    ]
    recipe = Recipe.from_dict(
        {
            "schema": "q9diff.recipe/1",
            "backend": "ort-qnn",
            "settings": {"soc_model": 0, "dsp_arch": "v73"},
            "parts": parts,
        },
        "test recipe",
        out / "recipe.json",
    )
    OrtQnnBackend(timeout_s=300).compile(recipe, out)
    config = json.loads((QWEN / "local" / CONFIG_NAME).read_text())
    config["dialog"]["engine"]["model"]["binary"]["ctx-bins"] = [
        f"genie/{stem}.bin"
        for stem in ("part_1_of_2_ar32", "part_1_of_2_ar1", "part_2_of_2_ar32", "part_2_of_2_ar1")
    ]
    (out / CONFIG_NAME).write_text(json.dumps(config, indent=2))
    for name in ("tokenizer.json", "htp_backend_ext_config.json"):
        shutil.copy(QWEN / "local" / name, out / name)
    graph = {stem: open_binary(out / "genie" / f"{stem}.bin").graphs[0].name for stem in PLAIN_NAMES}
    assert graph["part_2_of_2_ar1"] < graph["part_1_of_2_ar1"], "the EP's graph-name hash changed"
    return out


def _dump(debug: Path, execution: int, prefix: str) -> dict[str, np.ndarray]:
    """Tensors whose names start with `prefix` from Genie's dump of graph execution `execution`."""
    root = debug / "text_primary"
    tensors = {}
    for spec_file in root.glob("spec.*.json"):
        spec = json.loads(spec_file.read_text())
        for io, key in (("in", "inputs"), ("out", "outputs")):
            for t in spec[key]:
                path = root / spec["graph_name"] / f"{execution:03d}_{io}_{t['name']}"
                if t["name"].startswith(prefix) and path.is_file():
                    dtype = np.int32 if t["dtype"] == "QNN_DATATYPE_INT_32" else np.float32
                    tensors[t["name"]] = np.fromfile(path, dtype=dtype).reshape(t["dims"])
    return tensors


def _logits(debug: Path, execution: int) -> np.ndarray:
    return np.fromfile(debug / "text_primary" / "logits" / f"{execution:03d}", dtype=np.float32).reshape(
        -1, 2048
    )


def test_a_bundle_genie_would_run_out_of_split_order_is_refused_with_the_reason(misordered_bundle):
    config = (misordered_bundle / CONFIG_NAME).read_bytes()
    with pytest.raises(GenieError, match=r"AR-1 CL-128 splits as part_2_of_2_ar1\.bin, part_1_of_2_ar1\.bin"):
        RUNNER.generate(misordered_bundle, PROMPT, STEPS)
    assert (misordered_bundle / CONFIG_NAME).read_bytes() == config


def test_real_names_order_the_splits_whatever_the_ctx_bins_order(ordered_bundle, tmp_path):
    """Listed part 2 first, the AI Hub-named bundle still runs in split order, in Genie and in q9diff's
    own decoding of the same ctx-bins, both ordering by the `_<i>_of_<n>` names."""
    from q9diff.runners.base import graph_specs
    from q9diff.verify import llm

    bundle = tmp_path / "reversed"
    shutil.copytree(ordered_bundle, bundle)
    config = json.loads((bundle / CONFIG_NAME).read_text())
    bins = config["dialog"]["engine"]["model"]["binary"]["ctx-bins"]
    config["dialog"]["engine"]["model"]["binary"]["ctx-bins"] = bins[2:] + bins[:2]
    (bundle / CONFIG_NAME).write_text(json.dumps(config))
    assert (
        RUNNER.generate(bundle, PROMPT, STEPS).tokens == RUNNER.generate(ordered_bundle, PROMPT, STEPS).tokens
    )
    assert all("part_2_of_2" in b for b in bins[2:])
    specs = [g for i, b in enumerate(bins[2:] + bins[:2]) for g in graph_specs(bundle / b, i)]
    assert [p.prompt.name for p in llm.layout(specs).parts] == [
        "prompt_ar32_cl128_1_of_2",
        "prompt_ar32_cl128_2_of_2",
    ]


def test_kv_starts_zeroed_even_on_a_dirty_heap_and_runs_repeat(ordered_bundle, tmp_path):
    config = (ordered_bundle / CONFIG_NAME).read_bytes()
    first = RUNNER.generate(ordered_bundle, PROMPT, STEPS, debug_dir=tmp_path / "a", dirty_heap=True)
    second = RUNNER.generate(ordered_bundle, PROMPT, STEPS, debug_dir=tmp_path / "b")

    assert len(first.tokens) == STEPS and first.query_status == "SUCCESS"
    assert first.tokens == second.tokens
    assert (ordered_bundle / CONFIG_NAME).read_bytes() == config
    assert any("MALLOC_PERTURB_=255" in n for n in first.notes)
    assert any("patched copy" in n for n in first.notes)
    for run in (first, second):
        past = _dump(run.debug_dir, 0, "past_")
        inputs = {name: a for name, a in past.items() if name.endswith("_in")}
        assert len(inputs) == 8  # past_key/value of 4 layers over the two splits
        assert all(not a.any() for a in inputs.values()), [n for n, a in inputs.items() if a.any()]
        # Greedy: every token is the argmax of the logits Genie's sampler saw.
        assert list(run.tokens) == [int(_logits(run.debug_dir, i)[-1].argmax()) for i in range(STEPS)]


def test_without_neutralisation_a_dirty_heap_reaches_the_kv(ordered_bundle, tmp_path):
    run = RUNNER.generate(ordered_bundle, PROMPT, 2, debug_dir=tmp_path, neutralise_kv=False, dirty_heap=True)
    past = {n: a for n, a in _dump(tmp_path, 0, "past_").items() if n.endswith("_in")}
    assert any("NOT neutralised" in n for n in run.notes)
    assert any(a.any() for a in past.values())


def test_what_genie_feeds_the_model(ordered_bundle, tmp_path):
    """The conventions the module docstring states, read back from Genie's own dump."""
    RUNNER.generate(ordered_bundle, PROMPT, 3, debug_dir=tmp_path)
    n = len(PROMPT) + 1
    prompt = _dump(tmp_path, 0, "")
    assert prompt["input_ids"].ravel().tolist() == [BOS, *PROMPT] + [EOS] * (AR - n)
    mask = prompt["attention_mask"][0, 0]
    expected = np.full_like(mask, -1000.0)
    for r in range(n):
        expected[r, 128 - AR : 128 - AR + r + 1] = 0.0
    np.testing.assert_array_equal(mask, expected)
    angles = np.outer(np.arange(AR) * (np.arange(AR) < n), 10000.0 ** (-np.arange(16) / 16))
    np.testing.assert_allclose(prompt["position_ids_cos"][0, 0], np.cos(angles), atol=1e-5)
    np.testing.assert_allclose(prompt["position_ids_sin"][0, 0], np.sin(angles), atol=1e-5)

    step = _dump(tmp_path, 1, "")
    assert step["input_ids"].ravel().tolist() == [int(_logits(tmp_path, 0)[-1].argmax())]
    assert np.flatnonzero(step["attention_mask"].ravel() == 0).tolist() == [*range(n), 127]
    np.testing.assert_allclose(
        step["position_ids_cos"].ravel(), np.cos(n * 10000.0 ** (-np.arange(16) / 16)), atol=1e-5
    )
    # Left-aligned KV: the prompt's new entry j is past column j of the first token step.
    key_out, key_in = prompt["past_key_0_out"][0], step["past_key_0_in"][0]
    np.testing.assert_array_equal(key_in[:, :, :n], key_out[:, :, :n])


def test_a_broken_ctx_bin_is_a_one_line_error(ordered_bundle, tmp_path):
    bundle = tmp_path / "broken"
    shutil.copytree(ordered_bundle, bundle)
    victim = bundle / "genie" / "part_2_of_2_token.bin"
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 3])
    with pytest.raises(GenieError) as caught:
        RUNNER.generate(bundle, PROMPT, 2)
    assert "\n" not in str(caught.value) and str(bundle) in str(caught.value)
