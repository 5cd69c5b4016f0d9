"""Compile backend "ort-qnn": ONNX Runtime's QNN execution provider (pip `onnxruntime-qnn`).

It needs no Qualcomm SDK, which makes it the backend for fixtures and quick local rebuilds.
Each part is compiled in a child Python process (`python -m q9diff.backends.ort_qnn JOB.json`) so
that a crash inside Qualcomm's libraries ends that child, not q9diff.

How the EP writes files (measured with onnxruntime-qnn 2.7.0 / QAIRT 2.51): with
`ep.context_embed_mode=0` every session writes its `ep.context_file_path` (an EPContext .onnx)
and the context binary `<stem of the first session's context file>_qnn.bin` beside it. With
`ep.share_ep_contexts=1` on every session of a part and `ep.stop_share_ep_contexts=1` on the
last, all graphs land in ONE context and the .bin appears when the last session is created.
The EP chooses graph names (`QNNExecutionProvider_QNNExecutionProvider_<hash>_1_0`, the hash from
the model path) and has no option for weights packing or other compiler options; the child gives the
compiler the recipe's graph names, `weights_packing` and `finalize_options` through libQnnHtp.so's
interface table (q9diff.backends.htp_graph_hook), then reads the binary it got and fails unless the
graph names and the options string say what was asked. A `/1` recipe (`ep_graph_names`) keeps the
EP's names. The EPContext .onnx files point at the EP's file name, which we rename, so they are
deleted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from q9diff import settings
from q9diff.backends.base import BackendUnavailable, run_compile_child
from q9diff.recipes.recipe import Part, Recipe, Settings, output_path

EP_NAME = "QNNExecutionProvider"
# What the compile child reports it was made with (CompiledPart.made_with, a recipe's made_with): the
# packages whose code makes the binary's bytes (ONNX Runtime partitions and hands the graph to the QNN EP)
# or reads them back.
MADE_WITH = ("onnxruntime-qnn", "onnxruntime", "onnx", "numpy")

# Settings → QNN EP provider option. Values are strings, as the EP takes them.
# recipe field -> (QNN EP provider option, conversion), and the fields the EP has no option for (they need a
# backend that writes htp_backend_ext_config.json; weights_packing and finalize_options go through the
# interface table instead, see _child): views of q9diff.settings.
_EP_OPTION = settings.ep_options()
_NOT_EXPRESSIBLE = settings.not_in_ort()


def ep_options(settings: Settings) -> dict[str, str]:
    """The QNN EP provider options that express `settings`; unset settings are left out."""
    for name in _NOT_EXPRESSIBLE:
        if getattr(settings, name) is not None:
            raise BackendUnavailable(
                f"setting {name} cannot be expressed as an ONNX Runtime QNN EP option; "
                "use the qairt or qnn-cli backend"
            )
    options = {}
    for setting, (option, convert) in _EP_OPTION.items():
        value = getattr(settings, setting)
        if value is None:
            continue
        try:
            options[option] = convert(value)
        except KeyError:
            raise BackendUnavailable(f"precision {value!r} has no QNN EP option; only 'fp16' does") from None
    return options


@dataclass(frozen=True)
class CompiledPart:
    """What the child reports about one compiled part."""

    output: Path
    graph_names: tuple[str, ...]  # the binary's graph names, in the order of the part's graphs
    qairt_version: str
    made_with: dict[str, str] | None = None  # the child interpreter's MADE_WITH packages: version


class OrtQnnBackend:
    """CompileBackend over onnxruntime-qnn; `pythons` maps a QAIRT version ("2.48") to an interpreter
    that has the matching onnxruntime-qnn, for recipes that name another version than ours."""

    name = "ort-qnn"

    def __init__(self, pythons: dict[str, str] | None = None, timeout_s: float = 3600) -> None:
        self.pythons = dict(pythons or {})
        self.timeout_s = timeout_s
        self.compiled: list[CompiledPart] = []  # filled by compile(), for callers that want graph names

    def missing(self) -> str | None:
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            here = f"{platform.system()} {platform.machine()}"
            return f"onnxruntime-qnn's HTP compiler runs on Linux x86_64 only, this is {here}."
        for module in ("onnxruntime", "onnxruntime_qnn"):
            if importlib.util.find_spec(module) is None:
                return (
                    f"Python module {module} is not installed; "
                    "pip install onnxruntime-qnn (Python 3.11, Linux x86_64)."
                )
        return None

    def python_for(self, qairt_version: str | None) -> str:
        """The interpreter for a recipe's QAIRT version: `pythons`, else env Q9DIFF_PYTHON_2_48, else ours."""
        if qairt_version:
            for version, python in self.pythons.items():
                if same_version(version, qairt_version):
                    return python
            fields = str(qairt_version).split(".")
            if len(fields) >= 2 and not same_version(qairt_version, our_qairt() or qairt_version):
                python = os.environ.get(f"Q9DIFF_PYTHON_{fields[0]}_{fields[1]}")
                if python:
                    return python
        return sys.executable

    def compile(self, recipe: Recipe, out_dir: Path) -> list[Path]:
        options = ep_options(recipe.settings)
        problem = self.missing() if self.python_for(recipe.qairt_version) == sys.executable else None
        if problem:
            raise BackendUnavailable(problem)
        out_dir = Path(out_dir).resolve()  # children run elsewhere: no relative paths
        out_dir.mkdir(parents=True, exist_ok=True)
        self.compiled = []
        outputs = []
        for part in recipe.parts:
            compiled = self._compile_part(recipe, part, options, out_dir)
            self.compiled.append(compiled)
            outputs.append(compiled.output)
        return outputs

    def _compile_part(
        self, recipe: Recipe, part: Part, options: dict[str, str], out_dir: Path
    ) -> CompiledPart:
        if len(part.graphs) > 1 and not recipe.settings.weight_sharing:
            raise BackendUnavailable(
                f"part {part.name} has {len(part.graphs)} graphs; the QNN EP puts several graphs in one "
                "context only with shared EP contexts, set weight_sharing true (or make one part per graph)"
            )
        models = [str(recipe.model_path(g)) for g in part.graphs]
        for model in models:
            if not Path(model).is_file():
                raise BackendUnavailable(f"part {part.name}: model {model} not found")
        python = self.python_for(recipe.qairt_version)
        # A fresh directory inside out_dir: the EP refuses existing outputs, and the final move is atomic.
        work = Path(tempfile.mkdtemp(prefix=f".{part.name}.", dir=out_dir))
        try:
            names = [g.name for g in part.graphs]
            job = {
                "models": models,
                "names": names,
                "options": options,
                "work_dir": str(work),
                "graph_names": None if recipe.ep_graph_names else names,
                "weights_packing": recipe.settings.weights_packing,
                "finalize_options": list(recipe.settings.finalize_options or ()),
            }
            (work / "job.json").write_text(json.dumps(job))
            result = _run_child(python, work / "job.json", self.timeout_s, part.name)
            if recipe.qairt_version and not same_version(recipe.qairt_version, result["qairt_version"]):
                raise BackendUnavailable(
                    f"recipe asks for QAIRT {recipe.qairt_version} but {python} has onnxruntime-qnn with "
                    f"QAIRT {result['qairt_version']}; pass an interpreter for {recipe.qairt_version}"
                )
            target = output_path(out_dir, part)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(work / result["bin"], target)
            made_with = result.get("made_with")
            return CompiledPart(target, tuple(result["graph_names"]), result["qairt_version"], made_with)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def our_qairt() -> str | None:
    """The QAIRT version of this interpreter's onnxruntime-qnn, without loading Qualcomm's libraries."""
    try:
        from onnxruntime_qnn import build_and_package_info
    except ImportError:
        return None
    return getattr(build_and_package_info, "qnn_version", None)


def same_version(a: str, b: str) -> bool:
    """QAIRT versions agree on as many dotted fields as both give ("2.51" == "2.51.0.260929")."""
    fa, fb = str(a).split("."), str(b).split(".")
    n = min(len(fa), len(fb))
    return fa[:n] == fb[:n]


def _run_child(python: str, job: Path, timeout_s: float, part: str) -> dict:
    return run_compile_child("ort-qnn", python, job, dict(os.environ), timeout_s, part)


# ---- child side: runs in a separate interpreter, imports ONNX Runtime only here ----


def _session_options(ort, ctx_file: Path, share: bool, last: bool):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("ep.context_enable", "1")
    so.add_session_config_entry("ep.context_file_path", str(ctx_file))
    so.add_session_config_entry("ep.context_embed_mode", "0")
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if share:
        so.add_session_config_entry("ep.share_ep_contexts", "1")
        if last:
            so.add_session_config_entry("ep.stop_share_ep_contexts", "1")
    return so


def _stable_model_path(model: Path, graph_name: str, folder: Path) -> str:
    """A relative path to `model` that depends only on the recipe's graph name.

    The EP names a graph after a hash of the model path string exactly as given, and that name is
    stored in the binary; loading `<graph name>.onnx` from inside `folder` makes the bytes the same
    wherever the model and the build directory live. The model's siblings are linked too, so
    external data files still resolve.
    """
    folder.mkdir()
    for sibling in model.parent.iterdir():
        if sibling.name != model.name:
            (folder / sibling.name).symlink_to(sibling.resolve())
    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in graph_name)
    (folder / f"{stem}.onnx").symlink_to(model.resolve())
    os.chdir(folder)
    return f"{stem}.onnx"


def _child(job_path: Path) -> None:
    import onnx
    import onnxruntime as ort
    import onnxruntime_qnn as oq

    if hasattr(ort, "disable_telemetry_events"):  # besides the parent's ORT_DISABLE_TELEMETRY=1
        ort.disable_telemetry_events()
    ort.set_default_logger_severity(3)
    job = json.loads(job_path.read_text())
    work = Path(job["work_dir"])
    options = {"backend_type": "htp", **job["options"]}
    plugin = hasattr(ort, "register_execution_provider_library") and hasattr(oq, "get_library_path")
    devices = []
    if plugin:
        ort.register_execution_provider_library(EP_NAME, oq.get_library_path())
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
        npu = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.NPU]
        devices = (npu or devices)[:1]
    hook = _install_hook(job, oq, plugin)
    if hook is not None:  # the EP must load the very libQnnHtp.so whose table was patched
        options = {k: v for k, v in options.items() if k != "backend_type"}
        options["backend_path"] = oq.get_qnn_htp_path()
    models = job["models"]
    share = len(models) > 1
    ctx_files = []
    for i, (model, name) in enumerate(zip(models, job["names"], strict=True)):
        ctx_file = work / f"graph{i}_ctx.onnx"
        so = _session_options(ort, ctx_file, share, i == len(models) - 1)
        model_arg = _stable_model_path(Path(model), name, work / f"graph{i}")
        if plugin:
            so.add_provider_for_devices(devices, options)
            ort.InferenceSession(model_arg, so)
        else:
            classic = {**options, "backend_path": oq.get_qnn_htp_path()}
            ort.InferenceSession(model_arg, so, providers=[(EP_NAME, classic)])
        ctx_files.append(ctx_file)
    bins = sorted(p.name for p in work.glob("*.bin"))
    if len(bins) != 1:
        raise SystemExit(f"expected one context binary, the EP wrote {bins or 'none'}")
    names, sdk_version = [], "unknown"
    for ctx_file in ctx_files:
        nodes = [n for n in onnx.load(str(ctx_file)).graph.node if n.op_type == "EPContext"]
        if len(nodes) != 1:
            raise SystemExit(f"{len(nodes)} EPContext nodes for one model: the EP split the graph")
        names.append(nodes[0].name)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in nodes[0].attribute}
        sdk_version = attrs.get("ep_sdk_version", b"vunknown").decode().lstrip("v")  # "2.51.0.260929181845"
        ctx_file.unlink()
    package_info = getattr(oq, "build_and_package_info", None)
    qairt_version = getattr(package_info, "qnn_version", None) or sdk_version
    if hook is not None:
        names = _check_build(work / bins[0], job, hook, names)
    result = {"bin": bins[0], "graph_names": names, "qairt_version": qairt_version, "made_with": _made_with()}
    job_path.with_name("result.json").write_text(json.dumps(result))


def _made_with() -> dict[str, str]:
    """This interpreter's installed versions of MADE_WITH (a package not installed is left out)."""
    from importlib import metadata

    found = {}
    for package in MADE_WITH:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def _install_hook(job: dict, oq, plugin: bool):
    """Patch graphCreate when the recipe asks for what the EP cannot say; None when it asks nothing."""
    from q9diff.backends import htp_graph_hook  # start-up: backends.htp_graph_hook

    finalize = tuple((k, v) for k, v in job.get("finalize_options") or ())
    if job.get("graph_names") is None and job.get("weights_packing") is None and not finalize:
        return None
    if not plugin:
        raise SystemExit(
            "cannot patch libQnnHtp.so's interface table: this onnxruntime loads the QNN EP only when a "
            "session starts (no register_execution_provider_library); graph names, weights_packing and "
            "finalize_options need onnxruntime-qnn 2.x"
        )
    try:
        return htp_graph_hook.install(
            oq.get_qnn_htp_path(), job.get("graph_names"), job.get("weights_packing"), finalize
        )
    except htp_graph_hook.HookError as exc:
        raise SystemExit(f"cannot patch libQnnHtp.so's interface table: {exc}") from None


def _option_matches(found: str, asked: bool | int | float) -> bool:
    """Whether an options-string value (`true`, `12`, `0x1.8p-1`, `0.5`) says what was asked."""
    if isinstance(asked, bool):
        return found == str(asked).lower()
    try:
        value = float.fromhex(found) if found.lower().lstrip("-").startswith("0x") else float(found)
    except ValueError:
        return False
    return abs(value - asked) <= 1e-6 * max(1.0, abs(asked))


def _check_build(binary: Path, job: dict, hook, ep_names: list[str]) -> list[str]:
    """Read the binary back: fail (one line) unless its graph names and options say what was asked.
    `ep_names` are the EP's own names from the EPContext nodes, one per model in order: the patched
    graphCreate must have seen exactly those, in that order, so model i's graph got name i."""
    from q9diff.read.binary import ContextBinary  # start-up: read.binary, construct

    models = job["models"]
    if hook.asked != ep_names:
        raise SystemExit(
            f"the patched graphCreate saw graphs {hook.asked} for {len(models)} model(s) whose EP graphs are "
            f"{ep_names}; the EP did not create its graphs through the patched libQnnHtp.so, one per model"
        )
    cb = ContextBinary.open(binary)
    got = [g.name for g in cb.graphs]
    wanted = job.get("graph_names")
    if wanted is not None and sorted(got) != sorted(wanted):
        raise SystemExit(f"graph names asked {wanted}, the binary carries {got}")
    asked = []
    if job.get("weights_packing") is not None:
        asked.append(("compress_weights", bool(job["weights_packing"]), "weights_packing"))
    asked += [(k, v, f"finalize option {k}") for k, v in job.get("finalize_options") or ()]
    for i, graph in enumerate(cb.graphs):
        options = cb.options(i)
        for key, value, what in asked:
            found = options.get(key)
            if found is None:
                raise SystemExit(
                    f"{what} = {json.dumps(value)} asked, but graph {graph.name}'s compiler options have no "
                    f"{key} (the compiler ignored it)"
                )
            if not _option_matches(found, value):
                why = "the compiler dropped the request"
                if key == "compress_weights" and cb.dsp_arch in (68, 69):
                    why += f"; it does not pack weights for v{cb.dsp_arch}"
                raise SystemExit(
                    f"{what} = {json.dumps(value)} asked, but graph {graph.name}'s compiler options say "
                    f"{key}={found} ({why})"
                )
    return [g.name for g in cb.graphs] if wanted is None else list(wanted)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m q9diff.backends.ort_qnn JOB.json")
    _child(Path(sys.argv[1]))
