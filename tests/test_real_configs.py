"""`suggest --apply` on configuration files as their authors wrote them (../shared/real/configs: Qualcomm's
samples and other projects), with the qwen-mini pair's real suggestions (soc_model 77 on v73, VTCM 8 MB,
O 3): each file is edited and then parses, is no worse to Qualcomm's own parser, keeps every key it did
not mean to change, carries no null, says soc_model 77 with dsp_arch v73, has VTCM/O in entries naming the
candidate's graphs, and its diff touches only the lines of the values that change plus what it adds; or
it is refused with one line naming it, and nothing is written."""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path, PurePosixPath

import pytest
from conftest import FIXTURES, ROOT

from q9diff import jsonc
from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.fix import extconfig
from q9diff.fix.apply import ApplyError, BuildFacts, plan, write_all
from q9diff.inputs import resolve

REAL = ROOT.parent / "shared" / "real" / "configs"
LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
FILES = sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file()) if REAL.is_dir() else []
# The keys a fix may change in place; anything else in the file must keep its value.
CHANGED_KEYS = {"soc_model", "soc_id", "dsp_arch", "vtcm_mb", "O"}

pytestmark = pytest.mark.skipif(not FILES, reason=f"{REAL} is absent: no real third-party configs here")


@pytest.fixture(scope="module")
def pair(fixtures_dir) -> tuple[list[dict], BuildFacts]:
    data = set_to_json(diff_sets(resolve(LOCAL), resolve(REFERENCE)))
    return data["suggestions"], BuildFacts.of(
        [p["a"] for p in data["parts"]], [p["b"] for p in data["parts"]]
    )


def lay_out(tmp_path: Path, rel: str) -> tuple[Path, Path]:
    """A writable copy of the configs inside a working directory. A Genie config whose extension file is
    a relative path not found beside it is run the way its README runs it: from a working directory
    that holds the config and, at that path, the extension file beside it."""
    cwd = tmp_path / "cwd"
    work = cwd / "configs"
    shutil.copytree(REAL, work)
    for p in [work, *work.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    config = work / rel
    try:
        doc = jsonc.loads(config.read_text())
        named = doc["dialog"]["engine"]["backend"]["extensions"]
    except (jsonc.JsoncError, KeyError, TypeError, UnicodeDecodeError):
        return config, cwd
    path = PurePosixPath(named.replace("\\", "/"))
    beside = config.parent / "htp_backend_ext_config.json"
    if not path.is_absolute() and not (config.parent / path).exists() and beside.is_file():
        (cwd / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(beside, cwd / path)
    return config, cwd


def snapshot(*folders: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


def flatten(value: object, path: tuple = ()) -> dict[tuple, object]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, (*path, i)).items()} or {
            path: []
        }
    return {path: value}


def qualcomm_errors(before: str, after: str) -> tuple[set[str], set[str]] | None:
    strict = all(_strict(t) for t in (before, after))
    texts = [before, after] if strict else [json.dumps(jsonc.loads(t)) for t in (before, after)]
    try:
        was, now = extconfig.check(texts)
    except extconfig.Unavailable:
        return None
    return set(was.errors), set(now.errors)


def _strict(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def key_of(line: str) -> str | None:
    m = re.match(r'\s*"([^"]+)"\s*:', line)
    return m.group(1) if m else None


def _bracketed(line: str, added: list[str]) -> bool:
    """`line` with only the list's `[` before the graphs object, or `]` (and a new entry) after it."""
    end = line.rstrip(",")
    return line.replace("{", "[{", 1) in added or any(
        a.startswith(end + ", {") or a == end + "]" + line[len(end) :] for a in added
    )


@pytest.mark.parametrize("rel", FILES)
def test_a_real_config_is_edited_right_or_refused_untouched(tmp_path, monkeypatch, pair, rel):
    suggestions, facts = pair
    config, cwd = lay_out(tmp_path, rel)
    monkeypatch.chdir(cwd)
    before_files = snapshot(tmp_path)
    try:
        edit = plan(config, suggestions, facts, named=[config])
    except ApplyError as exc:
        message = str(exc)
        assert "\n" not in message and str(config) in message
        assert snapshot(tmp_path) == before_files
        return  # refused with one line, nothing written
    (written,) = write_all([edit])
    target = edit.path
    after = target.read_text()
    assert written == (target, target.with_name(target.name + ".bak")) and after == edit.after
    changed = {p for p, data in snapshot(tmp_path).items() if before_files.get(p) != data}
    assert changed == {target, written[1]}  # the wrapper or Genie config itself is never written
    old, new = jsonc.loads(edit.before), jsonc.loads(after)
    # graphs as one object, which Qualcomm's parser rejects, becomes a list holding it first
    listed = isinstance(old.get("graphs"), dict)
    if listed:
        assert isinstance(new["graphs"], list) and new["graphs"][0].keys() == old["graphs"].keys()

    # Keys it did not mean to change keep their values; nothing is null.
    flat_old, flat_new = flatten({**old, "graphs": [old["graphs"]]} if listed else old), flatten(new)
    for path, value in flat_old.items():
        if path[-1] not in CHANGED_KEYS:
            assert flat_new.get(path, "<gone>") == value, path
    assert None not in flat_new.values()

    # The SoC as a pair, under the file's own key.
    for device in new.get("devices", []):
        soc_keys = [k for k in ("soc_model", "soc_id") if k in device]
        assert soc_keys and all(device[k] == 77 for k in soc_keys) and device["dsp_arch"] == "v73"
    for was, now in zip(old.get("devices", []), new.get("devices", [])):
        if "soc_id" in was and "soc_model" not in was:
            assert "soc_model" not in now
    assert new.get("devices"), "no device entry says the SoC"

    # VTCM and O in entries that name the candidate's graphs; every graph setting has graph_names.
    entries = new["graphs"] if isinstance(new["graphs"], list) else [new["graphs"]]
    for graph in facts.candidate_graphs:
        naming = [g for g in entries if "*" in g.get("graph_names", []) or graph in g.get("graph_names", [])]
        assert naming and all(g["vtcm_mb"] == 8 and g["O"] == 3 for g in naming), graph

    # Only the lines of changed values, plus what is added (with the comma the line before then needs).
    lines_before, lines_after = edit.before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, lines_before, lines_after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        added = lines_after[j1:j2]
        for line in lines_before[i1:i2] if op != "equal" else []:
            assert (
                line + "," in added
                or (listed and _bracketed(line, added))
                or (key_of(line) in CHANGED_KEYS and any(key_of(a) == key_of(line) for a in added))
            ), f"{rel}: line {line!r} changed beyond its value"

    # No worse to Qualcomm's own parser.
    verdicts = qualcomm_errors(edit.before, after)
    if verdicts is not None:
        was_errors, now_errors = verdicts
        assert now_errors <= was_errors, now_errors - was_errors


def test_most_real_configs_are_edited_and_each_refusal_is_one_line(tmp_path, monkeypatch, pair):
    suggestions, facts = pair
    edited, refused, outside = [], [], []
    for i, rel in enumerate(FILES):
        config, cwd = lay_out(tmp_path / str(i), rel)
        monkeypatch.chdir(cwd)
        # an extension file outside the config's folder (aedh's Genie sample runs from the folder above,
        # with qai_libs/ there) is edited only when the user names it too (issue 22: a write outside)
        named = [config]
        try:
            plan(config, suggestions, facts, named=named)
        except ApplyError as exc:
            if "edits only files in the config's folder or given with --apply" in str(exc):
                outside.append(rel)
                named += [e for e in cwd.rglob("*.json") if not e.is_relative_to(config.parent)]
        try:
            plan(config, suggestions, facts, named=named)
            edited.append(rel)
        except ApplyError as exc:
            refused.append(f"{rel}: {exc}")
    summary = "\n".join(["edited:", *edited, "refused:", *refused])
    # Every file that is (or names) an extension config with graphs as a list, or none, is edited.
    assert len(edited) >= 8, summary
    assert all("\n" not in r for r in refused), summary
    assert outside == ["aedh/genie/Qwen2.0-7B.config.json"], outside


ONNX2BIN = REAL / "aedh" / "onnx2bin" / "htp_backend_ext-fp16-v73-real_esrgan_x4plus.json"
QAIRT_251_VERDICT = "schema validation failed: #/graphs expected array, got object"
needs_parser = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_qnn") is None, reason="Qualcomm's parser needs onnxruntime-qnn"
)


def _removed(edit) -> list[str]:
    return [line for line in edit.unified.splitlines() if line.startswith("-") and not line.startswith("---")]


@needs_parser
def test_graphs_as_one_object_becomes_a_list_qualcomms_parser_accepts(tmp_path, pair):
    """aedh's onnx2bin config writes graphs as one object, which QAIRT 2.51's parser rejects: the edit makes
    it a list holding that entry first (its text unchanged), then the entry naming the candidate's graphs."""
    suggestions, facts = pair
    ext = tmp_path / ONNX2BIN.name
    shutil.copy(ONNX2BIN, ext)
    edit = plan(ext, suggestions, facts)
    was, now = extconfig.check([ONNX2BIN.read_text(), edit.after])
    assert extconfig.said(was.errors) == QAIRT_251_VERDICT  # before: rejected
    assert now.errors == ()  # after: valid
    graphs = jsonc.loads(edit.after)["graphs"]
    assert graphs[0] == jsonc.loads(ONNX2BIN.read_text())["graphs"]  # the original entry, first
    assert graphs[1] == {"graph_names": list(facts.candidate_graphs), "vtcm_mb": 8, "O": 3}
    original = ONNX2BIN.read_text()
    block = original[original.index('"graph_names"') : original.index('"devices"')].split("}")[0]
    assert block in edit.after  # the object's own text kept as it was
    assert _removed(edit) == ['-  "graphs": {', "-  },", '-    "soc_id": 60,']  # only "[" and "]" around it
    assert f"before the edit: {QAIRT_251_VERDICT}" in edit.note and "after the edit: no errors" in edit.note
    assert ext.read_text() == original  # planned, not written


@needs_parser
def test_graphs_as_one_object_naming_every_graph_is_listed_and_edited_in_place(tmp_path, pair):
    """With graph_names ["*"] the one entry covers the candidate: its values are set in place, inside the
    list Qualcomm's parser asks for."""
    suggestions, facts = pair
    ext = tmp_path / ONNX2BIN.name
    ext.write_text(ONNX2BIN.read_text().replace('["real_esrgan_x4plus"]', '["*"]'))
    edit = plan(ext, suggestions, facts)
    assert _removed(edit) == ['-  "graphs": {', "-  },", '-    "soc_id": 60,']
    assert '"graphs": [{' in edit.after and "  }],\n" in edit.after
    assert jsonc.loads(edit.after)["graphs"] == [
        {"graph_names": ["*"], "vtcm_mb": 8, "O": 3.0, "fp16_relaxed_precision": 1}
    ]
    assert extconfig.check([edit.after])[0].errors == ()
    assert "made it a list holding that entry first; after the edit: no errors" in edit.note


@needs_parser
def test_a_listed_graphs_object_that_reveals_another_error_is_refused_saying_both(tmp_path, pair):
    """QIDK's device_config.json: as a list, Qualcomm's parser reads on to fp16_relaxed_precision true, where
    its schema wants an integer. q9diff does not change that value: one line says both verdicts."""
    suggestions, facts = pair
    config = tmp_path / "device_config.json"
    shutil.copy(REAL / "qidk" / "device_config.json", config)
    with pytest.raises(ApplyError) as exc:
        plan(config, suggestions, facts)
    message = str(exc.value)
    assert "\n" not in message and message.endswith("left untouched")
    assert f"Qualcomm's parser rejects ({QAIRT_251_VERDICT})" in message
    assert "#/graphs/0/fp16_relaxed_precision expected integer, got boolean" in message


def test_the_readme_example_a_qualcomm_wrapper_and_its_extension_file(tmp_path, fixtures_dir):
    """The example of docs/wrong-output.md: ai-engine-direct-helper's v73 wrapper, with --dry-run."""
    from test_cli import q9diff

    for name in ("config_local.json", "extensions.conf"):
        shutil.copy(REAL / "aedh" / "v73_wos" / name, tmp_path / name)
    before = snapshot(tmp_path)
    r = q9diff(
        "suggest", str(LOCAL), str(REFERENCE), "--apply", str(tmp_path / "config_local.json"), "--dry-run"
    )
    assert r.returncode == 1, r.stdout + r.stderr
    diff = r.stdout[r.stdout.index("--- ") :]
    assert '-            "soc_id": 60,\n+            "soc_id": 77,\n' in diff
    assert '             "O": 3.0\n+        },\n+        {\n+            "graph_names": [\n' in diff
    removed = [
        line for line in diff.splitlines() if line.startswith("-") and not line.startswith(("---", "--dry"))
    ]
    assert removed == ['-            "soc_id": 60,']
    assert "devices[0].soc_id is 60, but the candidate binary was built for soc_model 0" in r.stdout
    assert snapshot(tmp_path) == before
