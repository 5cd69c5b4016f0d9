"""The terminal presenter's shared parts: rich's Console (created on first use: start-up time matters),
`text` (the one way a string reaches it, cleaned of control characters), and the lines every view ends
with (the fix, one copyable line per tool; the weights-packing notice; what --verbose adds).

The views themselves sit beside it, one room each, reading the same results the HTML, Markdown and JSON
presenters read: terminal_diff (a pair or a set), terminal_target (a device, will it load),
terminal_doctor, terminal_inspect, terminal_verify, terminal_explain and terminal_build (suggest's edits,
rebuilds and steps).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from q9diff.errors import printable


class _Console:
    """rich's Console, created on first use, following the terminal's width.

    Markup is off: strings from a file are data, never markup. Our own styling goes through `text`.
    Prose (a Text printed without soft_wrap) is wrapped here, not by rich: at the terminal's width (or
    COLUMNS), never inside a number and its unit (`8 MiB` stays whole) or a part marked `whole` (a
    command, a path), with no trailing spaces, and not at all in a pipe (a line a paragraph, for grep and
    for pasting). Lines that are all command or config (soft_wrap=True) are never wrapped."""

    _console = None

    def _rich(self):
        if _Console._console is None:
            from rich.console import Console

            _Console._console = Console(markup=False, highlight=False, emoji=False)
        return _Console._console

    def __getattr__(self, name):
        return getattr(self._rich(), name)

    def print(self, *objects, soft_wrap: bool | None = None, **kwargs) -> None:
        console = self._rich()
        from rich.text import Text

        if soft_wrap or len(objects) != 1 or not isinstance(objects[0], (Text, str)) or kwargs:
            console.print(*objects, soft_wrap=soft_wrap, **kwargs)
            return
        one = objects[0] if isinstance(objects[0], Text) else Text(objects[0])
        for line in wrapped(one, _width(console)):
            console.print(line, soft_wrap=True)


console = _Console()

# A number and its unit, or a name and its number, kept on one line when prose is wrapped.
_UNBROKEN = re.compile(
    r"(?P<n>\d) (?P<unit>B|KiB|MiB|GiB|bytes|ops|parts|graphs)\b"
    r"|\b(?P<name>VTCM|soc_model|QAIRT|level) (?P<v>\d)"
)


def _joined(m: re.Match) -> str:
    return f"{m['n']}\u00a0{m['unit']}" if m["n"] else f"{m['name']}\u00a0{m['v']}"


def _width(console) -> int | None:
    """Where prose wraps: the terminal's width, or COLUMNS when set; None (no wrap) in a pipe."""
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return max(console.width, 20)
    return None


def wrapped(line, width: int | None) -> list:
    """A rich Text cut into lines of at most `width` (styles kept), at spaces outside a number and its
    unit, each line without trailing spaces; one line when `width` is None. An indented line's
    continuations hang two spaces deeper than it, so an item's wrapped text stays under the item."""
    import textwrap

    from rich.text import Text

    plain = _UNBROKEN.sub(_joined, line.plain)  # textwrap breaks at ASCII whitespace only
    for span in line.spans:  # a command or a path in the prose (`whole`) is never broken
        if getattr(span.style, "meta", None) and span.style.meta.get("whole"):
            kept = plain[span.start : span.end].replace(" ", "\u00a0")
            plain = plain[: span.start] + kept + plain[span.end :]
    indent = len(plain) - len(plain.lstrip(" "))
    hang = " " * (indent + 2) if indent and indent + 2 < (width or 0) // 2 else ""
    cuts = []
    if width is not None and len(plain) > width:
        pos = 0
        pieces = textwrap.wrap(plain, width, break_long_words=False, break_on_hyphens=False,
                               drop_whitespace=False, subsequent_indent=hang)  # fmt: skip
        for i, piece in enumerate(pieces):
            pos += len(piece) - (len(hang) if i else 0)
            cut = pos
            while cut < len(plain) and plain[cut] == " ":  # a break's spaces end a line (then trimmed)
                cut += 1
            cuts.append(cut)
    parts = [_trimmed(part) for part in (line.divide(cuts[:-1]) if cuts else [line])]
    parts = parts[:1] + [part for part in parts[1:] if part.plain]  # a break's lone space is no line
    return parts[:1] + [Text(hang) + part for part in parts[1:]]


def _trimmed(part):
    """A line of Text without its trailing spaces, its styles kept where they still fall."""
    from rich.text import Text

    kept = part.plain.rstrip()
    spans = [s for s in part.spans if s.start < len(kept)]
    return Text(kept, style=part.style, spans=spans, end=part.end)


def whole(value: str, style: str | None = None) -> tuple:
    """A part of a `text` that wrapped prose never breaks: a command to copy, a path, a config line. On a
    line of its own where it does not fit beside the prose, and never cut however long."""
    from rich.style import Style

    return value, Style.combine([Style.parse(style or "none"), Style(meta={"whole": True})])


def text(*parts):
    """A rich Text from (text, style) pairs or plain strings; every string is cleaned of controls."""
    from rich.text import Text

    out = Text()
    for part in parts:
        value, style = (part, None) if isinstance(part, str) else part
        out.append(printable(value), style=style)
    return out


def wrote(path: Path, what: str) -> None:
    """`wrote the HTML report: PATH`, on stdout with the view: one line, for the path to be copied."""
    console.print(text(f"wrote {what}: {path}"), soft_wrap=True)


def print_packing(side: str, notice: dict | None) -> None:
    """The single-binary weights-packing notice (q9diff.compare.packing), when there is one."""
    if notice:
        console.print(text(f"{side}weights packing: {notice['message']}"))


def print_suggestions(
    suggestions: list[dict], form: str | None = "qairt", notes: bool = False, lead: str | None = None
) -> None:
    """The fix, each setting in the toolchain form `form` (None: every form, each under its label, `lead`
    first), a line a setting, never wrapped by us (q9diff.present.fixes); a per-graph qairt line loops
    over `graphs`, said once after them. `notes`: the qairt device line's caveat beside it."""
    from q9diff.compare import toolchains  # start-up: compare.toolchains
    from q9diff.present import fixes  # start-up: present.fixes
    from q9diff.units import config_value  # start-up: units

    if not suggestions:
        console.print("No setting to change.")
        return
    heads = [f"{s['setting']} = {config_value(s['setting'], s['value'])}" for s in suggestions]
    width = max(map(len, heads))
    every = sorted((f for f, _ in toolchains.FORMS), key=lambda f: f != lead)
    for f in [form] if form else every:
        if form is None:
            console.print(text(f"  {toolchains.LABELS[f]}:"))
        pad = "  " if form else "    "
        for head, s in zip(heads, suggestions):
            found = toolchains.lines(s, f)
            if not found:  # why there is no line: a sentence, wrapped
                console.print(text(f"{pad}{head:<{width}}  ({fixes.missing(s, f)})"))
            for line in found:
                caveat = fixes.note(s, f) if notes else None
                line = line + (f"  # {caveat}" if caveat else "")
                one = f"{pad}{head:<{width}}  {line}"
                if len(one) <= 78:
                    console.print(text(one), soft_wrap=True)
                else:
                    console.print(text(f"{pad}{head}"), soft_wrap=True)
                    console.print(text(f"{pad}  {line}"), soft_wrap=True)
        graphs = toolchains.graphs_line(suggestions) if f == "qairt" else None
        if graphs:
            for line in fixes.packed(graphs, pad):
                console.print(text(line), soft_wrap=True)


def print_fix(
    suggestions: list[dict], heading: str = "Fix", data: dict | None = None, verbose: bool = False
) -> None:
    """The fix under its heading: in the toolchain the candidate's files say (the diff's `toolchain`, or
    --toolchain), every form with --verbose."""
    from q9diff.compare.toolchains import LABELS, precision_fix  # start-up: compare.toolchains
    from q9diff.present import fixes  # start-up: present.fixes

    asked = (data or {}).get("toolchain", {}).get("form")
    form = None if verbose or asked == "all" else fixes.chosen(data or {})
    why = (data or {}).get("toolchain", {}).get("why")
    precision = precision_fix((data or {}).get("causes") or [])
    if precision is not None and not suggestions:  # no setting to change, and still a change to make
        console.print(text((f"{heading}: {precision['lead']}", "bold")))
    elif form is None or not suggestions:
        console.print(text((heading, "bold")))
    else:
        said = f" ({why}; --toolchain for another)" if why and why != "--toolchain" else ""
        console.print(text((f"{heading}, in {LABELS[form]}", "bold"), said))
    if suggestions or precision is None:
        print_suggestions(suggestions, form, notes=form is None, lead=fixes.chosen(data or {}))
    if precision is not None:
        print_precision(precision, form, fixes.chosen(data or {}), said_why=not suggestions)


def print_soc_set(found: tuple[str, list[str]], heading: str = "") -> None:
    """The fix of two multi-SoC DLCs built for different SoCs (q9diff.present.fixes.soc_set_fix): the
    sentence, then each option line."""
    console.print(text((f"{heading}{found[0]}", "bold")))
    for line in found[1]:
        console.print(text(f"  {line}"), soft_wrap=True)


def print_precision(precision: dict, form: str | None, lead: str, said_why: bool = False) -> None:
    """Where the reference's precision is made (q9diff.compare.toolchains.precision_fix), in the form
    `form` (None: every form, `lead` first), and AI Hub's option for it."""
    from q9diff.compare.toolchains import FORMS, LABELS  # start-up: compare.toolchains

    change = f"quantization {precision['change']}"
    if not said_why:
        console.print(text(f"  {change}: {precision['lead']}"))
    forms = [form] if form else sorted((f for f, _ in FORMS), key=lambda f: f != lead)
    for f in forms:
        console.print(text(f"  {change}, in {LABELS[f]}: {precision['lines'][f]}"))
    if precision["ai_hub"]:
        console.print(text(f"  AI Hub: the compile option {precision['ai_hub']}"))


def print_more(verbose: bool, data: dict | None = None) -> None:
    """What to run next (suggest --apply, where the candidate's files name a config), and what
    --verbose and `q9diff explain` add."""
    from q9diff.present import fixes  # start-up: present.fixes

    nxt = fixes.next_step(data) if data else None
    if nxt:
        console.print(text(("next: ", "bold"), nxt), soft_wrap=True)
    for line in data.get("read_as", []) if verbose and data else []:
        console.print(text(line))
    if not verbose:
        console.print("more: -v (evidence, every toolchain form, where the bytes went), --json (all)")
    words = fixes.terms_named(data) if data else []
    if words:
        console.print(text(f"terms: q9diff explain {' | '.join(words)}"), soft_wrap=True)
