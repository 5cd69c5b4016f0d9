"""The third held-out half of the real-model corpus (scripts/make_layers_real.py), chosen and built before the
rule change that followed OriNet's false alarm, from packages and families the corpus had not used: Spotify's
Basic Pitch note transcriber (basic-pitch) and arabic-name-romanizer's GRU-with-attention decoder step. Made
ready as scripts/real_models.py makes the others (fixed shapes, cut after a lookup or a fixed transform,
seeded inputs computed by the full model on the CPU).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from real_models import _member, _split, model_input, ready, run, with_outputs


def music(seed: int, seconds: float, rate: int = 22050) -> np.ndarray:
    """Seeded piano-like audio in [-1, 1]: notes of a few harmonics (equal-tempered pitches, MIDI 40-84)
    with a sharp onset and an exponential decay, some overlapping, over low noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    x = rng.standard_normal(n) * 0.002
    for start in np.sort(rng.uniform(0, seconds - 0.2, int(rng.integers(6, 12)))):
        f = 440.0 * 2 ** ((int(rng.integers(40, 85)) - 69) / 12)
        s = t - start
        env = np.where(s >= 0, np.exp(-np.clip(s, 0, None) * rng.uniform(2, 6)), 0.0)
        env *= np.clip(s * 200, 0, 1)
        x += sum(np.sin(2 * np.pi * k * f * s) * 0.6**k for k in range(1, 6) if k * f < rate / 2) * env
    return (x / np.abs(x).max() * 0.7).astype(np.float32)


BASIC_PITCH_SAMPLES = 43844  # the model's fixed window (2 s at 22.05 kHz less its hop's remainder)
BASIC_PITCH_CQT = "model_1/tf.expand_dims_1/ExpandDims;model_1/tf.expand_dims_1/ExpandDims"
BASIC_PITCH_OUT = ["StatefulPartitionedCall:0", "StatefulPartitionedCall:1", "StatefulPartitionedCall:2"]


def basic_pitch(path: Path, work: Path):
    """Spotify's Basic Pitch note transcriber (batch normalization, harmonic stacking, convolutions; note,
    onset and pitch-contour maps) from its normalized log constant-Q spectrogram on (the transform before
    it is fixed signal processing, whose top octaves ONNX Runtime folds to rank-1 constants a quantized
    model cannot load), fed the spectrogram the full model computes of 2 s of seeded piano-like audio."""
    name = model_input(path)
    shapes = {name: [1, BASIC_PITCH_SAMPLES, 1]}
    model = ready(onnx.load(path), {}, cut=([BASIC_PITCH_CQT], BASIC_PITCH_OUT), first=shapes)
    # its note map is an output and also read by the onset branch: shapes inferred again from the input
    # (ready leaves outputs rankless, which a reader of one cannot be inferred from)
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    whole = with_outputs(ready(onnx.load(path), shapes), [BASIC_PITCH_CQT])
    items = []
    for k in range(9):
        audio = music(81 + k, 2.0)[:BASIC_PITCH_SAMPLES, None][None]
        (cqt,) = run(whole, {name: audio}, [BASIC_PITCH_CQT])
        items.append({BASIC_PITCH_CQT: cqt.astype(np.float32)})
    return (model, *_split(items))


ANR = "arabic_name_romanizer/resources/"
ANR_EMB = "/emb/Gather_output_0"
ANR_SRC = 16  # source tokens: country, role, 13 letters, end
ANR_NAMES = "محمد أحمد علي فاطمة يوسف خالد مريم عمر حسن سارة عبدالله إبراهيم نور ليلى زينب سعيد".split()


def _anr_source(rng, tokens: list[str]) -> list[int]:
    """A seeded source of exactly ANR_SRC ids: a country and role token, given names joined by spaces
    (drawn until they fill 13 letters exactly), the end token; as arabic-name-romanizer encodes a name."""
    index = {t: i for i, t in enumerate(tokens)}
    while True:
        text = " ".join(rng.choice(ANR_NAMES, int(rng.integers(2, 4))))
        if len(text) == ANR_SRC - 3:
            break
    country = str(rng.choice(["<SA>", "<EG>", "<DZ>", "<MA>", "<IQ>", "<SY>"]))
    role = str(rng.choice(["<ROLE_GIVEN>", "<ROLE_UNKNOWN>"]))
    return [index[country], index[role]] + [index[c] for c in text] + [index["<EOS>"]]


def anr_decoder(path: Path, work: Path):
    """arabic-name-romanizer's decoder step (a 2-layer GRU cell written out as Gemm, Sigmoid and Tanh, then
    dot-product attention over the encoder's memory, a combining layer and the log-softmax over 160
    characters) from its character embedding on (the lookup before it is integer work), every source
    position attended (no padding: the mask is a constant); fed the state of a greedy decoding of seeded
    Arabic names, 1 to 6 characters in, as the package's encoder and the full decoder compute it."""
    s = ANR_SRC
    shapes = {"prefix": [1, 1], "memory": [1, s, 256], "src_mask": [1, s], "hidden": [1, 2, 256]}
    mask = np.zeros((1, s), bool)
    cut = ([ANR_EMB, "memory", "hidden"], ["logprobs", "hidden_out"])
    model = ready(onnx.load(path), {}, cut=cut, consts={"src_mask": mask}, first=shapes)
    full = ready(onnx.load(path), shapes)
    full = with_outputs(full, [ANR_EMB])
    encoder = ready(onnx.load(_member(path, "encoder.onnx")), {"src": [1, s], "src_mask": [1, s]})
    tokens = json.loads(_member(path, "vocab.json").read_text())["tokens"]
    rng = np.random.default_rng(73)
    items = []
    for k in range(9):
        src = np.array([_anr_source(rng, tokens)], np.int64)
        memory, _, hidden = run(encoder, {"src": src, "src_mask": mask})
        token = np.array([[tokens.index("<BOS>")]], np.int64)
        for _ in range(1 + k % 6):
            feed = {"prefix": token, "memory": memory, "src_mask": mask, "hidden": hidden}
            logprobs, state, emb = run(full, feed, ["logprobs", "hidden_out", ANR_EMB])
            item = {ANR_EMB: emb, "memory": memory, "hidden": hidden}
            token, hidden = np.array([[int(logprobs.argmax())]], np.int64), state
        items.append({name: value.astype(np.float32) for name, value in item.items()})
    return (model, *_split(items))
