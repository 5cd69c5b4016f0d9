"""Qualcomm's `qnn-net-run --retrieve_context` on the device: native raw inputs, input lists, and
the `Result_<i>` outputs read back with the graph's own dtypes and shapes."""

from __future__ import annotations

import re
import shlex
import tempfile
from pathlib import Path

import numpy as np

from q9diff.guard import inside
from q9diff.runners.base import GraphSpec, RunnerError, TensorSpec
from q9diff.runners.ssh.client import QairtPaths, SshClient, SshSession, remote_command

SKIP_GRAPH = "__"  # qnn-net-run: "to skip execution of a graph use __ as the file name"


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


class NetRunSession(SshSession):
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
