"""A cause: one setting or effect that differs between two builds, with its values, bytes and evidence."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    """A setting or effect that differs. An effect's `bytes` and `size_delta` are its attribution row's
    (EFFECT_BUCKETS), the same two numbers the table of where the changed bytes went shows."""

    name: str
    role: str
    a: object
    b: object
    bytes: int | None
    evidence: tuple[str, ...]
    size_delta: int | None = None
    option: str | None = None  # compiler_option: which option

    def to_json(self) -> dict:
        delta = {} if self.size_delta is None else {"size_delta": self.size_delta}
        option = {} if self.option is None else {"option": self.option}
        return {"name": self.name, "role": self.role, **option, "a": self.a, "b": self.b, "bytes": self.bytes,
                **delta, "evidence": list(self.evidence)}  # fmt: skip
