"""A QNN HTP context binary's own records (QNN 2.22 - QAIRT 2.51): file headers, the context blob header by
blob version, the graphBlobInfo records of the metadata, and the fixed records around the pickles.

Every fact names its evidence: "oracle" means the value was checked against libQnnSystem.so
(tests/test_parser.py compares every field on every fixture), "fixtures" means byte walks over all of
fixtures/ left no gap and no overlap. Everything is little-endian unless said otherwise.
"""

from construct import (
    Bytes,
    Computed,
    Const,
    Error,
    Int8ul,
    Int32ul,
    Int64ul,
    Optional,
    Padding,
    Pass,
    Struct,
    Switch,
    this,
)

PAGE = 0x1000

# -- file headers ---------------------------------------------------------------------------------

# The first 16 bytes are four big-endian u32 that say which header follows.
MAGIC_SIZE = 16
# QNN 2.25 on: 2, 3, 0, 1 in every QAIRT 2.47-2.51 file (meaning unknown; a good magic check).
FILE_MAGIC = b"\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x01"
# QNN 2.22 files (context blob 3.1.x) start with big-endian u32 2, 2, 0, 0 and no size words: the
# metadata FlatBuffer follows at 0x10; its root table holds the BinaryInfo wrapper (slot 0) and the
# metadata size counted from 0x28 (slot 2, u64: flatbuffer_slots.LEGACY_ROOT); a u64 blob size
# (LegacyBlobSize) follows the metadata, then the blob, which ends the file. Evidence: the 2.22 binaries in
# ../shared/real/binaries (add_add_1_quant ...bin and both contexts of qnn_multi_ctx_embed.onnx): 0x28 +
# slot 2 = the blob-size word, whose value equals the oracle's contextBlobSize, and the blob ends exactly
# at the end of the file.
FILE_MAGIC_2_22 = b"\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"
# What follows the magic in a QNN 2.25+ file (40 bytes in all). Evidence: every fixture; sizes equal the
# oracle's contextBlobSize.
HeaderSizes = Struct(
    "metadata_size" / Int64ul,  # FlatBuffer of the BinaryInfo, starts at METADATA_OFFSET
    "blob_offset" / Int64ul,  # 0x1000 in every file seen
    "blob_size" / Int64ul,  # == oracle contextBlobSize
)
FileHeader = Struct(
    "magic" / Bytes(MAGIC_SIZE),
    "sizes" / Switch(this.magic, {FILE_MAGIC: HeaderSizes, FILE_MAGIC_2_22: Pass}, default=Error),
)
FILE_HEADER_SIZE = MAGIC_SIZE + HeaderSizes.sizeof()  # 40
LEGACY_FILE_HEADER_SIZE = MAGIC_SIZE  # QNN 2.22: the metadata FlatBuffer's root follows at 0x10
METADATA_OFFSET = 0x28  # QNN 2.25 on: the metadata FlatBuffer (no identifier, no size prefix)
LEGACY_METADATA_BASE = 0x28  # QNN 2.22: the metadata size in the root counts from here
LegacyBlobSize = Int64ul  # QNN 2.22: right after the metadata; the blob follows it

# -- the context blob header, 32 bytes at blob_offset ----------------------------------------------

# Its version == oracle contextBlobVersion. Word 3 means different things by blob version (evidence: the
# real binaries and fixtures):
# - 4.0.x (QAIRT 2.48-2.51): size of the record directory FlatBuffer at +0x20 (flatbuffer_slots.DIRECTORY);
# - 3.3.x (QNN 2.40 = 3.3.3, QAIRT 2.47 = 3.3.4): 0x1000, the offset of the first pickle; the HTP context
#   FlatBuffer sits at +0x20, padded to that page; no directory;
# - 3.1.x / 3.2.x (QNN 2.22, 2.25, 2.32-2.34): the first pickle starts at +8 + word 3, right after the
#   HTP context FlatBuffer at +0x20 and the pickle's u64 size (PickleSize); no directory, no page padding.
DIRECTORY, PAGED, PACKED = "directory", "paged", "packed"
BLOB_LAYOUTS = {(3, 3): PAGED, (3, 1): PACKED, (3, 2): PACKED}  # any other version: DIRECTORY
BlobHeader = Struct(
    "major" / Int64ul,
    "minor" / Int64ul,
    "patch" / Int64ul,
    "layout" / Computed(lambda this: BLOB_LAYOUTS.get((this.major, this.minor), DIRECTORY)),
    "first"
    / Switch(
        this.layout,
        {
            DIRECTORY: Struct("directory_size" / Int64ul),
            PAGED: Struct("pickles_offset" / Int64ul),  # the first pickle
            PACKED: Struct("pickles_offset" / Int64ul),  # the first pickle's u64 size word
        },
    ),
)
BLOB_HEADER_SIZE = 32
# 3.1.x / 3.2.x blobs: each pickle (a barrel, or a single pickle in QNN 2.22/2.25) is preceded by its size.
PickleSize = Int64ul

# -- graphBlobInfo: GraphInfo v3 slot 2 of the metadata (flatbuffer_slots.GRAPH_V3) -------------------

# Two records back to back (112 bytes), layout from the public QnnHtpSystemContext.h field order; every
# value equals the oracle's. QNN 2.32-2.34 write only the first record (40 bytes, version 1): the v2 fields
# are not recorded. Evidence: the QNN 2.32 binary inside simple_add_op_qc_v75_precompiled.tflite (oracle:
# VTCM, O, DLBC, HVX threads, spill/fill given; ioTensorSize .. sharedWeightsSize absent).
GraphBlobInfoV1 = Struct(
    "version" / Const(1, Int32ul),
    Padding(4),
    "spill_fill_buffer_size" / Int64ul,
    "vtcm_size" / Int32ul,  # bytes (the header's comment says MB)
    "optimization_level" / Int32ul,  # 0 when not set
    "htp_dlbc" / Int8ul,
    Padding(7),
    "num_hvx_threads" / Int64ul,
)
GraphBlobInfoV2 = Struct(
    "version" / Const(2, Int32ul),
    Padding(4),
    "native_k_channel_size" / Int64ul,
    "native_v_channel_size" / Int64ul,
    "is_safe_share_io" / Int32ul,
    Padding(4),
    "io_tensor_size" / Int64ul,
    "op_data_size" / Int64ul,
    "const_size" / Int64ul,
    "ddr_tensor_size" / Int64ul,
    "shared_weights_size" / Int64ul,
)
# What a file records: version 1 alone, or version 1 followed by version 2; a record whose version word says
# otherwise is not read (none is recorded where the first is not version 1).
GraphBlobInfo = Struct(
    "v1" / GraphBlobInfoV1,
    "v2" / Optional(GraphBlobInfoV2),
)

ApiVersion = Struct("major" / Int32ul, "minor" / Int32ul, "patch" / Int32ul)  # Qnn_Version_t
# contextMetadata (metadata slot 15, 8 bytes): version 1 carries the dspArch (e.g. 73). Evidence: oracle.
ContextMetadata = Struct("version" / Int32ul, "dsp_arch" / Int32ul)
CONTEXT_METADATA_VERSION = 1

# -- WEIGHTS/0: weights shared between graphs ----------------------------------------------------

# A 16-byte descriptor header (the weights descriptor's magic, pickles.WeightsDescriptor), the weights name
# (`<...>`, NUL-ended), padding to +0x100, then the pool, byte-identical to the pool of the same model
# compiled alone. Each graph's pickle then has no inline weights (constSize 0) and a `KS` aux record with
# offset 0, length = sharedWeightsSize and the same name. Evidence: fixtures/variants/graphs_2.bin and the
# qwen-mini parts.
SharedWeightsHeader = Struct(
    "magic" / Int32ul,  # 0x71C43C9B
    "words" / Int32ul[3],  # 0x01000001, 1, 0 in every file seen
    "name" / Bytes(0x100 - 16),  # NUL-ended, then padding (not always zero)
)
