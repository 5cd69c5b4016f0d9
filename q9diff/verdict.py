"""The sentences every presenter leads with (terminal, HTML), read from the causes of a diff.

Causes are taken as `to_json` gives them (dicts) or as `diff.Cause` objects; nothing here imports the
diff engine, so the command line can use it without loading numpy or deepdiff.
"""

from __future__ import annotations

from q9diff.tables import soc_name

GENERIC_SOC = (
    "The candidate targets a generic SoC (soc_model 0): it loads without error and can still compute"
    " garbage on the device. Set soc_model."
)


def _get(cause, key: str):
    return cause[key] if isinstance(cause, dict) else getattr(cause, key)


def roots(causes) -> list:
    return [c for c in causes if _get(c, "role") == "root"]


def root_line(causes) -> str:
    """`soc_model 0 → 77, vtcm_size 4194304 → 8388608`, or '' when no setting differs."""
    return ", ".join(f"{_get(c, 'name')} {_get(c, 'a')} → {_get(c, 'b')}" for c in roots(causes))


def soc_note(causes) -> str:
    soc = next((c for c in roots(causes) if _get(c, "name") == "soc_model"), None)
    if soc is None:
        return ""
    return f"compiled for {soc_name(_get(soc, 'a'))}; reference for {soc_name(_get(soc, 'b'))}"


def warnings(causes) -> list[str]:
    """What a user must read before anything else: a generic-SoC candidate computes garbage silently."""
    if any(_get(c, "name") == "soc_model" and _get(c, "a") == 0 for c in roots(causes)):
        return [GENERIC_SOC]
    return []


def doubts(parts) -> list[str]:
    """Why one side's build looks broken, from what its files record. `parts` are that side's files as
    inspect JSON (`target`, `dsp_arch`): one for a file, several for a set of parts. A value a file
    does not record (None) is no evidence either way."""
    out = []
    wanted = [p["target"]["soc_model_requested"] for p in parts]
    if 0 in wanted:
        out.append("targets a generic SoC (soc_model 0)")
    socs = sorted({w for w in wanted if w})
    if len(socs) > 1:
        out.append(
            "has parts built for different SoCs (" + ", ".join(f"{s} {soc_name(s)}" for s in socs) + ")"
        )
    archs = sorted({p["dsp_arch"] for p in parts if p["dsp_arch"] is not None})
    if len(archs) > 1:
        out.append("has parts built for different archs (" + ", ".join(f"v{a}" for a in archs) + ")")
    return out


def sides(data: dict) -> tuple[list[dict], list[dict]]:
    """The candidate's and the reference's files in a diff's JSON (`q9diff.diff/1` or a set's)."""
    pairs = [(p["a"], p["b"]) for p in data.get("parts", [])] or [(data["a"], data["b"])]
    return [a for a, _ in pairs], [b for _, b in pairs]


def reference_looks_wrong(causes, candidate=(), reference=()) -> str | None:
    """Why the REFERENCE looks like the broken build (the arguments swapped), or None.

    The reference is meant to be the known-good build. It looks like the broken one when it is
    built for the generic SoC (soc_model 0) against a candidate built for a real one, the bug itself
    on the wrong side; or when it (its files, as inspect JSON in `reference`) shows a sign of a broken
    build that the candidate does not: a generic target, or parts built for different SoCs or archs."""
    for c in roots(causes):
        a, b = _get(c, "a"), _get(c, "b")
        if _get(c, "name") == "soc_model" and b == 0 and isinstance(a, int) and a != 0:
            return (
                f"the reference targets a generic SoC (soc_model 0) and the candidate soc_model {a}"
                f" ({soc_name(a)}): the reference looks like the broken build"
            )
    ref = doubts(reference) if reference else []
    if ref and candidate and not doubts(candidate):
        return (
            f"the reference {' and '.join(ref)} and the candidate does not:"
            " the reference looks like the broken build"
        )
    return None


# The differences that come with the model itself: between builds of two models they are no cause.
MODEL_CAUSES = ("graph_structure", "tensor_names", "quantization", "graph_set", "compute_precision",
                "schedule", "const_size", "spill_fill")  # fmt: skip
NOT_MEANINGFUL = "not meaningful: builds of different models"


def _signature(graph) -> tuple:
    """A graph's I/O signature: the shapes of its inputs, then of its outputs (names and dtypes left
    out, so a renamed or re-quantized export of one model keeps it)."""
    return tuple(tuple(tuple(_get(t, "dims")) for t in _get(graph, side)) for side in ("inputs", "outputs"))


def _shown(sig: tuple) -> str:
    ins, outs = ([list(d) for d in side] for side in sig)
    return f"{', '.join(map(str, ins))} -> {', '.join(map(str, outs))}"


def different_models(graphs_a, graphs_b) -> tuple[str, ...]:
    """The evidence that two binaries are builds of different models, or () when they may be one's.
    Different means: no graph name and no graph I/O signature in common. One shared name (a re-quantized
    or re-tiled build) or one shared signature (the same export under other names: LiteRT 2.32 vs 2.40,
    ONNX Runtime's generated names) keeps them one model's builds. `graphs_*`: Graph objects or the
    inspect JSON's graphs."""
    if not graphs_a or not graphs_b:
        return ()
    names = [[_get(g, "name") for g in graphs] for graphs in (graphs_a, graphs_b)]
    sigs = [[_signature(g) for g in graphs] for graphs in (graphs_a, graphs_b)]
    if set(names[0]) & set(names[1]) or set(sigs[0]) & set(sigs[1]):
        return ()

    def listed(items: list[str]) -> str:
        return ", ".join(items[:2]) + (f" and {len(items) - 2} more" if len(items) > 2 else "")

    return (
        f"no graph name in common ({listed(names[0])} vs {listed(names[1])})",
        "no graph I/O signature in common "
        f"({listed([_shown(s) for s in sigs[0]])} vs {listed([_shown(s) for s in sigs[1]])})",
    )


def models_line(evidence) -> str:
    """The first line of every report on builds of different models; '' for one model's builds."""
    if not evidence:
        return ""
    return (
        f"Builds of different models: {'; '.join(evidence)}. Their settings are compared; sizes and byte "
        "attribution between them are not meaningful."
    )
