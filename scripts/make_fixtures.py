"""Rebuild q9diff's fixtures from seeded models through the ort-qnn backend.

    python scripts/make_fixtures.py [--python-for 2.47=ort-2.3/bin/python ...]   # rewrite fixtures/
    python scripts/make_fixtures.py --check [--python-for ...]   # rebuild into a temp dir, compare
    python scripts/make_fixtures.py --check --models-only        # the models' stages only (~1 min)
    python scripts/make_fixtures.py --check --only variants      # qwen-mini, story or variants alone
    python scripts/make_fixtures.py --oracle-only  # rewrite NAME.oracle.json beside existing .bin files

The fixtures are reproducible byte for byte only with the versions they were made with, pinned in
scripts/fixtures-constraints/ (pip constraints files, one per QAIRT runtime, each reading common.txt):

    python3.11 -m venv .venv
    .venv/bin/pip install -c scripts/fixtures-constraints/qairt-2.51.txt -e '.[test]'
    python3.11 -m venv ort-2.3          # likewise ort-2.4, 2.5, 2.6 with qairt-2.48, 2.49, 2.50.txt
    ort-2.3/bin/pip install -c scripts/fixtures-constraints/qairt-2.47.txt onnxruntime-qnn onnxruntime \\
        onnx -e .
    python scripts/make_fixtures.py --check --python-for 2.47=ort-2.3/bin/python ...

At start the script compares the installed versions of this interpreter (against its QAIRT's pins) and of
every --python-for one (against theirs) and refuses, naming each that differs, unless --ignore-pins.
Every recipe it writes records the compile child's versions (`made_with`); each models/ folder has
stages.json, the digests of every model's float model and calibration feeds with the versions and CPU
extensions they were made with.

--check rebuilds stage by stage and, for every file that differs, names the first stage that moved: the
models are rebuilt and compared (float model, calibration feeds, quantized model, from stages.json); the
binaries are compiled from the committed models, so the compiler is checked whatever the models did, and
their oracles read. It prints each step's time as it ends; on a shared 2-core machine a full --check with
2.47-2.50 took 5m34s (models 35 s, qwen-mini 78 s, story 48 s, variants 155 s, oracles 17 s).

The CPU matters, besides the versions: ONNX Runtime picks its CPU kernels by the vector extensions, and
the LLM models' calibration comes from their float decode on it. The committed LLM models rebuild byte
for byte on a CPU with AVX-512 (stages.json lists its extensions); on an AVX2-only CPU (measured on an
emulated Haswell, qemu-x86_64 -cpu Haswell) the decoded hidden states differ in their last bits, with the
same greedy tokens, and the feeds of 3 of qwen-mini's 4 graphs move: those of the 3 models a failed
--check on another machine named. --check says so when this CPU's extensions differ from those recorded.

Every binary NAME.bin gets NAME.recipe.json (how to rebuild exactly it) and NAME.oracle.json
(Qualcomm's own metadata, read through libQnnSystem by q9diff.oracle).

fixtures/qwen-mini: a 2-part Qwen2.5-style decoder (scripts/fixture_models.py), built twice from the
same models/: reference/ (soc_model 77, v73, VTCM 8 MB, O=3) and local/ (soc_model 0 with v73 only).
Each build has part_{i}_of_2.bin (prompt AR=32 + token AR=1 graphs in one context, weights shared,
AI Hub's layout), recipe.json for both parts, and a Genie bundle whose ctx-bins are one binary per
graph under genie/, because Genie on x86 refuses shared-weight binaries. The w8a16 models are
calibrated on the exact feeds each graph gets while the float model decodes seeded prompts greedily
(bos prepended, eos padding, as Genie does; `calibration_prompts`), so that the quantized model tracks
the float one in real decoding and the emulator's greedy tokens match the CPU reference's.

Every graph carries AI Hub's name (`prompt_ar32_cl128_1_of_2`, `token_ar1_cl128_2_of_2`): the ort-qnn
backend gives the compiler the recipe's graph names (q9diff.backends.htp_graph_hook).

fixtures/variants: a small MLP compiled from one base (soc_model 77, v73, VTCM 8 MB, O=3) with one
setting changed at a time, plus the spill-fill model and the same base under older QAIRT versions;
packing_off / packing_on: an MLP whose int8 per-tensor weights lie in [-7, 7], without and with weights
packing; int4_native / int4_unpacked: the MLP with native INT4 weights, stored packed (the default
native_hmx_a16w4=true) and one per byte (native_hmx_a16w4=false).

fixtures/story: the seed's story as one weight-shared set (a smaller decoder whose int8 weights lie
in [-7, 7], 2 parts, prompt + token graph per context): local (soc_model 0, VTCM 4 MB, no packing),
vtcm8 (+VTCM 8 MB), soc77 (+soc_model 77), reference (also weights packing and O=3).

The older QAIRT builds (variants/qairt_2.47-2.50, *_qairt_2.48) need one Python 3.11 venv each, given
with --python-for and installed from its pins, as above (onnxruntime-qnn 2.3.0 with onnxruntime 1.24.4;
2.4.0-2.6.0 with 1.32.0). Their compile children import q9diff, and q9diff.formats, from this checkout. A
QAIRT version without --python-for is skipped (its committed files are then left as they are).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import fixture_check as fc  # noqa: E402
import fixture_models as fm  # noqa: E402

from q9diff.backends.ort_qnn import OrtQnnBackend  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402

FIXTURES = REPO / "fixtures"
TOPS = ("qwen-mini", "story", "variants")  # the fixture folders this script makes
CFG = fm.DecoderConfig()
N_PARTS = 2
PROMPT_AR, TOKEN_AR = 32, 1
BOS, EOS = CFG.vocab - 2, CFG.vocab - 3  # <|im_start|>, <|endoftext|>
# Calibration: the float model decodes these prompt lengths (bos not counted) greedily for 48 tokens.
CALIBRATION_PROMPT_LENGTHS = (3, 8, 12, 20, 31, 45)
CALIBRATION_STEPS = 48

# The seed's story, step by step from the local build to the reference (fixtures/story).
STORY_CFG = fm.DecoderConfig(hidden=64, intermediate=128, vocab=1024, seed=2026)
STORY_BUILDS = {
    "local": rcp.Settings(soc_model=0, dsp_arch="v73", vtcm_mb=4, weight_sharing=True),
    "vtcm8": rcp.Settings(soc_model=0, dsp_arch="v73", vtcm_mb=8, weight_sharing=True),
    "soc77": rcp.Settings(soc_model=77, dsp_arch="v73", vtcm_mb=8, weight_sharing=True),
    "reference": rcp.Settings(
        soc_model=77,
        dsp_arch="v73",
        vtcm_mb=8,
        optimization_level=3,
        weights_packing=True,
        weight_sharing=True,
    ),
}
# MLP shapes of the packing pair: 2 x 128 KiB of int8 weights in [-7, 7].
PACKING_MLP = {"seq": 16, "width": 256, "hidden": 512, "seed": 5}

QWEN_BUILDS = {
    "reference": rcp.Settings(
        soc_model=77, dsp_arch="v73", vtcm_mb=8, optimization_level=3, weight_sharing=True
    ),
    "local": rcp.Settings(soc_model=0, dsp_arch="v73", weight_sharing=True),
}

BASE = rcp.Settings(soc_model=77, dsp_arch="v73", vtcm_mb=8, optimization_level=3)
SOC_ARCH = {0: "v73", 30: "v68", 36: "v69", 43: "v73", 57: "v75", 69: "v79", 77: "v73", 87: "v81"}
# A generic build (soc_model 0) of every other arch, beside soc_N: the pairs the generic-target rules
# (q9diff/read/generic_measured.json, scripts/measure_generic.py) are checked against; and QAIRT 2.48's
# generic v79 build, which records v68, beside its explicit SM8750 one.
GENERIC_ARCHES = ("v68", "v69", "v75", "v79", "v81")
OLD_GENERIC = (("2.48", 0, "v79"), ("2.48", 69, "v79"))
# QAIRT versions built by another interpreter (--python-for); their packages: scripts/fixtures-constraints
OLD_QAIRT = ("2.47", "2.48", "2.49", "2.50")
# Smallest tried with spill_fill_buffer_size > 0 (7.9 MB at VTCM 8 MB, QAIRT 2.51); 4096x64x512,
# 3072x64x1024 and 4096x32x512 give 0.
SPILL_FILL = {"seq": 4096, "width": 32, "hidden": 1024}


@dataclass(frozen=True)
class Variant:
    name: str
    settings: rcp.Settings
    models: tuple[str, ...]  # under variants/models/
    note: str
    qairt: str | None = None  # None: this interpreter's QAIRT
    # The compiler keeps the graph names ONNX Runtime chose (a recipe's ep_graph_names), as it did before
    # the graphCreate hook named graphs: variants/qairt_2.47-2.50 were built so, the tests use them as
    # binaries with EP names, and the load measurements (q9diff/load/compat_measured.json) are of them.
    ep_names: bool = False


def variants() -> list[Variant]:
    out = []
    for soc, arch in SOC_ARCH.items():
        out.append(
            Variant(
                f"soc_{soc}", replace(BASE, soc_model=soc, dsp_arch=arch), ("mlp.onnx",), f"soc_model {soc}"
            )
        )
    for arch in GENERIC_ARCHES:
        settings = replace(BASE, soc_model=0, dsp_arch=arch)
        out.append(Variant(f"generic_{arch}", settings, ("mlp.onnx",), f"soc_model 0, dsp_arch {arch}"))
    for version, soc, arch in OLD_GENERIC:
        name = f"{'generic' if soc == 0 else f'soc_{soc}'}_{arch}_qairt_{version}"
        settings = replace(BASE, soc_model=soc, dsp_arch=arch)
        note = f"soc_model {soc}, dsp_arch {arch}, QAIRT {version}"
        out.append(Variant(name, settings, ("mlp.onnx",), note, version))
    for mb in (2, 4, 8):
        out.append(Variant(f"vtcm_{mb}mb", replace(BASE, vtcm_mb=mb), ("mlp.onnx",), f"vtcm_mb {mb}"))
    for level in (1, 2, 3):
        out.append(
            Variant(f"opt_{level}", replace(BASE, optimization_level=level), ("mlp.onnx",), f"O={level}")
        )
    out.append(Variant("precision_w8a16", BASE, ("mlp.onnx",), "quantized w8a16 model"))
    out.append(
        Variant(
            "quantize_io", BASE, ("mlp_qio.onnx",), "the w8a16 model with its I/O quantized (--quantize_io)"
        )
    )
    out.append(
        Variant("precision_fp16", replace(BASE, precision="fp16"), ("mlp.float.onnx",), "float model, fp16")
    )
    one = replace(BASE, weight_sharing=True)
    out.append(Variant("graphs_1", one, ("mlp.onnx",), "one graph in the context"))
    out.append(
        Variant("graphs_2", one, ("mlp.onnx", "mlp_seq1.onnx"), "two graphs (seq 16, seq 1), one context")
    )
    out.append(
        Variant("spill_fill", BASE, ("spill_fill.onnx",), "activations larger than VTCM: spill-fill > 0")
    )
    four_bit = "an MLP whose int8 per-tensor weights lie in [-7, 7]"
    out.append(Variant("packing_off", BASE, ("mlp_w4range.onnx",), f"{four_bit}, not packed"))
    out.append(
        Variant(
            "packing_on",
            replace(BASE, weights_packing=True),
            ("mlp_w4range.onnx",),
            f"{four_bit}, weights packing on",
        )
    )
    out.append(Variant("int4_native", BASE, ("mlp_int4.onnx",), "native INT4 weights (stored packed)"))
    out.append(
        Variant(
            "int4_unpacked",
            replace(BASE, finalize_options={"native_hmx_a16w4": False}),
            ("mlp_int4.onnx",),
            "native INT4 weights stored one per byte (native_hmx_a16w4=false)",
        )
    )
    for version in OLD_QAIRT:
        out.append(
            Variant(f"qairt_{version}", BASE, ("mlp.onnx",), f"QAIRT {version}", qairt=version, ep_names=True)
        )
    out.append(Variant("qairt_2.51", BASE, ("mlp.onnx",), "QAIRT 2.51", qairt="2.51"))
    return out


# ---------- models ----------


def qwen_model_name(part: int, ar: int) -> str:
    return f"part_{part}_of_{N_PARTS}_ar{ar}.onnx"


def graph_name(kind: str, ar: int, part: int, cfg: fm.DecoderConfig = CFG) -> str:
    """AI Hub's graph name: `{prompt|token}_ar{AR}_cl{CL}_{i}_of_{n}`; Genie orders splits by it."""
    return f"{kind}_ar{ar}_cl{cfg.context}_{part}_of_{N_PARTS}"


def ai_hub_names(cfg: fm.DecoderConfig = CFG) -> dict[tuple[str, int], str]:
    return {
        (kind, part): graph_name(kind, ar, part, cfg)
        for kind, ar in (("prompt", PROMPT_AR), ("token", TOKEN_AR))
        for part in range(1, N_PARTS + 1)
    }


def calibration_prompts(cfg: fm.DecoderConfig = CFG) -> list[list[int]]:
    """Seeded prompts as Genie feeds them (bos prepended), one to two AR-32 chunks long."""
    rng = np.random.default_rng(cfg.seed)
    bos = cfg.vocab - 2
    return [[bos, *map(int, rng.integers(0, cfg.vocab, n))] for n in CALIBRATION_PROMPT_LENGTHS]


def build_decoder(cfg: fm.DecoderConfig, folder: Path, weight_type: str = "QUInt8") -> None:
    """The decoder's parts, w8a16 calibrated on real decoding; int8 weights go to [-7, 7] with QInt8.
    Writes stages.json beside them: the digests of each float part and of its calibration feeds."""
    folder.mkdir(parents=True, exist_ok=True)
    tokens: list[list[int]] = []
    calibration = fm.decoding_calibration(
        cfg,
        N_PARTS,
        (PROMPT_AR, TOKEN_AR),
        calibration_prompts(cfg),
        CALIBRATION_STEPS,
        pad=cfg.vocab - 3,
        tokens=tokens,
    )
    stages = {}
    for part in range(1, N_PARTS + 1):
        for ar in (PROMPT_AR, TOKEN_AR):
            float_model = fm.decoder_part(cfg, part, N_PARTS, ar)
            path = fm.quantize_w8a16(
                float_model,
                calibration[(part, ar)],
                folder / qwen_model_name(part, ar),
                fm.kv_overrides(cfg, part),
                weight_type=weight_type,
            )
            if weight_type == "QInt8":
                fm.weights_to_4bit_range(path)
            stages[path.name] = {
                "float": fc.model_digest(float_model),
                "calibration": fc.feeds_digest(calibration[(part, ar)]),
            }
    fc.write_stages(folder, stages, {"greedy_tokens": fc.digest(json.dumps(t).encode() for t in tokens)})


def build_models(root: Path, only: tuple[str, ...]) -> None:
    """The models of the fixture folders `only`, each folder's into root/TOP/models with its stages.json."""
    if "qwen-mini" in only:
        build_decoder(CFG, root / "qwen-mini" / "models")
    if "story" in only:
        build_decoder(STORY_CFG, root / "story" / "models", weight_type="QInt8")
    if "variants" in only:
        build_variant_models(root / "variants" / "models")


def build_variant_models(var: Path) -> None:
    var.mkdir(parents=True, exist_ok=True)
    stages = {}

    def quantized(name: str, model: onnx.ModelProto, **kwargs) -> Path:
        calibration = fm.mlp_calibration(model, seed=3)
        path = fm.quantize_w8a16(model, calibration, var / name, **kwargs)
        stages[name] = {"float": fc.model_digest(model), "calibration": fc.feeds_digest(calibration)}
        return path

    for name, model in (
        ("mlp", fm.mlp_model(seq=16)),
        ("mlp_seq1", fm.mlp_model(seq=1)),
        ("spill_fill", fm.spill_fill_model(**SPILL_FILL)),
    ):
        quantized(f"{name}.onnx", model)
    float_mlp = fm.mlp_model(seq=16)
    onnx.save(float_mlp, var / "mlp.float.onnx")
    stages["mlp.float.onnx"] = {"float": fc.model_digest(float_mlp)}
    fm.quantized_io(var / "mlp.onnx", var / "mlp_qio.onnx")
    stages["mlp_qio.onnx"] = stages["mlp.onnx"]  # mlp.onnx with its I/O quantized
    packing = fm.mlp_model(**PACKING_MLP)
    fm.weights_to_4bit_range(quantized("mlp_w4range.onnx", packing, weight_type="QInt8"))
    quantized("mlp_int4.onnx", packing, weight_type="QInt4")
    fc.write_stages(var, stages)


# ---------- compiling and writing ----------


def write_json(path: Path, data) -> None:
    rcp.write_atomic(path, json.dumps(data, indent=2) + "\n")


def compile_one(backend: OrtQnnBackend, recipe: rcp.Recipe, recipe_path: Path) -> list:
    """Compile `recipe` as if loaded from recipe_path; write the recipe there, the .bin beside it."""
    recipe = replace(recipe, path=recipe_path.resolve())
    backend.compile(recipe, recipe_path.parent)
    compiled = list(backend.compiled)
    recipe = replace(recipe, qairt_version=compiled[0].qairt_version, made_with=compiled[0].made_with)
    if recipe.ep_graph_names:  # say which names ONNX Runtime chose
        names = "; ".join(
            f"{p.output}: "
            + ", ".join(f"{g.name} = {n}" for g, n in zip(p.graphs, c.graph_names, strict=True))
            for p, c in zip(recipe.parts, compiled, strict=True)
        )
        recipe = replace(recipe, notes=f"{recipe.notes} ORT graph names: {names}.")
    rcp.write_atomic(recipe_path, rcp.dump(recipe))
    return compiled


def qwen_parts(models: str, kinds: tuple[str, ...], names: dict) -> list[rcp.Part]:
    parts = []
    for part in range(1, N_PARTS + 1):
        graphs = tuple(
            rcp.GraphSource(names[(kind, part)], f"{models}/{qwen_model_name(part, ar)}")
            for kind, ar in (("prompt", PROMPT_AR), ("token", TOKEN_AR))
            if kind in kinds
        )
        parts.append(rcp.Part(f"part_{part}_of_{N_PARTS}", f"part_{part}_of_{N_PARTS}.bin", graphs))
    return parts


def build_qwen(backend: OrtQnnBackend, root: Path, build: str, settings: rcp.Settings, names: dict) -> None:
    out = root / "qwen-mini" / build
    out.mkdir(parents=True, exist_ok=True)
    intro = (
        f"qwen-mini {build} build: Qwen2.5-style decoder, {N_PARTS} parts, "
        f"prompt AR{PROMPT_AR} + token AR{TOKEN_AR} in one context per part."
    )
    parts = qwen_parts("../models", ("prompt", "token"), names)
    whole = rcp.Recipe(backend="ort-qnn", parts=tuple(parts), settings=settings, notes=intro)
    compiled = compile_one(backend, whole, out / "recipe.json")
    for part, c in zip(parts, compiled, strict=True):
        per_bin = rcp.Recipe(backend="ort-qnn", parts=(part,), settings=settings, notes=intro)
        made = replace(per_bin, qairt_version=c.qairt_version, made_with=c.made_with)
        rcp.write_atomic(out / f"{part.name}.recipe.json", rcp.dump(made))
    # Genie bundle: one binary per graph (x86 Genie refuses shared weights), so no weight sharing.
    genie = out / "genie"
    genie.mkdir(exist_ok=True)
    genie_settings = replace(settings, weight_sharing=None)
    ctx_bins, graph_names = [], []
    for part in range(1, N_PARTS + 1):
        for kind, ar in (("prompt", PROMPT_AR), ("token", TOKEN_AR)):
            name = f"part_{part}_of_{N_PARTS}_{kind}"
            one = rcp.Part(
                name,
                f"{name}.bin",
                (rcp.GraphSource(names[(kind, part)], f"../../models/{qwen_model_name(part, ar)}"),),
            )
            note = f"qwen-mini {build}, Genie bundle: {kind} graph of part {part} alone."
            recipe = rcp.Recipe(backend="ort-qnn", parts=(one,), settings=genie_settings, notes=note)
            graph_names += compile_one(backend, recipe, genie / f"{name}.recipe.json")[0].graph_names
            ctx_bins.append(f"genie/{name}.bin")
    write_json(out / "genie_config.json", genie_config(ctx_bins))
    write_json(out / "htp_backend_ext_config.json", htp_ext_config(settings, graph_names))
    write_json(out / "tokenizer.json", tokenizer_json())


def build_story(backend: OrtQnnBackend, root: Path, build: str, settings: rcp.Settings) -> None:
    """One step of the seed's story: both parts, prompt + token graph sharing weights in one context."""
    out = root / "story" / build
    out.mkdir(parents=True, exist_ok=True)
    intro = (
        f"story {build}: decoder with int8 weights in [-7, 7], {N_PARTS} parts, prompt AR{PROMPT_AR} + "
        f"token AR{TOKEN_AR} in one context per part."
    )
    parts = qwen_parts("../models", ("prompt", "token"), ai_hub_names(STORY_CFG))
    whole = rcp.Recipe(backend="ort-qnn", parts=tuple(parts), settings=settings, notes=intro)
    compile_one(backend, whole, out / "recipe.json")
    names = [g.name for part in parts for g in part.graphs]
    write_json(out / "htp_backend_ext_config.json", htp_ext_config(settings, names))


SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def genie_config(ctx_bins: list[str]) -> dict:
    """Genie dialog config (paths relative to the build directory, Genie's working directory)."""
    return {
        "dialog": {
            "version": 1,
            "type": "basic",
            "context": {
                "version": 1,
                "size": CFG.context,
                "n-vocab": CFG.vocab,
                "bos-token": BOS,
                "eos-token": EOS,
            },
            "sampler": {"version": 1, "seed": 42, "temp": 0.8, "top-k": 40, "top-p": 0.95, "greedy": True},
            "tokenizer": {"version": 1, "path": "tokenizer.json"},
            "engine": {
                "version": 1,
                "n-threads": 3,
                "backend": {
                    "version": 1,
                    "type": "QnnHtp",
                    "QnnHtp": {
                        "version": 1,
                        "use-mmap": False,
                        "spill-fill-bufsize": 0,
                        "mmap-budget": 0,
                        "poll": True,
                        "cpu-mask": "0xe0",
                        "kv-dim": CFG.head_dim,
                        "pos-id-dim": CFG.pos_dim,
                        "rope-theta": CFG.rope_theta,
                    },
                    "extensions": "htp_backend_ext_config.json",
                },
                "model": {"version": 1, "type": "binary", "binary": {"version": 1, "ctx-bins": ctx_bins}},
            },
        }
    }


def htp_ext_config(settings: rcp.Settings, graph_names: list[str]) -> dict:
    """The HTP backend extension config saying exactly what the build set, nothing more."""
    device = {
        k: v for k, v in (("soc_model", settings.soc_model), ("dsp_arch", settings.dsp_arch)) if v is not None
    }
    config: dict = {"devices": [device]}
    graph = {
        k: v
        for k, v in (
            ("vtcm_mb", settings.vtcm_mb),
            ("O", settings.optimization_level),
            ("weights_packing", settings.weights_packing),
        )
        if v is not None
    }
    if graph:
        config["graphs"] = [{"graph_names": graph_names, **graph}]
    return config


def _byte_level_alphabet() -> list[str]:
    """GPT-2's bytes_to_unicode: the printable character ByteLevel uses for each byte 0..255."""
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def tokenizer_json() -> dict:
    """A valid HF ByteLevel BPE tokenizer: 256 bytes, merges of common pairs, 3 specials; V = n-vocab."""
    alphabet = _byte_level_alphabet()
    vocab = {c: i for i, c in enumerate(alphabet)}
    common = [alphabet[ord(c)] for c in " etaoinshrdlucmfwypvbgkjqxz"] + [
        alphabet[ord(c)] for c in "0123456789.,'-!?"
    ]
    merges = []
    n_merges = CFG.vocab - 256 - len(SPECIALS)
    for a in common:
        for b in common:
            if len(merges) == n_merges:
                break
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
                merges.append(f"{a} {b}")
    added = []
    for token in SPECIALS:
        vocab[token] = len(vocab)
        added.append(
            {
                "id": vocab[token],
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {"type": "ByteLevel", **byte_level},
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


def build_variants(backend: OrtQnnBackend, root: Path, qairt_available: set[str]) -> list[str]:
    out = root / "variants"
    out.mkdir(parents=True, exist_ok=True)
    skipped = []
    for v in variants():
        if v.qairt and v.qairt not in qairt_available:
            skipped.append(v.name)
            continue
        graphs = tuple(rcp.GraphSource(Path(m).stem, f"models/{m}") for m in v.models)
        recipe = rcp.Recipe(
            backend="ort-qnn",
            parts=(rcp.Part(v.name, f"{v.name}.bin", graphs),),
            settings=v.settings,
            qairt_version=v.qairt,
            notes=f"variant {v.name}: base (soc_model 77, v73, VTCM 8 MB, O=3) with {v.note}.",
            ep_graph_names=v.ep_names,
        )
        compile_one(backend, recipe, out / f"{v.name}.recipe.json")
    return skipped


def write_oracles(root: Path) -> list[str]:
    from q9diff.oracle import reader as oracle

    failed = []
    for binary in sorted(root.rglob("*.bin")):
        if binary.parent.name == "dlc":  # scripts/make_dlc_fixtures.py's; its *_qnn.bin are DLCs
            continue
        try:
            info = oracle.read_binary_info_isolated(binary)
        except Exception as exc:  # noqa: BLE001 - report every binary the oracle cannot read, then go on
            failed.append(f"{binary.relative_to(root)}: {exc}")
            continue
        write_json(binary.with_name(binary.stem + ".oracle.json"), oracle.to_dict(info))
    return failed


class Clock:
    """Progress on stderr: each step's name and the time since the start, as the step ends."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def done(self, what: str) -> None:
        elapsed = int(time.monotonic() - self.start)
        print(f"[{elapsed // 60:3d}m{elapsed % 60:02d}s] {what}", file=sys.stderr, flush=True)


def compile_all(root: Path, pythons: dict[str, str], only: tuple[str, ...], clock: Clock) -> list[str]:
    """Every binary of the fixture folders `only` into root, from the models in root/TOP/models."""
    backend = OrtQnnBackend(pythons=pythons)
    notes = []
    if "qwen-mini" in only:
        for build, settings in QWEN_BUILDS.items():
            build_qwen(backend, root, build, settings, ai_hub_names())
        clock.done("qwen-mini compiled")
    if "story" in only:
        for build, settings in STORY_BUILDS.items():
            build_story(backend, root, build, settings)
        clock.done("story compiled")
    if "variants" in only:
        skipped = build_variants(backend, root, set(pythons) | {"2.51"})
        notes += [f"skipped {name}: no --python-for its QAIRT version" for name in skipped]
        clock.done("variants compiled")
    notes += write_oracles(root)
    clock.done("oracles read")
    return notes


def compare(built: Path, committed: Path, ignore_missing: set[str], only: tuple[str, ...]) -> list[str]:
    """Relative paths of the files of `only` that differ, or exist on one side only."""
    problems = []
    new = {p.relative_to(built) for p in built.rglob("*") if p.is_file()}
    # fixtures/pte is made by scripts/make_pte_fixtures.py (ExecuTorch), not by this script
    old = {
        p.relative_to(committed)
        for p in committed.rglob("*")
        if p.is_file() and p.relative_to(committed).parts[0] in only
    }
    for rel in sorted(new | old):
        if rel not in new:
            if not any(rel.name.startswith(s) for s in ignore_missing):
                problems.append(f"only committed: {rel}")
        elif rel not in old:
            problems.append(f"only rebuilt: {rel}")
        elif rel.name == "stages.json":
            if not fc.same_stages(built / rel, committed / rel):
                problems.append(f"differs: {rel}")
        elif not filecmp.cmp(built / rel, committed / rel, shallow=False):
            problems.append(f"differs: {rel}")
    return problems


def check(pythons: dict[str, str], only: tuple[str, ...], models_only: bool, clock: Clock) -> list[str]:
    """Rebuild into a temp dir and compare with fixtures/, stage by stage: the models are rebuilt and
    compared on their own (stages.json names the first stage that moved: float model, calibration feeds,
    quantized model); the binaries are compiled from the committed models, so the compiler's stage is
    checked whatever the models did, and their oracles read from them. The mismatch lines."""
    with tempfile.TemporaryDirectory(prefix="q9diff-fixtures-") as tmp:
        tree, rebuilt = Path(tmp) / "tree", Path(tmp) / "models"
        build_models(rebuilt, only)
        clock.done("models made")
        notes = []
        if not models_only:
            for top in only:
                shutil.copytree(FIXTURES / top / "models", tree / top / "models")
            notes = compile_all(tree, pythons, only, clock)
        for top in only:
            shutil.rmtree(tree / top / "models", ignore_errors=True)
            shutil.copytree(rebuilt / top / "models", tree / top / "models")
        skipped = {n.split()[1].rstrip(":") for n in notes if n.startswith("skipped ")}
        if models_only:
            committed_models = tuple(f"{top}/models" for top in only)
            problems = [
                p
                for p in compare(tree, FIXTURES, skipped, only)
                if p.split(": ", 1)[1].startswith(committed_models)
            ]
        else:
            problems = compare(tree, FIXTURES, skipped, only)
        stages = fc.first_moved(tree, FIXTURES, [p.split(": ", 1)[1] for p in problems])
    lines = notes + problems
    if problems:
        lines += ["first stage moved:"] + [f"  {line}" for line in stages]
    return lines


def pins_problems(pythons: dict[str, str], only: tuple[str, ...]) -> list[str]:
    """This interpreter (its QAIRT's pins) and, when variants are built, every --python-for one."""
    from q9diff.backends.ort_qnn import our_qairt

    ours = ".".join((our_qairt() or "unknown").split(".")[:2])
    return fc.drift({ours: sys.executable} | (pythons if "variants" in only else {}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="rebuild into a temp dir and compare with fixtures/, stage by stage",
    )
    parser.add_argument("--oracle-only", action="store_true", help="only rewrite NAME.oracle.json files")
    parser.add_argument(
        "--python-for",
        action="append",
        default=[],
        metavar="VERSION=PYTHON",
        help="interpreter with onnxruntime-qnn of that QAIRT, e.g. 2.48=/work/venvs/ort-2.4/bin/python",
    )
    parser.add_argument(
        "--only",
        default=",".join(TOPS),
        metavar="FOLDERS",
        help=f"the fixture folders to build or check, comma-separated (default {','.join(TOPS)})",
    )
    parser.add_argument(
        "--models-only", action="store_true", help="with --check: the models' stages only, no compiling"
    )
    parser.add_argument(
        "--ignore-pins",
        action="store_true",
        help="go on when installed versions differ from scripts/fixtures-constraints (they are still named)",
    )
    args = parser.parse_args(argv)
    pythons = dict(item.split("=", 1) for item in args.python_for)
    only = tuple(top for top in TOPS if top in args.only.split(","))
    unknown = set(args.only.split(",")) - set(TOPS)
    if unknown or not only:
        parser.error(f"--only takes {', '.join(TOPS)}; got {args.only}")
    if args.oracle_only:
        failed = write_oracles(FIXTURES)
        print("\n".join(failed) or "oracle files written")
        return 1 if failed else 0
    drift = pins_problems(pythons, only)
    for line in drift:
        print(f"not the pinned versions: {line}", file=sys.stderr)
    if drift and not args.ignore_pins:
        print(
            "install from the pins (pip install -c scripts/fixtures-constraints/qairt-VERSION.txt ..., see "
            "this script's docstring), or pass --ignore-pins to go on with these versions",
            file=sys.stderr,
        )
        return 2
    cpu = fc.cpu_note(FIXTURES)
    if cpu and ("qwen-mini" in only or "story" in only):
        print(f"note: {cpu}", file=sys.stderr)
    clock = Clock()
    if args.check:
        lines = check(pythons, only, args.models_only, clock)
        problems = [ln for ln in lines if ln.startswith(("differs: ", "only committed: ", "only rebuilt: "))]
        if problems and (drift or cpu):
            lines += (
                ["what differs from the pins here:"]
                + [f"  {x}" for x in drift]
                + ([f"  {cpu}"] if cpu else [])
            )
        for line in lines:
            print(line)
        elapsed = int(time.monotonic() - clock.start)
        print(f"{len(problems)} mismatch(es) in {elapsed // 60}m{elapsed % 60:02d}s")
        return 1 if problems else 0
    staging = Path(tempfile.mkdtemp(prefix=".fixtures-", dir=REPO))
    try:
        build_models(staging, only)
        clock.done("models made")
        notes = compile_all(staging, pythons, only, clock)
        for note in notes:  # keep the committed files of QAIRT versions this run could not build
            if note.startswith("skipped "):
                name = note.split()[1].rstrip(":")
                for kept in (FIXTURES / "variants").glob(f"{name}.*"):
                    shutil.copy2(kept, staging / "variants" / kept.name)
        for top in only:
            kept = (
                FIXTURES / top / "models" / "stages.json"
            )  # the same stages: keep the CPU they were made on
            if fc.same_stages(kept, staging / top / "models" / "stages.json"):
                shutil.copy2(kept, staging / top / "models" / "stages.json")
            if (FIXTURES / top).exists():
                shutil.rmtree(FIXTURES / top)
            FIXTURES.mkdir(exist_ok=True)
            (staging / top).rename(FIXTURES / top)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
