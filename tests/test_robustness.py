"""Corrupt input never escapes as anything but FormatError (the CLI's one line and exit 2): bytes flipped
at random, and fields of the records formats/ declares set to hostile values and built with `.build()`."""

from __future__ import annotations

import random

from conftest import FIXTURES

from q9diff.compare.diff import diff
from q9diff.compare.summary import inspect_summary
from q9diff.errors import FormatError
from q9diff.read.binary import ContextBinary
from q9diff.read.sites import record_sites

HOSTILE = (0, 1, 2, 3, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63, 2**64 - 1)


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


def _ints(value, path=()):
    """(path, value) of every integer field of a parsed record, nested ones included."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not k.startswith("_"):
                yield from _ints(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _ints(v, (*path, i))
    elif isinstance(value, int) and not isinstance(value, bool):
        yield path, value


def test_seeded_fields_built_with_hostile_values_raise_only_format_error():
    from construct import ConstructError

    path = FIXTURES / "variants" / "graphs_2.bin"
    good, ref = path.read_bytes(), ContextBinary.open(path)
    sites = record_sites(ref)
    rng = random.Random(37)
    built = 0
    for _ in range(300):
        site = rng.choice(sites)
        record = site.definition.parse(good[site.offset : site.end])
        fields = list(_ints(record))
        if not fields:
            continue
        where, _ = rng.choice(fields)
        value = rng.choice(HOSTILE + (len(good), site.offset))
        if not where:  # the record is one integer
            record = value
        else:
            holder = record
            for key in where[:-1]:
                holder = holder[key]
            holder[where[-1]] = value
        try:
            raw = site.definition.build(record)
        except (ConstructError, KeyError):  # refused: a width, a constant, a check, a switch
            continue
        n = site.end - site.offset
        data = good[: site.offset] + raw[:n].ljust(n, b"\0") + good[site.end :]
        built += 1
        try:
            cb = ContextBinary(data, "fuzz.bin")
            inspect_summary(cb)
            diff(cb, ref)
        except FormatError as exc:
            assert str(exc).startswith("fuzz.bin")
    assert built > 150
