"""Weights packing seen from ONE binary: are 4-bit weights stored one per byte?

HTP weights packing (the compiler option `compress_weights=true`) stores int8 per-tensor weights whose
values lie in [-7, 7] two per byte; native INT4 weights are stored packed unless `native_hmx_a16w4=false`.
The weights pools tell the states apart (docs/QNN_FACTS.md, measured with QAIRT 2.51): 4-bit values
stored one per byte put ~98% of pool bytes in [-8, 7] with a high-nibble entropy near 1 bit; packed
pools hold ~27-29% there (2.7 / 2.7 bits), true 8-bit weights ~29% (3.9 / 3.0 bits). Evidence:
fixtures/variants/packing_off.bin (0.98, 2.67 / 1.11 bits) vs packing_on.bin (0.29, 2.71 / 2.72 bits).
Real pools mix tensors (an 8-bit embedding beside 4-bit layers), so the pool is judged in 4 KiB
blocks: a block with >= 90% of its bytes in [-8, 7] and at most 60% zeros (padding) holds 4-bit
weights one per byte. fixtures/story/local/part_1_of_2.bin: 98,304 such bytes, exactly its two layers'
int8 weights in [-7, 7]; its embedding (full range) is not counted. packing_off.bin: 258,048 bytes,
half of which (129,024) is within 2% of what packing saved (131,072).

Which tensors are per-channel is not in the binary, and QAIRT 2.51 does not pack per-channel int8 (nor
LPBQ) weights, so a saving is stated for per-tensor weights only, never promised.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from q9diff.read.binary import ContextBinary

IN_RANGE_MIN = 0.9  # share of a block's bytes in [-8, 7] above which it holds 4-bit values one per byte
MIN_POOL_BYTES = 16 * 1024  # fewer 4-bit bytes than this are too few to judge
BLOCK = 4096  # pools are judged block by block
# The bytes of a block read first, then up to the next: random 8-bit weights have ~94% of their bytes out
# of range and are decided in 512; ONNX Runtime's quantized normal weights ~75%, decided in 1024 (the
# shared bench pairs: 135 to 9 ms a 1 GB binary, each block's 4 KiB otherwise read in full).
HEADS = (512, 1024)
ZEROS_MAX = 0.6  # a block of mostly zeros is padding, not weights
SAMPLE_BLOCK, SAMPLE_BLOCKS = 256 * 1024, 64  # read at most 16 MiB, spread evenly over the pools


@dataclass(frozen=True)
class PoolStats:
    """How many bytes of a binary's weights pools (all graphs' const pools and the shared pool) hold
    4-bit values one per byte."""

    pool_bytes: int
    sampled_bytes: int
    four_bit_bytes: int  # bytes in blocks holding 4-bit values one per byte (scaled up when sampled)


@dataclass(frozen=True)
class PackingNotice:
    """What one binary says about packing its weights: kind, bytes, and the sentence a user reads."""

    kind: str  # "not_packed", "int4_unpacked" or "packing_had_no_effect"
    four_bit_bytes: int  # pool bytes holding 4-bit values one per byte (estimated from the sample)
    would_save: int | None  # bytes packing would save, for per-tensor weights; None when not promised
    compress_weights: str | None  # the options' value, None when the binary has no such option
    native_hmx_a16w4: str | None
    message: str


# Bytes whose signed value lies outside [-8, 7]: what `bytes.translate` deletes to count the rest.
_OUT_OF_RANGE = bytes(range(8, 248))


def _in_range(raw: bytes) -> int:
    return len(raw.translate(None, _OUT_OF_RANGE))


def pool_stats(cb: ContextBinary) -> PoolStats | None:
    """Statistics over the weights pools; None when the binary has no pool region. Counted per 4 KiB
    block (_four_bit_blocks)."""
    pools = [r for r in cb.regions if r.kind == "weights" and r.size > 0]  # const_pool, WEIGHTS/<n>/pool
    total = sum(r.size for r in pools)
    if not total:
        return None
    whole = total <= SAMPLE_BLOCK * SAMPLE_BLOCKS
    step = total // SAMPLE_BLOCKS
    sampled = four_bit_blocks = 0
    for r in pools:
        for start in [0] if whole else range(0, r.size, step):
            n = r.size if whole else min(SAMPLE_BLOCK, r.size - start)
            sampled += n
            four_bit_blocks += _four_bit_blocks(cb, r.offset + start, n // BLOCK)
    return PoolStats(
        pool_bytes=total, sampled_bytes=sampled, four_bit_bytes=four_bit_blocks * BLOCK * total // sampled
    )


_HEAD_OUT_MAX = BLOCK - IN_RANGE_MIN * BLOCK  # a head with more bytes out of range decides its block


def _four_bit_blocks(cb: ContextBinary, offset: int, blocks: int) -> int:
    """How many of the 4 KiB blocks at `offset` hold 4-bit values one per byte. A block whose head
    already has more bytes out of range than the whole may have is decided there (8-bit weights; a
    longer head for those a shorter one left), the others on the shares of bytes in range and of
    zeros. With numpy where the process has it already (a diff: 9 to ~2 ms a binary), else with bytes
    methods (`inspect` starts without numpy); the same count either way (tests/test_packing.py)."""
    np = sys.modules.get("numpy")
    if np is not None:
        x = np.frombuffer(cb.data, dtype=np.uint8, count=blocks * BLOCK, offset=offset).reshape(blocks, BLOCK)
        in_head = seen = 0
        for head in HEADS:  # [-8, 7] is 248..255, 0..7; a sum of the flags as bytes, not count_nonzero's
            flags = (x[:, seen:head] + np.uint8(8) < 16).view(np.uint8)
            in_head = in_head + np.add.reduce(flags, axis=1, dtype=np.intp)
            undecided, seen = head - in_head <= _HEAD_OUT_MAX, head
            if not undecided.any():
                return 0  # every block decided by its head: 8-bit weights (a diff's usual pools)
        x = x[undecided]
        in_range = np.count_nonzero(x + np.uint8(8) < 16, axis=1)
        zeros = np.count_nonzero(x == 0, axis=1)
        return int(np.count_nonzero((in_range >= IN_RANGE_MIN * BLOCK) & (zeros <= ZEROS_MAX * BLOCK)))
    chunk = bytes(cb.data[offset : offset + blocks * BLOCK])
    count = 0
    for o in range(0, len(chunk), BLOCK):
        if any(head - _in_range(chunk[o : o + head]) > _HEAD_OUT_MAX for head in HEADS):
            continue
        block = chunk[o : o + BLOCK]
        if _in_range(block) >= IN_RANGE_MIN * BLOCK and block.count(0) <= ZEROS_MAX * BLOCK:
            count += 1
    return count


def _option(cb: ContextBinary, key: str) -> str | None:
    """One value when every graph agrees; None when absent or the graphs disagree."""
    values = {cb.options(i).get(key) for i in range(len(cb.graphs))}
    return values.pop() if len(values) == 1 else None


def packing_notice(cb: ContextBinary) -> PackingNotice | None:
    """The single-binary notice, or None when the pools do not hold 4-bit values one per byte."""
    stats = pool_stats(cb)
    if stats is None or stats.four_bit_bytes < MIN_POOL_BYTES:
        return None
    four_bit = stats.four_bit_bytes
    compress, native = _option(cb, "compress_weights"), _option(cb, "native_hmx_a16w4")
    where = (
        f"{four_bit:,d} of the {stats.pool_bytes:,d} weights-pool bytes hold 4-bit values stored one per "
        f"byte (4 KiB blocks with >= {IN_RANGE_MIN:.0%} of their bytes in [-8, 7])"
    )
    if native == "false":
        save = four_bit // 2
        return PackingNotice(
            "int4_unpacked",
            four_bit,
            save,
            compress,
            native,
            f"{where}: INT4 weights stored unpacked, the compiler options say native_hmx_a16w4=false; "
            f"the default (true) stores them two per byte, about {save:,d} bytes less",
        )
    if compress == "true":
        return PackingNotice(
            "packing_had_no_effect",
            four_bit,
            None,
            compress,
            native,
            f"{where}, although weights packing is on (compress_weights=true): QAIRT 2.51 packs only "
            "per-tensor int8 weights; per-channel int8 and LPBQ weights stay one per byte",
        )
    save = four_bit // 2
    state = "compress_weights=false" if compress == "false" else "compress_weights is not in the options"
    return PackingNotice(
        "not_packed",
        four_bit,
        save,
        compress,
        native,
        f"{where}; weights packing is off ({state}). Packing stores per-tensor int8 weights in [-7, 7] two "
        f"per byte: about {save:,d} bytes less. Per-channel int8 weights do not pack in QAIRT 2.51, and the "
        "binary does not say which tensors are per-channel",
    )


def to_json(notice: PackingNotice | None) -> dict | None:
    if notice is None:
        return None
    return {
        "kind": notice.kind,
        "four_bit_bytes": notice.four_bit_bytes,
        "would_save": notice.would_save,
        "compress_weights": notice.compress_weights,
        "native_hmx_a16w4": notice.native_hmx_a16w4,
        "message": notice.message,
    }
