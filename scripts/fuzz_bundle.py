"""Bundle-level cases for scripts/fuzz.py (`--bundle`): a Genie bundle and EPContext models built from
the fixtures, one file mutated per case, then read the way `doctor`, `diff` and `suggest --apply` read
them. Kept apart from fuzz.py (binary-level mutation, the loop and the report) to keep both short.

A case mutates one of:
- the Genie config (JSON values swapped for hostile ones: paths that climb out, device and Windows paths,
  placeholders, escape sequences and bidi controls, lone surrogates, huge lists, wrong types; then text
  mutations: comments, trailing commas, truncation, byte flips, deep nesting, huge numbers);
- the tokenizer.json or the extension file, likewise;
- the node list of an EPContext model (many nodes naming one context file, distinct, missing, outside,
  non-UTF-8 names, embedded bytes mutated as fuzz.py mutates binaries, fields of their records built anew
  with formats/ definitions included, wrong attribute types).

The reading is the real one: q9diff.doctor.run (every rule but the two that hand files to Qualcomm's
libraries: their children are capped before they are asked and tested in tests/test_hostile_bundle.py),
its terminal, HTML and JSON presenters (which must show no raw control character), the path registry
(q9diff.inputs: an input's parts) and verify's DialogConfig over the bundle, apply.plan through the
config, and for EPContext models q9diff.read.openers (container_parts, contexts, open_binary for each
name) and diff_sets. The expected refusals are FormatError, BundleError, ApplyError and RunnerError with
a one-line message; anything else is a crash.
"""

from __future__ import annotations

import copy
import io
import json
import random
import re
import shutil
from pathlib import Path

from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.doctor import run as doctor
from q9diff.errors import FormatError
from q9diff.fix import extconfig
from q9diff.fix.apply import ApplyError, BuildFacts, plan
from q9diff.genie.bundle import BundleError
from q9diff.inputs import given, resolve
from q9diff.present.as_json import json_safe
from q9diff.present.terminal_doctor import print_report
from q9diff.read.binary import ContextBinary
from q9diff.read.sites import record_sites
from q9diff.runners.base import RunnerError
from q9diff.verify.run import DialogConfig

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "fixtures" / "qwen-mini" / "reference"
CONTEXT = ROOT / "fixtures" / "variants" / "graphs_1.bin"
FILES = ("genie_config.json", "tokenizer.json", "htp_backend_ext_config.json")
RULES = tuple(r for r in doctor.RULES if r.id not in ("config.genie-parser", "extension.qualcomm"))
EXPECTED = (FormatError, BundleError, ApplyError, RunnerError)
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # \n allowed

STRINGS = ("", "../outside.bin", "../../etc/passwd", "/etc/passwd", "/storage/emulated/0/x.bin",
           "C:\\models\\x.bin", "genie\\part_1_of_2_prompt.bin", "genie/../genie/part_1_of_2_token.bin",
           "<TODO>", "<path to htp_backend_ext_config>", "genie", ".", "tokenizer.json", "genie_config.json",
           "htp_backend_ext_config.json", "\x1b[2J\x1b]8;;http://x.invalid/\x1b\\l\x1b]8;;\x1b\\",
           "\u202etxt", "\x9b31m", "\ud800", "a\0b", "x" * 5000, "*", "v73", "v1000000")  # fmt: skip
VALUES = (None, True, False, 0, -1, 1, 77, 2**31, 2**64, -(2**63), 3.5, 1e308, -0.0, [], {}, [[]],
          {"a": {}}, [0] * 500, ["*"], [{}] * 50)  # fmt: skip


class Cases:
    """The bundle folder and model folder of one fuzz run, and the seeds they are rewritten from."""

    def __init__(self, tmp: Path) -> None:
        self.bundle, self.models = tmp / "bundle", tmp / "models"
        (self.bundle / "genie").mkdir(parents=True)
        self.models.mkdir()
        self.seeds = {name: (REFERENCE / name).read_text() for name in FILES}
        for name in FILES:
            (self.bundle / name).write_text(self.seeds[name])
        for b in (REFERENCE / "genie").glob("*.bin"):
            shutil.copy(b, self.bundle / "genie" / b.name)
        self.context = CONTEXT.read_bytes()
        self.sites = tuple(record_sites(ContextBinary(self.context, str(CONTEXT))))  # for fields built anew
        for i in range(3):
            (self.models / f"c{i}.bin").write_bytes(self.context)
        data = set_to_json(diff_sets(resolve(ROOT / "fixtures" / "qwen-mini" / "local"), resolve(REFERENCE)))
        self.suggestions = data["suggestions"]
        self.facts = BuildFacts.of([p["a"] for p in data["parts"]], [p["b"] for p in data["parts"]])
        extconfig.library_dir = _not_asked  # Qualcomm's parser: a child per call, capped before it

    def case(self, rng: random.Random, mutate_bytes) -> tuple[str, object]:
        """(what was mutated, the work to run) for one case; the files are written now."""
        for name in FILES:
            (self.bundle / name).write_text(self.seeds[name])
        kind = rng.choices(("config", "tokenizer", "extension", "epcontext"), (45, 15, 15, 25))[0]
        if kind == "epcontext":
            model = self._epcontext(rng, mutate_bytes)
            return "epcontext", lambda: _read_model(model)
        name = {"config": FILES[0], "tokenizer": FILES[1], "extension": FILES[2]}[kind]
        (self.bundle / name).write_bytes(_mutated_json(self.seeds[name], rng, mutate_bytes))
        with_reference = rng.random() < 0.15
        return kind, lambda: self._read_bundle(with_reference)

    def _read_bundle(self, with_reference: bool) -> None:
        try:
            report = doctor.run(given(self.bundle), given(REFERENCE) if with_reference else None, RULES)
        except BundleError as exc:
            _one_line(exc, self.bundle)
            raise
        from rich.console import Console

        out = io.StringIO()
        print_report(report.result(), Console(file=out, width=100, markup=False, highlight=False))
        from q9diff.present.doctor import render_doctor

        for shown, what in ((out.getvalue(), "terminal"), (render_doctor(report.result()), "HTML")):
            raw = RAW.search(shown)
            if raw:
                raise AssertionError(f"doctor {what}: a raw control character {raw.group()!r} from a file")
        json.dumps(json_safe(report.to_json()), allow_nan=False, default=str)
        try:
            given(self.bundle).parts  # noqa: B018 (the parts read as diff reads them)
        except ValueError as exc:  # the one config reader refuses a config it cannot read: one line
            _one_line(exc, self.bundle)
        try:
            plan(self.bundle / "genie_config.json", self.suggestions, self.facts)
        except ApplyError as exc:
            _one_line(exc, self.bundle)
        try:
            DialogConfig.of(self.bundle)
        except RunnerError as exc:
            _one_line(exc, self.bundle)

    def _epcontext(self, rng: random.Random, mutate_bytes) -> Path:
        import onnx
        from onnx import helper

        n = rng.choice((1, 2, 3, 10, 50, 200, 3000 if rng.random() < 0.1 else 20))
        same = rng.random() < 0.5
        nodes = []
        for i in range(n):
            embed = rng.choice((0, 0, 1, 1, 2, -1)) if rng.random() < 0.9 else None
            if embed == 1:
                ref: object = (
                    mutate_bytes(self.context, rng, self.sites) if rng.random() < 0.3 else self.context
                )
            elif same:
                ref = "c0.bin"
            else:
                ref = rng.choice(("c0.bin", "c1.bin", "c2.bin", "missing.bin", "../outside.bin", "/etc/hosts",
                                  b"\xff\xfe.bin", "", "c1.bin#x", "."))  # fmt: skip
            attrs = {"source": "QNNExecutionProvider"}
            if embed is not None:
                attrs["embed_mode"] = embed
            if rng.random() < 0.95:
                attrs["ep_cache_context"] = ref if rng.random() < 0.97 else 7  # an INT where bytes belong
            odd = ("dup", "", "a#b", "\x1b[2J", "NAMEFF")  # NAMEFF: made non-UTF-8 below
            name = rng.choice(odd) if rng.random() < 0.2 else f"node_{i}"
            node = helper.make_node("EPContext", ["x"], [f"y{i}"], name=name, domain="com.microsoft", **attrs)
            nodes.append(node)
        tp = onnx.TensorProto
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", tp.FLOAT, [1])],
            [helper.make_tensor_value_info(f"y{i}", tp.FLOAT, [1]) for i in range(n)],
        )  # fmt: skip
        path = self.models / "model.onnx"
        data = helper.make_model(graph).SerializeToString().replace(b"NAMEFF", b"\xff\xfeFF\xc3(")
        path.write_bytes(mutate_bytes(data, rng) if rng.random() < 0.1 else data)
        return path


def _not_asked():
    raise extconfig.Unavailable("not asked while fuzzing (Qualcomm's parser runs in a capped child)")


def _one_line(exc: Exception, folder: Path) -> None:
    """A refusal is one line naming a file: one in `folder`, or one the bundle names."""
    text = str(exc)
    if "\n" in text or not (str(folder) in text or any(name in text for name in FILES)):
        raise AssertionError(f"refusal not one line naming a file: {text[:120]!r}")


def _read_model(model: Path) -> None:
    from q9diff.inputs import resolve
    from q9diff.read.openers import container_parts, contexts, locate, open_binary

    parts = container_parts(locate(model))
    found = contexts(locate(model))
    for name, _ in found[:20]:
        open_binary(model.with_name(f"{model.name}#{name}"))
    if parts and len(parts) <= 50:
        diff_sets(resolve(model), resolve(model))


def _mutated_json(seed: str, rng: random.Random, mutate_bytes) -> bytes:
    """A seed JSON text with 1-6 value mutations and, sometimes, text and byte mutations."""
    doc = json.loads(seed)
    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        doc = _mutate_value(doc, rng)
    text = json.dumps(doc, indent=rng.choice((None, 2)), ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.1:
        text = "// a comment\n" + text.replace(",", ", /* c */", rng.randrange(1, 20))
    elif roll < 0.15:
        text = re.sub(r"(\]|\})", r",\1", text, count=rng.randrange(1, 5))  # trailing commas
    elif roll < 0.2:
        text = re.sub(r"\b\d+\b", rng.choice(("1e999", "-1e400", "9" * 5000, "0.0000001")), text, count=3)
    elif roll < 0.25:
        depth = rng.choice((100, 255, 300, 5000))
        text = text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    elif roll < 0.28:
        text = "\ufeff" + text
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.15:
        data = mutate_bytes(data, rng)
    return data


def _mutate_value(doc, rng: random.Random):
    """One change at a random place of the tree: a hostile value, a deletion, a repetition."""
    places = []

    def walk(node, parent, key):
        places.append((parent, key, node))
        if isinstance(node, dict) and len(places) < 4000:
            for k, v in node.items():
                walk(v, node, k)
        elif isinstance(node, list) and len(places) < 4000:
            for i, v in enumerate(node[:50]):
                walk(v, node, i)

    walk(doc, None, None)
    parent, key, node = rng.choice(places)
    roll = rng.random()
    if parent is None:
        return copy.deepcopy(rng.choice(VALUES + STRINGS)) if roll < 0.05 else doc
    if roll < 0.35:
        parent[key] = rng.choice(STRINGS)
    elif roll < 0.6:
        parent[key] = copy.deepcopy(rng.choice(VALUES))  # a fresh one: VALUES are never mutated
    elif roll < 0.7:
        del parent[key]
    elif roll < 0.8 and isinstance(node, list):
        parent[key] = node * rng.choice((2, 10, 3000))
    elif roll < 0.9 and isinstance(node, dict):
        node[rng.choice(STRINGS)] = copy.deepcopy(rng.choice(VALUES + STRINGS))
    else:
        parent[key] = [node]
    return doc
