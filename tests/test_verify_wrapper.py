"""The EPContext model the run worker writes around each graph (q9diff.runners.wrapper) is, byte for byte,
the model onnx.helper builds and onnx.save writes for it: for every graph of every fixture binary."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from q9diff.errors import Q9Error
from q9diff.runners.base import graph_specs
from q9diff.runners.wrapper import ONNX_TYPES, epcontext_model

onnx = pytest.importorskip("onnx", reason="onnx is the oracle of these bytes")
from onnx import helper  # noqa: E402


def onnx_wrapper(spec, link: str, main: bool, tmp_path) -> bytes:
    """The model as the worker wrote it with the onnx package before (helper, then onnx.save)."""

    def vi(t):
        return helper.make_tensor_value_info(t.name, ONNX_TYPES[t.dtype], list(t.shape))

    node = helper.make_node(
        "EPContext",
        [t.name for t in spec.inputs],
        [t.name for t in spec.outputs],
        name=spec.name,
        domain="com.microsoft",
        embed_mode=0,
        ep_cache_context=link,
        main_context=int(main),
        source="QNNExecutionProvider",
    )
    graph = helper.make_graph(
        [node], "q9diff_run", [vi(t) for t in spec.inputs], [vi(t) for t in spec.outputs]
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 9
    path = tmp_path / "wrapper.onnx"
    onnx.save(model, str(path))
    return path.read_bytes()


def fixture_graphs():
    for binary in sorted(FIXTURES.rglob("*.bin")):
        try:
            specs = graph_specs(binary)
        except Q9Error:  # a DLC's cache or another file that is no plain context binary
            continue
        yield from ((binary, i, s) for i, s in enumerate(specs))


def test_the_wrapper_is_the_model_onnx_writes(tmp_path):
    graphs = list(fixture_graphs())
    assert len(graphs) >= 40
    dtypes = set()
    for binary, i, spec in graphs:
        link = f"b{i % 3}.bin"
        mine = epcontext_model(spec, link, i == 0, "QNNExecutionProvider")
        assert mine == onnx_wrapper(spec, link, i == 0, tmp_path), f"{binary} graph {spec.name}"
        dtypes |= {t.dtype for t in spec.inputs + spec.outputs}
    assert {"float32", "int32", "uint16"} <= dtypes  # float, integer and quantized I/O all covered
