"""Build recipes: how a context binary is built, so q9diff can rebuild it and patch it.

One JSON schema, versioned (`q9diff.recipe/2`; `/1` is still read). Paths inside a recipe are
relative to the recipe file. Every setting q9diff knows has a field in `Settings`; `None` means "not
set", i.e. the compiler's default, which is exactly the state of a local build that forgot it.

In `/2` a graph's `name` is the QNN graph name the binary carries (AI Hub's
`prompt_ar32_cl128_1_of_2`), and `settings.finalize_options` passes any compiler option by its
key. In `/1` the ort-qnn backend could not name graphs: a `/1` recipe reads as `ep_graph_names`
(the graph names are labels, the binary carries the names ONNX Runtime chose), so it rebuilds the
same bytes it always did.

`made_with` (optional, `/2`): the packages and versions the binaries were compiled with, as the compile
child's interpreter reported them ({"onnxruntime-qnn": "2.7.0", "onnxruntime": "1.32.0", ...}). It
records a build, it does not ask for one: a rebuild neither needs nor checks it, and a reader that
predates it ignores it.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from q9diff.errors import Q9Error

SCHEMA = "q9diff.recipe/2"
SCHEMA_V1 = "q9diff.recipe/1"
SCHEMAS = (SCHEMA, SCHEMA_V1)


def is_recipe_text(text: str) -> bool:
    """Whether a file's text is a q9diff recipe of any schema version this q9diff reads."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("schema") in SCHEMAS


class RecipeError(Q9Error, ValueError):
    """A recipe file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Settings:
    """Every compile setting q9diff knows, in the domain's own words."""

    soc_model: int | None = None
    dsp_arch: str | None = None  # "v73"
    vtcm_mb: int | None = None
    optimization_level: int | None = None
    hvx_threads: int | None = None
    dlbc: int | None = None
    weights_packing: bool | None = None
    weight_sharing: bool | None = None
    perf_profile: str | None = None
    precision: str | None = None  # "fp16" to let the compiler run float graphs in fp16
    # Compiler (finalize) options by key, e.g. (("compress_weights", True),): sorted (key, value) pairs,
    # values bool, int or float; written as a JSON object.
    finalize_options: tuple[tuple[str, bool | int | float], ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.finalize_options, dict):
            object.__setattr__(self, "finalize_options", _finalize_options(self.finalize_options, "settings"))

    @classmethod
    def from_dict(cls, data: dict, where: str) -> Settings:
        if not isinstance(data, dict):
            raise RecipeError(f"{where}: expected settings to be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecipeError(
                f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        scalar = {"int": (int,), "str": (str,), "bool": (bool,), "float": (int, float)}
        for f in fields(cls):  # a value of another type would reach a compiler option as it is
            value, want = data.get(f.name), str(f.type).split(" |")[0]
            ok = scalar.get(want)
            if (
                value is not None
                and ok
                and (not isinstance(value, ok) or (want != "bool") == isinstance(value, bool))
            ):
                raise RecipeError(f"{where}: expected setting {f.name} to be {want}, got {value!r}")
        data = dict(data)
        if data.get("finalize_options") is not None:
            data["finalize_options"] = _finalize_options(data["finalize_options"], where)
        if data.get("weights_packing") is not None and not isinstance(data["weights_packing"], bool):
            raise RecipeError(f"{where}: weights_packing must be true or false")
        return cls(**data)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if self.finalize_options is not None:
            out["finalize_options"] = dict(self.finalize_options)
        return out


def _finalize_options(value, where: str) -> tuple[tuple[str, bool | int | float], ...]:
    """A JSON object of compiler options as sorted pairs; values must be booleans, integers or numbers."""
    if not isinstance(value, dict):
        raise RecipeError(f"{where}: finalize_options must be an object of option: value")
    for key, v in value.items():
        if not key or not isinstance(v, bool | int | float) or (isinstance(v, int) and v < 0):
            raise RecipeError(
                f"{where}: finalize option {key!r} = {v!r}: values are true/false, non-negative integers "
                "or numbers"
            )
    return tuple(sorted(value.items()))


@dataclass(frozen=True)
class GraphSource:
    """One graph of a context: its source model and the graph name it should carry."""

    name: str
    model: str  # path to the ONNX (or DLC) file, relative to the recipe
    encodings: str | None = None  # quantization encodings file, for the SDK backends


@dataclass(frozen=True)
class Part:
    """One context binary: one part of a split model, holding one or more graphs."""

    name: str
    output: str  # file name of the .bin, relative to the output directory
    graphs: tuple[GraphSource, ...]


@dataclass(frozen=True)
class Recipe:
    """How a set of context binaries is built."""

    backend: str
    parts: tuple[Part, ...]
    settings: Settings = field(default_factory=Settings)
    qairt_version: str | None = None
    notes: str = ""
    path: Path | None = None  # where it was loaded from; relative paths resolve against its folder
    # True for /1 recipes: graph names are labels and the binary keeps the names the compiler chose.
    ep_graph_names: bool = False
    # (package, version) pairs, sorted, of the interpreter that compiled the binaries, as its compile
    # child reported them; written as a JSON object
    made_with: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.made_with, dict):
            object.__setattr__(self, "made_with", tuple(sorted(self.made_with.items())))

    def model_path(self, graph: GraphSource) -> Path:
        base = self.path.parent if self.path else Path.cwd()
        return (base / graph.model).resolve()

    def rebased(self, folder: Path) -> Recipe:
        """The same recipe as if saved in `folder`: model paths rewritten relative to it."""
        folder = Path(folder).resolve()

        def move(g: GraphSource) -> GraphSource:
            return replace(g, model=os.path.relpath(self.model_path(g), folder))

        parts = tuple(replace(p, graphs=tuple(move(g) for g in p.graphs)) for p in self.parts)
        return replace(self, parts=parts, path=folder / "recipe.json")

    def with_settings(self, **changes) -> Recipe:
        return replace(self, settings=replace(self.settings, **changes))

    def to_dict(self) -> dict:
        made = {"made_with": dict(self.made_with)} if self.made_with is not None else {}
        return (
            {"schema": SCHEMA, "backend": self.backend, "qairt_version": self.qairt_version}
            | made
            | {
                "settings": self.settings.to_dict(),
                "parts": [
                    {
                        "name": p.name,
                        "output": p.output,
                        "graphs": [{k: v for k, v in asdict(g).items() if v is not None} for g in p.graphs],
                    }
                    for p in self.parts
                ],
                "notes": self.notes,
            }
            | ({"ep_graph_names": True} if self.ep_graph_names else {})
        )

    @classmethod
    def from_dict(cls, data: dict, where: str, path: Path | None = None) -> Recipe:
        if not isinstance(data, dict) or data.get("schema") not in SCHEMAS:
            raise RecipeError(f'{where}: not a q9diff recipe (expected "schema": "{SCHEMA}")')
        ep_graph_names = data["schema"] == SCHEMA_V1 or data.get("ep_graph_names") is True
        try:
            parts = tuple(
                Part(
                    name=p["name"],
                    output=p["output"],
                    graphs=tuple(GraphSource(**g) for g in p["graphs"]),
                )
                for p in data["parts"]
            )
        except (KeyError, TypeError) as exc:
            raise RecipeError(f"{where}: malformed parts ({exc})") from None
        if not parts:
            raise RecipeError(f"{where}: a recipe needs at least one part")
        for p in parts:
            _check_names(p, where)
        for key in ("backend", "qairt_version", "notes"):
            if not isinstance(data.get(key, ""), (str, type(None))):
                raise RecipeError(f"{where}: expected {key} to be a string")
        made_with = data.get("made_with")
        if made_with is not None and (
            not isinstance(made_with, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in made_with.items())
        ):
            raise RecipeError(f"{where}: expected made_with to be an object of package: version strings")
        return cls(
            backend=str(data.get("backend", "ort-qnn")),
            parts=parts,
            settings=Settings.from_dict(data.get("settings", {}), where),
            qairt_version=data.get("qairt_version"),
            notes=str(data.get("notes", "")),
            path=path,
            ep_graph_names=ep_graph_names,
            made_with=made_with,
        )


def _check_names(part: Part, where: str) -> None:
    """A part's name and output become file names under the output folder (and under the rebuild
    cache): a name that climbs out of it (`..`, an absolute path) or holds a separator is refused."""
    from q9diff.guard import kind, plain_name  # start-up: guard

    for value, what in ((part.name, "part name"), (part.output, f"part {part.name!r} output")):
        if not isinstance(value, str):
            raise RecipeError(f"{where}: expected the {what} to be a string, got {kind(value)}")
    plain_name(part.output, f"part {part.name!r} output", where, RecipeError)
    if "/" in part.name or "\\" in part.name or part.name in ("", ".", ".."):
        raise RecipeError(f"{where}: part name {part.name!r} must be a plain name (it names files)")
    for g in part.graphs:
        if not isinstance(g.name, str) or not isinstance(g.model, str):
            raise RecipeError(f"{where}: part {part.name!r}: expected graph name and model to be strings")


def output_path(out_dir: str | os.PathLike, part: Part) -> Path:
    """Where a backend writes `part`: inside `out_dir`, whatever the part's output says."""
    from q9diff.guard import contained, plain_name  # start-up: guard

    plain_name(part.output, f"part {part.name!r} output", out_dir, RecipeError)
    return contained(part.output, out_dir, f"part {part.name!r} output", RecipeError)


def check_out(out: str | os.PathLike, inputs: list[str | os.PathLike | None]) -> None:
    """Refuse an output folder that is, or holds, one of `inputs` (the candidate, the reference): a
    rebuild there would overwrite it, and then be compared with itself."""
    from q9diff.guard import inside  # start-up: guard

    for given in inputs:
        if given is not None and inside(Path(given).resolve(), out) is not None:
            raise RecipeError(
                f"--out {out} holds {given}, an input of this comparison; the rebuild would overwrite it. "
                "Choose another --out"
            )


def check_build(recipe: Recipe, out: str | os.PathLike) -> None:
    """Refuse a build whose outputs would land on one of its own inputs (a source model, the recipe)."""
    inputs = {recipe.model_path(g) for p in recipe.parts for g in p.graphs}
    inputs |= {recipe.path.resolve()} if recipe.path is not None else set()
    for part in recipe.parts:
        target = output_path(out, part)
        if target in inputs:
            raise RecipeError(f"{recipe.path}: part {part.name} would be written over {target}, an input")


def load(path: str | os.PathLike) -> Recipe:
    from q9diff.guard import load_json  # start-up: guard

    p = Path(path)
    data = load_json(p, "a q9diff recipe (a JSON object)", RecipeError)
    return Recipe.from_dict(data, str(p), path=p.resolve())


def dump(recipe: Recipe) -> str:
    return json.dumps(recipe.to_dict(), indent=2) + "\n"


def write_atomic(path: str | os.PathLike, text: str | bytes) -> None:
    """Write a file so that readers see the old or the new content, never half of it."""
    p = Path(path)
    if p.is_symlink() or (p.exists() and not p.is_file()):
        # a rename over /dev/null or a link would replace the device or the link itself with a file
        raise OSError(errno.EINVAL, "not a regular file: name a new file or an existing regular one", str(p))
    data = text.encode() if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if p.exists():
            os.chmod(tmp, p.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
