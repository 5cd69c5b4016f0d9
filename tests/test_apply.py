"""`suggest --apply` on each kind of file a user holds, with the real suggestions of the bundled pair
(qwen-mini local vs reference: soc_model 0 -> 77, VTCM 4 -> 8 MB, O 0 -> 3)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_cli import q9diff

from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.fix.apply import ApplyError, BuildFacts, plan, write
from q9diff.inputs import resolve

LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"


@pytest.fixture(scope="module")
def pair(fixtures_dir) -> dict:
    return set_to_json(diff_sets(resolve(LOCAL), resolve(REFERENCE)))


@pytest.fixture(scope="module")
def suggestions(pair) -> list[dict]:
    return pair["suggestions"]


@pytest.fixture(scope="module")
def facts(pair) -> BuildFacts:
    return BuildFacts.of([p["a"] for p in pair["parts"]], [p["b"] for p in pair["parts"]])


@pytest.fixture(scope="module")
def graphs(pair) -> list[str]:
    """The candidate's graph names, as the binaries say (the reference's extension file names the same)."""
    names = [g["name"] for p in pair["parts"] for g in p["a"]["graphs"]]
    assert (
        names
        == json.loads((REFERENCE / "htp_backend_ext_config.json").read_text())["graphs"][0]["graph_names"]
    )
    return names


def suggest_apply(*files: Path, dry_run: bool = False):
    return q9diff(
        "suggest", str(LOCAL), str(REFERENCE), *(a for f in files for a in ("--apply", str(f))),
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip


def prose(stdout: str) -> str:
    """Notes and messages as one line of words: the console wraps them at 100 columns."""
    return " ".join(stdout.replace("\n#   ", " ").split())


def test_wrapper_config_edits_the_extension_file_it_names(tmp_path, graphs):
    ext = tmp_path / "htp_backend_ext_config.json"
    shutil.copy(LOCAL / "htp_backend_ext_config.json", ext)
    wrapper = tmp_path / "htp_config.json"
    wrapper.write_text(
        json.dumps(
            {
                "backend_extensions": {
                    "shared_library_path": "libQnnHtpNetRunExtensions.so",
                    "config_file_path": "htp_backend_ext_config.json",
                },
                "context_configs": {"enable_graphs": ["prompt", "token"]},
            },
            indent=2,
        )
    )
    wrapper_before, ext_before = wrapper.read_text(), ext.read_text()
    r = suggest_apply(wrapper)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{wrapper} is a qnn-context-binary-generator --config_file wrapper" in prose(r.stdout)
    assert '-      "soc_model": 0,' in r.stdout and '+      "soc_model": 77,' in r.stdout
    assert json.loads(ext.read_text()) == {
        "devices": [{"soc_model": 77, "dsp_arch": "v73"}],
        "graphs": [{"graph_names": graphs, "vtcm_mb": 8, "O": 3}],
    }
    assert (tmp_path / "htp_backend_ext_config.json.bak").read_text() == ext_before
    assert wrapper.read_text() == wrapper_before and not (tmp_path / "htp_config.json.bak").exists()

    r = suggest_apply(wrapper)  # a second run finds nothing to do and keeps the original's .bak
    assert r.returncode == 0 and f"{ext}: already matches" in prose(r.stdout)
    assert (tmp_path / "htp_backend_ext_config.json.bak").read_text() == ext_before


def test_wrapper_naming_a_missing_file_is_refused(tmp_path, fixtures_dir):
    wrapper = tmp_path / "htp_config.json"
    text = '{"backend_extensions": {"shared_library_path": "x.so", "config_file_path": "ext/htp.json"}}\n'
    wrapper.write_text(text)
    r = suggest_apply(wrapper)
    assert r.returncode == 2
    assert str(wrapper) in r.stderr and str(tmp_path / "ext" / "htp.json") in r.stderr
    assert wrapper.read_text() == text and list(tmp_path.iterdir()) == [wrapper]


def test_wrapper_naming_something_else_is_refused(tmp_path, suggestions):
    shutil.copy(LOCAL / "recipe.json", tmp_path / "recipe.json")
    wrapper = tmp_path / "htp_config.json"
    wrapper.write_text('{"backend_extensions": {"config_file_path": "recipe.json"}}\n')
    with pytest.raises(ApplyError, match="not an htp_backend_ext_config.json") as exc:
        plan(wrapper, suggestions)
    assert str(wrapper) in str(exc.value) and str(tmp_path / "recipe.json") in str(exc.value)


def test_genie_bundle_edits_its_device_side_extension_file(tmp_path, graphs):
    bundle = tmp_path / "local"
    shutil.copytree(LOCAL, bundle)
    genie, ext = bundle / "genie_config.json", bundle / "htp_backend_ext_config.json"
    genie_before, ext_before = genie.read_text(), ext.read_text()
    # the Genie config and the extension file it names, both given: one edit, the .bak stays the original
    r = suggest_apply(genie, ext)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{genie} is a Genie config: its settings live in {ext}" in prose(r.stdout)
    device_side = json.loads(ext.read_text())
    assert device_side["devices"] == [{"soc_model": 77, "dsp_arch": "v73"}]
    assert device_side["graphs"] == [{"graph_names": graphs, "vtcm_mb": 8, "O": 3}]
    assert (bundle / "htp_backend_ext_config.json.bak").read_text() == ext_before
    assert genie.read_text() == genie_before and not (bundle / "genie_config.json.bak").exists()


def test_soc_id_is_kept_and_graph_settings_go_to_an_entry_naming_the_candidates_graphs(
    tmp_path, suggestions, facts, graphs
):
    """Qualcomm's schema takes soc_id as an integer: the file's key stays. Entries for other graphs stay
    as they are (said in a note); the candidate's graphs get an entry of their own, added in place."""
    ext = tmp_path / "htp_backend_ext_config.json"
    text = json.dumps(
        {
            "graphs": [
                {"graph_names": ["prompt_ar32"], "O": 2, "fp16_relaxed_precision": 0},
                {"graph_names": ["token_ar1"]},
            ],
            "devices": [{"device_id": 0, "soc_id": 0, "dsp_arch": "v79", "cores": [{"core_id": 0}]}],
            "memory": {"mem_type": "shared_buffer"},
        },
        indent=4,
    )
    ext.write_text(text + "\n")
    edit = plan(ext, suggestions, facts)
    after = json.loads(edit.after)
    assert after["devices"] == [{"device_id": 0, "soc_id": 77, "dsp_arch": "v73", "cores": [{"core_id": 0}]}]
    assert after["graphs"] == [
        {"graph_names": ["prompt_ar32"], "O": 2, "fp16_relaxed_precision": 0},
        {"graph_names": ["token_ar1"]},
        {"graph_names": graphs, "vtcm_mb": 8, "O": 3},
    ]
    assert after["memory"] == {"mem_type": "shared_buffer"}
    changed = [
        line for line in edit.unified.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert changed == ['-            "soc_id": 0,', '-            "dsp_arch": "v79",']
    note = prose(edit.note)
    assert "soc_model" not in edit.after and "5005" not in note
    # soc_id 0 is how the candidate was built (a generic target, whose metadata records SM8550's 43)
    assert "devices[0].soc_id is" not in note
    assert 'devices[0].dsp_arch is "v79", but the candidate binary was built for v73' in note
    assert "graphs[0].graph_names names prompt_ar32, none of the candidate's 4 graphs" in note
    before = ext.read_text()
    write(edit)
    assert ext.read_text() == edit.after
    assert (tmp_path / "htp_backend_ext_config.json.bak").read_text() == before


def test_device_entry_without_the_key_gets_the_pair_beside_its_arch(tmp_path, suggestions, facts, graphs):
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text(
        '{\n  "devices": [\n    {\n      "device_id": 0,\n      "dsp_arch": "v73"\n    }\n  ]\n}\n'
    )
    edit = plan(ext, suggestions, facts)
    assert edit.after.startswith(
        '{\n  "devices": [\n    {\n      "device_id": 0,\n      "dsp_arch": "v73",\n      "soc_model": 77\n'
    )
    assert json.loads(edit.after) == {
        "devices": [{"device_id": 0, "dsp_arch": "v73", "soc_model": 77}],
        "graphs": [{"graph_names": graphs, "vtcm_mb": 8, "O": 3}],
    }
    assert "added a graphs entry naming the candidate's 4 graphs" in edit.note


def test_recipe_gets_the_settings(tmp_path, suggestions):
    recipe = tmp_path / "recipe.json"
    shutil.copy(LOCAL / "recipe.json", recipe)
    before = json.loads(recipe.read_text())
    write(plan(recipe, suggestions))
    after = json.loads(recipe.read_text())
    assert after["settings"] == {
        "soc_model": 77, "dsp_arch": "v73", "weight_sharing": True, "vtcm_mb": 8, "optimization_level": 3,
    }  # fmt: skip
    assert (
        after["parts"] == before["parts"] and json.loads((tmp_path / "recipe.json.bak").read_text()) == before
    )


SCRIPT = """\
from qairt.api.common.backends import htp

device = htp.HtpDeviceConfig(soc_model=0, dsp_arch="v73")
graph = HtpGraphConfig(
    name="prompt_ar32",
    optimization_type=2,
)
config = CompileConfig(backend="HTP", device_custom_configs=[device], graph_custom_configs=[graph])
"""


def test_script_gets_the_exact_change_printed_and_is_never_written(tmp_path, fixtures_dir):
    script = tmp_path / "build.py"
    script.write_text(SCRIPT)
    r = suggest_apply(script)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{script} is a Python script: q9diff does not edit it" in prose(r.stdout)
    assert '-device = htp.HtpDeviceConfig(soc_model=0, dsp_arch="v73")' in r.stdout
    assert '+device = htp.HtpDeviceConfig(soc_model=77, dsp_arch="v73")' in r.stdout
    assert "-    optimization_type=2,\n+    optimization_type=3,\n+    vtcm_size_in_mb=8,\n )" in r.stdout
    assert script.read_text() == SCRIPT and not (tmp_path / "build.py.bak").exists()


def test_script_diff_is_code_that_says_the_fix(tmp_path, suggestions):
    script = tmp_path / "build.py"
    script.write_text(SCRIPT + "token = HtpGraphConfig()\n")
    edit = plan(script, suggestions)
    assert edit.advice_only
    calls: dict[str, list[dict]] = {}
    for node in ast.walk(ast.parse(edit.after)):
        if isinstance(node, ast.Call) and "Htp" in ast.unparse(node.func):
            kws = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            calls.setdefault(ast.unparse(node.func), []).append(kws)
    assert calls["htp.HtpDeviceConfig"] == [{"soc_model": 77, "dsp_arch": "v73"}]
    assert sorted(calls["HtpGraphConfig"], key=len) == [
        {"vtcm_size_in_mb": 8, "optimization_type": 3},
        {"name": "prompt_ar32", "optimization_type": 3, "vtcm_size_in_mb": 8},
    ]
    removed = [line for line in edit.unified.splitlines() if line.startswith("-") and line != f"--- {script}"]
    assert removed == [  # only lines of the Htp*Config calls
        '-device = htp.HtpDeviceConfig(soc_model=0, dsp_arch="v73")',
        "-    optimization_type=2,",
        "-token = HtpGraphConfig()",
    ]
    write(edit)
    assert script.read_text() == SCRIPT + "token = HtpGraphConfig()\n"


def test_script_without_the_calls_is_told_which_to_add(tmp_path, suggestions):
    script = tmp_path / "build.py"
    script.write_text('config = CompileConfig(backend="htp")\n')
    edit = plan(script, suggestions)
    assert edit.after == edit.before
    device = 'add HtpDeviceConfig(soc_model=77, dsp_arch="v73") and pass it to CompileConfig'
    assert f"{script} has no HtpDeviceConfig(...) call: {device}" in edit.note
    graphs = ", ".join(f'"{g}"' for g in ("prompt_ar32_cl128_1_of_2", "token_ar1_cl128_1_of_2",
                                          "prompt_ar32_cl128_2_of_2", "token_ar1_cl128_2_of_2"))  # fmt: skip
    # HtpGraphConfig requires the graph's name (qairt-dev 0.13): one config per candidate graph
    assert (
        f"add [HtpGraphConfig(name=n, vtcm_size_in_mb=8, optimization_type=3) for n in ({graphs})] "
        "and pass it to CompileConfig" in edit.note
    )
    assert edit.unified.startswith("# ")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("config.yaml", "soc_model: 0\n"),
        ("notes.txt", "set soc_model to 77\n"),
        ("model.json", '{"model": "qwen", "soc_model": 0}\n'),
        ("list.json", "[1, 2]\n"),
        ("genie_config.json", '{"dialog": {"engine": {"backend": {"type": "QnnHtp"}}}}\n'),
        ("helper.py", "print('no CompileConfig here')\n"),
        ("broken.py", "HtpDeviceConfig(soc_model=\n"),
    ],
)
def test_files_q9diff_does_not_understand_are_refused_untouched(tmp_path, fixtures_dir, name, text):
    odd = tmp_path / name
    odd.write_text(text)
    r = suggest_apply(odd)
    assert r.returncode == 2 and str(odd) in r.stderr and "left untouched" in r.stderr
    assert odd.read_text() == text and list(tmp_path.iterdir()) == [odd]


def test_dry_run_shows_every_edit_and_writes_nothing(tmp_path, fixtures_dir):
    bundle = tmp_path / "local"
    shutil.copytree(LOCAL, bundle)
    (bundle / "build.py").write_text(SCRIPT)
    before = {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    r = suggest_apply(bundle / "recipe.json", bundle / "genie_config.json", bundle / "build.py", dry_run=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert '+    "vtcm_mb": 8,' in r.stdout and '+      "vtcm_mb": 8,' in r.stdout
    assert '+device = htp.HtpDeviceConfig(soc_model=77, dsp_arch="v73")' in r.stdout
    assert "--dry-run: nothing written" in r.stdout
    assert {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()} == before


def test_a_commented_wrapper_that_carries_graphs_itself_edits_the_file_it_names(tmp_path, suggestions, facts):
    """Qualcomm's documentation shows a wrapper starting with a // line; its own graphs are not what the
    extension parser reads, so they stay and the named file is edited."""
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text('{"graphs": [{"graph_names": ["*"], "vtcm_mb": 4}]}\n')
    wrapper = tmp_path / "config.json"
    text = (
        "// config for qnn-context-binary-generator\n"
        '{\n  "backend_extensions": {\n    "shared_library_path": "libQnnHtpNetRunExtensions.so",\n'
        '    "config_file_path": "htp_backend_ext_config.json"\n  },\n'
        '  "graphs": [{"graph_names": ["*"], "vtcm_mb": 2}]\n}\n'
    )
    wrapper.write_text(text)
    edit = plan(wrapper, suggestions, facts)
    assert edit.path == ext
    assert json.loads(edit.after)["graphs"] == [{"graph_names": ["*"], "vtcm_mb": 8, "O": 3}]
    assert f"{wrapper} also holds graphs: not what QNN's extension parser reads; left as is" in prose(
        edit.note
    )
    write(edit)
    assert wrapper.read_text() == text


def test_a_value_q9diff_could_not_read_is_never_written(tmp_path, suggestions, facts):
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text('{"graphs": [{"graph_names": ["*"], "vtcm_mb": 4, "O": 2}]}\n')
    unknown = [
        {
            "setting": "vtcm_size",
            "value": None,
            "targets": {"htp_backend_ext_config": {"graphs[0].vtcm_mb": None}},
        },
        *(s for s in suggestions if s["setting"] == "optimization_level"),
    ]
    edit = plan(ext, unknown, facts)
    assert json.loads(edit.after)["graphs"] == [{"graph_names": ["*"], "vtcm_mb": 4, "O": 3}]
    assert "null" not in edit.after and "vtcm_size: the reference's value is unknown" in edit.note
    soc_only = [s for s in suggestions if s["setting"] == "soc_model"]
    unknown_arch = BuildFacts(facts.candidate_graphs, 43, 73, 77, None)
    edit = plan(ext, soc_only, unknown_arch)
    assert edit.after == edit.before and "dsp_arch is unknown: neither is written" in prose(edit.note)
    recipe = tmp_path / "recipe.json"
    shutil.copy(LOCAL / "recipe.json", recipe)
    edit = plan(recipe, unknown, facts)
    settings = json.loads(edit.after)["settings"]
    assert "vtcm_mb" not in settings and settings["optimization_level"] == 3 and "null" not in edit.after
    edit = plan(recipe, soc_only, unknown_arch)  # the pair again: a recipe gets neither
    assert edit.after == edit.before and "dsp_arch is unknown: neither is written" in prose(edit.note)


def test_weights_packing_is_a_fix_target_set_in_the_graphs_entry(tmp_path, fixtures_dir, facts):
    from q9diff.compare.cause import Cause
    from q9diff.compare.suggestions import suggestions as suggest_for
    from q9diff.read.binary import ContextBinary

    ref = ContextBinary.open(REFERENCE / "part_1_of_2.bin")
    packing = suggest_for([Cause("weights_packing", "root", False, True, None, ())], ref, ref)
    loop = 'for n in ("prompt_ar32_cl128_1_of_2", "token_ar1_cl128_1_of_2")]'
    assert packing[0]["targets"]["qairt"] == f"[HtpGraphConfig(name=n, weights_packing=True) {loop}"
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text('{\n    "graphs": [\n        {\n            "graph_names": ["*"]\n        }\n    ]\n}\n')
    edit = plan(ext, packing, facts)
    assert edit.after == ext.read_text().replace('["*"]\n', '["*"],\n            "weights_packing": true\n')


def test_notes_show_control_characters_escaped(tmp_path):
    """Graph names come from a binary someone else built: in a note they are text, never terminal codes."""
    from q9diff.fix.apply import Edit

    edit = Edit(
        tmp_path / "x.json", "{}\n", '{"a": 1}\n', "graphs[0] names \x1b[2Jgone, none of the candidate's"
    )
    assert "\x1b" not in edit.unified and "graphs[0] names \\x1b[2Jgone" in edit.unified
