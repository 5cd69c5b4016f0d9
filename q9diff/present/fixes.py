"""A fix as the user pastes it: each setting's line in the toolchain they build with (the forms and their
lines: q9diff.compare.toolchains), short enough to read at 80 columns, with why a form has no line.

Every presenter draws a fix from here (terminal, HTML, Markdown): one home, one wording. Which
toolchain is the user's is said by the diff (`toolchain` in its JSON: from the candidate's own files, or
--toolchain); the other forms stay behind -v (the terminal) or below it (the reports).
"""

from __future__ import annotations

from q9diff.compare.toolchains import FORMS, LABELS, graphs_line, lines


def missing(s: dict, form: str) -> str:
    """Why a form has no line for a setting: ExecuTorch takes the HTP arch from the chipset (its
    QcomChipset's SoC table), so a dsp_arch fix there is a chipset of that arch."""
    if form == "executorch" and s["setting"] == "dsp_arch":
        return f"ExecuTorch takes the arch from the QcomChipset: a v{s['value']} SoC's"
    return f"no {LABELS[form]} setting"


def note(s: dict, form: str) -> str | None:
    """What a line needs said beside it (the qairt device config's soc_details caveat)."""
    if form == "qairt" and "  # " in s["targets"]["qairt"]:
        return s["targets"]["qairt"].split("  # ", 1)[1]
    return None


def chosen(data: dict, asked: str | None = None) -> str:
    """The form to lead with: the one asked for (--toolchain), else the diff's `toolchain`, else qairt."""
    if asked and asked in LABELS:
        return asked
    picked = (data.get("toolchain") or {}).get("form")
    return picked if picked in LABELS else "qairt"


def next_step(data: dict) -> str | None:
    """The command that makes the fix (`q9diff suggest ... --apply CONFIG`), as the diff recorded it for
    the paths the user gave; None when there is nothing to change."""
    nxt = data.get("next")
    return nxt if isinstance(nxt, str) and nxt and data.get("suggestions") else None


# The glossary's words for the causes a report names (q9diff.explain's terms.json).
_TERMS = {"soc_model": "soc_model", "dsp_arch": "dsp_arch", "vtcm_size": "VTCM",
          "optimization_level": "optimization_level", "weights_packing": "weights_packing"}  # fmt: skip


def terms_named(data: dict) -> list[str]:
    """The glossary terms a report's causes use, for a `q9diff explain` line: at most four."""
    causes = data.get("causes") or []
    out = []
    if any(c.get("name") == "soc_model" and c.get("a") == 0 for c in causes):
        out.append("'generic target'")
    out += [_TERMS[c["name"]] for c in causes if c.get("role") == "root" and c.get("name") in _TERMS]
    if any(c.get("role") == "effect" for c in causes):
        out.append("effects")
    return list(dict.fromkeys(out))[:4]


def blocks(suggestions: list[dict], data: dict | None = None) -> list[tuple[str, list[str]]]:
    """The fix as the reports draw it: for each toolchain form, the one the diff says first, its heading
    and its lines (each setting's, with a # comment naming it; qairt's `graphs` last), ready to paste."""
    from q9diff.units import config_value  # start-up: units

    lead = chosen(data or {})
    out = []
    for form in [lead, *(f for f, _ in FORMS if f != lead)]:
        found = []
        for s in suggestions:
            head = f"{s['setting']} = {config_value(s['setting'], s['value'])}"
            these = lines(s, form)
            python = form in ("qairt", "executorch")  # a Python line says its setting in a comment
            found += [f"{line}  # {head}" if python else line for line in these]
        if form == "qairt" and (g := graphs_line(suggestions)):
            found += packed(g)
        if found:
            why = (data or {}).get("toolchain", {}).get("why") if form == lead else None
            out.append((LABELS[form] + (f" ({why})" if why else ""), found))
    return out


def packed(line: str, pad: str = "", width: int = 78) -> list[str]:
    """`graphs = ("a", "b", ...)` broken after commas inside the parentheses, as Python reads it, so no
    line passes `width` where it can be helped."""
    first = f"{pad}{line}"
    if len(first) <= width or ", " not in line:
        return [first]
    head, names = line.split("(", 1)
    indent = " " * (len(pad) + len(head) + 1)
    items = names.split(", ")
    out, current = [], f"{pad}{head}("
    for i, name in enumerate(items):
        piece = name + ("," if i < len(items) - 1 else "")
        if len(current) + len(piece) + 1 > width and not current.endswith("("):
            out.append(current.rstrip())
            current = indent
        current += piece + " "
    out.append(current.rstrip())
    return out


def precision_rows(data: dict) -> tuple[str, list[tuple[str, str]]] | None:
    """Where the reference's precision is made, for the reports: the sentence (`quantization fp16 →
    w8a16: the precision is chosen when ...`) and (toolchain label, where) rows, the candidate's own
    toolchain first, AI Hub's option last; None where no precision differs."""
    from q9diff.compare.toolchains import precision_fix  # start-up: compare.toolchains

    p = precision_fix(data.get("causes") or [])
    if p is None:
        return None
    lead = chosen(data)
    rows = [(LABELS[f], p["lines"][f]) for f in sorted(LABELS, key=lambda f: f != lead)]
    rows += [("AI Hub", f"the compile option {p['ai_hub']}")] if p["ai_hub"] else []
    return f"quantization {p['change']}: {p['lead']}", rows


def soc_set_fix(data: dict) -> tuple[str, list[str]] | None:
    """Two multi-SoC context DLCs built for different SoCs (the set cause `soc_set`): the fix is the
    reference's SoC list, in ONNX Runtime's QNN EP provider options (the one tool measured to write such a
    DLC), as its caches' metadata names them: (the sentence, the option lines); no lines where a cache does
    not name its SoC or arch; None where the SoCs do not differ. It stands in for the parts' fixes, which
    cannot add a cache."""
    socs = next((c for c in data.get("causes") or [] if c.get("name") == "soc_set"), None)
    if socs is None:
        return None
    options = socs.get("ort_options")
    if options is None:
        return "build for the reference's SoCs (a cache's metadata does not name its SoC or arch)", []
    lines = [f"{k}={v}" for k, v in options.items()]
    return "build for the reference's SoCs, in ONNX Runtime QNN EP provider options", lines
