"""Rebuild q9diff's fixtures from seeded models through the ort-qnn backend.

    python scripts/make_fixtures.py [--python-for 2.48=/work/venv-qnn24/bin/python ...]
    python scripts/make_fixtures.py --check      # rebuild into a temp dir, compare byte for byte
    python scripts/make_fixtures.py --oracle-only  # rewrite NAME.oracle.json beside existing .bin files

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

The older QAIRT builds need one Python 3.11 venv each, given with --python-for:
    2.47: pip install onnxruntime-qnn==2.3.0 onnxruntime==1.24.2 onnx   (its EP predates onnxruntime 1.32)
    2.48 / 2.49 / 2.50: pip install onnxruntime-qnn==2.4.0 / 2.5.0 / 2.6.0 onnx
A QAIRT version without --python-for is skipped (its committed files are then left as they are).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import fixture_models as fm  # noqa: E402

from q9diff.backends.ort_qnn import OrtQnnBackend  # noqa: E402
from q9diff.recipes import recipe as rcp  # noqa: E402

FIXTURES = REPO / "fixtures"
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
# (q9diff/format/generic_measured.json, scripts/measure_generic.py) are checked against; and QAIRT 2.48's
# generic v79 build, which records v68, beside its explicit SM8750 one.
GENERIC_ARCHES = ("v68", "v69", "v75", "v79", "v81")
OLD_GENERIC = (("2.48", 0, "v79"), ("2.48", 69, "v79"))
QAIRT_PACKAGES = {
    "2.47": "onnxruntime-qnn 2.3.0",
    "2.48": "onnxruntime-qnn 2.4.0",
    "2.49": "onnxruntime-qnn 2.5.0",
    "2.50": "onnxruntime-qnn 2.6.0",
}
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
    for version in (*QAIRT_PACKAGES, "2.51"):
        out.append(Variant(f"qairt_{version}", BASE, ("mlp.onnx",), f"QAIRT {version}", qairt=version))
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
    """The decoder's parts, w8a16 calibrated on real decoding; int8 weights go to [-7, 7] with QInt8."""
    folder.mkdir(parents=True, exist_ok=True)
    calibration = fm.decoding_calibration(
        cfg, N_PARTS, (PROMPT_AR, TOKEN_AR), calibration_prompts(cfg), CALIBRATION_STEPS, pad=cfg.vocab - 3
    )
    for part in range(1, N_PARTS + 1):
        for ar in (PROMPT_AR, TOKEN_AR):
            path = fm.quantize_w8a16(
                fm.decoder_part(cfg, part, N_PARTS, ar),
                calibration[(part, ar)],
                folder / qwen_model_name(part, ar),
                fm.kv_overrides(cfg, part),
                weight_type=weight_type,
            )
            if weight_type == "QInt8":
                fm.weights_to_4bit_range(path)


def build_models(root: Path) -> None:
    build_decoder(CFG, root / "qwen-mini" / "models")
    build_decoder(STORY_CFG, root / "story" / "models", weight_type="QInt8")
    var = root / "variants" / "models"
    var.mkdir(parents=True, exist_ok=True)
    for name, model in (
        ("mlp", fm.mlp_model(seq=16)),
        ("mlp_seq1", fm.mlp_model(seq=1)),
        ("spill_fill", fm.spill_fill_model(**SPILL_FILL)),
    ):
        fm.quantize_w8a16(model, fm.mlp_calibration(model, seed=3), var / f"{name}.onnx")
    onnx.save(fm.mlp_model(seq=16), var / "mlp.float.onnx")
    fm.quantized_io(var / "mlp.onnx", var / "mlp_qio.onnx")
    packing = fm.mlp_model(**PACKING_MLP)
    fm.quantize_w8a16(
        packing, fm.mlp_calibration(packing, seed=3), var / "mlp_w4range.onnx", weight_type="QInt8"
    )
    fm.weights_to_4bit_range(var / "mlp_w4range.onnx")
    fm.quantize_w8a16(
        packing, fm.mlp_calibration(packing, seed=3), var / "mlp_int4.onnx", weight_type="QInt4"
    )


# ---------- compiling and writing ----------


def write_json(path: Path, data) -> None:
    rcp.write_atomic(path, json.dumps(data, indent=2) + "\n")


def compile_one(backend: OrtQnnBackend, recipe: rcp.Recipe, recipe_path: Path) -> list:
    """Compile `recipe` as if loaded from recipe_path; write the recipe there, the .bin beside it."""
    recipe = replace(recipe, path=recipe_path.resolve())
    backend.compile(recipe, recipe_path.parent)
    compiled = list(backend.compiled)
    recipe = replace(recipe, qairt_version=compiled[0].qairt_version)
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
        rcp.write_atomic(
            out / f"{part.name}.recipe.json", rcp.dump(replace(per_bin, qairt_version=c.qairt_version))
        )
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
        )
        compile_one(backend, recipe, out / f"{v.name}.recipe.json")
    return skipped


def write_oracles(root: Path) -> list[str]:
    from q9diff.oracle import reader as oracle

    failed = []
    for binary in sorted(root.rglob("*.bin")):
        try:
            info = oracle.read_binary_info_isolated(binary)
        except Exception as exc:  # noqa: BLE001 - report every binary the oracle cannot read, then go on
            failed.append(f"{binary.relative_to(root)}: {exc}")
            continue
        write_json(binary.with_name(binary.stem + ".oracle.json"), oracle.to_dict(info))
    return failed


def build_all(root: Path, pythons: dict[str, str]) -> list[str]:
    build_models(root)
    backend = OrtQnnBackend(pythons=pythons)
    for build, settings in QWEN_BUILDS.items():
        build_qwen(backend, root, build, settings, ai_hub_names())
    for build, settings in STORY_BUILDS.items():
        build_story(backend, root, build, settings)
    skipped = build_variants(backend, root, set(pythons) | {"2.51"})
    return [f"skipped {name}: no --python-for its QAIRT version" for name in skipped] + write_oracles(root)


def compare(built: Path, committed: Path, ignore_missing: set[str]) -> list[str]:
    problems = []
    new = {p.relative_to(built) for p in built.rglob("*") if p.is_file()}
    # fixtures/pte is made by scripts/make_pte_fixtures.py (ExecuTorch), not by this script
    old = {
        p.relative_to(committed)
        for p in committed.rglob("*")
        if p.is_file() and p.relative_to(committed).parts[0] != "pte"
    }
    for rel in sorted(new | old):
        if rel not in new:
            if not any(rel.name.startswith(s) for s in ignore_missing):
                problems.append(f"only committed: {rel}")
        elif rel not in old:
            problems.append(f"only rebuilt: {rel}")
        elif not filecmp.cmp(built / rel, committed / rel, shallow=False):
            problems.append(f"differs: {rel}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="rebuild into a temp dir and compare with fixtures/"
    )
    parser.add_argument("--oracle-only", action="store_true", help="only rewrite NAME.oracle.json files")
    parser.add_argument(
        "--python-for",
        action="append",
        default=[],
        metavar="VERSION=PYTHON",
        help="interpreter with onnxruntime-qnn of that QAIRT, e.g. 2.48=/work/venv-qnn24/bin/python",
    )
    args = parser.parse_args(argv)
    pythons = dict(item.split("=", 1) for item in args.python_for)
    if args.oracle_only:
        failed = write_oracles(FIXTURES)
        print("\n".join(failed) or "oracle files written")
        return 1 if failed else 0
    if args.check:
        with tempfile.TemporaryDirectory(prefix="q9diff-fixtures-") as tmp:
            notes = build_all(Path(tmp), pythons)
            skipped = {n.split()[1].rstrip(":") for n in notes if n.startswith("skipped ")}
            problems = compare(Path(tmp), FIXTURES, skipped)
        for line in notes + problems:
            print(line)
        print(f"{len(problems)} mismatch(es)")
        return 1 if problems else 0
    staging = Path(tempfile.mkdtemp(prefix=".fixtures-", dir=REPO))
    try:
        notes = build_all(staging, pythons)
        for note in notes:  # keep the committed files of QAIRT versions this run could not build
            if note.startswith("skipped "):
                name = note.split()[1].rstrip(":")
                for kept in (FIXTURES / "variants").glob(f"{name}.*"):
                    shutil.copy2(kept, staging / "variants" / kept.name)
        for top in ("qwen-mini", "variants", "story"):
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
