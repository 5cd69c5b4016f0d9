"""The terminal view of `q9diff verify` (`VerifyResult`, as `q9diff.verify/1` saves it): where each side
ran, the outputs compared (or an LLM's tokens and drift per step), and the verdict with what the place it
ran cannot show."""

from __future__ import annotations

from q9diff.present.terminal import console, text


def _fmt(m) -> str:
    return "" if m is None else f"{m.max_abs:.2g} / {m.cosine:.4f}"


def print_verify(res) -> None:
    """The verdict first (PASS or FAIL, where, and what that place cannot show), then where each side ran
    and what was compared, then the reach and the command to run next."""
    from rich.table import Table

    print_verdict(res)
    for side in res.sides:
        console.print(text((side.label, "bold"), f": {side.source} ({side.runner})"))
        for note in side.notes:
            console.print(text(f"  note: {note}"))
    for note in res.notes:
        console.print(text(f"note: {note}"))
    if res.llm is not None:
        c = res.llm
        console.print(f"LLM: prompt {list(c.prompt)} ({len(c.prompt)} tokens), greedy", soft_wrap=True)
        for label, toks in c.tokens.items():
            console.print(text(f"  tokens {label:<10} {' '.join(map(str, toks))}"), soft_wrap=True)
        for label, said in c.texts.items():
            console.print(text(f"  text   {label:<10} {said!r}"))
        for pair, step in c.first_divergence.items():
            console.print(
                text(
                    f"  {pair}: "
                    + ("same tokens at every step" if step is None else f"diverge at step {step}")
                )
            )
        if not c.steps:
            print_reach(res)
            return
        t = Table(title="per step (logits teacher-forced on the anchor's tokens): max abs Δ / cosine")
        labels = list(c.tokens)
        short = {"candidate": "cand", "reference": "ref"}
        for col in ["step", *[short.get(x, x) for x in labels], "cand~cpu", "ref~cpu", "cand~ref"]:
            t.add_column(col, justify="right", no_wrap=True)
        for d in c.steps:
            t.add_row(
                str(d.step),
                *[str(d.tokens.get(x, "")) for x in labels],
                _fmt(d.vs_cpu.get("candidate")),
                _fmt(d.vs_cpu.get("reference")),
                _fmt(d.vs_reference),
            )
        console.print(t)
    else:
        t = Table(title="outputs: candidate against each other side")
        for col in ("graph", "output", "against", "max abs Δ", "rel", "cosine", "ok"):
            t.add_column(col, overflow="fold")
        for o in res.outputs:
            m = o.metrics
            ok = text("yes") if o.passed else text(("NO", "red"))
            cells = (f"{m.max_abs:.3g}", f"{m.rel:.3g}", f"{m.cosine:.6f}", ok)
            graph = o.graph if len(o.graph) <= 32 else "…" + o.graph[-31:]
            t.add_row(text(graph), text(o.output), text(o.against), *cells)
        console.print(t)
    print_reach(res)


def print_verdict(res) -> None:
    """PASS or FAIL with what it rests on, the caveats, and a CPU divergence: the view's first lines."""
    c = res.llm
    if c is not None and "cpu" in c.tokens:
        cpu_div = next(
            (v for k, v in c.first_divergence.items() if k.endswith("~cpu") and v is not None), None
        )
        if cpu_div is not None:
            console.print(
                text(
                    (
                        f"The compiled model leaves its CPU reference at step {cpu_div}: the binary"
                        " does not compute what the ONNX model does (quantization or conversion).",
                        "bold yellow",
                    )
                )
            )
    from q9diff.verify.verdict import judge  # start-up: verify.verdict

    v = judge(res)
    console.print(text((v.headline, "bold green" if v.passed else "bold red")))
    for caveat in v.caveats:
        console.print(text((caveat, "bold red")))


def print_reach(res) -> None:
    """What the place the builds ran can show, and the command that shows more: the view's last lines."""
    from q9diff.verify.verdict import judge  # start-up: verify.verdict

    v = judge(res)
    console.print(text(f"reach: {v.reach}"))
    if v.next_command:
        console.print(text(f"  {v.next_command}"), soft_wrap=True)  # a line to copy: never wrapped
