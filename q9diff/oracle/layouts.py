"""libQnnSystem's C structures as ctypes layouts (x86_64), from the public QNN System API headers' facts:
QnnSystemContext_BinaryInfo_t (v1-v3), QnnSystemContext_GraphInfo_t (v1-v3), Qnn_Tensor_t (v1, v2) and
Qnn_QuantizeParams_t. Kept apart from the reader so each stays small; nothing here runs logic."""

from __future__ import annotations

import ctypes
import struct

ENCODING_SCALE_OFFSET = 0
DEFINITION_UNDEFINED = 0x7FFFFFFF
ENCODING_AXIS_SCALE_OFFSET = 1
ENCODING_BW_SCALE_OFFSET = 2
ENCODING_BW_AXIS_SCALE_OFFSET = 3


# --- ctypes layouts (x86_64) ---------------------------------------------------------------


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


class ScaleOffset(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("offset", ctypes.c_int32)]


class AxisScaleOffset(ctypes.Structure):
    _fields_ = [
        ("axis", ctypes.c_int32),
        ("num_scale_offsets", ctypes.c_uint32),
        ("scale_offset", ctypes.POINTER(ScaleOffset)),
    ]


class BwScaleOffset(ctypes.Structure):
    _fields_ = [("bitwidth", ctypes.c_uint32), ("scale", ctypes.c_float), ("offset", ctypes.c_int32)]


class BwAxisScaleOffset(ctypes.Structure):
    _fields_ = [
        ("bitwidth", ctypes.c_uint32),
        ("axis", ctypes.c_int32),
        ("num_elements", ctypes.c_uint32),
        ("scales", ctypes.POINTER(ctypes.c_float)),
        ("offsets", ctypes.POINTER(ctypes.c_int32)),
    ]


class QuantizeEncoding(ctypes.Union):
    # The header's union has more members (block, blockwise-expansion, vector, float-block,
    # mapped variants); none is larger than the 32-byte bit-width axis encoding, which
    # therefore fixes the union's size and alignment.
    _fields_ = [
        ("scale_offset", ScaleOffset),
        ("axis_scale_offset", AxisScaleOffset),
        ("bw_scale_offset", BwScaleOffset),
        ("bw_axis_scale_offset", BwAxisScaleOffset),
    ]


class QuantizeParams(ctypes.Structure):
    _fields_ = [
        ("encoding_definition", ctypes.c_uint32),
        ("quantization_encoding", ctypes.c_uint32),
        ("encoding", QuantizeEncoding),
    ]


class ClientBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("data_size", ctypes.c_uint32)]


TENSOR_V1_FIELDS = [
    ("id", ctypes.c_uint32),
    ("name", ctypes.c_char_p),
    ("type", ctypes.c_uint32),
    ("data_format", ctypes.c_uint32),
    ("data_type", ctypes.c_uint32),
    ("quantize_params", QuantizeParams),
    ("rank", ctypes.c_uint32),
    ("dimensions", ctypes.POINTER(ctypes.c_uint32)),
    ("mem_type", ctypes.c_uint32),
    ("client_buf", ClientBuffer),
]


class TensorV1(ctypes.Structure):
    _fields_ = TENSOR_V1_FIELDS


class SparseParams(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("num_specified_elements", ctypes.c_uint32),
        ("num_sparse_dimensions", ctypes.c_uint32),
    ]


class TensorV2(ctypes.Structure):
    # Version 2 starts with exactly the version 1 fields, so one reader serves both.
    _fields_ = TENSOR_V1_FIELDS + [
        ("is_dynamic_dimensions", ctypes.POINTER(ctypes.c_uint8)),
        ("sparse_params", SparseParams),
        ("is_produced", ctypes.c_uint8),
    ]


class TensorVersions(ctypes.Union):
    _fields_ = [("v1", TensorV1), ("v2", TensorV2)]


class Tensor(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", TensorVersions)]


GRAPH_INFO_V1_FIELDS = [
    ("graph_name", ctypes.c_char_p),
    ("num_graph_inputs", ctypes.c_uint32),
    ("graph_inputs", ctypes.POINTER(Tensor)),
    ("num_graph_outputs", ctypes.c_uint32),
    ("graph_outputs", ctypes.POINTER(Tensor)),
]
GRAPH_INFO_V2_FIELDS = GRAPH_INFO_V1_FIELDS + [
    ("num_updateable_tensors", ctypes.c_uint32),
    ("updateable_tensors", ctypes.POINTER(Tensor)),
]


class GraphInfoV1(ctypes.Structure):
    _fields_ = GRAPH_INFO_V1_FIELDS


class GraphInfoV2(ctypes.Structure):
    _fields_ = GRAPH_INFO_V2_FIELDS


class GraphInfoV3(ctypes.Structure):
    _fields_ = GRAPH_INFO_V2_FIELDS + [
        ("graph_blob_info_size", ctypes.c_uint32),
        ("graph_blob_info", ctypes.c_void_p),
        ("start_op_index", ctypes.c_uint32),
        ("end_op_index", ctypes.c_uint32),
    ]


class GraphInfoVersions(ctypes.Union):
    _fields_ = [("v1", GraphInfoV1), ("v2", GraphInfoV2), ("v3", GraphInfoV3)]


class GraphInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", GraphInfoVersions)]


BINARY_INFO_HEAD = [
    ("backend_id", ctypes.c_uint32),
    ("build_id", ctypes.c_char_p),
    ("core_api_version", Version),
    ("backend_api_version", Version),
    ("soc_version", ctypes.c_char_p),
]
BINARY_INFO_V1_FIELDS = BINARY_INFO_HEAD + [
    ("hw_info_blob_version", Version),
    ("context_blob_version", Version),
    ("hw_info_blob_size", ctypes.c_uint32),
    ("hw_info_blob", ctypes.c_void_p),
    ("context_blob_size", ctypes.c_uint64),
    ("num_context_tensors", ctypes.c_uint32),
    ("context_tensors", ctypes.POINTER(Tensor)),
    ("num_graphs", ctypes.c_uint32),
    ("graphs", ctypes.POINTER(GraphInfo)),
]


class BinaryInfoV1(ctypes.Structure):
    _fields_ = BINARY_INFO_V1_FIELDS


class BinaryInfoV2(ctypes.Structure):
    _fields_ = BINARY_INFO_V1_FIELDS + [("platform_info", ctypes.c_void_p)]


class BinaryInfoV3(ctypes.Structure):
    # Version 3 drops the hardware info blob and adds context metadata and socModel.
    _fields_ = BINARY_INFO_HEAD + [
        ("context_blob_version", Version),
        ("context_blob_size", ctypes.c_uint64),
        ("num_context_tensors", ctypes.c_uint32),
        ("context_tensors", ctypes.POINTER(Tensor)),
        ("num_graphs", ctypes.c_uint32),
        ("graphs", ctypes.POINTER(GraphInfo)),
        ("platform_info", ctypes.c_void_p),
        ("context_metadata_size", ctypes.c_uint32),
        ("context_metadata", ctypes.c_void_p),
        ("soc_model", ctypes.c_uint32),
    ]


class BinaryInfoVersions(ctypes.Union):
    _fields_ = [("v1", BinaryInfoV1), ("v2", BinaryInfoV2), ("v3", BinaryInfoV3)]


class BinaryInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", BinaryInfoVersions)]


ErrorHandle = ctypes.c_uint64
CreateFn = ctypes.CFUNCTYPE(ErrorHandle, ctypes.POINTER(ctypes.c_void_p))
GetBinaryInfoFn = ctypes.CFUNCTYPE(
    ErrorHandle,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(BinaryInfo)),
    # Qnn_ContextBinarySize_t: u32 in old headers, u64 now; a u64 slot serves both.
    ctypes.POINTER(ctypes.c_uint64),
)
GetMetadataFn = ctypes.CFUNCTYPE(
    ErrorHandle,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(BinaryInfo)),
)
FreeFn = ctypes.CFUNCTYPE(ErrorHandle, ctypes.c_void_p)


class SystemFunctions(ctypes.Structure):
    # Only the leading entries of the function table; the rest (tensor, log, dlc, profile) are unused.
    _fields_ = [
        ("system_context_create", CreateFn),
        ("system_context_get_binary_info", GetBinaryInfoFn),
        ("system_context_get_metadata", GetMetadataFn),
        ("system_context_free", FreeFn),
    ]


class SystemInterface(ctypes.Structure):
    _fields_ = [
        ("backend_id", ctypes.c_uint32),
        ("provider_name", ctypes.c_char_p),
        ("system_api_version", Version),
        ("functions", SystemFunctions),
    ]


# QnnHtpSystemContext graph blob info as libQnnSystem hands it over (GraphInfo v3
# graphBlobInfo): a version-1 record {u32 version, u64 spillFillBufferSize, u32 vtcmSize
# (bytes, not MB as the header says), u32 optimizationLevel, u8 htpDlbc, u64 numHvxThreads},
# then a version-2 record {u32 version, u64 nativeKChannelSize, u64 nativeVChannelSize,
# u32 isSafeShareIO, u64 ioTensorSize, opDataSize, constSize, ddrTensorSize, sharedWeightsSize}.
# 112 bytes in QAIRT 2.51 (FORMAT_FACTS section 2); vtcmSize checked in tests/test_oracle.py.
GRAPH_BLOB_V1 = struct.Struct("<I4xQIIB7xQ")
GRAPH_BLOB_V2 = struct.Struct("<I4xQQI4xQQQQQ")

# QnnHtpSystemContext context blob info (BinaryInfo v3 contextMetadata): {u32 version, u32 dspArch}.
CONTEXT_METADATA_V1 = struct.Struct("<II")
