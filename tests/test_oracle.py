"""The oracle reads a binary we just compiled with known settings, and says so in Qualcomm's words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

oq = pytest.importorskip("onnxruntime_qnn")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize  # noqa: E402
from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config  # noqa: E402

from q9diff.oracle.reader import (  # noqa: E402
    DATATYPE_NAMES,
    BinaryInfo,
    OracleError,
    OracleUnavailable,
    find_library,
    from_dict,
    read_binary_info,
    read_binary_info_isolated,
    to_dict,
)

SETTINGS = {
    "backend_type": "htp",
    "soc_model": "77",
    "htp_arch": "73",
    "vtcm_mb": "8",
    "htp_graph_finalization_optimization_mode": "3",
}


class _Calibration(CalibrationDataReader):
    def __init__(self, rng: np.random.Generator) -> None:
        self._batches = iter(
            [
                {
                    "x": rng.standard_normal((1, 64)).astype(np.float32),
                    "z": rng.standard_normal((1, 64)).astype(np.float32),
                }
                for _ in range(4)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _compile(workdir: Path) -> Path:
    """y = Relu(x @ W + z), w8a16, compiled for QCS9100 (soc_model 77, arch 73, 8 MB VTCM, O3)."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "W")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Add", ["h", "z"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 64]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    float_path, quant_path = workdir / "f.onnx", workdir / "q.onnx"
    onnx.save(model, float_path)
    config = get_qnn_qdq_config(
        model, _Calibration(rng), activation_type=QuantType.QUInt16, weight_type=QuantType.QUInt8
    )
    quantize(str(float_path), str(quant_path), config)

    ort.register_execution_provider_library("QNNExecutionProvider", oq.get_library_path())
    try:
        devices = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"]
        npus = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.NPU] or devices
        options = ort.SessionOptions()
        options.add_session_config_entry("ep.context_enable", "1")
        options.add_session_config_entry("ep.context_file_path", str(workdir / "q_ctx.onnx"))
        options.add_session_config_entry("ep.context_embed_mode", "0")
        options.add_provider_for_devices(npus[:1], SETTINGS)
        ort.InferenceSession(str(quant_path), options)
    finally:
        ort.unregister_execution_provider_library("QNNExecutionProvider")
    (binary,) = workdir.glob("*.bin")
    return binary


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(tmp_path_factory.mktemp("oracle"))


def test_oracle_reports_the_settings_the_binary_was_compiled_with(binary: Path) -> None:
    info = read_binary_info(binary)

    assert info.soc_model == 77
    assert info.dsp_arch == 73
    assert info.build_id.startswith("v2.51")
    assert info.backend_id == 6
    assert info.context_blob_size == binary.stat().st_size - 0x1000
    (graph,) = info.graphs
    assert graph.vtcm_size == 8 * 1024 * 1024
    assert graph.optimization_level == 3
    assert [(t.name, t.dims, t.tensor_type) for t in graph.inputs] == [
        ("x", (1, 64), "APP_WRITE"),
        ("z", (1, 64), "APP_WRITE"),
    ]
    assert [(t.name, t.dims, t.tensor_type) for t in graph.outputs] == [("y", (1, 64), "APP_READ")]
    assert {t.dtype for t in graph.inputs + graph.outputs} == {"UFIXED_POINT_16"}
    assert all(t.scale and t.scale > 0 and t.offset is not None for t in graph.inputs)


def test_isolated_reader_and_cli_agree_with_the_in_process_reader(binary: Path) -> None:
    info = read_binary_info(binary)

    assert read_binary_info_isolated(binary) == info
    assert from_dict(json.loads(json.dumps(to_dict(info)))) == info
    printed = subprocess.run(
        [sys.executable, "-m", "q9diff.oracle", str(binary)], capture_output=True, text=True, check=True
    )
    assert from_dict(json.loads(printed.stdout)) == info
    assert isinstance(info, BinaryInfo)


def test_a_file_that_is_not_a_context_binary_is_an_oracle_error(tmp_path: Path) -> None:
    not_binary = tmp_path / "notes.txt"
    not_binary.write_bytes(b"not a context binary\n" * 100)

    with pytest.raises(OracleError, match=r"notes\.txt: libQnnSystem could not read it \(error \d+\)"):
        read_binary_info_isolated(not_binary)


def test_datatype_names_follow_qnn_types_without_the_prefix() -> None:
    assert DATATYPE_NAMES[0x0232] == "FLOAT_32"
    assert DATATYPE_NAMES[0x0416] == "UFIXED_POINT_16"
    assert DATATYPE_NAMES[0x0032] == "INT_32"
    assert not any(name.startswith("QNN_DATATYPE_") for name in DATATYPE_NAMES.values())


def test_find_library_prefers_the_explicit_path_and_refuses_a_missing_one(tmp_path: Path) -> None:
    assert find_library().name == "libQnnSystem.so"
    with pytest.raises(OracleUnavailable):
        find_library(tmp_path / "libQnnSystem.so")
