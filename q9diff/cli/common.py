"""What every command shares: the app, its commands' class (which turns every `Q9Error` into one line
on stderr and exit status 2: the one place errors become statuses), the options they share, the checks
on where reports go, and the writing of results (JSON, reports, notes on stderr, progress)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import typer
from typer.core import TyperCommand, TyperGroup

from q9diff import __version__
from q9diff.errors import Q9Error, printable
from q9diff.present.terminal import wrote

MAIN_HELP = """Forensics for QNN HTP context binaries.

\b
The main form (short for q9diff diff CANDIDATE REFERENCE):
  q9diff CANDIDATE REFERENCE
why your build differs from the known-good REFERENCE, and what to change.
Each is a context binary, a folder of parts, a Genie bundle, an EPContext
.onnx, a LiteRT .tflite or an ExecuTorch .pte. -v: also the region tables;
-q: only the status.

\b
Exit status, every command:
  0  same, nothing to change, verify PASS (where it ran)
  1  different, something to change, verify FAIL
  2  error: one line on stderr naming the file"""


class CommandError(Q9Error):
    """What the command line asks cannot be done: options that do not go together, a report that would
    overwrite an input or cannot be written. One line, exit status 2, as every `Q9Error`."""


class OutputError(Q9Error):
    """Standard output would not take the result (a full disk, an I/O error): the one line says so."""


class _HelpFlag:
    """Shows --help as a flag, not `--help <bool>` (the type column some typer releases print)."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class Command(_HelpFlag, TyperCommand):
    """Every command's class: an error the user can act on (`Q9Error`) is one line on stderr naming the
    file, and exit status 2. A write to standard output that failed (`OutputError`) is left to the
    program's last line of defence (q9diff.cli.main), which stops writing there first."""

    def invoke(self, ctx):
        try:
            _nameable(self, ctx.params)
            return super().invoke(ctx)
        except OutputError:
            raise
        except Q9Error as exc:
            error_line(str(exc))
            raise typer.Exit(2) from None


def _nameable(command, params: dict) -> None:
    """Every path argument is a name the system can look up, before any work (q9diff.inputs.nameable):
    a part over 255 bytes is one line, not an OSError from wherever it is first stat'ed."""
    from typer.models import TyperPath

    for param in command.params:
        value = params.get(param.name) if isinstance(param.type, TyperPath) else None
        for p in value if isinstance(value, (list, tuple)) else (value,):
            if p is not None and str(p) != "-":
                from q9diff.inputs import nameable  # start-up: the readers load where a path is given

                nameable(p)


class Group(_HelpFlag, TyperGroup):
    pass


app = typer.Typer(  # plain click help: half the start-up of rich panels (scripts/bench.py)
    cls=Group,
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


def error_line(message: str) -> None:
    """`q9diff: error: MESSAGE` on stderr, cleaned of control characters. A closed stderr (`2>&-`) loses
    the line, not the status."""
    if sys.stderr is None:
        return
    try:
        print(f"q9diff: error: {printable(message)}", file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def print_json(data: dict) -> None:
    """A result as `--json` prints it (strict JSON: non-finite numbers as null)."""
    from q9diff.present.as_json import json_text  # start-up: present.as_json

    print(json_text(data))


def note(msg: str) -> None:
    """A line for the user on stderr (stdout stays the result, e.g. JSON)."""
    print(f"q9diff: {printable(msg)}", file=sys.stderr)


@contextmanager
def busy(message: str, quiet: bool = False):
    """A spinner with the elapsed time on stderr while a long phase runs; nothing in a pipe or with --json.

    Yields a function that replaces the message (e.g. which part is being compared)."""
    if quiet or not sys.stderr.isatty():
        yield lambda text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(printable(message), total=None)
        yield lambda text: progress.update(task, description=printable(text))


def flag(decl: str, help: str, short: str | None = None):
    """A boolean flag, shown in --help as just the flag (some typer releases show `--json <bool>`);
    `short` is its one-letter form (`-v`)."""
    return typer.Option(False, decl, *([short] if short else []), help=help, metavar="")


CANDIDATE = typer.Argument(..., metavar="CANDIDATE", help="your build: file, folder of parts or bundle")


REFERENCE = typer.Argument(..., metavar="REFERENCE", help="the known-good build, the same kind")


def report_path(
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
        raise CommandError(f"{flag} {out} is a folder: name the report's file, e.g. {out / 'report.html'}")
    if out.is_symlink() or (out.exists() and not out.is_file()):
        raise CommandError(
            f"{flag} {out} is not a regular file (a device or a link): name a new file or a regular one"
        )
    for given in files:
        if target == given.resolve():
            raise CommandError(f"{flag} {out} would overwrite {given}, an input: choose another file")
    from q9diff.read.openers import split_name  # start-up: read.openers, construct

    for given in inputs:
        if given is None:
            continue
        src = split_name(given)[0].resolve()  # FILE#NODE: a context inside FILE
        folder = src.parent if src.suffix == ".json" else src
        if target == src or (folder.is_dir() and folder in target.parents and target.exists()):
            what = given if target == src else target
            raise CommandError(f"{flag} {out} would overwrite {what}, an input: choose another file")


def report_not_read(out: Path | None, read: list[Path], flag: str = "--html") -> None:
    """Refuse a --html path that is one of the files the command read, whatever their names (a ctx-bin,
    a tokenizer, a config of any extension), once it knows them and before the report is written."""
    if out is None:
        return
    target = out.resolve()
    for path in read:
        if Path(path).resolve() == target:
            raise CommandError(f"{flag} {out} would overwrite {path}, an input: choose another file")


# --target DEVICE where a reference would go (diff, suggest; doctor takes it too), and --runtime VERSION
TARGET = typer.Option(
    None,
    "--target",
    metavar="DEVICE",
    help="the device the build is for (QCS9100, SA8775P, Snapdragon 8 Gen 3, SM8650, a soc_model id): "
    "judge it against what AI Hub's builds for it use, with no reference",
)


TOOLCHAIN = typer.Option(
    None,
    "--toolchain",
    metavar="FORM",
    help="the fix's lines for this toolchain: qairt, ext (htp_backend_ext_config.json), ort (ONNX Runtime "
    "QNN EP), qnn-cli, executorch, or all (default: the one the candidate's own files say)",
)


# What people call a toolchain, for the form's name it has here (a `did you mean` of --toolchain).
TOOLCHAIN_WORDS = {"onnx": "ort", "onnxruntime": "ort", "json": "ext", "qnn": "qnn-cli", "et": "executorch"}


def check_toolchain(asked: str | None) -> None:
    """--toolchain names a form of the fix, or `all`; anything else is refused in one line."""
    from q9diff.compare.toolchains import LABELS  # start-up: compare.toolchains

    if asked not in (None, "all") and asked not in LABELS:
        import difflib

        forms = [*LABELS, "all"]
        close = difflib.get_close_matches(asked.lower(), forms, n=1, cutoff=0.6)
        close = [TOOLCHAIN_WORDS[asked.lower()]] if asked.lower() in TOOLCHAIN_WORDS else close
        meant = f"; did you mean --toolchain {close[0]}?" if close else ""
        raise CommandError(f"--toolchain {asked}: expected one of {', '.join(forms)}{meant}")


def toolchain_chosen(data: dict, asked: str | None) -> None:
    """--toolchain over what the candidate's files say: the fix leads with that form (`all`: every form)."""
    check_toolchain(asked)
    if asked is not None:
        data["toolchain"] = {"form": asked, "why": "--toolchain"}


RUNTIME = typer.Option(
    None,
    "--runtime",
    metavar="VERSION",
    help="the QAIRT runtime the build must load on (2.48, QAIRT 2.48.40, v2.48), or the path of a runtime "
    "library (libQnnHtp.so, libGenie.so) or of a folder that ships one: say whether each part loads there",
)


def build_into(r, backend: str, out: Path) -> list[Path]:
    """Compile recipe `r` into `out` and leave the recipe beside the binaries, so `out` can be rebuilt,
    diffed and verified (the runners find it there) like any build (recompile, suggest --recompile)."""
    from dataclasses import replace

    from q9diff.backends.registry import compile_backend  # start-up: backends.registry
    from q9diff.recipes.recipe import dump, is_recipe_text, write_atomic  # start-up: recipes.recipe

    compiler = compile_backend(backend)
    built = compiler.compile(r, out)
    compiled = getattr(compiler, "compiled", None)  # what this build was made with, not the recipe's build
    r = replace(r, made_with=compiled[0].made_with if compiled else None)
    target = out / "recipe.json"
    if r.path is not None and target.resolve() == Path(r.path).resolve():
        return built  # building in place: the recipe is already there, and inputs are never rewritten
    if target.exists() and not is_recipe_text(target.read_text(errors="replace")):
        from q9diff.present.terminal_build import print_recipe_kept  # start-up: present.terminal_build

        print_recipe_kept(target)
        return built
    write_atomic(target, dump(r.rebased(out)))
    return built


MARKDOWN = typer.Option(
    None,
    "--markdown",
    metavar="FILE",
    help="write the report as Markdown (CI summaries, PR comments); - for stdout",
)


def write_reports(data: dict, html_out: Path | None, md_out: Path | None) -> None:
    """Write the HTML and Markdown of a result as `--json` gives it (q9diff.present.as_json.as_saved);
    `md_out` '-' is stdout."""
    if html_out is None and md_out is None:
        return
    from q9diff.present.reports import renderers  # start-up: present.reports
    from q9diff.recipes.recipe import write_atomic  # start-up: recipes.recipe

    draw_html, draw_md = renderers(data)
    for out, draw, what in ((html_out, draw_html, "HTML"), (md_out, draw_md, "Markdown")):
        if out is None:
            continue
        if str(out) == "-":
            sys.stdout.write(draw())
            continue
        try:
            write_atomic(out, draw())
        except OSError as exc:
            raise CommandError(f"{out}: cannot write the {what} report ({exc.strerror})") from None


def said(html_out: Path | None, md_out: Path | None, to_stderr: bool) -> None:
    """Say which report files were written (on stderr when stdout carries JSON or Markdown)."""
    for out, what in ((html_out, "the HTML report"), (md_out, "the Markdown report")):
        if out is not None and str(out) != "-":
            note(f"wrote {what}: {out}") if to_stderr else wrote(out, what)


def stdout_once(as_json: bool, md_out: Path | None, html_out: Path | None = None) -> None:
    """Refuse, before any work, two outputs in one place: JSON and Markdown both on stdout, or the
    HTML and the Markdown report in one file."""
    if as_json and md_out is not None and str(md_out) == "-":
        raise CommandError("--json and --markdown - both write to stdout: give --markdown a file")
    if html_out is not None and md_out is not None and str(md_out) != "-":
        if html_out.resolve() == md_out.resolve():
            raise CommandError(f"--html and --markdown name one file, {md_out}: give each its own")
