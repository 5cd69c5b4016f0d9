"""A fast necessary test for a set of regular expressions: the literal strings (needles) one of which any
match of them holds, searched as one trie-shaped pattern, and the expressions that have no such strings,
searched as they are.

A line holding no needle and matched by none of the rest is matched by none of the expressions. The
converse need not hold: a needle can sit in a line no expression matches (the test says "maybe", and the
caller reads the line in full). An alternation of many words costs Python's `re` a try of every word at
every position; the trie tries one branch per character, which is what makes a paste of 150,000 short
distinct lines cheap (issue 56, bench row (h)).
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c
    import sre_parse as _p

_EXPAND = 64  # at most this many strings from one expression's small alternations
_ZERO_WIDTH = {_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY}  # dropping these only widens what matches


def _expand(items) -> list[str] | None:
    """Every string a sequence of parsed items matches, when it is a small set of literals; else None."""
    out = [""]
    for op, av in items:
        if op is _c.LITERAL:
            alts = [chr(av)]
        elif op is _c.AT and av in _ZERO_WIDTH:
            continue
        elif op is _c.IN and all(o is _c.LITERAL for o, _ in av):
            alts = [chr(v) for _, v in av]
        elif op is _c.SUBPATTERN:
            alts = _expand(av[3])
            if alts is None:
                return None
        elif op is _c.BRANCH:
            alts = []
            for branch in av[1]:
                got = _expand(branch)
                if got is None:
                    return None
                alts += got
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[1] <= 1 and av[0] in (0, 1):
            inner = _expand(av[2])
            if inner is None:
                return None
            alts = inner + ([""] if av[0] == 0 else [])
        else:
            return None
        out = [a + b for a in out for b in alts]
        if len(out) > _EXPAND:
            return None
    return out


def _run(items) -> str:
    """The longest run of literal characters a sequence of parsed items must match, in order (a group's
    items are part of the sequence)."""
    best, cur = "", ""

    def walk(seq) -> None:
        nonlocal best, cur
        for op, av in seq:
            if op is _c.LITERAL:
                cur += chr(av)
            elif op is _c.SUBPATTERN:
                walk(av[3])
            elif not (op is _c.AT and av in _ZERO_WIDTH):
                best, cur = max(best, cur, key=len), ""

    walk(items)
    return max(best, cur, key=len)


def _branches(items) -> list:
    """The alternatives of a parsed expression (itself when it has none), word boundaries around it
    dropped (the parser moves a boundary every alternative starts with out of them)."""
    items = [i for i in items if not (i[0] is _c.AT and i[1] in _ZERO_WIDTH)]
    while len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        items = [i for i in items[0][1][3] if not (i[0] is _c.AT and i[1] in _ZERO_WIDTH)]
    if len(items) == 1 and items[0][0] is _c.BRANCH:
        return [list(b) for b in items[0][1][1]]
    return [items]


def needles(pattern: str) -> list[str] | None:
    """Strings one of which every match of `pattern` holds; None when an alternative has none (of two
    characters or more)."""
    out = []
    for branch in _branches(list(_p.parse(pattern))):
        got = _expand(branch)
        if got is None or "" in got:
            run = _run(branch)
            if len(run) < 2:
                return None
            got = [run]
        out += got
    return out


def trie(words: list[str]) -> str:
    """One pattern that finds any of `words`: one branch per character, a word's end ends the match (a
    longer word it begins adds nothing to 'one of them is there')."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            if "" in node:
                break
            node = node.setdefault(ch, {})
        else:
            node.clear()
            node[""] = {}

    def build(node: dict) -> str:
        if "" in node:
            return ""
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return build(root)


def split(patterns: list[str]) -> tuple[re.Pattern, re.Pattern | None]:
    """(the needles of `patterns` as one trie pattern, the patterns that have none joined, or None)."""
    found: list[str] = []
    rest = []
    for p in patterns:
        got = needles(p)
        if got is None:
            rest.append(p)
        else:
            found += got
    # Without its word boundaries a pattern matches more lines, never fewer, and Python's `re` can skip
    # ahead to the characters its alternatives start with.
    loose = [re.sub(r"(?<!\\)\\b", "", p) for p in rest]
    joined = re.compile("|".join(f"(?:{p})" for p in loose)) if rest else None
    return re.compile(trie(sorted(set(found))) or "(?!)"), joined
