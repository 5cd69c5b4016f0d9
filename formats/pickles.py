"""Inside a PICKLE record: the barrel and single-pickle headers with their tag-dispatched records, the aux
records, the op record, the weights descriptor and the barrel trailer.

A pickle is an array of u32 words (the tag scheme of Qualcomm's public HTP/core/pickle_header_tags.h). A
PICKLE record holds a barrel (several pickles) whose contents record points at the inner single pickle (in
QNN 2.22/2.25 files it may be the single pickle alone), the compiled graph, laid out in this order (walking
it this way left no gap and no overlap on every fixture, QAIRT 2.47-2.51, and on the real 2.22-2.40
binaries of ../shared/real/binaries):

1. the header records (`Id, Sz, Vr, Op, Mm, Zz`);
2. the aux records (AuxRecord), up to the allocator block (not decoded);
3. the op list (OpRecord, in execution order), ended by OP_LIST_END; zero padding, OP_LIST_END again as
   the last word before the weights descriptor;
4. the weights descriptor (WeightsDescriptor) and the constant pool it covers (the weights);
5. single-graph 3.3.x/4.0.x files: a 4 KiB tail page whose first words are the barrel trailer's signature.

"word N" of a header record counts its descriptor word as word 0.
"""

from construct import (
    Bytes,
    Check,
    Computed,
    Const,
    FixedSized,
    GreedyBytes,
    Int16ul,
    Int32ul,
    Optional,
    Peek,
    RepeatUntil,
    StopIf,
    Struct,
    Switch,
    obj_,
    this,
)

BARREL_MAGIC = 0x3790FA5C  # a record holding several pickles
PICKLE_MAGIC = 0x7309F72B  # one compiled graph
PICKLE_KINDS = {BARREL_MAGIC: "barrel", PICKLE_MAGIC: "pickle"}

# -- header records: descriptor word = tag << 16 | length in words (descriptor included) ----------

TAG_END = b"Zz"
TAG_OPTIONS = b"Op"
TAG_SIZE = b"Sz"
TAG_CONTENTS = b"Tc"
# Sz: word 1 x 4 = a barrel's bytes, its 64-byte trailer counted (BarrelTrailer); in the inner pickle,
# the offset of the weights descriptor from the pickle's start. Word 5 x 64 (inner pickles only) = the bytes
# of its weights: the descriptor page plus the pool the descriptor's extent record covers (extent length
# x 64). Where the metadata records no constSize (graphBlobInfo version 1, QNN 2.22-2.34) the pool is
# bounded by this word. Evidence: word 5 x 64 == 4096 + extent length on every graph of fixtures/ and of
# the 2.22-2.40 real binaries whose extent is not empty, and on
# ../shared/real/binaries/denoise_229_htp_vtcm8mb.serialized.bin (QNN 2.29, 0xdc0 x 64 = 225,280 = 4096 +
# 0xd80 x 64) the pool then ends exactly at the pickle's end (the file's end), where the old walk left
# 217,088 bytes unknown. QNN 2.32/2.33 write extent length 0 beside a 256-byte memory pool and still
# reserve the page Sz counts. In single-graph 4.0.x files the metadata constSize equals this word; in
# files with several graphs it is smaller (the pool's data length, memory-pool length x 64).
SIZES_UNIT = 4
SIZES_CONST_UNIT = 64
# Barrels carry words 1-4, inner pickles 1-6; words after word 1 are read where present.
Sizes = Struct(
    "length_words" / Int32ul,
    "length" / Computed(this.length_words * SIZES_UNIT),
    "vtcm_size_256" / Optional(Int32ul),  # VTCM bytes / 256
    "word_3" / Optional(Int32ul),  # 0 so far
    "arch" / Optional(Int32ul),  # the HTP arch compiled for (73)
    "const_64" / Optional(Int32ul),
    "rest" / GreedyBytes,
)
# Tc (contents): word 2 x 16 = the inner pickle's offset in the barrel (0x300 x 16 = 0x3000 in QAIRT
# 2.47-2.51, 0x1c8 x 16 = 0x1c80 in QNN 2.32). Evidence: the inner pickle magic sits there in every
# fixture and real binary. Where a barrel has no Tc record (none seen) the inner pickle is taken at 0x3000.
CONTENTS_UNIT = 16
INNER_PICKLE_OFFSET = 0x3000
Contents = Struct(
    "word_1" / Optional(Int32ul),  # 1 so far
    "inner_offset_16" / Optional(Int32ul),
    "rest" / GreedyBytes,
)
# Op: the compiler options string, `key=value;` entries (q9diff.read.options decodes them); the text
# ends at the first NUL, the record is NUL-padded to whole words.
OPTIONS_END = b"\x00"
Options = Struct("text" / GreedyBytes)
# Mm (memory), in 256-byte units: the metadata's opDataSize, constSize and ioTensorSize (where it records
# them). Evidence: fixtures/variants/graphs_1.bin and both graphs of graphs_2.bin (x 256 = the oracle's
# values). Not read by q9diff: the metadata says the same.
Memory = Struct(
    "op_data_size_256" / Int32ul,
    "word_2" / Int32ul,
    "word_3" / Int32ul,
    "const_size_256" / Int32ul,
    "word_5" / Int32ul,
    "word_6" / Int32ul,
    "io_tensor_size_256" / Int32ul,
    "rest" / GreedyBytes,
)
HEADER_BODIES = {TAG_SIZE: Sizes, TAG_CONTENTS: Contents, TAG_OPTIONS: Options, b"Mm": Memory}
# Region names of the tags seen; Id and Vr (the build id, NUL-padded) and Mu and Ws are kept as bytes.
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
HEADER_RECORD_UNIT = 4
HeaderRecord = Struct(
    "words" / Int16ul,
    "tag" / Bytes(2),
    Check(this.words > 0),
    "size" / Computed(this.words * HEADER_RECORD_UNIT),
    "body" / FixedSized(this.size - HEADER_RECORD_UNIT, Switch(this.tag, HEADER_BODIES, default=GreedyBytes)),
)
# Every pickle starts with its magic and a word whose low 16 bits are the header's length in words (the
# start included); the high bits are 0x8001 in barrels, 0x0001 in single pickles (I). Its header records
# follow, up to the end tag Zz.
PickleStart = Struct("magic" / Int32ul, "header_words" / Int16ul, "flags" / Int16ul)
PICKLE_START_SIZE = PickleStart.sizeof()
PickleHeader = Struct(
    "magic" / Int32ul,
    "header_words" / Int16ul,
    "flags" / Int16ul,
    "records" / RepeatUntil(obj_.tag == TAG_END, HeaderRecord),
)

# -- aux records, after the inner pickle's header ---------------------------------------------------

# A marker word tag << 16 | (~tag & 0xFFFF), a length word (payload words), the payload. Seen in order:
# `M\xef`, `Co`, `Ct`, `N\xf4`, `GV`, `A\xd3`, `R\xcd`, `KA`, and `KS` when weights are shared. The first
# word that is no such marker ends them: so far the word 0xFA0000FA that starts the allocator / graph I/O
# block before the op list (not decoded).
AUX_HEAD = 8
# Co, the op-type table: count, string word count, NUL-separated HTP kernel names (e.g.
# `ConvLayer_s1.opt@CH*2.Xsb.Fi.t.fi.CH`, `Const`, `@DmaCheckpointSet`), then one format code per type;
# it fills its record. Ct, the tensor-type table, has the same shape. Evidence: every fixture and real binary.
TypeTable = Struct(
    "count" / Int32ul,
    "string_words" / Int32ul,
    Check(2 + this.string_words + this.count == this._.words),
    "names" / Bytes(this.string_words * 4),  # NUL-separated
    "codes" / Int32ul[this.count],
)
OP_TYPES_TAG = b"Co"
AUX_BODIES = {b"Co": TypeTable, b"Ct": TypeTable}
AUX_TAG_NAMES = {
    b"Co": "op_types",
    b"Ct": "tensor_types",
    b"KS": "shared_weights_ref",  # a weights descriptor pointing at WEIGHTS/0
    b"KA": "allocations",
    b"GV": "graph_version",
}
AuxRecord = Struct(
    "inverse" / Int16ul,
    "tag_code" / Peek(Int16ul),
    "tag" / Bytes(2),
    "is_aux" / Computed(this.inverse == this.tag_code ^ 0xFFFF),
    StopIf(~this.is_aux),  # construct's ~ is a logical not
    "words" / Int32ul,  # of the payload
    "size" / Computed(AUX_HEAD + this.words * 4),
    "payload" / Switch(this.tag, AUX_BODIES, default=Bytes(this.words * 4)),
)

# -- the op list ---------------------------------------------------------------------------------------

# Each op record starts with op_index XOR OP_MARKER_XOR (the constant is named in Qualcomm's public
# serialize_defs.h); the marker's top bit is a flag (set on op 766 of
# fixtures/qwen-mini/*/genie/part_1_of_2_prompt.bin). The next word's low 28 bits index the Co table, the
# top 4 bits are flags. The rest of the record (tensor references, shapes, parameters) is not decoded;
# every `Const` op record ends with pool_id << 16 | offset / 64 into the constant pool. The list ends
# with `@SyncOp` and OP_LIST_END. (34 ops in a tiny MLP, 231 in one transformer block, 841 in a larger
# MLP, ~18,000 a graph in a seed part: the walker finds them vectorized with these fields, never one by one.)
OP_MARKER_XOR = 0x1303EE71
OP_INDEX_MASK = 0x7FFFFFFF
OP_TYPE_MASK = 0x0FFFFFFF
OpRecord = Struct(
    "marker" / Int32ul,
    "index" / Computed((this.marker ^ OP_MARKER_XOR) & OP_INDEX_MASK),
    "type_word" / Int32ul,
    "op_type" / Computed(this.type_word & OP_TYPE_MASK),
)
OP_LIST_END = 0xBEEFF00D
ProgramEnd = Const(OP_LIST_END, Int32ul)  # the last word before the weights descriptor

# -- the weights descriptor and the barrel trailer --------------------------------------------------------

# Magic and field widths as the public const_extent_shared.h; 4 KiB inline, at the inner pickle's Sz word 1
# x 4. One extent record and one memory-pool record so far (the counts are I); the constant pool follows
# the descriptor page, zero-padded to the extent length; descriptor + extent = constSize exactly.
WEIGHTS_DESCRIPTOR_MAGIC = 0x71C43C9B
WEIGHTS_DESCRIPTOR_SIZE = 0x1000
Extent = Struct("align_flags" / Int32ul, "offset_64" / Int32ul, "length_64" / Int32ul, "reserved" / Int32ul)
MemoryPool = Struct("pool_id" / Int32ul, "extent" / Int32ul, "offset_64" / Int32ul, "length_64" / Int32ul)
WeightsDescriptor = Struct(
    "magic" / Const(WEIGHTS_DESCRIPTOR_MAGIC, Int32ul),
    "word_1" / Int32ul,  # 0x01000040 in fixtures/variants/graphs_2.bin
    "extents" / Int32ul,  # 1
    "pools" / Int32ul,  # 1
    "extent" / Extent,
    "pool" / MemoryPool,
    "rest" / Bytes(WEIGHTS_DESCRIPTOR_SIZE - 48),
)

# A barrel's Sz word 1 x 4 counts its bytes including a 64-byte trailer that starts with the words
# 0x83AF0002 0xA798EC42 (word 6 varies: 64 in QNN 2.34, 0x4D78 in a 2.31 barrel, so it is no size).
# QNN 2.31 (tristanqiu8/qnn_test_flow test_dump/naf_block_*/lib_naf_block_*.bin) and 2.34 (LiteRT
# simple_model_qualcomm_sm8650_precompiled.tflite) write the trailer: Sz x 4 = the record's u64 size;
# QNN 2.32/2.33 count it but do not write it (Sz x 4 = record + 0x40). The same two words start the
# 4 KiB tail page of single-graph 3.3.x/4.0.x files (fixtures/variants/vtcm_8mb.bin at 0x1e000).
BARREL_TRAILER_SIGNATURE = [0x83AF0002, 0xA798EC42]
BarrelTrailer = Struct(
    "signature" / Const(BARREL_TRAILER_SIGNATURE, Int32ul[2]),
    "words" / Int32ul[14],
)
BARREL_TRAILER_SIZE = BarrelTrailer.sizeof()  # 0x40
