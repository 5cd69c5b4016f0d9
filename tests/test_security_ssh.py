"""Hostile input over ssh (issue 9 item 2): a bundle cannot make q9diff read or push a file from elsewhere.

Runs against the real loopback sshd of tests/test_ssh_runner.py; the device's genie-t2t-run is a stand-in
that records what it found in its working directory (the pushed files), so a push that should not have
happened shows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_ssh_runner import QWEN, Server, sshd  # noqa: F401  (the session's sshd fixture)

from q9diff.runners.base import RunnerError
from q9diff.runners.genie import CONFIG_NAME, GenieError, write_patched_config
from q9diff.runners.ssh.runner import SshRunner

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not really\n"
RECORDER = """#!/bin/sh
ls -la > {log}
cat * >> {log} 2>/dev/null
"""


def _bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(QWEN / "local", bundle)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "id_ed25519").write_text(SECRET)
    return bundle


def _point(bundle: Path, key: str, value) -> None:
    """Set one file reference of the bundle's config."""
    config = json.loads((bundle / CONFIG_NAME).read_text())
    dialog = config["dialog"]
    if key == "tokenizer":
        dialog["tokenizer"]["path"] = value
    elif key == "extensions":
        dialog["engine"]["backend"]["extensions"] = value
    else:
        dialog["engine"]["model"]["binary"]["ctx-bins"][1] = value
    (bundle / CONFIG_NAME).write_text(json.dumps(config))


def _device(sshd: Server, tmp_path: Path) -> tuple[SshRunner, Path, Path]:  # noqa: F811
    qairt = tmp_path / "qairt"
    tool = qairt / "bin/aarch64-oe-linux-gcc11.2/genie-t2t-run"
    tool.parent.mkdir(parents=True)
    log = tmp_path / "device.log"
    tool.write_text(RECORDER.format(log=log))
    tool.chmod(0o755)
    evk = tmp_path / "evk"
    runner = SshRunner(sshd.target, known_hosts=sshd.known_hosts, identity=sshd.identity, remote_dir=str(evk),
                       qairt_root=str(qairt), timeout_s=60)  # fmt: skip
    return runner, log, evk


@pytest.mark.parametrize(
    "key, value",
    [
        ("tokenizer", "{home}/id_ed25519"),  # an absolute path
        ("extensions", "../home/id_ed25519"),  # climbing out
        ("ctx-bins", "link.bin"),  # a symlink inside the bundle to a file outside
    ],
)
def test_genie_over_ssh_pushes_nothing_from_outside_the_bundle(sshd, tmp_path, key, value):  # noqa: F811
    bundle = _bundle(tmp_path)
    (bundle / "link.bin").symlink_to(tmp_path / "home" / "id_ed25519")
    _point(bundle, key, value.format(home=tmp_path / "home"))
    runner, log, evk = _device(sshd, tmp_path)
    with pytest.raises(RunnerError) as err:
        runner.genie(bundle, [10, 20, 30], 2)
    message = str(err.value)
    assert "\n" not in message and "refusing" in message and str(tmp_path / "home" / "id_ed25519") in message
    assert not log.exists(), "nothing ran on the device: " + log.read_text()
    assert not evk.exists() or not any(evk.iterdir())


def test_verify_refuses_a_bundle_naming_a_file_outside_it(sshd, tmp_path):  # noqa: F811
    bundle = _bundle(tmp_path)
    outside = tmp_path / "home" / "part.bin"
    shutil.copy(bundle / "genie" / "part_1_of_2_token.bin", outside)
    _point(bundle, "ctx-bins", str(outside))
    runner, log, evk = _device(sshd, tmp_path)
    url = f"ssh://{sshd.target.user}@{sshd.target.host}:{sshd.target.port}"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("q9diff")), "verify", str(bundle), "--runner", url,
         "--remote-tool", "genie-t2t-run", "--qairt-root", str(tmp_path / "qairt"), "--known-hosts",
         str(sshd.known_hosts), "--identity", str(sshd.identity), "--steps", "2", "--no-cpu"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing" in lines[0] and str(outside) in lines[0], done.stderr
    assert not log.exists()


def test_ssh_worker_refuses_a_part_that_links_outside_the_folder(sshd, tmp_path):  # noqa: F811
    from q9diff.verify.run import binaries_of

    folder = tmp_path / "build"
    folder.mkdir()
    shutil.copy(QWEN / "local" / "genie" / "part_1_of_2_token.bin", folder / "part_1_of_2.bin")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "id_ed25519").write_text(SECRET)
    (folder / "part_2_of_2.bin").symlink_to(tmp_path / "home" / "id_ed25519")
    with pytest.raises(
        RunnerError, match=r"refusing part_2_of_2.bin \(it resolves to .*id_ed25519\): it is outside"
    ):
        binaries_of(folder)


def test_local_genie_config_refuses_files_outside_the_bundle(tmp_path):
    bundle = _bundle(tmp_path)
    _point(bundle, "ctx-bins", "../home/id_ed25519")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(GenieError, match=r"refusing \.\./home/id_ed25519"):
        write_patched_config(bundle, work, None)
    assert not (work / CONFIG_NAME).exists()


# ---- item 10: smaller ones ----


def test_a_known_hosts_path_with_a_space_and_a_percent_works(sshd, tmp_path):  # noqa: F811
    folder = tmp_path / "my keys %h"
    folder.mkdir()
    known_hosts = folder / "known hosts"
    shutil.copy(sshd.known_hosts, known_hosts)
    identity = folder / "id key"
    shutil.copy(sshd.identity, identity)
    identity.chmod(0o600)
    runner = SshRunner(sshd.target, known_hosts=known_hosts, identity=identity, timeout_s=60)
    remote = runner.client.mkdtemp(str(tmp_path / "evk"))
    runner.client.remove(remote)
    assert list((tmp_path / "evk").iterdir()) == []


def test_net_run_outputs_are_read_only_inside_the_pulled_folder(tmp_path):
    from q9diff.runners.base import GraphSpec, TensorSpec
    from q9diff.runners.ssh.runner import output_files

    outside = tmp_path / "elsewhere"
    (outside / "Result_0").mkdir(parents=True)
    (outside / "Result_0" / "y.raw").write_bytes(b"\0" * 8)
    pulled = tmp_path / "pulled" / "output"
    (pulled / "Result_0").mkdir(parents=True)
    y = TensorSpec("y", "float32", (2,))
    for name in (str(outside), "../../elsewhere"):  # a graph name read from the binary
        graph = GraphSpec("x.bin", name, (), (y,))
        with pytest.raises(RunnerError, match="wrote no file for output y"):
            output_files(pulled, graph)
    (pulled / "Result_0" / "y.raw").symlink_to(outside / "Result_0" / "y.raw")
    with pytest.raises(RunnerError, match="wrote no file for output y"):
        output_files(pulled, GraphSpec("x.bin", "g", (), (y,)))


def test_the_remote_worker_leaves_no_folder_on_the_device(sshd, tmp_path):  # noqa: F811
    """The device's worker keeps its files in the session's remote directory, removed on close; its
    own temporary folder (TMPDIR of the remote Python) stays empty."""
    from q9diff.runners.local import LocalRunner

    if LocalRunner().missing():
        pytest.skip(LocalRunner().missing())
    device_tmp = tmp_path / "device-tmp"
    device_tmp.mkdir()
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nTMPDIR={device_tmp} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    evk = tmp_path / "evk"
    root = str(Path(__file__).resolve().parent.parent)
    runner = SshRunner(sshd.target, known_hosts=sshd.known_hosts, identity=sshd.identity, remote_dir=str(evk),
                       remote_python=str(python), remote_pythonpath=root, timeout_s=120)  # fmt: skip
    session = runner.open([QWEN / "local" / "genie" / "part_1_of_2_token.bin"])
    try:
        assert len(session.graphs) == 1
    finally:
        session.close()
    assert [p.name for p in device_tmp.iterdir() if p.name != ".ses"] == [], "onnxruntime's .ses aside"
    assert list(evk.iterdir()) == []
