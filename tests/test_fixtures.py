"""The committed fixtures are reproducible: a variant rebuilt from its own recipe is byte-identical."""

from __future__ import annotations

import importlib.util
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
