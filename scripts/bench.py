"""Speed and memory of q9diff, each figure a ratio against a baseline measured in the same run.

    python scripts/bench.py [--check] [--no-seed] [--no-verify] [--no-shared] [--repeat N] [A.bin B.bin]

Each case is timed --repeat times (3 by default), alternating with its baseline, and the medians are
compared; --check exits 1 when any figure is over its goal (memory included). The 1 GB pairs and the
seed's 6-part set are compiled once by scripts/bench_pairs.py (the real compiler, minutes of CPU) and
reused from its cache folder ($Q9DIFF_CACHE/bench, else ~/.cache/q9diff/bench). The cases:

- (a) `diff --json` of the 1 GB pair soc_model 0 / VTCM 4 MB vs 77 / 8 MB over the same weights, against
  the numpy floor (every byte of both files read and compared in 1 MiB blocks, in this process);
- (b) the same model with other weight values (every weight differs), against the same floor;
- (c) (a) after `sync; echo 3 > /proc/sys/vm/drop_caches` (root only), against `cat A B > /dev/null`
  after the same drop, at least 5 times each; q9diff's own code is read back in before each run, so both
  read only the pair;
- (d) `inspect --json` of one 1 GB binary and (e) `--help`, against `python -I -c pass`;
- (f) the terminal diff and `--html` of the 6-part set (~4.7 GB a side) against the floor
  over all parts, and the resident file pages at any moment against two parts' size;
- (g) `verify fixtures/qwen-mini/local fixtures/qwen-mini/reference` with the rebuild cache warm, and
  where its time goes (worker start-up with the graph loads, graph executions, the CPU reference).
- (h) `explain -` on a 1 MiB paste, against `python -I -c pass`, goal 2 s: a log made of the real logs of
  tests/data/explain_eval.json among information lines, and a hostile one (lines of "err" and blanks, the
  input that once took 150 s); and, as a note without a goal, the worst case for its cost per line: 1 MiB of
  7-byte lines (145,000 lines, each read and accounted for). `--explain` measures (h) alone.
- (i)-(k) the pairs the goals are set on, built by ../shared/bench/make_pairs.py (its README; where it is
  here) at --shared-mb MB of weights (1000: 1 GB, the real check): (i) `diff --json` of soc0 vs soc77 (the
  same weights) against its numpy_floor.py as a whole process (start-up and numpy's import included, as
  q9diff's are), goal 1.2x; (j) soc77 vs seed2 (weights from another seed, ONNX
  Runtime's quantization: many repeated 8-byte words; seed2 28 KiB longer), goal 1.3x; (k) (i) cold
  against `cat`, as (c), goal 1.2x.

Memory is sampled every few ms while q9diff runs, in a run of its own (not a timed one): the peak
anonymous memory (RssAnon of /proc/PID/status, goal <= 256 MiB) and the peak resident pages of its
mappings of the inputs (Rss of those mappings in /proc/PID/smaps; the interpreter's libraries left out).
The load average is printed first and last: the goals are for a quiet machine, the ratios hold under load only
as far as q9diff and its baseline suffer alike.
Given two files A B, only (a)-style rows for that pair are measured.
"""

from __future__ import annotations

import argparse
import json
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
# The program as the `q9diff` script runs it (pyproject.toml: q9diff.cli:run).
CLI = [sys.executable, "-c", "from q9diff.cli import run; run()"]
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
    memory_ok: bool = True  # anonymous memory <= 256 MiB, and resident parts <= 2 where that is a goal

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline_seconds

    @property
    def ok(self) -> bool:
        fast = self.seconds <= self.absolute if self.absolute is not None else self.ratio <= self.goal
        return fast and self.memory_ok


@dataclass(frozen=True)
class Peak:
    anon: int  # bytes
    file: int  # resident pages of the inputs' own mappings (the interpreter's libraries left out)


def _inputs_resident(pid: int, inputs: set[str]) -> int:
    """Resident bytes of `pid`'s mappings of the files `inputs`, from /proc/PID/smaps."""
    total, mine = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if line[0] in "0123456789abcdef":  # a mapping's header: address perms offset dev inode path
                fields = line.split(maxsplit=5)
                mine = len(fields) == 6 and fields[5].rstrip("\n") in inputs
            elif mine and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def run(argv: list[str], sample: bool = False, inputs: list[Path] = (), **kw) -> tuple[float, Peak | None]:
    """Run argv (output discarded); its wall time, and with `sample` its peak RssAnon and the peak
    resident pages of its mappings of `inputs` (files, or folders of *.bin), sampled every few ms."""
    files = {str(f.resolve()) for p in inputs for f in (sorted(p.rglob("*.bin")) if p.is_dir() else [p])}
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    anon = file = 0
    while sample and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        anon = max(anon, int(line.split()[1]) * 1024)
            file = max(file, _inputs_resident(proc.pid, files))
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.002)
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
    """Medians of q9diff's and the baseline's times, measured alternately `repeat` times, after one
    untimed run of the baseline (the inputs in the page cache, also after the cold case dropped it)."""
    base()
    qs, bs = [], []
    for _ in range(repeat):
        bs.append(base())
        qs.append(q9())
    return statistics.median(qs), statistics.median(bs)


def memory(peak: Peak, part_size: int | None = None) -> tuple[str, bool]:
    """The memory column and whether it is within its goals: anonymous memory <= 256 MiB, and with
    `part_size` the inputs' resident pages at any moment <= 2 parts."""
    ok = peak.anon <= ANON_GOAL
    text = f"anon {peak.anon / MiB:.0f} MiB" + ("" if ok else " (OVER 256)")
    text += f", inputs resident {peak.file / MiB:.0f} MiB"
    if part_size:
        parts = peak.file / part_size
        ok = ok and parts <= 2
        text += f" = {parts:.2f} parts (goal <= 2{'' if parts <= 2 else ': OVER'})"
    return text, ok


def case_diff(
    label: str, a: Path, b: Path, repeat: int, goal: float = 2.0, process: Path | None = None
) -> Row:
    """diff --json of a b against the numpy floor: in this process, or with `process` (a floor script taking
    A B) as a whole process, start-up and numpy's import included as q9diff's are."""
    argv = [*CLI, "diff", "--json", str(a), str(b)]
    floor = (lambda: run([sys.executable, str(process), str(a), str(b)])[0]) if process else None
    q, f = paired(repeat, lambda: run(argv)[0], floor or (lambda: numpy_floor([(a, b)])))
    text, ok = memory(run(argv, sample=True, inputs=[a, b])[1])
    base = f"{process.name} (process)" if process else "numpy floor"
    return Row(label, q, base, f, goal, memory=text, memory_ok=ok)


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    subprocess.run([sys.executable, "-c", WARM_CODE], check=True)


def case_cold(a: Path, b: Path, repeat: int, label: str = "(c) (a)", goal: float = 1.3) -> Row | str:
    if os.geteuid() != 0:
        return f"{label.split()[0]} cold cache: skipped, dropping the page cache needs root"
    argv = [*CLI, "diff", "--json", str(a), str(b)]

    def cold(cmd, **kw):
        drop_caches()
        return run(cmd, **kw)[0]

    # at least 5 each: a drop is not always effective on these VMs, and one run in 3 can be off by 30%
    q, c = paired(max(repeat, 5), lambda: cold(argv), lambda: cold(["cat", str(a), str(b)]))  # to /dev/null
    drop_caches()
    text, ok = memory(run(argv, sample=True, inputs=[a, b])[1])
    return Row(f"{label} with a cold page cache", q, "cat A B > /dev/null, cold", c, goal, memory=text,
               memory_ok=ok)  # fmt: skip


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
            text, ok = memory(run(argv, sample=True, inputs=[folder / "a", folder / "b"])[1], part_size)
            rows.append(Row(f"(f) seed set, {label}", q, "numpy floor, all parts", f, 2.0, memory=text,
                            memory_ok=ok))  # fmt: skip
    return rows


def case_shared(mb: int, repeat: int) -> list[Row | str]:
    """(i)-(k): the pairs of ../shared/bench/make_pairs.py, built once into the cache folder."""
    import bench_pairs

    folder = bench_pairs.build_shared(mb)
    if folder is None:
        return [f"(i)-(k) shared pairs: skipped, {bench_pairs.SHARED_PAIRS} is not here"]
    soc0, soc77, seed2 = folder / "soc0.bin", folder / "soc77.bin", folder / "seed2.bin"
    size = f"{soc0.stat().st_size / 1e9:.1f} GB"
    floor = bench_pairs.SHARED_PAIRS.with_name("numpy_floor.py")  # as a whole process, as its README says
    return [
        case_diff(f"(i) shared {size} soc_model 0 vs 77, diff --json", soc0, soc77, repeat, 1.2, floor),
        case_diff(f"(j) shared {size} another seed's weights, diff --json", soc77, seed2, repeat, 1.3, floor),
        case_cold(soc0, soc77, repeat, "(k) (i)", 1.2),
    ]


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


def explain_pastes(folder: Path) -> list[tuple[str, Path]]:
    """(label, file) of the two 1 MiB pastes of case (h)."""
    cases = json.loads((ROOT / "tests" / "data" / "explain_eval.json").read_text(encoding="utf-8"))["cases"]
    real = [line for c in cases for line in c["log"]]
    info = ["01-05 15:23:12.072 29837 29837 I QnnDsp  :  <I> QnnGraph_execute done. status 0x0",
            "[INFO] [Qnn ExecuTorch]: Running level=3 optimization.",
            "     0.0ms [  INFO ] QnnDsp <I> QnnDevice_create started"]  # fmt: skip
    logs = {"real logs among information lines": [], "hostile: err and blanks": []}
    size, i = 0, 0
    while size < MiB - 5000:
        line = real[i % len(real)] if i % 3 == 0 else info[i % len(info)]
        logs["real logs among information lines"].append(line)
        size, i = size + len(line) + 1, i + 1
    logs["hostile: err and blanks"] = ["err" + " " * 4000] * (MiB // 4005)
    out = []
    for n, (label, lines) in enumerate(logs.items()):
        path = folder / f"paste{n}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append((label, path))
    return out


def case_explain(repeat: int) -> list[Row | str]:
    py = [sys.executable, "-I", "-c", "pass"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in explain_pastes(Path(tmp)):
            argv = [*CLI, "explain", "-"]

            def q9(argv=argv, path=path):
                with open(path, "rb") as f:
                    return run(argv, stdin=f)[0]

            q, p = paired(repeat, q9, lambda: run(py)[0])
            rows.append(
                Row(f"(h) explain - of 1 MiB, {label}", q, "python -I -c pass", p, 2.0 / p, absolute=2.0)
            )
        short = Path(tmp) / "short.log"
        short.write_text("".join(f"e{i:05x}\n" for i in range(MiB // 7)), encoding="utf-8")  # distinct lines
        with open(short, "rb") as f:
            t = run([*CLI, "explain", "-"], stdin=f)[0]
        rows.append(f"    (h) note: explain - of 1 MiB of 7-byte lines ({MiB // 7} lines): {t:.2f} s")
    return rows


def verify_breakdown(args: list[str], env: dict) -> str:
    """Where verify's time goes: one warm run in a child that times each kind of call (summed over the
    threads the sides run in: the emulator children work at once, so the sums exceed the wall time)."""
    r = subprocess.run(
        [sys.executable, __file__, "--breakdown", *args], capture_output=True, text=True, env=env
    )
    try:
        d = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"    verify breakdown: not measured ({r.stderr.strip()[-200:]})"
    s, n = d["seconds"], d["calls"]
    runs = n.get("child run", 0)
    return (
        f"    where (g)'s {d['wall']:.2f} s go (one warm run; per-side figures summed over the sides, which"
        f" run at once): imports {d['imports']:.2f} s; {n.get('child load', 0)} emulator children start"
        f" and load their graphs {s.get('child load', 0):.2f} s (the sides open in"
        f" {s.get('open side', 0):.2f} s summed); decoding {s.get('decode', 0):.2f} s wall, of which"
        f" {runs} graph runs on the emulator"
        f" {s.get('child run', 0):.2f} s summed ({s.get('child run', 0) / max(runs, 1) * 1000:.0f} ms each);"
        f" CPU reference: its ONNX models load {s.get('cpu load', 0):.2f} s, {n.get('cpu run', 0)} runs"
        f" {s.get('cpu run', 0):.2f} s; the weight-shared crash record and the cached unshared rebuilds"
        f" {s.get('cache', 0):.2f} s"
    )


def _breakdown(args: list[str]) -> None:
    """The child of verify_breakdown: `q9diff verify ARGS` with its calls timed, a JSON line out."""
    import collections
    import contextlib
    import io
    import threading

    t0 = time.perf_counter()
    import q9diff.cli
    from q9diff.runners import local, worker
    from q9diff.verify import run as vrun

    imports = time.perf_counter() - t0
    seconds, calls, lock = collections.defaultdict(float), collections.Counter(), threading.Lock()

    def timed(owner, name, label=None):
        f = getattr(owner, name)

        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                what = label or f"child {a[1]['op']}"  # WorkerClient.request(self, message, ...)
                with lock:
                    seconds[what] += time.perf_counter() - t
                    calls[what] += 1

        setattr(owner, name, wrapper)

    timed(worker.WorkerClient, "request")
    timed(local.LocalRunner, "open", "open side")
    timed(local.CpuSession, "__init__", "cpu load")
    timed(local.CpuSession, "run", "cpu run")
    timed(local, "unshared_rebuild", "cache")
    timed(local, "_crash_memo", "cache")
    timed(vrun, "check_llm", "decode")
    sys.argv = ["q9diff", *args]
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            q9diff.cli.main()
        except SystemExit:
            pass
    wall = time.perf_counter() - t + imports
    print(json.dumps({"wall": wall, "imports": imports, "seconds": seconds, "calls": calls}))


def load() -> str:
    return f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)"


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
    if sys.argv[1:2] == ["--breakdown"]:
        return _breakdown(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="measure this pair only (as (a))")
    ap.add_argument("--check", action="store_true", help="exit 1 when any figure is over its goal")
    ap.add_argument("--no-seed", action="store_true", help="leave out (f), the seed's 6-part set")
    ap.add_argument("--no-verify", action="store_true", help="leave out (g), verify of qwen-mini")
    ap.add_argument("--explain", action="store_true", help="measure (h) alone, explain of a 1 MiB paste")
    ap.add_argument("--no-shared", action="store_true", help="leave out (i)-(k), the shared pairs")
    ap.add_argument("--shared", action="store_true", help="measure (i)-(k) alone, the shared pairs")
    ap.add_argument("--shared-mb", type=int, default=1000, help="the shared pairs' MB of weights (1000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure, the median is shown (>= 3)")
    args = ap.parse_args()
    repeat = max(args.repeat, 3)
    print(f"load average at the start: {load()}", flush=True)
    # q9diff's bytecode current first, as an installed copy has it: with PYTHONDONTWRITEBYTECODE set (as
    # on the machines this runs on) an edited module would otherwise be compiled again in every run.
    import compileall

    compileall.compile_dir(ROOT / "q9diff", quiet=1)
    compileall.compile_dir(ROOT / "formats", quiet=1)  # the byte layouts, q9diff.formats once installed
    rows: list[Row | str] = []
    if args.explain:
        rows += case_explain(repeat)
    elif args.shared:
        rows += case_shared(args.shared_mb, repeat)
    elif args.files:
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
        if not args.no_seed:
            rows += case_seed(bench_pairs.build_seed(), repeat)
        if not args.no_verify:
            rows += case_verify(repeat)
        rows += case_explain(repeat)
        if not args.no_shared:
            rows += case_shared(args.shared_mb, repeat)
    print(f"load average at the end: {load()}")
    print(table(rows))
    if args.check and not all(r.ok for r in rows if isinstance(r, Row)):
        sys.exit(1)


if __name__ == "__main__":
    main()
