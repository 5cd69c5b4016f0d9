"""Nothing left behind, nothing sent: each command whose children load ONNX Runtime or Qualcomm's
libraries, run with TMPDIR and HOME empty folders, leaves both empty. Before, every `verify` left
$TMPDIR/.ses and ~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}, written by
ONNX Runtime 1.32's telemetry client (in q9diff's process for the CPU reference, in children for the rest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from q9diff.runners.genie import GenieRunner
from q9diff.runners.local import LocalRunner

pytestmark = pytest.mark.skipif(LocalRunner().missing() is not None, reason=str(LocalRunner().missing()))

VARIANTS, QWEN = FIXTURES / "variants", FIXTURES / "qwen-mini"
COMMANDS = {
    # the x86 HTP emulator in a worker child, the recipe's ONNX on the CPU in q9diff's own process
    "verify": ["verify", str(VARIANTS / "opt_1.bin"), str(VARIANTS / "opt_3.bin")],
    # layers: compiles in the ort-qnn child, the emulator in a worker child, the float model in-process
    "layers": [
        "layers",
        str(VARIANTS / "vtcm_8mb.recipe.json"),
        "--reference",
        str(VARIANTS / "models" / "mlp.float.onnx"),
    ],
    # the ort-qnn compile child
    "recompile": ["recompile", str(VARIANTS / "opt_1.recipe.json"), "--out", "{out}"],
    # libQnnSystem in the oracle child
    "inspect --oracle": ["inspect", str(VARIANTS / "opt_1.bin"), "--oracle"],
    # Qualcomm's config parsers (libQnnHtpNetRunExtensions, libGenie) in their children
    "doctor": ["doctor", str(QWEN / "reference")],
    # libGenie in the Genie child
    "verify --runner genie": [
        "verify",
        str(QWEN / "local"),
        str(QWEN / "reference"),
        "--runner",
        "genie",
        "--steps",
        "2",
        "--no-cpu",
    ],  # fmt: skip
}


def _left(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("name", COMMANDS)
def test_command_leaves_tmpdir_and_home_empty(name, tmp_path):
    if "genie" in name and GenieRunner().missing():
        pytest.skip(GenieRunner().missing())
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}  # as a user's shell has it
    env.update(TMPDIR=str(tmp), HOME=str(home))  # Q9DIFF_CACHE (conftest) keeps q9diff's own cache elsewhere
    args = [a.replace("{out}", str(tmp_path / "out")) for a in COMMANDS[name]]
    r = subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    assert _left(tmp) == [], f"{name} left files in TMPDIR"
    assert _left(home) == [], f"{name} left files in HOME"
