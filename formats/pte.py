"""ExecuTorch `.pte` files with QNN delegates: the file header, the Program FlatBuffer's slot maps, the
QnnContextCustomProtocol header before each QNN context binary, and the QnnExecuTorchOptions compile spec.

Evidence: fixtures/pte/ (made by scripts/make_pte_fixtures.py with executorch 1.5.1 and QAIRT 2.51;
fixtures/pte/FACTS.md lists every offset and slot seen), read field for field against executorch's own
deserializer and compile-spec decoder once by hand. Slot numbers are the field order of executorch's public
schema/program.fbs and backends/qualcomm/serialization/qc_compiler_spec.fbs (tests/test_pte.py holds the
compile spec's to the .fbs where executorch's source is at hand). Every context binary found this way is
read by libQnnSystem (fixtures/pte/*.oracle.json). All integers little-endian.
"""

from construct import Const, Int8sl, Int8ul, Int32sl, Int32ul, Int64sl, Int64ul, Padding, Struct

from .flatbuffer_slots import BYTES, STRING, TABLE, TABLES, Field

# -- the file header: the Program FlatBuffer's root offset, its file identifier, then (executorch 1.x)
# an extended header in the FlatBuffer's padding that sizes the program and places the segments.
PTE_IDENT = b"ET12"  # the only identifier seen; the slots below are this schema version's
EXTENDED_MAGIC = b"eh00"
PteHeader = Struct(
    "root_offset" / Int32ul,  # of the Program table: 60 (0x3C) in every fixture
    "identifier" / Const(PTE_IDENT),
    "magic" / Const(EXTENDED_MAGIC),
    "header_length" / Int32ul,  # 32 in every fixture: from the magic to the end of segment_data_size
    "program_size" / Int64ul,  # bytes of the Program FlatBuffer, counted from offset 0
    "segment_base_offset" / Int64ul,  # program_size rounded up to 128 in every fixture
    "segment_data_size" / Int64ul,  # to the end of the last segment, not padded: file size - base
)
PTE_HEADER_SIZE = PteHeader.sizeof()  # 40: the extended header ends at 0x28
EXTENDED_HEADER_AT = 8  # the magic; header_length counts from here
EXTENDED_HEADER_LENGTH = 32  # the fields above; a longer header's further bytes are not read
# Segment offsets are relative to segment_base_offset. executorch lays them 128-aligned by default (every
# fixture; FORMAT_FACTS §9); its export config can ask another alignment, so this is said, not required.
SEGMENT_ALIGNMENT = 128

# -- the Program FlatBuffer (schema/program.fbs): the slots q9diff reads. Evidence: fixtures.
PROGRAM = {
    "version": Field(0, Int32ul),  # absent (0) in every fixture
    "execution_plan": Field(1, TABLES),  # one ExecutionPlan per method
    "backend_delegate_data": Field(3, TABLES),  # inline payloads: none in the fixtures
    "segments": Field(4, TABLES),  # DataSegment tables; segments[0] is the empty (0, 0) constant segment
}
EXECUTION_PLAN = {"name": Field(0, STRING), "delegates": Field(7, TABLES)}
BACKEND_DELEGATE = {"id": Field(0, STRING), "processed": Field(1, TABLE), "compile_specs": Field(2, TABLES)}
DATA_REFERENCE = {"location": Field(0, Int8sl), "index": Field(1, Int32ul)}  # location: a byte enum
LOCATION_INLINE, LOCATION_SEGMENT = 0, 1
LOCATIONS = {LOCATION_INLINE: "inline", LOCATION_SEGMENT: "segment"}
DATA_SEGMENT = {"offset": Field(0, Int64ul), "size": Field(1, Int64ul)}  # a table, not a struct
INLINE_DATA = {"data": Field(0, BYTES)}
COMPILE_SPEC = {"key": Field(0, STRING), "value": Field(1, BYTES)}
QNN_BACKEND = "QnnBackend"  # the delegate id of executorch's Qualcomm backend
QNN_COMPILE_SPEC = "qnn_compile_spec"  # the key of its options FlatBuffer among the compile specs

# -- a QNN delegate's payload (= its segment): executorch's QnnContextCustomProtocol header, 256 bytes,
# then the context binary of exactly `binary_size` bytes (segment size = 256 + binary_size in every
# fixture). The adaptor's context-binary alignment, 256, is this header's size: the binary starts 256
# bytes into the payload, which itself is only 128-aligned in the file (with_xnnpack.pte: 1,408).
QNN_PAYLOAD_MAGIC = 0x5678ABCD  # bytes CD AB 78 56
QNN_PAYLOAD_HEADER_SIZE = 256
QnnPayloadHeader = Struct(
    "magic" / Const(QNN_PAYLOAD_MAGIC, Int32ul),
    "signature" / Int64sl,  # the wall clock in ns at build time: differs per build
    "binary_size" / Int64ul,
    Padding(QNN_PAYLOAD_HEADER_SIZE - 20),  # zeros in every fixture; not read
)

# -- the compile spec executorch stores beside each QNN delegate: a QnnExecuTorchOptions FlatBuffer
# (qc_compiler_spec.fbs), 192 B (quantized), 196 B (fp16) or 200 B (fp16, weight sharing) in the
# fixtures. An absent scalar is the schema's default, as FlatBuffers write it: precision 0 (quantized),
# every flag false. Booleans are one byte.
QNN_OPTIONS = {"soc_info": Field(0, TABLE), "backend_options": Field(1, TABLE)}
SOC_INFO = {"soc_model": Field(0, Int32sl), "htp_info": Field(1, TABLE)}  # soc_model: QcomChipset
HTP_INFO = {"htp_arch": Field(0, Int32sl), "vtcm_size_in_mb": Field(1, Int32ul)}  # htp_arch: 68 .. 81
BACKEND_OPTIONS = {"backend_type": Field(0, Int32sl), "htp_options": Field(1, TABLE)}
HTP_BACKEND = 2  # backend_type kHtpBackend (1 GPU, 3 DSP, 4 LPAI)
HTP_OPTIONS = {
    "performance_mode": Field(1, Int32sl),
    "precision": Field(2, Int32sl),  # 0 kHtpQuantized, 1 kHtpFp16
    "use_dlbc": Field(5, Int8ul),
    "use_weight_sharing": Field(8, Int8ul),
}
PRECISIONS = {0: "quantized", 1: "fp16"}
