"""Compile backend "qnn-cli": the QAIRT SDK's `qnn-context-binary-generator` on DLC files.

The tool takes no target settings as flags: SoC, arch, VTCM, optimization level and weight sharing go
through `--config_file`, a wrapper JSON naming `libQnnHtpNetRunExtensions.so` and the backend extension
JSON (`htp_backend_ext_config.json`). Several DLCs in `--dlc_path a.dlc,b.dlc` become graphs of ONE
context binary; `--binary_file NAME` is written as `NAME.bin` under `--output_dir`.

Sources must be DLC files. An ONNX source is refused rather than converted here: how it should be
converted (encodings, float width, I/O layout, quantizer) is part of the user's build, and guessing it
would make a rebuild that differs from theirs for reasons q9diff did not name. Convert with
`qairt-converter --input_network m.onnx --output_path NAME.dlc` and point the recipe at the DLC, or use
the qairt backend, which converts ONNX with `qairt.convert` itself.

Graph configs are keyed by graph name, and a DLC's graph name is fixed inside the DLC: the recipe's
graph name must be that name, or the settings silently do not apply. After a build the graph names
in the new binary are read back and compared.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q9diff.backends.base import BackendUnavailable
from q9diff.backends.qairt import backend_extension, find_sdk_root, htp_kwargs
from q9diff.errors import FormatError
from q9diff.guard import child_env
from q9diff.recipes.recipe import Recipe, output_path

TOOL = "qnn-context-binary-generator"
HTP_BACKEND_LIB = "libQnnHtp.so"
DLC_MODEL_LIB = "libQnnModelDlc.so"  # the model "library" that reads --dlc_path
HTP_EXTENSIONS_LIB = "libQnnHtpNetRunExtensions.so"  # reads the backend extension JSON
HOST_DIR = "x86_64-linux-clang"  # the SDK's bin/ and lib/ subdirectory for a Linux x86_64 host


@dataclass(frozen=True)
class QnnSdk:
    """Where the tool and the libraries it loads live."""

    tool: Path
    lib_dir: Path

    def lib(self, name: str) -> str:
        return str(self.lib_dir / name)


@dataclass(frozen=True)
class CliPart:
    """One context binary as qnn-context-binary-generator builds it."""

    name: str
    output: str  # path of the .bin relative to the output directory
    dlc_paths: tuple[str, ...]  # absolute, in graph order
    graph_names: tuple[str, ...]
    backend_extension: dict[str, Any]  # the htp_backend_ext_config.json document

    @property
    def binary_file(self) -> str:
        """The `--binary_file` value: the tool appends `.bin` itself."""
        return Path(self.output).stem

    def wrapper(self, sdk: QnnSdk, extension_path: Path) -> dict[str, Any]:
        """The `--config_file` document: which extension library reads which backend extension JSON."""
        return {
            "backend_extensions": {
                "shared_library_path": sdk.lib(HTP_EXTENSIONS_LIB),
                "config_file_path": str(extension_path),
            }
        }

    def command(self, sdk: QnnSdk, output_dir: Path, wrapper_path: Path) -> list[str]:
        return [
            str(sdk.tool),
            "--backend", sdk.lib(HTP_BACKEND_LIB),
            "--model", sdk.lib(DLC_MODEL_LIB),
            "--dlc_path", ",".join(self.dlc_paths),
            "--binary_file", self.binary_file,
            "--output_dir", str(output_dir),
            "--config_file", str(wrapper_path),
        ]  # fmt: skip


def cli_plan(recipe: Recipe) -> tuple[CliPart, ...]:
    """Turn a recipe into one tool invocation per part; refuse what the tool cannot take."""
    kwargs = htp_kwargs(recipe.settings)
    parts = []
    for part in recipe.parts:
        dlcs = []
        for graph in part.graphs:
            model = recipe.model_path(graph)
            if model.suffix.lower() != ".dlc":
                raise BackendUnavailable(
                    f"part {part.name} graph {graph.name}: {model.name} is not a DLC and {TOOL} compiles "
                    f"DLCs: convert it (qairt-converter --input_network {model.name} --output_path "
                    f"{graph.name}.dlc) and point the recipe at the .dlc, or use --backend qairt"
                )
            if graph.encodings:
                raise BackendUnavailable(
                    f"part {part.name} graph {graph.name}: a DLC carries its own quantization encodings; "
                    "drop `encodings` (apply them when converting)"
                )
            if "," in str(model):
                raise BackendUnavailable(f"part {part.name}: {model} has a comma, --dlc_path cannot carry it")
            dlcs.append(str(model))
        names = tuple(g.name for g in part.graphs)
        if len(set(names)) != len(names):
            raise BackendUnavailable(f"part {part.name}: graph names repeat ({', '.join(names)})")
        parts.append(CliPart(part.name, part.output, tuple(dlcs), names, backend_extension(kwargs, names)))
    return tuple(parts)


class QnnCliBackend:
    """CompileBackend over qnn-context-binary-generator from a QAIRT SDK (QNN_SDK_ROOT / QAIRT_SDK_ROOT)."""

    name = "qnn-cli"

    def __init__(self, env: Mapping[str, str] | None = None, timeout_s: float = 3600) -> None:
        self.env = dict(os.environ if env is None else env)
        self.timeout_s = timeout_s

    def sdk(self) -> tuple[QnnSdk | None, str]:
        """The tool and library directory, or (None, a sentence naming what is missing)."""
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            here = f"{platform.system()} {platform.machine()}"
            return None, f"the qnn-cli backend runs on Linux x86_64, this is {here}."
        root, problem = find_sdk_root(self.env, ("QNN_SDK_ROOT", "QAIRT_SDK_ROOT"))
        if root is None:
            return None, problem
        in_sdk = root / "bin" / HOST_DIR / TOOL
        tool = in_sdk if in_sdk.is_file() else shutil.which(TOOL, path=self.env.get("PATH", ""))
        if not tool:
            return None, f"{TOOL} not found in {in_sdk.parent} nor on PATH."
        lib_dir = root / "lib" / HOST_DIR
        for lib in (HTP_BACKEND_LIB, DLC_MODEL_LIB, HTP_EXTENSIONS_LIB):
            if not (lib_dir / lib).is_file():
                return None, f"{lib} not found in {lib_dir}: not a complete QAIRT SDK for {HOST_DIR}."
        return QnnSdk(Path(tool), lib_dir), ""

    def missing(self) -> str | None:
        sdk, problem = self.sdk()
        return problem if sdk is None else None

    def compile(self, recipe: Recipe, out_dir: Path) -> list[Path]:
        sdk, problem = self.sdk()
        if sdk is None:
            raise BackendUnavailable(problem)
        parts = cli_plan(recipe)
        for part in parts:
            for dlc in part.dlc_paths:
                if not Path(dlc).is_file():
                    raise BackendUnavailable(f"part {part.name}: {dlc} not found")
        out_dir = Path(out_dir).resolve()  # children run elsewhere: no relative paths
        out_dir.mkdir(parents=True, exist_ok=True)
        return [self._compile_part(part, sdk, out_dir) for part in parts]

    def _compile_part(self, part: CliPart, sdk: QnnSdk, out_dir: Path) -> Path:
        # A fresh directory inside out_dir: the tool writes there, and the final move is atomic.
        work = Path(tempfile.mkdtemp(prefix=f".{part.name}.", dir=out_dir))
        try:
            extension = work / "htp_backend_ext_config.json"
            extension.write_text(json.dumps(part.backend_extension, indent=2) + "\n")
            wrapper = work / "config_file.json"
            wrapper.write_text(json.dumps(part.wrapper(sdk, extension), indent=2) + "\n")
            build = work / "out"
            build.mkdir()
            env = dict(self.env)
            # libQnnHtp.so loads its prepare library by name, from the same directory.
            search = (str(sdk.lib_dir), env.get("LD_LIBRARY_PATH"))
            env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in search if p)
            _run(part.command(sdk, build, wrapper), child_env(work, env), self.timeout_s, part.name, work)
            built = build / f"{part.binary_file}.bin"
            if not built.is_file():
                written = sorted(p.name for p in build.iterdir())
                raise RuntimeError(
                    f"{TOOL}: part {part.name}: no {built.name}, it wrote {written or 'nothing'}"
                )
            _check_graph_names(built, part)
            target = output_path(out_dir, part)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(built, target)
            return target
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _run(cmd: list[str], env: dict[str, str], timeout_s: float, part: str, cwd: Path) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=cwd)
    except FileNotFoundError:
        raise BackendUnavailable(f"{cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{TOOL}: part {part} took longer than {timeout_s:.0f} s") from None
    if proc.returncode < 0:
        raise RuntimeError(f"{TOOL}: part {part} crashed (signal {-proc.returncode})")
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln.upper()] or lines
        last = errors[-1] if errors else f"exit code {proc.returncode}"
        raise RuntimeError(f"{TOOL}: part {part} failed: {last}")


def _check_graph_names(built: Path, part: CliPart) -> None:
    """Graph configs keyed by a name the DLC does not use are ignored by the compiler: say so."""
    from q9diff.read.openers import open_binary  # start-up: read.openers, construct

    try:
        names = [g.name for g in open_binary(built).graphs]
    except FormatError:
        return  # a layout q9diff cannot read yet; the build itself succeeded
    if part.backend_extension.get("graphs") and sorted(names) != sorted(part.graph_names):
        raise RuntimeError(
            f"{TOOL}: part {part.name}: the DLCs name their graphs {', '.join(names)}, the recipe "
            f"{', '.join(part.graph_names)}; the graph settings did not apply. Use the DLC's graph names"
        )
