"""Hostile input: how q9diff starts its Python children, and which paths a file may make it touch.

Binaries, bundles and recipes come from elsewhere, so:
- a Python child (the oracle, the run worker, the compile and Genie children) starts isolated
  (`-I`: no working directory, no user site, no PYTHON* variables on its path) in a working directory
  q9diff chose, and imports q9diff from the folder this q9diff was loaded from, named explicitly;
- a path read from a file is a request, not a permission: it is resolved (symlinks followed) and must
  stay inside the folder it belongs to before anything reads, writes or pushes it;
- a name read from a file that becomes a file name (a part's output, a graph's name) is one plain
  relative name, never `..` or an absolute path;
- a child that loads ONNX Runtime or Qualcomm's libraries leaves nothing behind and sends nothing: its
  TMPDIR is a private folder removed with the child's work, and ONNX Runtime's telemetry is off.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from q9diff.errors import Q9Error


class PathRefused(Q9Error, ValueError):
    """A path from a file leaves the folder it belongs to; the message names the file and the path."""


# ONNX Runtime 1.32's opt-out on Linux (onnxruntime-qnn 2.7.0 ships a build with its 1DS telemetry), read
# once when the library initializes: no uploader, events, device id or offline cache (microsoft/onnxruntime
# PR 27379). Measured here: without it, every process that loads onnxruntime writes $TMPDIR/.ses and
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}; with it, nothing.
# `onnxruntime.disable_telemetry_events()` alone, called after the import, still leaves all three.
ORT_TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1"}


def no_telemetry() -> None:
    """Call before this process imports onnxruntime: the switch is read at its initialization."""
    os.environ.update(ORT_TELEMETRY_OFF)


def child_env(work: str | os.PathLike, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this environment) for a child that loads ONNX Runtime or Qualcomm's libraries:
    TMPDIR (and TMP, TEMP) is `work`/tmp, made here, so whatever they leave goes when the caller removes
    its private `work` folder; and ONNX Runtime's telemetry is off."""
    tmp = Path(work) / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ if base is None else base)
    env.update({"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp), **ORT_TELEMETRY_OFF})
    return env


@contextmanager
def private_work(prefix: str) -> Iterator[Path]:
    """A private folder for one child (its cwd and, through child_env, its TMPDIR), removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def package_root() -> str:
    """The folder holding this q9diff package: what a child puts first on its path."""
    return str(Path(__file__).resolve().parent.parent)


def python_argv(
    module: str, args: list[str], python: str | None = None, paths: list[str] | None = None
) -> list[str]:
    """`python -m module args`, isolated: the working directory, PYTHONPATH and the user's site cannot
    shadow a module. `paths` (default: this q9diff's own folder) go first on the child's sys.path;
    the interpreter's own site-packages (and an editable install's finder there) still apply."""
    formats = _formats_folder() if paths is None else None
    paths = [package_root()] if paths is None else paths
    boot = (
        "import runpy, sys; "
        "sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
        f"sys.path[:0] = {paths!r}; "
    )
    if formats:  # q9diff.formats from this q9diff's folder, not the one the child's own install maps
        init = str(Path(formats) / "__init__.py")
        boot += (
            "import importlib.util as u, q9diff; "
            f"s = u.spec_from_file_location('q9diff.formats', {init!r}, "
            f"submodule_search_locations=[{formats!r}]); "
            "m = u.module_from_spec(s); sys.modules[s.name] = m; s.loader.exec_module(m); "
            "q9diff.formats = m; "
        )
    boot += f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    return [python or sys.executable, "-I", "-c", boot, *args]


def _formats_folder() -> str | None:
    """The folder this q9diff's `q9diff.formats` comes from when it lies outside the package folder (an
    editable install maps the checkout's formats/ there). A child of another interpreter (a QAIRT's venv,
    `--python-for`) that has a q9diff installed from elsewhere would otherwise take that install's."""
    from importlib.util import find_spec

    spec = find_spec("q9diff.formats")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    return None if folder == Path(package_root()) / "q9diff" / "formats" else str(folder)


def ask_script(
    script: str | os.PathLike, args: list[str], cwd: str, timeout: float, what: str, error: type[Exception]
) -> tuple[dict, subprocess.CompletedProcess]:
    """Run a module file as an isolated child (`python -I`, a bare environment but for child_env's TMPDIR
    inside `cwd`, a private folder the caller removes)
    whose last line of output is a JSON object; that object and the finished process. `error` names
    `what` when the child does not answer in time or stops before answering."""
    try:
        run = subprocess.run(
            [sys.executable, "-I", str(Path(script).resolve()), *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env(cwd, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}),
        )
    except subprocess.TimeoutExpired:
        raise error(f"{what} did not answer within {timeout} s") from None
    try:
        answer = json.loads(run.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        raise error(f"{what} stopped before answering (exit status {run.returncode})")
    return answer, run


def nameable(path: str | os.PathLike) -> bool:
    """Whether the system can name `path` at all: no NUL byte, no lone surrogate (both read from a file's
    JSON), no part over 255 bytes nor the whole over 4096 (Linux's NAME_MAX and PATH_MAX), which the os
    functions refuse with an exception instead of an answer."""
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:
        return False
    return b"\0" not in raw and len(raw) <= 4096 and all(len(part) <= 255 for part in raw.split(b"/"))


def is_file(path: str | os.PathLike) -> bool:
    """Whether a path read from a file names a regular file; False, never an exception, for a name the
    system refuses (too long, NUL, lone surrogate), which Path.is_file raises on."""
    try:
        return nameable(path) and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def inside(path: str | os.PathLike, folder: str | os.PathLike) -> Path | None:
    """`path` resolved (relative to `folder`, symlinks followed) when it stays inside `folder`, else None
    (also when it is no name the system can look up)."""
    if not nameable(path):
        return None
    base = Path(folder).resolve()
    target = (base / Path(path)).resolve()
    if target == base or base in target.parents:
        return target
    return None


def contained(path: str | os.PathLike, folder: str | os.PathLike, named_by: str | os.PathLike,
              error: type[Exception] = PathRefused) -> Path:  # fmt: skip
    """`path` as `inside` resolves it; `error` naming the file that named it when it leaves `folder`."""
    target = inside(path, folder)
    if target is None and not nameable(path):
        raise error(f"{named_by}: refusing {path!r}: not a file name the system can look up")
    if target is None:
        resolved = (Path(folder) / Path(path)).resolve()
        via = f" (it resolves to {resolved})" if str(resolved) != str(path) else ""
        raise error(
            f"{named_by}: refusing {path}{via}: it is outside {Path(folder).resolve()}, and q9diff reads and "
            "pushes only files inside the folder that names them"
        )
    return target


def plain_name(
    name: str, what: str, named_by: str | os.PathLike, error: type[Exception] = PathRefused
) -> str:
    """`name` when it is a relative path that stays where it is put (no `..`, not absolute, not empty)."""
    p = Path(name)
    if not name or p.is_absolute() or ".." in p.parts or name.startswith("~") or "\0" in name:
        raise error(f"{named_by}: {what} {name!r} must be a relative name inside the output folder")
    return name


MAX_JSON_BYTES = 64 << 20  # a config or recipe is kilobytes, a tokenizer.json megabytes; this is neither


@contextmanager
def open_regular(path: str | os.PathLike, expected: str, error: type[Exception] = PathRefused):
    """The open file at `path` and its stat, or `error` with one line naming the file: opened without
    blocking (a FIFO opens at once, then fstat refuses it, as it refuses a folder or a device), so no
    byte is read from anything but a regular file."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise error(f"{p}: expected {expected}, cannot read it ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # checked on the descriptor: a folder is not even wrapped as a file
        os.close(fd)
        raise error(f"{p}: expected {expected}, got a folder, FIFO or device, not a file")
    with os.fdopen(fd, "rb") as f:
        yield f, st


def read_bytes(path: str | os.PathLike, expected: str, error: type[Exception] = PathRefused,
               limit: int = MAX_JSON_BYTES) -> bytes:  # fmt: skip
    """The bytes of the regular file `path`, or `error` with one line naming the file and what was
    expected there: the size is checked on the open file before a byte is read, so a 600 MB sparse file is
    refused at once, a FIFO or device (which would block or never end) is not read at all, and no more
    than the file's own size (at most `limit`) is ever read."""
    p = Path(path)
    with open_regular(p, expected, error) as (f, st):
        data = f.read(limit + 1) if st.st_size <= limit else b""
    if st.st_size > limit or len(data) > limit:
        size = max(st.st_size, len(data))
        raise error(
            f"{p}: expected {expected}, got a {size} byte file, over the {limit} bytes q9diff reads for one"
        )
    return data


def digest(path: str | os.PathLike, expected: str, error: type[Exception] = PathRefused) -> str:
    """The sha256 of the regular file `path` (opened as open_regular opens it: a FIFO or device is
    refused, not waited on), read in chunks up to the size it had when opened."""
    import hashlib

    h = hashlib.sha256()
    with open_regular(path, expected, error) as (f, st):
        left = st.st_size
        while left > 0 and (chunk := f.read(min(left, 1 << 20))):
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def read_text(path: str | os.PathLike, expected: str, error: type[Exception] = PathRefused,
              limit: int = MAX_JSON_BYTES) -> str:  # fmt: skip
    """The UTF-8 text of `path` (read by read_bytes), or `error` with one line naming the file and what
    was expected there.

    The one reader of files another file names (a bundle's config, tokenizer and extension file) and of
    configs given."""
    p = Path(path)
    data = read_bytes(p, expected, error, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{p}: expected {expected}, got bytes that are not UTF-8 text") from None


def load_json(path: str | os.PathLike, expected: str, error: type[Exception] = PathRefused,
              limit: int = MAX_JSON_BYTES):  # fmt: skip
    """The JSON value in `path` (read by read_text), or `error` with one line naming the file and what
    was expected there (unreadable, too big, not JSON, nested too deep for a config)."""
    p = Path(path)
    text = read_text(p, expected, error, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{p}: expected {expected}, not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise error(f"{p}: expected {expected}, got JSON nested too deep to be one") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise error(f"{p}: expected {expected}, holding a number with too many digits to read") from None


def kind(value) -> str:
    """A JSON value's kind as a message names it."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")
