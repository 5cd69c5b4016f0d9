"""`q9diff verify` of Genie bundles: a bundle decoded by q9diff and run by libGenie (locally on the emulator,
or genie-t2t-run on an EVK), and the token answers compared."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from q9diff.genie import config as genie_config
from q9diff.guard import read_text
from q9diff.read.openers import open_binary
from q9diff.runners.base import RunnerError, Session, shown_path
from q9diff.verify import llm

if TYPE_CHECKING:
    from q9diff.runners.ssh.runner import SshRunner
from q9diff.verify.run import (
    DialogConfig,
    LlmCheck,
    Side,
    VerifyResult,
    cpu_recipe,
    ctx_bins,
    divergence_step,
)


def genie_runnable(bundle: Path, work: Path) -> tuple[Path, list[str], tuple[Path, ...]]:
    """`bundle`, or a copy of its config in `work` whose weight-shared ctx-bins are replaced by their
    unshared rebuilds: Genie on x86 refuses shared weights ("Shared weights buffer isn't supported on
    this platform", then SIGSEGV), as the emulator does. Also the folders the copy may name files in
    (the bundle and q9diff's rebuild cache), for GenieRunner.generate's also_inside."""
    from q9diff.runners.local import unshared_rebuild  # start-up: runners.local

    bundle = bundle if bundle.is_dir() else bundle.parent
    names, notes, roots = [], [], (bundle.resolve(),)
    for b in ctx_bins(bundle):
        if len(open_binary(b).graphs) < 2:
            names.append(str(b))
            continue
        built, origin = unshared_rebuild(b)
        names += [str(p) for p in built]
        roots += tuple(dict.fromkeys(p.parent.resolve() for p in built))
        notes.append(
            f"{b.name}: weight-shared, which Genie on x86 cannot load; Genie ran its recipe ({origin})"
            " rebuilt with one context per graph instead. The shared binary itself runs only on a device."
        )
    if not notes:
        return bundle, [], ()
    cfg = genie_config.read(bundle)
    config = json.loads(cfg.text)
    dialog = config["dialog"]
    tokenizer = dialog.get("tokenizer", {})
    if isinstance(tokenizer, dict) and "path" in tokenizer:
        tokenizer["path"] = str(cfg.file(cfg.tokenizer, "dialog.tokenizer.path"))
    backend = dialog["engine"].get("backend", {})  # the reader checked the engine object
    if isinstance(backend, dict) and isinstance(backend.get("extensions"), str):
        backend["extensions"] = str(cfg.file(cfg.extension, "dialog.engine.backend.extensions"))
    dialog["engine"]["model"]["binary"]["ctx-bins"] = names
    (work / "genie_config.json").write_text(json.dumps(config, indent=2))
    return work, notes, roots


@dataclass(frozen=True)
class BundleDecoding:
    """q9diff's own greedy decoding of a Genie bundle's ctx-bins, the yardstick Genie's answers meet."""

    prompt: list[int]  # as Genie takes it: without bos
    ids: list[int]  # as the graphs are fed: bos first
    tokens: dict[str, tuple[int, ...]]  # "emulator", and "cpu" when there is a recipe
    sides: list[Side]
    notes: list[str]


def decode_bundle(
    candidate: Path, *, cpu: bool, steps: int, prompt: list[int] | None, seed: int
) -> BundleDecoding:
    """Decode the candidate bundle's ctx-bins greedily on the emulator and, from its recipe, on the CPU."""
    from q9diff.runners.local import LocalRunner, cpu_session  # start-up: runners.local

    dialog = DialogConfig.of(candidate)
    bins = ctx_bins(candidate)
    local = LocalRunner().open(bins)
    sessions: dict[str, Session] = {"emulator": local}
    sides = [Side("emulator", str(candidate), "local", tuple(local.notes))]
    notes: list[str] = []
    try:
        lay = llm.layout(local.graphs)
        if lay is None:
            raise RunnerError(f"{candidate}: not an LLM bundle in Genie's layout")
        if prompt is None:
            prompt = [int(x) for x in np.random.default_rng(seed).integers(0, lay.vocab, 8)]
        if cpu:
            r = cpu_recipe(bins, None)
            if r is None:
                notes.append(f"no recipe beside {candidate}'s ctx-bins: no CPU reference")
            else:
                sessions["cpu"] = cpu_session(r)
                sides.append(Side("cpu", shown_path(r.path), "onnxruntime CPU", sessions["cpu"].notes))
        ids = ([dialog.bos] if dialog.bos is not None else []) + list(prompt)
        pad = dialog.eos if dialog.eos is not None else 0
        tokens = {k: llm.greedy(s, llm.layout(s.graphs), ids, steps, theta=dialog.theta, pad=pad).tokens
                  for k, s in sessions.items()}  # fmt: skip
    finally:
        for s in sessions.values():
            s.close()
    return BundleDecoding(list(prompt), ids, tokens, sides, notes)


def _divergences(tokens: dict[str, tuple[int, ...]]) -> dict[str, int | None]:
    divergence = {}
    for a, b in (
        ("candidate", "reference"),
        ("candidate", "emulator"),
        ("candidate", "cpu"),
        ("emulator", "cpu"),
    ):
        if a in tokens and b in tokens:
            divergence[f"{a}~{b}"] = divergence_step(tokens[a], tokens[b])
    return divergence


def verify_genie(
    candidate: Path,
    reference: Path | None,
    *,
    cpu: bool = True,
    steps: int = 16,
    prompt: list[int] | None = None,
    seed: int = 0,
) -> VerifyResult:
    """Genie bundles through Qualcomm's own Genie runtime on the emulator, beside q9diff's decoding of
    the same ctx-bins on the same emulator (`emulator`) and on the CPU: Genie against the plain graph
    run isolates the runtime glue (prompt feeding, KV handling, sampling) from the binaries."""
    from q9diff.runners.genie import GenieError, GenieRunner  # start-up: runners.genie

    runner = GenieRunner()
    decoded = decode_bundle(candidate, cpu=cpu, steps=steps, prompt=prompt, seed=seed)
    tokens, sides = decoded.tokens, decoded.sides
    for label, bundle in (("candidate", candidate), ("reference", reference)):
        if bundle is None:
            continue
        with tempfile.TemporaryDirectory(prefix="q9diff-genie-bundle-") as work:
            runnable, why, roots = genie_runnable(Path(bundle), Path(work))
            try:
                result = runner.generate(runnable, decoded.prompt, steps, also_inside=roots)
            except GenieError as exc:
                raise RunnerError(f"genie: {exc}") from None
        tokens[label] = result.tokens
        side = Side(label, str(bundle), "genie", tuple(why) + result.notes)
        sides.insert(len(sides) - (1 if "cpu" in tokens else 0), side)
    divergence = _divergences(tokens)
    judge = "candidate~reference" if reference is not None else "candidate~emulator"
    ordered = {k: tokens[k] for k in ("candidate", "reference", "emulator", "cpu") if k in tokens}
    check = LlmCheck(tuple(decoded.ids), ordered, divergence, (), divergence.get(judge, 0) is None)
    return VerifyResult(tuple(sides), (), check, tuple(decoded.notes))


def bundle_texts(bundle: Path, tokens: dict[str, tuple[int, ...]]) -> dict[str, str]:
    """Each side's tokens as text, detokenised with the bundle's tokenizer.json by HuggingFace
    `tokenizers` (the tokenizer Genie embeds), so a verdict shows what a user of the device would read."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise RunnerError("the Python package tokenizers is missing: pip install tokenizers") from None
    cfg = genie_config.read(bundle if bundle.is_dir() else bundle.parent)
    path = cfg.file(cfg.tokenizer, "dialog.tokenizer.path")
    text = read_text(path, "a tokenizer.json", RunnerError)  # capped: a huge or sparse file is not read
    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as exc:  # a missing file, a config without the key, a file tokenizers refuses
        raise RunnerError(f"{bundle}: no usable tokenizer in genie_config.json ({exc})") from None
    return {label: tokenizer.decode(list(ids), skip_special_tokens=False) for label, ids in tokens.items()}


def answers_agree(a: str, b: str, tokens: dict[str, tuple[int, ...]], texts: dict[str, str]) -> bool:
    """Sides a and b gave the same answer: the same token ids where both have ids, else the same text
    (a genie-t2t-run that answered text). Both answers are bounded by the same token count, so a
    shorter one is a difference, not a prefix."""
    if a in tokens and b in tokens:
        return tokens[a] == tokens[b]
    return texts[a] == texts[b]


def verify_genie_ssh(
    candidate: Path,
    reference: Path | None,
    runner: SshRunner,
    *,
    cpu: bool = True,
    steps: int = 16,
    prompt: list[int] | None = None,
    seed: int = 0,
) -> VerifyResult:
    """Genie bundles through Qualcomm's genie-t2t-run on the device (an EVK reached by ssh), beside
    q9diff's decoding of the candidate's ctx-bins on the emulator and the CPU: the emulator computes
    soc_model 0 and 77 builds alike, so only the device's answer shows a binary built for the wrong
    SoC. Weight-shared ctx-bins go to the device as they are; it is where they must run."""
    decoded = decode_bundle(candidate, cpu=cpu, steps=steps, prompt=prompt, seed=seed)
    tokens = dict(decoded.tokens)
    sides, notes = list(decoded.sides), list(decoded.notes)
    device_texts: dict[str, str] = {}
    for label, bundle in (("candidate", candidate), ("reference", reference)):
        if bundle is None:
            continue
        out = runner.genie(Path(bundle), decoded.prompt, steps)
        if out.tokens is not None:
            tokens[label] = out.tokens
        else:
            device_texts[label] = out.text
            notes.append(f"{label}: genie-t2t-run answered text, not token ids; compared as text")
        sides.insert(len(sides) - (1 if "cpu" in tokens else 0), Side(label, str(bundle), "ssh", out.notes))
    texts = {**bundle_texts(Path(candidate), tokens), **device_texts}
    order = ("candidate", "reference", "emulator", "cpu")
    judge = ("candidate", "reference" if reference is not None else "emulator")
    check = LlmCheck(
        tuple(decoded.ids),
        {k: tokens[k] for k in order if k in tokens},
        _divergences(tokens),
        (),
        answers_agree(*judge, tokens, texts),
        {k: texts[k] for k in order if k in texts},
    )
    return VerifyResult(tuple(sides), (), check, tuple(notes))
