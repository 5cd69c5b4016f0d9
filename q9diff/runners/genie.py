"""The ``genie`` runner: a Genie bundle run by Qualcomm's own ``libGenie.so`` on the x86 HTP emulator.

A bundle is a folder with ``genie_config.json`` (ctx-bins, tokenizer, backend extensions). The runner
drives the dialog a device would run through Genie's C API (ctypes declarations written from
``GenieCommon.h``, ``GenieDialog.h``, ``GenieLog.h``; API 1.21 in onnxruntime-qnn 2.7.0 / QAIRT 2.51)
in a child process (``python -m q9diff.runners.genie_child JOB.json``), so that a crash in Qualcomm's
libraries is a :class:`GenieError`, not the end of q9diff. The bundle's config is never modified: a
patched copy goes to a work directory.

What Genie feeds the model, measured from its debug dump (``dialog.debug`` dump-tensors/-specs/
-outputs; files ``text_primary/<graph>/<NNN>_{in,out}_<tensor>``, NNN counting graph executions from
000, logits as the sampler saw them in ``text_primary/logits/NNN``) on qwen-mini (AR 32 prompt graph,
AR 1 token graph, CL 128, bos 2046, eos 2045) with ``GenieDialog_tokenQuery([10, 20, 30, 40, 50])``:

- Genie prepends ``bos-token`` itself, also to a token query: the prompt execution's ``input_ids`` are
  ``[2046, 10, 20, 30, 40, 50]`` (n = 6 tokens), then right-padded with eos (``pad-token`` unset falls
  back to ``eos-token``) to AR = 32.
- Prompt ``attention_mask`` [1, 1, 32, 128], 0.0 = attend, -1000.0 = masked: row r < n attends columns
  ``CL-AR .. CL-AR+r`` (96..96+r: the new tokens sit in the last AR columns, causal), every past column
  0..95 is masked, and padding rows r >= n are masked entirely.
- ``position_ids_cos/sin`` [1, 1, AR, pos-id-dim]: row r holds cos/sin(r * theta^(-i/pos-id-dim)),
  i = 0..pos-id-dim-1 (here pos-id-dim 16 = head_dim/2, theta 10000); padding rows hold position 0.
- Every ``past_key_*_in`` / ``past_value_*_in`` of the prompt execution is all zero (with the KV
  neutralisation below).
- A longer prompt is read in AR-sized chunks left to right (bos + 31 ids, then the rest right-padded
  with eos); a later chunk's rows attend the filled past columns 0 .. 32c-1 plus their own causal new
  columns, positions continue (32, 33, ...).
- The first token comes from the logits row of the last real prompt token (row n-1).
- Token step k (k = 1, 2, ...; AR 1): ``input_ids`` = the token generated before it; position
  n + k - 1; the mask attends past columns 0 .. n + k - 2 and column CL-1 = 127 (the new token).
  KV placement is left-aligned: the prompt's ``past_*_out`` column j (j < n) lands in past column j
  (the position), each generated token's KV in the next column. Past columns beyond the filled ones may
  hold stale values (the same buffer seen with the prompt graph's stride); the mask hides them.
- Sampling: ``sampler.greedy: true`` alone does NOT make this Genie greedy (with the fixture's
  ``temp 0.8, top-k 40`` the first token had rank 274 in its logits); ``temp 0`` or ``top-k 1`` does.
  The patched config sets ``greedy true, temp 0, top-k 1, top-p 1``; every token is then the argmax of
  the dumped logits.

Split order: Genie groups the graphs of all ctx-bins by (AR, CL) and orders the splits of a group by
the ``_<i>_of_<n>`` suffix of the graph name; names without it ("does not follow the expected split
naming") come after, sorted by name as strings. ctx-bins order is not used. ORT-built graphs are named
``QNNExecutionProvider_QNNExecutionProvider_<hash>_1_0`` (``ep.context_node_name_prefix`` does not
change that), so a multi-split ORT bundle runs only if the hashes happen to sort in split order. The
runner reads Genie's own "Inserting graph ... as idx ..." log lines and refuses (:class:`GenieError`)
when Genie's order differs from ctx-bins order.

KV buffers: Genie allocates them with malloc and does not zero them on x86 (QNN_FACTS). The child runs
with ``MALLOC_PERTURB_=255``: glibc then fills every fresh malloc'd block with ``255 ^ 0xff = 0x00``
(and freed blocks with 0xff), so the KV starts zeroed as on a device; tests/test_genie.py proves it
from the dump, and shows that with a heap that held other data and no neutralisation the first-step KV
inputs are not zero.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from q9diff.errors import Q9Error
from q9diff.genie import config as genie_config
from q9diff.genie.config import CONFIG_NAME, config_file
from q9diff.guard import child_env, private_work, python_argv

GENIE_LIBRARY = "libGenie.so"
# Loaded RTLD_GLOBAL before libGenie, in this order, so that libGenie binds to the QNN system library
# and HTP backend shipped beside it (QNN_FACTS "Genie runs here").
PRELOAD = ("libQnnSystem.so", "libQnnHtp.so")
# glibc: with MALLOC_PERTURB_=N, malloc fills new blocks with N ^ 0xff and free fills with N.
KV_NEUTRALISER = {"MALLOC_PERTURB_": "255"}
# Replaces the bundle's sampler: Genie's "greedy" flag alone still samples (see the module docstring).
GREEDY_SAMPLER = {"version": 1, "type": "basic", "greedy": True, "temp": 0.0, "top-k": 1, "top-p": 1.0}


class GenieError(Q9Error, RuntimeError):
    """libGenie refused the bundle, failed, crashed or timed out; the message is one line."""


class GenieUnavailable(GenieError):
    """libGenie cannot run on this machine (platform, onnxruntime-qnn, the library itself)."""


@dataclass(frozen=True)
class GenieResult:
    """What one Genie dialog generated from a list of prompt token ids, and how."""

    tokens: tuple[int, ...]  # greedy, at most `steps`; fewer if the dialog ended (eos, context full)
    notes: tuple[str, ...]  # what the runner did that a reader of the tokens must know
    step_seconds: tuple[float, ...]  # per token; the first includes the prompt execution
    create_seconds: float  # GenieDialog_create: loading every ctx-bin onto the emulator
    query_status: str  # GenieDialog_tokenQuery's status name, e.g. SUCCESS
    debug_dir: Path | None  # Genie's tensor dump (text_primary/...), when asked for
    config: Path | None  # the patched config, when a work_dir was given (else it was temporary)


# --- finding the library --------------------------------------------------------------------------


def wheel_dir() -> Path | None:
    """The onnxruntime_qnn package directory, which holds libGenie.so and the QNN libraries."""
    spec = importlib.util.find_spec("onnxruntime_qnn")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / GENIE_LIBRARY).is_file():
            return Path(location)
    return None


class GenieRunner:
    """Runs Genie bundles with libGenie from onnxruntime-qnn; `name` is how `q9diff verify` picks it."""

    name = "genie"

    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s

    def missing(self) -> str | None:
        """One sentence naming what this machine lacks to run Genie, or None."""
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            here = f"{platform.system()} {platform.machine()}"
            return f"libGenie from onnxruntime-qnn runs on Linux x86_64 only, this is {here}."
        if importlib.util.find_spec("onnxruntime_qnn") is None:
            return (
                "Python module onnxruntime_qnn is not installed; pip install onnxruntime-qnn on Python 3.11."
            )
        found = wheel_dir()
        if found is None:
            return f"onnxruntime_qnn here ships no {GENIE_LIBRARY}; install onnxruntime-qnn 2.7.0."
        absent = [lib for lib in PRELOAD if not (found / lib).is_file()]
        if absent:
            return f"{found} lacks {', '.join(absent)}, which {GENIE_LIBRARY} needs."
        return None

    def generate(
        self,
        bundle: Path,
        prompt_ids: list[int],
        steps: int,
        *,
        debug_dir: Path | None = None,
        work_dir: Path | None = None,
        neutralise_kv: bool = True,
        dirty_heap: bool = False,
        also_inside: tuple[Path, ...] = (),
    ) -> GenieResult:
        """Greedy-generate up to `steps` token ids after `prompt_ids` with the bundle's Genie dialog.

        `debug_dir` turns on Genie's tensor dump there. `neutralise_kv=False` and `dirty_heap=True`
        exist to show what the runner protects against: the latter fills and frees heap memory in the
        child before the dialog is created, as a long-lived process's heap would hold. The files the
        config names must lie inside the bundle or one of `also_inside` (see write_patched_config).
        """
        problem = self.missing()
        if problem:
            raise GenieUnavailable(problem)
        bundle = Path(bundle)
        if bundle.is_file():
            bundle = bundle.parent
        if not config_file(bundle).is_file():
            raise GenieError(
                f"{bundle}: no {CONFIG_NAME} (nor one other Genie config), so it is not a Genie bundle."
            )
        if not prompt_ids or steps < 1:
            raise GenieError("a Genie run needs at least one prompt token and one step.")
        with _work_dir(work_dir) as work:
            config_path, notes, ctx_bins = write_patched_config(
                bundle, work, debug_dir, also_inside=also_inside
            )
            if work_dir is None:
                notes[0] += " (temporary; pass work_dir to keep it)"
            job = {
                "config": str(config_path),
                "prompt_ids": [int(t) for t in prompt_ids],
                "steps": int(steps),
                "result": str(work / "result.json"),
                "dirty_heap": dirty_heap,
            }
            (work / "job.json").write_text(json.dumps(job))
            env = dict(os.environ)
            env.pop("MALLOC_PERTURB_", None)
            if neutralise_kv:
                env.update(KV_NEUTRALISER)
                notes.append(
                    "ran libGenie with MALLOC_PERTURB_=255, so its KV buffers start zeroed as on a device "
                    "(Genie leaves them unzeroed on x86)"
                )
            else:
                notes.append("KV buffers NOT neutralised: they start with whatever the heap held")
            if dirty_heap:
                notes.append("filled and freed heap memory before creating the dialog")
            result = _run_child(work / "job.json", env, self.timeout_s, ctx_bins, bundle)
            return GenieResult(
                tokens=tuple(result["tokens"]),
                notes=tuple(notes),
                step_seconds=tuple(result["step_seconds"]),
                create_seconds=result["create_seconds"],
                query_status=result["query_status"],
                debug_dir=Path(debug_dir) if debug_dir is not None else None,
                config=config_path if work_dir is not None else None,
            )


@contextlib.contextmanager
def _work_dir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        Path(given).mkdir(parents=True, exist_ok=True)
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix="q9diff-genie-") as tmp:
        yield Path(tmp)


def write_patched_config(
    bundle: Path,
    work: Path,
    debug_dir: Path | None,
    *,
    place: Callable[[Path], str] = str,
    max_num_tokens: int | None = None,
    also_inside: tuple[Path, ...] = (),
) -> tuple[Path, list[str], list[Path]]:
    """Write the bundle's config, made runnable from anywhere and greedy, to `work`; return its path,
    the notes that say what changed, and the absolute ctx-bins in their configured order.

    `place` says what each referenced file (ctx-bin, tokenizer, extensions; given as an absolute local
    path) is called in the written config: by default its absolute path, for a device the name it is
    pushed under. `max_num_tokens` bounds the answer where no API call can (genie-t2t-run).
    Every referenced file must resolve inside the bundle, or inside one of `also_inside` (folders q9diff
    filled itself, such as its rebuild cache); anything else is refused, naming the path.
    """
    try:  # the one reader's line, raised as this runner's error
        cfg = genie_config.read(bundle, also_inside=tuple(also_inside))
        ctx_bins = cfg.ctx_bin_paths()
        tokenizer = cfg.tokenizer and cfg.file(cfg.tokenizer, "dialog.tokenizer.path")
        extension = cfg.extension and cfg.file(cfg.extension, "dialog.engine.backend.extensions")
    except genie_config.ConfigError as exc:
        raise GenieError(str(exc)) from None
    config = json.loads(cfg.text)
    dialog = config["dialog"]
    engine = dialog.get("engine") or {}
    if tokenizer:
        dialog["tokenizer"]["path"] = place(tokenizer)
    if extension:
        engine["backend"]["extensions"] = place(extension)
    binary = engine.get("model", {}).get("binary", {})
    for key in genie_config.CTX_BINS_KEYS:
        if key in binary:
            refs = [r for r in cfg.ctx_bins if r.where.rsplit(".", 1)[-1].startswith(key)]
            binary[key] = [place(r.path) for r in refs]
    old_sampler = dialog.get("sampler")
    dialog["sampler"] = dict(GREEDY_SAMPLER)
    paths = "absolute" if place is str else "relocated"
    notes = [
        f"wrote a patched copy of {CONFIG_NAME} ({paths} ctx-bin, tokenizer and extension paths) to {work}",
        f"replaced the sampler {json.dumps(old_sampler)} by greedy (temp 0, top-k 1): "
        "Genie's greedy flag alone still samples",
    ]
    if max_num_tokens is not None:
        # dialog.max-num-tokens counts generated tokens only: with 5 prompt ids and a value of 3 (7),
        # libGenie 1.21 answered exactly 3 (7) tokens, then SENTENCE_END.
        dialog["max-num-tokens"] = int(max_num_tokens)
        notes.append(f"set dialog max-num-tokens {max_num_tokens}: the answer has at most that many tokens")
    if debug_dir is not None:
        Path(debug_dir).mkdir(parents=True, exist_ok=True)
        dialog["debug"] = {
            "path": str(Path(debug_dir).resolve()),
            "dump-tensors": True,
            "dump-specs": True,
            "dump-outputs": True,
        }
        notes.append(f"Genie dumps every graph input and output to {debug_dir}")
    path = work / CONFIG_NAME
    path.write_text(json.dumps(config, indent=2))
    return path, notes, ctx_bins


# --- the parent side of the child process -----------------------------------------------------------

# Exit codes of `python -m q9diff.runners.genie_child`.
EXIT_GENIE_ERROR = 2
EXIT_UNAVAILABLE = 3
_INSERTING = re.compile(r"Inserting graph (\S+) as idx (\d+) for AR-(\d+) CL-(\d+)")


def _run_child(job: Path, env: dict[str, str], timeout_s: float, ctx_bins: list[Path], bundle: Path) -> dict:
    command = python_argv("q9diff.runners.genie_child", [str(job.resolve())])
    try:
        # Its own TMPDIR, removed even when the work folder is one the caller keeps.
        with private_work("q9diff-genie-tmp-") as tmp:
            child = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, env=child_env(tmp, env),
                cwd=job.parent,
            )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise GenieError(f"{bundle}: libGenie did not finish within {timeout_s:g} s") from exc
    log = child.stdout + child.stderr
    order_problem = split_order_problem(log, ctx_bins)
    result_path = Path(json.loads(job.read_text())["result"])
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    if order_problem:
        raise GenieError(f"{bundle}: {order_problem}")
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        stage = result.get("stage", "starting")
        raise GenieError(f"{bundle}: libGenie crashed ({name}) while {stage}{_first_error(log)}")
    if child.returncode == EXIT_UNAVAILABLE:
        raise GenieUnavailable(result.get("error") or _last_line(log))
    if child.returncode != 0 or "tokens" not in result:
        message = result.get("error") or f"the Genie process failed (exit {child.returncode})"
        raise GenieError(f"{bundle}: {message}{_first_error(log)}")
    return result


def split_order_problem(log: str, ctx_bins: list[Path]) -> str | None:
    """Compare the split order Genie logged ("Inserting graph G as idx i for AR-a CL-c") with the order
    q9diff's own decoding uses (the graph names' `_<i>_of_<n>` suffix when they carry one, as Genie's,
    else ctx-bins order); a sentence naming the first group Genie put out of order, or None."""
    from q9diff.genie.layout import split_index  # start-up: genie.layout
    from q9diff.read.openers import open_binary  # start-up: read.openers, construct

    where: dict[str, int] = {}
    for index, path in enumerate(ctx_bins):
        try:
            graphs = open_binary(path).graphs
        except Exception:  # a file q9diff cannot parse is Genie's to refuse, and its log says how
            continue
        for graph in graphs:
            where.setdefault(graph.name, index)
    groups: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for graph, idx, ar, cl in _INSERTING.findall(log):
        groups.setdefault((int(ar), int(cl)), []).append((int(idx), graph))
    for (ar, cl), members in sorted(groups.items()):
        genie_order = [graph for _, graph in sorted(members)]
        named = all(split_index(g) is not None for g in genie_order)
        configured = sorted(
            genie_order, key=lambda g: split_index(g) if named else where.get(g, len(ctx_bins))
        )
        if genie_order != configured:
            names = [ctx_bins[where[g]].name if g in where else g for g in genie_order]
            return (
                f"Genie ordered the AR-{ar} CL-{cl} splits as {', '.join(names)}, not in ctx-bins order: it "
                "sorts graphs by their '_<i>_of_<n>' name suffix, and names without one (ONNX Runtime's "
                "QNNExecutionProvider_..._<hash>_1_0) as strings, so this bundle would compute garbage."
            )
    return None


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "ERROR" in line and "LIBNATIVE" not in line:
            return f"; Genie: {line.strip()}"
    return ""


def _last_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"
