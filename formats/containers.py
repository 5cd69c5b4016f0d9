"""The fixed parts of the files that carry context binaries: a LiteRT `.tflite` and its dispatch op's payload.

An ONNX Runtime EPContext model is a protobuf read by the onnx package (q9diff.read.openers); nothing of
it is declared here. The ExecuTorch `.pte` (its header, Program slots, the QnnContextCustomProtocol before
each QNN context binary and the compile spec) has a module of its own: `pte`.
"""

from construct import (
    Array,
    Bytes,
    BytesInteger,
    Check,
    Computed,
    Int8ul,
    Int32ul,
    Pass,
    Pointer,
    Struct,
    Switch,
    this,
)

from .flatbuffer_slots import BYTES, STRING, TABLES, Field

# -- LiteRT .tflite ---------------------------------------------------------------------------------

# TFLite schema (tensorflow/lite/schema/schema.fbs, public): Model {1 operator_codes, 2 subgraphs},
# OperatorCode {1 custom_code}, SubGraph {3 operators}, Operator {0 opcode_index, 5 custom_options}.
TFLITE_IDENT = b"TFL3"
TFLITE_IDENT_OFFSET = 4  # after the root offset
TFLITE_MODEL = {"operator_codes": Field(1, TABLES), "subgraphs": Field(2, TABLES)}
TFLITE_OPCODE = {"custom_code": Field(1, STRING)}
TFLITE_SUBGRAPH = {"operators": Field(3, TABLES)}
TFLITE_OPERATOR = {"opcode_index": Field(0, Int32ul), "custom_options": Field(5, BYTES)}
# LiteRT's dispatch op: custom_options is a FlexBuffer map {bytecode_offset, bytecode_size, name}, the
# offset counted from the start of the model file (public litert/core/dispatch_op_schema.cc). Evidence:
# ../shared/real/binaries/simple_add_op*.tflite (bytecode at 1184, 45,056 and 29,368 bytes, name
# qnn_partition_0; libQnnSystem reads the bytes found there).
DISPATCH_OP = "DISPATCH_OP"
DISPATCH_KEYS = ("bytecode_offset", "bytecode_size", "name")
DISPATCH_MAX_ENTRIES = 64
# A key is read as at most this many bytes, its NUL found in them by one search: LiteRT's keys are words
# (`bytecode_offset`). construct's NullTerminated reads a byte per call and joins them one by one, so 64
# keys pointing at a 190 KB run with no NUL took 67 s to refuse.
FLEX_MAX_KEY = 256

# A FlexBuffer map (the FlexBuffers format, public), read from its end: the last byte is the root's byte
# width, the one before it the root's packed type (type << 2 | log2 of the map's element width), before
# them the root, a uint counting back to the map's values. Before the values: the offset back to the keys
# vector, the keys' byte width and the entry count, each one element wide; after the values, one packed
# type byte per entry. A key is an offset back to a NUL-ended string; a UINT value is inline, a STRING
# value an offset back to its bytes, which its length precedes. Positions here are negative: counted from
# the end of the payload, so every Pointer reads inside it (a build writes into a buffer of its size).
FLEX_MAP, FLEX_UINT, FLEX_STRING = 9, 2, 5
WIDTHS = (1, 2, 4, 8)


def _uint(width) -> BytesInteger:
    """An unsigned little-endian integer `width` bytes wide (a number or a context function)."""
    return BytesInteger(width, swapped=True)


FlexString = Struct(
    "back" / _uint(this._.width),
    "start" / Computed(lambda this: this._.value_at - this.back),
    "length_width" / Computed(lambda this: 1 << (this._.type & 3)),
    "length" / Pointer(lambda this: this.start - this.length_width, _uint(this.length_width)),
    Check(lambda this: this.start + this.length <= 0),
    "text" / Pointer(this.start, Bytes(this.length)),
)
FlexEntry = Struct(
    "key_at" / Computed(lambda this: this._.keys_at + this._index * this._.key_width),
    Check(this.key_at < 0),
    "key_back" / Pointer(this.key_at, _uint(this._.key_width)),
    "key_start" / Computed(lambda this: this.key_at - this.key_back),
    Check(this.key_start < 0),
    "key_bytes" / Pointer(this.key_start, Bytes(lambda this: min(FLEX_MAX_KEY + 1, -this.key_start))),
    Check(lambda this: b"\0" in this.key_bytes),
    "key" / Computed(lambda this: this.key_bytes[: this.key_bytes.index(b"\0")]),
    "type_at" / Computed(lambda this: this._.values_at + this._.count * this._.width + this._index),
    Check(this.type_at < 0),
    "type" / Pointer(this.type_at, Int8ul),
    "width" / Computed(this._.width),
    "value_at" / Computed(lambda this: this._.values_at + this._index * this._.width),
    Check(lambda this: this.value_at + this.width <= 0),
    "value"
    / Pointer(
        this.value_at,
        Switch(lambda this: this.type >> 2, {FLEX_UINT: _uint(this.width), FLEX_STRING: FlexString}, Pass),
    ),
)
FlexMap = Struct(
    "root_width" / Pointer(-1, Int8ul),
    Check(lambda this: this.root_width in WIDTHS),
    "root_type" / Pointer(-2, Int8ul),
    Check(this.root_type >> 2 == FLEX_MAP),
    "width" / Computed(1 << (this.root_type & 3)),
    "root_at" / Computed(-2 - this.root_width),
    "root" / Pointer(this.root_at, _uint(this.root_width)),
    "values_at" / Computed(this.root_at - this.root),
    "count" / Pointer(this.values_at - this.width, _uint(this.width)),
    Check(this.count <= DISPATCH_MAX_ENTRIES),
    "key_width" / Pointer(this.values_at - 2 * this.width, _uint(this.width)),
    Check(lambda this: this.key_width in WIDTHS),
    "keys_back" / Pointer(this.values_at - 3 * this.width, _uint(this.width)),
    "keys_at" / Computed(this.values_at - 3 * this.width - this.keys_back),
    "keys_length" / Pointer(this.keys_at - this.key_width, _uint(this.key_width)),
    "entries" / Array(this.count, FlexEntry),
)
