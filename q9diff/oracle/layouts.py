"""libQnnSystem's C structures as ctypes layouts (x86_64), from the public QNN System API headers' facts:
QnnSystemContext_BinaryInfo_t (v1-v3), QnnSystemContext_GraphInfo_t (v1-v3), Qnn_Tensor_t (v1, v2) and
Qnn_QuantizeParams_t. Kept apart from the reader so each stays small; nothing here runs logic."""

from __future__ import annotations

import ctypes
import struct

_ENCODING_SCALE_OFFSET = 0
_DEFINITION_UNDEFINED = 0x7FFFFFFF
_ENCODING_AXIS_SCALE_OFFSET = 1
_ENCODING_BW_SCALE_OFFSET = 2
_ENCODING_BW_AXIS_SCALE_OFFSET = 3


# --- ctypes layouts (x86_64) ---------------------------------------------------------------


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


class _ScaleOffset(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("offset", ctypes.c_int32)]


class _AxisScaleOffset(ctypes.Structure):
    _fields_ = [
        ("axis", ctypes.c_int32),
        ("num_scale_offsets", ctypes.c_uint32),
        ("scale_offset", ctypes.POINTER(_ScaleOffset)),
    ]


class _BwScaleOffset(ctypes.Structure):
    _fields_ = [("bitwidth", ctypes.c_uint32), ("scale", ctypes.c_float), ("offset", ctypes.c_int32)]


class _BwAxisScaleOffset(ctypes.Structure):
    _fields_ = [
        ("bitwidth", ctypes.c_uint32),
        ("axis", ctypes.c_int32),
        ("num_elements", ctypes.c_uint32),
        ("scales", ctypes.POINTER(ctypes.c_float)),
        ("offsets", ctypes.POINTER(ctypes.c_int32)),
    ]


class _QuantizeEncoding(ctypes.Union):
    # The header's union has more members (block, blockwise-expansion, vector, float-block,
    # mapped variants); none is larger than the 32-byte bit-width axis encoding, which
    # therefore fixes the union's size and alignment.
    _fields_ = [
        ("scale_offset", _ScaleOffset),
        ("axis_scale_offset", _AxisScaleOffset),
        ("bw_scale_offset", _BwScaleOffset),
        ("bw_axis_scale_offset", _BwAxisScaleOffset),
    ]


class _QuantizeParams(ctypes.Structure):
    _fields_ = [
        ("encoding_definition", ctypes.c_uint32),
        ("quantization_encoding", ctypes.c_uint32),
        ("encoding", _QuantizeEncoding),
    ]


class _ClientBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("data_size", ctypes.c_uint32)]


_TENSOR_V1_FIELDS = [
    ("id", ctypes.c_uint32),
    ("name", ctypes.c_char_p),
    ("type", ctypes.c_uint32),
    ("data_format", ctypes.c_uint32),
    ("data_type", ctypes.c_uint32),
    ("quantize_params", _QuantizeParams),
    ("rank", ctypes.c_uint32),
    ("dimensions", ctypes.POINTER(ctypes.c_uint32)),
    ("mem_type", ctypes.c_uint32),
    ("client_buf", _ClientBuffer),
]


class _TensorV1(ctypes.Structure):
    _fields_ = _TENSOR_V1_FIELDS


class _SparseParams(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("num_specified_elements", ctypes.c_uint32),
        ("num_sparse_dimensions", ctypes.c_uint32),
    ]


class _TensorV2(ctypes.Structure):
    # Version 2 starts with exactly the version 1 fields, so one reader serves both.
    _fields_ = _TENSOR_V1_FIELDS + [
        ("is_dynamic_dimensions", ctypes.POINTER(ctypes.c_uint8)),
        ("sparse_params", _SparseParams),
        ("is_produced", ctypes.c_uint8),
    ]


class _TensorVersions(ctypes.Union):
    _fields_ = [("v1", _TensorV1), ("v2", _TensorV2)]


class _Tensor(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", _TensorVersions)]


_GRAPH_INFO_V1_FIELDS = [
    ("graph_name", ctypes.c_char_p),
    ("num_graph_inputs", ctypes.c_uint32),
    ("graph_inputs", ctypes.POINTER(_Tensor)),
    ("num_graph_outputs", ctypes.c_uint32),
    ("graph_outputs", ctypes.POINTER(_Tensor)),
]
_GRAPH_INFO_V2_FIELDS = _GRAPH_INFO_V1_FIELDS + [
    ("num_updateable_tensors", ctypes.c_uint32),
    ("updateable_tensors", ctypes.POINTER(_Tensor)),
]


class _GraphInfoV1(ctypes.Structure):
    _fields_ = _GRAPH_INFO_V1_FIELDS


class _GraphInfoV2(ctypes.Structure):
    _fields_ = _GRAPH_INFO_V2_FIELDS


class _GraphInfoV3(ctypes.Structure):
    _fields_ = _GRAPH_INFO_V2_FIELDS + [
        ("graph_blob_info_size", ctypes.c_uint32),
        ("graph_blob_info", ctypes.c_void_p),
        ("start_op_index", ctypes.c_uint32),
        ("end_op_index", ctypes.c_uint32),
    ]


class _GraphInfoVersions(ctypes.Union):
    _fields_ = [("v1", _GraphInfoV1), ("v2", _GraphInfoV2), ("v3", _GraphInfoV3)]


class _GraphInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", _GraphInfoVersions)]


_BINARY_INFO_HEAD = [
    ("backend_id", ctypes.c_uint32),
    ("build_id", ctypes.c_char_p),
    ("core_api_version", _Version),
    ("backend_api_version", _Version),
    ("soc_version", ctypes.c_char_p),
]
_BINARY_INFO_V1_FIELDS = _BINARY_INFO_HEAD + [
    ("hw_info_blob_version", _Version),
    ("context_blob_version", _Version),
    ("hw_info_blob_size", ctypes.c_uint32),
    ("hw_info_blob", ctypes.c_void_p),
    ("context_blob_size", ctypes.c_uint64),
    ("num_context_tensors", ctypes.c_uint32),
    ("context_tensors", ctypes.POINTER(_Tensor)),
    ("num_graphs", ctypes.c_uint32),
    ("graphs", ctypes.POINTER(_GraphInfo)),
]


class _BinaryInfoV1(ctypes.Structure):
    _fields_ = _BINARY_INFO_V1_FIELDS


class _BinaryInfoV2(ctypes.Structure):
    _fields_ = _BINARY_INFO_V1_FIELDS + [("platform_info", ctypes.c_void_p)]


class _BinaryInfoV3(ctypes.Structure):
    # Version 3 drops the hardware info blob and adds context metadata and socModel.
    _fields_ = _BINARY_INFO_HEAD + [
        ("context_blob_version", _Version),
        ("context_blob_size", ctypes.c_uint64),
        ("num_context_tensors", ctypes.c_uint32),
        ("context_tensors", ctypes.POINTER(_Tensor)),
        ("num_graphs", ctypes.c_uint32),
        ("graphs", ctypes.POINTER(_GraphInfo)),
        ("platform_info", ctypes.c_void_p),
        ("context_metadata_size", ctypes.c_uint32),
        ("context_metadata", ctypes.c_void_p),
        ("soc_model", ctypes.c_uint32),
    ]


class _BinaryInfoVersions(ctypes.Union):
    _fields_ = [("v1", _BinaryInfoV1), ("v2", _BinaryInfoV2), ("v3", _BinaryInfoV3)]


class _BinaryInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("u", _BinaryInfoVersions)]


_ErrorHandle = ctypes.c_uint64
_CreateFn = ctypes.CFUNCTYPE(_ErrorHandle, ctypes.POINTER(ctypes.c_void_p))
_GetBinaryInfoFn = ctypes.CFUNCTYPE(
    _ErrorHandle,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(_BinaryInfo)),
    # Qnn_ContextBinarySize_t: u32 in old headers, u64 now; a u64 slot serves both.
    ctypes.POINTER(ctypes.c_uint64),
)
_GetMetadataFn = ctypes.CFUNCTYPE(
    _ErrorHandle,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(_BinaryInfo)),
)
_FreeFn = ctypes.CFUNCTYPE(_ErrorHandle, ctypes.c_void_p)


class _SystemFunctions(ctypes.Structure):
    # Only the leading entries of the function table; the rest (tensor, log, dlc, profile) are unused.
    _fields_ = [
        ("system_context_create", _CreateFn),
        ("system_context_get_binary_info", _GetBinaryInfoFn),
        ("system_context_get_metadata", _GetMetadataFn),
        ("system_context_free", _FreeFn),
    ]


class _SystemInterface(ctypes.Structure):
    _fields_ = [
        ("backend_id", ctypes.c_uint32),
        ("provider_name", ctypes.c_char_p),
        ("system_api_version", _Version),
        ("functions", _SystemFunctions),
    ]


# QnnHtpSystemContext graph blob info as libQnnSystem hands it over (GraphInfo v3
# graphBlobInfo): a version-1 record {u32 version, u64 spillFillBufferSize, u32 vtcmSize
# (bytes, not MB as the header says), u32 optimizationLevel, u8 htpDlbc, u64 numHvxThreads},
# then a version-2 record {u32 version, u64 nativeKChannelSize, u64 nativeVChannelSize,
# u32 isSafeShareIO, u64 ioTensorSize, opDataSize, constSize, ddrTensorSize, sharedWeightsSize}.
# 112 bytes in QAIRT 2.51 (FORMAT_FACTS section 2); vtcmSize checked in tests/test_oracle.py.
_GRAPH_BLOB_V1 = struct.Struct("<I4xQIIB7xQ")
_GRAPH_BLOB_V2 = struct.Struct("<I4xQQI4xQQQQQ")

# QnnHtpSystemContext context blob info (BinaryInfo v3 contextMetadata): {u32 version, u32 dspArch}.
_CONTEXT_METADATA_V1 = struct.Struct("<II")
