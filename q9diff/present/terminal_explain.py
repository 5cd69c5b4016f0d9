"""The terminal view of `q9diff explain`: each message and error code found, what it means, its known
causes with their evidence, and the q9diff command that tells which one applies."""

from __future__ import annotations

from q9diff.present.terminal import console, text


def _causes(causes) -> None:
    if not causes:
        return
    console.print(text("  known causes:"))
    for c in causes:
        console.print(text("  - ", c.cause, (f" [{c.evidence}: {c.source}]", "dim")))
        if c.check:
            console.print(text("    tells which: ", (c.check, "green")))


def print_match(found) -> None:
    from q9diff.explain import primary

    for m in found.messages:
        where = f"{m.library}, QAIRT {_versions(m.versions)}" if m.versions else f"{m.library}, seen in logs"
        console.print(text((m.text, "bold"), f"  ({where})"))
        console.print(text(f"  {m.meaning}"))
        if m.codes:
            console.print(text("  ends with: " + ", ".join(str(v) for v in m.codes)))
        _causes(m.causes)
    for code, aliases in primary(found.codes):
        value = f"{code.value}" + (f" ({code.hex})" if code.hex else "")
        api = "Genie" if code.api == "genie" else f"QNN {code.api.replace('_', ' ')} API"
        console.print(text((f"{value} {code.name}", "bold"), f"  ({api}, {code.source})"))
        console.print(text(f"  {code.meaning}"))
        if aliases:
            console.print(text("  the same value is also named " + ", ".join(aliases)))
        _causes(code.causes)
    for t in found.terms:
        console.print(text((t.term, "bold"), (f"  (also: {', '.join(t.also)})" if t.also else "")))
        console.print(text(f"  {t.says}"))
        console.print(text("  more: ", (t.see, "green")))


def _versions(v: tuple[str, ...]) -> str:
    return v[0] if len(v) == 1 else f"{v[0]}-{v[-1]}"
