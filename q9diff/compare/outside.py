"""What a diff of containers compared, and whether the files differ outside it.

A diff of two ExecuTorch programs, LiteRT models or EPContext models compares the context binaries they
carry, not the rest of the file (the program, another backend's delegate, the ONNX graph). "Identical" is a
claim about every byte: so a diff that read part of a file says which part, and whether the files differ
outside it, read here byte for byte where the container says where its contexts lie (a .pte, a .tflite),
and from the whole files where it does not (an .onnx: files that differ while their contexts do not
differ outside them; files whose contexts differ too are not compared outside them). The exit status
follows: contexts alike in files that differ outside them is a difference. What every presenter says of
it is q9diff.present.verdict's (outside_headline, outside_words).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from q9diff.read.openers import Coverage

STEP = 1 << 20  # bytes read at a time
WHAT = {
    ".pte": "the QNN delegates' context binaries",
    ".tflite": "the DISPATCH_OPs' NPU bytecode",
    ".onnx": "the EPContext nodes' context binaries",
    ".dlc": "the DLC's caches (its context records)",
}


def outside(ca: Coverage, cb: Coverage, contexts_identical: bool) -> dict | None:
    """The diff's `outside`, from what a diff reads of each side (q9diff.read.openers.coverage): what was
    compared of each, and whether the files differ outside it (True, False, or None: not compared); None
    when both sides are plain context binaries (read whole)."""
    kinds = (ca.kind, cb.kind)
    if kinds == (None, None):
        return None
    differs = None
    if None not in kinds and "context" not in kinds:  # two containers, each given whole
        if _same_bytes(ca.file, cb.file):
            differs = False
        elif ca.ranges is not None and cb.ranges is not None:
            differs = _rest(ca.file, ca.size, ca.ranges) != _rest(cb.file, cb.size, cb.ranges)
        elif contexts_identical:
            differs = True  # the files differ, the contexts do not: the difference is outside them
    return {
        "compared": _what(ca, cb),
        "a": _side(ca),
        "b": _side(cb),
        "contexts_identical": contexts_identical,
        "differs": differs,
    }


def _what(ca: Coverage, cb: Coverage) -> str:
    kinds = [c.kind for c in (ca, cb) if c.kind is not None]
    if "context" in kinds:
        return "one context of each side" if kinds == ["context", "context"] else "one context"
    return WHAT.get(kinds[0], "the contexts") if len(set(kinds)) == 1 else "the context binaries"


def _side(c: Coverage) -> dict:
    """A side as compared: a plain context binary (FILE, or FILE#FILE) every byte of it."""
    return {"path": str(c.file), "size": c.size, "compared_bytes": c.compared}


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes, read a MiB at a time up to the first difference."""
    if os.stat(a).st_size != os.stat(b).st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(STEP), fb.read(STEP)
            if x != y:
                return False
            if not x:
                return True


def _rest(path: Path, size: int, ranges: tuple[tuple[int, int], ...]) -> tuple[int, bytes]:
    """(length, digest) of the file's bytes outside `ranges`, in file order."""
    h, n, pos = hashlib.sha256(), 0, 0
    with open(path, "rb") as f:
        for start, end in [*((o, o + s) for o, s in _merged(ranges)), (size, size)]:
            f.seek(pos)
            while pos < start:
                chunk = f.read(min(STEP, start - pos))
                if not chunk:
                    break
                h.update(chunk)
                n, pos = n + len(chunk), pos + len(chunk)
            pos = max(pos, end)
    return n, h.digest()


def _merged(ranges) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for o, s in sorted(ranges):
        if out and o <= out[-1][0] + out[-1][1]:
            end = max(out[-1][0] + out[-1][1], o + s)
            out[-1] = (out[-1][0], end - out[-1][0])
        else:
            out.append((o, s))
    return out
