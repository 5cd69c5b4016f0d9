"""The verdict of `q9diff verify` in words, the same in the terminal, the JSON and the HTML: PASS or FAIL,
where it ran, and what that runner cannot show.

The x86 HTP emulator computes soc_model 0 and soc_model 77 builds bit-identically (measured: README,
"verify"), so a PASS there says nothing about the target SoC; a candidate whose files say it was built for
the generic target (soc_model 0, the motivating bug, what `q9diff diff` warns about) is never a bare PASS:
the verdict says so in its own line. The exit status stays 0 (the outputs agree where they ran): `diff`
and `doctor` exit 1 on such a build, and are the gate for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a path resolved (verify's command resolves it): only named here
    from q9diff.inputs import Input

# What each runner can and cannot catch, said with every verdict (measured: README "verify").
RUNNER_REACH = {
    "local": "x86 HTP emulator: catches quantization, structure and recipe mistakes; computes soc_model 0 and"
    " 77 builds bit-identically, so a fault only Hexagon hardware shows needs --runner ssh://user@evk",
    "genie": "Genie on the x86 HTP emulator: the device's dialog loop (tokenizer, KV handling, sampling) on"
    " emulated HTP; like local, it cannot show a fault only Hexagon hardware shows",
    "ssh": "the device itself: the only runner that shows a fault of the target SoC (e.g. soc_model 0)",
}
WHERE = {
    "local": "the x86 HTP emulator, which cannot show a wrong target SoC",
    "genie": "Genie on the x86 HTP emulator, which cannot show a wrong target SoC",
    "ssh": "the device",
}
JUDGES = {
    "reference": "the reference",
    "emulator": "q9diff's own run of the same ctx-bins",
    "cpu": "its source model (the CPU reference)",
}


@dataclass(frozen=True)
class Verdict:
    """`headline` is the line a user reads first (`PASS on the x86 HTP emulator, which cannot show a
    wrong target SoC: ...`); `caveats` what the pass does not cover, each a sentence of its own;
    `next_command` the command that says more about them (a line to copy)."""

    passed: bool
    runner: str  # local, genie or ssh
    headline: str
    caveats: tuple[str, ...]
    reach: str
    generic_target_parts: tuple[str, ...]
    next_command: str | None = None

    def to_json(self) -> dict:
        return {**asdict(self), "status": "PASS" if self.passed else "FAIL"}


def read_targets(candidate: Input) -> tuple[tuple[str, int | None], ...]:
    """Each of the candidate's files (its path) with the soc_model its build asked for
    (q9diff.compare.summary.target: 0 is the generic target), None where the file does not record it or
    cannot be read."""
    from q9diff.compare.summary import target  # start-up: compare.summary, construct
    from q9diff.errors import Q9Error  # start-up: errors

    out = []
    for part in candidate.parts:
        try:
            cb = part.open()
        except (Q9Error, OSError, ValueError, IndexError):
            out.append((str(part.path), None))
            continue
        out.append((str(part.path), target(cb)["soc_model_requested"]))
        cb.release()
    return tuple(out)


def judge(res) -> Verdict:
    """The verdict of a VerifyResult (q9diff.verify.run), with its reach and caveats."""
    cand = next((s for s in res.sides if s.label == "candidate"), None)
    runner = cand.runner if cand is not None else "local"
    runner = "ssh" if runner.startswith("ssh") else runner if runner in WHERE else "local"
    labels = {s.label for s in res.sides}
    judge_label = next(k for k in ("reference", "emulator", "cpu") if k in labels or k == "cpu")
    where = WHERE[runner]
    if res.passed:
        headline = f"PASS on {where}: the candidate computes what {JUDGES[judge_label]} does."
        if res.llm is not None:
            headline = f"PASS on {where}: {_tokens_rule(res.llm, judge_label)}"
    else:
        failed = {o.against for o in res.outputs if not o.passed}
        what = "reference" if "reference" in failed else "cpu" if failed else judge_label
        headline = f"FAIL on {where.split(',')[0]}: the candidate does not compute what {JUDGES[what]} does."
    generic = tuple(path for path, soc in res.targets if soc == 0)
    unread = tuple(Path(path).name for path, soc in res.targets if soc is None)
    caveats = []
    if generic and res.passed:
        names = ", ".join(Path(g).name for g in generic)
        of = f"all {len(res.targets)} parts" if len(generic) == len(res.targets) > 1 else names
        shown = (
            "right on this device, not shown on any other SoC"
            if runner == "ssh"
            else "it loads everywhere and may compute garbage on the device, which the emulator cannot show"
        )
        caveats.append(f"But the candidate is a generic soc_model 0 build ({of}): {shown}.")
    if unread:
        caveats.append(f"The target SoC of {', '.join(unread)} is not recorded or not read: not judged.")
    command = _see(res, generic) if caveats and generic else None
    return Verdict(res.passed, runner, headline, tuple(caveats), RUNNER_REACH[runner], generic, command)


ALIKE = 1e-3  # two builds' lowest cosines vs the CPU this close drift alike (the verdict and the chart)


def lowest_vs_cpu(llm) -> dict[str, float]:
    """Each side's lowest cosine against the CPU over the steps (the drift the chart draws); a side
    never compared with the CPU is absent."""
    worst: dict[str, float] = {}
    for step in llm.steps:
        for side, m in step.vs_cpu.items():
            if m is not None:
                worst[side] = min(worst.get(side, 1.0), m.cosine)
    return worst


def _tokens_rule(llm, judge_label: str) -> str:
    """What an LLM PASS rests on, said with the numbers the drift chart draws: the candidate's greedy
    tokens are the judge's at every step (the rule), and how far each build's logits drift from the CPU
    reference (which the chart shows beside it, and which is no tolerance of this verdict)."""
    n = len(next(iter(llm.tokens.values()), ()))
    rule = f"the candidate's greedy tokens are {JUDGES[judge_label]}'s at every one of {n} steps"
    worst = lowest_vs_cpu(llm)
    if not worst:
        return rule + "."
    drift = ", ".join(f"{side} {c:.4f}" for side, c in sorted(worst.items()))
    alike = ""
    if "candidate" in worst and "reference" in worst:
        gap = abs(worst["candidate"] - worst["reference"])
        alike = " alike" if gap < ALIKE else f" (apart by {gap:.4f})"
    return f"{rule}; both builds drift from the CPU reference{alike} (lowest cosine vs CPU: {drift})."


def _see(res, generic: tuple[str, ...]) -> str:
    """The command that names the generic build (and, given the reference, its fix)."""
    from shlex import quote  # a line to copy: each path one argument

    src = {s.label: s.source for s in res.sides}
    if "reference" in src and "candidate" in src:
        return f"q9diff {quote(src['candidate'])} {quote(src['reference'])}"
    return f"q9diff inspect {quote(generic[0])}"
