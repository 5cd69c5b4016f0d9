"""What a build compiled in one process after other builds records, read with rules measured on the compiler.

A script that builds its variants in a loop (one ONNX Runtime process, one Python session of the qairt API)
compiles each after the ones before, and the compiler carries state from one to the next: on QAIRT 2.51 a
soc_model 0 build made after an explicit-SoC build writes relaxed_precision_flag=true, as the explicit
build does, where the same build made in a fresh process writes false. The file shows the order: the
compiler numbers a process's graphs, and its record directory names each graph's pickle with that number
(PICKLE/256 for the first graph of a process, PICKLE/257 for the next). scripts/measure_inprocess.py
measured, per QAIRT and arch, which number a fresh build carries, whether every later build carries a
higher one, and which options of the generic signature (q9diff.read.generic) keep their meaning in every
order; the data is inprocess_measured.json beside this file. Outside it the code says "not measured".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

INPROCESS_PATH = Path(__file__).with_name("inprocess_measured.json")
# Every build the rules were derived from, one row each (read by the tests, not by q9diff at run time).
INPROCESS_BUILDS_PATH = Path(__file__).with_name("inprocess_builds.json")
# The record number of a process's first graph, as Qualcomm's record directory writes it (FORMAT_FACTS:
# PICKLE/<256+i>); a file whose lowest number is higher was not its process's first compile.
FIRST_GRAPH = 256


@dataclass(frozen=True)
class Later:
    """One QAIRT and arch: what builds made after another in the same process wrote, measured."""

    qairt: str
    arch: int  # the htp_arch asked
    first: tuple[int, ...]  # the graph numbers a process's first build carried
    shows: bool  # every build made after another carried a higher number than every first build
    # signature option -> the orders in which a generic build wrote another value / an explicit one the
    # generic value: a value is evidence only where its side of the list is empty
    generic_differs: dict[str, tuple[str, ...]]
    explicit_matches: dict[str, tuple[str, ...]]
    survivors: tuple[str, ...]  # options whose one generic value no explicit build wrote, in any order
    # model -> (outputs bit-identical, max |difference|) of a fresh generic build against the generic build
    # made after an explicit one, on the x86 HTP emulator (3 seeded inputs)
    emulated: dict[str, tuple[bool, float]]


@lru_cache(maxsize=1)
def measured() -> dict[tuple[str, int], Later]:
    """The shipped measurement, by (QAIRT major.minor, arch asked)."""
    if not INPROCESS_PATH.is_file():
        return {}
    data = json.loads(INPROCESS_PATH.read_text())
    out = {}
    for qairt, entry in data["qairt"].items():
        for arch, a in entry["arches"].items():
            numbers = a["graph_number"]
            survives = a["signature_survives"]
            out[(qairt, int(arch))] = Later(
                qairt, int(arch), tuple(n for n in numbers["first_in_process"] if n is not None),
                bool(numbers["file_shows_after"]),
                {k: tuple(v["generic_differs_in"]) for k, v in survives.items()},
                {k: tuple(v["explicit_matches_in"]) for k, v in survives.items()},
                tuple(a["survivors"]),
                {k: (v["identical"], v["max_abs_diff"]) for k, v in a.get("emulated", {}).items()},
            )  # fmt: skip
    return out


def versions() -> str:
    found = sorted({q for q, _ in measured()}, key=lambda v: tuple(map(int, v.split("."))))
    return ", ".join(found) or "none"


def graph_number(record_names: list[str]) -> int | None:
    """The lowest graph number of a file's PICKLE records as its directory names them; None: none named."""
    numbers = [int(n.split("/")[1]) for n in record_names
               if n.startswith("PICKLE/") and _digits(n.split("/")[1])]  # fmt: skip
    return min(numbers, default=None)


def _digits(text: str) -> bool:
    """ASCII digits only: a hostile name's "²" is a digit to str.isdigit and no number to int."""
    return text.isascii() and text.isdigit()


def after_another(number: int | None) -> str | None:
    """A sentence when the file's graph number shows an earlier compile in the same process, else None."""
    if number is None or number <= FIRST_GRAPH:
        return None
    nth = number - FIRST_GRAPH + 1
    suffix = "th" if 10 <= nth % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(nth % 10, "th")
    return f"it was the {nth}{suffix} graph its process compiled (record PICKLE/{number})"


def doubt(
    qairt: str, arch: int, number: int | None, key: str, value: str | None, generic_value: bool
) -> str | None:
    """Why option `key` (written `value`) cannot tell generic from explicit in a build that was not its
    process's first compile (None: it can, or the file shows no earlier compile). `generic_value`: whether
    `value` is the generic signature's."""
    later = after_another(number)
    if later is None:
        return None
    m = measured().get((qairt, arch))
    if m is None:
        return (f"{later}, and what a build compiled after another writes for {key} on QAIRT {qairt} is not"
                f" measured (measured on QAIRT {versions()})")  # fmt: skip
    if key not in m.generic_differs:
        return f"{later}, and whether {key} keeps its meaning then on QAIRT {qairt} v{arch} is not measured"
    orders = m.explicit_matches.get(key, ()) if generic_value else m.generic_differs.get(key, ())
    if not orders:
        return None
    who = "an explicit-SoC build" if generic_value else f"a soc_model 0 build for v{arch}"
    like = "a soc_model 0 one" if generic_value else "an explicit one"
    return (f"{later}, and after an earlier compile in the same process {who} writes {key}={value} like"
            f" {like} (QAIRT {qairt}, measured in the orders {', '.join(orders)})")  # fmt: skip


STATE = "state from an earlier compile in the same process"


def carried(sides: list[tuple[str, str | None, int | None, int | None]], key: str) -> str | None:
    """Why option `key` differs between two builds when it is the state an earlier compile left (None: the
    files do not show that, or it is not measured). `sides`: per build its file name, QAIRT, dspArch and
    graph number. It is that state where one file was not its process's first compile and the option was
    measured to move with the order of builds on that QAIRT and arch."""
    for name, qairt, arch, number in sides:
        later = after_another(number)
        m = measured().get((qairt, arch)) if later and qairt and arch else None
        if m is None:
            continue
        orders = m.generic_differs.get(key, ()) + m.explicit_matches.get(key, ())
        if not orders:
            continue
        said = f"{STATE}: {name}'s record PICKLE/{number} says it was not its process's first compile"
        return (f"{said}, and on QAIRT {qairt} v{arch} {key} moved with the order of builds in one process"
                f" ({', '.join(dict.fromkeys(orders))}; measured){emulated(m)}")  # fmt: skip
    return None


def emulated(m: Later) -> str:
    """What the x86 HTP emulator computed for a generic build made after an explicit one, as a clause."""
    moved = {k: d for k, (same, d) in m.emulated.items() if not same}
    if not m.emulated:
        return "; whether it computes otherwise is not measured"
    where, n = "on the x86 HTP emulator", len(m.emulated)
    if not moved:
        return f"; such a build computed what a fresh one does {where} ({n} models)"
    worst = max(moved.values())
    return (f"; such a build computed other outputs than a fresh one {where} for {', '.join(sorted(moved))}"
            f" (max |difference| {worst:.2g}), the same for the other {n - len(moved)} models")  # fmt: skip


@lru_cache(maxsize=1)
def _float_graphs() -> dict[str, dict]:
    return {q: e.get("float_graphs", {}) for q, e in json.loads(INPROCESS_PATH.read_text())["qairt"].items()}


def fp16_clause(qairt: str | None) -> str:
    """What relaxed_precision_flag did to a float graph (no precision asked) on `qairt`, as measured."""
    counts = _float_graphs().get(qairt or "", {}) if INPROCESS_PATH.is_file() else {}
    on, off = counts.get("relaxed_precision_flag=true", {}), counts.get("relaxed_precision_flag=false", {})
    if not on or not off or set(on) != {"fp16"} or set(off) != {"no fp16"}:
        return f"what it does to a float graph on QAIRT {qairt} is not measured"
    return (f"on QAIRT {qairt} a float graph compiled with relaxed_precision_flag=true had fp16 tensors in"
            f" every measured build ({on['fp16']}), with false in none ({off['no fp16']})")  # fmt: skip
