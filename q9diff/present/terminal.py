"""The terminal presenter's shared parts: rich's Console (created on first use: start-up time matters),
`text` (the one way a string reaches it, cleaned of control characters), and the lines every view ends
with (the fix, one copyable line per tool; the weights-packing notice; what --verbose adds).

The views themselves sit beside it, one room each, reading the same results the HTML, Markdown and JSON
presenters read: terminal_diff (a pair or a set), terminal_target (a device, will it load),
terminal_doctor, terminal_inspect, terminal_verify, terminal_explain and terminal_build (suggest's edits,
rebuilds and steps).
"""

from __future__ import annotations

import json
from pathlib import Path

from q9diff.errors import printable


class _Console:
    """rich's Console, created on first use, following the terminal's width (80 columns in a pipe).

    Markup is off: strings from a file are data, never markup. Our own styling goes through `text`."""

    _console = None

    def __getattr__(self, name):
        if _Console._console is None:
            from rich.console import Console

            _Console._console = Console(markup=False, highlight=False, emoji=False)
        return getattr(_Console._console, name)


console = _Console()


def text(*parts):
    """A rich Text from (text, style) pairs or plain strings; every string is cleaned of controls."""
    from rich.text import Text

    out = Text()
    for part in parts:
        value, style = (part, None) if isinstance(part, str) else part
        out.append(printable(value), style=style)
    return out


def wrote(path: Path, what: str) -> None:
    """`wrote the HTML report: PATH`, on stdout with the view."""
    console.print(text(f"wrote {what}: {path}"), soft_wrap=True)


def print_packing(side: str, notice: dict | None) -> None:
    """The single-binary weights-packing notice (q9diff.compare.packing), when there is one."""
    if notice:
        console.print(text(f"{side}weights packing: {notice['message']}"))


def print_suggestions(suggestions: list[dict], form: str | None = None) -> None:
    """The fix, one copyable line per tool: never wrapped by us (the terminal may fold it visually); the
    ExecuTorch line first where the candidate is a .pte (`form`: q9diff.present.fixes.chosen)."""
    from q9diff.present.fixes import lead_line
    from q9diff.units import config_value

    if not suggestions:
        console.print("No setting to change.")
    for s in suggestions:
        t = s["targets"]
        lead = lead_line(s, form)
        lines = [f"  ExecuTorch:             {lead}"] if lead else []
        lines += [f"  qairt:                  {t['qairt']}"]
        lines += [
            f"  htp_backend_ext_config: {k} = {json.dumps(v)}" for k, v in t["htp_backend_ext_config"].items()
        ]
        lines += [f"  ONNX Runtime QNN EP:    {k}={v}" for k, v in t.get("ort_qnn", {}).items()]
        lines.append(f"  qnn-context-binary-generator: {t['qnn_cli']}")
        heading = f"{s['setting']} = {config_value(s['setting'], s['value'])}"
        console.print(text((heading, "bold")), soft_wrap=True)
        for line in lines:
            console.print(text(line), soft_wrap=True)


def print_fix(suggestions: list[dict], heading: str = "Fix", form: str | None = None) -> None:
    console.print(text((heading, "bold")))
    print_suggestions(suggestions, form)


def print_more(verbose: bool) -> None:
    if not verbose:
        console.print("more: --verbose (evidence, where the bytes went, every region), --json (all)")
