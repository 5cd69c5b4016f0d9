"""The command line: the only layer that prints and exits.

Imports are lazy: `--help` and `inspect` must not pay for plotly, deepdiff or the compile backends.
"""

from __future__ import annotations

import json
import math
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import typer
from typer.core import TyperCommand, TyperGroup

from q9diff.errors import FormatError

MAIN_HELP = """Forensics for QNN HTP context binaries.

\b
The main form (short for q9diff diff CANDIDATE REFERENCE):
  q9diff CANDIDATE REFERENCE
why your build differs from the known-good REFERENCE, and what to change.
Each is a context binary, a folder of parts, a Genie bundle, an EPContext .onnx or a LiteRT .tflite.

\b
Exit status, every command:
  0  same, nothing to change, verify PASS
  1  different, something to change, verify FAIL
  2  error: one line on stderr naming the file"""


class _Command(TyperCommand):
    """Shows --help as a flag, not `--help <bool>` (typer 0.29's type column)."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class _Group(TyperGroup):
    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


app = typer.Typer(  # plain click help: half the start-up of rich panels (scripts/bench.py)
    cls=_Group,
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help=MAIN_HELP,
    rich_markup_mode=None,
)


class _Console:
    """rich's Console, created on first use, following the terminal's width (80 columns in a pipe).

    Markup is off: strings from a file are data, never markup. Our own styling goes through Text."""

    _console = None

    def __getattr__(self, name):
        if _Console._console is None:
            from rich.console import Console

            _Console._console = Console(markup=False, highlight=False, emoji=False)
        return getattr(_Console._console, name)


console = _Console()

# C0/C1 control characters and the bidi overrides that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _clean(v, keep: str = "") -> str:
    """A string from a file, safe to show: control characters (but those in `keep`, e.g. the newlines
    of a diff) become visible escapes such as \\x1b."""

    def escape(m: re.Match) -> str:
        c = m.group()
        return c if c in keep else c.encode("unicode_escape").decode("ascii")

    return _CONTROL.sub(escape, str(v))


def _t(*parts):
    """A rich Text from (text, style) pairs or plain strings; every string is cleaned of controls."""
    from rich.text import Text

    out = Text()
    for part in parts:
        text, style = (part, None) if isinstance(part, str) else part
        out.append(_clean(text), style=style)
    return out


def _json_safe(v):
    """Strict JSON: a non-finite float (NaN, ±inf, e.g. a NaN scale read from a file) becomes null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _print_json(data: dict) -> None:
    """Print strict JSON (RFC 8259): non-finite numbers are written as null, never NaN/Infinity."""
    try:
        text = json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere: rare, so only then walk the tree
        text = json.dumps(_json_safe(data), indent=2, default=str, allow_nan=False)
    print(text)


def _fail(msg: str) -> None:
    print(f"q9diff: error: {_clean(msg)}", file=sys.stderr)
    raise typer.Exit(2)


def _note(msg: str) -> None:
    """A line for the user on stderr (stdout stays the result, e.g. JSON)."""
    print(f"q9diff: {_clean(msg)}", file=sys.stderr)


@contextmanager
def _busy(message: str, quiet: bool = False):
    """A spinner with the elapsed time on stderr while a long phase runs; nothing in a pipe or with --json.

    Yields a function that replaces the message (e.g. which part is being compared)."""
    if quiet or not sys.stderr.isatty():
        yield lambda text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(_clean(message), total=None)
        yield lambda text: progress.update(task, description=_clean(text))


def _wrote(path: Path, what: str) -> None:
    console.print(_t(f"wrote {what}: {path}"), soft_wrap=True)


def _arch(v: int | None) -> str:
    return f"v{v}" if v else "not recorded"


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _flag(decl: str, help: str):
    """A boolean flag, shown in --help as just the flag (typer 0.29 would show `--json <bool>`)."""
    return typer.Option(False, decl, help=help, metavar="")


CANDIDATE = typer.Argument(..., metavar="CANDIDATE", help="your build: file, folder of parts or bundle")
REFERENCE = typer.Argument(..., metavar="REFERENCE", help="the known-good build, the same kind")


def _read_errors() -> tuple[type[Exception], ...]:
    """What a reader raises on bytes it cannot make sense of (construct is imported only when used)."""
    import struct

    from construct import ConstructError

    return (ValueError, IndexError, struct.error, ConstructError)


def _open(path: Path):
    from q9diff.binary import open_binary

    try:
        return open_binary(path)
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{path}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")


@app.command(cls=_Command, short_help="What a context binary holds, every byte's region.")
def inspect(
    file: Path = typer.Argument(..., metavar="FILE", help="a context binary or an EPContext .onnx"),
    as_json: bool = _flag("--json", "print the q9diff.inspect/1 JSON (strict: NaN/inf written as null)"),
    oracle: bool = _flag("--oracle", "also read libQnnSystem's BinaryInfo and flag disagreements"),
    meta: Path = typer.Option(
        None, "--meta", metavar="FILE", help="a qnn-context-binary-utility JSON as a second metadata source"
    ),
) -> None:
    """Show what a context binary holds: build, target, graphs, settings and every byte's region.

    \b
    Exit status: 0 read, 2 error."""
    from q9diff.inputs import contexts
    from q9diff.summary import inspect_summary

    _exists(file)
    try:
        found = contexts(file)
        summaries = [inspect_summary(cb) for _, cb in found]
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{file}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")
    for (_, cb), summary in zip(found, summaries):
        if oracle:
            from q9diff.crosscheck import compare_with_oracle

            try:
                summary["oracle_disagreements"] = compare_with_oracle(cb)
            except Exception as exc:  # the oracle reports its own one-line errors
                _fail(f"{file}: oracle: {exc}")
        if meta is not None:
            from q9diff.crosscheck import compare_with_utility_json

            try:
                summary["meta_disagreements"] = compare_with_utility_json(cb, meta)
            except (OSError, ValueError, RecursionError) as exc:
                _fail(f"{meta}: {exc}")
    if as_json:
        data = (
            summaries[0]
            if len(summaries) == 1
            else {
                "schema": "q9diff.inspect-set/1",
                "path": str(file),
                "contexts": summaries,
            }
        )
        _print_json(data)
        return
    for i, ((_, cb), summary) in enumerate(zip(found, summaries)):
        if i:
            console.rule()
        _print_inspect(cb, summary)


def _opt_level(recorded: int | None, option: str | None) -> str:
    """The metadata's optimizationLevel (0 = not set) beside the mode the compiler ran (options O)."""
    if recorded is None:
        return f"optimization_level unknown (options O={option or '?'})"
    if recorded == 0:
        return f"optimization_level not set (0), compiler ran O={option or '?'}"
    return f"optimization_level {recorded} (options O={option or '?'})"


def _print_inspect(cb, s: dict) -> None:
    from rich.table import Table

    from q9diff.summary import unknown_bytes
    from q9diff.tables import soc_name

    console.print(_t((s["path"], "bold"), f" {_human(s['size'])} ({s['size']} bytes)"))
    console.print(
        _t(
            f"QAIRT build {s['build_id']} · core API {s['core_api_version']}"
            f" · backend API {s['backend_api_version']}"
            f" · blob {s['context_blob_version']}"
        )
    )
    t = s["target"]
    req = t["soc_model_requested"]
    head = (
        "Target: soc_model not recorded"
        if req is None
        else f"Target: soc_model {req} ({soc_name(req)}), dsp_arch {_arch(s['dsp_arch'])}"
    )
    console.print(_t(head + (" — " + "; ".join(t["evidence"]) if t["evidence"] else "")))
    if t["generic_target"]:
        console.print(_t(("  generic target: loads everywhere, may compute wrong on device", "bold red")))
    for g in s["graphs"]:
        o = g["options"]
        console.print()
        console.print(
            _t(
                (f"graph {g['name']}", "bold"),
                f": {len(g['inputs'])} inputs, {len(g['outputs'])} outputs, {len(g['ops'])} ops",
            )
        )

        def v(key: str, value) -> str:
            return "unknown" if value is None else str(value)

        console.print(
            _t(
                f"  soc_type {o.get('soc_type', '?')} · arch {o.get('arch', '?')}"
                f" · vtcm_size {v('vtcm_size', g['vtcm_size'])}"
                f" · {_opt_level(g['optimization_level'], o.get('O'))}"
                f" · hvx_threads {v('h', g['num_hvx_threads'])} · dlbc {v('d', g['htp_dlbc'])}"
            )
        )
        console.print(
            _t(
                f"  spill_fill {v('s', g['spill_fill_buffer_size'])} · const {v('c', g['const_size'])}"
                f" · shared weights {v('w', g['shared_weights_size'])} · io {v('i', g['io_tensor_size'])}"
                f" · op data {v('o', g['op_data_size'])}"
            )
        )
    if s["unknown"]:
        reasons: dict[str, list[str]] = {}
        for field, why in s["unknown"].items():
            reasons.setdefault(why, []).append(field.rsplit(".", 1)[-1])
        for why, fields in reasons.items():
            console.print(_t((f"unknown: {', '.join(dict.fromkeys(fields))}: {why}", "yellow")))
    t = Table(title="regions", show_lines=False)
    t.add_column("region")
    t.add_column("offset", justify="right")
    t.add_column("size", justify="right")
    t.add_column("%", justify="right")
    for r in s["regions"]:
        t.add_row(_t(r["name"]), f"{r['offset']:#x}", str(r["size"]), f"{100 * r['size'] / s['size']:.1f}")
    console.print(t)
    unk = unknown_bytes(cb)
    console.print(
        f"named: {s['size'] - unk} bytes ({100 * (s['size'] - unk) / s['size']:.1f}%), unknown: {unk}"
    )
    for d in s.get("oracle_disagreements", []):
        console.print(_t(("oracle disagrees", "red"), f": {d}"))
    if "oracle_disagreements" in s and not s["oracle_disagreements"]:
        console.print("oracle (libQnnSystem) agrees on every field")
    for d in s.get("meta_disagreements", []):
        console.print(_t(("meta disagrees", "red"), f": {d}"))
    _print_packing("", s.get("packing"))


def _print_packing(side: str, notice: dict | None) -> None:
    """The single-binary weights-packing notice (q9diff.packing), when there is one."""
    if notice:
        console.print(_t(f"{side}weights packing: {notice['message']}"))


# ---- the inputs of diff and suggest: two files, or two sets of parts ----


def _exists(path: Path) -> None:
    if not path.exists():
        _fail(f"{path}: no such file or directory")


def _is_set(path: Path) -> bool:
    """A folder of parts, a Genie bundle, or one file carrying several contexts (EPContext, LiteRT)."""
    from q9diff.diff import is_set

    try:
        return is_set(path)
    except FormatError as exc:
        _fail(str(exc))


def _parts(path: Path) -> list[Path]:
    from q9diff.diff import bins_of

    try:
        parts = bins_of(path)
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        _fail(f"{path}: not a folder of parts or a Genie bundle q9diff can read ({exc})")
    if not parts:
        _fail(f"{path}: no context binaries in it (*.bin, or a genie_config.json naming ctx-bins)")
    return parts


def _inputs(candidate: Path, reference: Path) -> tuple[Path, Path]:
    """Check both inputs before anything is compared; a file against a folder of parts is compared
    with its counterpart part (same file name), or refused."""
    for p in (candidate, reference):
        _exists(p)
        if _is_set(p):
            _parts(p)
    if _is_set(candidate) == _is_set(reference):
        return candidate, reference
    file, folder = (candidate, reference) if _is_set(reference) else (reference, candidate)
    match = [p for p in _parts(folder) if p.name == file.name]
    if not match:
        names = ", ".join(p.name for p in _parts(folder))
        _fail(
            f"{file} is a file and {folder} a set of parts ({names}), none named {file.name}:"
            " give two files or two folders"
        )
    _note(f"comparing {file} with its counterpart {match[0]}")
    return (candidate, match[0]) if file == candidate else (match[0], reference)


def _swapped(candidate: Path, reference: Path, causes, command: str, sides) -> str | None:
    """A sentence when the reference looks like the broken build, naming the other order. `sides`:
    the candidate's and the reference's files as inspect JSON, or as ContextBinary."""
    from q9diff.verdict import reference_looks_wrong

    def facts(x) -> dict:
        if isinstance(x, dict):
            return x
        from q9diff.summary import target

        return {"target": target(x), "dsp_arch": x.dsp_arch}

    cands, refs = ([facts(x) for x in side] for side in sides)
    why = reference_looks_wrong(causes, cands, refs)
    if why is None:
        return None
    return f"{why}; the known-good build comes second: q9diff {command}{reference} {candidate}"


def _open_pair(a: Path, b: Path):
    from q9diff.diff import diff

    ca, cb = _open(a), _open(b)
    try:
        return diff(ca, cb)
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{a} / {b}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")


def _diff_sets(a: Path, b: Path, quiet: bool, along: dict | None = None):
    """Diff two sets part by part, showing which part is compared; with `along` (for the HTML report),
    each part's where-bytes-changed chart is drawn while its files are still mapped."""
    from q9diff.diff import diff_sets

    with _busy(f"comparing the parts of {a.name} and {b.name}", quiet) as say:

        def on_part(pa: Path, pb: Path, r) -> None:
            say(f"compared {pa.name} with {pb.name}")
            if along is not None:
                from q9diff.html import changes_along

                along[pa] = changes_along(r)

        try:
            return diff_sets(a, b, on_part=on_part)
        except FormatError as exc:
            _fail(str(exc))
        except (OSError, *_read_errors()) as exc:
            _fail(f"{a} / {b}: {exc}")


@app.command("diff", cls=_Command, short_help="Why CANDIDATE differs from REFERENCE (the main form).")
def diff_cmd(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    as_json: bool = _flag("--json", "print the q9diff.diff/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report to this file"
    ),
) -> None:
    """Why CANDIDATE differs from the known-good REFERENCE, and what to change.

    `q9diff A B` is short for `q9diff diff A B`.

    \b
    Exit status: 0 identical, 1 different, 2 error."""
    candidate, reference = _inputs(candidate, reference)
    if _is_set(candidate):
        _set_diff(candidate, reference, as_json, html_out)
    res = _open_pair(candidate, reference)
    from q9diff.diff import to_json

    swapped = _swapped(candidate, reference, res.causes, "", ([res.a], [res.b]))
    if swapped:
        _note(f"warning: {swapped}")
    if html_out is not None:
        from q9diff.html import render
        from q9diff.recipe import write_atomic

        with _busy(f"writing {html_out}", as_json):
            write_atomic(html_out, render(res))
    if as_json:
        _print_json(to_json(res))
    else:
        _print_diff(res)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
    raise typer.Exit(0 if res.identical else 1)


@app.command(cls=_Command, short_help="The config changes that close the gap; --apply makes them.")
def suggest(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    apply: list[Path] = typer.Option(
        None, "--apply", metavar="FILE", help="a recipe or htp_backend_ext_config.json to fix (repeatable)"
    ),
    dry_run: bool = _flag("--dry-run", "show the edits, write nothing"),
    recompile_: bool = _flag("--recompile", "rebuild from the fixed recipe and re-diff"),
    out: Path = typer.Option(None, "--out", metavar="DIR", help="where --recompile writes the new binaries"),
) -> None:
    """Print (and with --apply, make) the config changes that make CANDIDATE's build match REFERENCE's.

    \b
    Exit status:
      0  nothing to change
      1  something to change (also --dry-run; with --recompile: gap not closed)
      2  error, also when the REFERENCE looks like the broken build
         (the arguments swapped)"""
    candidate, reference = _inputs(candidate, reference)
    if recompile_:
        from q9diff.recipe import check_out

        check_out(out or Path("q9diff-out"), [candidate, reference])  # before --apply writes anything
    if _is_set(candidate):
        from q9diff.diff import set_to_json

        data = set_to_json(_diff_sets(candidate, reference, quiet=False))
        suggestions, identical, causes = data["suggestions"], data["identical"], data["causes"]
        pairs = [(p["a"], p["b"]) for p in data["parts"]]
    else:
        res = _open_pair(candidate, reference)
        suggestions, identical, causes = res.suggestions, res.identical, res.causes
        pairs = [(res.a, res.b)]
    swapped = _swapped(candidate, reference, causes, "suggest ", zip(*pairs))
    if swapped:
        _fail(swapped)
    _print_suggestions(suggestions)
    if not apply:
        raise typer.Exit(0 if identical else 1)
    from q9diff.apply import ApplyError, BuildFacts, plan, write_all

    facts = BuildFacts.of([a for a, _ in pairs], [b for _, b in pairs])
    edits = []
    for f in apply:
        try:
            edits.append(plan(f, suggestions, facts, named=apply))
        except ApplyError as exc:
            _fail(str(exc))
    from rich.text import Text

    for e in edits:
        block = _clean(e.unified, keep="\n\t") if e.unified else _clean(f"{e.path}: already matches")
        console.print(Text(block), soft_wrap=True)  # a patch: never wrapped, so it can be copied
    if not dry_run:
        try:
            for path, backup in write_all(edits):
                _wrote(path, f"the fixed config (the original is kept as {backup})")
        except ApplyError as exc:
            _fail(str(exc))
    if dry_run:
        console.print("--dry-run: nothing written")
        raise typer.Exit(1)
    if recompile_:
        from q9diff.recipe import is_recipe_text

        recipes = [e.path for e in edits if is_recipe_text(e.after)]
        if not recipes:
            _fail("--recompile needs a q9diff recipe among the --apply files")
        _recompile_and_check(recipes[0], out or Path("q9diff-out"), reference)


def _recompile_and_check(recipe_path: Path, out: Path, reference: Path) -> None:
    from q9diff.backends import BackendUnavailable
    from q9diff.binary import open_binary
    from q9diff.diff import SetDiff, diff, set_to_json
    from q9diff.recipe import load

    r = load(recipe_path)
    try:
        with _busy(f"compiling {recipe_path} with {r.backend} into {out}"):
            built = _build(r, r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe_path}: recompile failed: {exc}")
    console.print(
        _t(f"rebuilt {len(built)} binaries into {out} (recipe: {out / 'recipe.json'})"), soft_wrap=True
    )
    if reference.is_dir() or len(built) != 1:
        data = set_to_json(
            _diff_sets(out, reference if reference.is_dir() else reference.parent, quiet=False)
        )
    else:  # one reference binary: compare the one rebuilt part with it, not with its whole folder
        pair = (built[0], reference, diff(open_binary(built[0]), open_binary(reference)))
        data = set_to_json(SetDiff([pair], [], []))
    roots = [c["name"] for c in data["causes"] if c["role"] == "root"]
    console.print(f"new vs reference: {data['a_total']} vs {data['b_total']} bytes")
    if data["identical"]:
        console.print(
            _t(("Gap closed: the rebuilt binaries are byte-identical to the reference.", "bold green"))
        )
        raise typer.Exit(0)
    console.print(_t(f"Gap not closed; root causes left: {', '.join(roots) or 'none (data only)'}"))
    raise typer.Exit(1)


@app.command(cls=_Command, short_help="Rebuild the context binaries a recipe describes.")
def recompile(
    recipe: Path = typer.Argument(..., metavar="RECIPE", help="a q9diff recipe (q9diff.recipe/2, or /1)"),
    out: Path = typer.Option(Path("q9diff-out"), "--out", metavar="DIR", help="output directory"),
    backend: str = typer.Option(
        None, "--backend", metavar="NAME", help="ort-qnn (default), qairt or qnn-cli"
    ),
) -> None:
    """Rebuild the context binaries a recipe describes.

    \b
    Exit status: 0 built, 2 error."""
    from q9diff.backends import BackendUnavailable
    from q9diff.recipe import check_build, load

    _exists(recipe)
    r = load(recipe)
    check_build(r, out)
    try:
        with _busy(f"compiling {recipe} with {backend or r.backend} into {out}"):
            built = _build(r, backend or r.backend, out)
    except (BackendUnavailable, RuntimeError) as exc:
        _fail(f"{recipe}: {exc}")
    for b in built:
        console.print(_t(f"wrote {b}"), soft_wrap=True)
    if (out / "recipe.json").exists() and (
        r.path is None or (out / "recipe.json").resolve() != Path(r.path).resolve()
    ):
        console.print(_t(f"wrote {out / 'recipe.json'} (the recipe beside the binaries)"), soft_wrap=True)


@app.command(cls=_Command, short_help="Rebuild with the root-cause settings added one at a time.")
def steps(
    candidate: Path = CANDIDATE,
    reference: Path = REFERENCE,
    recipe: Path = typer.Option(
        None, "--recipe", metavar="FILE", help="the candidate's recipe (default: recipe.json beside it)"
    ),
    as_json: bool = _flag("--json", "print the q9diff.steps/1 JSON (non-finite numbers as null)"),
) -> None:
    """Rebuild CANDIDATE's recipe with the root-cause settings added one at a time (the seed's table):
    per step the size, the delta and the bytes changed vs REFERENCE (moved / new), and which side it is
    byte-identical to. Builds are cached ($Q9DIFF_CACHE/builds).

    \b
    Exit status:
      0  the last step is byte-identical to the reference
      1  it is not
      2  error"""
    from q9diff.backends import BackendUnavailable
    from q9diff.recipe import RecipeError
    from q9diff.runners.local import cache_root
    from q9diff.steps import run, to_json

    candidate, reference = _inputs(candidate, reference)
    try:
        with _busy("compiling", quiet=as_json) as say:
            result = run(candidate, reference, recipe, cache_root() / "builds", progress=say)
    except (FormatError, RecipeError) as exc:
        _fail(str(exc))
    except (BackendUnavailable, RuntimeError, OSError) as exc:
        _fail(f"{candidate}: steps: {exc}")
    if as_json:
        _print_json(to_json(result, candidate, reference))
    else:
        from rich.table import Table

        t = Table(title=f"steps from {_clean(candidate)} to {_clean(reference)}")
        cols = ("step", "settings added", "size", "Δ vs reference", "changed vs ref", "moved", "new", "=")
        for col in cols:
            t.add_column(col, justify="left" if col in ("settings added", "=") else "right", no_wrap=True)
        for i, st in enumerate(result):
            t.add_row(
                str(i),
                ("+ " + st.label) if st.label else "candidate's recipe",
                str(st.size),
                f"{st.delta_vs_reference:+d}",
                str(st.changed_vs_reference),
                str(st.moved),
                str(st.new),
                st.identical_to or "",
            )
        console.print(t)
        console.print(_t(f"builds kept in {cache_root() / 'builds'}"))
    raise typer.Exit(0 if result and result[-1].identical_to == "reference" else 1)


@app.command(cls=_Command, short_help="Run both builds and the CPU reference; compare outputs.")
def verify(
    candidate: Path = typer.Argument(
        ..., metavar="CANDIDATE", help="your build (file, folder or Genie bundle)"
    ),
    reference: Path = typer.Argument(
        None, metavar="REFERENCE", help="the known-good build (file, folder or Genie bundle)"
    ),
    runner: str = typer.Option(
        "local",
        "--runner",
        metavar="RUNNER",
        help="local (x86 HTP emulator), genie, or ssh://user@host[:port]",
    ),
    cpu: bool = typer.Option(
        True, "--cpu/--no-cpu", metavar="", help="also run the recipe's source ONNX on the CPU"
    ),
    recipe: Path = typer.Option(
        None, "--recipe", metavar="FILE", help="the recipe naming the source models (default: beside)"
    ),
    steps: int = typer.Option(16, "--steps", metavar="N", help="LLM: tokens to generate greedily"),
    prompt: str = typer.Option(
        None, "--prompt-ids", metavar="IDS", help="LLM: prompt token ids, e.g. 10,20,30 (default: seeded)"
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", help="seed for generated inputs and prompts"),
    inputs: Path = typer.Option(
        None, "--inputs", metavar="FILE", help="single graphs: an .npz of named input arrays"
    ),
    min_cosine: float = typer.Option(
        None,
        "--min-cosine",
        metavar="X",
        help="single graphs: pass at this cosine or more (default 0.999, 0.99 vs CPU)",
    ),
    max_rel: float = typer.Option(
        None,
        "--max-rel",
        metavar="X",
        help="single graphs: pass at this relative error or less (default 0.02, 0.1 vs CPU)",
    ),
    as_json: bool = _flag("--json", "print the q9diff.verify/1 JSON (strict: NaN/inf written as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="write a self-contained HTML report (drift per step)"
    ),
    known_hosts: Path = typer.Option(
        None, "--known-hosts", metavar="FILE", help="ssh: the known_hosts file to trust"
    ),
    identity: Path = typer.Option(None, "--identity", metavar="FILE", help="ssh: private key file"),
    remote_tool: str = typer.Option(
        "q9diff",
        "--remote-tool",
        metavar="TOOL",
        help="ssh: q9diff (worker), qnn-net-run, or genie-t2t-run (Genie bundles)",
    ),
    remote_python: str = typer.Option(
        "python3", "--remote-python", metavar="CMD", help="ssh: the EVK's Python with q9diff"
    ),
    qairt_root: str = typer.Option(
        None, "--qairt-root", metavar="DIR", help="ssh: QAIRT SDK folder on the EVK"
    ),
) -> None:
    """Run CANDIDATE (and REFERENCE, and the CPU reference) on the same inputs and compare what they compute.

    \b
    Exit status:
      0  PASS: the candidate computes what the reference does
         (or, without one, the CPU reference)
      1  FAIL
      2  error"""
    from q9diff.recipe import RecipeError
    from q9diff.runners import RunnerError
    from q9diff.verify import Tolerance, load_inputs
    from q9diff.verify import verify as run_verify

    _exists(candidate)
    if reference is not None:
        _exists(reference)
    try:
        ids = [int(x) for x in prompt.replace(",", " ").split()] if prompt else None
    except ValueError:
        _fail(f"--prompt-ids: expected token ids such as 10,20,30, got {prompt!r}")
    where = "the device" if runner.startswith("ssh://") else "the x86 HTP emulator"
    try:
        with _busy(f"running {candidate.name} on {where} (and the references)", as_json):
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
        _print_json(to_json(res))
    else:
        _print_verify(res)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
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
    from rich.table import Table

    for side in res.sides:
        console.print(_t((side.label, "bold"), f": {side.source} ({side.runner})"))
        for note in side.notes:
            console.print(_t(f"  note: {note}"))
    for note in res.notes:
        console.print(_t(f"note: {note}"))
    if res.llm is not None:
        c = res.llm
        console.print(f"LLM: prompt {list(c.prompt)} ({len(c.prompt)} tokens), greedy", soft_wrap=True)
        for label, toks in c.tokens.items():
            console.print(_t(f"  tokens {label:<10} {' '.join(map(str, toks))}"), soft_wrap=True)
        for label, text in c.texts.items():
            console.print(_t(f"  text   {label:<10} {text!r}"))
        for pair, step in c.first_divergence.items():
            console.print(
                _t(
                    f"  {pair}: "
                    + ("same tokens at every step" if step is None else f"diverge at step {step}")
                )
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
            ok = _t("yes") if o.passed else _t(("NO", "red"))
            cells = (f"{m.max_abs:.3g}", f"{m.rel:.3g}", f"{m.cosine:.6f}", ok)
            graph = o.graph if len(o.graph) <= 32 else "…" + o.graph[-31:]
            t.add_row(_t(graph), _t(o.output), _t(o.against), *cells)
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
                _t(
                    (
                        f"The compiled model leaves its CPU reference at step {cpu_div}: the binary"
                        " does not compute what the ONNX model does (quantization or conversion).",
                        "bold yellow",
                    )
                )
            )
    runner = next((s.runner for s in res.sides if s.label == "candidate"), "local")
    console.print(_t(f"reach: {RUNNER_REACH['ssh' if runner.startswith('ssh') else runner]}"))
    names = {
        "reference": "the reference",
        "emulator": "q9diff's own run of the same ctx-bins",
        "cpu": "its source model (the CPU reference)",
    }
    labels = {s.label for s in res.sides}
    judge = next(k for k in ("reference", "emulator", "cpu") if k in labels or k == "cpu")
    failed = {o.against for o in res.outputs if not o.passed}
    if res.passed:
        console.print(_t((f"PASS: the candidate computes what {names[judge]} does.", "bold green")))
    else:
        what = names["reference"] if "reference" in failed else names["cpu"] if failed else names[judge]
        console.print(_t((f"FAIL: the candidate does not compute what {what} does.", "bold red")))


def _build(r, backend: str, out: Path) -> list[Path]:
    """Compile `r` into `out` and leave the recipe beside the binaries, so `out` can be rebuilt,
    diffed and verified (the runners find it there) like any build."""
    from q9diff.backends import compile_backend
    from q9diff.recipe import dump, write_atomic

    built = compile_backend(backend).compile(r, out)
    target = out / "recipe.json"
    if r.path is not None and target.resolve() == Path(r.path).resolve():
        return built  # building in place: the recipe is already there, and inputs are never rewritten
    from q9diff.recipe import is_recipe_text

    if target.exists() and not is_recipe_text(target.read_text(errors="replace")):
        console.print(_t(f"note: {target} exists and is not a q9diff recipe; left as it was"))
        return built
    write_atomic(target, dump(r.rebased(out)))
    return built


def _set_diff(a: Path, b: Path, as_json: bool, html_out: Path | None = None) -> None:
    from q9diff.diff import set_to_json

    along: dict | None = {} if html_out is not None else None
    sd = _diff_sets(a, b, quiet=as_json, along=along)
    if not sd.pairs and not sd.unpaired_a and not sd.unpaired_b:
        _fail(f"{a} / {b}: no context binaries (*.bin or genie_config.json ctx-bins) found")
    data = set_to_json(sd)
    from q9diff.verdict import sides

    swapped = _swapped(a, b, data["causes"], "", sides(data))
    if swapped:
        _note(f"warning: {swapped}")
    if html_out is not None:
        from q9diff.html import render_set
        from q9diff.recipe import write_atomic

        with _busy(f"writing {html_out}", as_json):
            write_atomic(html_out, render_set(sd, data, along))
    if as_json:
        _print_json(data)
        if html_out is not None:
            _note(f"wrote the HTML report: {html_out}")
        raise typer.Exit(0 if sd.identical else 1)
    from q9diff.verdict import root_line

    console.print(_t((f"Root causes over the set: {root_line(data['causes']) or 'none'}", "bold")))
    console.print(
        f"set: {len(sd.pairs) + len(sd.unpaired_a)} vs {len(sd.pairs) + len(sd.unpaired_b)} parts,"
        f" {data['a_total']} → {data['b_total']} bytes ({data['size_delta']:+d})"
    )
    for pa, pb, r in sd.pairs:
        console.rule(_t(f"{pa.name} vs {pb.name}"))
        _print_diff(r)
    for p in sd.unpaired_a + sd.unpaired_b:
        console.print(_t(("unpaired part", "red"), f": {p}"))
    if html_out is not None:
        _wrote(html_out, "the HTML report")
    raise typer.Exit(0 if sd.identical else 1)


def _print_suggestions(suggestions: list[dict]) -> None:
    """The fix, one copyable line per tool: never wrapped by us (the terminal may fold it visually)."""
    if not suggestions:
        console.print("No setting to change.")
    for s in suggestions:
        t = s["targets"]
        lines = [f"  qairt:                  {t['qairt']}"]
        lines += [
            f"  htp_backend_ext_config: {k} = {json.dumps(v)}" for k, v in t["htp_backend_ext_config"].items()
        ]
        lines += [f"  ONNX Runtime QNN EP:    {k}={v}" for k, v in t.get("ort_qnn", {}).items()]
        lines.append(f"  qnn-context-binary-generator: {t['qnn_cli']}")
        console.print(_t((f"{s['setting']} = {s['value']}", "bold")), soft_wrap=True)
        for line in lines:
            console.print(_t(line), soft_wrap=True)


def _print_diff(res) -> None:
    from rich.table import Table

    from q9diff.verdict import root_line, soc_note, warnings

    a, b = res.a, res.b
    if res.identical:
        console.print("Identical: no difference in any byte.")
        return
    if root_line(res.causes):
        extra = f" ({soc_note(res.causes)})" if soc_note(res.causes) else ""
        console.print(_t((f"Root cause: {root_line(res.causes)}{extra}", "bold")))
    else:
        console.print(_t(("No setting differs; only effects or data.", "bold")))
    for w in warnings(res.causes):
        console.print(_t((w, "bold red")))
    console.print(f"size: {a.size} → {b.size} bytes ({b.size - a.size:+d})")
    from q9diff.diff import to_json

    data = to_json(res)  # computed while both files were mapped (a set releases them once compared)
    for side, key in (("candidate ", "a"), ("reference ", "b")):
        _print_packing(side, data[key].get("packing"))
    _print_causes(res.causes)
    _print_attribution(res)
    console.print(_t(("Fix", "bold")))
    _print_suggestions(res.suggestions)
    graphs = [g.name for g in a.graphs]
    if any(r["name"].startswith("PICKLE[") for r in res.regions if r["delta"] or r["changed_bytes"]):
        named = ", ".join(f"PICKLE[{i}] is graph {n}" for i, n in enumerate(graphs))
        console.print(_t(f"regions that changed (every byte of both files; {named}):"))
    else:
        console.print("regions that changed (every byte of both files):")
    rt = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, header_style="bold underline")
    for col in ("region", "candidate", "reference", "delta", "changed", "moved", "new"):
        left = col == "region"
        rt.add_column(col, justify="left" if left else "right", no_wrap=not left, overflow="fold")
    part = None
    for r in res.regions:
        if not (r["delta"] or r["changed_bytes"]):
            continue
        # One heading per graph's pickle: `PICKLE[0]/inner/op_list` shows as `  inner/op_list` below
        # `PICKLE[0]`, so the names fit 80 columns whole.
        head, _, rest = r["name"].partition("/")
        if head.startswith("PICKLE[") and rest:
            if head != part:
                rt.add_row(_t(head))
            part, name = head, "  " + rest
        else:
            part, name = None, r["name"]
        rt.add_row(
            _t(name),
            str(r["a_size"]),
            str(r["b_size"]),
            f"{r['delta']:+d}",
            str(r["changed_bytes"]),
            str(r["moved_bytes"]),
            str(r["new_bytes"]),
        )
    rt.add_row(
        "total",
        str(a.size),
        str(b.size),
        f"{b.size - a.size:+d}",
        str(sum(r["changed_bytes"] for r in res.regions)),
        str(sum(r["moved_bytes"] for r in res.regions)),
        str(sum(r["new_bytes"] for r in res.regions)),
        end_section=False,
    )
    console.print(rt)


def _print_attribution(res) -> None:
    """Every changed byte and byte of size delta in one row; the rows add up to the totals."""
    from rich.table import Table

    if res.weights_verdict:
        console.print(_t((res.weights_verdict, "bold")))
    at = Table(title="where the changed bytes went (rows add up)")
    for col in ("effect", "changed bytes", "size delta"):
        at.add_column(col, justify="left" if col == "effect" else "right")
    for row in res.attribution:
        at.add_row(_t(row["bucket"]), str(row["changed_bytes"]), f"{row['size_delta']:+d}")
    at.add_row(
        "total",
        str(sum(r["changed_bytes"] for r in res.attribution)),
        f"{sum(r['size_delta'] for r in res.attribution):+d}",
    )
    console.print(at)


def _cause_values(c) -> tuple[str, str]:
    if c.name == "compiler_options":  # a and b are both the count of options that differ
        return f"{c.a} options differ", ""
    return _cell(c.a), _cell(c.b)


def _print_causes(causes) -> None:
    """A table on a wide terminal; on a narrow one, each cause on a line and its evidence below it,
    wrapped at word boundaries (a table's evidence column would be a few characters wide)."""
    import textwrap

    from rich.table import Table

    if console.width < 120:
        console.print(_t(("causes", "bold")))
        for c in causes:
            ca, cb = _cause_values(c)
            change = ca if c.name == "compiler_options" else f"{ca} → {cb}"
            nbytes = "" if c.bytes is None else f", {c.bytes} bytes"
            console.print(_t("  ", (c.name, "bold"), f" ({c.role}): {change}{nbytes}"))
            evidence = _clip("; ".join(c.evidence), 400)
            for line in textwrap.wrap(
                evidence, console.width - 6, break_long_words=False, break_on_hyphens=False
            ):
                console.print(_t(f"      {line}"), soft_wrap=True)
        return
    t = Table(title="causes")
    t.add_column("cause", no_wrap=True)
    t.add_column("role", no_wrap=True)
    t.add_column("candidate", overflow="fold")
    t.add_column("reference", overflow="fold")
    t.add_column("bytes", justify="right", no_wrap=True)
    t.add_column("evidence", ratio=1)
    for c in causes:
        ca, cb = _cause_values(c)
        nbytes = "" if c.bytes is None else str(c.bytes)
        t.add_row(_t(c.name), _t(c.role), _t(ca), _t(cb), nbytes, _t(_clip("; ".join(c.evidence), 400)))
    console.print(t)


def _clip(s: str, n: int) -> str:
    """At most n characters, cut at a word boundary with an ellipsis, never mid-word."""
    if len(s) <= n:
        return s
    cut = s[: n - 1]
    space = max(cut.rfind(" "), cut.rfind(","))
    return (cut[:space] if space > n // 2 else cut).rstrip(" ,;") + " …"


@app.command(cls=_Command, short_help="Check a whole Genie bundle: the nine hypotheses, the two places.")
def doctor(
    bundle: Path = typer.Argument(
        ..., metavar="BUNDLE", help="a Genie bundle: its folder or its genie_config.json"
    ),
    reference: Path = typer.Option(None, "--reference", metavar="REF_BUNDLE", help="the known-good bundle"),
    as_json: bool = _flag("--json", "print the q9diff.doctor/1 JSON (non-finite numbers as null)"),
    html_out: Path = typer.Option(
        None, "--html", metavar="FILE", help="also write a self-contained HTML report"
    ),
) -> None:
    """Check a whole Genie bundle: ctx-bins, vocabulary, context, the nine hypotheses, the two places.

    \b
    Exit status:
      0  no finding is an error
      1  a finding is an error
      2  the bundle cannot be read"""
    from q9diff.bundle import BundleError
    from q9diff.doctor import print_report, render_html, run

    try:
        report = run(bundle, reference)
    except BundleError as exc:
        _fail(str(exc))
    if html_out is not None:
        from q9diff.recipe import write_atomic

        try:
            write_atomic(html_out, render_html(report))
        except OSError as exc:
            _fail(f"{html_out}: cannot write the HTML report ({exc.strerror})")
    if as_json:
        _print_json(report.to_json())
    else:
        print_report(report, console)
    if html_out is not None:
        _wrote(html_out, "the HTML report") if not as_json else _note(f"wrote the HTML report: {html_out}")
    raise typer.Exit(report.exit_code)


def _cell(v) -> str:
    s = str(v)
    return s if len(s) <= 30 else s[:29] + "…"


COMMANDS = {"inspect", "diff", "suggest", "recompile", "verify", "steps", "doctor", "--help", "-h"}


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] not in COMMANDS:
        argv = ["diff", *argv]
    try:
        app(args=argv, prog_name="q9diff")
    except Exception as exc:  # the last line of defence: one line, exit 2, never a traceback
        from q9diff.recipe import RecipeError  # imported only now: --help must not pay for it

        if isinstance(exc, (FormatError, RecipeError)):
            print(f"q9diff: error: {_clean(exc)}", file=sys.stderr)
            sys.exit(2)
        name = type(exc).__name__
        print(f"q9diff: error: internal error ({name}: {_clean(exc)}); please report it", file=sys.stderr)
        sys.exit(2)
