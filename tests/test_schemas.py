"""The JSON Schemas in q9diff/schemas are the contract of every command's --json: each command and mode
is run as a user runs it, on the committed fixtures, and what it prints must be valid against the schema
its "schema" field names. The files must be valid 2020-12 schemas, written by q9diff.schemas.make from
the code as it is now, cover every schema id the code writes, and agree with what `q9diff report`
accepts (q9diff.present.saved); and a document missing a required key, or with a value of the wrong
kind, must be invalid."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from conftest import q9diff_cli as q9diff

jsonschema = pytest.importorskip("jsonschema")

from q9diff.present import saved  # noqa: E402
from q9diff.schemas import SCHEMAS, file_name, schema, schema_uri  # noqa: E402

LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
VARIANTS = FIXTURES / "variants"
# The shared folder beside the checkout (../shared, as the other tests take it), or beside the folder of
# worktrees that holds it.
REAL = next((p / "shared" / "real" for p in ROOT.parents if (p / "shared" / "real").is_dir()), None)
# No context binary in them (as tests/test_real_binaries.py lists them): inspect refuses them, exit 2.
NOT_CONTEXTS = ("not_a_context_binary_converter_tar.bin", "qnn_ctx_2_inputs_order_test.onnx")
MULTI = "qnn_multi_ctx_embed.onnx"  # an ONNX model with several EPContext nodes: q9diff.inspect-set/1
# Schema ids the code writes that are no command's --json: data files q9diff reads itself (its device
# table, error codes, measurements) and the recipe, an input file with its own loader (q9diff.recipes).
NOT_OUTPUT = {
    "q9diff.codes/1",
    "q9diff.codes/2",
    "q9diff.catalogue/1",
    "q9diff.libraries/1",
    "q9diff.terms/1",
    "q9diff.devices/1",
    "q9diff.compat_measured/1",
    "q9diff.soc_measured/1",
    "q9diff.generic_measured/1",
    "q9diff.generic_builds/1",
    "q9diff.inprocess_measured/1",
    "q9diff.inprocess_builds/1",
    "q9diff.layers_measured/1",
    "q9diff.recipe/1",
    "q9diff.recipe/2",
}


def _api():
    import q9diff

    return q9diff


def _emulator() -> str | None:
    from q9diff.runners.local import LocalRunner

    return LocalRunner().missing()


def _compiler() -> str | None:
    if importlib.util.find_spec("onnxruntime_qnn") is None:
        return "onnxruntime-qnn (the embedded compiler) is not installed: pip install 'q9diff[ort]'"
    return None


def _real() -> str | None:
    return None if REAL is not None else "../shared/real is absent: the real third-party files live there"


@dataclass(frozen=True)
class Case:
    """One command line: its arguments (or a function of a scratch folder that makes them, or the
    document a Python API call returns, for a schema no command prints), the exit statuses it may end
    with, the schema id it prints, and what it needs (a reason to skip, or None)."""

    name: str
    schema: str
    args: tuple[str, ...] | Callable[[Path], tuple[str, ...] | dict]
    codes: tuple[int, ...] = (0, 1)
    needs: Callable[[], str | None] = lambda: None


def _variant_copy(tmp: Path, name: str) -> Path:
    """A variant with its recipe and source models in a scratch folder, so --apply can edit the recipe."""
    for suffix in (".bin", ".recipe.json"):
        shutil.copy(VARIANTS / f"{name}{suffix}", tmp / f"{name}{suffix}")
    if not (tmp / "models").exists():
        shutil.copytree(VARIANTS / "models", tmp / "models")
    return tmp / f"{name}.bin"


def _unpaired(tmp: Path) -> tuple[str, ...]:
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    for name in ("vtcm_4mb", "soc_0"):
        shutil.copy(VARIANTS / f"{name}.bin", tmp / "a" / f"{name}.bin")
    shutil.copy(VARIANTS / "vtcm_8mb.bin", tmp / "b" / "vtcm_4mb.bin")
    return str(tmp / "a"), str(tmp / "b")


def _apply_dry(tmp: Path) -> tuple[str, ...]:
    cand = _variant_copy(tmp, "vtcm_4mb")
    recipe = str(cand.with_suffix(".recipe.json"))
    return "suggest", str(cand), str(VARIANTS / "vtcm_8mb.bin"), "--apply", recipe, "--dry-run", "--json"


def _recompile(tmp: Path) -> tuple[str, ...]:
    cand = _variant_copy(tmp, "vtcm_4mb")
    recipe = str(cand.with_suffix(".recipe.json"))
    ref = str(VARIANTS / "vtcm_8mb.bin")
    return "suggest", str(cand), ref, "--apply", recipe, "--recompile", "--out", str(tmp / "new"), "--json"


def _recompile_target(tmp: Path) -> tuple[str, ...]:
    cand = _variant_copy(tmp, "soc_0")
    recipe = str(cand.with_suffix(".recipe.json"))
    out = str(tmp / "new")
    return (
        "suggest",
        str(cand),
        "--target",
        "QCS9100",
        "--apply",
        recipe,
        "--recompile",
        "--out",
        out,
        "--json",
    )


def _meta(tmp: Path) -> tuple[str, ...]:
    dump = sorted((REAL / "utility").glob("*.json"))[0]
    return "inspect", "--json", "--meta", str(dump), str(REFERENCE / "part_1_of_2.bin")


def _real_diff(tmp: Path) -> tuple[str, ...]:
    # a QNN 2.25 model and LiteRT's test model: builds of different models
    b = REAL / "binaries"
    return str(b / "simple_model_qualcomm.bin"), str(b / "simple_add_op.sm8750.tflite"), "--json"


def _real_inspect() -> list[Case]:
    names = sorted(p.name for p in (REAL / "binaries").iterdir()) if REAL is not None else []
    cases = []
    for name in names:
        if name in (*NOT_CONTEXTS, MULTI):
            continue
        path = REAL / "binaries" / name
        cases.append(Case(f"inspect-real-{name}", "", ("inspect", str(path), "--json"), (0,), _real))
    return cases


D, S, T, DR = "q9diff.diff/1", "q9diff.setdiff/1", "q9diff.target/1", "q9diff.doctor/1"
IN, IS, E, SG = "q9diff.inspect/1", "q9diff.inspect-set/1", "q9diff.explain/1", "q9diff.suggest/1"
V4, V8, V0, V77 = (str(VARIANTS / f"{n}.bin") for n in ("vtcm_4mb", "vtcm_8mb", "soc_0", "soc_77"))
L, R = str(LOCAL), str(REFERENCE)
RT, TG = ("--runtime", "2.48"), ("--target", "QCS9100")
STORY = (str(FIXTURES / "story" / "local"), str(FIXTURES / "story" / "vtcm8"))
INT4 = (str(VARIANTS / "int4_unpacked.bin"), str(VARIANTS / "int4_native.bin"))
DLC = lambda name: str(FIXTURES / "dlc" / name)  # noqa: E731 (fixtures/dlc, scripts/make_dlc_fixtures.py)
MLP, MLP_FLOAT = str(VARIANTS / "vtcm_8mb.recipe.json"), str(VARIANTS / "models" / "mlp.float.onnx")
CASES = [
    Case("diff", D, (V4, V8, "--json"), (1,)),
    Case("diff-identical", D, (V8, V8, "--json"), (0,)),
    Case("diff-runtime", D, (V4, V8, *RT, "--json"), (1,)),
    Case("diff-target-runtime", D, (V0, V77, *TG, *RT, "--json"), (1,)),
    Case("diff-int4", D, (*INT4, "--json")),
    Case("diff-different-models", D, _real_diff, (1,), _real),
    Case("setdiff", S, (L, R, "--json"), (1,)),
    Case("setdiff-target-runtime", S, (L, R, *TG, *RT, "--json"), (1,)),
    Case("setdiff-story", S, (*STORY, "--json")),
    Case("setdiff-unpaired", S, lambda tmp: (*_unpaired(tmp), "--json"), (1,)),
    Case("target", T, (L, *TG, "--json"), (1,)),
    Case("target-runtime", T, (L, *TG, *RT, "--json"), (1,)),
    Case("target-matches", T, (R, *TG, "--json"), (0,)),
    Case("target-file-other-device", T, (V77, "--target", "SM8650", "--json")),
    Case("doctor", DR, ("doctor", L, "--json")),
    Case("doctor-reference", DR, ("doctor", L, R, "--json")),
    Case("doctor-target", DR, ("doctor", L, *TG, "--json")),
    Case("doctor-runtime", DR, ("doctor", R, *RT, "--json")),
    Case(
        "will-load-api",
        "q9diff.load/1",
        lambda tmp: _api().will_load(L, runtime="2.48", target="QCS9100").to_json(),
    ),
    Case("will-load-api-file", "q9diff.load/1", lambda tmp: _api().will_load(V8, runtime="2.51").to_json()),
    Case("doctor-everything", DR, ("doctor", L, "--reference", R, *TG, *RT, "--json")),
    Case("doctor-one-file", DR, ("doctor", V0, "--json")),
    Case("inspect", IN, ("inspect", V0, "--json"), (0,)),
    Case("inspect-packing", IN, ("inspect", INT4[0], "--json"), (0,)),
    Case("inspect-oracle", IN, ("inspect", INT4[0], "--oracle", "--json"), (0,), _compiler),
    Case("inspect-meta", IN, _meta, (1,), _real),
    Case(
        "inspect-container",
        IS,
        lambda tmp: ("inspect", str(REAL / "binaries" / MULTI), "--json"),
        (0,),
        _real,
    ),
    Case("explain-code", E, ("explain", "5000", "--json"), (0,)),
    Case("explain-hex", E, ("explain", "0x1388", "--json"), (0,)),
    Case("explain-genie", E, ("explain", "--json", "--", "-1"), (0,)),
    Case("explain-message", E, ("explain", "--json", "Using newer context binary on old SDK"), (0,)),
    Case("suggest", SG, ("suggest", L, R, "--dry-run", "--json"), (1,)),
    Case("suggest-target", SG, ("suggest", L, *TG, "--dry-run", "--json"), (1,)),
    Case("suggest-apply-dry-run", SG, _apply_dry, (1,)),
    Case("suggest-recompile", SG, _recompile, (0,), _compiler),
    Case("suggest-recompile-target", SG, _recompile_target, (0,), _compiler),
    # verify runs the x86 HTP emulator: a single graph, and the 2-part LLM for 2 greedy steps
    Case("verify", "q9diff.verify/1", ("verify", V4, V8, "--json"), (0,), _emulator),
    Case("verify-llm", "q9diff.verify/1", ("verify", L, R, "--steps", "2", "--json"), (0,), _emulator),
    # layers compiles the MLP's graph untapped and tapped, runs both on the emulator beside its float model
    Case("layers", "q9diff.layers/1", ("layers", MLP, "--reference", MLP_FLOAT, "--json"), (0,), _emulator),
    # steps recompiles every step: one small graph, one setting (two builds, a few seconds)
    Case("steps", "q9diff.steps/1", ("steps", V4, V8, "--json"), (0,), _compiler),
    Case("inspect-dlc", "q9diff.inspect-dlc/1", ("inspect", DLC("mlp_w8a16.dlc"), "--json"), (0,)),
    Case("dlcdiff", "q9diff.dlcdiff/1", (DLC("mlp_w8a16.dlc"), DLC("mlp_fp32.dlc"), "--json"), (1,)),
    Case(
        "dlc-compiled",
        "q9diff.dlcdiff/1",
        (DLC("mlp_w8a16.dlc"), DLC("mlp_w8a16_compiled_qnn.bin"), "--json"),
        (1,),
    ),
    Case("inspect-context-dlc", IS, ("inspect", DLC("ctx_2soc_qnn.bin"), "--json"), (0,)),
    Case("setdiff-context-dlc", S, (DLC("ctx_3soc.onnx"), DLC("ctx_2soc.onnx"), "--json"), (1,)),
    *_real_inspect(),
]
BY_NAME = {c.name: c for c in CASES}
_OUT: dict[str, dict] = {}


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> Callable[[str], dict]:
    """The JSON a case prints, run once per module (the negative tests reuse what the others ran)."""

    def run(name: str) -> dict:
        if name not in _OUT:
            case = BY_NAME[name]
            why = case.needs()
            if why:
                pytest.skip(why)
            args = case.args(tmp_path_factory.mktemp(name)) if callable(case.args) else case.args
            if isinstance(args, dict):  # a Python API result's to_json(), as json.dumps writes it
                _OUT[name] = json.loads(json.dumps(args))
                return copy.deepcopy(_OUT[name])
            r = q9diff(*args)
            assert r.returncode in case.codes, f"{args}: exit {r.returncode}\n{r.stderr[-3000:]}"
            _OUT[name] = json.loads(r.stdout)
        return copy.deepcopy(_OUT[name])

    return run


def _errors(schema_id: str, data: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema(schema_id))
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(data)]


def _valid(schema_id: str, data: dict) -> bool:
    """Stops at the first error (a missing key is found before the fields are walked)."""
    return jsonschema.Draft202012Validator(schema(schema_id)).is_valid(data)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_command_json_is_valid_against_its_schema(name, document):
    data = document(name)
    expected = BY_NAME[name].schema
    if expected:
        assert data["schema"] == expected
    else:  # a real file: one context or several
        assert data["schema"] in ("q9diff.inspect/1", "q9diff.inspect-set/1")
    assert _errors(data["schema"], data) == []


@pytest.mark.parametrize("name", [c.name for c in CASES if c.schema in saved.SHAPES])
def test_report_reads_back_what_the_schema_accepts(name, document, tmp_path):
    # The same document is a result `q9diff report` accepts: the two contracts say the same.
    data = document(name)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    assert saved.load(path).schema == data["schema"]


def test_inspect_of_a_folder_is_the_set_of_its_parts():
    # a folder is read as diff reads it (issue 38: "expected a regular file" where diff took it)
    r = q9diff("inspect", str(LOCAL), "--json")
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["schema"] == "q9diff.inspect-set/1"
    assert [Path(c["path"]).name for c in data["contexts"]] == ["part_1_of_2.bin", "part_2_of_2.bin"]
    assert _errors("q9diff.inspect-set/1", data) == []


# ---------- the files ----------


@pytest.mark.parametrize("schema_id", SCHEMAS)
def test_each_file_is_a_valid_2020_12_schema(schema_id):
    doc = schema(schema_id)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == schema_uri(schema_id) and doc["title"] and doc["description"]
    assert doc["properties"]["schema"]["const"] == schema_id and "schema" in doc["required"]
    assert schema(file_name(schema_id)) == schema(schema_uri(schema_id)) == doc


def test_an_unknown_schema_id_is_refused():
    with pytest.raises(KeyError, match="q9diff.diff/1"):
        schema("q9diff.diff/2")


def test_the_files_are_what_make_writes_from_the_code():
    from q9diff.schemas.make import documents, text

    for schema_id, doc in documents().items():
        shipped = (ROOT / "q9diff" / "schemas" / file_name(schema_id)).read_text(encoding="utf-8")
        assert shipped == text(doc), f"{file_name(schema_id)} is out of date: python -m q9diff.schemas.make"


def test_every_schema_id_the_code_writes_has_a_file():
    written = set()
    for path in (ROOT / "q9diff").rglob("*"):
        if path.suffix in (".py", ".json") and not path.name.endswith(".schema.json"):
            written |= set(re.findall(r'"(q9diff\.[a-z_-]+/\d+)"', path.read_text(encoding="utf-8")))
    assert written - NOT_OUTPUT == set(SCHEMAS)
    files = {p.name for p in (ROOT / "q9diff" / "schemas").glob("*.schema.json")}
    assert files == {file_name(s) for s in SCHEMAS}


def _nodes(node, where="#"):
    if isinstance(node, dict):
        yield where, node
        for k, v in node.items():
            yield from _nodes(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _nodes(v, f"{where}/{i}")


@pytest.mark.parametrize("schema_id", SCHEMAS)
def test_every_object_allows_new_fields_and_describes_its_own(schema_id):
    # The ids keep their version while fields are added: an object never refuses a field it does not
    # list. Every field it lists is described, and every required one is listed.
    doc = schema(schema_id)
    for where, node in _nodes(doc):
        if "properties" not in node or where.endswith(("/properties", "/$defs")):
            continue
        assert node.get("additionalProperties") is True, where
        assert set(node.get("required", [])) <= set(node["properties"]), where
        for key, sub in node["properties"].items():
            assert sub.get("description"), f"{where}/properties/{key}"


# ---------- negative: the schemas can fail ----------


def _first_of(schema_id: str) -> str:
    return next(c.name for c in CASES if c.schema == schema_id)


@pytest.mark.parametrize("schema_id", SCHEMAS)
def test_a_document_missing_a_required_key_is_invalid(schema_id, document):
    data = document(_first_of(schema_id))
    required = schema(schema_id)["required"]
    assert len(required) >= 3
    for key in required:
        broken = {k: v for k, v in data.items() if k != key}
        assert not _valid(schema_id, broken), f"{schema_id} without {key!r} passed"


def _at(data, path: str):
    *parents, last = path.split(".")
    for p in parents:
        data = data[int(p)] if isinstance(data, list) else data[p]
    return data, (int(last) if isinstance(data, list) else last)


DELETE = object()
# (case, path, new value or DELETE): one nested key taken away or given a value of the wrong kind
BROKEN = [
    ("diff", "causes.0.role", "cause"),
    ("diff", "regions.0.a_size", -1),
    ("diff", "a.graphs.0.ops", DELETE),
    ("diff-int4", "a.packing.kind", "packed"),
    ("diff-runtime", "load.parts.0.findings.0.verdict", "fails"),
    ("setdiff", "parts.0.part", DELETE),
    ("setdiff", "suggestions.0.targets.qairt", DELETE),
    ("setdiff-unpaired", "unpaired_sizes.a.0", -1),
    ("target", "target.soc_model", "77"),
    ("target-runtime", "load.verdict", "maybe"),
    ("doctor", "findings.0.severity", "fatal"),
    ("doctor", "hypotheses.9", DELETE),
    ("doctor-everything", "runtime.qairt", DELETE),
    ("inspect", "target.generic_target", "yes"),
    ("inspect", "graphs.0.inputs.0.dims.0", -2),
    ("explain-code", "codes.0.causes.0.evidence", "rumoured"),
    ("suggest", "suggestions.0.setting", "colour"),
    ("suggest-apply-dry-run", "edits.0.advice_only", DELETE),
    ("verify", "verdict.status", "OK"),
    ("verify", "outputs.0.metrics.cosine", "one"),
    ("steps", "steps.0.identical_to", "both"),
    ("layers", "graphs.0.tensors.0.order", -1),
    ("layers", "graphs.0.untapped.0.side", "float"),
    ("layers", "rule.floor_db", "twenty"),
]


@pytest.mark.parametrize("name,path,value", BROKEN, ids=[f"{c}:{p}" for c, p, _ in BROKEN])
def test_a_nested_key_missing_or_of_the_wrong_kind_is_invalid(name, path, value, document):
    data = document(name)
    parent, key = _at(data, path)
    if value is DELETE:
        del parent[key]
    else:
        parent[key] = value
    assert not _valid(BY_NAME[name].schema, data), f"{name} with {path} = {value!r} passed"


def test_a_non_finite_metric_is_written_as_a_word_and_nothing_else():
    # verify writes inf and nan as the strings "inf", "-inf" and "nan" (q9diff.verify.run.to_json)
    value = schema("q9diff.verify/1")["$defs"]["metrics"]["properties"]["cosine"]
    check = jsonschema.Draft202012Validator(value)
    assert all(check.is_valid(x) for x in (0.5, 1, "inf", "-inf", "nan"))
    assert not any(check.is_valid(x) for x in ("Infinity", None, "1.0"))


# ---------- agreement with what `q9diff report` reads (q9diff.present.saved) ----------


def _resolve(node: dict, root: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _branches(node: dict, root: dict) -> list[dict]:
    node = _resolve(node, root)
    if "anyOf" in node:
        return [b for n in node["anyOf"] for b in _branches(n, root)]
    return [node]


SHALLOW = ("type", "enum", "const", "minimum")


def _accepts(node: dict, value, root: dict) -> bool:
    """Whether the node takes `value` (a scalar, or an empty list or object) by its own type keywords."""
    return any(
        jsonschema.Draft202012Validator({k: b[k] for k in SHALLOW if k in b}).is_valid(value)
        for b in _branches(node, root)
    )


def _typed(node: dict, kind: str, root: dict) -> dict:
    def kinds(b: dict) -> list[str]:
        return [b["type"]] if isinstance(b.get("type"), str) else b.get("type", [])

    found = [b for b in _branches(node, root) if kind in kinds(b)]
    assert found, kind
    return found[0]


def _agree(spec, node: dict, root: dict, where: str, nullable: bool = False) -> None:
    """The schema node takes what `spec` (a saved.py shape) takes, for values q9diff writes, and refuses
    what it refuses: null where the shape has none, a negative size, a word outside a closed set."""
    if spec is saved.ANY:
        return
    if isinstance(spec, saved.Maybe):
        assert _accepts(node, None, root), f"{where}: null refused"
        return _agree(spec.spec, node, root, where, nullable=True)
    assert nullable or not _accepts(node, None, root), f"{where}: null accepted"
    if isinstance(spec, saved.OneOf):
        for b in _branches(node, root):
            assert set(b.get("enum", [])) - {None} == set(spec.words), where
        return
    samples = {saved.INT: (3, -1, "3"), saved.SIZE: (3, -1, "3"), saved.NUM: (1.5, None, "x")}
    if isinstance(spec, str) and spec in samples:
        good, bad, wrong = samples[spec]
        assert _accepts(node, good, root) and not _accepts(node, wrong, root), where
        if spec == saved.NUM:
            assert all(_accepts(node, w, root) for w in saved.NON_FINITE), where
        if spec == saved.SIZE:
            assert not _accepts(node, bad, root), f"{where}: a negative size accepted"
        return
    # a string may be narrower here (a closed set of words where saved.py takes any)
    kinds = {str: ("string", None), bool: ("boolean", True), dict: ("object", None), list: ("array", None)}
    if isinstance(spec, type) and spec in kinds:
        kind, sample = kinds[spec]
        _typed(node, kind, root)
        if sample is not None:
            assert _accepts(node, sample, root), where
        return
    if isinstance(spec, list):
        return _agree(spec[0], _typed(node, "array", root)["items"], root, f"{where}[]")
    branch = _typed(node, "object", root)
    if str in spec:  # a mapping
        return _agree(spec[str], branch["additionalProperties"], root, f"{where}.*")
    for key, sub in spec.items():
        optional = isinstance(sub, tuple) and sub[0] is saved.OPT
        sub = sub[1] if optional else sub
        required = key in branch.get("required", [])
        assert required != optional, f"{where}.{key}: required {required}, optional in saved.py {optional}"
        if key in branch.get("properties", {}):
            _agree(sub, branch["properties"][key], root, f"{where}.{key}")
        else:  # a key saved.py allows where q9diff never writes it (a set part's own load)
            assert optional and branch["additionalProperties"] is True, f"{where}.{key}: not in the schema"


@pytest.mark.parametrize("schema_id", list(saved.SHAPES))
def test_the_schema_agrees_with_the_shape_report_reads(schema_id):
    doc = schema(schema_id)
    _agree(saved.SHAPES[schema_id], doc, doc, schema_id)


def test_paths_in_cases_exist():
    # a fixture renamed would otherwise make a case fail for the wrong reason
    for c in CASES:
        if isinstance(c.args, tuple):
            for a in c.args:
                if a.startswith(str(FIXTURES)):
                    assert Path(a).exists(), a
