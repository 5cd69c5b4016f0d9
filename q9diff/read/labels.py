"""The labels of a container's contexts: a context is its position in the container; its label is the name
the container gives it (an ExecuTorch method, an EPContext node, a DISPATCH_OP), escaped, cut short and
numbered where names repeat, so that every context of a file has one label of its own.

A name inside a container is neither a key nor a path: two methods may both be called `forward`, a node
`/model/ctx_0`, a method 300 characters long. A label is what `FILE#LABEL` addresses and what reports show;
it holds no `/`, `#` or `\\` (written `\\x2f`, `\\x23`, `\\x5c`), no control or format character (the one
escape of q9diff.errors.printable) and at most MAX_LABEL characters, and it is never looked up in the file
system: `FILE#LABEL` is resolved by the container's index (q9diff.read.openers).
"""

from __future__ import annotations

from q9diff.errors import printable

MAX_LABEL = 64  # characters of a label; a longer name is cut and marked with "…"
_PATH_CHARS = str.maketrans({"\\": "\\x5c", "/": "\\x2f", "#": "\\x23"})


def label(name: str, fallback: str) -> str:
    """`name` as a label: escaped, cut to MAX_LABEL characters; `fallback` for an empty name."""
    text = printable(name.translate(_PATH_CHARS)) if name else fallback
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def unique(labels: list[str]) -> list[str]:
    """`labels` with each repeat numbered (`forward`, `forward~2`, `forward~3`): the first keeps its label,
    a later one takes the next number no other label has. Linear in the number of labels."""
    taken = set(labels)
    seen: set[str] = set()
    following: dict[str, int] = {}
    out = []
    for x in labels:
        if x not in seen:
            seen.add(x)
            out.append(x)
            continue
        k = following.get(x, 2)
        while f"{x}~{k}" in taken:
            k += 1
        following[x] = k + 1
        taken.add(f"{x}~{k}")
        out.append(f"{x}~{k}")
    return out


def listed(labels: list[str], limit: int = 10) -> str:
    """Labels for a one-line message: the first `limit`, then how many more."""
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    return ", ".join(labels[:limit]) + more
