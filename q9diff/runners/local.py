"""The `local` runner (Qualcomm's x86 HTP emulator in onnxruntime-qnn) and the `cpu` reference runner.

What the emulator can and cannot catch (measured with onnxruntime-qnn 2.7.0 / QAIRT 2.51): it runs
the compiled graph, so quantization, structure and recipe mistakes show; it computes soc_model 0 and
soc_model 77 builds of the same model bit-identically, so a fault only Hexagon hardware shows (the
motivating generic-SoC bug) shows only on a device (`ssh://` runner).

Weight-shared binaries (several graphs in one context, AI Hub's LLM layout) do not load on x86: the
backend logs "Binary has already been prepared with Weight Sharing enabled … deserialization will
proceed with weight sharing" and the process segfaults (Genie on the same emulator says "Shared
weights buffer isn't supported on this platform"). The local runner tries anyway (in its child), once
per file and emulator version (the crash is recorded in the cache, the next run skips the seconds the
emulator takes to die); when the child dies on a multi-graph binary it rebuilds that binary's recipe
with one context per graph and no weight sharing, checks the rebuilt graphs have the same names and
I/O, runs those, and says so in the session's notes.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from q9diff.guard import child_env, no_telemetry, python_argv
from q9diff.runners.base import GraphSpec, RunnerError, RunnerUnavailable, TensorSpec, graph_specs, shown_path
from q9diff.runners.worker import WorkerClient, WorkerSession


def recipe_for(binary: Path):
    """The recipe and part that built `binary`: `NAME.recipe.json` beside it, else `recipe.json`."""
    from q9diff.read.openers import split_name  # start-up: read.openers, construct
    from q9diff.recipes import recipe as rcp  # start-up: recipes.recipe

    binary = Path(binary)
    file = split_name(binary)[0]  # FILE#LABEL: the container's recipe, never a name made of the label
    for candidate in (file.with_name(file.stem + ".recipe.json"), file.with_name("recipe.json")):
        if not os.path.isfile(candidate):
            continue
        r = rcp.load(candidate)
        part = next((p for p in r.parts if Path(p.output).name == binary.name), None)
        if part is None and len(r.parts) == 1 and candidate.name != "recipe.json":
            part = r.parts[0]
        if part is not None:
            return r, part
    return None, None


def cache_root() -> Path:
    """Where rebuilt binaries are kept between runs: $Q9DIFF_CACHE, else $XDG_CACHE_HOME/q9diff."""
    if os.environ.get("Q9DIFF_CACHE"):
        return Path(os.environ["Q9DIFF_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "q9diff"


def unshared_rebuild(binary: Path) -> tuple[list[Path], str]:
    """`binary`'s recipe rebuilt with one context per graph and no weight sharing; the new .bins.

    The compiler is deterministic, so a rebuild is kept in the cache under a digest of everything that
    determines its bytes (the recipe's settings and graphs, the models' bytes, the QAIRT version) and
    reused on the next run."""
    from q9diff.backends.base import BackendUnavailable  # start-up: backends.base
    from q9diff.backends.registry import cached_compile  # start-up: backends.registry
    from q9diff.recipes.recipe import Part, output_path  # start-up: recipes.recipe

    r, part = recipe_for(binary)
    if r is None:
        raise RunnerError(
            f"{binary}: weight-shared binaries do not run on the x86 emulator, and no recipe "
            f"({binary.stem}.recipe.json or recipe.json beside it) says how to rebuild it unshared"
        )
    parts = tuple(
        Part(f"{part.name}_graph{i}", f"{part.name}_graph{i}.bin", (g,)) for i, g in enumerate(part.graphs)
    )
    unshared = replace(r.with_settings(weight_sharing=None), parts=parts)
    models = [r.model_path(g) for g in part.graphs]
    missing = [m for m in models if not m.is_file()]
    if missing:
        raise RunnerError(f"{binary}: cannot rebuild it unshared, source model {missing[0]} not found")
    origin = f"{shown_path(r.path)} part {part.name}"
    try:
        home, cached = cached_compile(unshared, cache_root() / "unshared")
    except (BackendUnavailable, RuntimeError) as exc:
        raise RunnerError(f"{binary}: rebuilding without weight sharing failed: {exc}") from None
    outputs = [output_path(home, p) for p in parts]
    return outputs, f"{origin}, {'cached' if cached else 'kept'} in q9diff's cache as unshared/{home.name}"


class LocalSession(WorkerSession):
    def __init__(self, binaries: list[Path], timeout_s: float, python: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.python = python
        self.notes: tuple[str, ...] = ()
        self._client: WorkerClient | None = None
        self._work: Path | None = None
        try:
            self._open(binaries)
        except BaseException:
            self.close()
            raise

    def _start(self, paths: list[Path]) -> list[GraphSpec]:
        # The worker's folder is made and removed here: a child the emulator kills cannot clean up.
        self._work = Path(tempfile.mkdtemp(prefix="q9diff-worker-"))
        argv = python_argv("q9diff.runners.worker", ["--work", str(self._work)], self.python)
        # Its TMPDIR inside that folder, ONNX Runtime's telemetry off: nothing left behind, nothing sent.
        self._client = WorkerClient(argv, "x86 HTP emulator", child_env(self._work), self.timeout_s)
        reply, _ = self._client.request({"op": "load", "binaries": [str(Path(p).resolve()) for p in paths]})
        return [GraphSpec.from_dict(g) for g in reply["graphs"]]

    def close(self) -> None:
        WorkerSession.close(self)
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def _open(self, binaries: list[Path]) -> None:
        originals = [graph_specs(b, i) for i, b in enumerate(binaries)]
        shared = [b for b, specs in zip(binaries, originals) if len(specs) > 1]
        memo = _crash_memo(binaries) if shared else None
        crash = memo.read_text() if memo is not None and memo.is_file() else None
        if crash is None:
            try:
                self._worker_graphs = self._start(binaries)
                self.graphs = tuple(g for specs in originals for g in specs)
                return
            except RunnerError as exc:
                if not shared:
                    raise
                crash = str(exc)
            self.close()
            if "crashed" in crash:  # a signal, not a timeout: the same every time
                _remember(memo, crash)
        paths, graphs, rebuilt_from = [], [], []
        for i, (b, specs) in enumerate(zip(binaries, originals)):
            if len(specs) == 1:
                paths.append(b)
                graphs.append(specs[0])
                continue
            built, origin = unshared_rebuild(b)
            rebuilt = [graph_specs(p, i)[0] for p in built]
            for old, new in zip(specs, rebuilt):
                if (old.inputs, old.outputs) != (new.inputs, new.outputs):
                    raise RunnerError(f"{b}: the unshared rebuild of graph {old.name} has other I/O")
            paths += built
            graphs += specs
            rebuilt_from.append((Path(b).name, len(specs), origin))
        self._worker_graphs = self._start(paths)
        self.graphs = tuple(graphs)
        self.notes = (_rebuilt_note(rebuilt_from, crash),) if rebuilt_from else ()


def _rebuilt_note(rebuilt: list[tuple[str, int, str]], crash: str) -> str:
    """One note for every weight-shared binary of a side that ran rebuilt: which, why, from what."""
    names = ", ".join(f"{name} ({n} graphs)" for name, n, _ in rebuilt)
    origins = "; ".join(dict.fromkeys(origin for *_, origin in rebuilt))
    return (
        f"{len(rebuilt)} weight-shared binar{'y' if len(rebuilt) == 1 else 'ies'} ({names}) ran as"
        f" {'its' if len(rebuilt) == 1 else 'their'} recipe ({origins}) rebuilt with one context per graph"
        f" and no weight sharing: the x86 emulator does not load weight-shared binaries (as tried: {crash})."
        " The shared binaries themselves are verified only on a device."
    )


def _crash_memo(binaries: list[Path]) -> Path:
    """Where the crash of these very files (path, size, mtime) on this emulator version is recorded: the
    emulator takes seconds to load a weight-shared binary before it dies, every run, and always the same
    way, so a run that saw it once skips the attempt and says what it saw."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    try:
        emulator = version("onnxruntime-qnn")
    except PackageNotFoundError:
        emulator = "?"
    key = [emulator]
    for b in binaries:
        st = Path(b).stat()
        key += [str(Path(b).resolve()), str(st.st_size), str(st.st_mtime_ns)]
    return cache_root() / "emulator" / (hashlib.sha256("\0".join(key).encode()).hexdigest() + ".crash")


def _remember(memo: Path, crash: str) -> None:
    from q9diff.recipes.recipe import write_atomic  # start-up: recipes.recipe

    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(memo, crash)
    except OSError:  # an unwritable cache only costs the next run the attempt
        pass


class LocalRunner:
    """Runs binaries on the x86 HTP emulator inside onnxruntime-qnn, in a child process."""

    name = "local"

    def __init__(self, timeout_s: float = 600, python: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.python = python  # another interpreter's onnxruntime-qnn (another QAIRT's emulator); None: ours

    def missing(self) -> str | None:
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            return "the x86 HTP emulator in onnxruntime-qnn runs on Linux x86_64 only"
        for module in ("onnxruntime", "onnxruntime_qnn", "onnx"):
            if importlib.util.find_spec(module) is None:
                return f"Python module {module} is not installed; pip install 'q9diff[ort]' (Python 3.11)"
        return None

    def open(self, binaries: list[Path]) -> LocalSession:
        problem = self.missing()
        if problem:
            raise RunnerUnavailable(problem)
        return LocalSession([Path(b) for b in binaries], self.timeout_s, self.python)


_ORT_TO_NUMPY = {"tensor(float)": "float32", "tensor(int32)": "int32", "tensor(int64)": "int64",
                 "tensor(float16)": "float16", "tensor(uint8)": "uint8", "tensor(uint16)": "uint16",
                 "tensor(int8)": "int8", "tensor(int16)": "int16", "tensor(bool)": "bool",
                 "tensor(double)": "float64"}  # fmt: skip


class CpuSession:
    """The source ONNX models of a recipe on ONNX Runtime's CPU EP: what the binaries should compute."""

    def __init__(self, recipe) -> None:
        no_telemetry()  # this process loads ONNX Runtime here: before it initializes
        import onnxruntime as ort

        self.notes = (
            f"CPU reference: the recipe's source ONNX models ({shown_path(recipe.path)}) on ONNX Runtime's"
            " CPU EP",
        )
        graphs, self._sessions = [], {}
        for i, part in enumerate(recipe.parts):
            for g in part.graphs:
                so = ort.SessionOptions()
                so.log_severity_level = 3
                # Its threads wait for work asleep, not spinning: the emulator children compute on the
                # same cores meanwhile (0.3-0.5 s of CPU a qwen-mini verify, measured); the same results.
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
                model = recipe.model_path(g)
                try:
                    session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
                except Exception as exc:  # ONNX Runtime raises its own types (InvalidProtobuf, Fail, ...)
                    why = " ".join(str(exc).split())[:200]
                    raise RunnerError(
                        f"{model}: the recipe's source model, not one ONNX Runtime can load "
                        f"({type(exc).__name__}: {why})"
                    ) from None

                def spec(v) -> TensorSpec:
                    return TensorSpec(v.name, _ORT_TO_NUMPY.get(v.type, "float32"), tuple(v.shape))

                gs = GraphSpec(
                    str(recipe.model_path(g)),
                    g.name,
                    tuple(spec(v) for v in session.get_inputs()),
                    tuple(spec(v) for v in session.get_outputs()),
                    i,
                )
                graphs.append(gs)
                self._sessions[gs] = session
        self.graphs = tuple(graphs)

    def run(self, graph: GraphSpec, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._sessions[graph].run(None, {t.name: inputs[t.name] for t in graph.inputs})
        return dict(zip([t.name for t in graph.outputs], outputs, strict=True))

    def close(self) -> None:
        self._sessions.clear()


def cpu_session(recipe) -> CpuSession:
    """A CpuSession over a Recipe (or a recipe file)."""
    from q9diff.recipes import recipe as rcp  # start-up: recipes.recipe

    if importlib.util.find_spec("onnxruntime") is None:
        raise RunnerUnavailable("the CPU reference needs onnxruntime; pip install 'q9diff[ort]'")
    r = recipe if isinstance(recipe, rcp.Recipe) else rcp.load(recipe)
    recipe_path = r.path
    for part in r.parts:
        for g in part.graphs:
            if Path(g.model).suffix != ".onnx":
                raise RunnerUnavailable(f"{recipe_path}: the CPU reference runs ONNX models, not {g.model}")
            if not r.model_path(g).is_file():
                raise RunnerError(f"{recipe_path}: source model {r.model_path(g)} not found")
    return CpuSession(r)
