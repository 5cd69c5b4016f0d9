"""Whether two binaries are builds of one model: when not, what comes with the model is no cause."""

from __future__ import annotations


def _get(cause, key: str):
    return cause[key] if isinstance(cause, dict) else getattr(cause, key)


# The differences that come with the model itself: between builds of two models they are no cause.
MODEL_CAUSES = ("graph_structure", "tensor_names", "quantization", "graph_set",
                "schedule", "const_size", "spill_fill")  # fmt: skip
NOT_MEANINGFUL = "not meaningful: builds of different models"


def _signature(graph) -> tuple:
    """A graph's I/O signature: the shapes of its inputs, then of its outputs (names and dtypes left
    out, so a renamed or re-quantized export of one model keeps it)."""
    return tuple(tuple(tuple(_get(t, "dims")) for t in _get(graph, side)) for side in ("inputs", "outputs"))


def _shown(sig: tuple) -> str:
    """A signature as read: `[2], [2] -> [2]`; a long one by its counts and first input, `8 inputs
    ([1, 32], ...) -> 13 outputs` (an LLM part's KV caches would fill a screen)."""
    ins, outs = ([list(d) for d in side] for side in sig)
    full = f"{', '.join(map(str, ins))} -> {', '.join(map(str, outs))}"
    if len(full) <= 60:
        return full
    first = f" ({ins[0]}, ...)" if ins else ""
    return f"{len(ins)} inputs{first} -> {len(outs)} outputs"


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


def models_json(evidence: tuple[str, ...]) -> dict:
    """A diff's `different_models`, only for builds of different models, so one model's JSON stays as it
    was."""
    if not evidence:
        return {}
    return {"different_models": {"evidence": list(evidence), "byte_attribution": NOT_MEANINGFUL}}
