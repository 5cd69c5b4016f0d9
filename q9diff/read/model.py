"""What a context binary holds, as frozen values: tensors, records, ops, graphs, byte regions and a
pickle's layout. `ContextBinary` (q9diff.read.binary) builds them from the bytes; nothing here reads
files."""

from __future__ import annotations

from dataclasses import dataclass

BLOB_INFO_FIELDS = (
    "spill_fill_buffer_size vtcm_size optimization_level htp_dlbc num_hvx_threads io_tensor_size "
    "op_data_size const_size ddr_tensor_size shared_weights_size"
).split()
BLOB_INFO_V2_EXTRA = ("native_k_channel_size", "native_v_channel_size", "is_safe_share_io")


@dataclass(frozen=True)
class Tensor:
    """A graph input or output: name, id, data type, shape and quantization (scale, offset) as recorded."""

    name: str
    id: int
    dtype: str
    dims: tuple[int, ...]
    scale: float | None
    offset: int | None
    tensor_type: str
    data_format: int = 0  # Qnn_TensorDataFormat_t; 0 = dense (flat buffer)
    encoding_definition: int | None = None  # Qnn_Definition_t of the quantize params; None: not recorded


@dataclass(frozen=True)
class Record:
    """One entry of the blob's record directory (ROOT, PICKLE/<n>/<graph>, WEIGHTS/0)."""

    name: str
    offset: int  # absolute file offset
    size: int
    align: int


@dataclass(frozen=True)
class Op:
    """One op record, as `ContextBinary.ops` hands it out (the walk itself keeps kinds and offsets)."""

    index: int
    kind: str  # the HTP kernel name from the op-type table
    offset: int  # absolute file offset of the op record


@dataclass(frozen=True)
class Graph:
    """A graph of a context binary as its metadata records it: its tensors, its options, its ops."""

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    spill_fill_buffer_size: int | None = None
    vtcm_size: int | None = None
    optimization_level: int | None = None
    htp_dlbc: int | None = None
    num_hvx_threads: int | None = None
    io_tensor_size: int | None = None
    op_data_size: int | None = None
    const_size: int | None = None
    ddr_tensor_size: int | None = None
    shared_weights_size: int | None = None
    graph_info_version: int = 3
    # (field, why it is unknown) for every blob-info field the file does not record.
    unknown: tuple[tuple[str, str], ...] = ()
    # graphBlobInfo version 2's other fields, and the bytes of graphBlobInfo the file records (112 with
    # version 2, 40 with version 1 alone); None where not recorded.
    native_k_channel_size: int | None = None
    native_v_channel_size: int | None = None
    is_safe_share_io: int | None = None
    blob_info_size: int | None = None


# What a region holds, as the walker that names it knows: the weights (a graph's const_pool, a shared
# WEIGHTS/<n>/pool) and a shared pool's header; the compiler's options string; the schedule (op list,
# allocator, aux tables, program end marker); zero padding; bytes no documented structure explains; and
# every other header, directory, size and metadata structure.
KINDS = ("weights", "weights_header", "options", "schedule", "padding", "unknown", "structure")


@dataclass(frozen=True)
class Region:
    """A named byte range; `name` is a path such as `PICKLE[0]/inner/const_pool`. `kind` is what the
    walker found there (one of KINDS), so no reader guesses it from the name."""

    name: str
    offset: int
    size: int
    kind: str = "structure"

    @property
    def leaf(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class PickleLayout:
    """What the walk of one PICKLE record found: its regions, options text and ops. The op list is two
    parallel tuples (op n is `op_kinds[n]`, its record at `op_offsets[n]`): a seed part's two graphs
    hold ~36,000 ops, and a diff needs only their kinds, so no object per op is made unless `ops` is asked."""

    regions: tuple[Region, ...]
    options_text: str
    op_kinds: tuple[str, ...]
    op_offsets: tuple[int, ...]

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(map(Op, range(len(self.op_kinds)), self.op_kinds, self.op_offsets))
