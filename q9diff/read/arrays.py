"""Arrays a user gives as inputs (`verify --inputs`, `layers --inputs`): an .npz, read member by member as
its .npy headers declare them, every declaration checked before a byte of an array is inflated.

An .npz is a zip archive; a 3 MB one can inflate to gigabytes and a 192-byte header can ask for terabytes.
So each member's header (shape, dtype) is read first, the caller checks the declared shapes against the
model's inputs, the total is held to MAX_INPUT_BYTES, and only then is each array read, no more than the
bytes its header declared. No pickles: an object array is refused.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from tokenize import TokenError

import numpy as np

from q9diff.errors import Q9Error
from q9diff.guard import open_regular

MAX_INPUT_BYTES = 1 << 30
LIMIT_WORDS = "the 1 GiB q9diff reads from one --inputs file"
EXPECTED = "an .npz of named input arrays"
_KINDS = "biufc"  # bool, signed and unsigned integers, floats, complex: what a model's inputs hold


_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _header(f, name: str) -> tuple:
    """A member's (shape, Fortran order, dtype), read from its open stream up to its data."""
    version = np.lib.format.read_magic(f)
    if version not in _READERS:
        raise ValueError(f"member {name}: .npy format version {version}, not 1.0 or 2.0")
    try:
        return _READERS[version](f)
    except (SyntaxError, TypeError, TokenError, RecursionError, MemoryError) as exc:  # numpy's ast parse
        raise ValueError(f"member {name}: its header is no .npy header ({type(exc).__name__})") from None


def _headers(z: zipfile.ZipFile, path: Path, error: type[Exception]) -> dict[str, tuple]:
    """Each member's (shape, dtype, Fortran order, member) as its .npy header declares it."""
    out: dict[str, tuple] = {}
    for info in z.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        with z.open(info) as f:
            shape, fortran, dtype = _header(f, name)
        if any(int(d) < 0 for d in shape):
            raise error(f"{path}: member {name} declares the shape {list(shape)}: no dimension is below 0")
        if dtype.hasobject or dtype.kind not in _KINDS or dtype.fields:
            raise error(f"{path}: member {name} holds {dtype} values, not numbers (no pickles are read)")
        out[name] = (tuple(int(d) for d in shape), dtype, fortran, info)
    return out


def read_npz(
    path: str | Path,
    error: type[Exception],
    check: Callable[[dict[str, tuple[int, ...]]], list[str]] | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of the .npz at `path` by name, or `error` with one line naming the file. `check` sees
    every member's declared shape (by name) before any array is inflated, says its own refusal, and
    returns the names to read (default: all); their total is held to MAX_INPUT_BYTES."""
    path = Path(path)
    try:
        with open_regular(path, EXPECTED, error) as (f, _), zipfile.ZipFile(f) as z:
            headers = _headers(z, path, error)
            names = list(headers) if check is None else check({k: h[0] for k, h in headers.items()})
            total = sum(int(np.prod(headers[n][0], dtype=object)) * headers[n][1].itemsize for n in names)
            if total > MAX_INPUT_BYTES:
                raise error(f"{path}: its arrays declare {total:,} bytes, over {LIMIT_WORDS}")
            return {n: _array(z, headers[n], n, path, error) for n in names}
    except (error, Q9Error):
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
            RuntimeError, SyntaxError) as exc:  # fmt: skip
        why = " ".join(str(exc).split())[:160]
        raise error(f"{path}: expected {EXPECTED} ({type(exc).__name__}: {why})") from None


def _array(z: zipfile.ZipFile, header: tuple, name: str, path: Path, error: type[Exception]) -> np.ndarray:
    """One member's array, reading no more than the bytes its header declared."""
    shape, dtype, fortran, info = header
    size = int(np.prod(shape, dtype=object)) * dtype.itemsize
    buf = bytearray(size)
    view = memoryview(buf)
    with z.open(info) as f:
        _header(f, name)
        done = 0
        while done < size:
            got = f.readinto(view[done:])
            if not got:
                raise error(f"{path}: member {name} ends after {done:,} of the {size:,} bytes it declares")
            done += got
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order="F" if fortran else "C")
