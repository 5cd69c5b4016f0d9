"""JSON as people write it (`//` and `/* */` comments, trailing commas), read with the place of every
value, and edited by changing only the text of what changes.

`suggest --apply` edits files users keep by hand: a one-value fix must be a one-line diff, and comments,
key order, number spelling (`3.0`), compact arrays and blank lines must survive byte for byte. So the
document is never re-serialised: `parse` gives a tree of spans, `Editor` collects text replacements and
insertions at those spans, laid out in the style of the neighbouring text, and applies them at once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from q9diff.errors import Q9Error

MAX_DEPTH = 256  # nesting deeper than any config; keeps a hostile file from exhausting the stack
# Every value becomes a Node: about 50 bytes of memory per byte of `[{},{},...]`, so a config (real ones
# are a few KB) is read up to 1 MB and a larger text refused before a Node is made.
MAX_TEXT = 1 << 20

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_LITERALS = {"true": True, "false": False, "null": None}
_BLANK_START = set(" \t\r\n/")
_BLANK = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)*", re.S)  # whitespace and comments


class JsoncError(Q9Error, ValueError):
    """Text that is not JSON even with comments and trailing commas; says where."""


@dataclass(slots=True)
class Node:
    """A value and where its text is: `text[start:end]`. Containers also know their closing bracket."""

    kind: str  # "object", "array", "string", "number", "literal"
    start: int
    end: int
    value: object = None  # the Python value of a scalar
    members: list[Member] | tuple = ()  # an object's (a list, made by the parser)
    items: list[Node] | tuple = ()  # an array's
    trailing_comma: bool = False

    def get(self, key: str) -> Node | None:
        """The value of `key` in an object (the last one, as JSON parsers read duplicates), or None."""
        found = [m.value for m in self.members if m.key == key] if self.kind == "object" else []
        return found[-1] if found else None

    def member(self, key: str) -> Member | None:
        found = [m for m in self.members if m.key == key] if self.kind == "object" else []
        return found[-1] if found else None

    def to_python(self) -> object:
        if self.kind == "object":
            return {m.key: m.value.to_python() for m in self.members}
        if self.kind == "array":
            return [i.to_python() for i in self.items]
        return self.value


@dataclass(slots=True)
class Member:
    key: str
    key_start: int
    value: Node


def strict_fault(text: str, exc) -> str:
    """What is wrong with `text` as strict JSON (json.JSONDecodeError `exc`), named for what it is: a
    comment, a trailing comma, a closing brace too many, a missing comma, a cut-off end; with its place."""
    at, where = exc.pos, f"line {exc.lineno}, column {exc.colno}"
    rest = text[at:].lstrip()
    before = text[:at].rstrip()
    if exc.msg == "Extra data":
        what = rest[:1]
        if what in "}]":
            name = "brace" if what == "}" else "bracket"
            return f"a closing {name} too many at {where}, after the end of the JSON"
        return (
            f"more text after the end of the JSON value at {where} (two values, or an unbalanced brace above)"
        )
    if rest.startswith(("//", "/*")):
        return f"a comment at {where}: strict JSON has none"
    if before.endswith(",") and rest[:1] in "}]":
        return f"a trailing comma before the {'}' if rest[:1] == '}' else ']'} at {where}"
    if not rest or (_open_at_end(text) and len(text) - at < 64):
        return f"the text ends early at {where}: a closing brace or bracket is missing (cut off?)"
    if exc.msg.startswith("Expecting ',' delimiter"):
        return f"a missing comma (or an unclosed brace or bracket) before {where}"
    if exc.msg.startswith("Expecting property name"):
        return f"a key that is not a double-quoted string at {where}"
    return f"{exc.msg} at {where}"


def _open_at_end(text: str) -> int:
    """How many braces and brackets are still open where `text` ends (strings skipped)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return max(depth, 0)


def parse(text: str) -> Node:
    """The tree of `text`; JsoncError (with line and column) when it is not JSON with comments, or is
    larger than MAX_TEXT characters (said in the message)."""
    if len(text) > MAX_TEXT:
        raise JsoncError(f"{len(text)} characters, over the {MAX_TEXT} q9diff reads as a config")
    p = _Parser(text)
    p.pos = 1 if text.startswith("\ufeff") else 0
    p.skip()
    node = p.value(0)
    p.skip()
    if p.pos != len(text):
        p.fail("text after the JSON value")
    return node


def loads(text: str) -> object:
    return parse(text).to_python()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, what: str) -> None:
        line = self.text.count("\n", 0, self.pos) + 1
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        raise JsoncError(f"{what} at line {line} column {col}")

    def skip(self) -> None:
        """Whitespace and comments (one regular expression: this runs between every two tokens)."""
        if self.text[self.pos : self.pos + 1] not in _BLANK_START:
            return
        self.pos = _BLANK.match(self.text, self.pos).end()
        if self.text.startswith("/*", self.pos):
            self.fail("unclosed /* comment")

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH}")
        t, start = self.text, self.pos
        c = t[start] if start < len(t) else ""
        if c == "{":
            return self.container(depth, "object", "}")
        if c == "[":
            return self.container(depth, "array", "]")
        if c == '"':
            m = _STRING.match(t, start)
            if not m:
                self.fail("bad string")
            self.pos, text = m.end(), m.group()
            return Node("string", start, m.end(), json.loads(text) if "\\" in text else text[1:-1])
        m = _NUMBER.match(t, start)
        if m and m.group():
            text = m.group()
            try:
                value = float(text) if m.group(1) or m.group(2) else int(text)
            except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
                self.fail("a number too long to read")
            self.pos = m.end()
            return Node("number", start, m.end(), value)
        for word, val in _LITERALS.items():
            if t.startswith(word, start):
                self.pos = start + len(word)
                return Node("literal", start, self.pos, val)
        self.fail("expected a JSON value" if c else "unexpected end of text")
        raise AssertionError  # fail() raised

    def container(self, depth: int, kind: str, close: str) -> Node:
        node = Node(
            kind, self.pos, -1, members=[] if kind == "object" else (), items=[] if kind == "array" else ()
        )
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                break
            if kind == "object":
                if not self.text.startswith('"', self.pos):
                    self.fail("expected a key in quotes")
                key = self.value(depth + 1)
                self.skip()
                if not self.text.startswith(":", self.pos):
                    self.fail("expected ':'")
                self.pos += 1
                self.skip()
                node.members.append(Member(str(key.value), key.start, self.value(depth + 1)))
            else:
                node.items.append(self.value(depth + 1))
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                self.skip()
                node.trailing_comma = self.text.startswith(close, self.pos)
            elif not self.text.startswith(close, self.pos):
                self.fail(f"expected ',' or '{close}'")
        self.pos += 1
        node.end = self.pos
        return node


def scalar_text(value: object) -> str:
    """JSON text of a scalar q9diff writes: never NaN or infinity (JSON has none)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class Editor:
    """Edits of one text, collected against its tree and applied together by `result()`."""

    def __init__(self, text: str, root: Node) -> None:
        self.text, self.root = text, root
        self.changes: list[tuple[int, int, int, str]] = []  # (start, end, order, replacement)
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = _indent_unit(text)

    def result(self) -> str:
        out = self.text
        for start, end, _, repl in sorted(self.changes, key=lambda c: (c[0], c[2]), reverse=True):
            out = out[:start] + repl + out[end:]
        return out

    def _change(self, start: int, end: int, text: str) -> None:
        self.changes.append((start, end, len(self.changes), text))

    # --- layout of the text around a place -------------------------------------------------------

    def line_indent(self, pos: int) -> str:
        start = self.text.rfind("\n", 0, pos) + 1
        line = self.text[start:pos]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def first_on_line(self, pos: int) -> bool:
        start = self.text.rfind("\n", 0, pos) + 1
        return not self.text[start:pos].strip()

    def _content_end(self, node: Node) -> int:
        """Where the last thing inside a container (value, comma or comment) ends, before the close."""
        pos = node.end - 1
        while pos > node.start + 1 and self.text[pos - 1] in " \t\r\n":
            pos -= 1
        return pos

    def multiline(self, node: Node) -> bool:
        return "\n" in self.text[node.start : node.end]

    def render(self, value: object, indent: str, multiline: bool) -> str:
        """A new value laid out like the file: nested lines indented by its unit, short lists inline."""
        nl, unit = self.newline, self.unit
        if isinstance(value, dict):
            if not value:
                return "{}"
            if not multiline:
                return (
                    "{"
                    + ", ".join(f"{json.dumps(k)}: {self.render(v, '', False)}" for k, v in value.items())
                    + "}"
                )
            inner = indent + unit
            body = f",{nl}".join(
                f"{inner}{json.dumps(k)}: {self.render(v, inner, True)}" for k, v in value.items()
            )
            return "{" + nl + body + nl + indent + "}"
        if isinstance(value, list):
            flat = "[" + ", ".join(self.render(v, "", False) for v in value) + "]"
            if not multiline or (
                len(indent) + len(flat) <= 100 and not any(isinstance(v, (dict, list)) for v in value)
            ):
                return flat
            inner = indent + unit
            return (
                "["
                + nl
                + f",{nl}".join(inner + self.render(v, inner, True) for v in value)
                + nl
                + indent
                + "]"
            )
        return scalar_text(value)

    # --- edits -----------------------------------------------------------------------------------

    def replace(self, node: Node, value: object) -> None:
        """Replace a scalar's text, keeping `3.0`-style spelling for whole numbers."""
        old = self.text[node.start : node.end]
        new = scalar_text(value)
        if isinstance(value, int) and not isinstance(value, bool) and re.fullmatch(r"-?[0-9]+\.0+", old):
            new = f"{value}.0"
        self._change(node.start, node.end, new)

    def add_member(self, obj: Node, key: str, value: object, after: str | None = None) -> None:
        """Add `"key": value` to an object: after member `after` if given (else at the end), on its own
        line with the siblings' indentation and colon spacing when the object is laid out that way."""
        members = obj.members
        if not members:
            self._fill_empty(obj, f"{json.dumps(key)}: ", value)
            return
        index = len(members) - 1
        if after is not None:
            index = max(i for i, m in enumerate(members) if m.key == after)
        ref = members[index]
        colon = self.text[_STRING.match(self.text, ref.key_start).end() : ref.value.start]
        on_own_line = self.first_on_line(ref.key_start)
        indent = self.line_indent(ref.key_start) if on_own_line else self.line_indent(obj.start) + self.unit
        text = f"{json.dumps(key)}{colon}{self.render(value, indent, self.multiline(obj))}"
        if index + 1 < len(members):  # before the next member, in its place
            nxt = members[index + 1]
            sep = self.newline + self.line_indent(nxt.key_start) if self.first_on_line(nxt.key_start) else " "
            self._change(nxt.key_start, nxt.key_start, text + "," + sep)
            return
        self._append(obj, ref.value, on_own_line, indent, text)

    def append_item(self, arr: Node, value: object) -> None:
        """Add an item at the end of an array, laid out like its last item."""
        if not arr.items:
            self._fill_empty(arr, "", value)
            return
        last = arr.items[-1]
        on_own_line = self.first_on_line(last.start)
        indent = self.line_indent(last.start)
        self._append(arr, last, on_own_line, indent, self.render(value, indent, self.multiline(arr)))

    def wrap_in_list(self, node: Node, more: list[object]) -> None:
        """Make the value `node` the first item of a list, followed by `more`: `[` before it, the new
        items after it laid out like it (indented as its closing line), `]` after them; `node` itself
        and edits inside it stay as they are."""
        indent = self.line_indent(node.end - 1)
        items = "".join(", " + self.render(v, indent, self.multiline(node)) for v in more)
        self._change(node.start, node.start, "[")
        self._change(node.end, node.end, items + "]")

    def _fill_empty(self, container: Node, prefix: str, value: object) -> None:
        """The first member or item of `{}` / `[]`: on its own line in a file laid out in lines."""
        indent = self.line_indent(container.start)
        inner = indent + self.unit
        if not self.multiline(self.root):
            self._change(container.start + 1, container.start + 1, prefix + self.render(value, inner, False))
            return
        text = self.newline + inner + prefix + self.render(value, inner, True)
        if self.text[container.start + 1 : container.end - 1].strip():  # a comment inside: keep it
            self._change(container.start + 1, container.start + 1, text)
        else:
            self._change(container.start + 1, container.end - 1, text + self.newline + indent)

    def _append(self, container: Node, last: Node, on_own_line: bool, indent: str, text: str) -> None:
        sep = self.newline + indent if on_own_line else " "
        if container.trailing_comma:
            self._change(self._content_end(container), self._content_end(container), sep + text + ",")
        else:
            self._change(last.end, last.end, ",")
            self._change(self._content_end(container), self._content_end(container), sep + text)


def _indent_unit(text: str) -> str:
    """The file's indentation step: the indentation of its first indented line (two spaces if none)."""
    for line in text.splitlines()[1:]:
        body = line.lstrip(" \t")
        if body and body != line:
            return line[: len(line) - len(body)]
    return "  "
