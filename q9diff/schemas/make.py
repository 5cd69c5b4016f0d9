"""Write the schema files: `python -m q9diff.schemas.make` (re)writes one `<id>.schema.json` per schema
id beside this module; `documents()` gives them without writing. The files are what ships and what a
consumer reads; this module is how they are kept in step with the code (tests/test_schemas.py compares
the two, and validates every command's --json against the files).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from q9diff.schemas import SCHEMAS, file_name, schema_uri
from q9diff.schemas._commands import (
    container,
    explain_properties,
    inspect_set_properties,
    metrics,
    steps_properties,
    suggest_properties,
    toolchain,
    verify_properties,
)
from q9diff.schemas._compare import (
    DIFF_OPTIONAL,
    FIXING,
    attribution_row,
    diff_properties,
    different_models,
    doctor_properties,
    load_properties,
    pair,
    region_row,
    setdiff_properties,
    settings,
    target_properties,
)
from q9diff.schemas._defs import DEFS, SUMMARY, SUMMARY_OPTIONAL, summary_properties
from q9diff.schemas._dlc import DLCDIFF_OPTIONAL, dlcdiff_properties, inspect_dlc_properties
from q9diff.schemas._layers import layers_properties
from q9diff.schemas._nodes import EARLIER, obj, ref

DRAFT = "https://json-schema.org/draft/2020-12/schema"
HERE = Path(__file__).resolve().parent


LOCAL_DEFS = {
    "region_row": region_row,
    "attribution_row": attribution_row,
    "settings": settings,
    "different_models": different_models,
    "pair": pair,
    "metrics": metrics,
    "container": container,
    "toolchain": toolchain,
}


def _with_toolchain(properties):
    """A document's fields and `toolchain`: which form the fix leads with."""
    return lambda: properties() | {"toolchain": ref("toolchain", "The form the fix leads with." + EARLIER)}


# id -> (title, what the document is, its fields, the optional ones)
DOCUMENTS = {
    "q9diff.diff/1": (
        "q9diff diff --json",
        "Why one context binary (the candidate, a) differs from a known-good one (the reference, b): every "
        "region of both files, the root causes and their effects, where the changed bytes went, and the "
        "changes that make the candidate's build match. Written by `q9diff A B --json` for two files.",
        diff_properties,
        DIFF_OPTIONAL,
    ),
    "q9diff.setdiff/1": (
        "q9diff diff --json (sets)",
        "Two sets of parts (folders or Genie bundles) paired part by part and diffed: the set's totals, "
        "its causes and fixes, and each pair's diff. Written by `q9diff A B --json` for two sets.",
        setdiff_properties,
        ("unpaired_sizes", "different_models", "target", "load", "outside", "bundle", *FIXING),
    ),
    "q9diff.target/1": (
        "q9diff diff --target --json",
        "A build judged against a device named with --target, where no reference is at hand: per part, "
        "each setting the device determines that is not as AI Hub's builds for it use. Written by "
        "`q9diff A --target DEVICE --json`.",
        target_properties,
        ("load", "toolchain", "next"),
    ),
    "q9diff.load/1": (
        "q9diff.will_load(...).to_json()",
        "Will each part of a build load on the runtime and device named: the Python API's `will_load` "
        "result (docs/python.md), the `load` object of q9diff.diff/1 and q9diff.target/1 with its id and "
        "the path judged.",
        load_properties,
        (),
    ),
    "q9diff.doctor/1": (
        "q9diff doctor --json",
        "A whole Genie bundle checked: every finding with its severity, the hypotheses it bears on, and "
        "what the bundle was judged against. Written by `q9diff doctor BUNDLE --json`.",
        doctor_properties,
        ("passed", "target", "profile", "runtime"),
    ),
    "q9diff.verify/1": (
        "q9diff verify --json",
        "The candidate, the reference and the CPU reference run on the same inputs and compared: per "
        "output, or per decoding step for a split LLM, with the verdict and what it cannot show. Written "
        "by `q9diff verify CANDIDATE [REFERENCE] --json`.",
        verify_properties,
        ("tolerance", "targets"),
    ),
    "q9diff.inspect/1": ("q9diff inspect --json", SUMMARY, summary_properties, SUMMARY_OPTIONAL),
    "q9diff.inspect-set/1": (
        "q9diff inspect --json (a file of several contexts)",
        "Every context binary a file holds (e.g. an ONNX model with several EPContext nodes). Written by "
        "`q9diff inspect FILE --json` when FILE holds more than one; one context gives q9diff.inspect/1.",
        inspect_set_properties,
        ("container",),
    ),
    "q9diff.inspect-dlc/1": (
        "q9diff inspect --json (a graph DLC)",
        "What a DLC holds: its records, the converter version, a graph DLC's ops, tensors with their "
        "encodings and weights, a context DLC's caches, and every byte's region. Written by `q9diff inspect "
        "FILE --json` for a graph DLC; a context DLC's is the `dlc` of its q9diff.inspect-set/1.",
        inspect_dlc_properties,
        ("oracle_disagreements",),
    ),
    "q9diff.dlcdiff/1": (
        "q9diff diff --json (graph DLCs)",
        "Why one DLC differs from another, category by category (converter version, ops matched by "
        "structure, quantization per tensor, weights per tensor, caches per SoC, shared weights), or that "
        "only timestamps differ. Written by `q9diff A B --json` for two graph DLCs; two context DLCs give "
        "q9diff.setdiff/1 with this as its `dlc`; a graph DLC and a context binary compiled from it give "
        "what the compile added (`compiled`).",
        dlcdiff_properties,
        DLCDIFF_OPTIONAL,
    ),
    "q9diff.explain/1": (
        "q9diff explain --json",
        "What an error number, C name or pasted log line of QNN, Genie or ONNX Runtime's QNN EP means, "
        "its known causes and the command that tells which applies. Written by `q9diff explain ... --json`.",
        explain_properties,
        (),
    ),
    "q9diff.suggest/1": (
        "q9diff suggest --json",
        "The changes that make the candidate's build match the reference (or the --target device), the "
        "edits --apply plans or makes, and the --recompile check. Written by `q9diff suggest ... --json`.",
        _with_toolchain(suggest_properties),
        ("target", "toolchain"),
    ),
    "q9diff.steps/1": (
        "q9diff steps --json",
        "The candidate's recipe rebuilt with the root-cause settings added one at a time, each step "
        "compared with the reference. Written by `q9diff steps CANDIDATE REFERENCE --json`.",
        steps_properties,
        (),
    ),
    "q9diff.layers/1": (
        "q9diff layers --json",
        "The first tensor where a build leaves its float model: per source tensor in graph order, the "
        "candidate (compiled with taps, run on the x86 HTP emulator) against the reference, the first "
        "divergence by the rule shown, the tensors with no tap, and every compile. Written by "
        "`q9diff layers CANDIDATE --reference REFERENCE --json`.",
        layers_properties,
        (),
    ),
}


def _refs(node, found: set[str]) -> None:
    if isinstance(node, dict):
        target = node.get("$ref")
        if isinstance(target, str) and target.startswith("#/$defs/"):
            found.add(target.rsplit("/", 1)[1])
        for v in node.values():
            _refs(v, found)
    elif isinstance(node, list):
        for v in node:
            _refs(v, found)


def document(schema_id: str) -> dict:
    """The schema of `schema_id`, with the definitions it refers to (and theirs)."""
    title, description, properties, optional = DOCUMENTS[schema_id]
    root = obj(description, properties(), optional)
    defs_of = {**DEFS, **LOCAL_DEFS}
    defs: dict[str, dict] = {}
    todo: set[str] = set()
    _refs(root, todo)
    while todo - set(defs):
        name = min(todo - set(defs))
        defs[name] = defs_of[name]()
        _refs(defs[name], todo)
    head = {"$schema": DRAFT, "$id": schema_uri(schema_id), "title": title}
    return head | root | ({"$defs": dict(sorted(defs.items()))} if defs else {})


def documents() -> dict[str, dict]:
    missing = set(SCHEMAS) ^ set(DOCUMENTS)
    if missing:
        raise ValueError(f"SCHEMAS and DOCUMENTS disagree on {sorted(missing)}")
    return {schema_id: document(schema_id) for schema_id in SCHEMAS}


def text(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    for schema_id, doc in documents().items():
        path = HERE / file_name(schema_id)
        path.write_text(text(doc), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
