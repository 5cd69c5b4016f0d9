"""Speed and memory of q9diff against baselines measured in the same run, printed as ratios.

    python scripts/bench.py [A.bin B.bin] [--large] [--verify]

Start-up first: `q9diff --help` and `q9diff inspect --json` against `python -c pass` (goals: --help within
0.15 s, inspect within 0.2 s), and which heavy modules each command loads (none of plotly, deepdiff).

Without files it uses the bundled qwen-mini pair; --large first compiles a pair of ~1 GB binaries
(a w8 MLP, soc_model 0 + VTCM 4 MB vs soc_model 77 + VTCM 8 MB) with the ort-qnn backend into a
temporary directory. --verify times
running graphs: one graph execution through q9diff's worker protocol (child process, framed npz)
against the same execution in-process, and `q9diff verify` of the bundled qwen-mini builds end to end.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def sha256(path: Path) -> None:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)


CMP_INTO_PIPE = 'cmp -l "$0" "$1" 2>/dev/null | cat >/dev/null'
PEAK_RSS: dict[str, int] = {}
RUN_WITH_RSS = (
    "import atexit, sys\n"
    "rss = lambda: int(next(ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')).split()[1])\n"
    "atexit.register(lambda: print('maxrss', rss(), file=sys.stderr))\n"
    "from q9diff.cli import main\n"
    "main()\n"
)


def q9(*args: str) -> str:
    """Run the q9diff CLI in a fresh process; record that process's own peak RSS (KiB) by command."""
    r = subprocess.run([sys.executable, "-c", RUN_WITH_RSS, *args], capture_output=True, text=True)
    for line in r.stderr.splitlines():
        if line.startswith("maxrss "):
            PEAK_RSS[args[0]] = max(PEAK_RSS.get(args[0], 0), int(line.split()[1]))
    return r.stdout


HEAVY = ("plotly", "deepdiff", "numpy", "pydantic", "rich", "construct", "onnxruntime", "onnx")
WHICH_MODULES = (
    "import sys\n"
    "from q9diff.cli import main\n"
    "try:\n    main()\n"
    "except SystemExit:\n    pass\n"
    f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))), file=sys.stderr)\n"
)


def startup(binary: Path) -> None:
    """Start-up cost of small jobs, as ratios against an empty Python in the same run."""
    py = [sys.executable, "-c"]
    base = timed(lambda: subprocess.run([*py, "pass"]), 7)
    cli = "from q9diff.cli import main; main()"
    jobs = {"--help": ["--help"], "inspect --json": ["inspect", "--json", str(binary)]}
    goals = {"--help": 0.15, "inspect --json": 0.2}
    print(f"start-up: python -c pass {base:.3f} s")
    for label, args in jobs.items():
        t = timed(lambda args=args: subprocess.run([*py, cli, *args], capture_output=True), 7)
        loaded = subprocess.run([*py, WHICH_MODULES, *args], capture_output=True, text=True).stderr.split()
        mark = "within" if t <= goals[label] else "OVER"
        ratio = f"{t / base:.1f}x python -c pass"
        print(f"  q9diff {label}: {t:.3f} s = {ratio} ({mark} the {goals[label]} s goal);")
        print(f"    of {', '.join(HEAVY)} it loads {', '.join(loaded) or 'none'}")


def large_pair(tmp: Path) -> tuple[Path, Path]:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    n, layers = 2048, 240  # 240 x 2048 x 2048 uint8 ~ 1 GB of w8 weights, activations u16 (QDQ: w8a16)
    nodes, inits = [], []

    def q_dq(name: str, scale: float, zero: int, dtype=np.uint16) -> str:
        """Quantize then dequantize `name`: the QDQ pattern the QNN EP compiles to fixed point."""
        inits.extend(
            [
                numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
                numpy_helper.from_array(np.array(zero, dtype), f"{name}_z"),
            ]
        )
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_dq"])
        )
        return f"{name}_dq"

    x = q_dq("x", 1 / 30000, 32768)
    for i in range(layers):
        w = rng.integers(0, 255, (n, n), dtype=np.uint8)
        inits += [
            numpy_helper.from_array(w, f"w{i}"),
            numpy_helper.from_array(np.array(0.01, np.float32), f"s{i}"),
            numpy_helper.from_array(np.array(128, np.uint8), f"z{i}"),
        ]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}", f"s{i}", f"z{i}"], [f"wf{i}"]))
        nodes.append(helper.make_node("MatMul", [x, f"wf{i}"], [f"h{i}"]))
        x = q_dq(f"h{i}", 0.05, 32768)
    g = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, n])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])  # uint16 QDQ
    m.ir_version = 10
    onnx.save(m, tmp / "big.onnx")
    from q9diff.backends.ort_qnn import OrtQnnBackend
    from q9diff.build.recipe import Recipe

    out = []
    for soc, vtcm in ((0, 4), (77, 8)):  # the seed's pair: VTCM re-tiles the weights
        r = Recipe.from_dict(
            {
                "schema": "q9diff.recipe/1",
                "backend": "ort-qnn",
                "settings": {"soc_model": soc, "dsp_arch": "v73", "vtcm_mb": vtcm},
                "parts": [
                    {
                        "name": "big",
                        "output": f"big_{soc}.bin",
                        "graphs": [{"name": "big", "model": "big.onnx"}],
                    }
                ],
            },
            "bench",
            path=tmp / "recipe.json",
        )
        out += OrtQnnBackend().compile(r, tmp / f"soc{soc}")
    return out[0], out[1]


def bench_verify() -> None:
    import numpy as np

    from q9diff.runners.local import LocalRunner
    from q9diff.runners.worker import _Worker
    from q9diff.verify.run import seeded_inputs

    binary = ROOT / "fixtures/qwen-mini/local/genie/part_1_of_2_prompt.bin"
    session = LocalRunner().open([binary])
    graph = session.graphs[0]
    feeds = {k: np.asarray(v, t.dtype) for (k, v), t in zip(seeded_inputs(graph, 0).items(), graph.inputs)}
    t_worker = timed(lambda: [session.run(graph, feeds) for _ in range(20)]) / 20
    session.close()
    direct = _Worker()
    direct.load([str(binary)])
    t_direct = timed(lambda: [direct.run(0, feeds) for _ in range(20)]) / 20
    print(f"one graph execution ({binary.name}): in-process {t_direct * 1000:.1f} ms, through the worker")
    print(f"  protocol {t_worker * 1000:.1f} ms = {t_worker / t_direct:.2f}x in-process")
    qwen = ROOT / "fixtures/qwen-mini"
    args = ("verify", str(qwen / "local"), str(qwen / "reference"), "--steps", "16")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["Q9DIFF_CACHE"] = cache  # cold: the weight-shared parts are rebuilt unshared first
        cold = timed(lambda: q9(*args), 1)
        warm = timed(lambda: q9(*args), 1)
    print(f"q9diff verify qwen-mini local vs reference vs CPU, 16 steps: {cold:.2f} s with an empty cache,")
    print(f"  {warm:.2f} s with the unshared rebuilds cached = {warm / cold:.2f}x")
    print(
        f"peak RSS of q9diff verify: {PEAK_RSS.get('verify', 0) / 1024:.0f} MiB (the parent; children apart)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--verify", action="store_true", help="also time running graphs and q9diff verify")
    args = ap.parse_args()
    if args.verify:
        bench_verify()
    with tempfile.TemporaryDirectory() as tmp:
        if args.files:
            a, b = args.files
        elif args.large:
            a, b = large_pair(Path(tmp))
        else:
            a = ROOT / "fixtures/qwen-mini/local/part_1_of_2.bin"
            b = ROOT / "fixtures/qwen-mini/reference/part_1_of_2.bin"
        size = a.stat().st_size
        startup(a)
        print(f"pair: {a} ({size} bytes) vs {b} ({b.stat().st_size} bytes)")
        base_py = timed(lambda: subprocess.run([sys.executable, "-c", "pass"]))
        # cmp -l prints a line per differing byte: into a pipe that discards it (captured, a 1 GB pair's
        # lines fill the memory; to /dev/null, GNU cmp stops at the first difference), once for a large
        # pair, where it takes minutes
        t_cmp = timed(
            lambda: subprocess.run(["sh", "-c", CMP_INTO_PIPE, str(a), str(b)]),
            1 if size > 1 << 28 else 3,
        )
        t_sha = timed(lambda: (sha256(a), sha256(b)))
        t_inspect = timed(lambda: q9("inspect", "--json", str(a)))
        t_diff = timed(lambda: q9("diff", "--json", str(a), str(b)))

        def meta_only():
            from q9diff.format.binary import ContextBinary

            cb = ContextBinary.open(a)
            return cb.soc_model, [g.vtcm_size for g in cb.graphs]

        t_meta = timed(meta_only)

        def numpy_floor():
            """Read every byte of both files once and compare them in 1 MiB blocks: the least any
            byte-level pass costs."""
            import mmap

            import numpy as np

            with open(a, "rb") as fa, open(b, "rb") as fb:
                ma = mmap.mmap(fa.fileno(), 0, access=mmap.ACCESS_READ)
                mb = mmap.mmap(fb.fileno(), 0, access=mmap.ACCESS_READ)
                step = 1 << 20
                for off in range(0, max(len(ma), len(mb)), step):
                    xa = np.frombuffer(ma, np.uint8, max(0, min(step, len(ma) - off)), min(off, len(ma)))
                    xb = np.frombuffer(mb, np.uint8, max(0, min(step, len(mb) - off)), min(off, len(mb)))
                    k = min(len(xa), len(xb))
                    np.count_nonzero(xa[:k] != xb[:k])
                    np.count_nonzero(xa[k:]) + np.count_nonzero(xb[k:])

        def moved_new_pass():
            from q9diff.compare.diff import _region_rows
            from q9diff.format.binary import ContextBinary

            rows = _region_rows(ContextBinary.open(a), ContextBinary.open(b))
            return sum(r["moved_bytes"] for r in rows), sum(r["new_bytes"] for r in rows)

        t_floor = timed(numpy_floor)
        t_moved = timed(moved_new_pass)
        moved, new = moved_new_pass()
        print(f"baseline: python start {base_py:.3f} s, cmp -l {t_cmp:.3f} s, sha256 of both {t_sha:.3f} s")
        print(f"q9diff inspect --json: {t_inspect:.3f} s = {t_inspect / t_cmp:.2f}x cmp -l")
        print(f"q9diff diff --json:    {t_diff:.3f} s = {t_diff / t_cmp:.2f}x cmp -l,", end=" ")
        print(f"{t_diff / t_sha:.2f}x sha256 of both")
        print(f"metadata only (open + socModel + vtcm): {t_meta * 1000:.2f} ms")
        print(
            f"moved/new pass (every region, {moved} bytes moved, {new} new): {t_moved:.3f} s ="
            f" {t_moved / t_floor:.2f}x the numpy read floor ({t_floor:.3f} s: every byte of both files"
            " read and compared in 1 MiB blocks)"
        )
        for cmd, kib in PEAK_RSS.items():
            ratio = kib * 1024 / size
            print(f"peak RSS of q9diff {cmd}: {kib / 1024:.0f} MiB = {ratio:.3f}x the first file's size")
        verdict = q9("diff", str(a), str(b)).splitlines()
        print("verdict:", verdict[0] if verdict else "(none)")


if __name__ == "__main__":
    main()
