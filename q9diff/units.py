"""How q9diff writes a number a person reads: sizes in bytes, VTCM in MiB, the optimization level, a size
change with its percentage. One home, so the terminal, the JSON's labels and the HTML say the same thing
(JSON values stay raw: bytes, levels). Nothing here imports q9diff, so every layer may use it.

VTCM is written in MiB because that is what the files and the tools mean: `vtcm_mb` 8 (QNN calls it MB)
records graphBlobInfo.vtcmSize 8388608 bytes (FORMAT_FACTS, the qwen-mini fixtures), exactly 8 MiB.
"""

from __future__ import annotations

MIB = 1 << 20


def nbytes(n: int) -> str:
    """1159168 -> '1,159,168 B': exact, grouped so a reader sees the magnitude."""
    return f"{n:,d} B"


def signed_bytes(n: int) -> str:
    """24576 -> '+24,576 B', -16 -> '-16 B', 0 -> '+0 B'."""
    return f"{n:+,d} B"


def human(n: int) -> str:
    """4194304 -> '4 MiB', 28672 -> '28 KiB', 1159168 -> '1.1 MiB'; a negative delta keeps its sign."""
    sign, v = ("-" if n < 0 else ""), abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            text = f"{v:d}" if unit == "B" else f"{v:.1f}".removesuffix(".0")
            return f"{sign}{text} {unit}"
        v /= 1024
    return f"{n} B"


def percent(delta: int, base: int) -> float | None:
    """A change as a percentage of the size it starts from (JSON), None when that size is 0."""
    return round(100 * delta / base, 4) if base else None


def percent_text(delta: int, base: int) -> str:
    """'+2.1%', '+0.36%', '-12%': enough digits to see the seed's 0.36%; '' when the base is 0."""
    p = percent(delta, base)
    if p is None:
        return ""
    if delta == 0:
        return "0%"
    if abs(p) >= 10:
        return f"{p:+.0f}%"
    if abs(p) >= 1:
        return f"{p:+.1f}%"
    if abs(p) >= 0.01:
        return f"{p:+.2f}%"
    return f"{'+' if p > 0 else '-'}<0.01%"


def change(delta: int, base: int) -> str:
    """'+24,576 B (+2.1%)': a size change, in bytes and as a percentage of `base`."""
    pct = percent_text(delta, base)
    return signed_bytes(delta) + (f" ({pct})" if pct else "")


def sizes(a: int, b: int) -> str:
    """'1,159,168 B → 1,183,744 B, +24,576 B (+2.1%)': from a to b; 'same size' when equal."""
    tail = "same size" if a == b else change(b - a, a)
    return f"{nbytes(a)} → {nbytes(b)}, {tail}"


def vtcm(n: int | None) -> str:
    """VTCM bytes as the MiB the configs ask for: 8388608 -> '8 MiB', 1572864 -> '1.5 MiB'."""
    if n is None:
        return "unknown"
    return f"{n / MIB:g} MiB"


def opt_level(recorded: int | None, ran: str | int | None = None) -> str:
    """The optimization level, one wording: '3', '0 (not set; the compiler ran O=2)', 'not recorded
    (the compiler ran O=2)'. `recorded` is the file's optimizationLevel (0 = not set), `ran` the
    options' O, shown only where it says more than the recorded level."""
    ran_text = f"the compiler ran O={ran}" if ran not in (None, "") else ""
    if recorded is None:
        return "not recorded" + (f" ({ran_text})" if ran_text else "")
    if recorded == 0:
        return "0 (not set" + (f"; {ran_text})" if ran_text else ")")
    if ran_text and str(ran) != str(recorded):
        return f"{recorded} ({ran_text})"
    return str(recorded)


# The unit each setting's value is written in (its JSON value stays raw).
_BYTES = {"spill_fill_buffer_size", "const_size", "spill_fill", "shared_weights_size", "io_tensor_size"}
_OPS = {"schedule", "graph_structure"}  # op counts (per graph, or in all graphs)


def value(name: str, v) -> str:
    """A setting's value as a person reads it: VTCM in MiB, sizes in bytes, the level's 0 as not set, the
    arch as v73, a switch as true or false (as the configs write it); a value per graph (a list) as
    'a / b'."""
    if isinstance(v, (list, tuple)) and name in _OPS:
        return " / ".join(map(str, v)) + " ops"
    if isinstance(v, (list, tuple)):
        return " / ".join(value(name, x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if not isinstance(v, int):
        return str(v)
    if name == "dsp_arch":
        return f"v{v}"
    if name == "vtcm_size":
        return vtcm(v)
    if name == "optimization_level":
        return opt_level(v)
    if name in _BYTES:
        return nbytes(v)
    if name in _OPS:
        return f"{v} ops"
    return str(v)


def config_value(name: str, v) -> str:
    """A fix's value in the unit its config keys take: `vtcm_size = 8 MiB` (vtcm_mb, vtcm_size_in_mb), the
    arch as v73, a switch as true or false (each tool's own line spells it as that tool does)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if name == "dsp_arch" and isinstance(v, int):
        return f"v{v}"
    return f"{v} MiB" if name == "vtcm_size" and isinstance(v, int) else str(v)
