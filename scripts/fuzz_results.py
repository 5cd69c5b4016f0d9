"""Fuzz `q9diff report`: saved results (the --json of diff, a set diff, doctor, --target and verify) from
others, mutated, drawn by every presenter, in one process.

Seeds are real results made at the start from the committed fixtures (a part diff, a set diff, doctor
against a reference, doctor --target, a diff against --target) and two verify results written by hand in
the shape verify saves (outputs per graph, and an LLM run with drift steps), since verify needs the
emulator. A case changes one to three places of a seed's tree: a string for a hostile one (markup,
<script>, a plotly link or span, @mentions, URLs, `#123`, bidi and C0/C1 controls, U+2028, newlines and
backtick fences, lone surrogates), a value for another type, a huge or negative number, a list grown a
thousandfold, a value nested hundreds deep, a key removed; or the text itself (truncated, a byte
flipped, NaN). Each case is then drawn as `q9diff report FILE`, `--html` and `--markdown -`.

What counts as a fault:
- a crash: an exit status other than 0, 1 or 2, a traceback, an "internal error", or a status 2 that is
  not one line on stderr naming the file;
- an injection: in the Markdown, outside code blocks, a tag (img, a, script, iframe), an @mention, an
  autolink (`scheme://`, `www.`) or a raw bidi/C1 control; in the HTML page, a hostile tag outside the
  escaped text, or plotly markup (<a, <span, <img) in any string of a chart's JSON; in the terminal, an
  ESC or another raw control character;
- a hang: a case slower than HANG_S.

    python scripts/fuzz_results.py --cases 2500 --seed 1            # run, report
    python scripts/fuzz_results.py --seed 1 --replay 17 --save out/  # write case 17's file, show its faults

Not part of the test suite (minutes); tests/test_hostile_round4.py runs a short round.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import random
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from q9diff.cli import main  # noqa: E402
from q9diff.compare.diff import diff, to_json  # noqa: E402
from q9diff.compare.sets import diff_sets, set_to_json  # noqa: E402
from q9diff.inputs import resolve  # noqa: E402
from q9diff.read.openers import open_binary  # noqa: E402

HANG_S = 10.0
QWEN = ROOT / "fixtures" / "qwen-mini"
HOSTILE = (
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "<a href='https://evil.example' target=_blank>x</a>",
    "<span style='font-size:99px'>big</span>",
    "@octocat please look",
    "mail me at a@b.example",
    "see https://evil.example/p?q=1 and www.evil.example",
    "fixes #123 and org/repo#45",
    "\u202eevil\u202c \u2066x\u2069",
    "\x1b[2J\x1b]8;;http://x.invalid/\x1b\\link\x1b]8;;\x1b\\",
    "\x85\x9b31m C1",
    "line\u2028separated\u2029",
    "a\nb\n\n```\n<img src=y>\n```",
    "````` `` ` `",
    "<!-- hides the rest",
    "[link](javascript:alert(3))",
    "| a | b |\n|---|---|",
    "\ud800 lone",
    "%{x}<extra>y</extra>",
    "x" * 5000,
    "",
)
VALUES = (None, True, False, 0, -1, 1, 2**62, 2**63, -(2**63), 3.5, 1e308, "NaN", [], {}, [[]], {"a": {}})
# What must never reach a reader outside code: tags, mentions, autolinks, raw controls.
MD_TAGS = ("img", "a", "script", "iframe", "span", "style")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
MENTION = re.compile(r"(?<![\w&#;])@[A-Za-z0-9]")
AUTOLINK = re.compile(r"[A-Za-z]://|\bwww\.", re.I)
FENCED = re.compile(r"(?ms)^(`{3,})\n.*?^\1\n")
PLOTLY_MARKUP = re.compile(r"<(a|span|img|script|iframe)\b", re.I)


def seeds(tmp: Path) -> dict[str, dict]:
    """Real saved results of the fixtures, and verify results in the shape verify saves."""
    out = {}
    a, b = (
        open_binary(QWEN / "local" / "part_1_of_2.bin"),
        open_binary(QWEN / "reference" / "part_1_of_2.bin"),
    )
    out["diff"] = to_json(diff(a, b)) | {"schema": "q9diff.diff/1"}
    out["setdiff"] = set_to_json(diff_sets(resolve(QWEN / "local"), resolve(QWEN / "reference"))) | {
        "schema": "q9diff.setdiff/1"
    }
    for name, argv in (
        ("doctor", ["doctor", str(QWEN / "local"), "--reference", str(QWEN / "reference"), "--json"]),
        ("target", [str(QWEN / "local"), "--target", "QCS9100", "--json"]),
        ("doctor-target", ["doctor", str(QWEN / "local"), "--target", "QCS9100", "--json"]),
    ):
        code, stdout, _ = run(argv)
        if code in (0, 1):
            out[name] = json.loads(stdout)
    metrics = {"max_abs": 0.02, "rel": 0.001, "cosine": 0.9995}
    side = {"label": "candidate", "source": "local", "runner": "local", "notes": ["a note"]}
    ref = {"label": "reference", "source": "reference", "runner": "local", "notes": []}
    out["verify-outputs"] = {
        "schema": "q9diff.verify/1",
        "passed": True,
        "sides": [side, ref],
        "notes": ["a run note"],
        "outputs": [
            {
                "graph": "prompt_ar32_cl128_1_of_2",
                "output": "logits",
                "against": a,
                "metrics": metrics,
                "passed": True,
            }
            for a in ("reference", "cpu")
        ],  # fmt: skip
        "llm": None,
        "targets": [{"part": "local/part_1_of_2.bin", "soc_model": 0}],
    }
    steps = [
        {"step": i, "tokens": {"candidate": 5, "reference": 5}, "vs_cpu": {"candidate": metrics},
         "vs_reference": metrics}
        for i in range(4)
    ]  # fmt: skip
    out["verify-llm"] = out["verify-outputs"] | {
        "outputs": [],
        "llm": {
            "prompt": [1, 2, 3],
            "tokens": {"candidate": [5, 6, 7, 8], "reference": [5, 6, 7, 8], "cpu": [5, 6, 7, 9]},
            "first_divergence": {"candidate vs cpu": 3, "candidate vs reference": None},
            "steps": steps,
            "passed": True,
            "texts": {"candidate": "hello"},
        },
    }
    return out


def run(argv: list[str]) -> tuple[int, str, str]:
    """q9diff's command line in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["q9diff", *argv]
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as done:
            code = done.code
    return (code if isinstance(code, int) else -1), out.getvalue(), err.getvalue()


def _places(tree, path=()):
    """Every (path, value) of a JSON tree, the root's children first."""
    todo = [(path, tree)]
    while todo:
        p, v = todo.pop()
        yield p, v
        if isinstance(v, dict):
            todo.extend(((*p, k), x) for k, x in v.items())
        elif isinstance(v, list):
            todo.extend(((*p, i), x) for i, x in enumerate(v))


def _set(tree, path, value):
    node = tree
    for k in path[:-1]:
        node = node[k]
    if value is _DELETE and isinstance(node, dict):
        node.pop(path[-1], None)
    elif value is not _DELETE:
        node[path[-1]] = value


_DELETE = object()


def mutate(seed: dict, rng: random.Random) -> bytes:
    """One case: one to three places of the tree changed, sometimes the text after."""
    tree = copy.deepcopy(seed)
    places = [p for p, _ in _places(tree) if p]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(places)
        node = tree
        try:
            for k in path:
                node = node[k]
        except (KeyError, IndexError, TypeError):
            continue
        roll = rng.random()
        if isinstance(node, str) or roll < 0.35:
            new = rng.choice(HOSTILE)
        elif roll < 0.55:
            new = rng.choice(VALUES)
        elif roll < 0.65 and isinstance(node, list) and node:
            new = node * rng.choice((10, 100, 1000))
        elif roll < 0.75:
            new: object = rng.choice(HOSTILE)
            for _ in range(rng.choice((2, 20, 30, 400))):
                new = [new] if rng.random() < 0.5 else {"k": new}
        elif roll < 0.85:
            new = _DELETE
        elif isinstance(node, int) and not isinstance(node, bool):
            new = rng.choice((-node, node * 2**40, -1, 2**70))
        else:
            new = rng.choice(HOSTILE)
        try:
            _set(tree, path, new)
        except (KeyError, IndexError, TypeError):
            pass
    text = json.dumps(tree, allow_nan=True).encode("utf-8", "surrogatepass")
    roll = rng.random()
    if roll < 0.05:
        text = text[: rng.randrange(len(text))]
    elif roll < 0.1:
        i = rng.randrange(len(text))
        text = text[:i] + bytes([rng.randrange(256)]) + text[i + 1 :]
    elif roll < 0.13:
        text = text.replace(b"0.9995", b"NaN", 1)
    return text


def faults(path: Path, tmp: Path) -> tuple[list[str], dict]:
    """Draw one saved result in every view; what went wrong, and the exit statuses."""
    found, codes = [], {}
    html_out = tmp / "r.html"
    html_out.unlink(missing_ok=True)
    for view, extra in (
        ("terminal", []),
        ("html", ["--html", str(html_out)]),
        ("markdown", ["--markdown", "-"]),
    ):
        start = time.perf_counter()
        code, stdout, stderr = run(["report", str(path), *extra])
        took = time.perf_counter() - start
        codes[view] = code
        if took > HANG_S:
            found.append(f"hang: {view} took {took:.1f} s")
        if code not in (0, 1, 2) or "Traceback" in stderr or "internal error" in stderr:
            found.append(f"crash: {view} exit {code}: {stderr.strip()[:200]}")
            continue
        if code == 2:
            if stderr.count("\n") != 1 or str(path) not in stderr:
                found.append(f"crash: {view} exit 2 without one line naming the file: {stderr[:200]!r}")
            continue
        if view == "terminal" and RAW.search(stdout.replace("\n", "")):
            found.append("injection: a raw control character in the terminal view")
        if view == "markdown":
            found += [f"injection: markdown {x}" for x in markdown_faults(stdout)]
        if view == "html" and html_out.is_file():
            found += [f"injection: html {x}" for x in html_faults(html_out.read_text(errors="replace"))]
    return found, codes


def markdown_faults(text: str) -> list[str]:
    from markdown_it import MarkdownIt

    out = []
    prose = FENCED.sub("", text)
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    for tag in MD_TAGS:
        if re.search(rf"<{tag}\b", rendered):
            out.append(f"<{tag}> rendered")
    if MENTION.search(prose):
        out.append(f"a mention: {MENTION.search(prose).group()!r}")
    if AUTOLINK.search(prose):
        out.append(f"an autolink: {AUTOLINK.search(prose).group()!r}")
    if RAW.search(text.replace("\n", "")):
        out.append("a raw control character")
    return out


def html_faults(page: str) -> list[str]:
    out = []
    page = re.sub(r'(?s)<script type="text/plain" id="plotly-gz">.*?</script>', "", page)
    for marker in (
        "<img",
        "<script>alert",
        "<iframe",
        "<span style='font-size:99px'",
        "<a href='https://evil",
    ):
        if marker in page:
            out.append(f"{marker} in the page")
    for chart in re.findall(r'(?s)<script type="application/json" data-chart="[^"]*">(.*?)</script>', page):
        for _, v in _places(json.loads(chart)):
            if isinstance(v, str) and PLOTLY_MARKUP.search(v):
                out.append(f"plotly markup in a chart: {v[:80]!r}")
                break
    return out


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", type=int, help="run this case alone and show its faults")
    ap.add_argument("--save", type=Path, help="with --replay: write the case's file here")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="q9diff-fuzz-results-") as t:
        tmp = Path(t)
        base = seeds(tmp)
        names = sorted(base)
        cases = [args.replay] if args.replay is not None else range(args.cases)
        report = {"cases": 0, "seeds": names, "exit_codes": Counter(), "refused": 0, "drawn": 0,
                  "faults": Counter(), "examples": {}, "slowest_s": 0.0}  # fmt: skip
        for n in cases:
            rng = random.Random(args.seed * 1_000_003 + n)
            name = rng.choice(names)
            data = mutate(base[name], rng)
            path = tmp / f"case-{n}.json"
            path.write_bytes(data)
            if args.save is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / path.name).write_bytes(data)
            start = time.perf_counter()
            found, codes = faults(path, tmp)
            report["slowest_s"] = max(report["slowest_s"], round(time.perf_counter() - start, 2))
            report["cases"] += 1
            report["exit_codes"].update(codes.values())
            report["refused" if 2 in codes.values() else "drawn"] += 1
            for f in found:
                kind = f.split(":", 1)[0]
                report["faults"][kind] += 1
                report["examples"].setdefault(f[:120], n)
            if args.replay is not None:
                print(f"case {n} ({name}): exit statuses {codes}")
                print("\n".join(found) or "no fault")
            path.unlink()
    report["exit_codes"] = {str(k): v for k, v in sorted(report["exit_codes"].items())}
    report["faults"] = dict(report["faults"])
    report["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.replay is None:
        print(f"{report['cases']} cases over seeds {', '.join(names)}: drawn {report['drawn']}, refused "
              f"{report['refused']} (one line each), exit statuses {report['exit_codes']}")  # fmt: skip
        print(f"faults: {report['faults'] or 'none'}; slowest case {report['slowest_s']} s; "
              f"peak memory {report['max_rss_mib']} MiB")  # fmt: skip
        for example, n in report["examples"].items():
            print(f"  case {n}: {example}")
    return 1 if report["faults"] else 0


if __name__ == "__main__":
    sys.exit(main_())
