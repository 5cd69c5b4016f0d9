"""The runtime a binary must load on: a QAIRT version as users write it (`2.48`, `QAIRT 2.48.40`, `v2.48`,
a build id), or read from Qualcomm's runtime libraries (`libQnnHtp.so`, `libGenie.so`,
`libQnnHtpNetRunExtensions.so` carry `AISW_VERSION: 2.48.40`; measured on QAIRT 2.47-2.51), given as a
file or found in a bundle or app folder that ships them.

What decides a load is the runtime's HTP backend API version (q9diff.load.rules). It is taken from
measurement only: the runtimes q9diff ran (scripts/measure_compat.py: each libQnnHtp.so reports its own)
and the binaries it read (each records the QAIRT build and the backend API it was built with). A version
neither covers keeps its backend API unknown, and is judged by the QAIRT versions alone.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from q9diff.errors import FormatError, Q9Error

COMPAT_PATH = Path(__file__).with_name("compat_measured.json")
# The libraries a bundle or app ships that carry the QAIRT version (libQnnSystem.so carries none).
VERSIONED = ("libQnnHtp.so", "libGenie.so", "libQnnHtpNetRunExtensions.so", "libQnnHtpPrepare.so")
MAX_LIBRARY = 1 << 30  # a runtime library is tens of MB; nothing this size is one
MAX_DIGITS = 9  # of each number of a version (2.48.40): more is no version, and int() of 5,000 raises
MAX_FOLDER_ENTRIES = 5000  # a bundle or app folder is looked through this far for its libraries
MAX_DEPTH = 3


class UnknownRuntime(Q9Error, ValueError):
    """A --runtime that names no QAIRT version q9diff can read; the one line says what was expected."""


@dataclass(frozen=True)
class Runtime:
    """A QAIRT runtime: its version, the HTP backend API version it loads up to (None: not measured),
    where the version came from, and how the backend API is known."""

    qairt: tuple[int, int, int | None]
    source: str  # "--runtime 2.48", or the library it was read from
    backend_api: tuple[int, int] | None
    api_evidence: str

    @property
    def label(self) -> str:
        major, minor, patch = self.qairt
        return f"QAIRT {major}.{minor}" + (f".{patch}" if patch is not None else "")

    def to_json(self) -> dict:
        return {
            "qairt": self.label.split(" ", 1)[1],
            "source": self.source,
            "backend_api": None
            if self.backend_api is None
            else f"{self.backend_api[0]}.{self.backend_api[1]}",
            "backend_api_evidence": self.api_evidence,
        }


@cache
def measured() -> dict:
    """scripts/measure_compat.py's data: the runtimes, the binaries, every load attempt."""
    if not COMPAT_PATH.is_file():
        return {"runtimes": [], "binaries": [], "attempts": []}
    return json.loads(COMPAT_PATH.read_text(encoding="utf-8"))


# The oldest QAIRT whose context binaries q9diff reads: QNN 2.22's 16-byte header (q9diff.read.binary;
# the 2.22 binaries of the real corpus). A runtime older than that is one q9diff cannot judge.
OLDEST = (2, 22)


def newest_known() -> tuple[int, int]:
    """The newest QAIRT q9diff has read, as a runtime or as binaries it built (compat_measured.json): a
    version past it is one q9diff knows nothing of, a typo or a release newer than its data."""
    data = measured()
    found = [_version(r.get("qairt", "")) for r in data.get("runtimes", [])]
    found += [
        _version(m.group(1))
        for b in data.get("binaries", [])
        if (m := re.match(r"v(\d+\.\d+)\.", b.get("build_id") or ""))
    ]
    return max((v[:2] for v in found if v and len(v) >= 2), default=OLDEST)


def _version(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        return None


def backend_api_of(qairt: tuple[int, int, int | None]) -> tuple[tuple[int, int] | None, str]:
    """The HTP backend API version of a QAIRT version, and how it is known: reported by that runtime's
    own libQnnHtp.so (measured), or recorded by binaries built with that version (read); else None."""
    major, minor, _ = qairt
    data = measured()
    for r in data.get("runtimes", []):
        v = _version(r.get("qairt", ""))
        if v and v[:2] == (major, minor) and r.get("backend_api"):
            api = tuple(r["backend_api"][:2])
            return api, f"measured: {r['package']}'s libQnnHtp.so reports backend API {api[0]}.{api[1]}"
    for b in data.get("binaries", []):
        m = re.match(r"v(\d+)\.(\d+)\.", b.get("build_id") or "")
        if m and (int(m.group(1)), int(m.group(2))) == (major, minor) and b.get("backend_api"):
            api = tuple(b["backend_api"][:2])
            return api, f"read: binaries built by QAIRT {major}.{minor} record backend API {api[0]}.{api[1]}"
    return None, f"not measured: no runtime or binary of QAIRT {major}.{minor} was read"


# Matched against the stripped text: no two neighbouring parts can take the same characters, so a failed
# match is linear (`^\s*` before `[\s_-]*` backtracked in 10,000 leading spaces for 6 s).
_WRITTEN = re.compile(r"(?:qairt|qnn|sdk|aisw)?[\s_-]*v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)?(?:_\d+)?", re.I)


def parse(text: str) -> Runtime:
    """A runtime named as users write it, or a path: a library (its bytes carry the version) or a folder
    that ships one. UnknownRuntime (one line) when it is neither."""
    m = _WRITTEN.fullmatch(text.strip())
    if m and not os.path.exists(text):
        if any(g is not None and len(g) > MAX_DIGITS for g in m.groups()):
            raise UnknownRuntime(
                f"--runtime {_cut(text)}: expected a QAIRT 2.x version (e.g. 2.48 or 2.48.40), each number"
                f" of at most {MAX_DIGITS} digits"
            )
        qairt = (int(m.group(1)), int(m.group(2)), None if m.group(3) is None else int(m.group(3)))
        if qairt[0] != 2:
            raise UnknownRuntime(
                f"--runtime {_cut(text)}: expected a QAIRT 2.x version (e.g. 2.48 or 2.48.40)"
            )
        newest, asked = newest_known(), f"--runtime {_cut(text.strip())}"
        if qairt[:2] < OLDEST:
            raise UnknownRuntime(
                f"{asked}: q9diff reads QNN {OLDEST[0]}.{OLDEST[1]} and later; not a runtime it judges"
            )
        if qairt[:2] > newest:
            raise UnknownRuntime(
                f"{asked}: no QAIRT {qairt[0]}.{qairt[1]} q9diff knows of (the newest it has read is "
                f"{newest[0]}.{newest[1]}); give the path of that runtime's libQnnHtp.so to read it"
            )
        api, why = backend_api_of(qairt)
        return Runtime(qairt, f"--runtime {text.strip()}", api, why)
    path = Path(text)
    from q9diff.guard import nameable  # start-up: guard

    if not nameable(path):
        raise UnknownRuntime(
            f"--runtime {_cut(text)!r}: not a path the system can look up (a part over 255 bytes, or a NUL)"
        )
    if os.path.isdir(path):
        found = in_folder(path)
        if found is None:
            raise UnknownRuntime(
                f"{path}: expected a QAIRT version (2.48, QAIRT 2.48.40) or a runtime library "
                f"({', '.join(VERSIONED)}) or a folder holding one; none found"
            )
        return found
    if os.path.lexists(path) or "/" in text or text.endswith(".so"):
        return from_library(path)
    raise UnknownRuntime(
        f"--runtime {_cut(text)!r}: expected a QAIRT version as 2.48, 2.48.40, v2.48 or QAIRT 2.48.40, or"
        " the path of a runtime library or of a folder that ships one"
    )


def _cut(text: str, limit: int = 60) -> str:
    """What the user typed, as a message quotes it: cut short (a 5,000-digit version is not a line)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def from_library(path: Path) -> Runtime:
    """The QAIRT version a runtime library carries (`AISW_VERSION: x.y.z`, or its build id), read from its
    .rodata section (q9diff.load.library); nothing under /proc, /sys or /dev is opened."""
    from q9diff.guard import open_regular  # start-up: guard
    from q9diff.load import library  # start-up: load.library, construct

    if library.special(path):
        raise UnknownRuntime(
            f"{path}: expected a runtime library, got a file of /proc, /sys or /dev (not read: the kernel's"
            " files are no library)"
        )
    with open_regular(path, "a runtime library", UnknownRuntime) as (f, st):
        if st.st_size > MAX_LIBRARY or st.st_size == 0:
            raise UnknownRuntime(f"{path}: expected a runtime library, got a {st.st_size} byte file")
        if os.pread(f.fileno(), 4, 0) != b"\x7fELF":  # a text that quotes a build id is no library
            raise UnknownRuntime(f"{path}: expected a runtime library (an ELF shared object) at offset 0x0")
        try:
            read = library.version(f, st.st_size, str(path))
        except FormatError as exc:  # the library's own offset and expectation, as an UnknownRuntime
            raise UnknownRuntime(str(exc)) from None
    found = None if read is None else read[0]
    if found is None:
        raise UnknownRuntime(
            f"{path}: expected a QAIRT runtime library carrying its version (AISW_VERSION: x.y.z), found none"
        )
    qairt = (found[0], found[1], found[2])
    api, why = backend_api_of(qairt)
    return Runtime(qairt, str(path), api, why)


def in_folder(folder: Path) -> Runtime | None:
    """The runtime a bundle or app folder ships: the first versioned library (VERSIONED) found in it or
    in its folders a few levels down (lib/, arm64-v8a/, qai_libs/ ...); None when it ships none. The walk
    is bounded (MAX_DEPTH levels, MAX_FOLDER_ENTRIES entries) and follows no link out of the folder."""
    top = Path(os.path.realpath(folder))
    seen = 0
    level = [top]
    for _ in range(MAX_DEPTH + 1):
        below = []
        for d in level:
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                seen += 1
                if seen > MAX_FOLDER_ENTRIES:
                    return None
                if e.name in VERSIONED and e.is_file(follow_symlinks=False):
                    try:
                        found = from_library(Path(e.path))
                    except UnknownRuntime:
                        continue
                    # named under the folder as given: a report carries no path of the machine beyond it
                    return replace(found, source=str(Path(folder) / os.path.relpath(e.path, top)))
                if e.is_dir(follow_symlinks=False) and not e.name.startswith("."):
                    below.append(Path(e.path))
        level = below
    return None
