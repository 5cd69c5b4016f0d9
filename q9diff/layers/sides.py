"""The two sides of `q9diff layers`: a recipe's graph compiled with taps and run on the x86 HTP emulator (the
candidate, and a recipe given as the reference), or a float ONNX model on ONNX Runtime's CPU EP.

The candidate never runs on the CPU: its compile child sets `session.disable_cpu_ep_fallback` (q9diff.backends
.ort_qnn), so a node the QNN EP cannot take fails the compile, said in one line, instead of leaving part of
the graph to the CPU; the build then runs inside an EPContext model only the QNN EP can execute.

A tapped build is another compile: one graph alone (weight sharing off), the recipe's other settings and QAIRT
version, the model with its taps as graph outputs. Builds are kept in `$Q9DIFF_CACHE/layers/<key>` under a
digest of what decides their bytes (the tapped model's content with its external data, the settings, the
graph name, the backend and the QAIRT version), so the same taps compile once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from q9diff.layers.graph import LayersError, ModelGraph, tapped_model
from q9diff.recipes.recipe import GraphSource, Part, Recipe, output_path

# What ONNX Runtime says when a node would fall back to its CPU EP and fallback is off (onnxruntime 1.32).
FALLBACK = "fallback to CPU EP has been explicitly disabled"


@dataclass(frozen=True)
class Build:
    """One compile of a graph: its taps (source names), where the binary is kept, how long it took."""

    label: str  # "untapped" or "stage N"
    taps: int
    binary: Path
    size: int
    cached: bool
    seconds: float


def _qairt(recipe: Recipe) -> str:
    from q9diff.backends.ort_qnn import our_qairt  # start-up: backends.ort_qnn

    return recipe.qairt_version or our_qairt() or "unknown"


def interpreter(recipe: Recipe) -> tuple[str, str] | None:
    """The Python whose onnxruntime-qnn compiles `recipe`'s builds and runs them on its emulator, and its
    QAIRT version, when the recipe names another QAIRT than this q9diff's (q9diff.backends.ort_qnn: env
    Q9DIFF_PYTHON_2_48 for 2.48); None for this one's. Asked once, before any compile: an interpreter
    missing, or of another QAIRT, is one line (a cached build would otherwise run on the wrong one)."""
    import sys

    from q9diff.backends.ort_qnn import OrtQnnBackend, our_qairt, same_version  # start-up: backends.ort_qnn

    want, ours = recipe.qairt_version, our_qairt()
    if recipe.backend != "ort-qnn" or not want or ours is None or same_version(want, ours):
        return None
    where = recipe.path or "the recipe"
    fields = want.split(".")
    if len(fields) < 2 or not all(f.isdigit() and len(f) <= 4 for f in fields[:2]):
        raise LayersError(f"{where}: qairt_version {want[:24]!r} is no QAIRT version (expected e.g. 2.48)")
    python = OrtQnnBackend().python_for(want)
    env, want = f"Q9DIFF_PYTHON_{fields[0]}_{fields[1]}", want[:24]
    if python == sys.executable:
        raise LayersError(
            f"{where}: asks for QAIRT {want}, and this q9diff's onnxruntime-qnn is QAIRT {ours}: set {env} "
            f"to a Python 3.11 with the onnxruntime-qnn of QAIRT {fields[0]}.{fields[1]} (pins: "
            f"scripts/fixtures-constraints/qairt-{fields[0]}.{fields[1]}.txt)"
        )
    if python not in _VERSIONS:
        _VERSIONS[python] = _qairt_of(python)
    got = _VERSIONS[python]
    if not same_version(want, got):
        raise LayersError(f"{where}: asks for QAIRT {want}, and {env}={python} has {got}")
    return python, got


_VERSIONS: dict[str, str] = {}
_ASK = "from onnxruntime_qnn import build_and_package_info as b; print(b.qnn_version)"


def _qairt_of(python: str) -> str:
    """The QAIRT version of another interpreter's onnxruntime-qnn, in words when it has none."""
    import subprocess

    try:
        done = subprocess.run([python, "-I", "-c", _ASK], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Python that answers ({type(exc).__name__})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no onnxruntime-qnn ({last[:120]})"
    return done.stdout.strip()[:40] or "no QAIRT version"


def emulator_words(recipe: Recipe) -> str:
    """Where a recipe's builds compile and run, in the words of a result's `runs`."""
    from q9diff.backends.ort_qnn import our_qairt  # start-up: backends.ort_qnn

    other = interpreter(recipe)
    if other is None:
        return f"x86 HTP emulator (onnxruntime-qnn, QAIRT {our_qairt() or 'unknown'})"
    return f"x86 HTP emulator of QAIRT {other[1]} (the onnxruntime-qnn of {other[0]}), which compiled it too"


def _cache() -> Path:
    from q9diff.runners.local import cache_root  # start-up: runners.local

    return cache_root() / "layers"


def compile_graph(
    recipe: Recipe, source: GraphSource, graph: ModelGraph, taps: list[str], label: str
) -> Build:
    """`source` alone, its `taps` made graph outputs, compiled with `recipe`'s settings (cached by its
    content)."""
    from q9diff.backends.base import BackendUnavailable  # start-up: backends.base
    from q9diff.backends.registry import compile_backend  # start-up: backends.registry

    home = _cache()
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".layers-", dir=home))
    started = time.monotonic()
    try:
        model, digest = tapped_model(graph, taps, work / "model")
        settings = replace(recipe.settings, weight_sharing=None)
        key_text = json.dumps([recipe.backend, settings.to_dict(), source.name, digest, _qairt(recipe)])
        key = hashlib.sha256(key_text.encode()).hexdigest()[:32]
        binary = home / key / "graph.bin"
        if binary.is_file():
            return Build(label, len(taps), binary, binary.stat().st_size, True, time.monotonic() - started)
        part = Part("tapped", "graph.bin", (replace(source, model=str(model)),))
        one = replace(recipe, parts=(part,), settings=settings, path=None)
        try:
            compile_backend(one.backend).compile(one, work / "out")
        except (BackendUnavailable, RuntimeError) as exc:
            if FALLBACK in str(exc):
                raise LayersError(
                    f"{graph.path}: graph {source.name}: ONNX Runtime's QNN EP cannot put every node on the "
                    "HTP, and layers never runs the candidate's nodes on the CPU "
                    "(session.disable_cpu_ep_fallback)"
                ) from None
            raise LayersError(f"{graph.path}: {label} build of graph {source.name} failed: {exc}") from None
        (home / key).mkdir(exist_ok=True)
        os.replace(output_path(work / "out", part), binary)
        return Build(label, len(taps), binary, binary.stat().st_size, False, time.monotonic() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class EmulatorSide:
    """A recipe's graph on the x86 HTP emulator: compiled with the taps asked for, then run."""

    runner = "x86 HTP emulator"

    def __init__(self, recipe: Recipe, source: GraphSource, graph: ModelGraph, timeout_s: float = 600):
        self.recipe, self.source, self.graph, self.timeout_s = recipe, source, graph, timeout_s
        other = interpreter(recipe)  # another QAIRT's: its build runs on its own emulator
        self.python = other[0] if other else None

    def build(self, taps: list[str], label: str) -> Build:
        return compile_graph(self.recipe, self.source, self.graph, taps, label)

    def run(self, build: Build, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The build run once on `feeds` (float values by input name): every output, by source name (a
        tap's name is its source tensor's)."""
        from q9diff.runners.base import RunnerError, from_device, to_device  # start-up: runners.base
        from q9diff.runners.local import LocalRunner  # start-up: runners.local

        try:
            session = LocalRunner(self.timeout_s, self.python).open([build.binary])
        except RunnerError as exc:
            raise LayersError(
                f"{self.graph.path}: {build.label} build of {self.source.name}: {exc}"
            ) from None
        try:
            spec = session.graphs[0]
            missing = [t.name for t in spec.inputs if t.name not in feeds]
            if missing:
                raise LayersError(f"{self.graph.path}: no value for input {missing[0]} of {self.source.name}")
            raw = session.run(spec, {t.name: to_device(t, feeds[t.name]) for t in spec.inputs})
            values = {t.name: from_device(t, raw[t.name]) for t in spec.outputs}
        except RunnerError as exc:
            raise LayersError(
                f"{self.graph.path}: {build.label} build of {self.source.name}: {exc}"
            ) from None
        finally:
            session.close()
        return self.graph.by_source(values)


class CpuSide:
    """A float ONNX model on ONNX Runtime's CPU EP, as written (no graph optimization), any of its tensors
    made an output."""

    runner = "onnxruntime CPU"

    def __init__(self, graph: ModelGraph):
        self.graph = graph

    def run(self, taps: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from q9diff.guard import no_telemetry, private_work  # start-up: guard

        no_telemetry()
        import onnxruntime as ort

        with private_work("q9diff-layers-cpu-") as work:
            model, _ = tapped_model(self.graph, taps, work)
            so = ort.SessionOptions()
            so.log_severity_level = 3
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            try:
                session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
            except Exception as exc:  # ONNX Runtime's own exception types
                why = " ".join(str(exc).split())[:200]
                raise LayersError(
                    f"{self.graph.path}: ONNX Runtime cannot load it on the CPU ({why})"
                ) from None
            given = {}
            for v in session.get_inputs():
                if v.name not in feeds:
                    raise LayersError(f"{self.graph.path}: no value for its input {v.name}")
                given[v.name] = np.asarray(feeds[v.name]).astype(_NUMPY.get(v.type, "float32"))
            names = [o.name for o in session.get_outputs()]
            try:
                values = session.run(names, given)
            except Exception as exc:
                why = " ".join(str(exc).split())[:200]
                raise LayersError(f"{self.graph.path}: ONNX Runtime failed on the CPU ({why})") from None
        return self.graph.by_source(dict(zip(names, values, strict=True)))


_NUMPY = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
    "tensor(int8)": "int8",
    "tensor(uint16)": "uint16",
    "tensor(int16)": "int16",
    "tensor(bool)": "bool",
}


def build_diff(untapped: Path, tapped: Path) -> dict:
    """Where the tapped build differs from the untapped one, in q9diff's own diff of the two binaries: sizes,
    ops, and the diff's words for what changed in the structure (precision, tensor types, ops per kind)."""
    from q9diff.compare.diff import diff, to_json  # start-up: compare.diff, construct
    from q9diff.read.openers import open_binary  # start-up: read.openers, construct

    a, b = open_binary(untapped), open_binary(tapped)
    try:
        data = to_json(diff(a, b))
    finally:
        a.release()
        b.release()
    ops = [sum(len(g["ops"]) for g in data[side]["graphs"]) for side in ("a", "b")]
    words = [w for w in (data.get("structure") or {}).get("words", [])]
    return {"size": [data["a"]["size"], data["b"]["size"]], "ops": ops, "words": words}
