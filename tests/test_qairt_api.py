"""Every qairt line q9diff prints and every qairt call its backend makes, checked against Qualcomm's real
qairt-dev classes: their source is read with `ast` (qairt imports only with the QAIRT SDK, so it is never
imported). .ci/run unpacks the wheel (`pip download qairt-dev`) and names the folder in Q9DIFF_QAIRT_DEV_SRC;
without it these tests skip with that reason."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from q9diff.backends.qairt import HTP_SETTINGS, compile_plan
from q9diff.compare.rules import FIX_TARGETS, qairt_fix
from q9diff.recipes.recipe import load

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path(os.environ.get("Q9DIFF_QAIRT_DEV_SRC", "/tmp/q9diff-qairt-dev/src"))
HTP_CONFIG = "qairt/api/common/backends/htp/config.py"
COMPILE_CONFIG = "qairt/api/compiler/config.py"
# Variants that pass compiler options by key (finalize_options) build with ort-qnn only: left out here.
RECIPES = [
    *sorted(
        p
        for p in (ROOT / "fixtures" / "variants").glob("*.recipe.json")
        if "finalize_options" not in json.loads(p.read_text())["settings"]
    ),
    ROOT / "fixtures" / "qwen-mini" / "reference" / "recipe.json",
    ROOT / "fixtures" / "qwen-mini" / "local" / "recipe.json",
]

pytestmark = pytest.mark.skipif(
    not (SOURCE / HTP_CONFIG).is_file(),
    reason=f"qairt-dev's source is not at {SOURCE} (Q9DIFF_QAIRT_DEV_SRC; .ci/run unpacks it there)",
)


@dataclass(frozen=True)
class Field:
    annotation: str  # as written in the source, e.g. "int", "Literal[0, 1]"
    required: bool  # no default
    alias: str | None  # serialization_alias: the backend extension JSON key


def _tree(rel: str) -> ast.Module:
    return ast.parse((SOURCE / rel).read_text(encoding="utf-8"))


def _classes(rel: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in _tree(rel).body if isinstance(n, ast.ClassDef)}


def _fields(cls: ast.ClassDef) -> dict[str, Field]:
    """A pydantic model's public fields: its annotated class attributes (PrivateAttr ones start with _)."""
    out = {}
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        if name.startswith("_"):
            continue
        value, alias, required = node.value, None, node.value is None
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "Field":
            kws = {k.arg: k.value for k in value.keywords}
            required = "default" not in kws and "default_factory" not in kws and not value.args
            if "serialization_alias" in kws:
                alias = ast.literal_eval(kws["serialization_alias"])
        out[name] = Field(ast.unparse(node.annotation), required, alias)
    return out


@pytest.fixture(scope="module")
def api() -> dict[str, dict[str, Field]]:
    """Class name -> fields, for the HTP config classes and CompileConfig."""
    classes = {**_classes(HTP_CONFIG), **_classes(COMPILE_CONFIG)}
    return {name: _fields(c) for name, c in classes.items()}


@pytest.fixture(scope="module")
def dsp_archs() -> set[str]:
    enum = _classes("qairt/api/configs/common.py")["DspArchitecture"]
    return {ast.literal_eval(n.value) for n in enum.body if isinstance(n, ast.Assign)}


def _check_value(field: Field, value, dsp_archs: set[str]) -> None:
    kind = field.annotation
    if kind == "int":
        assert isinstance(value, int) and not isinstance(value, bool), (kind, value)
    elif kind == "bool":
        assert isinstance(value, bool), (kind, value)
    elif kind.startswith("Literal["):
        assert value in ast.literal_eval(kind.removeprefix("Literal")), (kind, value)
    elif "DspArchitecture" in kind:
        assert value in dsp_archs, (kind, value)


def _check_call(call: ast.Call, api, dsp_archs) -> str:
    """The call names a class qairt-dev defines, only its fields, every required one, values it takes."""
    cls = ast.unparse(call.func)
    assert cls in api, f"{cls} is not a qairt-dev class"
    fields = api[cls]
    given = {k.arg for k in call.keywords}
    assert given <= set(fields), f"{cls} has no field {given - set(fields)}"
    missing = {n for n, f in fields.items() if f.required} - given
    assert not missing, f"{cls}({', '.join(sorted(given))}) lacks required {missing}"
    for k in call.keywords:
        if isinstance(k.value, ast.Constant):
            _check_value(fields[k.arg], k.value.value, dsp_archs)
    return cls


def _check_line(line: str, api, dsp_archs) -> list[str]:
    tree = ast.parse(line, mode="eval")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls, line
    return [_check_call(c, api, dsp_archs) for c in calls]


VALUES = {"soc_model": 69, "dsp_arch": 79, "vtcm_size": 8, "optimization_level": 3, "hvx_threads": 4,
          "dlbc": 1, "weights_packing": True, "weight_sharing": True}  # fmt: skip


@pytest.mark.parametrize("graphs", [("prompt_ar32_cl128_1_of_2",), ("a", "b"), ()])
@pytest.mark.parametrize("setting", sorted(FIX_TARGETS))
def test_every_fix_line_constructs(setting, graphs, api, dsp_archs):
    assert set(VALUES) == set(FIX_TARGETS)
    line = qairt_fix(setting, VALUES[setting], graphs, 73)
    [cls] = _check_line(line, api, dsp_archs)
    if cls == "HtpGraphConfig" and len(graphs) == 1:
        assert f'name="{graphs[0]}"' in line
    if cls == "HtpDeviceConfig":
        assert "soc_details is ignored once device_custom_configs is set" in line


def test_soc_model_line_names_dsp_arch(api, dsp_archs):
    line = qairt_fix("soc_model", 77, ("g",), 73)
    assert line.startswith('HtpDeviceConfig(soc_model=77, dsp_arch="v73")')
    assert "dsp_arch" not in qairt_fix("soc_model", 77, ("g",), None).split("#")[0]


def test_compile_config_drops_soc_details_beside_device_configs():
    """The fact the device lines state: CompileConfig turns soc_details into device configs only when
    device_custom_configs is unset (its model_post_init), and says the option is then ignored."""
    cls = _classes(COMPILE_CONFIG)["CompileConfig"]
    post_init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "model_post_init")
    tests = [ast.unparse(n.test) for n in ast.walk(post_init) if isinstance(n, ast.If)]
    assert "self.soc_details and (not self.device_custom_configs)" in tests
    doc = next(
        n.value.value
        for prev, n in zip(cls.body, cls.body[1:])
        if isinstance(prev, ast.AnnAssign) and ast.unparse(prev.target) == "soc_details"
        and isinstance(n, ast.Expr)
    )  # fmt: skip
    assert "ignored if any device custom configurations are set" in " ".join(doc.split())


def test_the_suggestions_q9diff_prints_construct(api, dsp_archs):
    """The real suggestions on the fixture pairs, as `suggest --json` prints them."""
    pairs = [
        (ROOT / "fixtures/qwen-mini/local", ROOT / "fixtures/qwen-mini/reference"),
        (ROOT / "fixtures/variants/packing_off.bin", ROOT / "fixtures/variants/packing_on.bin"),
        (ROOT / "fixtures/variants/soc_43.bin", ROOT / "fixtures/variants/soc_69.bin"),
        (ROOT / "fixtures/variants/opt_1.bin", ROOT / "fixtures/variants/opt_3.bin"),
    ]
    seen = set()
    for a, b in pairs:
        r = subprocess.run(
            [sys.executable, "-c", "from q9diff.cli import main; main()", "diff", str(a), str(b), "--json"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert r.returncode == 1, r.stderr
        for s in json.loads(r.stdout)["suggestions"]:
            seen.update(_check_line(s["targets"]["qairt"], api, dsp_archs))
            if "graphs" in s:
                assert s["graphs"] and all(f'"{g}"' in s["targets"]["qairt"] for g in s["graphs"])
    assert {"HtpDeviceConfig", "HtpGraphConfig"} <= seen


def test_backend_settings_are_qairt_fields(api, dsp_archs):
    """Each recipe setting lands on a field of the class q9diff names, under the JSON key qairt writes."""
    for name, row in HTP_SETTINGS.items():
        field = api[row.qairt_class].get(row.qairt_kwarg)
        assert field is not None, f"{name}: {row.qairt_class} has no field {row.qairt_kwarg}"
        assert row.ext_key == (field.alias or row.qairt_kwarg), name


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.parent.name + "/" + p.name)
def test_backend_plan_constructs(path, api, dsp_archs):
    """The keyword arguments the qairt child passes, per part, are calls qairt-dev's classes accept."""
    for part in compile_plan(load(path)).parts:
        calls = [("CompileConfig", part.compile_config)]
        calls += [("HtpGraphConfig", kw) for kw in part.graph_configs]
        if part.device_config is not None:
            device = dict(part.device_config)
            calls += [("HtpDeviceCoreConfig", core) for core in device.pop("cores", [])]
            calls.append(("HtpDeviceConfig", device))
        if part.context_config is not None:
            calls.append(("HtpContextConfig", part.context_config))
        for cls, kwargs in calls:
            line = f"{cls}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
            _check_line(line, api, dsp_archs)
        assert [kw["name"] for kw in part.graph_configs] in ([], [g.name for g in part.graphs])


def test_backend_child_uses_qairt_names():
    """The child's imports name modules and classes qairt-dev has, and its calls take those keywords."""
    child = next(
        n for n in ast.parse((ROOT / "q9diff/backends/qairt.py").read_text()).body
        if isinstance(n, ast.FunctionDef) and n.name == "_child"
    )  # fmt: skip
    for node in ast.walk(child):
        if isinstance(node, ast.ImportFrom):
            defined = set(_classes(node.module.replace(".", "/") + ".py"))
            assert {a.name for a in node.names} <= defined, node.module
    exported = {a.asname or a.name for n in ast.walk(_tree("qairt/__init__.py"))
                if isinstance(n, ast.ImportFrom) for a in n.names}  # fmt: skip
    params = {
        "convert": _params("qairt/api/converter/_convert.py", "convert")
        | set(_fields(_classes("qairt/api/converter/converter_config.py")["ConverterConfig"])),
        "compile": _params("qairt/api/compiler/_compile.py", "compile"),
        "load": _params("qairt/api/_loader.py", "load"),
    }
    used = set()
    for node in ast.walk(child):
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("qairt."):
            name = ast.unparse(node.func).removeprefix("qairt.")
            assert name in exported and name in params, name
            assert {k.arg for k in node.keywords} <= params[name], name
            used.add(name)
    assert used == {"convert", "compile", "load"}


def _params(rel: str, name: str) -> set[str]:
    defs = [n for n in _tree(rel).body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert defs, f"{rel} defines no {name}"
    return {a.arg for d in defs for a in d.args.args + d.args.kwonlyargs}
