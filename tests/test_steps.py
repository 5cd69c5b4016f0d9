"""`q9diff steps`: the seed's table, built with the real compiler, from qwen-mini's local build to the
reference: the first row is the candidate, the last the reference, the middle rows what `recompile` of
the recipe with those settings gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from conftest import q9diff_cli as q9diff

pytest.importorskip("onnxruntime_qnn")

from q9diff.recipes.recipe import dump, load  # noqa: E402


def test_steps_from_local_to_reference(tmp_path, monkeypatch):
    local, ref = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
    r = q9diff("steps", str(local), str(ref), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "q9diff.steps/1"
    steps = data["steps"]
    ref_size = steps[-1]["size"]
    monkeypatch.setenv("COLUMNS", "80")  # the table as a user reads it (builds cached by the run above)
    page = tmp_path / "steps.html"
    lines = q9diff("steps", str(local), str(ref), "--html", str(page)).stdout.splitlines()
    assert lines[-1] == f"wrote the HTML page: {page}"
    html = page.read_text()
    assert html.count("<tr>") == len(steps) + 1 and "+ optimization_level=3" in html
    assert all(f"{s['delta_vs_reference']:+,d} B</span>" in html for s in steps)  # bytes, as the table
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# settings added"))
    table = lines[start : start + len(steps) + 1]
    assert max(map(len, table)) <= 80
    for i, s in enumerate(steps):
        pct = s["delta_vs_reference_percent"]
        assert pct == round(100 * s["delta_vs_reference"] / ref_size, 4)
        row = next(ln.split() for ln in table if ln.startswith(f"{i} "))
        shown = row[row.index(f"{s['delta_vs_reference']:+,d}") + 1]
        assert shown.endswith("%") and abs(float(shown[:-1]) - pct) <= 0.05 + abs(pct) / 20, (row, pct)
    assert steps[0]["added"] == [] and steps[0]["identical_to"] == "candidate"
    assert steps[-1]["identical_to"] == "reference" and steps[-1]["changed_vs_reference"] == 0
    added = [a for s in steps for a in s["added"]]
    assert {"vtcm_size", "soc_model", "optimization_level"} <= set(added)
    assert added.index("vtcm_size") < added.index("soc_model")  # the stated order
    for s in steps:
        assert s["moved"] + s["new"] == s["changed_vs_reference"]
    recipe = load(local / "recipe.json")
    for i, s in enumerate(steps[1:-1], 1):
        own = tmp_path / f"step{i}"
        own.mkdir()
        path = own / "recipe.json"
        path.write_text(dump(recipe.with_settings(**s["settings"]).rebased(own)))
        out = tmp_path / f"built{i}"
        rc = q9diff("recompile", str(path), "--out", str(out))
        assert rc.returncode == 0, rc.stderr
        for p in recipe.parts:
            assert (out / p.output).read_bytes() == (Path(s["binaries"]) / p.output).read_bytes(), (i, p.name)
