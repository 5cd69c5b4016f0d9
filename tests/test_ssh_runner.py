"""The ssh:// runner against a real OpenSSH server on loopback, and qnn-net-run / genie-t2t-run formats.

The server is Debian's sshd (`.ci/run` installs openssh-server), started here on 127.0.0.1 with a fresh
host key and client key; the remote command is q9diff's own worker (Python + onnxruntime-qnn), or a
stand-in for Qualcomm's device tool, so the whole path a device run takes (mktemp, push, the tool over
the ssh channel, pull, cleanup) runs for real.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from q9diff.runners.base import GraphSpec, RunnerError, TensorSpec, graph_specs
from q9diff.runners.registry import runner
from q9diff.runners.ssh.runner import (
    GenieKpis,
    GenieOutput,
    QairtPaths,
    SshRunner,
    SshTarget,
    genie_t2t_run_argv,
    input_list_arg,
    input_list_line,
    native_raw,
    net_run_argv,
    parse_genie_output,
    read_outputs,
    remote_command,
    stage_genie_bundle,
    tokens_file_text,
)

ROOT = Path(__file__).resolve().parent.parent
QWEN = ROOT / "fixtures/qwen-mini"
PROMPT_BIN = QWEN / "local/genie/part_1_of_2_prompt.bin"
SSHD = Path("/usr/sbin/sshd")


@dataclass(frozen=True)
class Server:
    target: SshTarget
    known_hosts: Path
    identity: Path
    tmp: Path


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return Path(f"{path}.pub").read_text().strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_banner(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60  # a bound against a hang: sshd starts slowly on a busy machine
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited with {proc.returncode}: {log.read_text()[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(64).startswith(b"SSH-2.0"):
                    return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not answer on port {port}: {log.read_text()[-500:]}")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Server:
    if not SSHD.is_file():
        why = "/usr/sbin/sshd is missing (Debian: apt-get install openssh-server; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs it: the EVK path must really run there
        pytest.skip(why)
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("the OpenSSH client is missing (Debian: apt-get install openssh-client)")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    tmp = tmp_path_factory.mktemp("sshd")
    host_pub = _keygen(tmp / "host_key")
    client_pub = _keygen(tmp / "client_key")
    (tmp / "authorized_keys").write_text(client_pub + "\n")
    port = _free_port()
    config = tmp / "sshd_config"
    config.write_text(
        "\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {tmp / 'host_key'}",
            f"PidFile {tmp / 'sshd.pid'}", f"AuthorizedKeysFile {tmp / 'authorized_keys'}",
            "PermitRootLogin prohibit-password", "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "StrictModes no", "UsePAM no", "Subsystem sftp internal-sftp",
            f"AllowUsers {getpass.getuser()}",
        ]) + "\n"
    )  # fmt: skip
    log = tmp / "sshd.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=err, stderr=err)
    try:
        _wait_for_banner(port, proc, log)
        known_hosts = tmp / "known_hosts"
        key_type, key = host_pub.split()[:2]
        known_hosts.write_text(f"[127.0.0.1]:{port} {key_type} {key}\n")
        yield Server(SshTarget(getpass.getuser(), "127.0.0.1", port), known_hosts, tmp / "client_key", tmp)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _seeded_inputs(graph: GraphSpec, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for t in graph.inputs:
        if np.issubdtype(np.dtype(t.dtype), np.integer):
            feeds[t.name] = rng.integers(0, 2048, size=t.shape).astype(t.dtype)
        else:
            feeds[t.name] = rng.standard_normal(t.shape).astype(t.dtype)
    return feeds


# ---- end to end over a real sshd ----


def test_ssh_worker_matches_local_runner_bit_for_bit(sshd: Server, tmp_path: Path) -> None:
    from q9diff.runners.local import LocalRunner

    local = LocalRunner()
    if local.missing():
        pytest.skip(local.missing())
    remote_base = tmp_path / "evk"
    ssh = SshRunner(sshd.target, tool="q9diff", known_hosts=sshd.known_hosts, identity=sshd.identity,
                    remote_dir=str(remote_base), remote_python=sys.executable, remote_pythonpath=str(ROOT),
                    timeout_s=120)  # fmt: skip
    assert ssh.missing() is None
    session = ssh.open([PROMPT_BIN])
    try:
        remote_dir = Path(session.remote_dir)
        assert remote_dir.parent == remote_base and (remote_dir / f"0_{PROMPT_BIN.name}").is_file()
        assert session.graphs == tuple(graph_specs(PROMPT_BIN))
        graph = session.graphs[0]
        inputs = _seeded_inputs(graph)
        remote_out = session.run(graph, inputs)
    finally:
        session.close()
    assert not remote_dir.exists(), "close() must remove the remote temp dir"

    lsession = local.open([PROMPT_BIN])
    try:
        local_out = lsession.run(lsession.graphs[0], inputs)
    finally:
        lsession.close()
    assert sorted(remote_out) == sorted(t.name for t in graph.outputs) == sorted(local_out)
    for name in local_out:
        assert remote_out[name].dtype == local_out[name].dtype
        assert remote_out[name].shape == local_out[name].shape
        assert remote_out[name].tobytes() == local_out[name].tobytes(), name
    assert np.isfinite(remote_out["hidden_states"]).all() and np.abs(remote_out["hidden_states"]).max() > 0


def test_verify_command_over_ssh_compares_two_builds(sshd: Server, tmp_path: Path) -> None:
    """`q9diff verify --runner ssh://…` as a user types it: both builds run behind the real sshd, the CPU
    reference runs here, and the verdict comes back with the EVK's reach."""
    from test_cli import q9diff

    ref = ROOT / "fixtures/qwen-mini/reference/genie/part_1_of_2_prompt.bin"
    url = f"ssh://{sshd.target.user}@{sshd.target.host}:{sshd.target.port}"
    r = q9diff("verify", str(PROMPT_BIN), str(ref), "--runner", url, "--known-hosts", str(sshd.known_hosts),
               "--identity", str(sshd.identity), "--remote-python", sys.executable, "--json")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    v = json.loads(r.stdout)
    assert [s["runner"] for s in v["sides"]] == ["ssh", "ssh", "onnxruntime CPU"]
    assert all(o["passed"] for o in v["outputs"]) and {o["against"] for o in v["outputs"]} == {
        "reference",
        "cpu",
    }
    assert str(sshd.identity) not in r.stdout + r.stderr


# qnn-net-run is not available off-device, so this stand-in plays Qualcomm's part of the documented file
# contract only (argv as documented, `name:=path` input list, `__` skips, native raw in, Result_0/<name>.raw
# out) by running the graph on the x86 emulator. What is under test is q9diff's side: the files it writes,
# the command line it sends over ssh, the pull and the parse. It refuses float32 mode, as a trap should.
STAND_IN = """#!{python}
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
import numpy as np
from q9diff.runners.base import graph_specs
from q9diff.runners.local import LocalRunner
args = sys.argv[1:]
opt = dict(zip(args, args[1:]))
if "--use_native_input_files" not in args or "--use_native_output_files" not in args:
    sys.exit("stand-in: only native files are implemented")
assert Path(opt["--backend"]).name == "libQnnHtp.so", opt["--backend"]
context = opt["--retrieve_context"]
lists = opt["--input_list"].split(",")
specs = graph_specs(Path(context))
assert len(lists) == len(specs), (lists, len(specs))
(index, listing), = [(i, f) for i, f in enumerate(lists) if f != "__"]
graph = specs[index]
pairs = dict(p.split(":=") for p in Path(listing).read_text().split())
feeds = {{t.name: np.fromfile(pairs[t.name], dtype=t.dtype).reshape(t.shape) for t in graph.inputs}}
session = LocalRunner().open([Path(context)])
out = session.run(session.graphs[index], feeds)
session.close()
result = Path(opt["--output_dir"]) / "Result_0"
result.mkdir(parents=True)
for t in graph.outputs:
    (result / (t.name + ".raw")).write_bytes(np.ascontiguousarray(out[t.name], dtype=t.dtype).tobytes())
"""


def test_net_run_session_over_ssh_round_trips_native_files(sshd: Server, tmp_path: Path) -> None:
    from q9diff.runners.local import LocalRunner

    local = LocalRunner()
    if local.missing():
        pytest.skip(local.missing())
    qairt = tmp_path / "qairt"
    tool = qairt / "bin/aarch64-oe-linux-gcc11.2/qnn-net-run"
    tool.parent.mkdir(parents=True)
    tool.write_text(STAND_IN.format(python=sys.executable, root=str(ROOT)))
    tool.chmod(0o755)
    remote_base = tmp_path / "evk"
    url = f"ssh://{sshd.target.user}@127.0.0.1:{sshd.target.port}"
    ssh = SshRunner.from_url(url, tool="qnn-net-run", known_hosts=sshd.known_hosts, identity=sshd.identity,
                             remote_dir=str(remote_base), qairt_root=str(qairt), timeout_s=120)  # fmt: skip
    session = ssh.open([PROMPT_BIN])
    try:
        graph = session.graphs[0]
        inputs = _seeded_inputs(graph, seed=11)
        remote_out = session.run(graph, inputs)
        remote_dir = Path(session.remote_dir)
        assert sorted(p.name for p in remote_dir.iterdir()) == [f"0_{PROMPT_BIN.name}"], "run dir left behind"
    finally:
        session.close()
    assert not remote_dir.exists()
    lsession = local.open([PROMPT_BIN])
    try:
        local_out = lsession.run(lsession.graphs[0], inputs)
    finally:
        lsession.close()
    assert sorted(remote_out) == sorted(local_out)
    for name, want in local_out.items():
        got = remote_out[name]
        assert (got.dtype, got.shape) == (want.dtype, want.shape) and got.tobytes() == want.tobytes(), name


def test_changed_host_key_is_refused_before_anything_is_pushed(sshd: Server, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    key_type, key = _keygen(other).split()[:2]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{sshd.target.port} {key_type} {key}\n")
    remote_base = tmp_path / "evk"
    ssh = SshRunner(sshd.target, known_hosts=known_hosts, identity=sshd.identity, remote_dir=str(remote_base),
                    remote_python=sys.executable, remote_pythonpath=str(ROOT))  # fmt: skip
    with pytest.raises(RunnerError) as err:
        ssh.open([PROMPT_BIN])
    message = str(err.value)
    assert "\n" not in message
    assert "host key" in message and "changed" in message
    assert f"ssh-keyscan -p {sshd.target.port} 127.0.0.1" in message and str(known_hosts) in message
    assert not remote_base.exists(), "nothing may reach the host before its key is verified"


def test_genie_refuses_a_changed_host_key_before_pushing_the_bundle(sshd: Server, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    key_type, key = _keygen(tmp_path / "other_key").split()[:2]
    known_hosts.write_text(f"[127.0.0.1]:{sshd.target.port} {key_type} {key}\n")
    evk = tmp_path / "evk"
    ssh = SshRunner(sshd.target, known_hosts=known_hosts, identity=sshd.identity, remote_dir=str(evk))
    with pytest.raises(RunnerError, match="changed"):
        ssh.genie(QWEN / "local", [10, 20, 30], 4)
    assert not evk.exists(), "nothing may reach the host before its key is verified"


def test_unknown_host_is_refused_with_how_to_add_the_key(sshd: Server, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    remote_base = tmp_path / "evk"
    ssh = SshRunner.from_url(
        f"ssh://{sshd.target.user}@127.0.0.1:{sshd.target.port}",
        tool="qnn-net-run",
        known_hosts=known_hosts,
        identity=sshd.identity,
        remote_dir=str(remote_base),
    )
    with pytest.raises(RunnerError) as err:
        ssh.open([PROMPT_BIN])
    message = str(err.value)
    assert "\n" not in message and "is not known" in message and "ssh-keyscan" in message
    assert known_hosts.read_text() == "", "the key must never be added silently"
    assert not remote_base.exists()


def test_wrong_client_key_is_an_authentication_error(sshd: Server, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    _keygen(stranger)
    evk = tmp_path / "evk"
    ssh = SshRunner(sshd.target, known_hosts=sshd.known_hosts, identity=stranger, remote_dir=str(evk))
    with pytest.raises(RunnerError, match="authentication refused"):
        ssh.open([PROMPT_BIN])
    assert not evk.exists()


# ---- the URL and the runner's interface ----


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ssh://root@evk", SshTarget("root", "evk", 22)),
        ("ssh://ubuntu@10.0.0.7:2222", SshTarget("ubuntu", "10.0.0.7", 2222)),
        ("ssh://me@[::1]:22", SshTarget("me", "::1", 22)),
    ],
)
def test_target_from_url(url: str, expected: SshTarget) -> None:
    assert SshTarget.parse(url) == expected
    assert isinstance(runner(url), SshRunner) and runner(url).target == expected


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://root@evk", "expected ssh://"),
        ("ssh://evk", "name the user"),
        ("ssh://root:hunter2@evk", "no passwords"),
        ("ssh://root@evk:notaport", "not an ssh URL"),
        ("ssh://root@evk:70000", "not an ssh URL"),
        ("ssh://root@evk/tmp/x", "nothing after the port"),
        ("ssh://root@:22", "no host"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(RunnerError, match=says) as err:
        SshTarget.parse(url)
    assert "hunter2" not in str(err.value).replace(url, "")


def test_options_never_trust_an_unverified_host(tmp_path: Path) -> None:
    ssh = SshRunner(SshTarget("root", "evk", 2200), known_hosts=tmp_path / "kh", identity=tmp_path / "id")
    argv = ssh.client.ssh_argv("true")
    joined = " ".join(argv)
    assert "StrictHostKeyChecking=yes" in joined and "BatchMode=yes" in joined
    assert f'UserKnownHostsFile="{tmp_path / "kh"}"' in joined
    assert "StrictHostKeyChecking=no" not in joined and "accept-new" not in joined
    assert argv[-2:] == ["root@evk", "true"] and argv[argv.index("-p") + 1] == "2200"
    assert ssh.missing() == f"identity file {tmp_path / 'id'} does not exist"


def test_remote_command_quotes_and_carries_the_environment() -> None:
    line = remote_command(["/opt/py thon", "-m", "q9diff.runners.worker"], "/tmp/q9diff-ssh.x y",
                          {"PYTHONPATH": "/src/q9 diff", "LD_LIBRARY_PATH": "/qairt/lib"})  # fmt: skip
    done = subprocess.run(["sh", "-c", line.replace("exec ", "exec printf '%s\\n' ", 1).replace(
        "cd '/tmp/q9diff-ssh.x y' && ", "")], capture_output=True, text=True, check=True)  # fmt: skip
    # its folder as TMPDIR (removed with it) and ONNX Runtime's telemetry off, as for a local child
    assert done.stdout.splitlines() == ["env", "TMPDIR=/tmp/q9diff-ssh.x y", "ORT_DISABLE_TELEMETRY=1",
                                        "PYTHONPATH=/src/q9 diff", "LD_LIBRARY_PATH=/qairt/lib",
                                        "/opt/py thon", "-m", "q9diff.runners.worker"]  # fmt: skip
    assert line.startswith("cd '/tmp/q9diff-ssh.x y' && exec env ")


# ---- qnn-net-run: command line, input list, native files, Result_0 ----

QAIRT = QairtPaths.sdk("/opt/qairt/2.51", "aarch64-oe-linux-gcc11.2", "v73")


def test_net_run_command_line() -> None:
    argv = net_run_argv(QAIRT, "/w/0_part.bin", "/w/run1/input_list.txt", "/w/run1/output")
    assert argv == [
        "/opt/qairt/2.51/bin/aarch64-oe-linux-gcc11.2/qnn-net-run",
        "--backend", "/opt/qairt/2.51/lib/aarch64-oe-linux-gcc11.2/libQnnHtp.so",
        "--retrieve_context", "/w/0_part.bin",
        "--input_list", "/w/run1/input_list.txt",
        "--use_native_input_files", "--use_native_output_files",
        "--output_dir", "/w/run1/output",
    ]  # fmt: skip
    assert QAIRT.env() == {"LD_LIBRARY_PATH": "/opt/qairt/2.51/lib/aarch64-oe-linux-gcc11.2",
                           "ADSP_LIBRARY_PATH": "/opt/qairt/2.51/lib/hexagon-v73/unsigned"}  # fmt: skip
    on_path = QairtPaths.sdk(None)
    assert net_run_argv(on_path, "c.bin", "l.txt", "o")[:3] == ["qnn-net-run", "--backend", "libQnnHtp.so"]
    assert on_path.env() == {}


def test_input_list_selects_one_graph_of_a_context() -> None:
    assert input_list_arg("l.txt", 0, 1) == "l.txt"
    assert input_list_arg("l.txt", 0, 2) == "l.txt,__"
    assert input_list_arg("l.txt", 1, 2) == "__,l.txt"
    with pytest.raises(RunnerError):
        input_list_arg("l.txt", 2, 2)


def test_input_list_line_and_native_input_files(tmp_path: Path) -> None:
    graph = graph_specs(PROMPT_BIN)[0]
    inputs = _seeded_inputs(graph)
    files = []
    for j, t in enumerate(graph.inputs):
        path = tmp_path / f"input_{j}.raw"
        path.write_bytes(native_raw(t, inputs[t.name]))
        files.append((t.name, str(path)))
    line = input_list_line(files)
    # The documented format: one line per inference, `name:=path` pairs separated by spaces.
    pairs = [p.split(":=") for p in line.split(" ")]
    assert [n for n, _ in pairs] == [t.name for t in graph.inputs]
    for (_, path), t in zip(pairs, graph.inputs):
        raw = np.fromfile(path, dtype=t.dtype)
        assert raw.nbytes == np.prod(t.shape) * np.dtype(t.dtype).itemsize
        assert raw.tobytes() == np.ascontiguousarray(inputs[t.name]).tobytes()
    assert graph.input("input_ids").dtype == "int32"
    # fp16 and quantized inputs go in their own dtype, C order, not as float32.
    half = TensorSpec("x", "float16", (2, 3))
    value = np.arange(6, dtype=np.float32).reshape(3, 2).T  # Fortran-ordered view
    assert native_raw(half, value) == np.ascontiguousarray(value, dtype=np.float16).tobytes()
    assert len(native_raw(TensorSpec("q", "uint16", (4,), 0.1, -3), np.arange(4))) == 8
    with pytest.raises(RunnerError, match="shape"):
        native_raw(half, np.zeros(5))
    with pytest.raises(RunnerError, match="spaces"):
        input_list_line([("a b", "/x.raw")])


def _net_run_layout(root: Path, graph: GraphSpec, values: dict[str, np.ndarray], sub: str = "") -> None:
    """What qnn-net-run writes with --use_native_output_files: Result_0/<output name>.raw, native dtype."""
    result = root / sub / "Result_0"
    result.mkdir(parents=True)
    for t in graph.outputs:
        (result / f"{t.name}.raw").write_bytes(np.ascontiguousarray(values[t.name], dtype=t.dtype).tobytes())


def test_read_outputs_of_the_documented_layout(tmp_path: Path) -> None:
    graph = graph_specs(PROMPT_BIN)[0]
    rng = np.random.default_rng(3)
    values = {t.name: rng.standard_normal(t.shape).astype(t.dtype) for t in graph.outputs}
    _net_run_layout(tmp_path / "output", graph, values)
    out = read_outputs(tmp_path / "output", graph)
    assert sorted(out) == sorted(values)
    for name, v in values.items():
        assert out[name].dtype == v.dtype and out[name].shape == v.shape and np.array_equal(out[name], v)


def test_read_outputs_native_dtypes_sanitised_names_and_graph_dirs(tmp_path: Path) -> None:
    graph = GraphSpec("x.bin", "token_ar1_cl128_1_of_2",
                      (TensorSpec("ids", "int32", (1, 1)),),
                      (TensorSpec("logits", "uint16", (1, 1, 1, 8), 0.001, -30000),
                       TensorSpec("/model/layer.0/k:0", "float16", (2, 3))))  # fmt: skip
    logits = np.arange(8, dtype=np.uint16).reshape(1, 1, 1, 8) * 1000
    k = np.linspace(-1, 1, 6, dtype=np.float16).reshape(2, 3)
    result = tmp_path / "out" / graph.name / "Result_0"
    result.mkdir(parents=True)
    (result / "logits.raw").write_bytes(logits.tobytes())
    (result / "_model_layer.0_k_0.raw").write_bytes(k.tobytes())
    out = read_outputs(tmp_path / "out", graph)
    assert out["logits"].dtype == np.uint16 and np.array_equal(out["logits"], logits)
    assert out["/model/layer.0/k:0"].dtype == np.float16 and np.array_equal(out["/model/layer.0/k:0"], k)


def test_float32_outputs_where_native_were_expected_are_refused(tmp_path: Path) -> None:
    graph = GraphSpec("x.bin", "g", (), (TensorSpec("logits", "float16", (1, 4)),))
    result = tmp_path / "out" / "Result_0"
    result.mkdir(parents=True)
    (result / "logits.raw").write_bytes(np.ones((1, 4), np.float32).tobytes())  # without native output
    with pytest.raises(RunnerError, match="use_native_output_files"):
        read_outputs(tmp_path / "out", graph)
    (result / "logits.raw").unlink()
    with pytest.raises(RunnerError, match="no file for output logits"):
        read_outputs(tmp_path / "out", graph)


# ---- genie-t2t-run ----


def test_genie_t2t_run_command_lines() -> None:
    assert genie_t2t_run_argv(QAIRT, "genie_config.json", prompt="Hello") == [
        "/opt/qairt/2.51/bin/aarch64-oe-linux-gcc11.2/genie-t2t-run", "--config", "genie_config.json",
        "--prompt", "Hello",
    ]  # fmt: skip
    argv = genie_t2t_run_argv(QairtPaths.sdk(None), "c.json", tokens_file="t.txt", profile="p.json")
    assert argv == ["genie-t2t-run", "--config", "c.json", "--tokens_file", "t.txt", "--profile", "p.json"]
    with pytest.raises(RunnerError, match="exactly one"):
        genie_t2t_run_argv(QAIRT, "c.json", prompt="a", tokens_file="t.txt")
    with pytest.raises(RunnerError, match="exactly one"):
        genie_t2t_run_argv(QAIRT, "c.json")
    assert tokens_file_text([24948, 592, 1048]) == "24948 592 1048\n"


GENIE_STDOUT = """Using libGenie.so version 1.11.0

[INFO]  "Using create From Binary"
[INFO]  "Allocated total size = 270369280 across 5 buffers"
[PROMPT]: <|im_start|>user
What is France's capital?<|im_end|>
<|im_start|>assistant

[BEGIN]:

The capital of France is Paris.[END]

[KPIS]:
Init Time: 1395418 us
Prompt Processing Time: 53432 us, Prompt Processing Rate : 374.307098 toks/sec
Token Generation Time: 1134640 us, Token Generation Rate: 30.855871 toks/sec
"""


def test_parse_genie_output() -> None:
    out = parse_genie_output(GENIE_STDOUT)
    assert out.text == "The capital of France is Paris."
    assert out.prompt.startswith("<|im_start|>user\nWhat is France's capital?")
    assert out.genie_version == "1.11.0"
    assert out.kpis.init_time_us == 1395418 and out.kpis.prompt_processing_time_us == 53432
    assert out.kpis.prompt_processing_rate == pytest.approx(374.307098)
    assert out.kpis.token_generation_time_us == 1134640
    assert out.kpis.token_generation_rate == pytest.approx(30.855871)
    bare = parse_genie_output("[PROMPT]: hi\n\n[BEGIN]: there[END]\n")
    assert (bare.text, bare.prompt, bare.kpis.init_time_us, bare.genie_version) == ("there", "hi", None, None)
    with pytest.raises(RunnerError, match="Failed to create the dialog"):
        parse_genie_output('[ERROR] "Device Creation failure"\nFailed to create the dialog.\n')


# genie-t2t-run prints each id followed by a space, so the prompt and answer lines hold one before \n.
GENIE_TOKEN_QUERY_STDOUT = (
    "Using libGenie.so version 1.21.0\n\n[PROMPT TOKENS]: 10 20 30 40 50 \n"
    "[BEGIN]: 725 725 725 539 147 [END]\n\n"
)


def test_parse_genie_token_query_output() -> None:
    """genie-t2t-run's source: a --tokens_file query echoes `[PROMPT TOKENS]: ` and answers ids, each
    followed by a space (its tokenToTokenCallback), between `[BEGIN]: ` and `[END]`."""
    out = parse_genie_output(GENIE_TOKEN_QUERY_STDOUT)
    assert out.tokens == (725, 725, 725, 539, 147) and out.prompt == "10 20 30 40 50"
    assert out.genie_version == "1.21.0" and out.kpis.init_time_us is None
    assert parse_genie_output(GENIE_STDOUT).tokens is None, "a text query's answer is text"
    with pytest.raises(RunnerError, match="not token ids"):
        parse_genie_output("[PROMPT TOKENS]: 1 2 \n[BEGIN]: Paris[END]\n")


def _named_files(bundle: Path) -> list[str]:
    """The files a Genie config names, in the order write_patched_config visits them."""
    dialog = json.loads((bundle / "genie_config.json").read_text())["dialog"]
    engine = dialog["engine"]
    ctx_bins = engine["model"]["binary"]["ctx-bins"]
    return [dialog["tokenizer"]["path"], engine["backend"]["extensions"], *ctx_bins]


def test_staged_genie_bundle_names_every_file_relative_to_the_remote_dir(tmp_path: Path) -> None:
    from q9diff.runners.genie import CONFIG_NAME, GREEDY_SAMPLER

    bundle = QWEN / "local"
    before = (bundle / CONFIG_NAME).read_text()
    notes = stage_genie_bundle(bundle, tmp_path, [10, 20, 30], 6)
    named = _named_files(tmp_path)
    assert named == ["0_tokenizer.json", "1_htp_backend_ext_config.json", "2_part_1_of_2_prompt.bin",
                     "3_part_1_of_2_token.bin", "4_part_2_of_2_prompt.bin",
                     "5_part_2_of_2_token.bin"]  # fmt: skip
    for name, original in zip(named, _named_files(bundle)):
        assert (tmp_path / name).samefile(bundle / original), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*named, CONFIG_NAME, "tokens.txt"])
    dialog = json.loads((tmp_path / CONFIG_NAME).read_text())["dialog"]
    assert dialog["sampler"] == GREEDY_SAMPLER and dialog["max-num-tokens"] == 6
    assert (tmp_path / "tokens.txt").read_text() == "10 20 30\n", "Genie prepends bos itself"
    assert any("max-num-tokens 6" in n for n in notes) and any("greedy" in n for n in notes)
    assert (bundle / CONFIG_NAME).read_text() == before, "the bundle's own config is never modified"


def test_staging_refuses_a_bundle_naming_a_missing_file(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(QWEN / "local", bundle, ignore=shutil.ignore_patterns("*.bin", "tokenizer.json"))
    stage = tmp_path / "stage"
    stage.mkdir()
    with pytest.raises(RunnerError) as err:
        stage_genie_bundle(bundle, stage, [1], 4)
    # the one config reader's line, as diff, verify and doctor say it
    line = str(err.value)
    assert "\n" not in line and "part_1_of_2_prompt.bin: no such file in the bundle" in line


def test_answers_compare_by_ids_else_by_text_and_detokenise_with_the_bundles_tokenizer() -> None:
    from tokenizers import Tokenizer

    from q9diff.verify.genie import answers_agree, bundle_texts

    tokenizer = Tokenizer.from_file(str(QWEN / "local/tokenizer.json"))
    ids = tuple(tokenizer.encode("the capital of France").ids)
    texts = bundle_texts(QWEN / "local", {"emulator": ids, "candidate": ids[:-1]})
    assert texts["emulator"] == tokenizer.decode(list(ids), skip_special_tokens=False)
    tokens = {"emulator": ids, "candidate": ids[:-1]}
    assert not answers_agree("candidate", "emulator", tokens, texts), "a shorter answer differs"
    assert answers_agree("emulator", "emulator", tokens, texts)
    texts["device"] = texts["emulator"]
    assert answers_agree("device", "emulator", tokens, texts), "a text answer compares as text"


# genie-t2t-run is not available off-device, so this stand-in plays Qualcomm's part of the contract its
# docs and source give (argv `--config FILE --tokens_file FILE`; paths in the config resolved from the
# working directory; `dialog.max-num-tokens` bounds the answer; stdout `Using libGenie.so version X`,
# `[PROMPT TOKENS]: ids`, `[BEGIN]: ids [END]`) by running the REAL libGenie on the x86 emulator through
# q9diff.runners.genie.GenieRunner over the config it was given. What is under test is q9diff's side: what
# it pushes, the command line, the parse and the comparison. It records each call where the test reads it.
GENIE_STAND_IN = """#!{python}
import ctypes, json, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from q9diff.runners.genie import GenieRunner
from q9diff.runners.genie_child import _load_genie
args = sys.argv[1:]
opt = dict(zip(args, args[1:]))
if "--tokens_file" not in opt or {{"-p", "--prompt", "--prompt_file"}} & set(args):
    sys.exit("stand-in: only --tokens_file queries are implemented")
config = Path(opt["--config"])
dialog = json.loads(config.read_text())["dialog"]
engine = dialog["engine"]
named = [dialog["tokenizer"]["path"], engine["backend"]["extensions"], *engine["model"]["binary"]["ctx-bins"]]
assert config.resolve().parent == Path.cwd(), "stand-in: the config must sit in the working directory"
assert all(Path(p).is_file() for p in named), named  # as Genie looks them up: from the working directory
tokens = [int(t) for t in Path(opt["--tokens_file"]).read_text().split()]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "files": sorted(os.listdir()),
                          "env": {{k: os.environ.get(k) for k in ("LD_LIBRARY_PATH", "ADSP_LIBRARY_PATH")}},
                          "dialog": dialog, "tokens": tokens}}) + "\\n")
genie = _load_genie()
parts = []
for part in ("Major", "Minor", "Patch"):
    function = getattr(genie, "Genie_getApi" + part + "Version")
    function.restype = ctypes.c_uint32
    parts.append(str(function()))
print("Using libGenie.so version " + ".".join(parts) + "\\n")
print("[PROMPT TOKENS]: " + "".join(str(t) + " " for t in tokens))
result = GenieRunner(timeout_s=120).generate(config.parent, tokens, dialog["max-num-tokens"])
print("[BEGIN]: " + "".join(str(t) + " " for t in result.tokens) + "[END]\\n")
"""


def test_genie_bundles_verified_with_genie_t2t_run_over_ssh(sshd: Server, tmp_path: Path) -> None:
    """verify_genie_ssh as `--remote-tool genie-t2t-run` runs it: both bundles go to the device, the
    device's answers meet q9diff's decoding of the same ctx-bins on the emulator and the CPU, and the
    remote directories are gone afterwards."""
    from q9diff.runners.genie import GREEDY_SAMPLER, GenieRunner
    from q9diff.verify.genie import verify_genie_ssh
    from q9diff.verify.run import to_json

    if GenieRunner().missing():
        pytest.skip(GenieRunner().missing())
    qairt = tmp_path / "qairt"
    tool = qairt / "bin/aarch64-oe-linux-gcc11.2/genie-t2t-run"
    tool.parent.mkdir(parents=True)
    log = tmp_path / "calls.jsonl"
    tool.write_text(GENIE_STAND_IN.format(python=sys.executable, root=str(ROOT), log=str(log)))
    tool.chmod(0o755)
    evk = tmp_path / "evk"
    ssh = SshRunner(sshd.target, known_hosts=sshd.known_hosts, identity=sshd.identity, remote_dir=str(evk),
                    qairt_root=str(qairt), timeout_s=120)  # fmt: skip
    prompt = [10, 20, 30, 40, 50]
    res = verify_genie_ssh(QWEN / "local", QWEN / "reference", ssh, steps=6, prompt=prompt)

    v = to_json(res)
    assert res.passed and v["passed"]
    tokens = res.llm.tokens
    assert list(tokens) == ["candidate", "reference", "emulator", "cpu"]
    assert tokens["candidate"] == tokens["reference"] == tokens["emulator"] and len(tokens["candidate"]) == 6
    assert res.llm.first_divergence["candidate~emulator"] is None
    assert res.llm.prompt == (2046, *prompt), "q9diff's decoder is fed bos; Genie adds its own"
    texts = res.llm.texts
    assert texts["candidate"] == texts["reference"] == texts["emulator"] and texts["candidate"].strip()
    assert [s["runner"] for s in v["sides"]] == ["local", "ssh", "ssh", "onnxruntime CPU"]
    device = next(s for s in res.sides if s.label == "candidate")
    assert device.notes[0].startswith(f"ran on {sshd.target} with {tool} (libGenie 1.21.0)")

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2
    for call in calls:
        assert call["argv"] == [str(tool), "--config", "genie_config.json", "--tokens_file", "tokens.txt"]
        assert Path(call["cwd"]).parent == evk and Path(call["cwd"]).name.startswith("q9diff-ssh.")
        assert call["env"] == {"LD_LIBRARY_PATH": str(qairt / "lib/aarch64-oe-linux-gcc11.2"),
                               "ADSP_LIBRARY_PATH": str(qairt / "lib/hexagon-v73/unsigned")}  # fmt: skip
        assert call["tokens"] == prompt
        assert call["dialog"]["sampler"] == GREEDY_SAMPLER and call["dialog"]["max-num-tokens"] == 6
        assert len(call["files"]) == 8 and {"genie_config.json", "tokens.txt"} <= set(call["files"])
    assert list(evk.iterdir()) == [], "every remote directory is removed"

    from test_cli import q9diff

    url = f"ssh://{sshd.target.user}@{sshd.target.host}:{sshd.target.port}"
    r = q9diff("verify", str(QWEN / "local"), "--runner", url, "--remote-tool", "genie-t2t-run",
               "--qairt-root", str(qairt), "--known-hosts", str(sshd.known_hosts), "--identity",
               str(sshd.identity), "--steps", "3", "--no-cpu", "--prompt-ids", "10,20,30")  # fmt: skip
    assert r.returncode == 0 and "PASS" in r.stdout and "text   candidate" in r.stdout, r.stdout + r.stderr


@dataclass(frozen=True)
class _Device:
    """A device whose genie-t2t-run answers are given: to show how verify judges what comes back."""

    answers: dict[str, GenieOutput]

    def genie(self, bundle: Path, prompt_ids: list[int], steps: int) -> GenieOutput:
        return self.answers[bundle.name]


def test_a_device_answer_that_leaves_the_emulator_fails_and_says_where() -> None:
    from q9diff.runners.local import LocalRunner
    from q9diff.verify.genie import bundle_texts, decode_bundle, verify_genie_ssh

    if LocalRunner().missing():
        pytest.skip(LocalRunner().missing())
    bundle, prompt, kpis = QWEN / "local", [10, 20, 30, 40, 50], GenieKpis()
    emulator = decode_bundle(bundle, cpu=False, steps=4, prompt=prompt, seed=0).tokens["emulator"]
    garbage = (*emulator[:2], (emulator[2] + 1) % 2048, emulator[3])  # right, right, then wrong
    device = _Device({"local": GenieOutput("", "10 20 30 40 50", kpis, "1.21.0", garbage, ("ran",))})
    res = verify_genie_ssh(bundle, None, device, cpu=False, steps=4, prompt=prompt)
    assert not res.passed and res.llm.first_divergence == {"candidate~emulator": 2}
    assert res.llm.texts["candidate"] != res.llm.texts["emulator"]
    text = bundle_texts(bundle, {"emulator": emulator})["emulator"]
    device = _Device({"local": GenieOutput(text, "hi", kpis, None)})  # a tool that answered text
    res = verify_genie_ssh(bundle, None, device, cpu=False, steps=4, prompt=prompt)
    assert res.passed and "compared as text" in res.notes[-1] and "candidate" not in res.llm.tokens
