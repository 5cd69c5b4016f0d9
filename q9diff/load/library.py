"""The QAIRT version a runtime library carries, read from its `.rodata` section, the only place it was found
(formats/elf.py: `AISW_VERSION: x.y.z`, and libQnnHtp.so's build id, in `.rodata` of every runtime library of
QAIRT 2.47-2.51; `.rodata` is 33 MB at most there).

Only what the file's own section table names is read, a MiB at a time with pread, at most MAX_SECTION
bytes: nothing is mapped, so a 1 GiB sparse file with an ELF magic costs the read of its header, not a GiB
of memory (the whole file used to be mapped and searched). A path that resolves into /proc, /sys or /dev,
or onto the file systems mounted there (a link elsewhere, a bind mount), is refused before it is opened:
a regular file there can be a device's memory (a PCI resourceN) or a value the kernel makes up on read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from q9diff.errors import FormatError
from q9diff.formats import elf as E
from q9diff.read.parse import parse

MAX_SECTION = 128 << 20  # bytes of .rodata searched: 4x the largest measured (libQnnHtp.so 2.47, 33 MB)
MAX_SECTIONS = 1 << 16  # entries of a section header table
MAX_ENTRY = 256  # bytes of one entry (an ELF64 entry is 64)
MAX_NAMES = 1 << 20  # bytes of the section name table
STEP = 1 << 20  # a read
OVERLAP = 256  # bytes each read repeats of the one before, so a version cut by a read's end is found whole
AISW = re.compile(rb"AISW_VERSION: ([0-9.]{1,64})")
BUILD = re.compile(rb"\bv(2)\.(\d{1,3})\.(\d{1,3})\.\d{12}\b")
SPECIAL = ("/proc", "/sys", "/dev")  # the kernel's own file systems: never read as a library


def special(path: Path) -> bool:
    """Whether `path` is, or leads by links or a bind mount to, a file of /proc, /sys or /dev."""
    real = os.path.realpath(path)
    if any(real == top or real.startswith(top + "/") for top in SPECIAL):
        return True
    try:
        dev = os.stat(path).st_dev
        root = os.stat("/").st_dev
        kernel = {os.stat(top).st_dev for top in SPECIAL if os.path.isdir(top)}
    except (OSError, ValueError):
        return False
    return dev in kernel - {root}


def version(f, size: int, path: str) -> tuple[tuple[int, int, int], str] | None:
    """(major, minor, patch) and where it was read (`AISW_VERSION` or the build id) from the open library
    `f` of `size` bytes; None when its .rodata carries neither. FormatError where it is no ELF file with a
    section table, or a version there is no three numbers of at most nine digits."""
    rodata = _rodata(f.fileno(), size, path)
    if rodata is None:
        raise FormatError(path, None, "an ELF shared object with a .rodata section (a runtime library)")
    start, length = rodata
    build = None
    for at, chunk, last in _chunks(f.fileno(), start, min(length, MAX_SECTION)):
        for m in AISW.finditer(chunk):
            if m.end() < len(chunk) or last:
                return _numbers(m.group(1), path, start + at + m.start(1)), "AISW_VERSION"
        if build is None:
            b = next((b for b in BUILD.finditer(chunk) if b.end() < len(chunk) or last), None)
            build = None if b is None else tuple(int(g) for g in b.groups())
    return None if build is None else (build, "build id")


def _numbers(text: bytes, path: str, offset: int) -> tuple[int, int, int]:
    parts = text.split(b".")
    if len(parts) < 3 or not all(p.isdigit() and len(p) <= 9 for p in parts[:3]):
        shown = text[:24].decode("ascii") + ("…" if len(text) > 24 else "")
        raise FormatError(path, offset, f"AISW_VERSION as three numbers of at most 9 digits (got {shown})")
    return int(parts[0]), int(parts[1]), int(parts[2])


def _chunks(fd: int, start: int, length: int):
    """(offset from `start`, bytes, whether they are the last) of [start, start+length), STEP at a time,
    each read repeating the last OVERLAP bytes of the one before."""
    at = 0
    while at < length:
        n = min(STEP, length - at)
        data = os.pread(fd, n, start + at)
        last = at + n >= length or len(data) < n
        yield at, data, last
        if last:
            return
        at += n - OVERLAP


def _rodata(fd: int, size: int, path: str) -> tuple[int, int] | None:
    """(offset, size) of the .rodata section, from the ELF header and section table; None when the table
    names none. FormatError naming the offset where the header or the table is not what ELF says."""
    head = os.pread(fd, 64, 0)
    ident = parse(E.Ident, head, 0, path, "an ELF identification (\\x7fELF, class, byte order)")
    bits, order = E.CLASSES.get(ident.ei_class), E.ORDERS.get(ident.ei_data)
    if bits is None or order is None:
        raise FormatError(
            path, 4, f"an ELF class 1 or 2 and byte order 1 or 2 (got {ident.ei_class}, {ident.ei_data})"
        )
    little = order == "little"
    h = parse(E.header(bits, little), head, E.IDENT_SIZE, path, f"an ELF{bits} header")
    entry = E.section(bits, little)
    if h.e_shoff == 0:
        return None
    if not entry.sizeof() <= h.e_shentsize <= MAX_ENTRY:
        raise FormatError(
            path, None, f"ELF section headers of {entry.sizeof()} to {MAX_ENTRY} bytes (got {h.e_shentsize})"
        )
    count, names = h.e_shnum, h.e_shstrndx
    if count == 0 or names == E.SHN_XINDEX:  # the real values are in section 0
        first = parse(entry, os.pread(fd, entry.sizeof(), h.e_shoff), 0, path, "ELF section 0")
        count = first.sh_size if count == 0 else count
        names = first.sh_link if names == E.SHN_XINDEX else names
    if not 0 < count <= MAX_SECTIONS or h.e_shoff + count * h.e_shentsize > size:
        raise FormatError(
            path, h.e_shoff, f"an ELF section table of at most {MAX_SECTIONS} entries inside the file"
        )
    table = os.pread(fd, count * h.e_shentsize, h.e_shoff)
    sections = [parse(entry, table, i * h.e_shentsize, path, f"ELF section header {i}") for i in range(count)]
    if not names or names >= count:
        return None
    strtab = sections[names]
    if strtab.sh_offset + strtab.sh_size > size or strtab.sh_size > MAX_NAMES:
        raise FormatError(
            path, h.e_shoff, f"an ELF section name table of at most {MAX_NAMES} bytes inside the file"
        )
    text = os.pread(fd, strtab.sh_size, strtab.sh_offset)
    for s in sections:
        if s.sh_type == E.SHT_NOBITS or s.sh_name >= len(text):
            continue
        end = text.find(b"\0", s.sh_name)
        if text[s.sh_name : end if end >= 0 else len(text)] == b".rodata":
            if s.sh_offset + s.sh_size > size:
                raise FormatError(path, s.sh_offset, f"a .rodata section inside the file of {size} bytes")
            return s.sh_offset, s.sh_size
    return None
