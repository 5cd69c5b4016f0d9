"""`q9diff verify`: run the candidate, the reference and the CPU reference, and compare what they compute.

Single graphs get the same seeded (or given) inputs and a per-output comparison. A split LLM in
Genie's layout (`q9diff.verify.llm`) is decoded greedily for N steps by every side; token sequences are
compared (the first step where they diverge is the signature of "first token right, then garbage"),
and every side is also run teacher-forced on the CPU reference's tokens so that the per-step logit
drift compares like with like.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from q9diff.errors import InputError
from q9diff.genie import config as genie_config
from q9diff.guard import contained, no_telemetry
from q9diff.inputs import given
from q9diff.runners.base import GraphSpec, RunnerError, Session, from_device, shown_path, to_device
from q9diff.verify import llm
from q9diff.verify.verdict import judge

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Tolerance:
    """When two runs count as computing the same thing."""

    min_cosine: float = 0.999
    max_rel: float = 0.02  # ||a - b|| / ||b||


BINARY_TOLERANCE = Tolerance()  # candidate vs reference binary: same compiler, same model
CPU_TOLERANCE = Tolerance(min_cosine=0.99, max_rel=0.1)  # a compiled binary vs its source model


@dataclass(frozen=True)
class Metrics:
    max_abs: float
    rel: float
    cosine: float

    def within(self, tol: Tolerance) -> bool:
        return self.cosine >= tol.min_cosine and self.rel <= tol.max_rel


def metrics(a: np.ndarray, b: np.ndarray) -> Metrics:
    """How far `a` is from `b` (the side taken as right)."""
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return Metrics(float("inf"), float("inf"), 0.0)
    diff = a - b
    nb, na = np.linalg.norm(b), np.linalg.norm(a)
    rel = float(np.linalg.norm(diff) / nb) if nb else float(np.linalg.norm(diff) > 0)
    cosine = float(a @ b / (na * nb)) if na and nb else float(na == nb)
    return Metrics(float(np.abs(diff).max(initial=0.0)), rel, cosine)


@dataclass(frozen=True)
class OutputCheck:
    graph: str
    output: str
    against: str  # "reference" or "cpu"
    metrics: Metrics
    passed: bool


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a label, what it ran and what its runner noted."""

    label: str  # "candidate", "reference", "cpu"
    source: str
    runner: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepDrift:
    step: int
    tokens: dict[str, int]  # free-running greedy token per side
    vs_cpu: dict[str, Metrics]  # teacher-forced logits of each binary side vs the CPU's
    vs_reference: Metrics | None  # candidate vs reference, teacher-forced


@dataclass(frozen=True)
class LlmCheck:
    prompt: tuple[int, ...]
    tokens: dict[str, tuple[int, ...]]
    first_divergence: dict[str, int | None]  # "candidate~reference" -> first step where tokens differ
    steps: tuple[StepDrift, ...]
    passed: bool
    texts: dict[str, str] = field(default_factory=dict)  # each side's answer as text (Genie bundles)


@dataclass(frozen=True)
class VerifyResult:
    """What ran and how it compared; `targets` the candidate's files with the soc_model their builds
    asked for (q9diff.verify.verdict.read_targets), which the verdict needs beside the numbers."""

    sides: tuple[Side, ...]
    outputs: tuple[OutputCheck, ...] = ()
    llm: LlmCheck | None = None
    notes: tuple[str, ...] = field(default=())
    targets: tuple[tuple[str, int | None], ...] = ()
    tolerance: Tolerance | None = None  # the one given (--min-cosine, --max-rel); None: the defaults

    @property
    def passed(self) -> bool:
        if self.llm is not None:
            return self.llm.passed
        return all(c.passed for c in self.outputs)


def seeded_inputs(graph: GraphSpec, seed: int) -> dict[str, np.ndarray]:
    """Float inputs ~ N(0, 0.5); integer inputs (token ids, indices) in [0, 16): valid for any table."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in graph.inputs:
        if np.issubdtype(np.dtype(t.dtype), np.integer) and not t.quantized:
            out[t.name] = rng.integers(0, 16, t.shape).astype(t.dtype)
        elif t.dtype == "bool":
            out[t.name] = rng.integers(0, 2, t.shape).astype(bool)
        else:
            out[t.name] = (rng.standard_normal(t.shape) * 0.5).astype(np.float32)
    return out


def _signature(g: GraphSpec) -> tuple:
    return tuple(sorted((t.name, tuple(t.shape)) for t in g.inputs))


def pair_graphs(a: tuple[GraphSpec, ...], b: tuple[GraphSpec, ...]) -> list[tuple[GraphSpec, GraphSpec]]:
    """Pair graphs part by part by their input signature (names and shapes), else by position."""
    pairs = []
    for part in sorted({g.part for g in a}):
        ga = [g for g in a if g.part == part]
        gb = [g for g in b if g.part == part]
        by_sig = {_signature(g): g for g in gb}
        for i, g in enumerate(ga):
            match = by_sig.get(_signature(g)) or (gb[i] if i < len(gb) else None)
            if match is not None:
                pairs.append((g, match))
    return pairs


def _run_float(session: Session, graph: GraphSpec, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    feeds = {t.name: to_device(t, values[t.name]) for t in graph.inputs}
    raw = session.run(graph, feeds)
    return {t.name: from_device(t, raw[t.name]) for t in graph.outputs}


def check_graphs(
    candidate: Session,
    others: dict[str, Session],
    seed: int,
    given: dict[str, np.ndarray] | None = None,
    tolerance: Tolerance | None = None,
) -> list[OutputCheck]:
    """Every candidate graph on the same inputs as its counterpart in each other session; `tolerance`
    replaces the defaults (BINARY_TOLERANCE against a binary, CPU_TOLERANCE against the CPU)."""
    checks = []
    for label, other in others.items():
        tol = tolerance or (CPU_TOLERANCE if label == "cpu" else BINARY_TOLERANCE)
        for ga, gb in pair_graphs(candidate.graphs, other.graphs):
            values = {**seeded_inputs(ga, seed), **(given or {})}
            out_a = _run_float(candidate, ga, values)
            out_b = _run_float(other, gb, values)
            for t in ga.outputs:
                if t.name not in out_b:
                    continue
                m = metrics(out_a[t.name], out_b[t.name])
                checks.append(OutputCheck(ga.name, t.name, label, m, m.within(tol)))
    return checks


def divergence_step(a: tuple[int, ...], b: tuple[int, ...]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def each(jobs: dict, parallel: bool) -> dict:
    """Each job's result by name, the jobs run at once in threads when `parallel` (sides whose graphs run
    in child processes: the emulator children compute on as many cores as there are). An error is the
    first job's in order, as one after the other would give; results made before it are closed."""
    if not parallel or len(jobs) < 2:
        return {k: job() for k, job in jobs.items()}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {k: pool.submit(job) for k, job in jobs.items()}
    failed = [f.exception() for f in futures.values() if f.exception() is not None]
    if failed:
        for f in futures.values():
            if f.exception() is None and hasattr(f.result(), "close"):
                f.result().close()
        raise failed[0]
    return {k: f.result() for k, f in futures.items()}


def check_llm(
    sessions: dict[str, Session],
    prompt: list[int],
    steps: int,
    theta: float,
    pad: int,
    parallel: bool = False,
) -> LlmCheck:
    """Greedy decoding on every side (at once with `parallel`); drift teacher-forced on the CPU's
    tokens (else the reference's)."""
    layouts = {}
    for label, s in sessions.items():
        lay = llm.layout(s.graphs)
        if lay is None:
            raise RunnerError(f"{label}: not an LLM in Genie's layout (input_ids, attention_mask, logits)")
        layouts[label] = lay
    free = each(
        {k: lambda k=k, s=s: llm.greedy(s, layouts[k], prompt, steps, theta=theta, pad=pad)
         for k, s in sessions.items()},
        parallel,
    )  # fmt: skip
    anchor = "cpu" if "cpu" in free else ("reference" if "reference" in free else "candidate")
    forced_tokens = free[anchor].tokens

    def fed_alike(trace: llm.Trace) -> bool:
        """Whether the free run already fed this side the anchor's tokens: the teacher-forced run would
        give every graph the same inputs again, so its logits are the free run's (nothing re-run)."""
        n = len(forced_tokens)
        return len(trace.tokens) == n and trace.tokens[: n - 1] == forced_tokens[: n - 1]

    forced = each(
        {k: (lambda k=k: free[k]) if k == anchor or fed_alike(free[k]) else
            (lambda k=k, s=s: llm.greedy(s, layouts[k], prompt, len(forced_tokens), theta=theta, pad=pad,
                                         force=forced_tokens))
         for k, s in sessions.items()},
        parallel,
    )  # fmt: skip
    drift = []
    for i in range(len(forced_tokens)):
        vs_cpu = {
            k: metrics(forced[k].logits[i], forced["cpu"].logits[i])
            for k in forced
            if k != "cpu" and "cpu" in forced and i < len(forced[k].logits)
        }
        vs_ref = None
        if "reference" in forced and i < len(forced["candidate"].logits):
            vs_ref = metrics(forced["candidate"].logits[i], forced["reference"].logits[i])
        drift.append(
            StepDrift(i, {k: t.tokens[i] for k, t in free.items() if i < len(t.tokens)}, vs_cpu, vs_ref)
        )
    tokens = {k: t.tokens for k, t in free.items()}
    divergence = {}
    for other in ("reference", "cpu"):
        if other in tokens:
            divergence[f"candidate~{other}"] = divergence_step(tokens["candidate"], tokens[other])
    if "reference" in tokens and "cpu" in tokens:
        divergence["reference~cpu"] = divergence_step(tokens["reference"], tokens["cpu"])
    judge = "candidate~reference" if "reference" in tokens else "candidate~cpu"
    passed = judge in divergence and divergence[judge] is None
    return LlmCheck(tuple(prompt), tokens, divergence, tuple(drift), passed)


def to_json(res: VerifyResult) -> dict:
    def clean(v):
        if isinstance(v, float) and not np.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    data = {
        "schema": "q9diff.verify/1",
        "passed": res.passed,
        "verdict": judge(res).to_json(),
        "sides": [asdict(s) for s in res.sides],
        "notes": list(res.notes),
        "outputs": [asdict(c) for c in res.outputs],
        "llm": asdict(res.llm) if res.llm is not None else None,
        "tolerance": asdict(res.tolerance) if res.tolerance is not None else None,
        # each candidate part and the soc_model it was built for (null: not read), the verdict's caveat
        "targets": [{"part": path, "soc_model": soc} for path, soc in res.targets],
    }
    return clean(json.loads(json.dumps(data, default=float)))


def with_notes(res: VerifyResult, notes: list[str]) -> VerifyResult:
    return replace(res, notes=tuple(res.notes) + tuple(notes))


def load_inputs(path: Path) -> dict[str, np.ndarray]:
    """User-given inputs: an .npz with one array per input name (no pickles), every member's declared size
    checked before it is inflated (q9diff.read.arrays)."""
    from q9diff.read.arrays import read_npz  # start-up: read.arrays

    return read_npz(path, RunnerError)


@dataclass(frozen=True)
class DialogConfig:
    """What a Genie bundle says about feeding the model; defaults when there is no bundle."""

    bos: int | None = None
    eos: int | None = None
    theta: float = 10000.0

    @classmethod
    def of(cls, path: Path) -> DialogConfig:
        """The bundle's values; a config that holds them with other types is refused, naming the key."""
        path = Path(path)
        if path.is_file() and path.suffix != ".json":
            path = path.parent
        if path.is_dir() and genie_config.genie_config_of(path) is None:
            return cls()
        if not path.exists():
            return cls()
        try:
            cfg = genie_config.read(path)
            theta = cfg.number("engine.backend.QnnHtp.rope-theta", 10000.0)
            return cls(
                cfg.number("context.bos-token", None, integer=True),
                cfg.number("context.eos-token", None, integer=True),
                float(theta),
            )
        except genie_config.ConfigError as exc:
            raise RunnerError(str(exc)) from None


def binaries_of(path: Path) -> list[Path]:
    """A .bin, or a folder / Genie bundle of parts in part order, as q9diff.inputs resolves the path: the
    folder's own files only (a part that is a symlink to a file elsewhere is refused, as it would be read
    and pushed to a device)."""
    found = given(path)
    if found.kind is None:
        raise RunnerError(f"{path}: no such file or directory")
    if found.kind.name == "folder of parts":  # refused as the runner words it, before the parts are listed
        for b in sorted(found.given.glob("*.bin")):
            contained(b.name, found.given, b, RunnerError)
    try:
        bins = [p.path for p in found.parts]
    except genie_config.ConfigError as exc:
        raise RunnerError(str(exc)) from None
    except InputError:  # a folder holding none
        raise RunnerError(f"{path}: no context binaries (*.bin or genie_config.json ctx-bins)") from None
    return bins


def ctx_bins(bundle: Path) -> list[Path]:
    """The ctx-bins a Genie bundle names, in its order, each inside the bundle (the one config reader)."""
    try:
        return genie_config.read(Path(bundle)).ctx_bin_paths()
    except genie_config.ConfigError as exc:
        raise RunnerError(str(exc)) from None


def cpu_recipe(binaries: list[Path], explicit: Path | None):
    """The recipe whose source models the CPU reference runs, restricted to `binaries`' parts in order."""
    from q9diff.recipes import recipe as rcp  # start-up: recipes.recipe
    from q9diff.runners.local import recipe_for  # start-up: runners.local

    if explicit is not None:
        r = rcp.load(explicit)
        by_output = {Path(p.output).name: p for p in r.parts}
        parts = [by_output.get(b.name) for b in binaries]
        return replace(r, parts=tuple(parts)) if all(parts) else r
    found = [recipe_for(b) for b in binaries]
    if any(r is None for r, _ in found):
        return None
    base = found[0][0]
    return replace(base, parts=tuple(part for _, part in found))


def verify(
    candidate: Path,
    reference: Path | None,
    run: object,
    *,
    cpu: bool = True,
    recipe: Path | None = None,
    steps: int = 16,
    prompt: list[int] | None = None,
    seed: int = 0,
    inputs: dict[str, np.ndarray] | None = None,
    tolerance: Tolerance | None = None,
) -> VerifyResult:
    """Open every side, decide single-graph or LLM, compare. `run` is a Runner (q9diff.runners)."""
    from q9diff.runners.local import cpu_session  # start-up: runners.local

    opened: dict[str, Session] = {}
    sides, notes = [], []
    parallel = run.name == "local"  # children on this machine: both sides load and run at once
    try:
        cand_bins = binaries_of(candidate)
        both = {
            "candidate": cand_bins,
            **({"reference": binaries_of(reference)} if reference is not None else {}),
        }
        jobs = {k: (lambda bins=bins: run.open(bins)) for k, bins in both.items()}
        cpu_from = []  # the CPU side's recipe, found in its job (after the sides, as in turn)
        if cpu:
            no_telemetry()  # here, not in the job's thread: a child's environment is copied meanwhile

            def cpu_side():
                cpu_from.append(cpu_recipe(cand_bins, recipe))
                return None if cpu_from[0] is None else cpu_session(cpu_from[0])

            jobs["cpu"] = cpu_side  # the ONNX models load while the emulator children load theirs
        opened.update(each(jobs, parallel))
        for label, path in (("candidate", candidate), ("reference", reference)):
            if label in opened:
                sides.append(Side(label, str(path), run.name, tuple(opened[label].notes)))
        if cpu:
            cs = opened.pop("cpu")
            if cs is None:
                notes.append(f"no recipe beside {candidate}: no CPU reference (pass --recipe)")
            else:
                opened["cpu"] = cs
                sides.append(Side("cpu", shown_path(cpu_from[0].path), "onnxruntime CPU", cs.notes))
        lay = llm.layout(opened["candidate"].graphs)
        if lay is None:
            cand = opened["candidate"]
            others = {k: s for k, s in opened.items() if k != "candidate"}
            if not others:
                raise RunnerError("nothing to compare the candidate with: give a reference or a recipe")
            return VerifyResult(
                tuple(sides),
                tuple(check_graphs(cand, others, seed, inputs, tolerance)),
                None,
                tuple(notes),
                tolerance,
            )
        dialog = DialogConfig.of(candidate)
        if dialog == DialogConfig() and reference is not None:
            dialog = DialogConfig.of(reference)  # a rebuilt set has no Genie config of its own
        if prompt is None:
            rng = np.random.default_rng(seed)
            prompt = [int(x) for x in rng.integers(0, lay.vocab, 8)]
        ids = ([dialog.bos] if dialog.bos is not None else []) + list(prompt)
        pad = dialog.eos if dialog.eos is not None else 0
        check = check_llm(opened, ids, steps, dialog.theta, pad, parallel)
        return VerifyResult(tuple(sides), (), check, tuple(notes))
    finally:
        for s in opened.values():
            s.close()
