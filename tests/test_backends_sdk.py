"""The SDK backends (qairt, qnn-cli) on real recipes: what they would hand Qualcomm's API and tool, what
they refuse, and what they say when the SDK is not here. Neither needs the SDK for any of this."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from q9diff.backends.base import BackendUnavailable
from q9diff.backends.qairt import HTP_SETTINGS, QairtBackend, backend_extension, compile_plan, htp_kwargs
from q9diff.backends.qnn_cli import QnnCliBackend, QnnSdk, cli_plan
from q9diff.backends.registry import compile_backend
from q9diff.compare.rules import FIX_TARGETS
from q9diff.recipes.recipe import Recipe, Settings, load

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "fixtures" / "qwen-mini" / "reference" / "recipe.json"
LOCAL = ROOT / "fixtures" / "qwen-mini" / "local" / "recipe.json"
# Variants that pass compiler options by key (finalize_options) build with ort-qnn only: left out here.
VARIANTS = sorted(
    p
    for p in (ROOT / "fixtures" / "variants").glob("*.recipe.json")
    if "finalize_options" not in json.loads(p.read_text())["settings"]
)
SDK_VARIABLES = ("QAIRT_SDK_ROOT", "QNN_SDK_ROOT", "Q9DIFF_QAIRT_PYTHON")
# A recipe setting's name in rules.FIX_TARGETS (which names what a binary records).
FIX_TARGET_NAME = {"vtcm_mb": "vtcm_size"}


def _no_sdk_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SDK_VARIABLES}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    return env


def _as_dlc(recipe: Recipe) -> Recipe:
    """The same recipe with DLC sources (as a user who converted first would write it)."""
    parts = tuple(
        replace(p, graphs=tuple(replace(g, model=str(Path(g.model).with_suffix(".dlc"))) for g in p.graphs))
        for p in recipe.parts
    )
    return replace(recipe, parts=parts)


def _at(doc: dict, path: str):
    """Follow a FIX_TARGETS JSON path such as `devices[0].cores[0].perf_profile`."""
    for step in path.split("."):
        m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", step)
        doc = doc[m.group(1)]
        if m.group(2) is not None:
            doc = doc[int(m.group(2))]
    return doc


def q9diff(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


# ---- qairt: the plan ----


def test_qairt_plan_reference_is_ai_hubs_settings_per_graph():
    plan = compile_plan(load(REFERENCE))
    assert [p.output for p in plan.parts] == ["part_1_of_2.bin", "part_2_of_2.bin"]
    part = plan.parts[0]
    assert [(g.name, Path(g.source).name, g.load) for g in part.graphs] == [
        ("prompt_ar32_cl128_1_of_2", "part_1_of_2_ar32.onnx", "convert"),
        ("token_ar1_cl128_1_of_2", "part_1_of_2_ar1.onnx", "convert"),
    ]
    assert all(Path(g.source).is_file() for p in plan.parts for g in p.graphs)
    assert part.compile_config == {"backend": "HTP"}
    assert part.graph_configs == (
        {"name": "prompt_ar32_cl128_1_of_2", "vtcm_size_in_mb": 8, "optimization_type": 3},
        {"name": "token_ar1_cl128_1_of_2", "vtcm_size_in_mb": 8, "optimization_type": 3},
    )
    assert part.device_config == {"soc_model": 77, "dsp_arch": "v73"}
    assert part.context_config == {"weight_sharing_enabled": True}
    json.dumps(plan.to_json())  # the child gets it as JSON


def test_qairt_plan_local_leaves_unset_settings_to_the_compiler():
    part = compile_plan(load(LOCAL)).parts[1]
    assert part.graph_configs == ()  # no graph setting: no HtpGraphConfig, the compiler's defaults
    assert part.device_config == {"soc_model": 0, "dsp_arch": "v73"}
    assert part.context_config == {"weight_sharing_enabled": True}


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.name.removesuffix(".recipe.json"))
def test_every_variant_lands_where_rules_say(path: Path):
    """Both SDK backends put each setting where q9diff's fix table tells users to put it."""
    recipe = load(path)
    part = compile_plan(recipe).parts[0]
    ext = cli_plan(_as_dlc(recipe))[0].backend_extension
    kwargs = {
        "HtpGraphConfig": part.graph_configs[0] if part.graph_configs else {},
        "HtpDeviceConfig": part.device_config or {},
        "HtpContextConfig": part.context_config or {},
    }
    checked = 0
    for field in fields(Settings):
        value = getattr(recipe.settings, field.name)
        target = FIX_TARGETS.get(FIX_TARGET_NAME.get(field.name, field.name))
        if value is None or target is None:
            continue
        cls, kwarg = re.match(r"(\w+)\((?:name=\{name\}, )?(\w+)=", target["qairt"]).groups()
        assert kwargs[cls][kwarg] == value, (field.name, kwargs)
        assert _at(ext, target["htp_backend_ext_config"]) == value, (field.name, ext)
        checked += 1
    assert checked >= 3
    if recipe.settings.precision == "fp16":
        assert part.graph_configs[0]["fp16_relaxed_precision"] == 1
        assert ext["graphs"][0]["fp16_relaxed_precision"] == 1
    assert [g["graph_names"] for g in ext["graphs"]] == [[g.name] for g in recipe.parts[0].graphs]


# ---- every setting: mapped, or refused with a clear message ----

GOOD = {
    "soc_model": (77, 77),
    "dsp_arch": ("V75", "v75"),
    "vtcm_mb": (8, 8),
    "optimization_level": (2, 2),
    "hvx_threads": (4, 4),
    "dlbc": (1, 1),
    "weights_packing": (True, True),
    "weight_sharing": (False, False),
    "perf_profile": ("BURST", "burst"),
    "precision": ("fp16", 1),
}
BAD = {
    "soc_model": -1,
    "dsp_arch": "hexagon",
    "vtcm_mb": -4,
    "optimization_level": 0,
    "hvx_threads": 2.5,
    "dlbc": 2,
    "weights_packing": "yes",
    "weight_sharing": 1,
    "perf_profile": "turbo",
    "precision": "w8a16",
    "finalize_options": (("compress_weights", True),),
}
ORT_ONLY = {"finalize_options"}  # compiler options by key: the ort-qnn backend alone passes and checks them


def test_every_settings_field_has_a_row():
    names = {f.name for f in fields(Settings)}
    assert set(HTP_SETTINGS) == set(BAD) == names and set(GOOD) == names - ORT_ONLY


@pytest.mark.parametrize("name", sorted(GOOD))
def test_setting_is_mapped(name: str):
    value, expected = GOOD[name]
    row = HTP_SETTINGS[name]
    kwargs = htp_kwargs(Settings(**{name: value}))
    assert getattr(kwargs, row.section) == {row.qairt_kwarg: expected}
    assert [s for s in ("graph", "device", "core", "context") if getattr(kwargs, s)] == [row.section]
    ext = backend_extension(kwargs, ("g",))
    where = {
        "graph": lambda: ext["graphs"][0],
        "device": lambda: ext["devices"][0],
        "core": lambda: ext["devices"][0]["cores"][0],
        "context": lambda: ext["context"],
    }[row.section]()
    assert where[row.ext_key] == expected


@pytest.mark.parametrize("name", sorted(BAD))
def test_setting_is_refused_with_its_name(name: str):
    recipe = load(REFERENCE).with_settings(**{name: BAD[name]})
    for plan in (compile_plan, lambda r: cli_plan(_as_dlc(r))):
        with pytest.raises(BackendUnavailable) as exc:
            plan(recipe)
        message = str(exc.value)
        assert name in message and repr(BAD[name]) in message and "\n" not in message


def test_perf_profile_goes_to_the_devices_only_core():
    part = compile_plan(load(REFERENCE).with_settings(perf_profile="burst")).parts[0]
    assert part.device_config == {"soc_model": 77, "dsp_arch": "v73", "cores": [{"perf_profile": "burst"}]}


# ---- qnn-cli: JSON files and the command line ----


def test_qnn_cli_files_and_command_for_the_reference():
    recipe = load(REFERENCE)
    part = cli_plan(_as_dlc(recipe))[1]
    models = ROOT / "fixtures" / "qwen-mini" / "models"
    assert part.dlc_paths == (str(models / "part_2_of_2_ar32.dlc"), str(models / "part_2_of_2_ar1.dlc"))
    prompt, token = (g.name for g in recipe.parts[1].graphs)
    assert part.backend_extension == {
        "graphs": [
            {"graph_names": [prompt], "vtcm_mb": 8, "O": 3},
            {"graph_names": [token], "vtcm_mb": 8, "O": 3},
        ],
        "devices": [{"soc_model": 77, "dsp_arch": "v73"}],
        "context": {"weight_sharing_enabled": True},
    }
    sdk = QnnSdk(
        Path("/sdk/bin/x86_64-linux-clang/qnn-context-binary-generator"), Path("/sdk/lib/x86_64-linux-clang")
    )
    ext_path, wrapper_path = Path("/w/htp_backend_ext_config.json"), Path("/w/config_file.json")
    assert part.wrapper(sdk, ext_path) == {
        "backend_extensions": {
            "shared_library_path": "/sdk/lib/x86_64-linux-clang/libQnnHtpNetRunExtensions.so",
            "config_file_path": "/w/htp_backend_ext_config.json",
        }
    }
    assert part.command(sdk, Path("/w/out"), wrapper_path) == [
        "/sdk/bin/x86_64-linux-clang/qnn-context-binary-generator",
        "--backend", "/sdk/lib/x86_64-linux-clang/libQnnHtp.so",
        "--model", "/sdk/lib/x86_64-linux-clang/libQnnModelDlc.so",
        "--dlc_path", f"{models / 'part_2_of_2_ar32.dlc'},{models / 'part_2_of_2_ar1.dlc'}",
        "--binary_file", "part_2_of_2",
        "--output_dir", "/w/out",
        "--config_file", "/w/config_file.json",
    ]  # fmt: skip


def test_qnn_cli_local_has_no_graphs_section():
    ext = cli_plan(_as_dlc(load(LOCAL)))[0].backend_extension
    # Exactly the device-side file the local build ships beside its binaries.
    assert ext == {
        **json.loads((LOCAL.parent / "htp_backend_ext_config.json").read_text()),
        "context": {"weight_sharing_enabled": True},
    }


def test_qnn_cli_refuses_onnx_and_says_how_to_convert():
    with pytest.raises(BackendUnavailable) as exc:
        cli_plan(load(REFERENCE))
    message = str(exc.value)
    assert "part_1_of_2_ar32.onnx is not a DLC" in message
    assert "qairt-converter --input_network part_1_of_2_ar32.onnx" in message
    assert "--backend qairt" in message


def test_encodings_beside_a_dlc_are_refused():
    recipe = _as_dlc(load(REFERENCE))
    graph = replace(recipe.parts[0].graphs[0], encodings="x.encodings")
    recipe = replace(recipe, parts=(replace(recipe.parts[0], graphs=(graph,)),))
    for plan in (compile_plan, cli_plan):
        with pytest.raises(BackendUnavailable, match="carries its own quantization encodings"):
            plan(recipe)


# ---- what they say when the SDK is not here ----


def test_qairt_missing_names_the_python_here():
    problem = QairtBackend(env=_no_sdk_env()).missing()
    if sys.version_info[:2] in ((3, 10), (3, 12)):
        pytest.skip("this interpreter could host qairt-dev")
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert problem == (
        f"qairt-dev runs on Python 3.10 or 3.12 and this Python is {here}; "
        "set Q9DIFF_QAIRT_PYTHON to a Python 3.10/3.12 with `pip install qairt-dev`."
    )


def test_qairt_missing_names_a_broken_interpreter(tmp_path):
    python = tmp_path / "python3.12"
    assert QairtBackend(python=str(python)).missing() == (
        f"{python} (Q9DIFF_QAIRT_PYTHON) is not a working Python interpreter."
    )


def test_qnn_cli_missing_names_the_sdk_then_the_tool_then_each_library(tmp_path):
    assert QnnCliBackend(env=_no_sdk_env()).missing() == (
        "QNN_SDK_ROOT is not set (nor QAIRT_SDK_ROOT); point it at an unpacked QAIRT SDK "
        "(or source its bin/envsetup.sh)."
    )
    env = {**_no_sdk_env(), "QNN_SDK_ROOT": str(tmp_path)}
    bin_dir, lib_dir = tmp_path / "bin" / "x86_64-linux-clang", tmp_path / "lib" / "x86_64-linux-clang"
    assert (
        QnnCliBackend(env=env).missing()
        == f"qnn-context-binary-generator not found in {bin_dir} nor on PATH."
    )
    bin_dir.mkdir(parents=True)
    (bin_dir / "qnn-context-binary-generator").write_bytes(b"")
    for lib in ("libQnnHtp.so", "libQnnModelDlc.so", "libQnnHtpNetRunExtensions.so"):
        assert QnnCliBackend(env=env).missing() == (
            f"{lib} not found in {lib_dir}: not a complete QAIRT SDK for x86_64-linux-clang."
        )
        lib_dir.mkdir(parents=True, exist_ok=True)
        (lib_dir / lib).write_bytes(b"")
    assert QnnCliBackend(env=env).missing() is None


@pytest.mark.parametrize(
    ("backend", "needle"),
    [("qairt", "qairt-dev runs on Python 3.10 or 3.12"), ("qnn-cli", "QNN_SDK_ROOT is not set")],
)
def test_recompile_without_the_sdk_exits_2_with_one_line(tmp_path, backend: str, needle: str):
    if backend == "qairt" and sys.version_info[:2] in ((3, 10), (3, 12)):
        pytest.skip("this interpreter could host qairt-dev")
    out = tmp_path / "out"
    r = q9diff("recompile", str(REFERENCE), "--backend", backend, "--out", str(out), env=_no_sdk_env())
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"q9diff: error: {REFERENCE}: ") and needle in lines[0]
    assert not out.exists()


def test_compile_backend_registers_both():
    assert compile_backend("qairt").name == "qairt"
    assert compile_backend("qnn-cli").name == "qnn-cli"
    assert compile_backend("ort-qnn").name == "ort-qnn"


# ---- opt-in: the real qairt package in its own interpreter ----


@pytest.mark.skipif(
    not os.environ.get("Q9DIFF_QAIRT_PYTHON"),
    reason="set Q9DIFF_QAIRT_PYTHON to a Python 3.10 or 3.12 with qairt-dev to run (docs/internals.md)",
)
def test_qairt_child_runs_the_real_package(tmp_path):
    """The parent/child plumbing with the real qairt: a real SDK builds, an SDK without its Python
    modules comes back as one line naming what failed, and nothing is left in the output directory."""
    backend = QairtBackend()
    if backend._python_problem():
        pytest.skip(backend._python_problem())
    recipe = load(ROOT / "fixtures" / "variants" / "opt_3.recipe.json")
    out = tmp_path / "out"
    if backend.missing() is None:
        built = backend.compile(recipe, out)
        assert [p.name for p in built] == ["opt_3.bin"] and built[0].stat().st_size > 0
        return
    sdk = tmp_path / "sdk"
    (sdk / "lib" / "python" / "qti").mkdir(parents=True)
    (sdk / "sdk.yaml").write_text("version: 2.51.0.250101\n")
    backend = QairtBackend(env={**os.environ, "QAIRT_SDK_ROOT": str(sdk)})
    with pytest.raises(RuntimeError, match=r"^qairt: compiling part opt_3 failed: .*\S") as exc:
        backend.compile(recipe, out)
    assert "\n" not in str(exc.value)
    assert list(out.iterdir()) == []
