"""The `ssh://user@host[:port]` runner: run context binaries on an EVK, compare locally.

The x86 emulator computes a soc_model 0 build and a soc_model 77 build bit-identically, so the
motivating bug (a generic-SoC build that loads and computes garbage) shows only on Hexagon hardware.
This runner takes the binaries there through the system OpenSSH client and brings the outputs back,
with one of two remote tools:

- `tool="q9diff"`: q9diff's own worker (`python -m q9diff.runners.worker`, onnxruntime-qnn on the
  device) over the ssh channel, the same framed protocol as the local runner. There is no unshared
  rebuild here: weight-shared binaries crash only the x86 emulator, and a device is where they must run.
- `tool="qnn-net-run"`: Qualcomm's `qnn-net-run --retrieve_context`, fed native raw files and an input
  list, its `Result_0` raw files pulled back and read with the graph's own dtypes and shapes.

Genie bundles run with Qualcomm's `genie-t2t-run` (`SshRunner.genie`): the bundle's ctx-bins,
tokenizer and backend extensions are pushed under flat names beside a patched `genie_config.json` that
names them relative to the remote directory (genie-t2t-run runs there), greedy (temp 0, top-k 1, as
q9diff.runners.genie patches it) and bounded by `dialog.max-num-tokens`, and the prompt goes as a
`--tokens_file`. Read from a public copy of Qualcomm's genie-t2t-run source (main.cpp, a release with
--tokens_file): a token query prints `[PROMPT TOKENS]: <ids>` and answers token ids, not text
(`[BEGIN]: <id> <id> … [END]`, from GenieDialog_tokenQuery's callback), that release prints no `[KPIS]:`
block, and a query that does not end in SUCCESS (e.g. the context is full) is "Failed to query with
tokens." and exit status 1.

Trust: host keys are always verified (`StrictHostKeyChecking=yes`, `BatchMode=yes`, an explicit
`UserKnownHostsFile` when given); an unknown or changed key is a one-line error saying how to add
the key, never a silent trust. Authentication is by key or agent only: no password goes on a command
line, and error messages carry ssh's own diagnostic line, never the environment or a key's contents.

qnn-net-run formats (from its `--help` text as Qualcomm's docs print it, and public scripts that drive
it on devices):
- `--input_list FILE`: one line per inference, `name:=path name:=path ...` (inputs by tensor name);
  for a context holding several graphs, a comma-separated list of input list files, one per graph
  in the context's order, with `__` for a graph not to execute.
- `--use_native_input_files` / `--use_native_output_files`: raw files in the graph's own data type
  (without them qnn-net-run reads and writes float32, a trap for fp16 or quantized I/O).
- outputs: `<output_dir>/Result_<i>/<output tensor name>.raw` for inference i.
Not found in the docs: how a tensor name holding characters a file name cannot (`/`, `:`) is written,
and where a multi-graph run puts each graph's `Result_<i>`. `output_files` therefore accepts the name
as it is and with each character outside `[A-Za-z0-9_.-]` replaced by `_`, in `Result_<i>` and in
`<graph name>/Result_<i>`, and refuses to guess between two candidates.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from q9diff.runners import RunnerError, RunnerUnavailable
from q9diff.runners.ssh.client import (
    TOOLS,
    QairtPaths,
    SshClient,
    SshTarget,
    Tool,
    remote_command,
    ssh_failure,
)
from q9diff.runners.ssh.genie_t2t import (
    _TOKEN_ID,
    GENIE_TOKENS_FILE,
    GenieKpis,
    GenieOutput,
    genie_t2t_run_argv,
    parse_genie_output,
    stage_genie_bundle,
    tokens_file_text,
)
from q9diff.runners.ssh.net_run import (
    NetRunSession,
    file_safe,
    input_list_arg,
    input_list_line,
    native_raw,
    net_run_argv,
    output_files,
    read_outputs,
)
from q9diff.runners.ssh.worker import SshWorkerSession


class SshRunner:
    """Runs binaries on a device reached by ssh (an EVK), with q9diff's worker or Qualcomm's qnn-net-run."""

    name = "ssh"

    def __init__(
        self,
        target: SshTarget,
        *,
        tool: Tool = "q9diff",
        known_hosts: Path | str | None = None,
        identity: Path | str | None = None,
        remote_dir: str | None = None,
        remote_python: str = "python3",
        remote_pythonpath: str | None = None,
        qairt_root: str | None = None,
        qairt_target: str = "aarch64-oe-linux-gcc11.2",
        dsp_arch: str = "v73",
        timeout_s: float = 600,
    ) -> None:
        if tool not in TOOLS:
            raise RunnerError(f"ssh runner: unknown tool {tool!r}; choose {' or '.join(TOOLS)}")
        self.target, self.tool = target, tool
        self.client = SshClient(
            target,
            Path(known_hosts).expanduser() if known_hosts else None,
            Path(identity).expanduser() if identity else None,
            timeout_s,
        )
        self.remote_dir, self.remote_python = remote_dir, remote_python
        self.remote_pythonpath = remote_pythonpath
        self.qairt = QairtPaths.sdk(qairt_root, qairt_target, dsp_arch)

    @classmethod
    def from_url(cls, url: str, **options) -> SshRunner:
        """`ssh://user@host[:port]` plus the keyword options of the constructor."""
        return cls(SshTarget.parse(url), **options)

    def missing(self) -> str | None:
        for program in ("ssh", "scp"):
            if shutil.which(program) is None:
                return (
                    f"the OpenSSH client {program} is not installed (Debian: apt-get install openssh-client)"
                )
        if self.client.identity is not None and not self.client.identity.is_file():
            return f"identity file {self.client.identity} does not exist"
        if self.client.known_hosts is not None and not self.client.known_hosts.is_file():
            return f"known_hosts file {self.client.known_hosts} does not exist; create it with ssh-keyscan"
        return None

    def open(self, binaries: list[Path]) -> SshWorkerSession | NetRunSession:
        problem = self.missing()
        if problem:
            raise RunnerUnavailable(problem)
        paths = [Path(b) for b in binaries]
        if self.tool == "q9diff":
            return SshWorkerSession(self.client, paths, self.remote_dir, self.remote_python,
                                    self.remote_pythonpath, self.qairt)  # fmt: skip
        return NetRunSession(self.client, paths, self.remote_dir, self.qairt)

    def genie(self, bundle: Path, prompt_ids: list[int], steps: int) -> GenieOutput:
        """genie-t2t-run on the device over a Genie bundle: greedy, at most `steps` tokens after
        `prompt_ids` (without bos: Genie prepends it). The remote directory is removed afterwards."""
        from q9diff.runners.genie import CONFIG_NAME

        problem = self.missing()
        if problem:
            raise RunnerUnavailable(problem)
        with tempfile.TemporaryDirectory(prefix="q9diff-genie-stage-") as tmp:
            stage = Path(tmp)
            notes = stage_genie_bundle(Path(bundle), stage, prompt_ids, steps)  # fail before ssh
            remote = self.client.mkdtemp(self.remote_dir)  # the first contact: host key checked first
            notes[0] = notes[0].replace(str(stage), f"{self.target}:{remote}")
            try:
                self.client.push(sorted(stage.iterdir()), remote)
                argv = genie_t2t_run_argv(self.qairt, CONFIG_NAME, tokens_file=GENIE_TOKENS_FILE)
                stdout = self.client.run(remote_command(argv, remote, self.qairt.env()), "genie-t2t-run")
            finally:
                try:
                    self.client.remove(remote)
                except RunnerError as exc:  # cleanup must not hide the error that brought us here
                    notes.append(f"could not remove {remote} on the device: {exc}")
        out = parse_genie_output(stdout)
        echoed = [int(w) for w in (out.prompt or "").split() if _TOKEN_ID.fullmatch(w)]
        if out.tokens is not None and echoed != [int(t) for t in prompt_ids]:
            raise RunnerError(f"{self.target}: genie-t2t-run read the tokens file as {echoed[:16]}")
        ran = f"ran on {self.target} with {argv[0]} (libGenie {out.genie_version or 'version not printed'})"
        return replace(out, notes=(ran, *notes))


__all__ = [
    "GenieKpis", "GenieOutput", "NetRunSession", "QairtPaths", "SshClient", "SshRunner", "SshTarget",
    "SshWorkerSession", "file_safe", "genie_t2t_run_argv", "input_list_arg", "input_list_line",
    "native_raw", "net_run_argv", "output_files", "parse_genie_output", "read_outputs", "remote_command",
    "ssh_failure", "stage_genie_bundle", "tokens_file_text",
]  # fmt: skip
