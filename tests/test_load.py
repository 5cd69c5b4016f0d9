"""Will it load there (issue 35): a load verdict for a binary on a named QAIRT runtime and device, held to
what Qualcomm's runtimes did with the same files (q9diff/load/compat_measured.json, written by
scripts/measure_compat.py) and to one case per rule."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, q9diff_cli

from q9diff.load.rules import LOADS, RECOMPILE, RULES, WILL_NOT_LOAD, judge
from q9diff.load.runtime import UnknownRuntime, measured, parse
from q9diff.read.openers import open_binary
from q9diff.read.tables import find_device

VARIANTS = FIXTURES / "variants"
REAL = ROOT.parent / "shared" / "real" / "binaries"


def _verdict(binary: Path, runtime: str | None = None, device: str | None = None):
    cb = open_binary(binary)
    return judge(
        cb, binary.name, parse(runtime) if runtime else None, find_device(device) if device else None
    )


def _rules(v) -> set[str]:
    return {f.rule for f in v.findings}


def _binary_of(name: str) -> Path | None:
    if name.startswith("real:"):
        path = REAL / name[5:].split("#", 1)[0]
        return Path(str(path) + "#" + name.split("#", 1)[1]) if "#" in name else path
    return ROOT / name


def test_the_measured_data_is_about_these_very_files():
    """Each fixture the measurement names is the same file now (its sha256), and q9diff reads from it the
    versions the measurement recorded: the data and the code describe the same bytes."""
    data = measured()
    assert data["schema"] == "q9diff.compat_measured/1" and len(data["runtimes"]) >= 5
    checked = 0
    for b in data["binaries"]:
        if b["name"].startswith("real:"):
            continue
        path = ROOT / b["name"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == b["sha256"], b["name"]
        cb = open_binary(path)
        assert cb.backend_api_version == ".".join(map(str, b["backend_api"])), b["name"]
        assert (cb.build_id, cb.dsp_arch) == (b["build_id"], b["dsp_arch"]), b["name"]
        checked += 1
    assert checked >= 20


def test_every_measured_load_is_the_verdict_of_the_rules():
    """The held-out check in miniature: for every attempt Qualcomm's runtimes made (no device options),
    the runtime rules say `will not load` exactly where the runtime refused, with its code; weight-shared
    binaries are the x86 emulator's own refusal ('Shared weights buffer isn't supported on this
    platform'), which no device has, so they are held only where the binary is newer."""
    data = measured()
    binaries = {b["name"]: b for b in data["binaries"]}
    compared = refusals = 0
    for a in data["attempts"]:
        b = binaries.get(a["binary"])
        if a.get("options") or b is None:
            continue
        path = _binary_of(a["binary"])
        if path is None or not Path(str(path).split("#")[0]).exists():
            continue
        v = _verdict(path, a["runtime"])
        refused = v.verdict == WILL_NOT_LOAD
        if b.get("shared_weights") and not refused:
            continue
        assert refused == (not a["loaded"]), (a["binary"], a["runtime"], a["messages"][:2])
        if refused:
            assert {f.code for f in v.findings} == set(a["codes"]) == {5000}
            refusals += 1
        compared += 1
    assert compared >= 30 and refusals >= 20


def test_runtime_versions_as_users_write_them():
    for text in ("2.48", "QAIRT 2.48.40", "v2.48", "qairt-2.48", "v2.48.40.260702151143", "2.48.40"):
        rt = parse(text)
        assert rt.qairt[:2] == (2, 48) and rt.backend_api == (5, 48), text
    assert parse("2.42").backend_api is None  # no runtime or binary of 2.42 was read: unknown, not guessed
    for bad in ("two", "3.1", "/nonexistent/libQnnHtp.so"):
        with pytest.raises(UnknownRuntime):
            parse(bad)


def test_a_version_q9diff_cannot_judge_or_knows_nothing_of_is_one_line():
    """issue 45: `--runtime 2.10` was accepted (q9diff reads 2.22 and later), and so was any version past
    the newest q9diff has read."""
    with pytest.raises(UnknownRuntime, match=r"^--runtime 2.10: q9diff reads QNN 2.22 and later"):
        parse("2.10")
    with pytest.raises(
        UnknownRuntime, match=r"^--runtime 2.99: no QAIRT 2.99 q9diff knows of \(the newest it"
    ):
        parse("2.99")
    assert parse("2.22").qairt == (2, 22, None) and parse("2.51.0").qairt == (2, 51, 0)
    done = q9diff_cli("doctor", str(FIXTURES / "variants" / "soc_0.bin"), "--runtime", "2.10")
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1


def _wheel() -> Path:
    from importlib.util import find_spec

    spec = find_spec("onnxruntime_qnn")
    if spec is None or spec.origin is None:
        pytest.skip("onnxruntime-qnn is not installed: no runtime library to read")
    return Path(spec.origin).parent


def test_a_runtime_library_and_a_folder_that_ships_one_say_their_version(tmp_path):
    wheel = _wheel()
    from q9diff.cli.common import embedded_qairt

    installed = (embedded_qairt() or "").split(" ")[1]  # "QAIRT 2.51.0 (onnxruntime-qnn 2.7.0)"
    for lib in ("libQnnHtp.so", "libGenie.so", "libQnnHtpNetRunExtensions.so"):
        rt = parse(str(wheel / lib))
        assert ".".join(map(str, rt.qairt)) == installed, lib
    assert parse(str(wheel)).qairt == parse(str(wheel / "libQnnHtp.so")).qairt
    with pytest.raises(UnknownRuntime, match="found none"):
        parse(str(wheel / "libQnnSystem.so"))  # it carries no version string (measured)


def _older_genie(tmp_path: Path) -> Path:
    """The installed libGenie.so with its version string set to 2.48.0, in the form QAIRT 2.48.40's own
    carries (measured: compat_measured.json's runtimes; 2.48.40 would not fit the string's room): a bundle
    that ships an older runtime."""
    data = (_wheel() / "libGenie.so").read_bytes()
    at = data.find(b"AISW_VERSION: ")
    end = data.index(b"\0", at)
    old = b"AISW_VERSION: 2.48.0"
    assert end - at >= len(old)
    lib = tmp_path / "libGenie.so"
    lib.write_bytes(data[:at] + old + b"\0" * (end - at - len(old)) + data[end:])
    return lib


def test_a_bundle_that_ships_an_older_runtime_is_judged_for_it(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "qwen-mini" / "reference", bundle)
    (bundle / "lib" / "arm64-v8a").mkdir(parents=True)
    shutil.copy(_older_genie(tmp_path), bundle / "lib" / "arm64-v8a" / "libGenie.so")
    r = q9diff_cli("doctor", str(bundle), "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["runtime"]["qairt"] == "2.48.0" and "libGenie.so" in data["runtime"]["source"]
    assert any("the bundle ships QAIRT 2.48.0" in n for n in data["notes"])
    refused = [f for f in data["findings"] if f["check"] == "load.runtime"]
    assert refused and refused[0]["severity"] == "error" and "5.51" in refused[0]["evidence"]
    r = q9diff_cli("doctor", str(bundle), "--runtime", "2.51", "--json")
    loads = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "load.runtime"]
    assert [f["severity"] for f in loads] == ["info"] and "loads on QAIRT 2.51" in loads[0]["evidence"]


# --- one case per rule -------------------------------------------------------------------------------------


def test_load_runtime_a_newer_backend_api_will_not_load():
    v = _verdict(VARIANTS / "qairt_2.51.bin", "2.48")
    assert v.verdict == WILL_NOT_LOAD and _rules(v) == {"load.runtime"}
    (f,) = v.findings
    assert (
        f.code == 5000
        and "Using newer context binary on old SDK" in f.error
        and f.decides == "backendApiVersion"
    )
    assert "rebuild with QAIRT 2.48 or older" in f.fix and "ship the QAIRT 2.51 runtime" in f.fix
    assert _verdict(VARIANTS / "qairt_2.48.bin", "2.48.40").verdict == LOADS
    assert _verdict(VARIANTS / "qairt_2.47.bin", "2.51").verdict == LOADS


def test_load_runtime_version_judges_by_qairt_where_the_backend_api_is_not_measured():
    v = _verdict(VARIANTS / "qairt_2.51.bin", "2.42")
    assert v.verdict == WILL_NOT_LOAD and _rules(v) == {"load.runtime-version"}
    assert any("backend API" in why for why in v.not_judged)
    assert _verdict(VARIANTS / "qairt_2.48.bin", "2.49").verdict == LOADS


def test_load_arch_a_binary_for_a_newer_arch_will_not_load():
    v = _verdict(VARIANTS / "soc_87.bin", device="QCS9100")  # v81 on a v73 device
    assert v.verdict == WILL_NOT_LOAD and {"load.arch", "load.hmx"} <= _rules(v)
    arch = next(f for f in v.findings if f.rule == "load.arch")
    assert "min_arch 81, got 73" in arch.evidence and not arch.emulator


def test_load_hmx_a_v81_binary_refuses_another_v81_soc():
    v = _verdict(VARIANTS / "soc_87.bin", device="SM8845")  # the same arch, another SoC
    assert _rules(v) == {"load.hmx"} and v.findings[0].code == 5005
    assert _verdict(VARIANTS / "soc_87.bin", device="SM8850").verdict == LOADS


@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent: no v68 binary here")
def test_load_arch_below_73_on_a_73_device():
    v = _verdict(REAL / "denoise_229_htp_vtcm8mb.serialized.bin", device="SM8650")
    assert "load.arch-below-73" in _rules(v) and v.verdict == WILL_NOT_LOAD


def test_load_vtcm_more_than_the_device_has_will_not_load():
    v = _verdict(VARIANTS / "vtcm_8mb.bin", device="SXR1230P")  # 2 MiB of VTCM (ExecuTorch's table)
    vtcm = next(f for f in v.findings if f.rule == "load.vtcm")
    assert v.verdict == WILL_NOT_LOAD and "needs VTCM 8 MiB" in vtcm.evidence and "has 2 MiB" in vtcm.evidence
    v = _verdict(VARIANTS / "vtcm_8mb.bin", device="QCS8300")  # its VTCM no trusted source documents
    assert any(why.startswith("load.vtcm:") for why in v.not_judged)


def test_load_other_arch_vtcm_and_soc_load_with_a_recompile_advised():
    v = _verdict(VARIANTS / "qairt_2.51.bin", device="SM8650")  # v73 binary on a v75 device
    assert v.verdict == RECOMPILE and "load.arch-other" in _rules(v)
    v = _verdict(VARIANTS / "vtcm_2mb.bin", device="QCS9100")
    assert v.verdict == RECOMPILE and _rules(v) == {"load.vtcm-other"}
    v = _verdict(VARIANTS / "soc_43.bin", device="QCS9100")  # SM8550's build, both v73
    assert v.verdict == RECOMPILE and _rules(v) == {"load.soc"}
    v = _verdict(VARIANTS / "soc_0.bin", device="QCS9100")  # the generic target
    assert _rules(v) == {"load.soc"} and "generic target" in v.findings[0].evidence
    assert _verdict(VARIANTS / "soc_77.bin", device="QCS9100").verdict == LOADS


def test_every_rule_has_a_case_above():
    here = Path(__file__).read_text()
    assert [r.id for r in RULES if f'"{r.id}"' not in here] == []


def test_doctor_and_diff_say_it_with_load_check_ids(tmp_path):
    qwen = FIXTURES / "qwen-mini"
    r = q9diff_cli("doctor", str(qwen / "local"), "--runtime", "2.48", "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    loads = [f for f in data["findings"] if f["check"].startswith("load")]
    assert [f["check"] for f in loads if f["severity"] == "error"] == ["load.runtime"]
    assert data["runtime"]["qairt"] == "2.48" and data["runtime"]["backend_api"] == "5.48"
    r = q9diff_cli(str(qwen / "local"), str(qwen / "reference"), "--runtime", "2.48", "--json")
    load = json.loads(r.stdout)["load"]
    assert r.returncode == 1 and load["verdict"] == WILL_NOT_LOAD and len(load["parts"]) == 2
    r = q9diff_cli(str(qwen / "reference"), "--target", "QCS9100", "--runtime", "2.51")
    assert r.returncode == 0 and "Will it load on QCS9100 and QAIRT 2.51: loads" in r.stdout
    saved = tmp_path / "r.json"
    saved.write_text(
        q9diff_cli(str(qwen / "local"), "--target", "QCS9100", "--runtime", "2.48", "--json").stdout
    )
    md = q9diff_cli("report", str(saved), "--markdown", "-")
    assert md.returncode == 1 and "### Will it load on QCS9100 and QAIRT 2.48: will not load" in md.stdout


def test_a_runtime_named_by_a_file_that_is_no_library_is_refused_not_read_for_a_version(tmp_path):
    """A text that quotes a QAIRT build id (this README does) is not a runtime: --runtime PATH reads a
    version only from an ELF shared object, else one line and exit 2."""
    notes = tmp_path / "libQnnHtp.so"
    notes.write_text("built with v2.51.0.260929181845 and AISW_VERSION: 2.51.0\n")
    r = q9diff_cli("doctor", str(FIXTURES / "qwen-mini" / "reference"), "--runtime", str(notes))
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert (
        r.stderr.strip()
        == f"q9diff: error: {notes}: expected a runtime library (an ELF shared object) at offset 0x0"
    )


@pytest.mark.parametrize("device", [(), ("--target", "SM8650")], ids=["runtime", "target-and-runtime"])
def test_a_runtime_that_refuses_the_build_is_the_headline_and_nothing_says_it_loads(tmp_path, device):
    """issue 54: with --runtime 2.48 the diff's line 2 and the HTML's top banner said the build "loads
    without error"; "Will not load" came at line 18 of the terminal and line 61 of the Markdown."""
    qwen = FIXTURES / "qwen-mini"
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    for args in ((str(qwen / "reference"),), ()):
        if not args and not device:
            continue  # a build alone is judged against a device (--target), doctor's is --runtime alone
        r = q9diff_cli(str(qwen / "local"), *args, "--runtime", "2.48", *device, "--html", str(html),
                       "--markdown", str(md))  # fmt: skip
        head = f"Will not load on {'SM8650 and ' if device else ''}QAIRT 2.48"
        lines = r.stdout.splitlines()
        assert r.returncode == 1 and lines[0] == head, r.stdout + r.stderr
        assert lines[1].startswith("  load.runtime (all 2 parts): will not load: backend API 5.51")
        page, text = html.read_text(), md.read_text()
        for said in (r.stdout, page, text):
            assert "loads without error" not in said and "it loads on" not in said
        body = page[page.index("<body>") :]
        assert body.index(f'<p class="warn">{head}</p>') < body.index("generic SoC") < body.index("<h2>")
        quoted = [ln for ln in text.splitlines() if ln.startswith("> ")]
        assert quoted[0] == f"> **{head}**" and text.index(quoted[0]) < text.index("generic SoC")
