"""The ssh runner itself: one session type per remote tool, chosen by `--remote-tool`."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from q9diff.runners.base import RunnerError, RunnerUnavailable
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
    GENIE_TOKENS_FILE,
    TOKEN_ID,
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
        from q9diff.runners.genie import CONFIG_NAME  # start-up: runners.genie

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
        echoed = [int(w) for w in (out.prompt or "").split() if TOKEN_ID.fullmatch(w)]
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
