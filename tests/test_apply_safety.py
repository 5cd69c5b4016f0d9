"""`suggest --apply` writes only where it belongs (issue 9.3): a config's reference never leads it out of
the config's folder, a .bak never overwrites anything nor follows a link, a symlinked config is edited at
its target and says so, and several files are written all or nothing."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import FIXTURES
from test_apply import prose, suggest_apply

from q9diff.compare.sets import diff_sets, set_to_json
from q9diff.fix import safewrite
from q9diff.fix.apply import ApplyError, BuildFacts, plan, write_all
from q9diff.inputs import resolve

LOCAL, REFERENCE = FIXTURES / "qwen-mini" / "local", FIXTURES / "qwen-mini" / "reference"
EXT = '{\n  "devices": [\n    {\n      "soc_model": 0,\n      "dsp_arch": "v73"\n    }\n  ]\n}\n'


@pytest.fixture(scope="module")
def pair(fixtures_dir) -> tuple[list[dict], BuildFacts]:
    data = set_to_json(diff_sets(resolve(LOCAL), resolve(REFERENCE)))
    return data["suggestions"], BuildFacts.of(
        [p["a"] for p in data["parts"]], [p["b"] for p in data["parts"]]
    )


def wrapper_naming(path: str) -> str:
    return json.dumps({"backend_extensions": {"shared_library_path": "x.so", "config_file_path": path}})


def files_under(folder) -> dict:
    return {
        p: os.readlink(p) if p.is_symlink() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_reference_out_of_the_configs_folder_is_refused_unless_named(tmp_path, fixtures_dir, absolute):
    # An absolute path that exists on this machine is a path here (a host tool's wrapper), not on a device.
    (tmp_path / "cfg").mkdir()
    outside = tmp_path / "elsewhere.json"
    outside.write_text(EXT)
    wrapper = tmp_path / "cfg" / "wrapper.json"
    wrapper.write_text(wrapper_naming(str(outside) if absolute else "../elsewhere.json"))
    before = files_under(tmp_path)
    r = suggest_apply(wrapper)
    assert r.returncode == 2 and f"leads to {outside}, outside" in r.stderr and "device" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and files_under(tmp_path) == before
    r = suggest_apply(wrapper, outside)  # the user named it: then it may be edited
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(outside.read_text())["devices"][0]["soc_model"] == 77


def test_a_symlinked_extension_file_pointing_out_is_refused(tmp_path, fixtures_dir):
    secret = tmp_path / "secret.json"
    secret.write_text(EXT)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "htp.json").symlink_to(secret)
    wrapper = tmp_path / "cfg" / "wrapper.json"
    wrapper.write_text(wrapper_naming("htp.json"))
    before = files_under(tmp_path)
    r = suggest_apply(wrapper)
    assert r.returncode == 2 and f"leads to {secret}, outside" in r.stderr
    assert files_under(tmp_path) == before


def test_a_symlinked_config_is_edited_at_its_target_and_says_so(tmp_path, fixtures_dir):
    target = tmp_path / "real" / "htp_backend_ext_config.json"
    target.parent.mkdir()
    target.write_text(EXT)
    link = tmp_path / "htp_backend_ext_config.json"
    link.symlink_to(target)
    r = suggest_apply(link)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{link} is a symbolic link: its target {target} is edited, the link stays" in prose(r.stdout)
    assert link.is_symlink() and json.loads(target.read_text())["devices"][0]["soc_model"] == 77
    assert (target.parent / "htp_backend_ext_config.json.bak").read_text() == EXT
    assert not (tmp_path / "htp_backend_ext_config.json.bak").exists()


def test_backups_are_numbered_and_never_follow_a_link(tmp_path, pair):
    suggestions, facts = pair
    ext = tmp_path / "htp_backend_ext_config.json"
    ext.write_text(EXT)
    earlier = tmp_path / "htp_backend_ext_config.json.bak"
    earlier.write_text("the user's earlier backup\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("not q9diff's\n")
    (tmp_path / "htp_backend_ext_config.json.bak.1").symlink_to(victim)
    written = write_all([plan(ext, suggestions, facts)])
    third = tmp_path / "htp_backend_ext_config.json.bak.2"
    assert written == [(ext, third)] and third.read_text() == EXT and not third.is_symlink()
    assert earlier.read_text() == "the user's earlier backup\n" and victim.read_text() == "not q9diff's\n"
    ext.write_text(EXT)  # the user puts the old file back and runs again: one more backup, none lost
    assert write_all([plan(ext, suggestions, facts)]) == [
        (ext, tmp_path / "htp_backend_ext_config.json.bak.3")
    ]


def test_several_files_are_written_all_or_nothing(tmp_path, pair, monkeypatch):
    suggestions, facts = pair
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for f in (first, second):
        f.write_text(EXT)
    edits = [plan(first, suggestions, facts), plan(second, suggestions, facts)]
    second.write_text(EXT.replace("v73", "v75"))  # changed by someone after q9diff read it
    before = files_under(tmp_path)
    with pytest.raises(ApplyError, match="changed since q9diff read it; nothing written"):
        write_all(edits)
    assert files_under(tmp_path) == before

    second.write_text(EXT)
    real_replace, calls = os.replace, []

    def replace_failing_on_the_second_file(src, dst):
        calls.append(dst)
        if dst == second:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(safewrite.os, "replace", replace_failing_on_the_second_file)
    before = files_under(tmp_path)
    with pytest.raises(ApplyError, match="1 already written put back; nothing changed"):
        write_all(edits)
    assert calls[:2] == [first, second] and files_under(tmp_path) == before  # no .bak, no temp file left


def test_config_paths_are_found_as_their_tools_find_them(tmp_path, pair, monkeypatch):
    """Relative to the config, then to the working directory holding it (ai-engine-direct-helper runs
    Genie from a parent folder), with \\ or /, but only to a file inside the config's folder or one the
    user named; a device path by its file name beside the config, said in a note; a <placeholder>
    refused, naming it."""
    suggestions, facts = pair
    genie_text = (FIXTURES / "qwen-mini" / "local" / "genie_config.json").read_text()
    work = tmp_path / "work"
    bundle = work / "models" / "bundle"
    (work / "qai_libs").mkdir(parents=True)
    bundle.mkdir(parents=True)
    ext = work / "qai_libs" / "htp_backend_ext_config.json"
    ext.write_text(EXT)
    genie = bundle / "genie_config.json"
    genie.write_text(
        genie_text.replace('"htp_backend_ext_config.json"', '"qai_libs\\\\htp_backend_ext_config.json"')
    )
    monkeypatch.chdir(work)
    with pytest.raises(ApplyError, match=r"found from the working directory .*, outside .*bundle; q9diff"):
        plan(genie, suggestions, facts)  # aedh's layout: outside the config's folder, so named or nothing
    edit = plan(genie, suggestions, facts, named=[ext])
    assert edit.path == work / "qai_libs" / "htp_backend_ext_config.json" and '"soc_model": 77' in edit.after
    inside = bundle / "htp_backend_ext_config.json"
    inside.write_text(EXT)  # a path relative to the working directory that stays in the config's folder
    genie.write_text(
        genie_text.replace('"htp_backend_ext_config.json"', '"models/bundle/htp_backend_ext_config.json"')
    )
    assert plan(genie, suggestions, facts).path == inside
    inside.unlink()
    genie.write_text(
        genie_text.replace('"htp_backend_ext_config.json"', '"qai_libs\\\\htp_backend_ext_config.json"')
    )
    elsewhere = tmp_path / "elsewhere"  # a working directory that does not hold the config counts for nothing
    shutil.copytree(work / "qai_libs", elsewhere / "qai_libs")
    monkeypatch.chdir(elsewhere)
    with pytest.raises(
        ApplyError, match=r"names .*bundle/qai_libs/htp_backend_ext_config.json, which does not"
    ):
        plan(genie, suggestions, facts)
    monkeypatch.chdir(work)

    device = "/storage/emulated/0/Android/data/app/files/htp_backend_ext_config.json"
    genie.write_text(genie_text.replace('"htp_backend_ext_config.json"', json.dumps(device)))
    with pytest.raises(ApplyError, match="a path on the device, and there is no htp_backend_ext_config.json"):
        plan(genie, suggestions, facts)
    shutil.copy(ext, bundle / "htp_backend_ext_config.json")
    edit = plan(genie, suggestions, facts)
    assert edit.path == bundle / "htp_backend_ext_config.json"
    assert f"{device} is a path on the device: edited {edit.path}" in prose(edit.note)

    genie.write_text(
        genie_text.replace('"htp_backend_ext_config.json"', '"<path to htp_backend_ext_config>"')
    )
    with pytest.raises(ApplyError) as exc:
        plan(genie, suggestions, facts)
    assert "the placeholder '<path to htp_backend_ext_config>'" in str(exc.value)
    assert "pass the extension file itself with --apply" in str(exc.value)


def test_an_edit_never_takes_a_value_away(fixtures_dir):
    """Every planned JSON edit is checked (q9diff.fix.kept): adding and changing values passes, a key or an
    item removed, or a section turned into a value, is named and the edit refused; a large config costs its
    equality walk, not DeepDiff over all of it."""
    from q9diff.fix.kept import MAX_CHANGED, taken_away

    config = json.loads((FIXTURES / "qwen-mini" / "local" / "htp_backend_ext_config.json").read_text())
    fixed = json.loads(json.dumps(config))
    fixed["devices"][0]["soc_model"] = 77
    fixed["graphs"] = [{"vtcm_mb": 8, "O": 3}]
    assert taken_away(config, fixed) == []  # what suggest --apply does to this file
    one = {"graphs": {"graph_names": ["g"], "vtcm_mb": 4}}  # listed as Qualcomm's parser wants, then edited
    assert taken_away(one, {"graphs": [{"graph_names": ["g"], "vtcm_mb": 8}, {"graph_names": ["h"]}]}) == []
    assert taken_away(one, {"graphs": [{"vtcm_mb": 8}]}) == ["root['graphs'][0]['graph_names'] removed"]
    dropped = json.loads(json.dumps(fixed))
    del dropped["devices"][0]["dsp_arch"]
    assert taken_away(config, dropped) == ["root['devices'][0]['dsp_arch'] removed"]
    flattened = dict(config, devices=77)
    assert taken_away(config, flattened) == ["root['devices'] turned into int"]
    big = {"graphs": [{"graph_names": [f"g{i}"], "vtcm_mb": 4} for i in range(50_000)], **config}
    bigger = json.loads(json.dumps(big))
    bigger["devices"][0]["soc_model"] = 77
    assert taken_away(big, bigger) == []
    for g in bigger["graphs"][: MAX_CHANGED + 1]:
        g["vtcm_mb"] = 8
    with pytest.raises(ApplyError, match="more than 64 places"):
        taken_away(big, bigger)


def test_a_file_q9diff_cannot_edit_is_refused_before_the_fix_is_printed(tmp_path):
    """issue 54: `--apply README.md` printed the whole fix (25 lines) before refusing the file."""
    from conftest import ROOT, q9diff_cli

    shutil.copytree(FIXTURES / "qwen-mini", tmp_path / "qm")
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    before = readme.read_bytes()
    r = q9diff_cli(
        "suggest", str(tmp_path / "qm" / "local"), str(tmp_path / "qm" / "reference"), "--apply", str(readme)
    )
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr.count("\n") == 1 and str(readme) in r.stderr and "left untouched" in r.stderr
    assert readme.read_bytes() == before
