"""How a split model names its parts: AI Hub's `{prompt|token}_ar{N}_cl{CTX}_{i}_of_{n}` graph names, which
Genie orders splits by, and `part_{i}_of_{n}` file names, which q9diff pairs sets by. The one home of the
`_i_of_n` pattern."""

from __future__ import annotations

import re

_I_OF_N = r"(\d+)_of_(\d+)"
SPLIT_SUFFIX = re.compile(r"_" + _I_OF_N + r"$")  # a graph name's suffix, as Genie reads it
_IN_FILE_NAME = re.compile(_I_OF_N)  # anywhere in a file name: part_1_of_2.bin, x_2_of_6.serialized.bin


def split_of(graph_name: str) -> tuple[int, int] | None:
    """(i, n) from a graph name's `_<i>_of_<n>` suffix; None for names without one (ONNX Runtime's hashes)."""
    m = SPLIT_SUFFIX.search(graph_name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def split_index(graph_name: str) -> int | None:
    """The split a graph belongs to by its name's suffix, as Genie orders splits."""
    split = split_of(graph_name)
    return split[0] if split else None


def file_split(file_name: str) -> tuple[int, int] | None:
    """(i, n) from the first `<i>_of_<n>` in a file name, which pairs the parts of two sets."""
    m = _IN_FILE_NAME.search(file_name)
    return (int(m.group(1)), int(m.group(2))) if m else None
