"""The Markdown report, for CI job summaries and pull-request comments: the verdict, the root causes with
both values, the fix lines (one code block per setting, copyable), and the sizes.

It reads the same saved result as the HTML report (the command's JSON). Every string from a file or a
saved result goes through one of two escapes: `md` for text (no markup, tag, mention, autolink or
reordering) and `code_block` for fix lines (fenced longer than any backtick run inside, one line a value).
"""

from __future__ import annotations

import html
import json
import re

from q9diff.compare.models import NOT_MEANINGFUL
from q9diff.errors import printable
from q9diff.present.verdict import (
    bundle_lines,
    clip,
    doctor_asked,
    doctor_headline,
    generic_soc,
    headline,
    label,
    load_rows,
    models_line,
    outside_headline,
    outside_words,
    reference_looks_wrong,
    refusal,
    refused,
    role,
    root_line,
    set_root,
    sides,
    warnings,
)
from q9diff.units import change, human, nbytes, opt_level, value, vtcm

_SPECIAL = re.compile(r"([\\`*_\[\]|#~!])")
# Zero-width characters and the byte-order mark: a reader would not see them. Control characters, bidi
# marks and line separators are printable()'s (q9diff.errors).
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff]")
# What GitHub turns into a link or a notification wherever it appears in text: `@name` (also the middle of
# an e-mail address), `scheme://` and `www.`. A zero-width space after the `@`, the `:` or the `www`,
# written as an entity, breaks each; a reader sees the same.
_LINKS = re.compile(r"(@|(?<=[A-Za-z]):(?=//)|\b[Ww]{3}(?=\.))")
ZWSP = "&#8203;"
# `#123` and `ai-hub-apps#148` are cross-references to the wrong repository's issues where GitHub reads
# them; as code (no backtick can be in one) they are not, and the raw text stays readable (an entity
# after each `#` was noise in a CI log).
_ISSUE = re.compile(r"[\w./-]*#\d+")


def _plain(v) -> str:
    """A string from a file, one line, every character a reader sees as itself: controls, bidi marks and
    separators as visible escapes (\\u202e), never acted on."""
    text = printable(str(v).replace("\r\n", "\n"))
    return _INVISIBLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def md(v) -> str:
    """Text safe in a Markdown paragraph, heading or table cell of a pull-request comment: one line, no
    markup, no tag (shown, not run), no @mention, no autolink, no reordered text."""
    text, out, at = _plain(v), [], 0
    for m in _ISSUE.finditer(text):
        out += [_text(text[at : m.start()]), f"`{m.group()}`"]
        at = m.end()
    return "".join(out) + _text(text[at:])


def _text(s: str) -> str:
    s = _SPECIAL.sub(r"\\\1", html.escape(s, quote=False))
    return _LINKS.sub(lambda m: m.group() + ZWSP, s)


def code_block(lines: list[str]) -> str:
    """A fenced code block of `lines`, each one line (a value's own newline or control shown as an
    escape), fenced by more backticks than any run inside, so no value can end the block; inside it
    nothing is markup, a link or a mention."""
    body = [_plain(x) for x in lines]
    runs = [len(r) for x in body for r in re.findall("`+", x)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}\n" + "".join(f"{x}\n" for x in body) + f"{fence}\n"


def size_change(a: int, b: int) -> str:
    """`+24,576 B (+2.1%)`: the exact bytes and the share of the candidate's size, as the terminal says."""
    return change(b - a, a)


def _bytes(n: int) -> str:
    return f"{n:,d} B ({human(n)})" if abs(n) >= 1024 else f"{n:,d} B"


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _refusal(load: dict | None) -> str:
    """The answer to --runtime or --target where it refuses the build, the report's first words, as the
    terminal's: `Will not load on QAIRT 2.48` with each refusing finding and its fix ('' otherwise)."""
    if not refused(load):
        return ""
    head, rows = refusal(load)
    out = f"> **{md(head)}**\n"
    for rule, parts, said, error, fix in rows:
        out += f">\n> - **{md(rule)}** ({md(parts)}): {md(said)}\n"
        out += f">   it prints {md(error)}\n" if error else ""
        out += f">\n>   **Fix:** {md(fix)}\n" if fix else ""
    return out + "\n"


def _verdict(data: dict, over_set: bool = False, of_set: dict | None = None) -> str:
    """The first lines: a refusal by the runtime or device named, the warning sentence, the root causes.
    `data`: a diff's JSON (two files, a set, or one part of the set `of_set`)."""
    causes = data["causes"]
    out = _refusal(data.get("load"))
    out += "".join(f"> **{md(w)}**\n\n" for w in warnings(causes, refused((of_set or data).get("load"))))
    swapped = reference_looks_wrong(causes, *sides(data))
    if swapped:
        out += f"> **Arguments swapped?** {md(swapped)}; the known-good build comes second.\n\n"
    o, head = data.get("outside"), outside_headline(data.get("outside"), data["identical"])  # containers
    listed = "".join(f"\n- {md(line)}" for line in bundle_lines(data))  # two bundles: what differs
    listed += "\n" if listed else ""
    if head:
        return out + f"**{md(head)}**\n" + listed
    lead = models_line(data.get("different_models", {}).get("evidence"))
    out += f"**{md(lead)}**\n\n" if lead else ""
    text = headline(causes, lead, over_set)
    return out + f"**{md(text)}**\n" + (f"\n{md(outside_words(o))}\n" if o is not None else "") + listed


def _value(c: dict, side: str) -> str:
    """A cause's value as the terminal says it: in its unit (4 MiB, 3, 1017 ops), a value per graph as
    `a / b`, never a raw list or byte count."""
    if c["name"] == "compiler_options":  # a and b: each side's values of the options that differ
        a, b = (c["a"], c["b"]) if isinstance(c["a"], dict) and isinstance(c["b"], dict) else ({}, {})
        return f"{len(set(a) | set(b))} options differ" if side == "a" else ""
    v = c[side]
    s = value(c["name"], v) if isinstance(v, (int, list)) and not isinstance(v, bool) else None
    s = s if s is not None else (json.dumps(v, default=str) if not isinstance(v, str) else v)
    return md(clip(s, 80))


def _causes(
    causes: list[dict], level: str = "###", sides: tuple[str, str] = ("candidate", "reference")
) -> str:
    """Each cause with both values; `sides` heads the two value columns (a target run: the build and the
    device)."""
    if not causes:
        return ""
    rows = [
        [
            md(label(c)),
            md(role(c)),
            _value(c, "a"),
            _value(c, "b"),
            "" if c["bytes"] is None else _bytes(c["bytes"]),
            md(clip("; ".join(c["evidence"]), 300)),
        ]
        for c in causes
    ]
    return f"\n{level} Causes\n\n" + _table(
        ["cause", "role", md(sides[0]), md(sides[1]), "bytes", "evidence"], rows
    )


def _fixes(suggestions: list[dict], data: dict | None = None) -> str:
    """The fix in the toolchain the candidate's files say, a block to paste; the other forms after it, each
    its own block; no fix where the arguments look swapped; what to run next."""
    from q9diff.present import fixes  # start-up: present.fixes

    if (data or {}).get("reference_looks_wrong"):
        return "\n### Fix\n\nNo fix is shown: the arguments look swapped (see above).\n"
    precision = fixes.precision_rows(data or {})
    said = ""
    if precision is not None:  # a change to make that no setting makes
        said = f"\n{md(precision[0])}:\n\n" + "".join(f"- **{md(f)}**: {md(w)}\n" for f, w in precision[1])
    socs = fixes.soc_set_fix(data or {})
    if socs is not None:  # a SoC list to build for, which no part's setting makes
        return f"\n### Fix\n\n**{md(socs[0])}**:\n\n" + (code_block(socs[1]) if socs[1] else "")
    if not suggestions:
        return "\n### Fix\n" + (said or "\nNo setting to change.\n")
    first, *others = fixes.blocks(suggestions, data)
    out = f"\n### Fix\n\n**{md(first[0])}**:\n\n" + code_block(first[1])
    if others:  # folded, as a pull-request comment shows them: the candidate's own form stays in view
        out += "\n<details><summary>Other toolchains</summary>\n"
        for label, lines in others:
            out += f"\n{md(label)}\n\n" + code_block(lines)
        out += "\n</details>\n"
    nxt = fixes.next_step(data or {})
    return out + said + ("\nNext:\n\n" + code_block([nxt]) if nxt else "")


def _sizes(data: dict) -> str:
    a, b = data["a"]["size"], data["b"]["size"]
    rows = [["file", _bytes(a), _bytes(b), size_change(a, b)]]
    out = "\n### Sizes\n\n" + _table(["", "candidate", "reference", "change"], rows)
    at = data.get("attribution") or []
    if at and "different_models" in data:
        return out + f"\nbyte attribution: {md(NOT_MEANINGFUL)}\n"
    if at:
        rows = [[md(r["bucket"]), _bytes(r["changed_bytes"]), f"{r['size_delta']:+,d} B"] for r in at]
        rows.append(
            [
                "**total**",
                _bytes(sum(r["changed_bytes"] for r in at)),
                f"{sum(r['size_delta'] for r in at):+,d} B",
            ]
        )
        verdict = f"{md(data['weights_verdict'])}\n\n" if data.get("weights_verdict") else ""
        out += "\nWhere the changed bytes went (rows add up):\n\n" + verdict
        out += _table(["effect", "changed bytes", "size delta"], rows)
    return out


def _structure(data: dict, level: str = "###") -> str:
    """What changed in the structure (graphs, I/O tensors, tensor types, ops, precision), in words."""
    s = data.get("structure") or {"same": True}
    if s.get("same", True):
        return ""
    return f"\n{level} Structure\n\n" + "".join(f"- {md(w)}\n" for w in s["words"])


def _load(data: dict) -> str:
    """Will it load on the runtime and device named (the JSON's `load`), when one was named."""
    if not data.get("load"):
        return ""
    head, rows = load_rows(data["load"])
    out = f"\n### {md(head)}\n\n"
    if rows:
        out += _table(
            ["rule", "parts", "why", "it prints"],
            [[md(r), md(p), md(t), md(e or "")] for r, p, t, e, _ in rows],
        )
    fixes = list(dict.fromkeys(f for *_, f in rows if f))  # sentences (rebuild with ...), not lines to paste
    return out + "".join(f"\n**Fix:** {md(f)}\n" for f in fixes)


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def render(data: dict) -> str:
    """Two files (`q9diff.diff/1`)."""
    a, b = data["a"]["path"], data["b"]["path"]
    return (
        f"## q9diff diff: {md(_name(a))} vs {md(_name(b))}\n\n"
        + _verdict(data)
        + f"\ncandidate {md(a)} vs reference {md(b)}\n"
        + _causes(data["causes"])
        + _structure(data)
        + _fixes(data["suggestions"], data)
        + _load(data)
        + _sizes(data)
    )


def render_set(data: dict) -> str:
    """Two sets of parts (`q9diff.setdiff/1`): the set's verdict and fix, the parts' sizes, each part's
    causes."""
    rows = []
    for p in data["parts"]:
        a, b = p["a"]["size"], p["b"]["size"]
        line = root_line(p["causes"]) or ("identical" if p["identical"] else "data only")
        rows.append(
            [md(p["part"]), md(_name(p["b"]["path"])), _bytes(a), _bytes(b), size_change(a, b), md(line)]
        )
    for side, paths in (("a", data["unpaired_a"]), ("b", data["unpaired_b"])):
        for p in paths:
            pair = [md(_name(p)), "(none)"] if side == "a" else ["(none)", md(_name(p))]
            rows.append([*pair, "", "", "", "unpaired"])
    rows.append(
        [
            "**set total**",
            "",
            _bytes(data["a_total"]),
            _bytes(data["b_total"]),
            size_change(data["a_total"], data["b_total"]),
            md(root_line(data["causes"])),
        ]
    )
    parts = "".join(  # each part's causes; its verdict only where it differs from the set's
        f"\n#### {md(p['part'])}\n"
        + (
            _verdict(p, of_set=data)
            if root_line(p["causes"]) != root_line(data["causes"]) or p["identical"]
            else ""
        )
        + _causes(p["causes"], "#####")
        + _structure(p, "#####")
        for p in data["parts"]
    )
    ra, rb = set_root(data, "a"), set_root(data, "b")
    na, nb = len(data["parts"]) + len(data["unpaired_a"]), len(data["parts"]) + len(data["unpaired_b"])
    return (
        f"## q9diff set diff: {md(_name(ra))} vs {md(_name(rb))}\n\n"
        f"candidate {md(ra)} ({na} parts) vs reference {md(rb)} ({nb} parts)\n\n"
        + _verdict(data, over_set=True)
        + _fixes(data["suggestions"], data)
        + _load(data)
        + "\n### Sizes, part by part\n\n"
        + _table(
            ["candidate part", "reference part", "candidate", "reference", "change", "root causes"], rows
        )
        + parts
    )


def render_verify(res) -> str:
    """verify (`VerifyResult`): the verdict, the sides, what differed."""
    from q9diff.verify.verdict import judge  # start-up: verify.verdict

    v = judge(res)  # the verdict with its reach and caveats, as the terminal and the HTML say it
    status = ("PASS, with a caveat" if v.caveats else "PASS") if v.passed else "FAIL"
    out = f"## q9diff verify: {status}\n\n**{md(v.headline)}**\n\n"
    out += "".join(f"**Caveat:** {md(c)}\n\n" for c in v.caveats)
    out += "\n" + code_block([v.next_command]) + "\n" if v.next_command else ""
    out += "".join(f"- **{md(s.label)}**: {md(s.source)} ({md(s.runner)})\n" for s in res.sides)
    out += "".join(f"- note: {md(n)}\n" for n in res.notes)
    if res.llm is not None:
        rows = [[md(k), md(" ".join(map(str, v)))] for k, v in res.llm.tokens.items()]
        out += "\n" + _table(["side", "tokens"], rows)
        out += "".join(
            f"- {md(k)}: " + ("same tokens at every step\n" if v is None else f"diverge at step {md(v)}\n")
            for k, v in res.llm.first_divergence.items()
        )
    elif res.outputs:
        rows = [
            [
                md(o.graph),
                md(o.output),
                md(o.against),
                f"{o.metrics.max_abs:.4g}",
                f"{o.metrics.rel:.4g}",
                f"{o.metrics.cosine:.6f}",
                "yes" if o.passed else "**NO**",
            ]
            for o in res.outputs
        ]
        out += "\n" + _table(["graph", "output", "against", "max abs", "rel", "cosine", "ok"], rows)
    return out


def render_doctor(report) -> str:
    """doctor (`DoctorResult`): the verdict (`Will not load on QAIRT 2.48: 1 error`) and what it was
    judged for, every error and warning with its fix, then the hypotheses implicated, when one is."""
    out = f"## {md(doctor_headline(report)[0])}\n\nq9diff doctor: {md(doctor_asked(report))}\n"
    if report.target is not None:
        out += f"\n{md(report.profile['sentence'])}\n"
    for severity in ("error", "warning"):  # each with its evidence, and its fix as a line to copy
        shown = [f for f in report.findings if f.severity == severity]
        if shown:
            out += f"\n### {severity.capitalize()}s\n"
        for f in shown:
            out += f"\n- **{md(f.check)}** ({md(f.where)}): {md(f.evidence)}\n"
            out += f"\n  **Fix:** {md(f.fix)}\n" if f.fix else ""  # a sentence, not a line to paste
    hyps = report.hypotheses()
    implicated = [f"{n} {md(h['title'])}" for n, h in hyps.items() if h["status"] == "implicated"]
    return out + (f"\n**Hypotheses implicated:** {'; '.join(implicated)}\n" if implicated else "")


def render_target(data: dict) -> str:
    """A build judged against a device with no reference (q9diff.target/1)."""
    name = data["target"]["name"]
    out = f"## q9diff --target {md(name)}\n\n" + _refusal(data.get("load"))
    if any(c["name"] == "soc_model" and c["a"] == 0 for c in data["causes"]):
        out += f"> **{md(generic_soc(data['target']['soc_model'], refused(data.get('load'))))}**\n\n"
    verdict = (
        "Every setting the target determines matches it."
        if data["matches"]
        else f"Root causes against {name}: {root_line(data['causes'])}"
    )
    out += f"**{md(verdict)}**\n\n{md(data['profile']['sentence'])}\n"
    out += "".join(f"\n> **error:** {md(e)}\n" for e in data["errors"])
    causes = _causes(data["causes"], sides=("build", name))
    return out + causes + _fixes(data["suggestions"], data) + _load(data)


def render_load(load: dict) -> str:
    """Will it load (the `load` of a diff's or a target's JSON) alone: the Python API's `will_load`."""
    return f"## q9diff: {md(load['verdict'])}\n" + _load({"load": load})


GENERIC_TARGET = "Generic target (soc_model 0): it loads everywhere and may compute garbage on the device."


def render_inspect(summaries: list[dict]) -> str:
    """Each context (`q9diff.inspect/1`): what built it, its target, its graphs' settings, every region;
    the Python API's `Build.to_markdown()`."""
    out = []
    for s in summaries:
        t = s["target"]
        req = t["soc_model_requested"]
        arch = f"v{s['dsp_arch']}" if s["dsp_arch"] else "not recorded"
        text = f"## q9diff inspect: {md(s['path'])}, {nbytes(s['size'])}\n\n"
        if t["generic_target"]:
            text += f"> **{md(GENERIC_TARGET)}**\n\n"
        text += (
            f"QAIRT build {md(s['build_id'])}, blob {md(s['context_blob_version'])}; target soc_model "
            f"{'not recorded' if req is None else req}, dsp_arch {arch} ({md('; '.join(t['evidence']))})\n\n"
        )
        graphs = [
            [md(g["name"]), f"{len(g['inputs'])} / {len(g['outputs'])} / {len(g['ops'])}",
             vtcm(g["vtcm_size"]), md(opt_level(g["optimization_level"], g["options"].get("O"))),
             str(g["num_hvx_threads"]), "unknown" if g["const_size"] is None else nbytes(g["const_size"])]
            for g in s["graphs"]
        ]  # fmt: skip
        head = ["graph", "inputs / outputs / ops", "vtcm_size", "optimization_level", "hvx_threads", "const"]
        text += _table(head, graphs)
        text += "".join(f"\n- not recorded: {md(k)}: {md(why)}" for k, why in s["unknown"].items())
        regions = [[md(r["name"]), f"{r['offset']:#x}", nbytes(r["size"])] for r in s["regions"]]
        out.append(text + "\n### Regions (every byte)\n\n" + _table(["region", "offset", "size"], regions))
    return "\n".join(out)
