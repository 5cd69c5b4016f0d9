"""Error numbers and the causes behind them: QNN's and Genie's codes (`codes.json`: every value of
Qualcomm's public QNN and Genie headers with its C name and API, checked against the runtime's own error
table; the meanings are our own sentences), FastRPC's (names and values from Qualcomm's open-source FastRPC
header, recorded in `catalogue.json` by scripts/build_explain_catalogue.py; meanings in `codes.json`), and
the causes, each with how it is known (measured here, documented, or reported in one or more public
threads), the q9diff command that tells whether it applies, and the log lines that point to it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from q9diff.explain.catalogue import fastrpc_codes

CODES_PATH = Path(__file__).with_name("codes.json")
DSP_OFFSET = 0x80000400  # FastRPC: an error the DSP side returns is this plus the code


@dataclass(frozen=True)
class Cause:
    id: str
    cause: str
    evidence: str  # measured, documented or reported
    source: str
    check: str | None  # the q9diff command that tells whether this cause applies, None where none can
    signals: tuple[str, ...] = ()  # what in a log points to it (see lines.SIGNALS)
    tells: str = ""  # what tells it apart from the other causes of the same code
    requires: tuple[str, ...] = ()  # a log must show one of these signals for it to apply at all


@dataclass(frozen=True)
class Code:
    """One error value as one table names it (a value can carry several names: 1002 is the MEM_ALLOC
    of eight QNN APIs; FastRPC's 0x2c is AEE_EINVHANDLE and AEE_EBADHANDLE)."""

    value: int
    name: str
    api: str  # a QNN API (context, graph, ...), 'genie', or 'fastrpc'
    source: str
    meaning: str
    causes: tuple[Cause, ...]
    alias_of: str | None
    runtimes: tuple[str, ...]  # QAIRT versions whose libQnnHtp error table names it (measured)
    offset: bool = False  # FastRPC: the value is an offset, printed as 0x80000400 + value by the DSP

    @property
    def family(self) -> str:
        return self.api if self.api in ("genie", "fastrpc") else "qnn"

    @property
    def hex(self) -> str:
        if self.family == "fastrpc":
            return f"0x{DSP_OFFSET + self.value:08x}" if self.offset else f"0x{self.value:x}"
        return f"0x{self.value:x}" if self.value >= 0 else ""

    @property
    def shown(self) -> str:
        """The value as a log writes it: decimal for QNN and Genie, 0x8000xxxx for FastRPC."""
        if self.family == "fastrpc":
            return self.hex
        return f"{self.value}" + (f" ({self.hex})" if self.hex else "")


@cache
def _data() -> dict:
    return json.loads(CODES_PATH.read_text(encoding="utf-8"))


@cache
def causes() -> dict[str, Cause]:
    """Every cause by its id."""
    return {
        k: Cause(k, r["cause"], r["evidence"], r["source"], r.get("check"), tuple(r.get("signals", ())),
                 r.get("tells", ""), tuple(r.get("requires", ())))
        for k, r in _data()["causes"].items()
    }  # fmt: skip


def _causes(ids) -> tuple[Cause, ...]:
    table = causes()
    return tuple(table[i] for i in ids)


@cache
def codes() -> tuple[Code, ...]:
    """Every code: QNN's, Genie's and FastRPC's."""
    data = _data()
    out = [
        Code(r["value"], r["name"], r["api"], r["source"], r["meaning"], _causes(r["causes"]),
             r.get("alias_of"), tuple(r.get("runtimes", ())))
        for r in (*data["codes"], *data["genie"])
    ]  # fmt: skip
    meanings = data.get("fastrpc", {})
    for r in fastrpc_codes():
        m = meanings.get(r["name"], {})
        source = "AEEStdErr.h (qualcomm/fastrpc)"
        out.append(Code(r["value"], r["name"], "fastrpc", source, m.get("meaning", ""),
                        _causes(m.get("causes", ())), None, (), r["offset"]))  # fmt: skip
    return tuple(out)


@cache
def _by_value() -> dict[tuple[str, int], tuple[Code, ...]]:
    table: dict[tuple[str, int], list[Code]] = {}
    for c in codes():
        table.setdefault((c.family, c.value), []).append(c)
    return {k: tuple(v) for k, v in table.items()}


def by_value(value: int, family: str) -> tuple[Code, ...]:
    """The codes with `value` in a family ('qnn', 'genie' or 'fastrpc')."""
    return _by_value().get((family, value), ())


def fastrpc_value(number: int) -> int | None:
    """The FastRPC code a number a log prints stands for (0x80000406, or -2147482618 as a signed int,
    is the DSP's 0x6), None when it is not of that form."""
    n = number & 0xFFFFFFFF if number < 0 else number
    if DSP_OFFSET <= n < DSP_OFFSET + 0x400:
        return n - DSP_OFFSET
    return None


@cache
def _by_name() -> dict[str, tuple[Code, ...]]:
    table: dict[str, list[Code]] = {}
    for c in codes():
        table.setdefault(c.name, []).append(c)
    return {k: tuple(v) for k, v in table.items()}


def by_name(name: str) -> tuple[Code, ...]:
    return _by_name().get(name, ())


def primary(found: tuple[Code, ...]) -> list[tuple[Code, list[str]]]:
    """Each value once: the entry that defines it, with the other names its tables give the same value."""
    out: dict[tuple[int, str], tuple[Code, list[str]]] = {}
    for c in found:
        key = (c.value, c.family)
        if key not in out:
            out[key] = (c, [])
        elif out[key][0].alias_of is not None and c.alias_of is None:
            out[key] = (c, [out[key][0].name, *out[key][1]])
        else:
            out[key][1].append(c.name)
    return list(out.values())


def sources() -> list[dict]:
    return _data()["sources"]
