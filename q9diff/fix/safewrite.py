"""Writing edited files safely: all or nothing, atomically, with backups that never overwrite anything."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from q9diff.fix.edit import ApplyError, Edit

MAX_BACKUPS = 1000


def write_all(edits: list[Edit]) -> list[tuple[Path, Path]]:
    """Write every edit or none: all files are read back and prepared (backup and new text beside each)
    before the first is replaced; if a replacement fails, the ones already made are put back.

    Returns (file, its backup) for each file written. A file already holding its new text is left
    alone (a wrapper and the extension file it names, both given), and one changed since it was read is
    refused. Backups are created exclusively, so neither an existing .bak nor a symlink there is touched.
    """
    todo: dict[Path, Edit] = {}
    for e in edits:
        if e.advice_only or e.before == e.after:
            continue
        other = todo.get(e.path)
        if other is not None and other.after != e.after:
            raise ApplyError(f"{e.path}: two different edits of the same file; nothing written")
        todo[e.path] = e
    pending = []
    for path, e in todo.items():
        current = read_exact(path)
        if current == e.after:
            continue
        if current != e.before:
            raise ApplyError(f"{path}: changed since q9diff read it; nothing written")
        pending.append(e)
    prepared: list[tuple[Edit, Path, str]] = []  # (edit, its backup, its new text in a temporary file)
    for e in pending:
        try:
            backup = _backup(e.path)
            try:
                prepared.append((e, backup, _temp_beside(e.path, e.after)))
            except OSError:
                backup.unlink()
                raise
        except OSError as exc:
            _discard(prepared)
            raise ApplyError(f"{e.path}: cannot prepare the edit ({exc}); nothing written") from None
    done: list[Edit] = []
    for e, _, tmp in prepared:
        try:
            os.replace(tmp, e.path)
        except OSError as exc:
            for d in reversed(done):
                os.replace(_temp_beside(d.path, d.before), d.path)
            _discard(prepared)
            undone = f"; {len(done)} already written put back" if done else ""
            raise ApplyError(f"{e.path}: cannot write ({exc}){undone}; nothing changed") from None
        done.append(e)
    return [(e.path, backup) for e, backup, _ in prepared]


def _backup(path: Path) -> Path:
    """Copy `path` to the first free name of FILE.bak, FILE.bak.1, ...; never follows or replaces."""
    data = path.read_bytes()
    for n in range(MAX_BACKUPS):
        backup = path.with_name(path.name + (".bak" if n == 0 else f".bak.{n}"))
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(backup, path.stat().st_mode & 0o777)
        return backup
    raise OSError(f"{MAX_BACKUPS} backups of it exist already")


def _temp_beside(path: Path, text: str) -> str:
    """The new text in a fresh file next to `path` (same file system, so os.replace is atomic)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.q9diff-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _discard(prepared: list[tuple[Edit, Path, str]]) -> None:
    """Remove the backups and temporary files of a write that did not happen."""
    for _, backup, tmp in prepared:
        for leftover in (backup, Path(tmp)):
            if leftover.exists():
                leftover.unlink()


def read_exact(path: Path) -> str:
    """The text exactly as stored (line ends included), so unchanged lines are written back unchanged;
    read by the one capped reader (q9diff.guard.read_text): a FIFO or a huge file is refused, not read."""
    from q9diff.guard import read_text  # start-up: guard

    return read_text(path, "a file q9diff can edit", ApplyError)
