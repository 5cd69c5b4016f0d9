"""Give Qualcomm's HTP compiler what ONNX Runtime's QNN EP has no option for: graph names, weights
packing and any finalize (compiler) option.

The process that compiles wraps the `graphCreate` entry of libQnnHtp.so's QNN interface table: the
wrapper passes the graph name the recipe asks for and appends HTP graph configs to the list the EP
gave. Only the compile child calls this, after ONNX Runtime registered the QNN EP library and with the
EP's `backend_path` set to the same libQnnHtp.so, so both use one loaded copy (docs/QNN_FACTS.md,
"Knobs ONNX Runtime lacks"; measured with QAIRT 2.51). Layouts, as measured there (no header copied):

- `QnnInterface_getProviders(const QnnInterface_t*** providers, uint32_t* count)`
- a provider record: u32 backend id, char* provider name at +8, API versions (6 x u32: core major,
  minor, patch, backend major, minor, patch) at +16, the function table at +40; entry 15 is
  `graphCreate(context, const char* name, const QnnGraph_Config_t** configs, graph*)`
- `QnnGraph_Config_t`: u32 option (0 = custom) and a pointer to the custom config at +8
- an HTP graph custom config: u32 option, the value at +8. Option 12 (weights packing): a bool.
  Option 7 (finalize config): a key (char*) at +8 and a scalar at +16 (u32 data type, value at +24).
"""

from __future__ import annotations

import ctypes
import mmap
from dataclasses import dataclass, field

from q9diff.errors import Q9Error

INTERFACE_TABLE_OFFSET = 40
GRAPH_CREATE_ENTRY = 15
CORE_API_MAJOR = 2  # the table layout above is core API 2.x's
GRAPH_CONFIG_CUSTOM = 0
HTP_GRAPH_FINALIZE_CONFIG = 7
HTP_GRAPH_WEIGHTS_PACKING = 12
SCALAR_BOOL, SCALAR_UINT32, SCALAR_FLOAT32 = 0x0508, 0x0132, 0x0232
FINALIZE_VALUE_OFFSET = 24


class HookError(Q9Error, RuntimeError):
    """libQnnHtp.so's interface table cannot be patched; the message says why, in one line."""


class _GraphConfig(ctypes.Structure):
    _fields_ = (("option", ctypes.c_uint32), ("custom", ctypes.c_void_p))


class _HtpGraphCustomConfig(ctypes.Structure):
    _fields_ = (("option", ctypes.c_uint32), ("_pad", ctypes.c_uint32), ("value", ctypes.c_uint8 * 32))


_GRAPH_CREATE = ctypes.CFUNCTYPE(
    ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p
)


@dataclass
class GraphCreateHook:
    """The installed wrapper: what it appends, and the names of the graphs the EP created through it."""

    names: tuple[str, ...] | None
    weights_packing: bool | None
    finalize_options: tuple[tuple[str, bool | int | float], ...]
    asked: list[str] = field(default_factory=list)  # the names the EP passed, in call order
    _keep: list = field(default_factory=list)  # ctypes objects the compiler reads while compiling

    def configs(self) -> list[int]:
        """Addresses of the QnnGraph_Config_t entries to append."""
        out = []
        if self.weights_packing is not None:
            c = _HtpGraphCustomConfig(option=HTP_GRAPH_WEIGHTS_PACKING)
            c.value[0] = int(self.weights_packing)
            out.append(self._wrap(c))
        for key, value in self.finalize_options:
            c = _HtpGraphCustomConfig(option=HTP_GRAPH_FINALIZE_CONFIG)
            name = ctypes.create_string_buffer(key.encode())
            base = ctypes.addressof(c)
            ctypes.c_void_p.from_address(base + 8).value = ctypes.addressof(name)
            if isinstance(value, bool):
                ctypes.c_uint32.from_address(base + 16).value = SCALAR_BOOL
                ctypes.c_uint8.from_address(base + FINALIZE_VALUE_OFFSET).value = int(value)
            elif isinstance(value, int):
                ctypes.c_uint32.from_address(base + 16).value = SCALAR_UINT32
                ctypes.c_uint32.from_address(base + FINALIZE_VALUE_OFFSET).value = value
            else:
                ctypes.c_uint32.from_address(base + 16).value = SCALAR_FLOAT32
                ctypes.c_float.from_address(base + FINALIZE_VALUE_OFFSET).value = value
            self._keep.append(name)
            out.append(self._wrap(c))
        return out

    def _wrap(self, custom: _HtpGraphCustomConfig) -> int:
        config = _GraphConfig(GRAPH_CONFIG_CUSTOM, ctypes.addressof(custom))
        self._keep += [custom, config]
        return ctypes.addressof(config)


def install(
    htp_path: str,
    names: tuple[str, ...] | None,
    weights_packing: bool | None,
    finalize_options: tuple[tuple[str, bool | int | float], ...] = (),
) -> GraphCreateHook:
    """Wrap graphCreate of the libQnnHtp.so at `htp_path`; the i-th graph created gets `names[i]`."""
    try:
        lib = ctypes.CDLL(htp_path)
        get_providers = lib.QnnInterface_getProviders
    except (OSError, AttributeError) as exc:
        raise HookError(f"cannot load QnnInterface_getProviders from {htp_path}: {exc}") from None
    get_providers.argtypes = (
        ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)),
        ctypes.POINTER(ctypes.c_uint32),
    )
    providers, count = ctypes.POINTER(ctypes.c_void_p)(), ctypes.c_uint32()
    status = get_providers(ctypes.byref(providers), ctypes.byref(count))
    if status != 0 or count.value < 1 or not providers[0]:
        raise HookError(
            f"{htp_path}: QnnInterface_getProviders returned {status} with {count.value} providers"
        )
    record = providers[0]
    core_major = ctypes.c_uint32.from_address(record + 16).value
    if core_major != CORE_API_MAJOR:
        raise HookError(
            f"{htp_path}: QNN core API {core_major}.x; q9diff knows the interface table of {CORE_API_MAJOR}.x"
        )
    slot = record + INTERFACE_TABLE_OFFSET + 8 * GRAPH_CREATE_ENTRY
    original = ctypes.c_void_p.from_address(slot).value
    if not original:
        raise HookError(f"{htp_path}: graphCreate entry of the interface table is empty")
    hook = GraphCreateHook(tuple(names) if names is not None else None, weights_packing, finalize_options)
    appended = hook.configs()
    create = _GRAPH_CREATE(original)

    def graph_create(context, name, configs, graph):
        given = []
        while configs and configs[len(given)]:
            given.append(configs[len(given)])
        entries = (ctypes.c_void_p * (len(given) + len(appended) + 1))(*given, *appended, None)
        hook._keep.append(entries)
        index = len(hook.asked)
        hook.asked.append((name or b"").decode(errors="replace"))
        if hook.names is not None and index < len(hook.names):
            name = hook.names[index].encode()
        return create(context, name, ctypes.cast(entries, ctypes.POINTER(ctypes.c_void_p)), graph)

    wrapper = _GRAPH_CREATE(graph_create)
    hook._keep += [lib, create, wrapper]
    _make_writable(slot, htp_path)
    ctypes.c_void_p.from_address(slot).value = ctypes.cast(wrapper, ctypes.c_void_p).value
    return hook


def _make_writable(address: int, htp_path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    start = address & ~(mmap.PAGESIZE - 1)
    length = address + 8 - start
    if libc.mprotect(start, length, mmap.PROT_READ | mmap.PROT_WRITE) != 0:
        raise HookError(f"{htp_path}: cannot make the interface table writable (errno {ctypes.get_errno()})")
