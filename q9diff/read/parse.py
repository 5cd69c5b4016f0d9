"""The one door between the byte layouts (`q9diff.formats`, construct definitions) and the walkers.

A definition parses the bytes of a file's buffer at an offset, reading no further than `end` and copying
only what it reads (a 1 GB mapping is never copied whole); whatever construct raises becomes a FormatError
naming the file, the offset and what was expected, as pyelftools' struct_parse does for ELF.

A definition parsed many times in one process (PickleHeader and AuxRecord in a file of thousands of graphs)
is compiled once it is hot: construct's compiled parser reads a header ~4x faster, but compiling costs a
few milliseconds, more than a file of a few graphs spends parsing. The compiled parsers read with
`io.read(n)` and do not check that n bytes came back; `View` raises when they do not, so both parsers
stop at the same bytes (tests/test_formats.py holds them to the same answers on every fixture and on
mutated records).
"""

from __future__ import annotations

import mmap
import struct

from construct import Construct, ConstructError, ExplicitError, StreamError

from q9diff.errors import FormatError


def read_errors() -> tuple[type[Exception], ...]:
    """What a walker raises on bytes it cannot make sense of, beside the FormatError `parse` gives: the
    callers that say it in one line catch these."""
    return (ValueError, IndexError, struct.error)


class Hot:
    """The parsers of hot definitions in this process: each interpreted until it has been parsed
    `compile_after` times, then compiled once."""

    def __init__(self, compile_after: int = 64) -> None:
        self.compile_after = compile_after
        self.uses: dict[int, int] = {}
        self.compiled: dict[int, Construct] = {}

    def parser(self, definition: Construct) -> Construct:
        key = id(definition)
        compiled = self.compiled.get(key)
        if compiled is not None:
            return compiled
        self.uses[key] = uses = self.uses.get(key, 0) + 1
        if uses < self.compile_after:
            return definition
        self.compiled[key] = compiled = definition.compile()
        return compiled

    def is_compiled(self, definition: Construct) -> bool:
        return id(definition) in self.compiled


HOT = Hot()


class View:
    """A read-only stream over `buf[start:end]` for construct: positions are relative to `start`, and a
    read must be satisfied whole (a short read raises StreamError, as construct's interpreted parsers do
    and its compiled ones do not)."""

    __slots__ = ("buf", "start", "end", "pos")

    def __init__(self, buf, start: int, end: int) -> None:
        self.buf, self.start, self.end, self.pos = buf, start, end, start

    def read(self, n: int | None = None) -> bytes:
        pos = self.pos
        if n is None:
            stop = self.end
        elif n < 0 or n > self.end - pos:
            raise StreamError(f"{n} bytes at {pos:#x}, {self.end - pos} left")
        else:
            stop = pos + n
        self.pos = stop
        return bytes(self.buf[pos:stop])

    def seek(self, offset: int, whence: int = 0) -> int:
        pos = (self.start, self.pos, self.end)[whence] + offset
        if not self.start <= pos <= self.end:
            raise StreamError(f"a position inside {self.start:#x}..{self.end:#x} (got {pos:#x})")
        self.pos = pos
        return pos - self.start

    def tell(self) -> int:
        return self.pos - self.start


def parse(
    definition: Construct,
    buf,
    offset: int,
    path: str,
    what: str,
    end: int | None = None,
    hot: bool = False,
    located: bool = True,
):
    """`definition` parsed from `buf[offset:end]` (`end` defaults to the buffer's end), or FormatError at
    `offset` (none where `buf` is not the file's, `located` False) saying `what` was expected and, in
    brackets, which field failed, where and why. `hot`: compile the definition once it has been parsed
    often in this process (HOT)."""
    stream = View(buf, offset, len(buf) if end is None else end)
    try:
        return (HOT.parser(definition) if hot else definition).parse_stream(stream)
    except ExplicitError:  # the definition's own word: the bytes are none of the kinds it knows
        raise FormatError(path, offset if located else None, what) from None
    except (ConstructError, struct.error) as exc:
        where = f"{stream.pos:#x}" if located else f"byte {stream.pos - offset}"
        raise FormatError(path, offset if located else None, f"{what} ({_reason(exc)}, at {where})") from None


def matches(definition: Construct, buf, offset: int, end: int | None = None):
    """`definition` parsed from `buf[offset:end]`, or None where the bytes there are not that record (a
    constant differs, or they run out)."""
    try:
        return definition.parse_stream(View(buf, offset, len(buf) if end is None else end))
    except (ConstructError, struct.error):
        return None


def offset_of(definition: Construct, name: str) -> int:
    """Where a fixed-size field starts in a Struct: the sizes of the fields before it."""
    at = 0
    for sub in definition.subcons:
        if sub.name == name:
            return at
        at += sub.sizeof()
    raise KeyError(name)


def _reason(exc: Exception) -> str:
    """One line from a construct error: the field path it names, then its last line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    where = getattr(exc, "path", None) or ""
    where = where.replace("(parsing)", "").strip(" ->")
    reason = lines[-1] if lines else type(exc).__name__
    return f"{where}: {reason}" if where else reason


def zeros(data: memoryview, start: int, end: int) -> bool:
    """Whether every byte of data[start:end] is zero, compared a MiB at a time with a MiB of zeros
    (bytes.strip walks zeros byte by byte: a 2 GiB sparse trailer took 13 s). Where the bytes are a mapped
    file, each MiB's pages are let go once compared, so a trailer of any size costs a MiB of memory, not
    its own size (the same trailer held 2 GiB resident)."""
    step = 1 << 20
    zero = bytes(min(step, max(end - start, 0)))
    owner = data.obj  # offsets are the mapping's only where the view is the whole of it
    release = isinstance(owner, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") and len(data) == len(owner)
    for s in range(start, end, step):
        e = min(s + step, end)
        if bytes(data[s:e]) != zero[: e - s]:
            return False
        if release:  # a read-only shared mapping: the pages come back from the file if read again
            page = s - s % mmap.PAGESIZE
            owner.madvise(mmap.MADV_DONTNEED, page, e - page)
    return True
