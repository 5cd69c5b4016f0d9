"""A file read as q9diff reads every input: a regular file (never a FIFO, a device or a folder, which an open
would wait on or refuse), mapped rather than read whole."""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path

from q9diff.errors import FormatError


def regular_file(path: Path) -> os.stat_result:
    """The file's status; FormatError naming the file unless it is a regular file q9diff can stat."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FormatError(str(path), None, f"a readable file ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(str(path), None, "a regular file (this is a device, FIFO or folder)")
    return st


def identity(path: Path) -> tuple[str, int, int, int, int]:
    """The regular file as it is now (its resolved path, device, inode, size and mtime): what a cache of
    its reading is keyed by, so a file rewritten in place is read afresh."""
    st = regular_file(path)
    return str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def mapped(path: Path, what: str = "a TFLite FlatBuffer") -> memoryview:
    """The file mapped read-only; FormatError, saying what it should have been (`what`), when shorter than 8
    bytes."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size < 8:
            raise FormatError(str(path), 0, f"{what} (file too short)")
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
