"""An edit adds and changes values, it never takes one away: the check every planned JSON edit passes
before it is shown or written (a value of the user's dropped or turned into another kind would be a change
the fix did not ask for, and one the unified diff can hide in a reformat).

The two documents are compared by plain equality first, walked down only where they differ (the rest of a
config, however large, costs one comparison); the few small subtrees an edit changes (a device's or a
graph's entry) are then read by DeepDiff, which says what was removed or retyped there. A walk that meets
more than MAX_CHANGED differing subtrees, or one bigger than MAX_LEAF values, is not an edit q9diff plans:
refused as such rather than compared at a cost the input sets (DeepDiff over a 4 MB config takes 15 s).
An object an edit makes the first entry of a list (`graphs`, which Qualcomm's parser wants as a list) is
compared with that entry.
"""

from __future__ import annotations

from q9diff.fix.edit import ApplyError

MAX_CHANGED = 64  # differing subtrees an edit may touch (a fix changes a handful of settings)
MAX_LEAF = 256  # values in one differing subtree handed to DeepDiff


def _size(v, limit: int) -> int:
    """Values in `v`, counted up to `limit` + 1."""
    n, todo = 0, [v]
    while todo and n <= limit:
        x = todo.pop()
        n += 1
        if isinstance(x, dict):
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return n


def _differing(before, after, path: str, out: list) -> None:
    """The smallest subtrees where `before` and `after` differ, as (path, before, after), or (path, None,
    None) for a key or an item the edit removed, found by equality from the top."""
    if len(out) > MAX_CHANGED or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        if _size(before, MAX_LEAF) > MAX_LEAF:
            for k, v in before.items():
                if k not in after:
                    out.append((f"{path}[{k!r}]", None, None))
                else:
                    _differing(v, after[k], f"{path}[{k!r}]", out)
            return
    elif isinstance(before, list) and isinstance(after, list):
        if _size(before, MAX_LEAF) > MAX_LEAF:
            for i, v in enumerate(before):
                if i >= len(after):
                    out.append((f"{path}[{i}]", None, None))
                else:
                    _differing(v, after[i], f"{path}[{i}]", out)
            return
    out.append((path, before, after))


def _listed_like(before, after):
    """`before` with each object that `after` holds as the first entry of a list put in such a list (an
    edit that lists `graphs` keeps the object it listed), walked where both sides are objects."""
    if isinstance(before, dict) and isinstance(after, list) and after and isinstance(after[0], dict):
        return [before]
    if isinstance(before, dict) and isinstance(after, dict):
        return {k: _listed_like(v, after[k]) if k in after else v for k, v in before.items()}
    return before


def taken_away(before, after) -> list[str]:
    """Where `after` (a parsed JSON document) drops or retypes a value of `before`, in DeepDiff's words
    (`root['devices'][0]['cores']`); empty when the edit only adds and changes values."""
    from deepdiff import DeepDiff  # start-up: deepdiff (only an edit that is planned loads it)

    parts: list = []
    _differing(_listed_like(before, after), after, "root", parts)
    if len(parts) > MAX_CHANGED:
        raise ApplyError(f"the edit would change more than {MAX_CHANGED} places of the file; left untouched")
    said = []
    for path, b, a in parts:
        if b is None and a is None:
            said.append(f"{path} removed")
            continue
        if _size(b, MAX_LEAF) > MAX_LEAF or _size(a, MAX_LEAF) > MAX_LEAF:
            raise ApplyError(f"the edit would rewrite {path}, over {MAX_LEAF} values; left untouched")
        found = DeepDiff(b, a, verbose_level=1)
        for kind in ("dictionary_item_removed", "iterable_item_removed"):
            said += [f"{path}{str(w).removeprefix('root')} removed" for w in found.get(kind, ())]
        for where, change in found.get("type_changes", {}).items():  # a value set where null stood is not
            if isinstance(change["old_value"], (dict, list)):  # a section or a list turned into a value
                said.append(
                    f"{path}{str(where).removeprefix('root')} turned into {change['new_type'].__name__}"
                )
    return said
