"""The ExecuTorch lines q9diff prints, checked against executorch 1.5.1's own source (its Qualcomm backend,
read and never imported: it needs torch). `.ci/run` downloads the wheel and points Q9DIFF_EXECUTORCH_SRC at
the two files; without them these tests skip and say why."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from q9diff.read.tables import EXECUTORCH_CHIPSETS
from q9diff.settings import SETTINGS

SRC = Path(os.environ.get("Q9DIFF_EXECUTORCH_SRC", "/nonexistent")) / "executorch" / "backends" / "qualcomm"
pytestmark = pytest.mark.skipif(
    not (SRC / "serialization" / "qc_schema.py").is_file(),
    reason="executorch 1.5.1's source is not here (set Q9DIFF_EXECUTORCH_SRC; .ci/run downloads it)",
)


def _tree(name: str) -> ast.Module:
    return ast.parse((SRC / name).read_text())


def test_the_chipset_table_is_executorchs():
    schema = _tree("serialization/qc_schema.py")
    (chipset,) = [n for n in schema.body if isinstance(n, ast.ClassDef) and n.name == "QcomChipset"]
    members = {
        a.targets[0].id: a.value.value
        for a in chipset.body
        if isinstance(a, ast.Assign) and isinstance(a.value, ast.Constant) and isinstance(a.value.value, int)
    }
    assert {v: k for k, v in members.items() if v} == EXECUTORCH_CHIPSETS


def _params(function: str) -> list[str]:
    (fn,) = [n for n in _tree("utils/utils.py").body if isinstance(n, ast.FunctionDef) and n.name == function]
    return [a.arg for a in fn.args.args + fn.args.kwonlyargs]


def test_every_executorch_fix_line_calls_what_executorch_defines():
    for s in SETTINGS:
        if not s.executorch:
            continue
        call = ast.parse(s.executorch.replace("...", "0").replace("{chipset}", "X").replace("{bool}", "True"))
        node = call.body[0].value
        assert isinstance(node, ast.Call), s.executorch
        names = _params(node.func.id)
        assert [k.arg for k in node.keywords if k.arg not in names] == [], (s.recipe, names)
