"""The runner interface every runner implements: sessions, graph and tensor specs, device encodings."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from q9diff.errors import Q9Error


def shown_path(path: str | os.PathLike) -> str:
    """A path as a report carries it: relative to the working folder when it lies under it (as the user
    named the inputs), so a saved report or a CI artifact carries no path of the machine that ran it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve())) if p.is_absolute() else str(p)
    except (ValueError, OSError):
        return str(p)


# QNN data type name (q9diff.read.tables.DATATYPE_NAMES) -> numpy dtype name of the I/O buffer.
QNN_TO_NUMPY = {
    "INT_8": "int8",
    "INT_16": "int16",
    "INT_32": "int32",
    "INT_64": "int64",
    "UINT_8": "uint8",
    "UINT_16": "uint16",
    "UINT_32": "uint32",
    "UINT_64": "uint64",
    "FLOAT_16": "float16",
    "FLOAT_32": "float32",
    "FLOAT_64": "float64",
    "SFIXED_POINT_8": "int8",
    "SFIXED_POINT_16": "int16",
    "SFIXED_POINT_32": "int32",
    "UFIXED_POINT_8": "uint8",
    "UFIXED_POINT_16": "uint16",
    "UFIXED_POINT_32": "uint32",
    "BOOL_8": "bool",
}


class RunnerError(Q9Error, RuntimeError):
    """A binary could not be run; the message is one line naming what failed."""


class RunnerUnavailable(RunnerError):
    """The runner cannot work on this machine; the message says what is missing."""


@dataclass(frozen=True)
class TensorSpec:
    """One graph input or output as the runtime sees it; scale/offset for quantized (fixed-point) I/O."""

    name: str
    dtype: str  # numpy dtype name
    shape: tuple[int, ...]
    scale: float | None = None
    offset: int | None = None

    @property
    def quantized(self) -> bool:
        return self.scale is not None and np.issubdtype(np.dtype(self.dtype), np.integer)

    def to_dict(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "scale": self.scale,
                "offset": self.offset}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> TensorSpec:
        return cls(d["name"], d["dtype"], tuple(int(x) for x in d["shape"]), d.get("scale"), d.get("offset"))


@dataclass(frozen=True)
class GraphSpec:
    """A runnable graph: where it lives (a .bin, or an .onnx for the CPU runner), its name and its I/O."""

    source: str
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    part: int = 0  # which binary (part of a split model) of the opened set it belongs to

    def input(self, name: str) -> TensorSpec | None:
        return next((t for t in self.inputs if t.name == name), None)

    def output(self, name: str) -> TensorSpec | None:
        return next((t for t in self.outputs if t.name == name), None)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "name": self.name,
            "inputs": [t.to_dict() for t in self.inputs],
            "outputs": [t.to_dict() for t in self.outputs],
            "part": self.part,
        }

    @classmethod
    def from_dict(cls, d: dict) -> GraphSpec:
        return cls(
            d["source"],
            d["name"],
            tuple(TensorSpec.from_dict(t) for t in d["inputs"]),
            tuple(TensorSpec.from_dict(t) for t in d["outputs"]),
            int(d.get("part", 0)),
        )


def machine_memory() -> int | None:
    """This machine's physical memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


# verify keeps each I/O value as the graph's buffer, a float copy and a float64 copy to compare:
# bytes per element, at most, per side.
_BYTES_PER_ELEMENT_HELD = 8 + 4 + 8


def check_io_size(path: Path | str, graph: GraphSpec, memory: int | None = None) -> None:
    """Refuse, before anything is allocated, a graph whose inputs and outputs (dims read from the file)
    need more memory than this machine has: a corrupt or hostile file must not exhaust it."""
    memory = machine_memory() if memory is None else memory
    elements = [
        (t, math.prod(int(d) for d in t.shape if isinstance(d, int))) for t in graph.inputs + graph.outputs
    ]
    need = sum(n for _, n in elements) * _BYTES_PER_ELEMENT_HELD
    if memory is not None and need > memory:
        t, n = max(elements, key=lambda e: e[1])
        raise RunnerError(
            f"{path}: graph {graph.name}: refusing to run it, its inputs and outputs need {need:,} bytes "
            f"(largest: {t.name} {list(t.shape)}, {n:,} elements), more than this machine's {memory:,}"
        )


def graph_specs(path: Path, part: int = 0) -> list[GraphSpec]:
    """The graphs of a context binary, from its metadata (no Qualcomm library involved); a graph whose
    I/O would not fit in this machine's memory is refused here, before any buffer exists."""
    from q9diff.read.openers import open_binary  # start-up: read.openers, construct

    cb = open_binary(path)

    def spec(t) -> TensorSpec:
        if t.dtype not in QNN_TO_NUMPY:
            raise RunnerError(f"{path}: tensor {t.name} has data type {t.dtype}, which q9diff cannot feed")
        return TensorSpec(t.name, QNN_TO_NUMPY[t.dtype], tuple(t.dims), t.scale, t.offset)

    specs = [
        GraphSpec(
            str(path), g.name, tuple(spec(t) for t in g.inputs), tuple(spec(t) for t in g.outputs), part
        )
        for g in cb.graphs
    ]
    for g in specs:
        check_io_size(path, g)
    return specs


def to_device(spec: TensorSpec, value: np.ndarray) -> np.ndarray:
    """A float array as the graph's input buffer: quantized with QNN's rule real = scale * (q + offset)."""
    value = np.asarray(value)
    # An ONNX model's symbolic dims ("batch") take the value's shape; a binary's dims are all numbers.
    shape = spec.shape if all(isinstance(d, int) for d in spec.shape) else value.shape
    if spec.quantized:
        info = np.iinfo(np.dtype(spec.dtype))
        q = np.round(value.astype(np.float64) / spec.scale) - spec.offset
        return np.clip(q, info.min, info.max).astype(spec.dtype).reshape(shape)
    return value.astype(spec.dtype).reshape(shape)


def from_device(spec: TensorSpec, value: np.ndarray) -> np.ndarray:
    """An output buffer as floats (dequantized when the graph's output is fixed-point)."""
    if spec.quantized:
        return ((value.astype(np.float64) + spec.offset) * spec.scale).astype(np.float32)
    return np.asarray(value)


class Session(Protocol):
    """Binaries loaded by a runner; graphs in the order of the binaries, then of their metadata."""

    graphs: tuple[GraphSpec, ...]
    notes: tuple[str, ...]  # what the runner did that a user must know (fallbacks, rebuilds)

    def run(self, graph: GraphSpec, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one graph; inputs and outputs as the graph's own buffers (see to_device/from_device)."""

    def close(self) -> None: ...


class Runner(Protocol):
    name: str

    def missing(self) -> str | None:
        """None when usable here, else one sentence naming what is missing."""

    def open(self, binaries: list[Path]) -> Session: ...
