"""What a diff of containers compared, and whether the files differ outside it.

A diff of two ExecuTorch programs, LiteRT models or EPContext models compares the context binaries they
carry, not the rest of the file (the program, another backend's delegate, the ONNX graph). "Identical" is a
claim about every byte: so a diff that read part of a file says which part, and whether the files differ
outside it, read here byte for byte where the container says where its contexts lie (a .pte, a .tflite),
and from the whole files where it does not (an .onnx: files that differ while their contexts do not
differ outside them; files whose contexts differ too are not compared outside them). The exit status
follows: contexts alike in files that differ outside them is a difference.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from q9diff.units import nbytes

STEP = 1 << 20  # bytes read at a time
WHAT = {
    ".pte": "the QNN delegates' context binaries",
    ".tflite": "the DISPATCH_OPs' NPU bytecode",
    ".onnx": "the EPContext nodes' context binaries",
}


def outside(a: Path, b: Path, contexts_identical: bool) -> dict | None:
    """The diff's `outside`: what was compared of each side, and whether the files differ outside it
    (True, False, or None: not compared); None when both sides are plain context binaries (read whole)."""
    from q9diff.read.openers import coverage

    ca, cb = coverage(a), coverage(b)
    if ca is None and cb is None:
        return None
    differs = None
    if ca is not None and cb is not None and "context" not in (ca.kind, cb.kind):
        if _same_bytes(ca.file, cb.file):
            differs = False
        elif ca.ranges is not None and cb.ranges is not None:
            differs = _rest(ca.file, ca.size, ca.ranges) != _rest(cb.file, cb.size, cb.ranges)
        elif contexts_identical:
            differs = True  # the files differ, the contexts do not: the difference is outside them
    return {
        "compared": _what(ca, cb),
        "a": _side(a, ca),
        "b": _side(b, cb),
        "contexts_identical": contexts_identical,
        "differs": differs,
    }


def _what(ca, cb) -> str:
    kinds = [c.kind for c in (ca, cb) if c is not None]
    if "context" in kinds:
        return "one context of each side" if kinds == ["context", "context"] else "one context"
    return WHAT.get(kinds[0], "the contexts") if len(set(kinds)) == 1 else "the context binaries"


def _side(path: Path, c) -> dict:
    if c is None:  # a plain context binary (FILE, or FILE#FILE): every byte compared
        from q9diff.read.openers import size_of

        size = size_of(path)
        return {"path": str(path), "size": size, "compared_bytes": size}
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


def headline(o: dict | None, identical: bool) -> str | None:
    """The verdict a presenter leads with when nothing compared differs: "Identical" where no byte of the
    files differs, else what was compared and what is known of the rest; None when something compared
    differs (the causes lead)."""
    if o is not None and o["contexts_identical"]:
        return words(o)
    return "Identical: no difference in any byte." if identical else None


def words(o: dict) -> str:
    """The sentence every presenter says: what was compared and what is known of the rest."""
    a, b = o["a"], o["b"]
    name_a, name_b = Path(a["path"]).name, Path(b["path"]).name
    of = f"{nbytes(a['compared_bytes'])} of {nbytes(a['size'])} of {name_a}; {nbytes(b['compared_bytes'])}"
    compared = f"{o['compared']} ({of} of {nbytes(b['size'])} of {name_b})"
    if o["contexts_identical"]:
        if o["differs"] is False:
            return "Identical: no difference in any byte."
        if o["differs"] is True:
            return f"The files differ, outside what was compared: {compared} are identical."
        return f"Identical contexts: {compared} are identical; the rest of the files was not compared."
    rest = {
        True: "the files also differ outside them",
        False: "the files are the same outside them",
        None: "the rest of the files was not compared",
    }[o["differs"]]
    return f"Compared {compared}; {rest}."
