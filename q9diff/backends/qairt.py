"""Compile backend "qairt": Qualcomm's QAIRT Python API (pip `qairt-dev`) over an installed QAIRT SDK.

For users who build with the SDK rather than onnxruntime-qnn. `compile_plan` turns a recipe into plain
data (per part: the source models, the graph names, and the keyword arguments of every HTP config
class); the child process (`python -m q9diff.backends.qairt JOB.json`) is the only code that imports
qairt, so a crash in Qualcomm's libraries ends that child, not q9diff, and the plan can be tested
without the SDK.

What the child does, in qairt-dev 0.13 terms (read in its source, not copied):
`qairt.convert(model.onnx, encodings=..., graph_name=NAME)` or `qairt.load(model.dlc)` per graph;
`qairt.compile([m1, m2, ...], config=CompileConfig(backend="HTP", graph_custom_configs=[HtpGraphConfig],
device_custom_configs=[HtpDeviceConfig(cores=[HtpDeviceCoreConfig])], context_custom_configs=[
HtpContextConfig]))` puts every model of the list into ONE context binary; `CompiledModel.save("x.bin")`
writes it. The config classes live in `qairt.api.common.backends.htp.config`, `CompileConfig` in
`qairt.api.compiler.config`; qairt serialises them (`HtpConfigHelper.to_backend_extension_dict`) into the
same backend extension JSON the qnn-cli backend writes (`backend_extension` below). `HtpGraphConfig`
requires `name` (no default), so every graph config names its graph; `CompileConfig.soc_details` is not
used: qairt ignores it once `device_custom_configs` is set. tests/test_qairt_api.py checks every call
against qairt-dev's source.

Why a second interpreter: qairt-dev installs on Python 3.10 and 3.12 only (not 3.11, which onnxruntime-qnn
needs), so q9diff runs the child under `Q9DIFF_QAIRT_PYTHON` when set. `import qairt` configures itself
from `QAIRT_SDK_ROOT` (a directory with `sdk.yaml` and `lib/python`); without it, it asks Qualcomm's
server which default SDK build to use, which fails offline, so we always pass an SDK root explicitly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q9diff.backends.base import BackendUnavailable, run_compile_child
from q9diff.backends.ort_qnn import same_version
from q9diff.guard import package_root
from q9diff.recipes.recipe import Part, Recipe, Settings, output_path
from q9diff.settings import BY_RECIPE

# Python versions qairt-dev 0.13 declares (Requires-Python >=3.10,<3.13,!=3.11.*).
QAIRT_PYTHONS = ((3, 10), (3, 12))
# The oldest SDK qairt-dev 0.13 accepts (its qairt_dev_config.yaml min_qairt_version).
QAIRT_MIN_SDK = "2.46.0"
# Where `qairt-vm --fix` unpacks SDKs on Linux (qairt-dev's LinuxQairtVmContext).
QAIRT_VM_INSTALL_DIR = Path("/opt/qcom/aistack/qairt")
# Where each recipe setting goes in the qairt config classes and the backend extension JSON: a view of
# q9diff.settings, so qairt and qnn-context-binary-generator always receive the same setting under the same
# name (qairt serialises the keyword to exactly this JSON key).
HTP_SETTINGS = BY_RECIPE


@dataclass(frozen=True)
class HtpKwargs:
    """The keyword arguments of each HTP config class for one context; empty means "leave it out"."""

    graph: dict[str, Any]  # HtpGraphConfig, applied to every graph of the context (plus name=...)
    device: dict[str, Any]  # HtpDeviceConfig (without cores)
    core: dict[str, Any]  # HtpDeviceCoreConfig, the device's only core
    context: dict[str, Any]  # HtpContextConfig


def htp_kwargs(settings: Settings) -> HtpKwargs:
    """Sort the recipe's settings into config-class keyword arguments, refusing values no SDK accepts.

    Unset settings stay out entirely, so the compiler default applies exactly as in the user's build.
    """
    sections: dict[str, dict[str, Any]] = {"graph": {}, "device": {}, "core": {}, "context": {}}
    for name, row in HTP_SETTINGS.items():
        value = getattr(settings, name)
        if value is None:
            continue
        try:
            sections[row.section][row.qairt_kwarg] = row.check(value)
        except ValueError as exc:
            raise BackendUnavailable(f"setting {exc}") from None
    return HtpKwargs(**sections)


def backend_extension(kwargs: HtpKwargs, graph_names: tuple[str, ...]) -> dict[str, Any]:
    """The `htp_backend_ext_config.json` document for one context, as qnn-context-binary-generator reads it.

    Same keys as qairt's `HtpConfigHelper.to_backend_extension_dict` writes for the same configs (one
    graphs entry per graph, `graph_names: [name]`), except `context`, which is an object here as in
    Qualcomm's documented examples and the files q9diff edits.
    """
    json_key = {(row.section, row.qairt_kwarg): row.ext_key for row in HTP_SETTINGS.values()}
    doc: dict[str, Any] = {}
    if kwargs.graph:
        doc["graphs"] = [
            {"graph_names": [name], **{json_key["graph", k]: v for k, v in kwargs.graph.items()}}
            for name in graph_names
        ]
    if kwargs.device or kwargs.core:
        device = {json_key["device", k]: v for k, v in kwargs.device.items()}
        if kwargs.core:
            device["cores"] = [{json_key["core", k]: v for k, v in kwargs.core.items()}]
        doc["devices"] = [device]
    if kwargs.context:
        doc["context"] = {json_key["context", k]: v for k, v in kwargs.context.items()}
    return doc


@dataclass(frozen=True)
class QairtGraph:
    """One graph of a context: its name and how the child gets a qairt Model for it."""

    name: str
    source: str  # absolute path of the .onnx or .dlc
    load: str  # "convert" (qairt.convert an ONNX model) or "load" (qairt.load a DLC)
    encodings: str | None  # absolute path of the encodings file given to qairt.convert


@dataclass(frozen=True)
class QairtPart:
    """One context binary: its graphs and the keyword arguments of every config object."""

    name: str
    output: str
    graphs: tuple[QairtGraph, ...]
    compile_config: dict[str, Any]  # CompileConfig(**compile_config, *_custom_configs=...)
    graph_configs: tuple[dict[str, Any], ...]  # one HtpGraphConfig(**kw) per graph, or none at all
    device_config: dict[str, Any] | None  # HtpDeviceConfig(**kw); "cores" holds HtpDeviceCoreConfig kwargs
    context_config: dict[str, Any] | None  # HtpContextConfig(**kw)


@dataclass(frozen=True)
class QairtPlan:
    """Everything the qairt child needs, as plain data."""

    parts: tuple[QairtPart, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "parts": [
                {
                    "name": p.name,
                    "output": p.output,
                    "graphs": [vars(g) for g in p.graphs],
                    "compile_config": p.compile_config,
                    "graph_configs": list(p.graph_configs),
                    "device_config": p.device_config,
                    "context_config": p.context_config,
                }
                for p in self.parts
            ]
        }


def _graph_source(recipe: Recipe, part: Part, index: int) -> QairtGraph:
    graph = part.graphs[index]
    model = recipe.model_path(graph)
    suffix = model.suffix.lower()
    if suffix not in (".onnx", ".dlc"):
        raise BackendUnavailable(
            f"part {part.name} graph {graph.name}: {model.name} is neither ONNX nor DLC; "
            "qairt converts .onnx and loads .dlc"
        )
    encodings = None
    if graph.encodings:
        if suffix == ".dlc":
            raise BackendUnavailable(
                f"part {part.name} graph {graph.name}: a DLC carries its own quantization encodings; drop "
                "`encodings` or point `model` at the ONNX source"
            )
        base = recipe.path.parent if recipe.path else Path.cwd()
        encodings = str((base / graph.encodings).resolve())
    return QairtGraph(graph.name, str(model), "convert" if suffix == ".onnx" else "load", encodings)


def compile_plan(recipe: Recipe) -> QairtPlan:
    """Turn a recipe into the qairt calls' arguments; raise BackendUnavailable for what qairt cannot take."""
    kwargs = htp_kwargs(recipe.settings)
    parts = []
    for part in recipe.parts:
        names = [g.name for g in part.graphs]
        if len(set(names)) != len(names):
            raise BackendUnavailable(f"part {part.name}: graph names repeat ({', '.join(names)})")
        device = None
        if kwargs.device or kwargs.core:
            device = {**kwargs.device, **({"cores": [dict(kwargs.core)]} if kwargs.core else {})}
        parts.append(
            QairtPart(
                name=part.name,
                output=part.output,
                graphs=tuple(_graph_source(recipe, part, i) for i in range(len(part.graphs))),
                compile_config={"backend": "HTP"},
                graph_configs=tuple({"name": n, **kwargs.graph} for n in names) if kwargs.graph else (),
                device_config=device,
                context_config=dict(kwargs.context) if kwargs.context else None,
            )
        )
    return QairtPlan(tuple(parts))


# ---- finding the SDK and an interpreter with qairt-dev ----


def sdk_version(root: Path) -> str | None:
    """The SDK's version from its `sdk.yaml` (`version: 2.51.0...`), without a YAML parser."""
    try:
        text = (root / "sdk.yaml").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^version:\s*['\"]?([0-9][0-9.]*)", text, re.MULTILINE)
    return m.group(1) if m else None


def find_sdk_root(
    env: Mapping[str, str], variables: tuple[str, str] = ("QAIRT_SDK_ROOT", "QNN_SDK_ROOT")
) -> tuple[Path | None, str]:
    """The QAIRT SDK root: the first of `variables` set, else the one SDK `qairt-vm` installed.

    Both variables name the same directory (the SDK's envsetup.sh sets both); the order only decides
    which one a message names first.

    Returns (root, "") or (None, a sentence saying what is missing).
    """
    for var in variables:
        if env.get(var):
            root = Path(env[var])
            if not root.is_dir():
                return None, f"{var}={root} is not a directory; point it at an unpacked QAIRT SDK."
            return root, ""
    installed = sorted(p.parent for p in QAIRT_VM_INSTALL_DIR.glob("*/sdk.yaml"))
    if len(installed) == 1:
        return installed[0], ""
    if installed:
        return None, (
            f"several QAIRT SDKs under {QAIRT_VM_INSTALL_DIR} ({', '.join(p.name for p in installed)}); "
            "set QAIRT_SDK_ROOT to the one to use."
        )
    return None, (
        f"{variables[0]} is not set (nor {variables[1]}); point it at an unpacked QAIRT SDK "
        "(or source its bin/envsetup.sh)."
    )


_PROBE = (
    "import importlib.util, json, sys; "
    "print(json.dumps([list(sys.version_info[:2]), importlib.util.find_spec('qairt') is not None]))"
)


class QairtBackend:
    """CompileBackend over Qualcomm's qairt Python API; `python` is an interpreter with qairt-dev
    (default: env Q9DIFF_QAIRT_PYTHON, else this one)."""

    name = "qairt"

    def __init__(
        self, python: str | None = None, env: Mapping[str, str] | None = None, timeout_s: float = 3600
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.python = python or self.env.get("Q9DIFF_QAIRT_PYTHON") or sys.executable
        self.timeout_s = timeout_s

    def _python_problem(self) -> str | None:
        if self.python == sys.executable:
            version, has_qairt = tuple(sys.version_info[:2]), importlib.util.find_spec("qairt") is not None
        else:
            try:
                probe = [self.python, "-I", "-c", _PROBE]  # isolated like the compile child
                proc = subprocess.run(
                    probe, capture_output=True, text=True, timeout=60, env=self.env, cwd=package_root()
                )
                version, has_qairt = json.loads(proc.stdout)
                version = tuple(version)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                return f"{self.python} (Q9DIFF_QAIRT_PYTHON) is not a working Python interpreter."
        where = "this Python" if self.python == sys.executable else self.python
        if version not in QAIRT_PYTHONS:
            return (
                f"qairt-dev runs on Python 3.10 or 3.12 and {where} is {version[0]}.{version[1]}; set "
                "Q9DIFF_QAIRT_PYTHON to a Python 3.10/3.12 with `pip install qairt-dev`."
            )
        if not has_qairt:
            return (
                f"Python module qairt is not installed in {where}; pip install qairt-dev (Python 3.10/3.12)"
            )
        return None

    def _sdk(self) -> tuple[Path | None, str]:
        root, problem = find_sdk_root(self.env)
        if root is None:
            return None, problem
        version = sdk_version(root)
        if version is None:
            return None, f"{root} holds no sdk.yaml with a version: not a QAIRT SDK root qairt-dev can use."
        if [int(x) for x in version.split(".")[:3]] < [int(x) for x in QAIRT_MIN_SDK.split(".")]:
            return None, f"the QAIRT SDK at {root} is {version}; qairt-dev needs {QAIRT_MIN_SDK} or newer."
        if not (root / "lib" / "python" / "qti").is_dir():
            return None, f"{root}/lib/python is missing: qairt needs the SDK's Python modules (qti.aisw)."
        return root, ""

    def missing(self) -> str | None:
        problem = self._python_problem()
        if problem:
            return problem
        root, problem = self._sdk()
        return problem if root is None else None

    def compile(self, recipe: Recipe, out_dir: Path) -> list[Path]:
        problem = self.missing()
        if problem:
            raise BackendUnavailable(problem)
        plan = compile_plan(recipe)
        root, _ = self._sdk()
        assert root is not None
        version = sdk_version(root) or "unknown"
        if recipe.qairt_version and not same_version(recipe.qairt_version, version):
            raise BackendUnavailable(
                f"recipe asks for QAIRT {recipe.qairt_version} but the SDK at {root} is {version}; "
                "set QAIRT_SDK_ROOT to a matching SDK"
            )
        for part in plan.parts:
            for graph in part.graphs:
                for path in (graph.source, graph.encodings):
                    if path and not Path(path).is_file():
                        raise BackendUnavailable(f"part {part.name}: {path} not found")
        out_dir = Path(out_dir).resolve()  # children run elsewhere: no relative paths
        out_dir.mkdir(parents=True, exist_ok=True)
        return [self._compile_part(part, root, out_dir) for part in plan.parts]

    def _compile_part(self, part: QairtPart, root: Path, out_dir: Path) -> Path:
        # A fresh directory inside out_dir: qairt's temporary files land there, and the final move is atomic.
        work = Path(tempfile.mkdtemp(prefix=f".{part.name}.", dir=out_dir))
        try:
            (work / "tmp").mkdir()
            job = work / "job.json"
            part_json = QairtPlan((part,)).to_json()["parts"][0]
            job.write_text(json.dumps({"part": part_json, "work_dir": str(work)}))
            env = dict(self.env)
            env["QAIRT_SDK_ROOT"] = str(root)
            env["QAIRT_TMP_DIR"] = str(work / "tmp")
            result = run_compile_child("qairt", self.python, job, env, self.timeout_s, part.name, job.parent)
            target = output_path(out_dir, part)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(work / result["bin"], target)
            return target
        finally:
            shutil.rmtree(work, ignore_errors=True)


# ---- child side: runs in the qairt interpreter, imports qairt only here ----


def _child(job_path: Path) -> None:
    import qairt
    from qairt.api.common.backends.htp.config import (
        HtpContextConfig,
        HtpDeviceConfig,
        HtpDeviceCoreConfig,
        HtpGraphConfig,
    )
    from qairt.api.compiler.config import CompileConfig

    job = json.loads(job_path.read_text())
    part, work = job["part"], Path(job["work_dir"])
    models = []
    for graph in part["graphs"]:
        if graph["load"] == "convert":
            model = qairt.convert(graph["source"], encodings=graph["encodings"], graph_name=graph["name"])
        else:
            model = qairt.load(graph["source"])
        names = [g.name for g in model.graphs_info]
        if names != [graph["name"]]:
            # The graph configs are keyed by name: under another name they would silently not apply.
            raise SystemExit(f"{graph['source']} holds graph(s) {names}; the recipe says {graph['name']!r}")
        models.append(model)
    devices, contexts = None, None
    if part["device_config"] is not None:
        device = dict(part["device_config"])
        if "cores" in device:
            device["cores"] = [HtpDeviceCoreConfig(**core) for core in device["cores"]]
        devices = [HtpDeviceConfig(**device)]
    if part["context_config"] is not None:
        contexts = [HtpContextConfig(**part["context_config"])]
    config = CompileConfig(
        **part["compile_config"],
        graph_custom_configs=[HtpGraphConfig(**kw) for kw in part["graph_configs"]] or None,
        device_custom_configs=devices,
        context_custom_configs=contexts,
    )
    compiled = qairt.compile(models if len(models) > 1 else models[0], config=config)
    saved = Path(compiled.save(str(work / "context.bin")))
    result = {"bin": saved.name, "graph_names": [g["name"] for g in part["graphs"]]}
    job_path.with_name("result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m q9diff.backends.qairt JOB.json")
    _child(Path(sys.argv[1]))
