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


# Bytes of each file asked for at the start: what the scan asks for first (its first two 64 MiB groups,
# q9diff.compare.attribution), which then asks for the rest as it goes. No more: the parse's reads of the
# files' ends wait behind what is asked for (about 0.1 s of disk for these 256 MB at 2 GB/s).
AHEAD_FIRST = 128 << 20
_AHEAD_STEP = 16 << 20


def read_ahead(paths: list[Path], first: int = AHEAD_FIRST):
    """Ask the kernel for the first `first` bytes of each regular file now, in file order, the files'
    16 MiB steps in turn, in a thread of its own: a cold page cache is read while the program imports and
    parses, not from the scan's first group on (those 0.2-0.3 s the disk stood idle; cat starts at
    once). Each page is read once: what the scan asks for later is in the cache or on its way. Anything
    not a regular file, or not readable, is left to the reading that reports it. The thread, or None."""
    import threading

    fds = []
    for p in paths:
        try:
            if p is None or not stat.S_ISREG(os.stat(p).st_mode):
                continue
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # swapped for a FIFO: no wait
        except OSError:
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fds.append(fd)
        else:
            os.close(fd)
    if not fds or not hasattr(os, "posix_fadvise"):
        for fd in fds:
            os.close(fd)
        return None

    def ask() -> None:
        try:
            for off in range(0, first, _AHEAD_STEP):
                for fd in fds:
                    os.posix_fadvise(fd, off, _AHEAD_STEP, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            for fd in fds:
                os.close(fd)

    thread = threading.Thread(target=ask, name="q9diff-ahead", daemon=True)
    thread.start()
    return thread
