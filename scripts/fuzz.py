"""Fuzz q9diff's reading of context binaries: mutate real files, parse, map regions, diff, in one process.

Seeds are the committed fixtures (fixtures/**/*.bin, the ExecuTorch fixtures/pte/*.pte) and the real
third-party files in ../shared/real/binaries (when that folder is there); a file in an ONNX/LiteRT/ExecuTorch
container is fuzzed both as the container (written to a temporary file, every context opened with
q9diff.read.openers.contexts; a .pte's own region map and compile specs too) and as the context binary
q9diff finds inside it. `--pte` fuzzes the .pte fixtures alone; `--dlc` the DLCs of fixtures/dlc alone (each
read as inspect and diff read it: records, graphs, caches, the region map, a diff against the seed).
Mutations are byte-level (flips, interesting words, truncations, copies, FlatBuffer offsets made to share
children) and structural: a field of a record that formats/ declares (a file or blob header, a pickle header
and its records, an aux record, an op record, graphBlobInfo, ...; a .pte's header, QNN payload headers and
the Program's segment and delegate-reference fields) set to an interesting value and the record built again
with its definition (`.build()`), in place.
Each case runs the parser (ContextBinary / open_binary, then every graph, tensor and record), the region
map (`.regions`, checked to cover every byte exactly once) and the diff against the unmutated seed
(`q9diff.compare.diff.diff` and its JSON). The only expected failure is q9diff.errors.FormatError; anything
else is a crash, bucketed by exception type and the innermost q9diff frame.

Every case is reproducible from its seed and number:

    python scripts/fuzz.py --cases 100000 --seed 1            # run, report
    python scripts/fuzz.py --seed 1 --replay 4711 --save out/  # write case 4711's bytes, show its traceback
    python scripts/fuzz.py --pte --cases 500 --seed 1          # the .pte opener alone
    python scripts/fuzz.py --pte --cases 5000 --cli-every 20   # and every 20th case through q9diff inspect
    python scripts/fuzz.py --dlc --cases 5000 --cli-every 20   # the DLCs

Not part of the test suite (it takes minutes); tests/test_security.py runs a short round of it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from construct import ConstructError  # noqa: E402

from q9diff.compare.diff import diff, to_json  # noqa: E402
from q9diff.errors import FormatError  # noqa: E402
from q9diff.read import flatbuf, openers  # noqa: E402
from q9diff.read.binary import ContextBinary  # noqa: E402
from q9diff.read.openers import CONTAINERS, contexts, locate, open_binary  # noqa: E402
from q9diff.read.sites import Site, record_sites  # noqa: E402

HANG_S = 2.0  # a case slower than this is a hang
ALARM_S = 20  # a case still running after this is stopped (and counted as a hang)
CLI_TIMEOUT_S = 120  # --cli-every: a child still running then is a hang
INTERESTING_U32 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE,
                   0xFFFFFFFF)  # fmt: skip


@dataclass(frozen=True)
class Seed:
    """One starting file: its bytes, how it is opened (in memory, or as a container file), and the
    context binary it parses to (the other side of every diff)."""

    name: str
    data: bytes
    suffix: str  # ".bin": ContextBinary over the bytes; else a temporary file for open_binary
    reference: ContextBinary | None
    sites: tuple[Site, ...] = ()  # its records as formats/ declares them (field_sites)


@dataclass
class Report:
    cases: int = 0
    format_errors: int = 0
    parsed: int = 0
    seconds: float = 0.0
    crashes: Counter = field(default_factory=Counter)
    first: dict = field(default_factory=dict)  # bucket -> (case, seed name, message)
    hangs: list = field(default_factory=list)  # (case, seed name, seconds)
    region_faults: Counter = field(default_factory=Counter)
    slowest: tuple = (None, None, 0.0)  # (case, seed name, seconds) of the slowest case
    cli_runs: int = 0
    cli_refusals: int = 0  # of cli_runs: exit 2 with one line


def seeds(extra: list[Path], pte_only: bool = False, dlc_only: bool = False) -> list[Seed]:
    dlcs = sorted(p for p in (ROOT / "fixtures" / "dlc").glob("*") if openers.kind(p) == ".dlc")
    if dlc_only:
        return [Seed(p.name, p.read_bytes(), ".dlc", None) for p in dlcs]
    files = [] if pte_only else sorted(set((ROOT / "fixtures").rglob("*.bin")) - set(dlcs))
    files += sorted((ROOT / "fixtures" / "pte").glob("*.pte"))
    real = ROOT.parent / "shared" / "real" / "binaries"
    if real.is_dir() and not pte_only:
        files += sorted(p for p in real.iterdir() if p.is_file())
    files += extra
    out, seen = [], set()
    for path in files:
        data = path.read_bytes()
        if data in seen:
            continue
        seen.add(data)
        try:  # a .pte of several contexts: the first is the other side of every diff
            reference = contexts(locate(path))[0][1] if path.suffix == ".pte" else open_binary(path)
            _ = reference.regions
        except FormatError:
            reference = None
        suffix = path.suffix if path.suffix in CONTAINERS else ".bin"
        sites = field_sites(data) if suffix == ".bin" else pte_sites(data) if suffix == ".pte" else ()
        out.append(Seed(path.name, data, suffix, reference, sites))
        if pte_only:
            continue
        if suffix != ".bin" and reference is not None:  # the context binary inside the container
            inner = bytes(reference.data)
            if inner not in seen:
                seen.add(inner)
                out.append(Seed(f"{path.name}#inner", inner, ".bin", reference, field_sites(inner)))
    return out


def field_sites(data: bytes) -> tuple[Site, ...]:
    """The records of a context binary that formats/ declares, where the walk finds them (none for bytes
    that do not parse)."""
    try:
        return tuple(record_sites(ContextBinary(data, "seed")))
    except FormatError:
        return ()


def pte_sites(data: bytes) -> tuple[Site, ...]:
    """The records of a .pte that formats/pte declares (its header, each QNN payload header) and the
    Program's integer fields that place the payloads (each segment's offset and size, each delegate's data
    location and index), each read as one integer of its width."""
    from q9diff.formats import pte as P
    from q9diff.read import pte

    try:
        walked = pte.read(memoryview(data), "seed")
        program = flatbuf.root(memoryview(data), 0, walked.program_size, "seed")
    except FormatError:
        return ()
    out = [Site("pte/header", 0, P.PTE_HEADER_SIZE, P.PteHeader)]
    for offset in sorted({d.payload[0] for d in walked.delegates if d.binary is not None}):
        out.append(Site("qnn_header", offset, offset + P.QNN_PAYLOAD_HEADER_SIZE, P.QnnPayloadHeader))

    def scalar(table, name: str, row) -> None:
        at = table.field(row.slot)
        if at is not None:
            out.append(Site(name, at, at + row.kind.sizeof(), row.kind))

    for i, seg in enumerate(program.get(P.PROGRAM["segments"])):
        for key, row in P.DATA_SEGMENT.items():
            scalar(seg, f"segments[{i}].{key}", row)
    for plan in program.get(P.PROGRAM["execution_plan"]):
        for d in plan.get(P.EXECUTION_PLAN["delegates"]):
            ref = d.get(P.BACKEND_DELEGATE["processed"])
            for key, row in P.DATA_REFERENCE.items() if ref is not None else ():
                scalar(ref, f"processed.{key}", row)
    return tuple(out)


def leaves(value, path: tuple = ()):
    """(path, value) of every integer in a parsed record, nested records and lists included."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not k.startswith("_"):
                yield from leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    elif isinstance(value, int) and not isinstance(value, bool):
        yield path, value


def leaf(value, path: tuple):
    for key in path:
        value = value[key]
    return value


def mutate_field(data: bytes, sites, rng: random.Random):
    """One integer field of one record set to an interesting value, the record built again with its
    definition and written over the old one, cut or zero-padded to its length: (site, field path, value,
    the new bytes), the bytes None where the record no longer parses there or its definition refuses to
    build the value (a constant, a check, a width)."""
    site = rng.choice(sites)
    try:
        record = site.definition.parse(data[site.offset : site.end])
    except ConstructError:
        return site, (), None, None
    fields = list(leaves(record))
    if not fields:
        return site, (), None, None
    path, old = rng.choice(fields)
    value = rng.choice(
        INTERESTING_U32 + (len(data), old + 1, max(old - 1, 0), 2 * old, rng.randrange(1 << 32))
    )
    if path:
        leaf(record, path[:-1])[path[-1]] = value
    else:  # the record is one integer
        record = value
    try:
        built = site.definition.build(record)
    except (ConstructError, KeyError):  # a constant, a check, a width; a switch now needing other fields
        return site, path, value, None
    n = site.end - site.offset
    return site, path, value, data[: site.offset] + built[:n].ljust(n, b"\0") + data[site.end :]


def mutate(data: bytes, rng: random.Random, sites=()) -> bytes:
    """One to eight mutations, biased to the first pages (header and metadata FlatBuffers); with `sites`
    (field_sites of `data`), some set a field of a declared record and build it again."""
    buf = bytearray(data)

    def pos() -> int:
        if not buf:
            return 0
        if rng.random() < 0.6:
            return rng.randrange(min(len(buf), 0x4000))
        return rng.randrange(len(buf))

    def share(times: int) -> None:
        """Point u32s that look like forward FlatBuffer offsets at another one's target, so tables share
        children: the file becomes a DAG, which a walk that visits per path multiplies."""
        limit = min(len(buf), 0x4000) - 4
        offsets = [p for p in range(0, limit, 4) if 8 <= struct.unpack_from("<I", buf, p)[0] < len(buf) - p]
        for _ in range(times if len(offsets) >= 2 else 0):
            a, b = rng.sample(offsets, 2)
            target = a + struct.unpack_from("<I", buf, a)[0]
            if target > b:
                struct.pack_into("<I", buf, b, target - b)

    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        kind = rng.random()
        if sites and rng.random() < 0.2:
            built = mutate_field(bytes(buf), sites, rng)[3]
            if built is not None:
                buf[:] = built
        elif kind < 0.02:
            share(rng.randrange(16, 64))  # many shared children: a deep DAG
        elif kind < 0.08:
            share(1)
        elif kind < 0.35 and buf:
            buf[pos()] = rng.randrange(256)
        elif kind < 0.5 and buf:
            p = pos()
            buf[p] ^= 1 << rng.randrange(8)
        elif kind < 0.75 and len(buf) >= 4:
            p = pos() & ~3
            value = rng.choice(INTERESTING_U32 + (len(buf), len(buf) - p, rng.randrange(1 << 32)))
            buf[p : p + 4] = struct.pack("<I", value & 0xFFFFFFFF)[: len(buf) - p]
        elif kind < 0.85 and buf:
            del buf[rng.randrange(len(buf)) :]
        elif kind < 0.93 and len(buf) > 8:
            a = pos()
            n = rng.randrange(1, 64)
            b = rng.randrange(len(buf))
            buf[b:b] = buf[a : a + n]
        elif buf:
            a = pos()
            n = rng.randrange(1, 256)
            b = pos()
            buf[b : b + n] = buf[a : a + n]
    return bytes(buf)


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def where(exc: BaseException) -> str:
    """The innermost frame in q9diff's own code (else the innermost frame) as file:line function."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/q9diff/" in f.filename or "/formats/" in f.filename]
    f = (ours or frames or [None])[-1]
    if f is None:
        return "?"
    short = f.filename.split("/q9diff/")[-1] if "/q9diff/" in f.filename else Path(f.filename).name
    return f"{short}:{f.lineno} {f.name}"


def run_case(seed: Seed, data: bytes, tmp: Path) -> ContextBinary:
    """Everything q9diff does with a file a user hands it, short of running it: a container's every
    context (and a .pte's own region map and compile specs)."""
    if seed.suffix == ".bin":
        return check_context(seed, ContextBinary(data, f"fuzz{seed.suffix}"))
    path = tmp / f"fuzz{seed.suffix}"
    path.write_bytes(data)
    if seed.suffix == ".dlc":
        return check_dlc(seed, path)
    openers._cached_index.cache_clear()  # the same path rewritten within a clock tick: read afresh
    found = contexts(locate(path)) if seed.suffix == ".pte" else [("", open_binary(path))]
    if seed.suffix == ".pte":
        check_container(path, len(data))
    for _, cb in found:
        check_context(seed, cb)
    return found[0][1]


def check_dlc(seed: Seed, path: Path) -> None:
    """A DLC read as inspect and diff read it: its summary (records, graphs, caches, every byte's region,
    checked to tile the file), its diff against the seed, and each cache as a context."""
    from q9diff.compare.dlc import diff as dlc_diff
    from q9diff.compare.dlc import summary
    from q9diff.read.dlc import Dlc

    dlc = Dlc.open(path)
    data = summary(dlc)
    end = 0
    for r in data["regions"]:
        if r["offset"] != end or r["size"] <= 0:
            raise AssertionError(f"dlc region map: {r['name']} at {r['offset']:#x}, expected {end:#x}")
        end += r["size"]
    if end != dlc.size:
        raise AssertionError(f"dlc region map covers {end} of {dlc.size} bytes")
    reference = Dlc(seed.data, seed.name)
    json.dumps(dlc_diff(dlc, reference))
    openers._cached_index.cache_clear()
    for _, cb in contexts(locate(path)):
        check_context(Seed(seed.name, b"", ".bin", None), cb)


def check_container(path: Path, size: int) -> None:
    """A .pte's region map covers every byte once, and its delegates and compile specs read as JSON."""
    from q9diff.compare.container import container_json

    data = container_json(locate(path))
    end = 0
    for r in data["regions"]:
        if r["offset"] != end or r["size"] <= 0:
            raise AssertionError(f"pte region map: {r['name']} at {r['offset']:#x}, expected {end:#x}")
        end += r["size"]
    if end != size:
        raise AssertionError(f"pte region map covers {end} of {size} bytes")
    json.dumps(data)


def check_context(seed: Seed, cb: ContextBinary) -> ContextBinary:
    """One context read as every command reads it: graphs, tensors, records, the region map, a diff."""
    for g in cb.graphs:
        for t in (*g.inputs, *g.outputs):
            _ = (t.name, t.dims, t.dtype, t.scale, t.offset)
    _ = (cb.records, cb.soc_model, cb.dsp_arch, cb.build_id)
    regions = cb.regions
    covered, end = 0, 0
    for r in regions:
        if r.offset != end or r.size < 0:
            raise AssertionError(f"region map: {r.name} at {r.offset:#x}, expected {end:#x}")
        end = r.offset + r.size
        covered += r.size
    if covered != cb.size:
        raise AssertionError(f"region map covers {covered} of {cb.size} bytes")
    if seed.reference is not None:
        json.dumps(to_json(diff(cb, seed.reference)), default=str)
    return cb


def check_cli(seed: Seed, data: bytes, tmp: Path, read: bool) -> str | None:
    """The case as a user meets it: `q9diff inspect FILE` in a child (under this process's address-space
    limit). What is wrong, or None: it must exit 0 where the opener read the file (`read`) and 2 where it
    refused it, with exactly one stderr line that starts with the file's path, and never a traceback."""
    path = tmp / f"cli{seed.suffix}"
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", "inspect", str(path)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "COLUMNS": "200"},
    )
    lines = done.stderr.strip().splitlines()
    if "Traceback" in done.stderr or "internal error" in done.stderr:
        return "a traceback"
    if done.returncode != (0 if read else 2):
        return f"exit {done.returncode} where the opener {'read' if read else 'refused'} it"
    if done.returncode == 2 and (len(lines) != 1 or not lines[0].startswith(f"q9diff: error: {path}")):
        return f"{len(lines)} stderr lines, not one naming the file"
    return None


def fuzz(all_seeds: list[Seed], cases: int, base: int, report: Report, tmp: Path, only: int | None = None,
         bundle=None, cli_every: int = 0):  # fmt: skip
    """Run the cases; `bundle` (scripts/fuzz_bundle.Cases) makes them bundle-level instead; every
    `cli_every`-th case (0: none) is also run through the command line (check_cli)."""
    signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    numbers = [only] if only is not None else range(cases)
    expected = bundle_expected() if bundle is not None else (FormatError,)
    for i in numbers:
        rng = random.Random(f"{base}:{i}")
        if bundle is not None:
            name, work = bundle.case(rng, mutate)
            seed, data = Seed(name, b"", "", None), None
        else:
            seed = all_seeds[rng.randrange(len(all_seeds))]
            data = mutate(seed.data, rng, seed.sites)

            def work(seed=seed, data=data):
                run_case(seed, data, tmp)

        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, ALARM_S)
        read = None  # whether the case read (True) or was refused with a FormatError (False)
        try:
            work()
            report.parsed += 1
            read = True
        except expected:
            report.format_errors += 1
            read = False
        except _Hang:
            report.hangs.append((i, seed.name, ALARM_S))
        except AssertionError as exc:
            bucket = f"{'invariant' if bundle else 'region map'}: {str(exc).split(':')[0]}"
            report.region_faults[bucket] += 1
            report.first.setdefault(bucket, (i, seed.name, str(exc)[:200]))
            if only is not None:
                traceback.print_exc()
        except Exception as exc:  # the point: anything but FormatError is a finding
            bucket = f"{type(exc).__name__} at {where(exc)}"
            report.crashes[bucket] += 1
            report.first.setdefault(bucket, (i, seed.name, str(exc)[:200]))
            if only is not None:
                traceback.print_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.perf_counter() - t0
        if HANG_S < took < ALARM_S:
            report.hangs.append((i, seed.name, round(took, 2)))
        if took > report.slowest[2]:
            report.slowest = (i, seed.name, took)
        if cli_every and bundle is None and read is not None and i % cli_every == 0:
            fault = check_cli(seed, data, tmp, read)
            report.cli_runs += 1
            report.cli_refusals += fault is None and not read
            if fault is not None:
                bucket = f"cli: {fault}"
                report.crashes[bucket] += 1
                report.first.setdefault(bucket, (i, seed.name, fault))
        report.cases += 1
        if only is None and report.cases % 5000 == 0:
            rate = report.cases / (time.perf_counter() - start)
            print(
                f"  {report.cases} cases, {rate:.0f}/s, {sum(report.crashes.values())} crashes",
                file=sys.stderr,
            )
        if only is not None:
            return data, seed
    report.seconds = time.perf_counter() - start
    return None, None


def bundle_expected() -> tuple[type[Exception], ...]:
    from fuzz_bundle import EXPECTED

    return EXPECTED


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", type=int, help="run only this case number (with --seed), with its traceback")
    ap.add_argument("--save", type=Path, help="with --replay: write the case's bytes into this folder")
    ap.add_argument(
        "--mem-limit-mb",
        type=int,
        default=4096,
        help="address-space limit: a runaway allocation is a MemoryError (a crash), not an exhausted machine",
    )
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument(
        "--bundle",
        action="store_true",
        help="bundle-level cases (scripts/fuzz_bundle.py): config, tokenizer, extension, EPContext nodes",
    )
    ap.add_argument("--pte", action="store_true", help="seeds: the ExecuTorch .pte fixtures alone")
    ap.add_argument("--dlc", action="store_true", help="seeds: the DLC fixtures alone (fixtures/dlc)")
    ap.add_argument(
        "--cli-every",
        type=int,
        default=0,
        metavar="N",
        help="also run every N-th case through `q9diff inspect` in a child: exit 0 where the opener read it,"
        " else 2 with one stderr line naming the file, never a traceback",
    )
    ap.add_argument("extra", nargs="*", type=Path, help="more seed files")
    args = ap.parse_args(argv)
    limit = args.mem_limit_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    all_seeds = [] if args.bundle else seeds(args.extra, pte_only=args.pte, dlc_only=args.dlc)
    report = Report()
    with tempfile.TemporaryDirectory(prefix="q9diff-fuzz-") as tmp:
        bundle = None
        if args.bundle:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from fuzz_bundle import Cases

            bundle = Cases(Path(tmp))
        if args.replay is not None:
            data, seed = fuzz(all_seeds, 1, args.seed, report, Path(tmp), only=args.replay, bundle=bundle)
            if args.save and bundle is not None:
                shutil.copytree(tmp, args.save / f"fuzz-bundle-{args.seed}-{args.replay}", dirs_exist_ok=True)
                print(f"wrote {args.save / f'fuzz-bundle-{args.seed}-{args.replay}'} ({seed.name} mutated)")
            elif args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                out = args.save / f"fuzz-{args.seed}-{args.replay}{seed.suffix}"
                out.write_bytes(data)
                print(f"wrote {out} (mutated from {seed.name})")
            found = report.crashes or report.region_faults or report.hangs
            print(f"case {args.replay} from {seed.name}: {'a finding (above)' if found else 'no finding'}")
            return 1 if found else 0
        fuzz(all_seeds, args.cases, args.seed, report, Path(tmp), bundle=bundle, cli_every=args.cli_every)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "command": "python scripts/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seeds": [s.name for s in all_seeds],
        "cases": report.cases,
        "cases_per_s": round(report.cases / report.seconds, 1) if report.seconds else None,
        "parsed": report.parsed,
        "format_errors": report.format_errors,
        "crashes": sum(report.crashes.values()),
        "crash_buckets": [
            {
                "where": k,
                "count": n,
                "replay": f"--seed {args.seed} --replay {report.first[k][0]}",
                "seed_file": report.first[k][1],
                "message": report.first[k][2],
            }
            for k, n in report.crashes.most_common()
        ],  # fmt: skip
        "region_map_faults": [
            {
                "what": k,
                "count": n,
                "replay": f"--seed {args.seed} --replay {report.first[k][0]}",
                "message": report.first[k][2],
            }
            for k, n in report.region_faults.most_common()
        ],  # fmt: skip
        "hangs_over_2s": [
            {"replay": f"--seed {args.seed} --replay {i}", "seed_file": s, "seconds": t}
            for i, s, t in report.hangs
        ],  # fmt: skip
        "max_case_s": round(report.slowest[2], 3),
        "slowest": f"--seed {args.seed} --replay {report.slowest[0]} ({report.slowest[1]})",
        "cli_runs": report.cli_runs,
        "cli_refusals": report.cli_refusals,
        "cli_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "peak_rss_mib": round(peak_mib, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['cases']} cases from {len(all_seeds)} seeds in {report.seconds:.0f} s "
              f"({result['cases_per_s']}/s); peak RSS {result['peak_rss_mib']} MiB")  # fmt: skip
        print(
            f"parsed {report.parsed}, FormatError {report.format_errors}, crashes {result['crashes']}, "
            f"region-map faults {sum(report.region_faults.values())}, hangs over 2 s {len(report.hangs)}; "
            f"slowest case {result['max_case_s']} s ({result['slowest']})"
        )
        if report.cli_runs:
            print(f"command line: {report.cli_runs} cases, {report.cli_refusals} refused in one line each")
        for b in result["crash_buckets"] + result["region_map_faults"]:
            print(
                f"  {b['count']:6d}  {b.get('where') or b.get('what')}  ({b['replay']}): {b['message'][:120]}"
            )
        for h in result["hangs_over_2s"]:
            print(f"  hang {h['seconds']} s on {h['seed_file']} ({h['replay']})")
    return 1 if result["crashes"] or report.hangs or report.region_faults else 0


if __name__ == "__main__":
    sys.exit(main())
