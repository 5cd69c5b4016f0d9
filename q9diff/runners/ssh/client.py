"""The ssh plumbing every remote tool shares: the target URL, the OpenSSH client (host keys always
verified), QAIRT paths on the device, and a session that stages binaries in a remote directory."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from q9diff.guard import ORT_TELEMETRY_OFF
from q9diff.runners.base import GraphSpec, RunnerError, RunnerUnavailable, graph_specs

Tool = Literal["q9diff", "qnn-net-run"]


TOOLS: tuple[str, ...] = ("q9diff", "qnn-net-run")


REMOTE_PREFIX = "q9diff-ssh."


@dataclass(frozen=True)
class SshTarget:
    """Who and where to log in: the parts of an `ssh://user@host[:port]` URL."""

    user: str
    host: str
    port: int = 22

    @classmethod
    def parse(cls, url: str) -> SshTarget:
        """The target of `ssh://user@host[:port]`; a one-line RunnerError says what is wrong otherwise."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise RunnerError(f"{url!r}: not an ssh URL ({exc}); expected ssh://user@host[:port]") from None
        if parts.scheme != "ssh":
            raise RunnerError(f"{url!r}: expected ssh://user@host[:port]")
        if parts.password is not None:
            raise RunnerError(f"{url!r}: no passwords in URLs; the ssh runner logs in with a key or agent")
        if not parts.username:
            raise RunnerError(f"{url!r}: name the user, as in ssh://user@host[:port]")
        if not parts.hostname:
            raise RunnerError(f"{url!r}: no host; expected ssh://user@host[:port]")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise RunnerError(f"{url!r}: expected ssh://user@host[:port] with nothing after the port")
        if port == 0:
            raise RunnerError(f"{url!r}: port 0 is not a port")
        return cls(parts.username, parts.hostname, port or 22)

    @property
    def known_hosts_name(self) -> str:
        """The host as known_hosts and ssh-keyscan name it (`[host]:port` off port 22)."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def scp_path(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{path}"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{self.user}@{host}" + (f":{self.port}" if self.port != 22 else "")


def ssh_failure(target: SshTarget, stderr: str, known_hosts: Path | None) -> str:
    """One line for a failed ssh/scp: host key problems say how to add the key; else ssh's own last word."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    text = "\n".join(lines)
    file = str(known_hosts) if known_hosts else "~/.ssh/known_hosts"
    scan = f"ssh-keyscan -p {target.port} {target.host}"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text:
        changed = "HAS CHANGED" in text
        what = "changed" if changed else "is not known"
        name = target.known_hosts_name
        drop = f"remove the old line (ssh-keygen -R '{name}' -f {file}), " if changed else ""
        return (
            f"{target}: host key verification failed (the host key for {target.known_hosts_name} {what} "
            f"in {file}); {drop}get the key with `{scan}`, compare its fingerprint (ssh-keygen -lf) with "
            f"the one the device shows, and only then add that line to {file}"
        )
    if "Permission denied" in text:
        return (
            f"{target}: authentication refused (keys only, BatchMode); pass identity= or load the key "
            "into ssh-agent"
        )
    last = next((ln for ln in reversed(lines) if not ln.startswith("Warning:")), "")
    return f"{target}: {last[:300] or 'ssh failed'}"


def _ssh_path(path: Path, what: str) -> str:
    """A local file path as ssh's configuration reads it: %-tokens escaped; a quote cannot be carried."""
    text = str(path)
    if '"' in text or "\n" in text:
        raise RunnerError(f"{what} file {text!r}: ssh cannot take a path holding a quote or a newline")
    return text.replace("%", "%%")


@dataclass(frozen=True)
class SshClient:
    """The system `ssh`/`scp` with q9diff's fixed trust options; each method one subprocess."""

    target: SshTarget
    known_hosts: Path | None = None
    identity: Path | None = None
    timeout_s: float = 600
    connect_timeout_s: int = 15

    def options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"ConnectTimeout={self.connect_timeout_s}", "-o", "LogLevel=ERROR"]  # fmt: skip
        if self.known_hosts is not None:
            # Only the file the user named is trusted, not also a system-wide list. ssh splits this
            # option's value at spaces (it is a list of files) and expands %-tokens: quote and escape.
            value = f'"{_ssh_path(self.known_hosts, "known_hosts")}"'
            opts += ["-o", f"UserKnownHostsFile={value}", "-o", "GlobalKnownHostsFile=/dev/null"]
        if self.identity is not None:
            # As an option, not -i: ssh checks -i's path before expanding its %-tokens.
            opts += [
                "-o",
                f'IdentityFile="{_ssh_path(self.identity, "identity")}"',
                "-o",
                "IdentitiesOnly=yes",
            ]
        return opts

    def ssh_argv(self, command: str) -> list[str]:
        """`ssh … user@host COMMAND`; COMMAND is one POSIX shell string (build it with shlex.quote)."""
        return ["ssh", *self.options(), "-p", str(self.target.port), "--",
                f"{self.target.user}@{self.target.host}", command]  # fmt: skip

    def _call(self, argv: list[str], what: str) -> str:
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout_s)
        except FileNotFoundError:
            raise RunnerUnavailable(f"{argv[0]} not found: install the OpenSSH client") from None
        except subprocess.TimeoutExpired:
            raise RunnerError(f"{self.target}: {what} took longer than {self.timeout_s:.0f} s") from None
        if done.returncode != 0:
            stderr = done.stderr.decode(errors="replace")
            if done.returncode == 255 or argv[0] == "scp":
                raise RunnerError(ssh_failure(self.target, stderr, self.known_hosts))
            last = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
            tail = f": {last[-1][:300]}" if last else ""
            raise RunnerError(f"{self.target}: {what} exited with status {done.returncode}{tail}")
        return done.stdout.decode(errors="replace")

    def run(self, command: str, what: str) -> str:
        """Run a remote shell command; its stdout, or a one-line RunnerError."""
        return self._call(self.ssh_argv(command), what)

    def push(self, sources: list[Path], remote_dir: str) -> None:
        """Copy local files or directories into an existing remote directory."""
        argv = ["scp", "-q", "-r", *self.options(), "-P", str(self.target.port), "--",
                *[str(s) for s in sources], self.target.scp_path(remote_dir.rstrip("/") + "/")]  # fmt: skip
        self._call(argv, "push")

    def pull(self, remote_path: str, local_dir: Path) -> None:
        """Copy a remote file or directory into an existing local directory."""
        argv = ["scp", "-q", "-r", *self.options(), "-P", str(self.target.port), "--",
                self.target.scp_path(remote_path), str(local_dir)]  # fmt: skip
        self._call(argv, "pull")

    def mkdtemp(self, base: str | None) -> str:
        """A fresh remote directory (`mktemp -d`), under `base` or the remote's $TMPDIR or /tmp."""
        if base:
            template = shlex.quote(base.rstrip("/") + "/" + REMOTE_PREFIX + "XXXXXX")
            command = f"mkdir -p {shlex.quote(base)} && mktemp -d {template}"
        else:
            command = f'mktemp -d "${{TMPDIR:-/tmp}}/{REMOTE_PREFIX}XXXXXX"'
        path = self.run(command, "mktemp -d").strip()
        if not path.startswith("/") or REMOTE_PREFIX not in path or "\n" in path:
            raise RunnerError(f"{self.target}: mktemp -d answered {path[:100]!r}, not a directory path")
        return path

    def remove(self, remote_dir: str) -> None:
        """Remove a directory this runner made (refuses anything mkdtemp did not name)."""
        if REMOTE_PREFIX not in Path(remote_dir).name:
            raise RunnerError(f"{self.target}: refusing to remove {remote_dir}, which q9diff did not create")
        self.run(f"rm -rf -- {shlex.quote(remote_dir)}", "cleanup")


@dataclass(frozen=True)
class QairtPaths:
    """Where qnn-net-run, genie-t2t-run, libQnnHtp.so and the Hexagon skel libraries live on the device."""

    bin_dir: str | None  # None: the tools are on the remote PATH
    lib_dir: str | None
    skel_dir: str | None

    @classmethod
    def sdk(
        cls, root: str | None, target: str = "aarch64-oe-linux-gcc11.2", dsp_arch: str = "v73"
    ) -> QairtPaths:
        """The QAIRT SDK layout (`bin/<target>`, `lib/<target>`, `lib/hexagon-<arch>/unsigned`) under root."""
        if root is None:
            return cls(None, None, None)
        root = root.rstrip("/")
        return cls(f"{root}/bin/{target}", f"{root}/lib/{target}", f"{root}/lib/hexagon-{dsp_arch}/unsigned")

    def tool(self, name: str) -> str:
        return f"{self.bin_dir}/{name}" if self.bin_dir else name

    @property
    def backend(self) -> str:
        return f"{self.lib_dir}/libQnnHtp.so" if self.lib_dir else "libQnnHtp.so"

    def env(self) -> dict[str, str]:
        """LD_LIBRARY_PATH for the host libraries, ADSP_LIBRARY_PATH for the skel the DSP loads."""
        env = {}
        if self.lib_dir:
            env["LD_LIBRARY_PATH"] = self.lib_dir
        if self.skel_dir:
            env["ADSP_LIBRARY_PATH"] = self.skel_dir
        return env


def remote_command(argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> str:
    """One POSIX shell string that runs argv in cwd with env (sshd forwards no environment). A tool run
    in a folder q9diff made (and removes) gets it as TMPDIR, and ONNX Runtime's telemetry off, as locally."""
    if cwd:
        env = {"TMPDIR": cwd, **ORT_TELEMETRY_OFF, **(env or {})}
    words = [shlex.quote(a) for a in argv]
    if env:
        words = ["env", *[shlex.quote(f"{k}={v}") for k, v in env.items()], *words]
    line = "exec " + " ".join(words)
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line


def _remote_name(i: int, binary: Path) -> str:
    return f"{i}_{binary.name}"


class SshSession:
    """What both tools share: a fresh remote directory holding the pushed binaries, removed on close."""

    def __init__(self, client: SshClient, binaries: list[Path], remote_base: str | None) -> None:
        self.client = client
        self.notes: tuple[str, ...] = ()
        self.remote_dir: str | None = None
        self._specs = [graph_specs(b, i) for i, b in enumerate(binaries)]  # our parser first: fail before ssh
        self.graphs: tuple[GraphSpec, ...] = tuple(g for specs in self._specs for g in specs)
        self.remote_dir = client.mkdtemp(remote_base)  # the first contact: host key checked before any push
        client.push(self._staged(binaries), self.remote_dir)
        self.remote_binaries = [f"{self.remote_dir}/{_remote_name(i, b)}" for i, b in enumerate(binaries)]

    def _staged(self, binaries: list[Path]) -> list[Path]:
        """The binaries under unique names (two parts may share a file name): symlinks in a local temp dir."""
        self._stage = Path(tempfile.mkdtemp(prefix="q9diff-ssh-stage-"))
        staged = []
        for i, b in enumerate(binaries):
            link = self._stage / _remote_name(i, b)
            link.symlink_to(Path(b).resolve())
            staged.append(link)
        return staged

    def close(self) -> None:
        stage = getattr(self, "_stage", None)
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
            self._stage = None
        if self.remote_dir is not None:
            remote, self.remote_dir = self.remote_dir, None
            try:
                self.client.remove(remote)
            except RunnerError as exc:  # cleanup must not hide the error that brought us here
                self.notes += (f"could not remove {remote} on the device: {exc}",)
