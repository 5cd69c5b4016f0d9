"""Speed and memory of q9diff, each figure a ratio against a baseline measured in the same run.

    python scripts/bench.py [--check] [--seed] [--no-verify] [--repeat N] [A.bin B.bin]

Each case is timed --repeat times (3 by default), alternating with its baseline, and the medians are
compared; --check exits 1 when any ratio is over its goal. The 1 GB pairs and the seed's 6-part set are
compiled once by scripts/bench_pairs.py (the real compiler, minutes of CPU) and reused from its cache
folder ($Q9DIFF_CACHE/bench, else ~/.cache/q9diff/bench). The cases:

- (a) `diff --json` of the 1 GB pair soc_model 0 / VTCM 4 MB vs 77 / 8 MB over the same weights, against
  the numpy floor (every byte of both files read and compared in 1 MiB blocks, in this process);
- (b) the same model with other weight values (every weight differs), against the same floor;
- (c) (a) after `sync; echo 3 > /proc/sys/vm/drop_caches` (root only), against `cat A B > /dev/null`
  after the same drop; q9diff's own code is read back in before each run, so both read only the pair;
- (d) `inspect --json` of one 1 GB binary and (e) `--help`, against `python -I -c pass`;
- (f) with --seed, the terminal diff and `--html` of the 6-part set (~4.7 GB a side) against the floor
  over all parts, and the resident file pages at any moment against two parts' size;
- (g) `verify fixtures/qwen-mini/local fixtures/qwen-mini/reference` with the rebuild cache warm, and
  where its time goes (worker start-up with the graph loads, graph executions, the CPU reference).

Memory is sampled from /proc/PID/status every millisecond while q9diff runs: the peak anonymous memory
(RssAnon, goal <= 256 MiB) and the peak resident file pages (RssFile, the mapped inputs).
Given two files A B, only (a)-style rows for that pair are measured.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
CLI = [sys.executable, "-c", "from q9diff.cli import main; main()"]
MiB = 1 << 20
ANON_GOAL = 256 * MiB
# What a run after a drop of the page cache reads back before it is timed: q9diff's own code only.
WARM_CODE = (
    "import numpy, q9diff.cli, q9diff.cli.diff, q9diff.compare.diff, q9diff.compare.summary,"
    " q9diff.present.html"
)


@dataclass(frozen=True)
class Row:
    """One line of the table: q9diff's median against its baseline's, and the goal for the ratio."""

    work: str
    seconds: float
    baseline: str
    baseline_seconds: float
    goal: float  # the ratio's goal; for an absolute goal, seconds / baseline_seconds is shown beside
    absolute: float | None = None  # a goal in seconds instead of a ratio
    memory: str = ""

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline_seconds

    @property
    def ok(self) -> bool:
        return self.seconds <= self.absolute if self.absolute is not None else self.ratio <= self.goal


@dataclass(frozen=True)
class Peak:
    anon: int  # bytes
    file: int


def run(argv: list[str], sample: bool = False, **kw) -> tuple[float, Peak | None]:
    """Run argv (output discarded); its wall time, and with `sample` its peak RssAnon and RssFile."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    anon = file = 0
    while sample and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        anon = max(anon, int(line.split()[1]) * 1024)
                    elif line.startswith("RssFile:"):
                        file = max(file, int(line.split()[1]) * 1024)
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.001)
    proc.wait()
    return time.perf_counter() - t, Peak(anon, file) if sample else None


def numpy_floor(pairs: list[tuple[Path, Path]]) -> float:
    """Read every byte of both files of each pair once and compare them in 1 MiB blocks: the least any
    byte-level pass costs (numpy already imported, no interpreter start-up)."""
    import numpy as np

    t = time.perf_counter()
    for a, b in pairs:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            ma = mmap.mmap(fa.fileno(), 0, access=mmap.ACCESS_READ)
            mb = mmap.mmap(fb.fileno(), 0, access=mmap.ACCESS_READ)
            step = MiB
            for off in range(0, max(len(ma), len(mb)), step):
                xa = np.frombuffer(ma, np.uint8, max(0, min(step, len(ma) - off)), min(off, len(ma)))
                xb = np.frombuffer(mb, np.uint8, max(0, min(step, len(mb) - off)), min(off, len(mb)))
                k = min(len(xa), len(xb))
                np.count_nonzero(xa[:k] != xb[:k])
                np.count_nonzero(xa[k:]) + np.count_nonzero(xb[k:])
            del xa, xb
            ma.close(), mb.close()
    return time.perf_counter() - t


def paired(repeat: int, q9, base) -> tuple[float, float]:
    """Medians of q9diff's and the baseline's times, measured alternately `repeat` times."""
    qs, bs = [], []
    for _ in range(repeat):
        bs.append(base())
        qs.append(q9())
    return statistics.median(qs), statistics.median(bs)


def memory(peak: Peak, part_size: int | None = None) -> str:
    anon = f"anon {peak.anon / MiB:.0f} MiB" + ("" if peak.anon <= ANON_GOAL else " (OVER 256)")
    files = f", file pages {peak.file / MiB:.0f} MiB"
    if part_size:
        files += f" = {peak.file / part_size:.2f} parts (goal <= 2)"
    return anon + files


def case_diff(label: str, a: Path, b: Path, repeat: int) -> Row:
    argv = [*CLI, "diff", "--json", str(a), str(b)]
    q, f = paired(repeat, lambda: run(argv)[0], lambda: numpy_floor([(a, b)]))
    return Row(label, q, "numpy floor", f, 2.0, memory=memory(run(argv, sample=True)[1]))


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    subprocess.run([sys.executable, "-c", WARM_CODE], check=True)


def case_cold(a: Path, b: Path, repeat: int) -> Row | str:
    if os.geteuid() != 0:
        return "(c) cold cache: skipped, dropping the page cache needs root"
    argv = [*CLI, "diff", "--json", str(a), str(b)]

    def cold(cmd, **kw):
        drop_caches()
        return run(cmd, **kw)[0]

    q, c = paired(repeat, lambda: cold(argv), lambda: cold(["cat", str(a), str(b)]))  # output to /dev/null
    drop_caches()
    peak = run(argv, sample=True)[1]
    return Row("(c) (a) with a cold page cache", q, "cat A B > /dev/null, cold", c, 1.3, memory=memory(peak))


def case_startup(binary: Path, repeat: int) -> list[Row]:
    py = [sys.executable, "-I", "-c", "pass"]
    base = lambda: run(py)[0]  # noqa: E731
    rows = []
    inspect = [*CLI, "inspect", "--json", str(binary)]
    q, p = paired(max(repeat, 7), lambda: run(inspect)[0], base)
    rows.append(
        Row(f"(d) inspect --json of {binary.stat().st_size / 1e9:.1f} GB", q, "python -I -c pass", p, 6.0)
    )
    q, p = paired(max(repeat, 7), lambda: run([*CLI, "--help"])[0], base)
    rows.append(Row("(e) --help", q, "python -I -c pass", p, 0.15 / p, absolute=0.15))
    return rows


def case_seed(folder: Path, repeat: int) -> list[Row]:
    parts = sorted((folder / "a").glob("*.bin"))
    pairs = [(p, folder / "b" / p.name) for p in parts]
    part_size = max(p.stat().st_size for p in parts)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in (("terminal diff", []), ("--html", ["--html", f"{tmp}/r.html"])):
            argv = [*CLI, "diff", str(folder / "a"), str(folder / "b"), *extra]
            q, f = paired(repeat, lambda argv=argv: run(argv)[0], lambda: numpy_floor(pairs))
            peak = run(argv, sample=True)[1]
            rows.append(Row(f"(f) seed set, {label}", q, "numpy floor, all parts", f, 2.0,
                            memory=memory(peak, part_size)))  # fmt: skip
    return rows


def case_verify(repeat: int) -> list[Row | str]:
    """verify of the bundled builds, the rebuild cache warm (filled by a first, untimed run)."""
    qwen = ROOT / "fixtures/qwen-mini"
    argv = [*CLI, "verify", str(qwen / "local"), str(qwen / "reference")]
    cache = Path(os.environ.get("Q9DIFF_CACHE") or Path.home() / ".cache/q9diff")
    env = dict(os.environ, Q9DIFF_CACHE=str(cache))
    run(argv, env=env)
    times = [run(argv, env=env)[0] for _ in range(repeat)]
    base = statistics.median(run([sys.executable, "-I", "-c", "pass"])[0] for _ in range(5))
    row = Row("(g) verify qwen-mini local vs reference, warm", statistics.median(times), "python -I -c pass",
              base, 5.0 / base, absolute=5.0)  # fmt: skip
    return [row, verify_breakdown(argv[3:], env)]


def verify_breakdown(args: list[str], env: dict) -> str:
    """Where verify's time goes, from a profile of one warm run in a child (the parent's view: a worker's
    start-up and graph loads, each graph execution's round trip, the CPU reference)."""
    code = (
        "import cProfile, pstats, sys, io, contextlib, json\n"
        "from q9diff.cli import main\n"
        f"sys.argv = ['q9diff', *{args!r}]\n"
        "pr = cProfile.Profile(); pr.enable()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main()\n"
        "    except SystemExit: pass\n"
        "pr.disable()\n"
        "st = pstats.Stats(pr).stats\n"
        "def cum(file, fn): return sum(v[3] for k, v in st.items() if k[0].endswith(file) and k[2] == fn)\n"
        "def calls(file, fn): return sum(v[1] for k, v in st.items() if k[0].endswith(file) and k[2] == fn)\n"
        "print(json.dumps({'total': cum('cli/verify.py', 'verify'),\n"
        "  'start': cum('runners/local.py', '_start'), 'starts': calls('runners/local.py', '_start'),\n"
        "  'runs': cum('runners/worker.py', 'run'), 'n_runs': calls('runners/worker.py', 'run'),\n"
        "  'cpu': cum('runners/local.py', 'run') + cum('runners/local.py', 'cpu_session'),\n"
        "  'diff': cum('compare/diff.py', 'diff')}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    try:
        import json

        d = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"    verify breakdown: not measured ({r.stderr.strip()[-200:]})"
    rest = d["total"] - d["start"] - d["runs"] - d["cpu"]
    return (
        f"    verify {d['total']:.2f} s in the parent: {d['starts']} emulator worker start-ups with"
        f" their graph loads {d['start']:.2f} s, {d['n_runs']} graph runs on the emulator {d['runs']:.2f} s"
        f" ({d['runs'] / max(d['n_runs'], 1) * 1000:.0f} ms each), CPU reference {d['cpu']:.2f} s, the rest"
        f" (diffs {d['diff']:.2f} s, imports, reports) {rest:.2f} s"
    )


def table(rows: list[Row | str]) -> str:
    out = [
        "| work | q9diff | baseline (same run) | ratio | goal | | memory (peak) |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for r in rows:
        if isinstance(r, str):
            notes.append(r)
            continue
        goal = f"<= {r.absolute:.2f} s" if r.absolute is not None else f"<= {r.goal:g}x"
        out.append(
            f"| {r.work} | {r.seconds:.3f} s | {r.baseline} {r.baseline_seconds:.3f} s | {r.ratio:.2f}x |"
            f" {goal} | {'ok' if r.ok else 'OVER'} | {r.memory} |"
        )
    return "\n".join(out + notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="measure this pair only (as (a))")
    ap.add_argument("--check", action="store_true", help="exit 1 when any figure is over its goal")
    ap.add_argument("--seed", action="store_true", help="also the seed's 6-part set (builds it once)")
    ap.add_argument("--no-verify", action="store_true", help="leave out (g), verify of qwen-mini")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure, the median is shown (>= 3)")
    args = ap.parse_args()
    repeat = max(args.repeat, 3)
    rows: list[Row | str] = []
    if args.files:
        a, b = args.files
        rows.append(case_diff(f"diff --json {a.name} {b.name}", a, b, repeat))
    else:
        import bench_pairs

        pair = bench_pairs.build_pair()
        a, b, other = pair / "soc0.bin", pair / "soc77.bin", pair / "other.bin"
        rows.append(case_diff("(a) 1 GB soc_model 0 vs 77, same weights, diff --json", a, b, repeat))
        rows.append(case_diff("(b) 1 GB other weight values (all differ), diff --json", a, other, repeat))
        rows.append(case_cold(a, b, repeat))
        rows += case_startup(a, repeat)
        if args.seed:
            rows += case_seed(bench_pairs.build_seed(), repeat)
        if not args.no_verify:
            rows += case_verify(repeat)
    print(table(rows))
    if args.check and not all(r.ok for r in rows if isinstance(r, Row)):
        sys.exit(1)


if __name__ == "__main__":
    main()
