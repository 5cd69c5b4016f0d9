"""The oracle for DLCs: Qualcomm's own reading of a DLC through libQnnSystem's DLC entry points, and every
field q9diff reads of it judged against that reading.

libQnnSystem.so exports only `QnnSystemInterface_getProviders`; the DLC functions are entries of its
function table, in QNN_SYSTEM_INTERFACE_VER_TYPE's order (public QnnSystemInterface.h, system API 1.15.0
in onnxruntime-qnn 2.7.0): createFromFile (8), free (12), getComposableGraphInfoHandles (27),
getContextBinaryInfoHandles (28), getComposableGraphInfo (29) and getContextBinaryInfo (30). A graph
DLC gives each graph's name and its input and output tensors; a context DLC each cache's BinaryInfo,
read with the context-binary oracle's layouts. Read in a child process (`python -m q9diff.oracle.dlc
FILE`), so a crash in the library is an OracleError, never q9diff's.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import sys
from pathlib import Path

from q9diff.oracle import layouts as c
from q9diff.oracle.reader import (
    OracleError,
    OracleUnavailable,
    binary_info,
    c_text,
    find_library,
    run_isolated,
    stdout_to_stderr,
    system_interface,
    tensor_info,
)

FUNCTIONS_AT = 32  # the function table's offset in QnnSystemInterface_t (x86_64)
CREATE_FROM_FILE, FREE = 8, 12
GRAPH_HANDLES, CACHE_HANDLES, GRAPH_INFO, CACHE_INFO = 27, 28, 29, 30
TABLE_LENGTH = 31

Error = ctypes.c_uint64
Handles = ctypes.CFUNCTYPE(
    Error, ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)), ctypes.POINTER(ctypes.c_uint32)
)


class ComposableGraphInfoV1(ctypes.Structure):
    _fields_ = [
        ("graph_name", ctypes.c_char_p),
        ("num_graph_inputs", ctypes.c_uint32),
        ("graph_inputs", ctypes.POINTER(c.Tensor)),
        ("num_graph_outputs", ctypes.c_uint32),
        ("graph_outputs", ctypes.POINTER(c.Tensor)),
    ]


class ComposableGraphInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("v1", ComposableGraphInfoV1)]


def read_dlc(path: str | Path) -> dict:
    """libQnnSystem's reading of the DLC at `path`, in this process: {"graphs": [...], "caches": [...]}."""
    path = Path(path)
    _, interface = system_interface(find_library())
    table = (ctypes.c_void_p * TABLE_LENGTH).from_address(ctypes.addressof(interface) + FUNCTIONS_AT)
    if not all(
        table[i] for i in (CREATE_FROM_FILE, FREE, GRAPH_HANDLES, CACHE_HANDLES, GRAPH_INFO, CACHE_INFO)
    ):
        raise OracleUnavailable("this libQnnSystem has no DLC graph and cache info functions")
    create = ctypes.CFUNCTYPE(Error, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))(
        table[CREATE_FROM_FILE]
    )
    free = ctypes.CFUNCTYPE(Error, ctypes.c_void_p)(table[FREE])
    graph_info = ctypes.CFUNCTYPE(
        Error, ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ComposableGraphInfo))
    )(table[GRAPH_INFO])
    cache_info = ctypes.CFUNCTYPE(Error, ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(c.BinaryInfo)))(
        table[CACHE_INFO]
    )
    handle = ctypes.c_void_p()
    error = create(None, str(path).encode(), ctypes.byref(handle))
    if error or not handle:
        raise OracleError(f"{path}: libQnnSystem could not open it as a DLC (error {error & 0xFFFF})")
    try:
        graphs = []
        for h in _handles(Handles(table[GRAPH_HANDLES]), handle, path):
            raw = ctypes.POINTER(ComposableGraphInfo)()
            error = graph_info(h, ctypes.byref(raw))
            if error or not raw or raw.contents.version != 1:
                raise OracleError(f"{path}: libQnnSystem gave no graph info (error {error & 0xFFFF})")
            g = raw.contents.v1
            graphs.append(
                {
                    "name": c_text(g.graph_name),
                    "inputs": [
                        dataclasses.asdict(tensor_info(g.graph_inputs[i])) for i in range(g.num_graph_inputs)
                    ],
                    "outputs": [
                        dataclasses.asdict(tensor_info(g.graph_outputs[i]))
                        for i in range(g.num_graph_outputs)
                    ],
                }
            )
        caches = []
        for h in _handles(Handles(table[CACHE_HANDLES]), handle, path):
            raw = ctypes.POINTER(c.BinaryInfo)()
            error = cache_info(h, ctypes.byref(raw))
            if error or not raw:
                raise OracleError(f"{path}: libQnnSystem gave no cache info (error {error & 0xFFFF})")
            caches.append(dataclasses.asdict(binary_info(raw.contents, path)))
        return {"graphs": graphs, "caches": caches}
    finally:
        free(handle)


def _handles(function, dlc: ctypes.c_void_p, path: Path) -> list[int]:
    found = ctypes.POINTER(ctypes.c_void_p)()
    count = ctypes.c_uint32(0)
    error = function(dlc, ctypes.byref(found), ctypes.byref(count))
    if error:
        raise OracleError(
            f"{path}: libQnnSystem could not list its graphs or caches (error {error & 0xFFFF})"
        )
    return [found[i] for i in range(count.value)] if found else []


def read_dlc_isolated(path: str | Path, timeout: float = 60) -> dict:
    """`read_dlc` in a child process: a crash in libQnnSystem is an OracleError."""
    return json.loads(run_isolated(path, "q9diff.oracle.dlc", [str(Path(path).resolve())], timeout))


def judged(path: str | Path, oracle: dict | None = None) -> tuple[int, list[str]]:
    """(fields compared, disagreements): every field libQnnSystem reports of the DLC against q9diff's
    reading (graph names and I/O tensors of a graph DLC; each cache's build id, soc_model, dsp_arch,
    versions, blob size, graph names and VTCM, from the metadata JSON and from the cache read as a context
    binary)."""
    from q9diff.read.binary import ContextBinary  # start-up: read.binary
    from q9diff.read.dlc import Dlc  # start-up: read.dlc

    theirs = read_dlc_isolated(path) if oracle is None else oracle
    dlc = Dlc.open(path)
    seen: list[tuple[str, object, object]] = []
    graphs = dlc.graphs
    seen.append(("graphs", len(graphs), len(theirs["graphs"])))
    for g, t in zip(graphs, theirs["graphs"]):
        seen.append((f"graph {g.name}: name", g.name, t["name"]))
        for side, kind in (("inputs", 0), ("outputs", 1)):
            ours = [x for x in g.tensors if x.type == kind]
            seen.append((f"{g.name} {side}", len(ours), len(t[side])))
            for x, y in zip(ours, t[side]):
                seen += _tensor_fields(f"{g.name} {side} {x.name}", x, y)
    caches = dlc.caches
    seen.append(("caches", len(caches), len(theirs["caches"])))
    for cache, t in zip(caches, theirs["caches"]):
        info = cache.info
        cb = ContextBinary(dlc.buf[cache.offset : cache.offset + cache.size], cache.name)
        where = cache.name
        blob = [g.get("graphBlobInfo") or {} for g in info.get("graphs") or []]
        seen += [
            (f"{where} buildId (metadata)", info.get("buildId"), t["build_id"]),
            (f"{where} build_id (cache)", cb.build_id, t["build_id"]),
            (f"{where} socModel (metadata)", info.get("socModel"), t["soc_model"]),
            (f"{where} soc_model (cache)", cb.soc_model, t["soc_model"]),
            (
                f"{where} dspArch (metadata)",
                (info.get("contextMetadata") or {}).get("dspArch"),
                t["dsp_arch"],
            ),
            (f"{where} dsp_arch (cache)", cb.dsp_arch, t["dsp_arch"]),
            (f"{where} backendId", info.get("backendId"), t["backend_id"]),
            (f"{where} coreApiVersion", info.get("coreApiVersion"), t["core_api_version"]),
            (f"{where} backendApiVersion", info.get("backendApiVersion"), t["backend_api_version"]),
            (f"{where} contextBlobVersion", info.get("contextBlobVersion"), t["context_blob_version"]),
            (f"{where} contextBlobSize", info.get("contextBlobSize"), t["context_blob_size"]),
            (
                f"{where} graphs (metadata)",
                [g.get("graphName") for g in info.get("graphs") or []],
                [g["name"] for g in t["graphs"]],
            ),  # fmt: skip
            (f"{where} graphs (cache)", [g.name for g in cb.graphs], [g["name"] for g in t["graphs"]]),
            (
                f"{where} vtcmSize MiB (metadata)",
                [b.get("vtcmSize", 0) << 20 for b in blob],
                [g["vtcm_size"] for g in t["graphs"]],
            ),  # fmt: skip
        ]
    return len(seen), [f"{name}: q9diff {a!r}, libQnnSystem {b!r}" for name, a, b in seen if a != b]


def _tensor_fields(where: str, x, y: dict) -> list[tuple[str, object, object]]:
    from q9diff.read.tables import DATATYPE_NAMES, TENSOR_TYPE_NAMES  # start-up: read.tables

    e = x.encoding
    return [
        (f"{where} name", x.name, y["name"]),
        (f"{where} id", x.id, y["id"]),
        (f"{where} type", TENSOR_TYPE_NAMES.get(x.type), y["tensor_type"]),
        (f"{where} data type", DATATYPE_NAMES.get(x.data_type), y["dtype"]),
        (f"{where} dims", list(x.dims), list(y["dims"])),
        (f"{where} scale", None if e is None else e.scale, y["scale"]),
        (f"{where} offset", None if e is None else e.offset, y["offset"]),
    ]


def disagreements(path: str | Path) -> list[str]:
    """Where q9diff's reading of the DLC disagrees with libQnnSystem's, a line each."""
    return judged(path)[1]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m q9diff.oracle.dlc FILE", file=sys.stderr)
        return 2
    try:
        with stdout_to_stderr():
            found = read_dlc(args[0])
    except OracleUnavailable as exc:
        print(exc, file=sys.stderr)
        return 3
    except (OracleError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
