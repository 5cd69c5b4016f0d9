"""A DLC (Qualcomm's Deep Learning Container): a ZIP64 archive of stored records, and the FlatBuffers in it.

Two kinds are written by onnxruntime-qnn 2.7.0 (QAIRT 2.51): a graph DLC (the QNN EP's IR dump) holds
`model` (NETD), `model.params` (NETP), `model.params.bin` (raw weights) and two metadata JSON records; a
context DLC (multi-SoC EPContext build, named `*_qnn.bin`) holds one `htp.cache.<soc>.<n>` record per
SoC, each an ordinary context binary, a shared-weights record with its metadata, and the metadata JSON.

Evidence: fixtures/dlc (scripts/make_dlc_fixtures.py), walked record by record with no gap; the ZIP
records are PKWARE's APPNOTE (public). The FlatBuffer field numbers are those of Qualcomm's QAIRT fork of
Netron's open-source DLC reader (facts only), checked against the fixtures and, for graph names, I/O
tensors and encodings, against libQnnSystem's DLC reader (q9diff.oracle).
"""

from construct import (
    Bytes,
    Check,
    Const,
    Float32l,
    Float64l,
    GreedyBytes,
    Int8ul,
    Int16ul,
    Int32sl,
    Int32ul,
    Int64sl,
    Int64ul,
    Struct,
    this,
)

from .flatbuffer_slots import BYTES, STRING, STRINGS, TABLE, TABLES, Field, Vector

# -- the ZIP records (APPNOTE 4.3.7, 4.3.12, 4.3.14-16, 4.5.3) ---------------------------------------

STORED = 0  # every record is stored: the data is the record itself
ZIP64_SIZE = 0xFFFFFFFF  # a 32-bit size or offset that says "see the zip64 extra"
ZIP64_EXTRA_ID = 0x0001

LocalHeader = Struct(
    "signature" / Const(b"PK\x03\x04"),
    "version_needed" / Int16ul,
    "flags" / Int16ul,
    "method" / Int16ul,
    Check(this.method == STORED),
    "time" / Int16ul,  # 0 in every DLC seen
    "date" / Int16ul,  # 0 in every DLC seen
    "crc32" / Int32ul,  # 0 in every DLC seen: the CRC is not written, so the data is read raw
    "compressed_size" / Int32ul,
    "size" / Int32ul,
    "name_length" / Int16ul,
    "extra_length" / Int16ul,
    "name" / Bytes(this.name_length),
    "extra" / Bytes(this.extra_length),
)

# The zip64 extra of a local header: the real sizes, then (beyond APPNOTE, measured) a u32 counting the
# zero bytes after the next word, and the record's alignment (8 for graph and metadata records, 4096 for
# htp.* records), then those zeros, so the data starts aligned.
LocalZip64 = Struct(
    "id" / Const(ZIP64_EXTRA_ID, Int16ul),
    "length" / Int16ul,
    "size" / Int64ul,
    "compressed_size" / Int64ul,
    "offset" / Int64ul,  # 0 in a local header
    "disk" / Int32ul,
    "rest" / GreedyBytes,  # the pad count, the alignment, the zeros
)

CentralHeader = Struct(
    "signature" / Const(b"PK\x01\x02"),
    "version_made" / Int16ul,
    "version_needed" / Int16ul,
    "flags" / Int16ul,
    "method" / Int16ul,
    "time" / Int16ul,
    "date" / Int16ul,
    "crc32" / Int32ul,
    "compressed_size" / Int32ul,
    "size" / Int32ul,
    "name_length" / Int16ul,
    "extra_length" / Int16ul,
    "comment_length" / Int16ul,
    "disk" / Int16ul,
    "internal_attributes" / Int16ul,
    "external_attributes" / Int32ul,
    "local_offset" / Int32ul,
    "name" / Bytes(this.name_length),
    "extra" / Bytes(this.extra_length),
    "comment" / Bytes(this.comment_length),
)

# The zip64 extra of a central header: sizes and the local header's offset, then zeros (40 bytes in all).
CentralZip64 = Struct(
    "id" / Const(ZIP64_EXTRA_ID, Int16ul),
    "length" / Int16ul,
    "size" / Int64ul,
    "compressed_size" / Int64ul,
    "local_offset" / Int64ul,
    "disk" / Int32ul,
    "rest" / GreedyBytes,
)

Zip64End = Struct(
    "signature" / Const(b"PK\x06\x06"),
    "record_size" / Int64ul,  # the bytes after this field: 44
    "version_made" / Int16ul,
    "version_needed" / Int16ul,
    "disk" / Int32ul,
    "directory_disk" / Int32ul,
    "entries_on_disk" / Int64ul,
    "entries" / Int64ul,
    "directory_size" / Int64ul,
    "directory_offset" / Int64ul,
)
ZIP64_END_SIZE = 56

Zip64Locator = Struct(
    "signature" / Const(b"PK\x06\x07"),
    "disk" / Int32ul,
    "end_offset" / Int64ul,
    "disks" / Int32ul,
)
ZIP64_LOCATOR_SIZE = 20

EndOfDirectory = Struct(
    "signature" / Const(b"PK\x05\x06"),
    "disk" / Int16ul,
    "directory_disk" / Int16ul,
    "entries_on_disk" / Int16ul,
    "entries" / Int16ul,
    "directory_size" / Int32ul,
    "directory_offset" / Int32ul,  # 0xFFFFFFFF: see the zip64 end record
    "comment_length" / Int16ul,
    "comment" / Bytes(this.comment_length),
)
END_SIZE = 22  # without a comment (DLCs have none)
MAX_RECORDS = 4096  # a DLC holds a handful; more is a hostile directory

# -- the records' names -----------------------------------------------------------------------------

MODEL = "model"  # NETD: the graph
PARAMS = "model.params"  # NETP: each static tensor's place in model.params.bin
PARAMS_BIN = "model.params.bin"  # raw weights
METADATA_PREFIX = "dlc.metadata"  # dlc.metadata2.3.0 (JSON), dlc.metadata.history.2.3.0 (JSON)
CACHE_PREFIX = "htp.cache."  # a context binary per SoC: htp.cache.<soc name>.<n>
CACHE_PREFIX_2_49 = "backend.metadata"  # the same, as QAIRT 2.49 names it: backend.metadata<n>
SHARED_WEIGHTS_PREFIX = "htp.shared.weights."
SHARED_METADATA_PREFIX = "htp.metadata.shared_weights."

# `model` and `model.params` start with 8 bytes before their FlatBuffer: a magic word and the DLC format
# version (4.1 in every file seen).
RecordPrefix = Struct(
    "magic" / Const(b"\xd5\x0a"),
    "major" / Int16ul,
    "minor" / Int16ul,
    "reserved" / Int16ul,
)
PREFIX_SIZE = 8
MODEL_IDENT = b"NETD"
PARAMS_IDENT = b"NETP"

# -- the NETD FlatBuffer (slots: Qualcomm's Netron fork, dlc.v4; checked on fixtures/dlc) --------------

NETD_MODEL = {"graphs": Field(0, TABLES)}
NETD_GRAPH = {"name": Field(0, STRING), "nodes": Field(1, TABLES), "tensors": Field(2, TABLES)}
NODE = {
    "name": Field(0, STRING),  # generated by the converter: counters shift when an op is added
    "type": Field(1, STRING),  # the QNN op type: FullyConnected, ElementWiseNeuron, ...
    "inputs": Field(2, STRINGS),
    "outputs": Field(3, STRINGS),
    "attributes": Field(4, TABLES),
}
ATTRIBUTE = {
    "name": Field(0, STRING),
    "kind": Field(1, Int32sl),  # 0 a scalar value, 1 a tensor
    "value": Field(3, TABLE),
    "tensor": Field(4, TABLE),
}
SCALAR = {
    "kind": Field(0, Int32ul),
    "int": Field(1, Int64sl),
    "float": Field(2, Float64l),
    "string": Field(3, STRING),
}
TENSOR = {
    "id": Field(0, Int32ul),
    "name": Field(1, STRING),
    "type": Field(2, Int32sl),  # Qnn_TensorType_t: 0 APP_WRITE, 1 APP_READ, 3 NATIVE, 4 STATIC
    "dims": Field(3, Vector(Int32ul)),
    "quantization": Field(5, TABLE),
    "data_type": Field(6, Int32ul),  # Qnn_DataType_t: 0x232 FLOAT_32, 0x408 UFIXED_POINT_8, ...
    "output_data_type": Field(7, Int32ul),
}
QUANTIZATION = {
    "encoding": Field(0, Int32ul),  # Qnn_QuantizationEncoding_t: 0 scale/offset, 0x7FFFFFFF undefined
    "overridden": Field(1, Int8ul),
    "scale_offset": Field(2, TABLE),
    "axis_scale_offset": Field(3, TABLE),
}
SCALE_OFFSET = {
    "bitwidth": Field(0, Int32ul),
    "min": Field(1, Float32l),
    "max": Field(2, Float32l),
    "scale": Field(3, Float32l),
    "offset": Field(4, Int32sl),
    "symmetric": Field(5, Int8ul),
}
AXIS_SCALE_OFFSET = {"axis": Field(0, Int32sl), "encodings": Field(1, TABLES)}
ENCODING_UNDEFINED = 0x7FFFFFFF

# -- the NETP FlatBuffer ------------------------------------------------------------------------------

NETP_MODEL = {"graphs": Field(0, TABLES)}
NETP_GRAPH = {"name": Field(0, STRING), "tensors": Field(1, TABLES), "nodes": Field(2, TABLES)}
NODE_PARAMETERS = {"tensors": Field(0, TABLES)}  # an op's tensor attributes, in op order
TENSOR_DATA = {"name": Field(0, STRING), "bytes": Field(1, BYTES), "position": Field(3, TABLE)}
DATA_POSITION = {"offset": Field(0, Int64ul), "size": Field(1, Int64ul)}  # into model.params.bin
