"""A schema-less, bounds-checked FlatBuffer table reader over a memoryview.

Every offset read from the file is checked against the buffer before it is followed, so a corrupt
file raises FormatError instead of reading garbage or allocating a huge list.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from q9diff.errors import FormatError
from q9diff.formats.flatbuffer_slots import BYTES, STRING, STRINGS, TABLE, TABLES, Field, Vector

MAX_VECTOR = 1 << 20


class Budget:
    """Work allowed for one FlatBuffer: a tree of tables and vectors cannot hold more items than its
    bytes (each takes at least 4), so a file whose tables share children (a DAG that would be walked
    again and again) is refused once the walk reads more items than that."""

    def __init__(self, size: int):
        self.left = size // 4 + 1024

    def spend(self, n: int, path: str, pos: int) -> None:
        self.left -= n
        if self.left < 0:
            raise FormatError(
                path,
                pos,
                "FlatBuffer tables that do not share children (the walk read more than the bytes hold)",
            )


class Table:
    """One FlatBuffer table at absolute position `pos` of `buf` (positions are absolute in the file)."""

    def __init__(
        self,
        buf: memoryview,
        pos: int,
        path: str,
        base: int = 0,
        end: int | None = None,
        budget: Budget | None = None,
    ):
        self.buf, self.pos, self.path, self.base = buf, pos, path, base
        self.end = len(buf) if end is None else end
        self.budget = budget or Budget(self.end - self.base)
        self.budget.spend(1, path, pos)
        vt = pos - self._i32(pos)
        self._check(vt, 4, "a FlatBuffer vtable")
        vlen, _ = struct.unpack_from("<HH", buf, vt)
        if vlen < 4 or vlen % 2:
            raise FormatError(path, vt, f"a FlatBuffer vtable length of at least 4, even (got {vlen})")
        self._check(vt, vlen, "a FlatBuffer vtable")
        self.slots = struct.unpack_from(f"<{(vlen - 4) // 2}H", buf, vt + 4)

    def _check(self, pos: int, size: int, what: str) -> None:
        if pos < self.base or size < 0 or pos + size > self.end:
            raise FormatError(self.path, pos, f"{what} inside bytes {self.base:#x}..{self.end:#x}")

    def _i32(self, pos: int) -> int:
        self._check(pos, 4, "a FlatBuffer offset")
        return struct.unpack_from("<i", self.buf, pos)[0]

    def field(self, slot: int) -> int | None:
        """Absolute position of a slot's inline data, or None if the slot is absent."""
        if slot >= len(self.slots) or self.slots[slot] == 0:
            return None
        return self.pos + self.slots[slot]

    def has(self, slot: int) -> bool:
        return self.field(slot) is not None

    def scalar(self, slot: int, fmt: str, default=None):
        """A scalar slot by its struct code (little-endian unless the code says otherwise)."""
        pos = self.field(slot)
        if pos is None:
            return default
        fmt = _little(fmt)
        self._check(pos, struct.calcsize(fmt), "a FlatBuffer scalar")
        return struct.unpack_from(fmt, self.buf, pos)[0]

    def _deref(self, slot: int) -> int | None:
        pos = self.field(slot)
        if pos is None:
            return None
        target = pos + self._i32(pos)
        self._check(target, 4, "a FlatBuffer reference")
        return target

    def table(self, slot: int) -> Table | None:
        target = self._deref(slot)
        return (
            None if target is None else Table(self.buf, target, self.path, self.base, self.end, self.budget)
        )

    def raw_vector(self, slot: int) -> tuple[int, int] | None:
        """(position of the first element, element count) of a vector slot."""
        target = self._deref(slot)
        if target is None:
            return None
        n = self._i32(target)
        if n < 0 or n > MAX_VECTOR:
            raise FormatError(self.path, target, f"a FlatBuffer vector length below {MAX_VECTOR} (got {n})")
        self.budget.spend(n // 4 + 1, self.path, target)
        return target + 4, n

    def bytes(self, slot: int) -> bytes | None:
        vec = self.raw_vector(slot)
        if vec is None:
            return None
        start, n = vec
        self._check(start, n, "FlatBuffer vector bytes")
        return bytes(self.buf[start : start + n])

    def string(self, slot: int) -> str | None:
        raw = self.bytes(slot)
        return None if raw is None else raw.decode("utf-8", "replace")

    def scalars(self, slot: int, fmt: str) -> tuple:
        vec = self.raw_vector(slot)
        if vec is None:
            return ()
        start, n = vec
        fmt = _little(fmt)
        size = struct.calcsize(fmt)
        self._check(start, n * size, "a FlatBuffer scalar vector")
        return struct.unpack_from(f"{fmt[0]}{n}{fmt[1:]}", self.buf, start)

    def tables(self, slot: int) -> list[Table]:
        vec = self.raw_vector(slot)
        if vec is None:
            return []
        start, n = vec
        self._check(start, 4 * n, "a FlatBuffer table vector")
        out = []
        for i in range(n):
            p = start + 4 * i
            out.append(Table(self.buf, p + self._i32(p), self.path, self.base, self.end, self.budget))
        return out

    def strings(self, slot: int) -> list[str]:
        """A vector of strings (empty when absent), each bounds-checked as a vector of bytes."""
        vec = self.raw_vector(slot)
        if vec is None:
            return []
        start, n = vec
        self._check(start, 4 * n, "a FlatBuffer string vector")
        out = []
        for i in range(n):
            p = start + 4 * i
            target = p + self._i32(p)
            size = self._i32(target)
            self._check(target + 4, size, "FlatBuffer string bytes")
            self.budget.spend(size // 4 + 1, self.path, target)
            out.append(bytes(self.buf[target + 4 : target + 4 + size]).decode("utf-8", "replace"))
        return out

    def struct_at(self, slot: int, parse: Callable[[bytes], object], size: int):
        pos = self.field(slot)
        if pos is None:
            return None
        self._check(pos, size, "an inline FlatBuffer struct")
        return parse(bytes(self.buf[pos : pos + size]))

    def get(self, field: Field, default=None):
        """A field by its row of a slot map (q9diff.formats.flatbuffer_slots), or `default` when absent: a
        scalar or an inline struct by its construct definition, a string, bytes, a table, a list of tables
        or of strings (empty when absent) or a tuple of scalars."""
        slot, kind = field
        reader = self._BY_KIND.get(kind) if isinstance(kind, str) else None
        if reader is not None:
            value = reader(self, slot)
        elif isinstance(kind, Vector):
            return self.scalars(slot, kind.of.fmtstr)
        elif hasattr(kind, "fmtstr"):  # a construct scalar: read with its own struct code
            value = self.scalar(slot, kind.fmtstr)
        else:  # a fixed-size construct Struct, inline
            value = self.struct_at(slot, kind.parse, kind.sizeof())
        return default if value is None else value

    _BY_KIND = {STRING: string, BYTES: bytes, TABLE: table, TABLES: tables, STRINGS: strings}


def _little(fmt: str) -> str:
    """A struct code with its byte order: little-endian where it names none (FlatBuffers are)."""
    return fmt if fmt[0] in "<>=!@" else "<" + fmt


def root(buf: memoryview, start: int, size: int, path: str) -> Table:
    """The root table of a FlatBuffer occupying buf[start:start+size] (no identifier, no size prefix)."""
    if size < 8 or start + size > len(buf):
        raise FormatError(path, start, f"a FlatBuffer of {size} bytes inside the file")
    off = struct.unpack_from("<I", buf, start)[0]
    if off >= size:
        raise FormatError(path, start, f"a FlatBuffer root offset below {size} (got {off})")
    return Table(buf, start + off, path, start, start + size)
