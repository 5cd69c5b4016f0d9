"""The oracle: Qualcomm's own reading of a context binary, through ``libQnnSystem.so``.

Every format fact q9diff claims is checked against what this returns. The struct layouts
below are written from the public QNN headers (``QnnSystemContext.h``,
``QnnHtpSystemContext.h``, ``QnnTypes.h``, ``QnnSystemInterface.h``) for x86_64: natural
alignment, 8-byte pointers, enums as u32. A crash inside Qualcomm's library must not take
q9diff down, so callers that read untrusted files use :func:`read_binary_info_isolated`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q9diff.errors import Q9Error
from q9diff.oracle import layouts as c  # the C structs, as libQnnSystem lays them out
from q9diff.read.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES

LIBRARY_NAME = "libQnnSystem.so"
SDK_LIB_DIR = Path("lib") / "x86_64-linux-clang"
SDK_ROOT_VARIABLES = ("QNN_SDK_ROOT", "QAIRT_SDK_ROOT")

# Qnn_QuantizationEncoding_t values this reader decodes (QnnTypes.h).


class OracleUnavailable(Q9Error, RuntimeError):
    """libQnnSystem.so cannot be found or loaded on this machine."""


class OracleError(Q9Error, RuntimeError):
    """libQnnSystem.so refused the file, or crashed while reading it."""


# --- the model the oracle hands back -------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    """One graph input or output as libQnnSystem reports it (Qnn_Tensor_t)."""

    name: str
    id: int
    dtype: str
    dims: tuple[int, ...]
    scale: float | None
    offset: int | None
    tensor_type: str
    data_format: int
    axis: int | None = None
    scales: tuple[float, ...] | None = None
    offsets: tuple[int, ...] | None = None


@dataclass(frozen=True)
class GraphInfo:
    """One graph (QnnSystemContext_GraphInfo_t) with its HTP graph blob info, None where absent."""

    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    spill_fill_buffer_size: int | None
    vtcm_size: int | None
    optimization_level: int | None
    htp_dlbc: int | None
    num_hvx_threads: int | None
    io_tensor_size: int | None
    op_data_size: int | None
    const_size: int | None
    ddr_tensor_size: int | None
    shared_weights_size: int | None
    native_k_channel_size: int | None = None
    native_v_channel_size: int | None = None
    is_safe_share_io: int | None = None
    version: int | None = None


@dataclass(frozen=True)
class BinaryInfo:
    """The whole QnnSystemContext_BinaryInfo_t; soc_model and dsp_arch exist from version 3 on."""

    build_id: str
    core_api_version: str
    backend_api_version: str
    context_blob_version: str
    context_blob_size: int
    soc_model: int | None
    dsp_arch: int | None
    backend_id: int
    graphs: tuple[GraphInfo, ...]
    soc_version: str = ""
    version: int | None = None


# --- finding and loading the library -------------------------------------------------------


def find_library(lib: str | Path | None = None) -> Path:
    """Where libQnnSystem.so is: *lib*, else in $QNN_SDK_ROOT / $QAIRT_SDK_ROOT, else in onnxruntime-qnn."""
    if lib is not None:
        path = Path(lib)
        if not path.is_file():
            raise OracleUnavailable(f"{path}: no such file, so libQnnSystem cannot be loaded from it.")
        return path
    for variable in SDK_ROOT_VARIABLES:
        root = os.environ.get(variable)
        if root and (Path(root) / SDK_LIB_DIR / LIBRARY_NAME).is_file():
            return Path(root) / SDK_LIB_DIR / LIBRARY_NAME
    spec = importlib.util.find_spec("onnxruntime_qnn")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / LIBRARY_NAME).is_file():
            return Path(location) / LIBRARY_NAME
    raise OracleUnavailable(
        f"{LIBRARY_NAME} not found: set QNN_SDK_ROOT or QAIRT_SDK_ROOT, or install onnxruntime-qnn."
    )


@functools.cache
def system_interface(path: Path) -> tuple[ctypes.CDLL, c.SystemInterface]:
    try:
        library = ctypes.CDLL(str(path))
        get_providers = library.QnnSystemInterface_getProviders
    except (OSError, AttributeError) as exc:
        raise OracleUnavailable(f"{path}: cannot be loaded as libQnnSystem ({exc}).") from exc
    get_providers.restype = c.ErrorHandle
    get_providers.argtypes = [
        ctypes.POINTER(ctypes.POINTER(ctypes.POINTER(c.SystemInterface))),
        ctypes.POINTER(ctypes.c_uint32),
    ]
    providers = ctypes.POINTER(ctypes.POINTER(c.SystemInterface))()
    count = ctypes.c_uint32(0)
    error = get_providers(ctypes.byref(providers), ctypes.byref(count))
    if error or count.value == 0:
        raise OracleUnavailable(
            f"{path}: QnnSystemInterface_getProviders returned no provider (error {error})."
        )
    interface = providers[0].contents
    functions = interface.functions
    if not (functions.system_context_create and functions.system_context_free):
        raise OracleUnavailable(f"{path}: its system interface has no systemContextCreate/Free.")
    return library, interface


# --- reading -------------------------------------------------------------------------------


def c_text(value: bytes | None) -> str:
    return value.decode("utf-8", "replace") if value else ""


def _version(value: c.Version) -> str:
    return f"{value.major}.{value.minor}.{value.patch}"


def tensor_info(raw: c.Tensor) -> TensorInfo:
    t = raw.u.v1
    dims = tuple(t.dimensions[i] for i in range(t.rank)) if t.dimensions else ()
    params = t.quantize_params
    encoding = params.quantization_encoding
    scale = offset = axis = scales = offsets = None
    if params.encoding_definition == c.DEFINITION_UNDEFINED:
        # QNN 2.22 float tensors say UNDEFINED beside a zeroed scale/offset encoding: no quantization.
        encoding = None
    if encoding == c.ENCODING_SCALE_OFFSET:
        scale, offset = params.encoding.scale_offset.scale, params.encoding.scale_offset.offset
    elif encoding == c.ENCODING_BW_SCALE_OFFSET:
        scale, offset = params.encoding.bw_scale_offset.scale, params.encoding.bw_scale_offset.offset
    elif encoding == c.ENCODING_AXIS_SCALE_OFFSET:
        per_axis = params.encoding.axis_scale_offset
        pairs = [per_axis.scale_offset[i] for i in range(per_axis.num_scale_offsets)]
        axis = per_axis.axis
        scales = tuple(p.scale for p in pairs)
        offsets = tuple(p.offset for p in pairs)
    elif encoding == c.ENCODING_BW_AXIS_SCALE_OFFSET:
        per_axis = params.encoding.bw_axis_scale_offset
        count = per_axis.num_elements
        axis = per_axis.axis
        scales = tuple(per_axis.scales[i] for i in range(count)) if per_axis.scales else ()
        # A NULL offsets array means symmetric quantization: every offset is 0.
        offsets = tuple(per_axis.offsets[i] for i in range(count)) if per_axis.offsets else (0,) * count
    return TensorInfo(
        name=c_text(t.name),
        id=t.id,
        dtype=DATATYPE_NAMES.get(t.data_type, f"0x{t.data_type:04X}"),
        dims=dims,
        scale=scale,
        offset=offset,
        tensor_type=TENSOR_TYPE_NAMES.get(t.type, str(t.type)),
        data_format=t.data_format,
        axis=axis,
        scales=scales,
        offsets=offsets,
    )


def _tensors(array: Any, count: int) -> tuple[TensorInfo, ...]:
    return tuple(tensor_info(array[i]) for i in range(count)) if array else ()


def _graph_blob_info(blob: bytes) -> dict[str, int]:
    fields: dict[str, int] = {}
    if len(blob) >= c.GRAPH_BLOB_V1.size and int.from_bytes(blob[:4], "little") == 1:
        _, spill_fill, vtcm, level, dlbc, hvx = c.GRAPH_BLOB_V1.unpack_from(blob)
        fields.update(
            spill_fill_buffer_size=spill_fill,
            vtcm_size=vtcm,
            optimization_level=level,
            htp_dlbc=dlbc,
            num_hvx_threads=hvx,
        )
        start = c.GRAPH_BLOB_V1.size
        if (
            len(blob) >= start + c.GRAPH_BLOB_V2.size
            and int.from_bytes(blob[start : start + 4], "little") == 2
        ):
            _, native_k, native_v, safe_io, io, op_data, const, ddr, shared = c.GRAPH_BLOB_V2.unpack_from(
                blob, start
            )
            fields.update(
                native_k_channel_size=native_k,
                native_v_channel_size=native_v,
                is_safe_share_io=safe_io,
                io_tensor_size=io,
                op_data_size=op_data,
                const_size=const,
                ddr_tensor_size=ddr,
                shared_weights_size=shared,
            )
    return fields


_GRAPH_BLOB_NAMES = (
    "spill_fill_buffer_size",
    "vtcm_size",
    "optimization_level",
    "htp_dlbc",
    "num_hvx_threads",
    "io_tensor_size",
    "op_data_size",
    "const_size",
    "ddr_tensor_size",
    "shared_weights_size",
    "native_k_channel_size",
    "native_v_channel_size",
    "is_safe_share_io",
)


def _graph(raw: c.GraphInfo, path: Path) -> GraphInfo:
    if raw.version not in (1, 2, 3):
        raise OracleError(f"{path}: libQnnSystem returned GraphInfo version {raw.version}, not 1, 2 or 3")
    g = raw.u.v3 if raw.version == 3 else raw.u.v2 if raw.version == 2 else raw.u.v1
    blob_fields: dict[str, int] = {}
    if raw.version == 3 and g.graph_blob_info and g.graph_blob_info_size:
        blob_fields = _graph_blob_info(ctypes.string_at(g.graph_blob_info, g.graph_blob_info_size))
    return GraphInfo(
        name=c_text(g.graph_name),
        inputs=_tensors(g.graph_inputs, g.num_graph_inputs),
        outputs=_tensors(g.graph_outputs, g.num_graph_outputs),
        version=raw.version,
        **{name: blob_fields.get(name) for name in _GRAPH_BLOB_NAMES},
    )


def binary_info(raw: c.BinaryInfo, path: Path) -> BinaryInfo:
    if raw.version not in (1, 2, 3):
        raise OracleError(f"{path}: libQnnSystem returned BinaryInfo version {raw.version}, not 1, 2 or 3")
    b = raw.u.v3 if raw.version == 3 else raw.u.v2 if raw.version == 2 else raw.u.v1
    soc_model = dsp_arch = None
    if raw.version == 3:
        soc_model = b.soc_model
        if b.context_metadata and b.context_metadata_size >= c.CONTEXT_METADATA_V1.size:
            metadata = ctypes.string_at(b.context_metadata, b.context_metadata_size)
            metadata_version, arch = c.CONTEXT_METADATA_V1.unpack_from(metadata)
            dsp_arch = arch if metadata_version == 1 else None
    graphs = tuple(_graph(b.graphs[i], path) for i in range(b.num_graphs)) if b.graphs else ()
    return BinaryInfo(
        build_id=c_text(b.build_id),
        core_api_version=_version(b.core_api_version),
        backend_api_version=_version(b.backend_api_version),
        context_blob_version=_version(b.context_blob_version),
        context_blob_size=b.context_blob_size,
        soc_model=soc_model,
        dsp_arch=dsp_arch,
        backend_id=b.backend_id,
        graphs=graphs,
        soc_version=c_text(b.soc_version),
        version=raw.version,
    )


def read_binary_info(path: str | Path, lib: str | Path | None = None) -> BinaryInfo:
    """Qualcomm's BinaryInfo for the context binary at *path*, read in this process."""
    path = Path(path)
    _, interface = system_interface(find_library(lib))
    functions = interface.functions
    buffer = bytearray(path.read_bytes())
    if not buffer:
        raise OracleError(f"{path}: empty file, not a context binary")
    data = (ctypes.c_uint8 * len(buffer)).from_buffer(buffer)
    handle = ctypes.c_void_p()
    error = functions.system_context_create(ctypes.byref(handle))
    if error:
        raise OracleError(f"{path}: libQnnSystem could not create a system context (error {error & 0xFFFF})")
    try:
        raw = ctypes.POINTER(c.BinaryInfo)()
        if functions.system_context_get_binary_info:
            size = ctypes.c_uint64(0)
            error = functions.system_context_get_binary_info(
                handle, ctypes.addressof(data), len(buffer), ctypes.byref(raw), ctypes.byref(size)
            )
        else:
            error = functions.system_context_get_metadata(
                handle, ctypes.addressof(data), len(buffer), ctypes.byref(raw)
            )
        if error or not raw:
            raise OracleError(f"{path}: libQnnSystem could not read it (error {error & 0xFFFF})")
        return binary_info(raw.contents, path)
    finally:
        functions.system_context_free(handle)


# --- JSON, and the isolated reader ---------------------------------------------------------


def to_dict(info: BinaryInfo) -> dict[str, Any]:
    """*info* as plain JSON-ready data (tuples become lists)."""
    return dataclasses.asdict(info)


def _tuple_or_none(values: list[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def _tensor_from_dict(data: dict[str, Any]) -> TensorInfo:
    return TensorInfo(
        **{
            **data,
            "dims": tuple(data["dims"]),
            "scales": _tuple_or_none(data.get("scales")),
            "offsets": _tuple_or_none(data.get("offsets")),
        }
    )


def from_dict(data: dict[str, Any]) -> BinaryInfo:
    """The inverse of :func:`to_dict`."""
    graphs = tuple(
        GraphInfo(
            **{
                **graph,
                "inputs": tuple(_tensor_from_dict(t) for t in graph["inputs"]),
                "outputs": tuple(_tensor_from_dict(t) for t in graph["outputs"]),
            }
        )
        for graph in data["graphs"]
    )
    return BinaryInfo(**{**data, "graphs": graphs})


# Exit codes of `python -m q9diff.oracle`, so the parent can tell refusal from absence.
_EXIT_ORACLE_ERROR = 2
_EXIT_UNAVAILABLE = 3


def run_isolated(path: str | Path, module: str, args: list[str], timeout: float) -> str:
    """`python -m MODULE ARGS` in a child process, in a private work folder: its standard output, or an
    OracleError (OracleUnavailable: no libQnnSystem) naming `path`, also when the library crashes it."""
    from q9diff.guard import child_env, package_root, private_work, python_argv  # start-up: guard

    command = python_argv(module, args)
    try:
        with private_work("q9diff-oracle-") as work:
            child = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                   cwd=package_root(), env=child_env(work))  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise OracleError(f"{path}: libQnnSystem did not answer within {timeout} s") from exc
    message = (child.stderr.strip().splitlines() or [""])[-1]
    if child.returncode == _EXIT_UNAVAILABLE:
        raise OracleUnavailable(message)
    if child.returncode == _EXIT_ORACLE_ERROR:
        raise OracleError(message)
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        raise OracleError(f"{path}: libQnnSystem crashed while reading it ({name})")
    if child.returncode != 0:
        raise OracleError(f"{path}: the oracle process failed (exit {child.returncode}): {message}")
    return child.stdout


def read_binary_info_isolated(
    path: str | Path, lib: str | Path | None = None, timeout: float = 60
) -> BinaryInfo:
    """Like :func:`read_binary_info`, but in a child process, so a crash in libQnnSystem is an OracleError."""
    args = ["--json", str(Path(path).resolve())] + (["--lib", str(Path(lib).resolve())] if lib else [])
    out = run_isolated(path, "q9diff.oracle", args, timeout)
    try:
        return from_dict(json.loads(out))
    except (ValueError, KeyError, TypeError) as exc:
        raise OracleError(f"{path}: the oracle process printed no BinaryInfo JSON ({exc})") from exc


@contextlib.contextmanager
def stdout_to_stderr():
    """Keep anything the native library prints off stdout, which carries the JSON."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m q9diff.oracle",
        description="Print libQnnSystem's BinaryInfo for a context binary as JSON.",
    )
    parser.add_argument("path", help="a QNN context binary")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the only output form; kept explicit)"
    )
    parser.add_argument("--lib", help="path of libQnnSystem.so")
    args = parser.parse_args(argv)
    try:
        with stdout_to_stderr():
            info = read_binary_info(args.path, args.lib)
    except OracleUnavailable as exc:
        print(exc, file=sys.stderr)
        return _EXIT_UNAVAILABLE
    except (OracleError, OSError) as exc:
        print(exc, file=sys.stderr)
        return _EXIT_ORACLE_ERROR
    print(json.dumps(to_dict(info), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
