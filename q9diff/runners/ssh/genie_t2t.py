"""Qualcomm's `genie-t2t-run` on the device: a Genie bundle staged under flat names, a greedy token
query, and its output parsed into tokens and KPIs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from q9diff.runners.base import RunnerError
from q9diff.runners.ssh.client import QairtPaths

GENIE_TOKENS_FILE = "tokens.txt"


def genie_t2t_run_argv(
    qairt: QairtPaths,
    config: str,
    *,
    prompt: str | None = None,
    prompt_file: str | None = None,
    tokens_file: str | None = None,
    profile: str | None = None,
) -> list[str]:
    """genie-t2t-run with exactly one of --prompt, --prompt_file, --tokens_file (the tool's own rule)."""
    given = [(flag, v) for flag, v in (("--prompt", prompt), ("--prompt_file", prompt_file),
                                       ("--tokens_file", tokens_file)) if v is not None]  # fmt: skip
    if len(given) != 1:
        raise RunnerError("genie-t2t-run takes exactly one of prompt, prompt_file, tokens_file")
    argv = [qairt.tool("genie-t2t-run"), "--config", config, *given[0]]
    return argv + (["--profile", profile] if profile else [])


def tokens_file_text(token_ids: list[int]) -> str:
    """A --tokens_file: the token ids separated by spaces (token-to-token queries, basic dialogs only)."""
    return " ".join(str(int(t)) for t in token_ids) + "\n"


@dataclass(frozen=True)
class GenieKpis:
    """The `[KPIS]:` block genie-t2t-run prints after a query; times in microseconds, rates in tokens/s."""

    init_time_us: int | None = None
    prompt_processing_time_us: int | None = None
    prompt_processing_rate: float | None = None
    token_generation_time_us: int | None = None
    token_generation_rate: float | None = None


@dataclass(frozen=True)
class GenieOutput:
    """What genie-t2t-run answered: the prompt it echoed, the generated text, its KPIs, its version;
    for a token query (`[PROMPT TOKENS]:`) the answer's token ids, and what the runner noted."""

    text: str
    prompt: str | None
    kpis: GenieKpis
    genie_version: str | None
    tokens: tuple[int, ...] | None = None  # None: a text query, whose answer is text
    notes: tuple[str, ...] = ()


TOKEN_ID = re.compile(r"[0-9]{1,10}")  # GenieDialog token ids are uint32; ASCII digits only


_KPI_PATTERNS = {
    "init_time_us": r"Init Time\s*:\s*(\d+)\s*us",
    "prompt_processing_time_us": r"Prompt Processing Time\s*:\s*(\d+)\s*us",
    "prompt_processing_rate": r"Prompt Processing Rate\s*:\s*([\d.]+)\s*toks/sec",
    "token_generation_time_us": r"Token Generation Time\s*:\s*(\d+)\s*us",
    "token_generation_rate": r"Token Generation Rate\s*:\s*([\d.]+)\s*toks/sec",
}


def parse_genie_output(stdout: str) -> GenieOutput:
    """Read genie-t2t-run's stdout: `[PROMPT]: …` (or `[PROMPT TOKENS]: …`), `[BEGIN]: … [END]`, then
    an optional `[KPIS]:` block."""
    begin = stdout.find("[BEGIN]:")
    end = stdout.find("[END]", begin + 1)
    if begin < 0 or end < 0:
        last = next((ln.strip() for ln in reversed(stdout.splitlines()) if ln.strip()), "no output")
        raise RunnerError(f"genie-t2t-run gave no [BEGIN]: … [END] answer: {last[:300]}")
    text = stdout[begin + len("[BEGIN]:") : end].strip()
    token_query = "[PROMPT TOKENS]:" in stdout[:begin]
    marker = "[PROMPT TOKENS]:" if token_query else "[PROMPT]:"
    prompt_at = stdout.find(marker)
    prompt = stdout[prompt_at + len(marker) : begin].strip() if 0 <= prompt_at < begin else None
    tokens = None
    if token_query:
        if not all(TOKEN_ID.fullmatch(word) and int(word) < 1 << 32 for word in text.split()):
            raise RunnerError(f"genie-t2t-run answered a token query with {text[:100]!r}, not token ids")
        tokens = tuple(int(word) for word in text.split())
    tail = stdout[end:]
    values: dict[str, float | int] = {}
    if "[KPIS]:" in tail:
        for field, pattern in _KPI_PATTERNS.items():
            m = re.search(pattern, tail)
            if m:
                values[field] = float(m.group(1)) if "rate" in field else int(m.group(1))
    version = re.search(r"Using libGenie\.so version (\S+)", stdout[:begin])
    return GenieOutput(text, prompt, GenieKpis(**values), version.group(1) if version else None, tokens)


def stage_genie_bundle(bundle: Path, stage: Path, prompt_ids: list[int], steps: int) -> list[str]:
    """Lay out in `stage` what genie-t2t-run needs on the device, so that one push carries it: each file
    the bundle's config names (a symlink under a flat, unique name), a patched genie_config.json naming
    them relative to the directory genie-t2t-run runs in, and the tokens file. Returns what was changed."""
    from q9diff.runners.genie import CONFIG_NAME, GenieError, write_patched_config  # start-up: runners.genie

    bundle = bundle.parent if bundle.is_file() else bundle
    if not prompt_ids or steps < 1:
        raise RunnerError("a Genie run needs at least one prompt token and one step")
    names: dict[Path, str] = {}

    def place(local: Path) -> str:
        if local not in names:
            if not local.is_file():
                raise RunnerError(f"{bundle / CONFIG_NAME} names {local}, which does not exist")
            names[local] = f"{len(names)}_{local.name}"
            (stage / names[local]).symlink_to(local)
        return names[local]

    try:
        _, notes, _ = write_patched_config(bundle, stage, None, place=place, max_num_tokens=steps)
    except (GenieError, OSError, ValueError) as exc:
        raise RunnerError(f"{bundle}: {exc}") from None
    (stage / GENIE_TOKENS_FILE).write_text(tokens_file_text(prompt_ids))
    return notes
