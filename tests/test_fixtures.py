"""The committed fixtures are reproducible: a variant rebuilt from its own recipe is byte-identical."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from q9diff.recipes import recipe as rcp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VARIANT = FIXTURES / "variants" / "soc_77.recipe.json"


def _qairt_here() -> str | None:
    try:
        from onnxruntime_qnn import build_and_package_info
    except ImportError:
        return None
    return getattr(build_and_package_info, "qnn_version", None)


NO_QNN = importlib.util.find_spec("onnxruntime_qnn") is None


@pytest.mark.skipif(NO_QNN, reason="onnxruntime-qnn not installed")
def test_variant_rebuilds_byte_identical(tmp_path: Path) -> None:
    from q9diff.backends.ort_qnn import OrtQnnBackend, same_version

    if not VARIANT.is_file():
        pytest.fail(f"{VARIANT} missing: run scripts/make_fixtures.py")
    recipe = rcp.load(VARIANT)
    here = _qairt_here()
    if recipe.qairt_version and here and not same_version(recipe.qairt_version, here):
        pytest.skip(f"fixture built with QAIRT {recipe.qairt_version}, this onnxruntime-qnn has {here}")
    backend = OrtQnnBackend()
    if problem := backend.missing():
        pytest.skip(problem)
    outputs = backend.compile(recipe, tmp_path)
    assert [p.name for p in outputs] == [part.output for part in recipe.parts]
    for part, built in zip(recipe.parts, outputs, strict=True):
        committed = VARIANT.parent / part.output
        assert built.read_bytes() == committed.read_bytes(), f"{part.output} differs from the fixture"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temp build dir left behind"


def _fixture_scripts():
    import sys

    scripts = str(FIXTURES.parent / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    import fixture_check
    import fixture_models
    import make_fixtures

    return fixture_check, fixture_models, make_fixtures


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime not installed")
def test_story_calibration_rebuilds_stage_by_stage():
    """The fixtures' own decoding loop gives the float models and calibration feeds stages.json records
    (the stages before the quantized models, whose bytes make_fixtures.py --check compares)."""
    from importlib import metadata

    fc, fm, mf = _fixture_scripts()
    stages = json.loads((FIXTURES / "story" / "models" / "stages.json").read_text())
    here = {p: metadata.version(p) for p in fc.MODEL_PACKAGES}
    if here != stages["made_with"] or fc.cpu_flags() != stages["cpu"]:
        pytest.skip(
            f"made with {stages['made_with']} on a CPU with {stages['cpu']}; here {here}, {fc.cpu_flags()}: "
            "ONNX Runtime's float kernels follow the CPU's vector extensions (make_fixtures.py docstring)"
        )
    cfg, tokens = mf.STORY_CFG, []
    feeds = fm.decoding_calibration(
        cfg, mf.N_PARTS, (mf.PROMPT_AR, mf.TOKEN_AR), mf.calibration_prompts(cfg), mf.CALIBRATION_STEPS,
        pad=cfg.vocab - 3, tokens=tokens,
    )  # fmt: skip
    for (part, ar), calibration in feeds.items():
        want = stages["models"][mf.qwen_model_name(part, ar)]
        assert fc.model_digest(fm.decoder_part(cfg, part, mf.N_PARTS, ar)) == want["float"]
        assert fc.feeds_digest(calibration) == want["calibration"], (part, ar)
    assert fc.digest(json.dumps(t).encode() for t in tokens) == stages["greedy_tokens"]
