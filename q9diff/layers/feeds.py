"""The inputs `q9diff layers` gives both sides: the same values, read from an .npz named by the model's
inputs, or seeded, or for an LLM part in Genie's layout the token, mask, position and cache inputs Genie
feeds each graph (q9diff.verify.llm) while it reads a seeded prompt and generates one token.

An LLM part's inputs come from decoding through every part of the recipe on the CPU (the float models
given as the reference where there are, the recipe's own source models elsewhere): part 2's hidden states
are then what part 1 computes, its cache what the prompt left. The prompt graph gets the first full chunk
of the prompt; the token graph the first generated token, with the prompt in its cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from q9diff.layers.graph import LayersError, load_model
from q9diff.runners.base import GraphSpec, TensorSpec, check_io_size

_ONNX_TO_NUMPY = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
}


@dataclass(frozen=True)
class Feeds:
    """The values fed to one graph, and where they came from (said in the result)."""

    values: dict[str, np.ndarray]
    source: str  # "npz", "seeded" or "genie"
    detail: str


def input_specs(path: Path) -> tuple[TensorSpec, ...]:
    """The graph inputs (initializers excluded) of the ONNX model at `path` as runner specs; a dimension
    below 0 is refused in one line naming the model."""
    model = load_model(path)
    inits = {t.name for t in model.graph.initializer}
    out = []
    for v in model.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        dims = tuple(int(d.dim_value) if d.HasField("dim_value") else 1 for d in t.shape.dim)
        if any(d < 0 for d in dims):
            raise LayersError(
                f"{path}: input {v.name} declares the shape {list(dims)}: no dimension is below 0"
            )
        out.append(TensorSpec(v.name, _ONNX_TO_NUMPY.get(t.elem_type, "float32"), dims))
    return tuple(out)


def from_npz(path: Path, specs: tuple[TensorSpec, ...], graph: str) -> Feeds:
    """The .npz's arrays for the graph's inputs: every input named, each of its shape, checked on the
    members' headers before any array is inflated (q9diff.read.arrays)."""
    from q9diff.read.arrays import read_npz  # start-up: read.arrays

    path = Path(path)

    def check(shapes: dict[str, tuple[int, ...]]) -> list[str]:
        for t in specs:
            if t.name not in shapes:
                raise LayersError(f"{path}: no array named {t.name}, an input of graph {graph}")
            if shapes[t.name] != tuple(t.shape):
                raise LayersError(
                    f"{path}: {t.name} is {list(shapes[t.name])}, graph {graph} takes {list(t.shape)}"
                )
        return [t.name for t in specs]

    values = read_npz(path, LayersError, check)
    return Feeds(values, "npz", f"{path.name}: {', '.join(values)}")


def seeded(specs: tuple[TensorSpec, ...], graph: str, seed: int, where: Path | None = None) -> Feeds:
    """Seeded values of the shapes the model declares (a shape that would not fit in memory refused)."""
    from q9diff.verify.run import seeded_inputs  # start-up: verify.run, construct

    spec = GraphSpec(graph, graph, specs, ())
    check_io_size(where or graph, spec)
    detail = f"seed {seed}: float N(0, 0.5), integers in [0, 16)"
    if {"attention_mask", "position_ids_cos"} <= {t.name for t in specs}:  # Genie's names, no whole LLM
        detail += (
            "; a decoder's attention mask and positions among them, seeded as any input (no LLM in Genie's "
            "layout to decode for them): give --inputs"
        )
    return Feeds(seeded_inputs(spec, seed), "seeded", detail)


class _Recording:
    """A Session that keeps the first feeds each graph receives (the Session protocol of q9diff.runners)."""

    def __init__(self, session) -> None:
        self.session = session
        self.graphs = session.graphs
        self.notes: tuple[str, ...] = ()
        self.feeds: dict[str, dict[str, np.ndarray]] = {}

    def run(self, graph, inputs):
        self.feeds.setdefault(graph.name, {k: np.array(v) for k, v in inputs.items()})
        return self.session.run(graph, inputs)

    def close(self) -> None:
        self.session.close()


def genie_feeds(recipe, floats: dict[str, Path], seed: int) -> dict[str, Feeds] | None:
    """Each graph's feeds while the recipe's parts (on the CPU: `floats` by graph name where given, else the
    recipe's own source model) read a seeded prompt filling the prompt graph and generate one token; None
    when the graphs are no LLM in Genie's layout."""
    from q9diff.runners.local import CpuSession  # start-up: runners.local
    from q9diff.verify import llm  # start-up: verify.llm
    from q9diff.verify.run import DialogConfig  # start-up: verify.run, construct

    parts = []
    for part in recipe.parts:
        graphs = tuple(replace(g, model=str(floats.get(g.name) or recipe.model_path(g))) for g in part.graphs)
        parts.append(replace(part, graphs=graphs))
    # a QDQ .onnx given alone is a recipe with no file: the CPU session names its first model instead
    models = replace(recipe, parts=tuple(parts), path=recipe.path or Path(parts[0].graphs[0].model))
    graphs = [g for p in models.parts for g in p.graphs]
    if not all(Path(g.model).is_file() for g in graphs):
        return None
    names = [{t.name for t in input_specs(Path(g.model))} for g in graphs]
    if not any({"attention_mask", "position_ids_cos"} <= n for n in names):
        return None  # no LLM in Genie's layout: no model is loaded to find that out
    try:
        session = _Recording(CpuSession(models))
    except Exception as exc:  # ONNX Runtime's own types: a model the CPU cannot run here
        why = " ".join(str(exc).split())[:200]
        raise LayersError(
            f"{recipe.path or graphs[0].model}: its parts cannot run on the CPU for Genie's inputs ({why}); "
            "give --inputs"
        ) from None
    try:
        lay = llm.layout(session.graphs)
        if lay is None:
            return None
        dialog = DialogConfig.of(recipe.path.parent) if recipe.path is not None else DialogConfig()
        chunk = max(lay.parts[0].by_ar)
        rng = np.random.default_rng(seed)
        bos = [dialog.bos] if dialog.bos is not None else []
        prompt = bos + [int(x) for x in rng.integers(0, lay.vocab, chunk - len(bos))]
        pad = dialog.eos if dialog.eos is not None else 0
        llm.greedy(session, lay, prompt, 2, theta=dialog.theta, pad=pad)
    except Exception as exc:  # noqa: BLE001 - a model that decodes wrong is said, in one line
        why = " ".join(str(exc).split())[:200]
        raise LayersError(
            f"{recipe.path or graphs[0].model}: decoding its parts on the CPU for Genie's inputs failed "
            f"({why}); give --inputs"
        ) from None
    finally:
        session.close()
    detail = (
        f"Genie's inputs while the parts read a seeded prompt of {len(prompt)} tokens (seed {seed}) and "
        "generate one: the prompt graph's first chunk, the token graph's first step"
    )
    return {name: Feeds(values, "genie", detail) for name, values in session.feeds.items()}
