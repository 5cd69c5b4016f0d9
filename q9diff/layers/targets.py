"""What `q9diff layers` is asked to compare: the candidate's graphs (a recipe, `RECIPE#PART[/GRAPH]`, a folder
holding recipe.json, or one QDQ .onnx with the compiler's defaults), the reference each is paired with (a
float .onnx, a folder of .onnx models, or a recipe run on the emulator), and the inputs both get.

A candidate graph is paired with the reference model whose inputs have the same names and shapes, as verify
pairs graphs; a graph with none is left out, and said so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from q9diff.errors import Q9Error
from q9diff.guard import nameable
from q9diff.layers import graph as gr
from q9diff.layers.feeds import Feeds, from_npz, genie_feeds, input_specs, seeded
from q9diff.layers.sides import CpuSide, EmulatorSide, emulator_words
from q9diff.recipes import recipe as rcp
from q9diff.recipes.recipe import GraphSource, Part, Recipe


@dataclass(frozen=True)
class Selected:
    """One graph of the candidate: its recipe (settings, QAIRT version), part and source model."""

    recipe: Recipe
    part: Part
    source: GraphSource
    model: Path


def split_selector(text: str) -> tuple[Path, str | None]:
    """`FILE#PART/GRAPH` as (FILE, "PART/GRAPH"): at the first `#` whose left side is an existing file or
    folder; a path that exists as given is that path."""
    if os.path.exists(text) or "#" not in text:  # os.path: False, never an error, for a name too long
        return Path(text), None
    i = text.find("#")
    while i >= 0:
        if os.path.exists(text[:i]):
            return Path(text[:i]), text[i + 1 :]
        i = text.find("#", i + 1)
    return Path(text.split("#", 1)[0]), text.split("#", 1)[1]


def _recipe_of(path: Path) -> Recipe:
    if path.is_dir():
        if not (path / "recipe.json").is_file():
            raise gr.LayersError(f"{path}: a folder with no recipe.json")
        path = path / "recipe.json"
    recipe = rcp.load(path)
    for g in (g for p in recipe.parts for g in p.graphs):  # every model is looked up, not only those compared
        if not nameable(g.model):
            raise gr.LayersError(f"{path}: graph {g.name}'s model {g.model[:80]!r} is no file name")
    return recipe


def _select(recipe: Recipe, where: Path, selector: str | None) -> list[Selected]:
    parts = list(recipe.parts)
    part_name, _, graph_name = (selector or "").partition("/")
    if part_name:
        parts = [p for p in recipe.parts if p.name == part_name]
        if not parts:
            names = ", ".join(p.name for p in recipe.parts)
            raise gr.LayersError(f"{where}: no part {part_name!r} (its parts: {names})")
    out = []
    for part in parts:
        for g in part.graphs:
            if graph_name and g.name != graph_name:
                continue
            model = recipe.model_path(g)
            if model.suffix != ".onnx":
                raise gr.LayersError(
                    f"{where}: graph {g.name}'s model {model} is no .onnx: layers taps ONNX QDQ models"
                )
            if not model.exists():  # a FIFO or device is refused unread when the model is read
                raise gr.LayersError(f"{where}: graph {g.name}'s model {model} not found")
            out.append(Selected(recipe, part, g, model))
    if not out:
        names = ", ".join(g.name for p in parts for g in p.graphs)
        raise gr.LayersError(f"{where}: no graph {graph_name!r} in part {part_name} (its graphs: {names})")
    return out


def candidate_graphs(text: str) -> list[Selected]:
    """The candidate's graphs: every graph of a recipe, or the part or graph `#PART[/GRAPH]` names."""
    path, selector = split_selector(text)
    if not path.exists():
        raise gr.LayersError(f"{path}: no such file or directory")
    if path.suffix == ".onnx" and not path.is_dir():  # a FIFO or device of that name: refused unread
        if selector:
            raise gr.LayersError(f"{text}: #PART/GRAPH selects in a recipe, not in an .onnx model")
        source = GraphSource(path.stem, str(path.resolve()))
        recipe = Recipe("ort-qnn", (Part(path.stem, f"{path.stem}.bin", (source,)),))
        return [Selected(recipe, recipe.parts[0], source, path.resolve())]
    return _select(_recipe_of(path), path, selector)


def float_candidates(selected: list[Selected]) -> list[Path]:
    """The candidate's models holding no QuantizeLinear/DequantizeLinear: float graphs, tapped as they are,
    though layers is for a quantized build against its float model (the command says so on stderr)."""
    return [
        s.model for s in selected if not any(n.op_type in gr.QDQ for n in gr.load_model(s.model).graph.node)
    ]


def _signature(model: Path) -> tuple:
    return tuple(sorted((t.name, t.shape) for t in input_specs(model)))


def cpu_models(path: Path) -> list[Path] | None:
    """The models a reference that runs on the CPU names (an .onnx, or a folder of them that holds no
    recipe.json); None when it is a recipe."""
    if path.suffix == ".onnx" and not path.is_dir():  # a FIFO or device of that name: refused unread
        return [path]
    if path.is_dir() and not (path / "recipe.json").is_file():
        return [_in_folder(m, path) for m in sorted(path.glob("*.onnx"))]
    return None


def _in_folder(model: Path, folder: Path) -> Path:
    """A model of a reference folder, when it stays inside it (a link leading elsewhere is refused)."""
    from q9diff.guard import contained  # start-up: guard

    contained(model.name, folder, model, gr.LayersError)
    return model


def files_named(text: str) -> list[Path]:
    """The files a candidate or reference names beyond itself, wherever they live (a recipe's source models
    may sit outside its folder): its models and their external data, which a report must never be
    written over; what cannot be read is left to the run to refuse."""
    path = split_selector(text)[0]
    try:
        models = cpu_models(path)
        if models is None:
            recipe = _recipe_of(path)
            models = [recipe.model_path(g) for p in recipe.parts for g in p.graphs]
    except Q9Error:
        return []
    out = list(models)
    for m in models:
        try:
            out += [ext for _, ext in gr.external_files(gr.load_model(m), m)]
        except Q9Error:
            continue
    return out


def reference_pairs(text: str, selected: list[Selected]) -> tuple[dict, str, list[str]]:
    """Each candidate graph's reference side and graph, by graph name; where the reference runs; notes."""
    path, selector = split_selector(text)
    if not path.exists():
        raise gr.LayersError(f"{path}: no such file or directory")
    models = cpu_models(path)
    if models is not None:
        if selector:
            raise gr.LayersError(f"{text}: #PART/GRAPH selects in a recipe, not in .onnx models")
        if not models:
            raise gr.LayersError(f"{path}: no .onnx models in the folder")
        refs = {m: None for m in models}
        runner = "onnxruntime CPU (the ONNX model as written, no graph optimization)"
    else:
        recipe = _recipe_of(path)
        refs = {s.model: s for s in _select(recipe, path, selector)}
        runner = f"{emulator_words(recipe)}: the reference recipe's graphs, tapped alike"
    signatures = {m: _signature(m) for m in refs}
    pairs, notes = {}, []
    for sel in selected:
        sig = _signature(sel.model)
        match = [m for m, s in signatures.items() if s == sig]
        if not match and len(refs) == 1 and len(selected) == 1:
            only = next(iter(refs))
            raise gr.LayersError(
                f"{only}: its inputs {_names(signatures[only])} are not graph {sel.source.name}'s "
                f"{_names(sig)}"
            )
        if not match:
            notes.append(f"graph {sel.source.name}: no reference model with its inputs; not compared")
            continue
        ref = refs[match[0]]
        graph = gr.read(match[0])
        said = f"{match[0]}: a QDQ model as the reference"
        if ref is None and graph.quantized and not any(n.startswith(said) for n in notes):
            notes.append(
                f"{said}: it ran on ONNX Runtime's CPU as written (its QuantizeLinear/DequantizeLinear "
                "computed by the CPU, not as the HTP computes them); to compare two builds on the emulator, "
                "give a recipe as --reference"
            )
        side = CpuSide(graph) if ref is None else EmulatorSide(ref.recipe, ref.source, graph)
        pairs[sel.source.name] = (side, graph)
    if not pairs:
        raise gr.LayersError(f"{path}: no reference model takes the inputs of the candidate's graphs")
    return pairs, runner, notes


def _names(sig: tuple) -> str:
    return "(" + ", ".join(f"{n} {list(s)}" for n, s in sig) + ")"


def _floats(recipe: Recipe, reference: str) -> dict[str, Path]:
    """Every graph of the candidate's recipe (not only those compared) with the float model of the
    reference folder or file that takes its inputs: an LLM part's inputs are decoded through the float
    parts before it."""
    by_signature = {_signature(m): m for m in cpu_models(split_selector(reference)[0]) or []}
    out = {}
    for part in recipe.parts:
        for g in part.graphs:
            model = recipe.model_path(g)
            if model.is_file() and model.suffix == ".onnx":
                match = by_signature.get(_signature(model))
                if match is not None:  # as the command line gave it, not from the recipe's folder
                    out[g.name] = match.absolute()
    return out


def feeds_for(
    selected: list[Selected], pairs: dict, reference: str, inputs: Path | None, seed: int
) -> dict[str, Feeds]:
    """Each compared graph's inputs: the .npz given, else Genie's feeds for an LLM part, else seeded."""
    chosen = [s for s in selected if s.source.name in pairs]
    if inputs is not None:
        return {s.source.name: from_npz(inputs, _float_specs(s, pairs), s.source.name) for s in chosen}
    genie = genie_feeds(selected[0].recipe, _floats(selected[0].recipe, reference), seed)
    if genie is not None and all(s.source.name in genie for s in chosen):
        return {s.source.name: genie[s.source.name] for s in chosen}
    return {
        s.source.name: seeded(_float_specs(s, pairs), s.source.name, seed, pairs[s.source.name][1].path)
        for s in chosen
    }


def _float_specs(sel: Selected, pairs: dict):
    """The graph's inputs as the reference takes them (a float model's float inputs where the candidate's
    are quantized: the emulator side quantizes them itself)."""
    return input_specs(pairs[sel.source.name][1].path)
