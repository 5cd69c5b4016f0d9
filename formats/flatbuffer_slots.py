"""The FlatBuffers of a context binary as slot maps: for each table, every field q9diff reads, (slot, kind).

A FlatBuffer carries no schema, and tables share vtables, so a schema-less walk misreads fields: these maps
are the schema. A kind is a construct scalar (the field's inline value), a fixed-size construct Struct (an
inline struct), or one of STRING, BYTES, TABLE, TABLES or a `Vector` of a scalar (reached through an
offset). `q9diff.read.flatbuf` reads a field by its row here, with every offset bounds-checked.

Evidence: "oracle" means every value was checked against libQnnSystem.so (tests/test_parser.py compares
every field on every fixture).
"""

from typing import NamedTuple

from construct import Float32l, Int8ul, Int32sl, Int32ul, Int64ul

from .context_binary import ApiVersion

STRING = "string"  # a vector of bytes read as UTF-8
BYTES = "bytes"  # a vector of bytes
TABLE = "table"  # one table
TABLES = "tables"  # a vector of tables
STRINGS = "strings"  # a vector of strings, each read as UTF-8


class Vector(NamedTuple):
    """A vector of scalars, each a construct scalar such as Int32ul."""

    of: object


class Field(NamedTuple):
    """One field of a FlatBuffer table: its slot in the vtable and what it holds."""

    slot: int
    kind: object


def slots(table: dict[str, Field]) -> dict[str, int]:
    """A slot map's slots alone, by name (what a FlatBuffer builder asks for)."""
    return {name: field.slot for name, field in table.items()}


# -- the metadata FlatBuffer at 0x28 (mirrors QnnSystemContext_BinaryInfo_t, public QnnSystemContext.h) --

# The metadata root table holds one slot: the versioned BinaryInfo wrapper. Evidence: oracle.
METADATA_ROOT = {"binary_info": Field(0, TABLE)}
# QNN 2.22 (file magic 2 2 0 0): the root at 0x10 holds the BinaryInfo wrapper (slot 0) and the metadata
# size counted from 0x28 (slot 2, u64). Evidence: see context_binary.FILE_MAGIC_2_22.
LEGACY_ROOT = {"binary_info": Field(0, TABLE), "metadata_size": Field(2, Int64ul)}
# Versioned structs are wrapper tables {0: version, 1: union type, 2: body}; newer bodies nest the
# older one in slot 0 (GraphInfo v3 -> v2 -> v1).
WRAPPER = {"version": Field(0, Int32ul), "type": Field(1, Int8ul), "body": Field(2, TABLE)}
# BinaryInfo version 1 (QNN 2.22, 2.25): one slot per field of QnnSystemContext_BinaryInfoV1_t, with the
# hardware-info blob before the context blob version and the u64 blob size last. Evidence: oracle on the
# 2.22 and 2.25 binaries of ../shared/real/binaries (their hardware-info fields, not read by q9diff: version
# 0.0.1, size 24 = the blob's length). No version-2 file has been seen; libQnnSystem's struct says v2 = v1 +
# platform info, so version 2 is read with this map.
BINARY_INFO_V1 = {
    "backend_id": Field(0, Int32ul),
    "build_id": Field(1, STRING),
    "core_api_version": Field(2, ApiVersion),
    "backend_api_version": Field(3, ApiVersion),
    "soc_version": Field(4, STRING),
    "hw_info_blob_version": Field(5, ApiVersion),
    "context_blob_version": Field(6, ApiVersion),
    "hw_info_blob_size": Field(7, Int32ul),
    "hw_info_blob": Field(8, BYTES),
    "num_graphs": Field(12, Int32ul),
    "graphs": Field(13, TABLES),
    "context_blob_size": Field(14, Int64ul),
}
# BinaryInfo version 3 (mirrors QnnSystemContext_BinaryInfoV3_t). Evidence: oracle on every fixture and
# the 2.32 / 2.40 binaries. An absent socModel reads as 0, as the FlatBuffer default and libQnnSystem say
# (QNN 2.32 LiteRT binary: no slot 16, oracle socModel 0). Slots 6, 7 absent so far (G: context tensors);
# 8 an empty string (unknown); 12/13 platformInfo (union type + table: hw devices and cores); 14
# contextMetadataSize (8).
BINARY_INFO_V3 = {
    "backend_id": Field(0, Int32ul),  # 6 = HTP
    "build_id": Field(1, STRING),  # e.g. v2.51.0.260929181845
    "core_api_version": Field(2, ApiVersion),
    "backend_api_version": Field(3, ApiVersion),
    "soc_version": Field(4, STRING),  # empty so far
    "context_blob_version": Field(5, ApiVersion),
    "num_graphs": Field(9, Int32ul),
    "graphs": Field(10, TABLES),  # wrapper tables of GraphInfo
    "context_blob_size": Field(11, Int64ul),
    "context_metadata": Field(15, BYTES),  # context_binary.ContextMetadata
    "soc_model": Field(16, Int32ul),  # QNN_SOC_MODEL_*: 43 SM8550, 57 SM8650, 69 SM8750, 77 QCS9100
}
BINARY_INFO_BY_VERSION = {1: BINARY_INFO_V1, 2: BINARY_INFO_V1, 3: BINARY_INFO_V3}

# GraphInfo: v1 names the graph and its I/O tensors; v2 adds updateable tensors (slot 1) and nests v1 in
# slot 0; v3 nests v2 in slot 0 and adds the graphBlobInfo bytes (slot 2; context_binary.GraphBlobInfo)
# and, I, the start/end op index (slots 3/4). Evidence: oracle.
GRAPH_V1 = {
    "name": Field(0, STRING),
    "num_inputs": Field(1, Int32ul),
    "inputs": Field(2, TABLES),
    "num_outputs": Field(3, Int32ul),
    "outputs": Field(4, TABLES),
}
GRAPH_V2 = {"v1": Field(0, TABLE)}
GRAPH_V3 = {"v2": Field(0, TABLE), "blob_info": Field(2, BYTES)}

# Tensor (16 slots; 8, 10 and 13 unknown). Evidence: oracle.
TENSOR = {
    "id": Field(0, Int32ul),
    "type": Field(1, Int32ul),  # Qnn_TensorType_t; absent = APP_WRITE, 1 = APP_READ
    "data_format": Field(2, Int32ul),
    "data_type": Field(3, Int32ul),  # Qnn_DataType_t: 0x232 FLOAT_32, 0x416 UFIXED_POINT_16, ...
    "encoding_definition": Field(4, Int32ul),
    "quantization_encoding": Field(5, Int32ul),
    "rank": Field(6, Int32ul),
    "dims": Field(7, Vector(Int32ul)),
    "name": Field(9, STRING),
    "quantization_type": Field(14, Int8ul),  # the quantization union's type
    "quantization": Field(15, TABLE),
}
SCALE_OFFSET = {"scale": Field(0, Float32l), "offset": Field(1, Int32sl)}
QUANT_SCALE_OFFSET = 1  # union type of the scale/offset table
# Qnn_QuantizationEncoding_t (public QnnTypes.h): 0 scale/offset, 2 bit-width scale/offset carry one
# scale and offset; an unquantized tensor says UNDEFINED (0x7FFFFFFF). Evidence: oracle, fp32 I/O.
ENCODING_SCALE_OFFSET = 0
DEFINITION_UNDEFINED = 0x7FFFFFFF  # slot 4 of an unquantized (float) tensor
SCALAR_ENCODINGS = (0, 2)

# -- the record directory FlatBuffer at blob + 0x20 (blob 4.0.x). Evidence: fixtures (records tile the blob).

# first_offset and total_size are not read (fixtures/variants/graphs_2.bin: 4096, and the blob's size).
DIRECTORY = {"first_offset": Field(0, Int64ul), "total_size": Field(1, Int64ul), "records": Field(2, TABLES)}
# Slot 3 an unused string.
RECORD = {
    "name": Field(0, STRING),  # ROOT, PICKLE/<256+i>/<graph name>, WEIGHTS/0
    "size": Field(1, Int64ul),
    "align": Field(2, Int64ul),
    "offset": Field(4, Int64ul),  # from the start of the blob
}
