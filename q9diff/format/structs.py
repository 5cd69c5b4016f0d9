"""Byte layout of a QNN HTP context binary (QNN 2.22 - QAIRT 2.51), as record layouts and slot maps.

Nothing here runs logic but `Layout`, a named view of `struct`; `q9diff.format.binary` walks the file with
these definitions. (They were construct Structs: importing construct cost every command ~25 ms of start-up,
for five fixed-size records.) Every fact names
its evidence: "oracle" means the value was checked against libQnnSystem.so (tests/test_parser.py
compares every field on every fixture), "fixtures" means byte walks over all of fixtures/ left
no gap and no overlap.
"""

import struct
from types import SimpleNamespace


class Layout:
    """A fixed-size record: (name, struct code) fields in order, a name of None for padding, little-
    endian unless `order` says otherwise; `parse` reads the first `size` bytes into named attributes."""

    def __init__(self, *fields: tuple[str | None, str], order: str = "<") -> None:
        self.names = tuple(name for name, _ in fields if name)
        self._struct = struct.Struct(order + "".join(code for _, code in fields))
        self.size = self._struct.size

    def sizeof(self) -> int:
        return self.size

    def parse(self, data: bytes) -> SimpleNamespace:
        return SimpleNamespace(**dict(zip(self.names, self._struct.unpack_from(data))))


# File header, 40 bytes. Evidence: every fixture; sizes equal the oracle's contextBlobSize.
FILE_MAGIC = b"\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x01"
FileHeader = Layout(
    ("magic", "16s"),  # FILE_MAGIC: four big-endian u32 2, 3, 0, 1 in every QAIRT 2.47-2.51 file
    ("metadata_size", "Q"),  # FlatBuffer of the BinaryInfo, starts at 0x28
    ("blob_offset", "Q"),  # 0x1000 in every file seen
    ("blob_size", "Q"),  # == oracle contextBlobSize
)
FILE_HEADER_SIZE = FileHeader.sizeof()
METADATA_OFFSET = 0x28

# QNN 2.22 files (context blob 3.1.x) start with big-endian u32 2, 2, 0, 0 and no size words: the
# metadata FlatBuffer follows at 0x10; its root table holds the BinaryInfo wrapper (slot 0) and the
# metadata size counted from 0x28 (slot 2, u64); a u64 blob size follows the metadata, then the blob,
# which ends the file. Evidence: the 2.22 binaries in ../shared/real/binaries (add_add_1_quant ...bin and
# both contexts of qnn_multi_ctx_embed.onnx): 0x28 + slot 2 = the blob-size word, whose value equals the
# oracle's contextBlobSize, and the blob ends exactly at the end of the file.
FILE_MAGIC_2_22 = b"\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"
LEGACY_FILE_HEADER_SIZE = 16
LEGACY_METADATA_BASE = 0x28
LEGACY_ROOT_SLOTS = {"binary_info": 0, "metadata_size": 2}

# Context blob header, 32 bytes; version == oracle contextBlobVersion. Evidence: fixtures.
BlobHeader = Layout(
    ("major", "Q"),
    ("minor", "Q"),
    ("patch", "Q"),
    ("directory_size", "Q"),  # FlatBuffer of the record directory at blob + 0x20
)
BLOB_HEADER_SIZE = BlobHeader.sizeof()
# Blob header word 3 means different things by blob version (evidence: the real binaries and fixtures):
# - 4.0.x (QAIRT 2.48-2.51): size of the record directory FlatBuffer at +0x20;
# - 3.3.x (QNN 2.40 = 3.3.3, QAIRT 2.47 = 3.3.4): 0x1000, the offset of the first pickle; the HTP context
#   FlatBuffer sits at +0x20, padded to that page; no directory;
# - 3.1.x / 3.2.x (QNN 2.22, 2.25, 2.32-2.34): the first pickle starts at +8 + word 3, right after the
#   HTP context FlatBuffer at +0x20; no directory, no page padding.
LEGACY_BLOB_VERSION = (3, 3)
PAGED_BLOB_MAJOR_MINOR = ((3, 3),)
PACKED_BLOB_MAJOR_MINOR = ((3, 1), (3, 2))
PACKED_FIRST_PICKLE_BIAS = 8

# Per-graph HTP blob info inside metadata GraphInfo v3 slot 2 (raw 112 bytes). Layout from the
# public QnnHtpSystemContext.h field order; every value equals the oracle's.
GraphBlobInfo = Layout(
    ("version1", "I"),
    (None, "4x"),
    ("spill_fill_buffer_size", "Q"),
    ("vtcm_size", "I"),  # bytes
    ("optimization_level", "I"),
    ("htp_dlbc", "B"),
    (None, "7x"),
    ("num_hvx_threads", "Q"),
    ("version2", "I"),
    (None, "4x"),
    ("native_k_channel_size", "Q"),
    ("native_v_channel_size", "Q"),
    ("is_safe_share_io", "I"),
    (None, "4x"),
    ("io_tensor_size", "Q"),
    ("op_data_size", "Q"),
    ("const_size", "Q"),
    ("ddr_tensor_size", "Q"),
    ("shared_weights_size", "Q"),
)
GRAPH_BLOB_INFO_SIZE = GraphBlobInfo.sizeof()  # 112
# QNN 2.32-2.34 write only the first record (40 bytes, version 1): the v2 fields are not recorded.
# Evidence: the QNN 2.32 binary inside simple_add_op_qc_v75_precompiled.tflite (oracle: VTCM, O, DLBC,
# HVX threads, spill/fill given; ioTensorSize .. sharedWeightsSize absent).
GRAPH_BLOB_INFO_V1_SIZE = 40
GRAPH_BLOB_INFO_V1_FIELDS = (
    "spill_fill_buffer_size",
    "vtcm_size",
    "optimization_level",
    "htp_dlbc",
    "num_hvx_threads",
)

ApiVersion = Layout(("major", "I"), ("minor", "I"), ("patch", "I"))
ContextMetadata = Layout(("version", "I"), ("dsp_arch", "I"))  # metadata slot 15

# The metadata root table holds one slot: the versioned BinaryInfo wrapper. Evidence: oracle.
METADATA_ROOT_SLOT = 0
# BinaryInfo version 1 (QNN 2.22, 2.25): one slot per field of QnnSystemContext_BinaryInfoV1_t, with the
# hardware-info blob before the context blob version and the u64 blob size last. Evidence: oracle on the
# 2.22 and 2.25 binaries of ../shared/real/binaries. No version-2 file has been seen; libQnnSystem's
# struct says v2 = v1 + platform info, so version 2 is read with this map.
BINARY_INFO_V1_SLOTS = {
    "backend_id": 0,
    "build_id": 1,
    "core_api_version": 2,
    "backend_api_version": 3,
    "soc_version": 4,
    "hw_info_blob_version": 5,
    "context_blob_version": 6,
    "hw_info_blob_size": 7,
    "hw_info_blob": 8,
    "num_graphs": 12,
    "graphs": 13,
    "context_blob_size": 14,
}
# FlatBuffer slot maps of the metadata, BinaryInfo version 3 (mirrors QnnSystemContext_BinaryInfoV3_t).
# Evidence: oracle on every fixture and the 2.32 / 2.40 binaries. An absent socModel reads as 0, as the
# FlatBuffer default and libQnnSystem say (QNN 2.32 LiteRT binary: no slot 16, oracle socModel 0).
BINARY_INFO_SLOTS = {
    "backend_id": 0,
    "build_id": 1,
    "core_api_version": 2,
    "backend_api_version": 3,
    "soc_version": 4,
    "context_blob_version": 5,
    "num_graphs": 9,
    "graphs": 10,
    "context_blob_size": 11,
    "context_metadata": 15,
    "soc_model": 16,
}
# Versioned structs are wrapper tables {0: version, 1: union type, 2: body}; newer bodies nest the
# older one in slot 0 (GraphInfo v3 -> v2 -> v1).
WRAPPER_SLOTS = {"version": 0, "type": 1, "body": 2}
GRAPH_V1_SLOTS = {"name": 0, "num_inputs": 1, "inputs": 2, "num_outputs": 3, "outputs": 4}
GRAPH_V3_SLOTS = {"v2": 0, "blob_info": 2}
GRAPH_V2_SLOTS = {"v1": 0}
TENSOR_SLOTS = {
    "id": 0,
    "type": 1,
    "data_format": 2,
    "data_type": 3,
    "encoding_definition": 4,
    "quantization_encoding": 5,
    "rank": 6,
    "dims": 7,
    "name": 9,
    "quantization_type": 14,
    "quantization": 15,
}
SCALE_OFFSET_SLOTS = {"scale": 0, "offset": 1}
QUANT_SCALE_OFFSET = 1  # union type of the scale/offset table
# Qnn_QuantizationEncoding_t (public QnnTypes.h): 0 scale/offset, 2 bit-width scale/offset carry one
# scale and offset; an unquantized tensor says UNDEFINED (0x7FFFFFFF). Evidence: oracle, fp32 I/O.
ENCODING_SCALE_OFFSET = 0
DEFINITION_UNDEFINED = 0x7FFFFFFF  # slot 4 of an unquantized (float) tensor
SCALAR_ENCODINGS = (0, 2)

# Record directory FlatBuffer at blob + 0x20. Evidence: fixtures (records tile the blob).
DIRECTORY_SLOTS = {"first_offset": 0, "total_size": 1, "records": 2}
RECORD_SLOTS = {"name": 0, "size": 1, "align": 2, "offset": 4}

# Pickles: arrays of u32 words (tag scheme of the public HTP/core/pickle_header_tags.h).
BARREL_MAGIC = 0x3790FA5C  # a record holding several pickles
PICKLE_MAGIC = 0x7309F72B  # one compiled graph
PickleStart = Layout(("magic", "I"), ("header_words", "I"))  # low 16 bits: header length in words
# A header record: descriptor word = tag << 16 | length in words (descriptor included).
TAG_END = b"Zz"
TAG_OPTIONS = b"Op"
TAG_SIZE = b"Sz"
TAG_MEMORY = b"Mm"
TAG_CONTENTS = b"Tc"
TAG_VERSION = b"Vr"
HEADER_TAG_NAMES = {
    b"Id": "ident",
    b"Sz": "sizes",
    b"Vr": "build_id",
    b"Op": "options",
    b"Mm": "memory",
    b"Tc": "contents",
    b"Mu": "multi",
    b"Zz": "end",
}
INNER_PICKLE_OFFSET = 0x3000  # where the inner pickle sits when a barrel has no Tc record (none seen)
CONTENTS_UNIT = 16  # Tc word 2 x 16 = the inner pickle's offset in the barrel (every fixture and real file)
# Aux records after the inner header: marker = tag << 16 | (~tag & 0xFFFF), then a payload length word.
AUX_TAG_NAMES = {
    b"Co": "op_types",
    b"Ct": "tensor_types",
    b"KS": "shared_weights_ref",
    b"KA": "allocations",
    b"GV": "graph_version",
}
ALLOCATOR_MAGIC = 0xFA0000FA  # the allocator / graph I/O block before the op list
OP_MARKER_XOR = 0x1303EE71  # op record starts with op_index ^ this (public serialize_defs.h)
# The marker's top bit is a flag: set on op 766 of fixtures/qwen-mini/*/genie/part_1_of_2_prompt.bin.
OP_INDEX_MASK = 0x7FFFFFFF
OP_LIST_END = 0xBEEFF00D
# A barrel's Sz word 1 x 4 counts its bytes including a 64-byte trailer that starts with the words
# 0x83AF0002 0xA798EC42 (word 6 varies: 64 in QNN 2.34, 0x4D78 in a 2.31 barrel, so it is no size).
# QNN 2.31 (tristanqiu8/qnn_test_flow test_dump/naf_block_*/lib_naf_block_*.bin) and 2.34 (LiteRT
# simple_model_qualcomm_sm8650_precompiled.tflite) write the trailer: Sz x 4 = the record's u64 size;
# QNN 2.32/2.33 count it but do not write it (Sz x 4 = record + 0x40). The same two words start the
# 4 KiB tail page of single-graph 3.3.x/4.0.x files (fixtures/variants/vtcm_8mb.bin at 0x1e000).
BARREL_TRAILER_SIZE = 0x40
BARREL_TRAILER_SIGNATURE = (0x83AF0002, 0xA798EC42)
WEIGHTS_DESCRIPTOR_MAGIC = 0x71C43C9B  # public const_extent_shared.h
WEIGHTS_DESCRIPTOR_SIZE = 0x1000
# The inner pickle's Sz word 4 x 64 = the bytes of its weights: the descriptor page plus the pool the
# descriptor's extent record covers (extent word 6 x 64). Where the metadata records no constSize
# (graphBlobInfo version 1, QNN 2.22-2.34) the pool is bounded by this word. Evidence: Sz word 4 x 64
# == 4096 + extent length on every graph of fixtures/ and of the 2.22-2.40 real binaries whose extent
# is not empty, and on
# ../shared/real/binaries/denoise_229_htp_vtcm8mb.serialized.bin (QNN 2.29, 0xdc0 x 64 = 225,280 =
# 4096 + 0xd80 x 64) the pool then ends exactly at the pickle's end (the file's end), where the old walk
# left 217,088 bytes unknown. QNN 2.32/2.33 write extent length 0 beside a 256-byte memory pool and
# still reserve the page Sz counts. In single-graph 4.0.x files the metadata constSize equals this word;
# in files with several graphs it is smaller (the pool's data length, memory-pool word 11 x 64).
SIZES_CONST_WORD = 4
SIZES_CONST_UNIT = 64
PAGE = 0x1000

# An AR and CL in AI Hub graph names, e.g. prompt_ar32_cl128_1_of_2.
BIG_ENDIAN_WORD = Layout(("word", "I"), order=">")
