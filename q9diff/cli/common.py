"""What every command shares: the app, the terminal (cleaned strings, one-line errors, progress) and
opening inputs."""

from __future__ import annotations

import json
import math
import sys
from contextlib import contextmanager
from pathlib import Path

import typer
from typer.core import TyperCommand, TyperGroup

from q9diff.errors import FormatError, printable

MAIN_HELP = """Forensics for QNN HTP context binaries.

\b
The main form (short for q9diff diff CANDIDATE REFERENCE):
  q9diff CANDIDATE REFERENCE
why your build differs from the known-good REFERENCE, and what to change.
Each is a context binary, a folder of parts, a Genie bundle, an EPContext
.onnx or a LiteRT .tflite. -v: also the region tables; -q: only the status.

\b
Exit status, every command:
  0  same, nothing to change, verify PASS (where it ran)
  1  different, something to change, verify FAIL
  2  error: one line on stderr naming the file"""


class _HelpFlag:
    """Shows --help as a flag, not `--help <bool>` (the type column some typer releases print)."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class _Command(_HelpFlag, TyperCommand):
    pass


class _Group(_HelpFlag, TyperGroup):
    pass


app = typer.Typer(  # plain click help: half the start-up of rich panels (scripts/bench.py)
    cls=_Group,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help=MAIN_HELP,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def embedded_qairt() -> str | None:
    """`QAIRT 2.51.0 (onnxruntime-qnn 2.7.0)`: the compiler and emulator q9diff runs, read from the
    package's build info file as text (importing onnxruntime_qnn would load ONNX Runtime), or None."""
    import ast
    from importlib.util import find_spec

    try:
        spec = find_spec("onnxruntime_qnn")
        folder = Path(spec.origin).parent if spec and spec.origin else None
        tree = ast.parse((folder / "build_and_package_info.py").read_text()) if folder else None
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    values = {
        t.id: node.value.value
        for node in (tree.body if tree else [])
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    if "qnn_version" not in values:
        return None
    package = f" (onnxruntime-qnn {values['__version__']})" if "__version__" in values else ""
    return f"QAIRT {values['qnn_version']}{package}"


def _version(value: bool) -> None:
    if value:
        from q9diff import __version__

        qairt = embedded_qairt()
        print(f"q9diff {__version__}" + (f"\nembedded compiler and emulator: {qairt}" if qairt else ""))
        raise typer.Exit(0)


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_version, metavar="", help="print the version and exit"
    ),
) -> None:
    """The options before a command; --version answers and exits."""


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


_clean = printable  # the one escape of strings from files (q9diff.errors), under the CLI's short name


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


def _json_text(data: dict) -> str:
    """Strict JSON (RFC 8259): non-finite numbers are written as null, never NaN/Infinity."""
    try:
        return json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere: rare, so only then walk the tree
        return json.dumps(_json_safe(data), indent=2, default=str, allow_nan=False)


def _print_json(data: dict) -> None:
    print(_json_text(data))


def _as_saved(data: dict) -> dict:
    """A result as `--json` saves it and `q9diff report` reads it back: a report written now and one
    drawn later from the saved JSON are then drawn from the same values. Plain values are copied as
    JSON gives them back (0.02 s, not a 1 s dump and load of a seed-scale set: saved.plain_copy)."""
    from q9diff.present.saved import NotPlain, plain_copy

    try:
        return plain_copy(data)
    except NotPlain:  # a NaN, a Path, a non-str key...: JSON's own values
        return json.loads(_json_text(data))


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


def _flag(decl: str, help: str, short: str | None = None):
    """A boolean flag, shown in --help as just the flag (some typer releases show `--json <bool>`);
    `short` is its one-letter form (`-v`)."""
    return typer.Option(False, decl, *([short] if short else []), help=help, metavar="")


CANDIDATE = typer.Argument(..., metavar="CANDIDATE", help="your build: file, folder of parts or bundle")


REFERENCE = typer.Argument(..., metavar="REFERENCE", help="the known-good build, the same kind")


def _report_path(
    out: Path | None, inputs: list[Path | None], flag: str = "--html", files: tuple[Path, ...] = ()
) -> None:
    """Refuse a --html path before any work when writing there would change an input: the input file
    itself, or a file that already exists inside an input folder (a part, a config, a tokenizer; a
    config's folder counts, since the config names files beside it); `files` are inputs that name no
    file beside them (a saved result), refused only themselves. A new file beside the parts is fine;
    a folder, a device or a link is not a report's file."""
    if out is None:
        return
    target = out.resolve()
    if target.is_dir():
        _fail(f"{flag} {out} is a folder: name the report's file, e.g. {out / 'report.html'}")
    if out.is_symlink() or (out.exists() and not out.is_file()):
        _fail(f"{flag} {out} is not a regular file (a device or a link): name a new file or a regular one")
    for given in files:
        if target == given.resolve():
            _fail(f"{flag} {out} would overwrite {given}, an input: choose another file")
    for given in inputs:
        if given is None:
            continue
        src = given
        if not given.exists() and "#" in given.name:  # FILE#NODE: a context inside FILE
            src = given.with_name(given.name.rsplit("#", 1)[0])
        src = src.resolve()
        folder = src.parent if src.suffix == ".json" else src
        if target == src or (folder.is_dir() and folder in target.parents and target.exists()):
            what = given if target == src else target
            _fail(f"{flag} {out} would overwrite {what}, an input: choose another file")


def _report_not_read(out: Path | None, read: list[Path], flag: str = "--html") -> None:
    """Refuse a --html path that is one of the files the command read, whatever their names (a ctx-bin,
    a tokenizer, a config of any extension), once it knows them and before the report is written."""
    if out is None:
        return
    target = out.resolve()
    for path in read:
        if Path(path).resolve() == target:
            _fail(f"{flag} {out} would overwrite {path}, an input: choose another file")


def _read_errors() -> tuple[type[Exception], ...]:
    """What a reader raises on bytes it cannot make sense of."""
    import struct

    return (ValueError, IndexError, struct.error)


def _open(path: Path):
    from q9diff.format.openers import open_binary

    try:
        return open_binary(path)
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{path}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")


def _print_packing(side: str, notice: dict | None) -> None:
    """The single-binary weights-packing notice (q9diff.compare.packing), when there is one."""
    if notice:
        console.print(_t(f"{side}weights packing: {notice['message']}"))


def _exists(path: Path) -> None:
    """The path exists, or names one context of a file that does (`FILE#NAME`, as sets list them)."""
    if path.exists():
        return
    if "#" in path.name and path.with_name(path.name.rsplit("#", 1)[0]).is_file():
        return
    _fail(f"{path}: no such file or directory")


def _is_set(path: Path) -> bool:
    """A folder of parts, a Genie bundle, or one file carrying several contexts (EPContext, LiteRT)."""
    from q9diff.kinds import is_set

    try:
        return is_set(path)
    except FormatError as exc:
        _fail(str(exc))


def _parts(path: Path) -> list[Path]:
    from q9diff.genie.config import ConfigError
    from q9diff.kinds import parts_of

    try:
        parts = parts_of(path)
    except (ConfigError, FormatError) as exc:
        _fail(str(exc))
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        _fail(f"{path}: not a folder of parts or a Genie bundle q9diff can read ({exc})")
    if not parts:
        from q9diff.genie.config import dialog_configs

        configs = dialog_configs(path) if path.is_dir() else []
        if len(configs) > 1:
            names = ", ".join(p.name for p in configs)
            _fail(f"{path}: several Genie configs ({names}) and no *.bin in it: give the config file itself")
        _fail(f"{path}: no context binaries in it (*.bin, or a Genie config naming ctx-bins)")
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
    from q9diff.present.verdict import reference_looks_wrong

    def facts(x) -> dict:
        if isinstance(x, dict):
            return x
        from q9diff.compare.summary import target

        return {"target": target(x), "dsp_arch": x.dsp_arch}

    cands, refs = ([facts(x) for x in side] for side in sides)
    why = reference_looks_wrong(causes, cands, refs)
    if why is None:
        return None
    from shlex import quote  # a line to copy: a path with a space or a ; stays one argument

    swapped = f"{quote(str(reference))} {quote(str(candidate))}"
    return f"{why}; the known-good build comes second: q9diff {command}{swapped}"


def _open_pair(a: Path, b: Path):
    from q9diff.compare.diff import diff

    ca, cb = _open(a), _open(b)
    try:
        return diff(ca, cb)
    except FormatError as exc:
        _fail(str(exc))
    except _read_errors() as exc:
        _fail(f"{a} / {b}: not a context binary q9diff can read ({type(exc).__name__}: {exc})")


def _diff_sets(a: Path, b: Path, quiet: bool):
    """Diff two sets part by part, showing which part is compared."""
    from q9diff.compare.diff import diff_sets

    with _busy(f"comparing the parts of {a.name} and {b.name}", quiet) as say:

        def on_part(pa: Path, pb: Path, r) -> None:
            say(f"compared {pa.name} with {pb.name}")

        try:
            return diff_sets(a, b, on_part=on_part)
        except FormatError as exc:
            _fail(str(exc))
        except (OSError, *_read_errors()) as exc:
            _fail(f"{a} / {b}: {exc}")


def _build(r, backend: str, out: Path) -> list[Path]:
    """Compile `r` into `out` and leave the recipe beside the binaries, so `out` can be rebuilt,
    diffed and verified (the runners find it there) like any build."""
    from q9diff.backends.registry import compile_backend
    from q9diff.recipes.recipe import dump, write_atomic

    built = compile_backend(backend).compile(r, out)
    target = out / "recipe.json"
    if r.path is not None and target.resolve() == Path(r.path).resolve():
        return built  # building in place: the recipe is already there, and inputs are never rewritten
    from q9diff.recipes.recipe import is_recipe_text

    if target.exists() and not is_recipe_text(target.read_text(errors="replace")):
        console.print(_t(f"note: {target} exists and is not a q9diff recipe; left as it was"))
        return built
    write_atomic(target, dump(r.rebased(out)))
    return built


def _print_suggestions(suggestions: list[dict]) -> None:
    """The fix, one copyable line per tool: never wrapped by us (the terminal may fold it visually)."""
    from q9diff.units import config_value

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
        heading = f"{s['setting']} = {config_value(s['setting'], s['value'])}"
        console.print(_t((heading, "bold")), soft_wrap=True)
        for line in lines:
            console.print(_t(line), soft_wrap=True)


MARKDOWN = typer.Option(
    None,
    "--markdown",
    metavar="FILE",
    help="write the report as Markdown (CI summaries, PR comments); - for stdout",
)


def _renderers(schema: str, data: dict):
    """(html, markdown) of a checked saved result."""
    from q9diff.present import html, markdown
    from q9diff.present import saved as s

    if schema == s.DIFF:
        return (lambda: html.render(data)), (lambda: markdown.render(data))
    if schema == s.SET:
        return (lambda: html.render_set(data)), (lambda: markdown.render_set(data))
    if schema == s.VERIFY:
        res = s.verify_result(data)
        return (lambda: html.render_verify(res)), (lambda: markdown.render_verify(res))
    if schema == s.TARGET:
        from q9diff.present.pages import render_target

        return (lambda: render_target(data)), (lambda: markdown.render_target(data))
    from q9diff.doctor.run import DoctorResult
    from q9diff.present.doctor import render_doctor

    result = DoctorResult.from_json(data)
    return (lambda: render_doctor(result)), (lambda: markdown.render_doctor(result))


def write_reports(data: dict, html_out: Path | None, md_out: Path | None) -> None:
    """Write the HTML and Markdown of a result as `--json` gives it (`_as_saved`); `md_out` '-' is stdout."""
    if html_out is None and md_out is None:
        return
    from q9diff.recipes.recipe import write_atomic

    draw_html, draw_md = _renderers(data["schema"], data)
    for out, draw, what in ((html_out, draw_html, "HTML"), (md_out, draw_md, "Markdown")):
        if out is None:
            continue
        if str(out) == "-":
            sys.stdout.write(draw())
            continue
        try:
            write_atomic(out, draw())
        except OSError as exc:
            _fail(f"{out}: cannot write the {what} report ({exc.strerror})")


def said(html_out: Path | None, md_out: Path | None, to_stderr: bool) -> None:
    """Say which report files were written (on stderr when stdout carries JSON or Markdown)."""
    for out, what in ((html_out, "the HTML report"), (md_out, "the Markdown report")):
        if out is not None and str(out) != "-":
            _note(f"wrote {what}: {out}") if to_stderr else _wrote(out, what)


def stdout_once(as_json: bool, md_out: Path | None, html_out: Path | None = None) -> None:
    """Refuse, before any work, two outputs in one place: JSON and Markdown both on stdout, or the
    HTML and the Markdown report in one file."""
    if as_json and md_out is not None and str(md_out) == "-":
        _fail("--json and --markdown - both write to stdout: give --markdown a file")
    if html_out is not None and md_out is not None and str(md_out) != "-":
        if html_out.resolve() == md_out.resolve():
            _fail(f"--html and --markdown name one file, {md_out}: give each its own")
