"""The EPContext model around a context binary, as the bytes of an ONNX file, without the onnx package.

ONNX Runtime loads a context binary it did not compile itself through a one-node model: an `EPContext`
node named after the QNN graph, pointing at the binary (`embed_mode=0`). The worker writes one per
graph. `import onnx` costs the worker ~1.3 s of CPU (its ml_dtypes dependency, measured with onnx 1.23),
more than loading the graphs, for a model of a few hundred bytes; so the protobuf is written here, field
by field in field-number order as protobuf serializes it. tests/test_verify_wrapper.py checks the bytes
are those of onnx.helper's make_model + onnx.save for the fixtures' graphs.

Field numbers from onnx/onnx-ml.proto (proto2): ModelProto ir_version 1, graph 7, opset_import 8;
OperatorSetIdProto domain 1, version 2; GraphProto node 1, name 2, input 11, output 12; NodeProto input 1,
output 2, name 3, op_type 4, attribute 5, domain 7; AttributeProto name 1, i 3, s 4, type 20 (INT 2,
STRING 3); ValueInfoProto name 1, type 2; TypeProto tensor_type 1; TypeProto.Tensor elem_type 1, shape 2;
TensorShapeProto dim 1; Dimension dim_value 1.
"""

from __future__ import annotations

from q9diff.runners.base import GraphSpec, TensorSpec

# numpy dtype name -> ONNX TensorProto.DataType
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
              "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}  # fmt: skip
_INT, _STRING = 2, 3  # AttributeProto.AttributeType


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 as protobuf writes it: ten bytes, two's complement
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _len(field: int, data: bytes | str) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _value_info(t: TensorSpec) -> bytes:
    dims = b"".join(_len(1, _int(1, d)) for d in t.shape)
    tensor = _int(1, ONNX_TYPES[t.dtype]) + _len(2, dims)  # the shape is written even with no dims
    return _len(1, t.name) + _len(2, _len(1, tensor))


def _attribute(name: str, value: int | str) -> bytes:
    if isinstance(value, int):
        return _len(1, name) + _int(3, value) + _int(20, _INT)
    return _len(1, name) + _len(4, value) + _int(20, _STRING)


def epcontext_model(spec: GraphSpec, link: str, main: bool, source: str) -> bytes:
    """The model whose one EPContext node runs graph `spec` of the binary at `link` (relative to the
    model's folder); `main`: the node that loads the binary's context (the first graph of a binary)."""
    attributes = {"embed_mode": 0, "ep_cache_context": link, "main_context": int(main), "source": source}
    node = (
        b"".join(_len(1, t.name) for t in spec.inputs)
        + b"".join(_len(2, t.name) for t in spec.outputs)
        + _len(3, spec.name)
        + _len(4, "EPContext")
        + b"".join(_len(5, _attribute(k, v)) for k, v in sorted(attributes.items()))
        + _len(7, "com.microsoft")
    )
    graph = (
        _len(1, node)
        + _len(2, "q9diff_run")
        + b"".join(_len(11, _value_info(t)) for t in spec.inputs)
        + b"".join(_len(12, _value_info(t)) for t in spec.outputs)
    )
    opsets = _len(8, _len(1, "") + _int(2, 17)) + _len(8, _len(1, "com.microsoft") + _int(2, 1))
    return _int(1, 9) + _len(7, graph) + opsets
