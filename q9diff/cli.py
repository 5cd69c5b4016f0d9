"""The command line: the only layer that prints and exits."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import typer
from construct import ConstructError
from rich.console import Console
from rich.table import Table

from q9diff.binary import open_binary
from q9diff.errors import FormatError
from q9diff.recipe import RecipeError
from q9diff.summary import inspect_summary, unknown_bytes
from q9diff.tables import soc_name

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Forensics for QNN HTP context binaries.",
)
console = Console(width=100, highlight=False)


def _fail(msg: str) -> None:
    print(f"q9diff: error: {msg}", file=sys.stderr)
    raise typer.Exit(2)


def _arch(v: int | None) -> str:
    return f"v{v}" if v else "not recorded"


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@app.command()
def inspect(
    file: Path,
    as_json: bool = typer.Option(False, "--json", help="print the q9diff.inspect/1 JSON"),
    oracle: bool = typer.Option(
        False, "--oracle", help="also read libQnnSystem's BinaryInfo and flag disagreements"
    ),
    meta: Path = typer.Option(
        None, "--meta", help="a qnn-context-binary-utility JSON as a second metadata source"
    ),
) -> None:
    """Show what a context binary holds: build, target, graphs, settings and every byte's region."""
    try:
        cb = open_binary(file)
        summary = inspect_summary(cb)
    except FormatError as exc:
        _fail(str(exc))
    except (ValueError, IndexError, struct.error, ConstructError) as exc:
        _fail(f"{file}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")
    disagreements = []
    if oracle:
        from q9diff.crosscheck import compare_with_oracle

        try:
            disagreements = compare_with_oracle(cb)
        except Exception as exc:  # the oracle reports its own one-line errors
            _fail(f"{file}: oracle: {exc}")
        summary["oracle_disagreements"] = disagreements
    if meta is not None:
        from q9diff.crosscheck import compare_with_utility_json

        try:
            summary["meta_disagreements"] = compare_with_utility_json(cb, meta)
        except (OSError, ValueError) as exc:
            _fail(f"{meta}: {exc}")
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    _print_inspect(cb, summary)


def _print_inspect(cb, s: dict) -> None:
    console.print(f"[bold]{s['path']}[/bold]  {_human(s['size'])} ({s['size']} bytes)")
    console.print(
        f"QAIRT build {s['build_id']} · core API {s['core_api_version']}"
        f" · backend API {s['backend_api_version']}"
        f" · blob {s['context_blob_version']}"
    )
    console.print(
        f"Target: soc_model {s['soc_model']} ({soc_name(s['soc_model'])}), dsp_arch {_arch(s['dsp_arch'])}"
        + (
            "  [bold red]generic target: loads everywhere, may compute wrong on device[/]"
            if s["soc_model"] == 0
            else ""
        )
    )
    for g in s["graphs"]:
        o = g["options"]
        console.print(
            f"\n[bold]graph {g['name']}[/bold]: {len(g['inputs'])} inputs, {len(g['outputs'])} outputs,"
            f" {len(g['ops'])} ops"
        )
        console.print(
            f"  soc_type {o.get('soc_type', '?')} · arch {o.get('arch', '?')} · vtcm_size {g['vtcm_size']}"
            f" · O {o.get('O', '?')} (optimizationLevel {g['optimization_level']})"
            f" · hvx_threads {g['num_hvx_threads']}"
            f" · dlbc {g['htp_dlbc']}"
        )
        console.print(
            f"  spill_fill {g['spill_fill_buffer_size']} · const {g['const_size']} · shared weights"
            f" {g['shared_weights_size']} · io {g['io_tensor_size']} · op data {g['op_data_size']}"
        )
    t = Table(title="regions", show_lines=False)
    t.add_column("region")
    t.add_column("offset", justify="right")
    t.add_column("size", justify="right")
    t.add_column("%", justify="right")
    for r in s["regions"]:
        t.add_row(r["name"], f"{r['offset']:#x}", str(r["size"]), f"{100 * r['size'] / s['size']:.1f}")
    console.print(t)
    unk = unknown_bytes(cb)
    console.print(
        f"named: {s['size'] - unk} bytes ({100 * (s['size'] - unk) / s['size']:.1f}%), unknown: {unk}"
    )
    for d in s.get("oracle_disagreements", []):
        console.print(f"[red]oracle disagrees[/]: {d}")
    if "oracle_disagreements" in s and not s["oracle_disagreements"]:
        console.print("oracle (libQnnSystem) agrees on every field")


def _open_pair(a: Path, b: Path):
    from q9diff.diff import diff

    try:
        return diff(open_binary(a), open_binary(b))
    except FormatError as exc:
        _fail(str(exc))
    except (ValueError, IndexError, struct.error, ConstructError) as exc:
        _fail(f"{a} / {b}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")


@app.command("diff")
def diff_cmd(
    candidate: Path,
    reference: Path,
    as_json: bool = typer.Option(False, "--json", help="print the q9diff.diff/1 JSON"),
    html_out: Path = typer.Option(None, "--html", help="write a self-contained HTML report to this file"),
) -> None:
    """Why CANDIDATE differs from the known-good REFERENCE, and what to change. Exit 0 same, 1 different."""
    if candidate.is_dir() or reference.is_dir():
        _set_diff(candidate, reference, as_json)
    res = _open_pair(candidate, reference)
    from q9diff.diff import to_json

    if html_out is not None:
        from q9diff.html import render
        from q9diff.recipe import write_atomic

        write_atomic(html_out, render(res))
    if as_json:
        print(json.dumps(to_json(res), indent=2, default=str))
    else:
        _print_diff(res)
    raise typer.Exit(0 if res.identical else 1)


@app.command()
def suggest(
    candidate: Path,
    reference: Path,
    apply: list[Path] = typer.Option(
        None, "--apply", help="recipe / htp_backend_ext_config.json files to fix"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="show the edits, write nothing"),
    recompile_: bool = typer.Option(False, "--recompile", help="rebuild from the fixed recipe and re-diff"),
    out: Path = typer.Option(None, "--out", help="where --recompile writes the new binaries"),
) -> None:
    """Print (and with --apply, make) the config changes that make CANDIDATE's build match REFERENCE's."""
    if recompile_:
        from q9diff.recipe import check_out

        check_out(out or Path("q9diff-out"), [candidate, reference])
    if candidate.is_dir() or reference.is_dir():
        from q9diff.diff import diff_sets, set_to_json

        try:
            data = set_to_json(diff_sets(candidate, reference))
        except FormatError as exc:
            _fail(str(exc))
        suggestions, identical = data["suggestions"], data["identical"]
    else:
        res = _open_pair(candidate, reference)
        suggestions, identical = res.suggestions, res.identical
    _print_suggestions(suggestions)
    if not apply:
        raise typer.Exit(0 if identical else 1)
    from q9diff.apply import ApplyError, plan, write

    edits = []
    for f in apply:
        try:
            edits.append(plan(f, suggestions))
        except ApplyError as exc:
            _fail(str(exc))
    for e in edits:
        console.print(e.unified or f"{e.path}: already matches", markup=False)
        if not dry_run:
            write(e)
    if dry_run:
        console.print("--dry-run: nothing written")
        raise typer.Exit(1)
    if recompile_:
        recipes = [e.path for e in edits if '"q9diff.recipe/1"' in e.after]
        if not recipes:
            _fail("--recompile needs a q9diff recipe among the --apply files")
        _recompile_and_check(recipes[0], out or Path("q9diff-out"), reference)


def _recompile_and_check(recipe_path: Path, out: Path, reference: Path) -> None:
    from q9diff.backends import BackendUnavailable
    from q9diff.diff import diff_sets, set_to_json
    from q9diff.recipe import load

    r = load(recipe_path)
    try:
        built = _build(r, r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe_path}: recompile failed: {exc}")
    console.print(f"rebuilt {len(built)} binaries into {out} (recipe: {out / 'recipe.json'})")
    data = set_to_json(diff_sets(out, reference if reference.is_dir() else reference.parent))
    roots = [c["name"] for c in data["causes"] if c["role"] == "root"]
    console.print(f"new vs reference: {data['a_total']} vs {data['b_total']} bytes")
    if data["identical"]:
        console.print("[bold green]Gap closed: the rebuilt binaries are byte-identical to the reference.[/]")
        raise typer.Exit(0)
    console.print(f"Gap not closed; root causes left: {', '.join(roots) or 'none (data only)'}")
    raise typer.Exit(1)


@app.command()
def recompile(
    recipe: Path,
    out: Path = typer.Option(Path("q9diff-out"), "--out", help="output directory"),
    backend: str = typer.Option(None, "--backend", help="ort-qnn (default), qairt or qnn-cli"),
) -> None:
    """Rebuild the context binaries a recipe describes."""
    from q9diff.backends import BackendUnavailable
    from q9diff.recipe import check_build, load

    r = load(recipe)
    check_build(r, out)
    try:
        built = _build(r, backend or r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe}: {exc}")
    for b in built:
        console.print(str(b))


@app.command()
def verify(
    candidate: Path,
    reference: Path = typer.Argument(None, help="the known-good build (file, folder or Genie bundle)"),
    runner: str = typer.Option(
        "local", "--runner", help="local (x86 HTP emulator), genie, or ssh://user@host[:port]"
    ),
    cpu: bool = typer.Option(True, "--cpu/--no-cpu", help="also run the recipe's source ONNX on the CPU"),
    recipe: Path = typer.Option(
        None, "--recipe", help="the recipe naming the source models (default: beside)"
    ),
    steps: int = typer.Option(16, "--steps", help="LLM: tokens to generate greedily"),
    prompt: str = typer.Option(
        None, "--prompt-ids", help="LLM: prompt token ids, e.g. 10,20,30 (default: seeded)"
    ),
    seed: int = typer.Option(0, "--seed", help="seed for generated inputs and prompts"),
    inputs: Path = typer.Option(None, "--inputs", help="single graphs: an .npz of named input arrays"),
    min_cosine: float = typer.Option(
        None, "--min-cosine", help="single graphs: pass at this cosine or more (default 0.999, 0.99 vs CPU)"
    ),
    max_rel: float = typer.Option(
        None,
        "--max-rel",
        help="single graphs: pass at this relative error or less (default 0.02, 0.1 vs CPU)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the q9diff.verify/1 JSON"),
    html_out: Path = typer.Option(None, "--html", help="write a self-contained HTML report (drift per step)"),
    known_hosts: Path = typer.Option(None, "--known-hosts", help="ssh: the known_hosts file to trust"),
    identity: Path = typer.Option(None, "--identity", help="ssh: private key file"),
    remote_tool: str = typer.Option(
        "q9diff", "--remote-tool", help="ssh: q9diff (worker), qnn-net-run, or genie-t2t-run (Genie bundles)"
    ),
    remote_python: str = typer.Option("python3", "--remote-python", help="ssh: the EVK's Python with q9diff"),
    qairt_root: str = typer.Option(None, "--qairt-root", help="ssh: QAIRT SDK folder on the EVK"),
) -> None:
    """Run CANDIDATE (and REFERENCE, and the CPU reference) on the same inputs and compare what they compute.

    Exit 0 when the candidate computes what the reference does (or, without one, the CPU reference)."""
    from q9diff.runners import RunnerError
    from q9diff.verify import Tolerance, load_inputs
    from q9diff.verify import verify as run_verify

    try:
        ids = [int(x) for x in prompt.replace(",", " ").split()] if prompt else None
    except ValueError:
        _fail(f"--prompt-ids: expected token ids such as 10,20,30, got {prompt!r}")
    try:
        if runner == "genie":
            from q9diff.verify import verify_genie

            res = verify_genie(candidate, reference, cpu=cpu, steps=steps, prompt=ids, seed=seed)
        elif runner.startswith("ssh://") and remote_tool == "genie-t2t-run":
            from q9diff.runners.ssh import SshRunner
            from q9diff.verify import verify_genie_ssh

            run = SshRunner.from_url(
                runner, known_hosts=known_hosts, identity=identity, qairt_root=qairt_root
            )
            res = verify_genie_ssh(candidate, reference, run, cpu=cpu, steps=steps, prompt=ids, seed=seed)
        else:
            run = _runner(runner, known_hosts, identity, remote_tool, remote_python, qairt_root)
            given = load_inputs(inputs) if inputs is not None else None
            tolerance = None
            if min_cosine is not None or max_rel is not None:
                default = Tolerance()
                tolerance = Tolerance(
                    default.min_cosine if min_cosine is None else min_cosine,
                    default.max_rel if max_rel is None else max_rel,
                )
            res = run_verify(
                candidate, reference, run, cpu=cpu, recipe=recipe, steps=steps, prompt=ids, seed=seed,
                inputs=given, tolerance=tolerance,
            )  # fmt: skip
    except (RunnerError, FormatError, RecipeError, RuntimeError) as exc:
        _fail(str(exc))
    from q9diff.verify import to_json

    if html_out is not None:
        from q9diff.html import render_verify
        from q9diff.recipe import write_atomic

        write_atomic(html_out, render_verify(res))
    if as_json:
        print(json.dumps(to_json(res), indent=2))
    else:
        _print_verify(res)
    raise typer.Exit(0 if res.passed else 1)


def _runner(spec, known_hosts, identity, remote_tool, remote_python, qairt_root):
    from q9diff.runners import runner as make_runner

    if not spec.startswith("ssh://"):
        return make_runner(spec)
    from q9diff.runners.ssh import SshRunner

    return SshRunner.from_url(
        spec, tool=remote_tool, known_hosts=known_hosts, identity=identity, remote_python=remote_python,
        qairt_root=qairt_root,
    )  # fmt: skip


# What each runner can and cannot catch, said with every verdict (measured: docs/README "verify").
RUNNER_REACH = {
    "local": "x86 HTP emulator: catches quantization, structure and recipe mistakes; computes soc_model 0 and"
    " 77 builds bit-identically, so a fault only Hexagon hardware shows needs --runner ssh://user@evk",
    "genie": "Genie on the x86 HTP emulator: the device's dialog loop (tokenizer, KV handling, sampling) on"
    " emulated HTP; like local, it cannot show a fault only Hexagon hardware shows",
    "ssh": "the device itself: the only runner that shows a fault of the target SoC (e.g. soc_model 0)",
}


def _fmt(m) -> str:
    return "" if m is None else f"{m.max_abs:.2g} / {m.cosine:.4f}"


def _print_verify(res) -> None:
    for side in res.sides:
        console.print(f"[bold]{side.label}[/bold]: {side.source} ({side.runner})", markup=True)
        for note in side.notes:
            console.print(f"  note: {note}", markup=False)
    for note in res.notes:
        console.print(f"note: {note}", markup=False)
    if res.llm is not None:
        c = res.llm
        console.print(f"LLM: prompt {list(c.prompt)} ({len(c.prompt)} tokens), greedy")
        for label, toks in c.tokens.items():
            console.print(f"  tokens {label:<10} {' '.join(map(str, toks))}")
        for label, text in c.texts.items():
            console.print(f"  text   {label:<10} {text!r}", markup=False)
        for pair, step in c.first_divergence.items():
            console.print(
                f"  {pair}: " + ("same tokens at every step" if step is None else f"diverge at step {step}")
            )
        if not c.steps:
            _print_verdict(res)
            return
        t = Table(title="per step (logits teacher-forced on the anchor's tokens): max|Δ| / cosine")
        labels = list(c.tokens)
        short = {"candidate": "cand", "reference": "ref"}
        for col in ["step", *[short.get(x, x) for x in labels], "cand~cpu", "ref~cpu", "cand~ref"]:
            t.add_column(col, justify="right", no_wrap=True)
        for d in c.steps:
            t.add_row(
                str(d.step),
                *[str(d.tokens.get(x, "")) for x in labels],
                _fmt(d.vs_cpu.get("candidate")),
                _fmt(d.vs_cpu.get("reference")),
                _fmt(d.vs_reference),
            )
        console.print(t)
    else:
        t = Table(title="outputs: candidate against each other side")
        for col in ("graph", "output", "against", "max|Δ|", "rel", "cosine", "ok"):
            t.add_column(col, overflow="fold")
        for o in res.outputs:
            m = o.metrics
            ok = "yes" if o.passed else "[red]NO[/]"
            cells = (f"{m.max_abs:.3g}", f"{m.rel:.3g}", f"{m.cosine:.6f}", ok)
            graph = o.graph if len(o.graph) <= 32 else "…" + o.graph[-31:]
            t.add_row(graph, o.output, o.against, *cells)
        console.print(t)
    _print_verdict(res)


def _print_verdict(res) -> None:
    c = res.llm
    if c is not None and "cpu" in c.tokens:
        cpu_div = next(
            (v for k, v in c.first_divergence.items() if k.endswith("~cpu") and v is not None), None
        )
        if cpu_div is not None:
            console.print(
                f"[bold yellow]The compiled model leaves its CPU reference at step {cpu_div}: the binary"
                " does not compute what the ONNX model does (quantization or conversion).[/]"
            )
    runner = next((s.runner for s in res.sides if s.label == "candidate"), "local")
    console.print(f"reach: {RUNNER_REACH['ssh' if runner.startswith('ssh') else runner]}", markup=False)
    names = {
        "reference": "the reference",
        "emulator": "q9diff's own run of the same ctx-bins",
        "cpu": "its source model (the CPU reference)",
    }
    labels = {s.label for s in res.sides}
    judge = next(k for k in ("reference", "emulator", "cpu") if k in labels or k == "cpu")
    failed = {o.against for o in res.outputs if not o.passed}
    if res.passed:
        console.print(f"[bold green]PASS: the candidate computes what {names[judge]} does.[/]")
    else:
        what = names["reference"] if "reference" in failed else names["cpu"] if failed else names[judge]
        console.print(f"[bold red]FAIL: the candidate does not compute what {what} does.[/]")


def _build(r, backend: str, out: Path) -> list[Path]:
    """Compile `r` into `out` and leave the recipe beside the binaries, so `out` can be rebuilt,
    diffed and verified (the runners find it there) like any build."""
    from q9diff.backends import compile_backend
    from q9diff.recipe import dump, write_atomic

    built = compile_backend(backend).compile(r, out)
    target = out / "recipe.json"
    if r.path is not None and target.resolve() == Path(r.path).resolve():
        return built  # building in place: the recipe is already there, and inputs are never rewritten
    if target.exists() and '"q9diff.recipe/1"' not in target.read_text(errors="replace"):
        console.print(f"note: {target} exists and is not a q9diff recipe; left as it was")
        return built
    write_atomic(target, dump(r.rebased(out)))
    return built


def _set_diff(a: Path, b: Path, as_json: bool) -> None:
    from q9diff.diff import diff_sets, set_to_json

    try:
        sd = diff_sets(a, b)
    except FormatError as exc:
        _fail(str(exc))
    except (OSError, ValueError) as exc:
        _fail(f"{a} / {b}: {exc}")
    if not sd.pairs and not sd.unpaired_a and not sd.unpaired_b:
        _fail(f"{a} / {b}: no context binaries (*.bin or genie_config.json ctx-bins) found")
    data = set_to_json(sd)
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        raise typer.Exit(0 if sd.identical else 1)
    roots = [c for c in data["causes"] if c["role"] == "root"]
    verdict = ", ".join(f"{c['name']} {c['a']} → {c['b']}" for c in roots) or "none"
    console.print(f"[bold]Root causes over the set: {verdict}[/bold]")
    console.print(
        f"set: {len(sd.pairs) + len(sd.unpaired_a)} vs {len(sd.pairs) + len(sd.unpaired_b)} parts,"
        f" {data['a_total']} → {data['b_total']} bytes ({data['size_delta']:+d})"
    )
    for pa, pb, r in sd.pairs:
        console.rule(f"{pa.name} vs {pb.name}")
        _print_diff(r)
    for p in sd.unpaired_a + sd.unpaired_b:
        console.print(f"[red]unpaired part[/]: {p}")
    raise typer.Exit(0 if sd.identical else 1)


def _print_suggestions(suggestions: list[dict]) -> None:
    if not suggestions:
        console.print("No setting to change.")
    for s in suggestions:
        t = s["targets"]
        console.print(f"[bold]{s['setting']} = {s['value']}[/bold]")
        console.print(f"  qairt:                  {t['qairt']}")
        for k, v in t["htp_backend_ext_config"].items():
            console.print(f"  htp_backend_ext_config: {k} = {json.dumps(v)}")
        for k, v in t.get("ort_qnn", {}).items():
            console.print(f"  ONNX Runtime QNN EP:    {k}={v}")
        console.print(f"  qnn-context-binary-generator: {t['qnn_cli']}")


def _print_diff(res) -> None:
    a, b = res.a, res.b
    roots = [c for c in res.causes if c.role == "root"]
    if res.identical:
        console.print("Identical: no difference in any byte.")
        return
    if roots:
        text = ", ".join(f"{c.name} {c.a} → {c.b}" for c in roots)
        extra = ""
        soc = next((c for c in roots if c.name == "soc_model"), None)
        if soc is not None:
            extra = f" (compiled for {soc_name(soc.a)}, reference for {soc_name(soc.b)})"
        console.print(f"[bold]Root cause: {text}{extra}[/bold]")
    else:
        console.print("[bold]No setting differs; only effects or data.[/bold]")
    if any(c.name == "soc_model" and c.a == 0 for c in roots):
        console.print(
            "[bold red]The candidate targets a generic SoC (soc_model 0): it loads without error and can"
            " still compute garbage on the device. Set soc_model.[/]"
        )
    console.print(f"size: {a.size} → {b.size} bytes ({b.size - a.size:+d})")
    t = Table(title="causes")
    for col in ("cause", "role", "candidate", "reference", "bytes", "evidence"):
        t.add_column(col, overflow="fold")
    for c in res.causes:
        t.add_row(
            c.name,
            c.role,
            _cell(c.a),
            _cell(c.b),
            "" if c.bytes is None else str(c.bytes),
            "; ".join(c.evidence)[:160],
        )
    console.print(t)
    console.print("[bold]Fix[/bold]")
    _print_suggestions(res.suggestions)
    rt = Table(title="regions (every byte of both files)")
    for col in ("region", "candidate", "reference", "delta", "changed"):
        rt.add_column(col, justify="right" if col != "region" else "left")
    for r in res.regions:
        if r["delta"] or r["changed_bytes"]:
            rt.add_row(
                r["name"], str(r["a_size"]), str(r["b_size"]), f"{r['delta']:+d}", str(r["changed_bytes"])
            )
    rt.add_row(
        "total",
        str(a.size),
        str(b.size),
        f"{b.size - a.size:+d}",
        str(sum(r["changed_bytes"] for r in res.regions)),
    )
    console.print(rt)


def _cell(v) -> str:
    s = str(v)
    return s if len(s) <= 30 else s[:27] + "..."


COMMANDS = {"inspect", "diff", "suggest", "recompile", "verify", "--help", "-h"}


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] not in COMMANDS:
        argv = ["diff", *argv]
    try:
        app(args=argv, prog_name="q9diff")
    except (FormatError, RecipeError) as exc:
        print(f"q9diff: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:  # the last line of defence: one line, exit 2, never a traceback
        name = type(exc).__name__
        print(f"q9diff: error: internal error ({name}: {exc}); please report it", file=sys.stderr)
        sys.exit(2)
