"""A result as `--json` writes it: strict JSON (RFC 8259, a NaN or an infinity written as null), and the
values a report drawn from that JSON reads (`as_saved`), so a report written now and one drawn later from
the saved file are drawn from the same values. Reading a saved file back is q9diff.present.saved."""

from __future__ import annotations

import json
import math


def json_safe(v):
    """Strict JSON: a non-finite float (NaN, ±inf, e.g. a NaN scale read from a file) becomes null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def json_text(data: dict | list) -> str:
    """A result as `--json` prints it: strict JSON (RFC 8259), non-finite numbers written as null."""
    try:
        return json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere: rare, so only then walk the tree
        return json.dumps(json_safe(data), indent=2, default=str, allow_nan=False)


def as_saved(data: dict | list) -> dict | list:
    """A result as `--json` saves it and `q9diff report` reads it back: a report written now and one
    drawn later from the saved JSON are then drawn from the same values. Plain values are copied as
    JSON gives them back (0.02 s, not a 1 s dump and load of a seed-scale set: `plain_copy`)."""
    try:
        return plain_copy(data)
    except NotPlain:  # a NaN, a Path, a non-str key...: JSON's own values
        return json.loads(json_text(data))


class NotPlain(Exception):
    """A value whose JSON form is not itself (see `plain_copy`)."""


_SCALARS = {str, int, bool, type(None)}  # exact types JSON gives back as they are (a float may be NaN)


def plain_copy(v):
    """`v` as a JSON dump and load would give it back, tuples as lists, for a result of plain values:
    str keys; str, int, finite float, bool, None; lists and tuples of them. NotPlain on anything else
    (a NaN, a Path, a non-str key, a subclass such as an IntEnum), which only JSON itself can answer.
    A list of scalars (an op list) is copied in one step, not name by name."""
    t = type(v)
    if t is dict:
        if not set(map(type, v)) <= {str}:
            raise NotPlain
        return {k: plain_copy(x) for k, x in v.items()}
    if t is list or t is tuple:
        if set(map(type, v)) <= _SCALARS:
            return list(v)
        return [plain_copy(x) for x in v]
    if t in _SCALARS or (t is float and math.isfinite(v)):
        return v
    raise NotPlain
