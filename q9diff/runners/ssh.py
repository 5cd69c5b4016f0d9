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

import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import numpy as np

from q9diff.guard import python_argv
from q9diff.runners import GraphSpec, RunnerError, RunnerUnavailable, TensorSpec, graph_specs
from q9diff.runners.worker import WorkerClient, WorkerSession

Tool = Literal["q9diff", "qnn-net-run"]
TOOLS: tuple[str, ...] = ("q9diff", "qnn-net-run")
REMOTE_PREFIX = "q9diff-ssh."
GENIE_TOKENS_FILE = "tokens.txt"
SKIP_GRAPH = "__"  # qnn-net-run: "to skip execution of a graph use __ as the file name"


# ---- where: the target ----


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


# ---- how: the OpenSSH client ----


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


# ---- what: the remote QAIRT SDK and its tools' formats ----


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
    """One POSIX shell string that runs argv in cwd with env (sshd forwards no environment)."""
    words = [shlex.quote(a) for a in argv]
    if env:
        words = ["env", *[shlex.quote(f"{k}={v}") for k, v in env.items()], *words]
    line = "exec " + " ".join(words)
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line


def native_raw(spec: TensorSpec, value: np.ndarray) -> bytes:
    """An input buffer as qnn-net-run reads it with --use_native_input_files: the graph's dtype, C order."""
    value = np.asarray(value)
    if value.size != int(np.prod(spec.shape, dtype=np.int64)):
        raise RunnerError(f"input {spec.name}: {value.size} values given, the graph takes shape {spec.shape}")
    return np.ascontiguousarray(value, dtype=spec.dtype).tobytes(order="C")


def input_list_line(files: list[tuple[str, str]]) -> str:
    """One inference's line of a qnn-net-run input list: `name:=path name:=path ...`."""
    for name, path in files:
        if any(c.isspace() for c in name + path) or ":=" in name:
            raise RunnerError(f"input {name!r} at {path!r}: an input list line cannot hold spaces or ':='")
    return " ".join(f"{name}:={path}" for name, path in files)


def input_list_arg(list_file: str, graph_index: int, graph_count: int) -> str:
    """--input_list for one graph of a context: that graph's list, `__` (skip) for every other graph."""
    if not 0 <= graph_index < graph_count:
        raise RunnerError(f"graph {graph_index} of a context with {graph_count} graphs")
    if graph_count == 1:
        return list_file
    return ",".join(list_file if i == graph_index else SKIP_GRAPH for i in range(graph_count))


def net_run_argv(
    qairt: QairtPaths, context: str, input_list: str, output_dir: str, extra: tuple[str, ...] = ()
) -> list[str]:
    """qnn-net-run on a context binary with native input and output files."""
    return [qairt.tool("qnn-net-run"), "--backend", qairt.backend, "--retrieve_context", context,
            "--input_list", input_list, "--use_native_input_files", "--use_native_output_files",
            "--output_dir", output_dir, *extra]  # fmt: skip


def file_safe(name: str) -> str:
    """A tensor name with each character outside [A-Za-z0-9_.-] replaced by '_'."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)


def output_files(output_dir: Path, graph: GraphSpec, inference: int = 0) -> dict[str, Path]:
    """Where qnn-net-run wrote each output of `graph` for one inference (see the module docstring).
    Graph and tensor names come from the binary: a candidate that resolves outside `output_dir` (an
    absolute name, `..`, a symlink) is never read."""
    from q9diff.guard import inside

    dirs = [output_dir / f"Result_{inference}", output_dir / graph.name / f"Result_{inference}"]
    found = {}
    for t in graph.outputs:
        names = dict.fromkeys([t.name, file_safe(t.name)])
        hits = [
            d / f"{n}.raw"
            for d in dirs
            for n in names
            if inside((d / f"{n}.raw").resolve(), output_dir) and (d / f"{n}.raw").is_file()
        ]
        if len(hits) > 1:
            raise RunnerError(f"output {t.name}: several candidate files {[str(h) for h in hits]}")
        if not hits:
            present = sorted(str(p.relative_to(output_dir)) for p in output_dir.rglob("*.raw"))[:8]
            raise RunnerError(f"qnn-net-run wrote no file for output {t.name} (raw files there: {present})")
        found[t.name] = hits[0]
    return found


def read_outputs(output_dir: Path, graph: GraphSpec, inference: int = 0) -> dict[str, np.ndarray]:
    """The outputs of one inference as the graph's own buffers (dtype and shape from its TensorSpec)."""
    out = {}
    for name, path in output_files(output_dir, graph, inference).items():
        spec = graph.output(name)
        data = path.read_bytes()
        dtype = np.dtype(spec.dtype)
        want = int(np.prod(spec.shape, dtype=np.int64)) * dtype.itemsize
        if len(data) != want:
            raise RunnerError(
                f"{path.name}: {len(data)} bytes, expected {want} ({spec.dtype} {spec.shape}); "
                "was it written without --use_native_output_files (float32)?"
            )
        out[name] = np.frombuffer(data, dtype=dtype).reshape(spec.shape).copy()
    return out


def genie_t2t_run_argv(
    qairt: QairtPaths,
    config: str,
    *,
    prompt: str | None = None,
    prompt_file: str | None = None,
    tokens_file: str | None = None,
    profile: str | None = None,
) -> list[str]:
    """genie-t2t-run with exactly one of --prompt, --prompt_file, --tokens_file (the tool's own rule)."""
    given = [(flag, v) for flag, v in (("--prompt", prompt), ("--prompt_file", prompt_file),
                                       ("--tokens_file", tokens_file)) if v is not None]  # fmt: skip
    if len(given) != 1:
        raise RunnerError("genie-t2t-run takes exactly one of prompt, prompt_file, tokens_file")
    argv = [qairt.tool("genie-t2t-run"), "--config", config, *given[0]]
    return argv + (["--profile", profile] if profile else [])


def tokens_file_text(token_ids: list[int]) -> str:
    """A --tokens_file: the token ids separated by spaces (token-to-token queries, basic dialogs only)."""
    return " ".join(str(int(t)) for t in token_ids) + "\n"


@dataclass(frozen=True)
class GenieKpis:
    """The `[KPIS]:` block genie-t2t-run prints after a query; times in microseconds, rates in tokens/s."""

    init_time_us: int | None = None
    prompt_processing_time_us: int | None = None
    prompt_processing_rate: float | None = None
    token_generation_time_us: int | None = None
    token_generation_rate: float | None = None


@dataclass(frozen=True)
class GenieOutput:
    """What genie-t2t-run answered: the prompt it echoed, the generated text, its KPIs, its version;
    for a token query (`[PROMPT TOKENS]:`) the answer's token ids, and what the runner noted."""

    text: str
    prompt: str | None
    kpis: GenieKpis
    genie_version: str | None
    tokens: tuple[int, ...] | None = None  # None: a text query, whose answer is text
    notes: tuple[str, ...] = ()


_TOKEN_ID = re.compile(r"[0-9]{1,10}")  # GenieDialog token ids are uint32; ASCII digits only
_KPI_PATTERNS = {
    "init_time_us": r"Init Time\s*:\s*(\d+)\s*us",
    "prompt_processing_time_us": r"Prompt Processing Time\s*:\s*(\d+)\s*us",
    "prompt_processing_rate": r"Prompt Processing Rate\s*:\s*([\d.]+)\s*toks/sec",
    "token_generation_time_us": r"Token Generation Time\s*:\s*(\d+)\s*us",
    "token_generation_rate": r"Token Generation Rate\s*:\s*([\d.]+)\s*toks/sec",
}


def parse_genie_output(stdout: str) -> GenieOutput:
    """Read genie-t2t-run's stdout: `[PROMPT]: …` (or `[PROMPT TOKENS]: …`), `[BEGIN]: … [END]`, then
    an optional `[KPIS]:` block."""
    begin = stdout.find("[BEGIN]:")
    end = stdout.find("[END]", begin + 1)
    if begin < 0 or end < 0:
        last = next((ln.strip() for ln in reversed(stdout.splitlines()) if ln.strip()), "no output")
        raise RunnerError(f"genie-t2t-run gave no [BEGIN]: … [END] answer: {last[:300]}")
    text = stdout[begin + len("[BEGIN]:") : end].strip()
    token_query = "[PROMPT TOKENS]:" in stdout[:begin]
    marker = "[PROMPT TOKENS]:" if token_query else "[PROMPT]:"
    prompt_at = stdout.find(marker)
    prompt = stdout[prompt_at + len(marker) : begin].strip() if 0 <= prompt_at < begin else None
    tokens = None
    if token_query:
        if not all(_TOKEN_ID.fullmatch(word) and int(word) < 1 << 32 for word in text.split()):
            raise RunnerError(f"genie-t2t-run answered a token query with {text[:100]!r}, not token ids")
        tokens = tuple(int(word) for word in text.split())
    tail = stdout[end:]
    values: dict[str, float | int] = {}
    if "[KPIS]:" in tail:
        for field, pattern in _KPI_PATTERNS.items():
            m = re.search(pattern, tail)
            if m:
                values[field] = float(m.group(1)) if "rate" in field else int(m.group(1))
    version = re.search(r"Using libGenie\.so version (\S+)", stdout[:begin])
    return GenieOutput(text, prompt, GenieKpis(**values), version.group(1) if version else None, tokens)


def stage_genie_bundle(bundle: Path, stage: Path, prompt_ids: list[int], steps: int) -> list[str]:
    """Lay out in `stage` what genie-t2t-run needs on the device, so that one push carries it: each file
    the bundle's config names (a symlink under a flat, unique name), a patched genie_config.json naming
    them relative to the directory genie-t2t-run runs in, and the tokens file. Returns what was changed."""
    from q9diff.runners.genie import CONFIG_NAME, GenieError, write_patched_config

    bundle = bundle.parent if bundle.is_file() else bundle
    if not prompt_ids or steps < 1:
        raise RunnerError("a Genie run needs at least one prompt token and one step")
    names: dict[Path, str] = {}

    def place(local: Path) -> str:
        if local not in names:
            if not local.is_file():
                raise RunnerError(f"{bundle / CONFIG_NAME} names {local}, which does not exist")
            names[local] = f"{len(names)}_{local.name}"
            (stage / names[local]).symlink_to(local)
        return names[local]

    try:
        _, notes, _ = write_patched_config(bundle, stage, None, place=place, max_num_tokens=steps)
    except (GenieError, OSError, ValueError) as exc:
        raise RunnerError(f"{bundle}: {exc}") from None
    (stage / GENIE_TOKENS_FILE).write_text(tokens_file_text(prompt_ids))
    return notes


# ---- sessions ----


def _remote_name(i: int, binary: Path) -> str:
    return f"{i}_{binary.name}"


class _SshSession:
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


class SshWorkerSession(WorkerSession, _SshSession):
    """q9diff's own worker on the device, over the ssh channel: the local runner's protocol, remotely."""

    def __init__(self, client: SshClient, binaries: list[Path], remote_base: str | None, remote_python: str,
                 remote_pythonpath: str | None, qairt: QairtPaths) -> None:  # fmt: skip
        self._client: WorkerClient | None = None
        try:
            super().__init__(client, binaries, remote_base)
            # Isolated as locally: the remote directory holds files from the bundle, never modules.
            paths = [p for p in (remote_pythonpath or "").split(":") if p.startswith("/")]
            # Its folder inside the remote directory, so the cleanup of that removes it even after a crash.
            work = ["--work", f"{self.remote_dir}/worker"]
            argv = python_argv("q9diff.runners.worker", work, remote_python, paths)
            command = remote_command(argv, self.remote_dir, qairt.env())
            self._client = WorkerClient(client.ssh_argv(command), f"q9diff worker on {client.target}",
                                        None, client.timeout_s)  # fmt: skip
            reply, _ = self._client.request({"op": "load", "binaries": self.remote_binaries})
            if len(reply["graphs"]) != len(self.graphs):
                raise RunnerError(
                    f"{client.target}: the remote worker found {len(reply['graphs'])} graphs, "
                    f"q9diff's parser {len(self.graphs)}"
                )
            self.notes = (f"ran on {client.target} with q9diff's worker (onnxruntime-qnn on the device)",)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        WorkerSession.close(self)
        _SshSession.close(self)


class NetRunSession(_SshSession):
    """Qualcomm's qnn-net-run on the device: native raw inputs in, Result_0 raw outputs back."""

    def __init__(self, client: SshClient, binaries: list[Path], remote_base: str | None,
                 qairt: QairtPaths) -> None:  # fmt: skip
        self.qairt = qairt
        self._runs = 0
        try:
            super().__init__(client, binaries, remote_base)
            self.notes = (f"ran on {client.target} with qnn-net-run ({qairt.tool('qnn-net-run')})",)
        except BaseException:
            self.close()
            raise

    def run(self, graph: GraphSpec, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        specs = self._specs[graph.part]
        index = specs.index(graph)
        self._runs += 1
        run_name = f"run{self._runs}"
        remote_run = f"{self.remote_dir}/{run_name}"
        with tempfile.TemporaryDirectory(prefix="q9diff-netrun-") as tmp:
            local_run = Path(tmp) / run_name
            local_run.mkdir()
            files = []
            for j, t in enumerate(graph.inputs):
                (local_run / f"input_{j}.raw").write_bytes(native_raw(t, inputs[t.name]))
                files.append((t.name, f"{remote_run}/input_{j}.raw"))
            (local_run / "input_list.txt").write_text(input_list_line(files) + "\n")
            self.client.push([local_run], self.remote_dir)
            argv = net_run_argv(
                self.qairt,
                self.remote_binaries[graph.part],
                input_list_arg(f"{remote_run}/input_list.txt", index, len(specs)),
                f"{remote_run}/output",
            )
            self.client.run(remote_command(argv, remote_run, self.qairt.env()), "qnn-net-run")
            pulled = Path(tmp) / "pulled"
            pulled.mkdir()
            self.client.pull(f"{remote_run}/output", pulled)
            outputs = read_outputs(pulled / "output", graph)
        self.client.run(f"rm -rf -- {shlex.quote(remote_run)}", "cleanup")
        return outputs


# ---- the runner ----


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
