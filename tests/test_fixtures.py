"""The committed fixtures are what their recipes say: rebuilding one gives the same bytes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from q9diff import recipe
from q9diff.backends.ort_qnn import OrtQnnBackend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_qnn") is None, reason="onnxruntime-qnn is not installed"
)


@pytest.mark.parametrize("name", ["vtcm_2mb"])
def test_variant_rebuilds_byte_identical(name: str, tmp_path: Path) -> None:
    committed = recipe.load(FIXTURES / "variants" / f"{name}.recipe.json")
    backend = OrtQnnBackend()
    if backend.missing():
        pytest.skip(backend.missing())
    [built] = backend.compile(committed, tmp_path)
    assert built == tmp_path / f"{name}.bin"
    assert built.read_bytes() == (FIXTURES / "variants" / f"{name}.bin").read_bytes()
