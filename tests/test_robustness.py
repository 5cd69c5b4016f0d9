"""Corrupt input never escapes as anything but FormatError (the CLI's one line and exit 2)."""

from __future__ import annotations

import random

from conftest import FIXTURES

from q9diff.compare.diff import diff
from q9diff.compare.summary import inspect_summary
from q9diff.errors import FormatError
from q9diff.format.binary import ContextBinary


def test_seeded_byte_flips_and_truncations_raise_only_format_error(fixtures_dir):
    path = FIXTURES / "variants" / "graphs_2.bin"
    good, ref = path.read_bytes(), ContextBinary.open(path)
    rng = random.Random(20261202)
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.choice([1, 4, 16])):
            pos = rng.randrange(0, 0x2000) if rng.random() < 0.5 else rng.randrange(len(data))
            data[pos] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        try:
            cb = ContextBinary(bytes(data), "fuzz.bin")
            inspect_summary(cb)
            diff(cb, ref)
        except FormatError as exc:
            assert str(exc).startswith("fuzz.bin")
