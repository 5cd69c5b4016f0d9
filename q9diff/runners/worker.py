"""The run worker: a process that loads context binaries into Qualcomm's HTP backend and runs graphs.

Qualcomm's libraries can crash (a weight-shared binary segfaults the x86 emulator), so they never run
inside q9diff: `python -m q9diff.runners.worker` runs them, here as a child process (`local` runner)
or on an EVK behind `ssh` (the same program as the remote command), and speaks one framed protocol
over its stdin/stdout:

    frame  = b"Q9W1" | u32 json length | u64 payload length | JSON | payload (an .npz, no pickles)
    request  {"op": "load", "binaries": [path, ...]}   -> {"ok": true, "graphs": [GraphSpec, ...]}
             {"op": "run", "graph": i} + npz inputs     -> {"ok": true} + npz outputs
             {"op": "bye"}                              -> {"ok": true}, then the worker exits
    any failure                                         -> {"ok": false, "error": "one line"}

Each graph runs through ONNX Runtime's QNN EP from an EPContext model that q9diff writes around the
binary (`embed_mode=0`, node named after the QNN graph), which is how ONNX Runtime loads a context
binary it did not compile itself.
"""

from __future__ import annotations

import io
import json
import os
import select
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from q9diff.guard import package_root
from q9diff.runners.base import GraphSpec, RunnerError, graph_specs
from q9diff.runners.wrapper import epcontext_model

MAGIC = b"Q9W1"
_HEAD = struct.Struct("<4sIQ")
MAX_JSON = 64 << 20  # a longer header is a corrupt stream, not a request
MAX_PAYLOAD = 64 << 30
_CHUNK = 16 << 20


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    if not arrays:
        return b""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _unnpz(data: bytes) -> dict[str, np.ndarray]:
    if not data:
        return {}
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def encode(message: dict, arrays: dict[str, np.ndarray] | None = None) -> bytes:
    body = json.dumps(message).encode()
    payload = _npz(arrays or {})
    return _HEAD.pack(MAGIC, len(body), len(payload)) + body + payload


class _Reader:
    """Reads whole frames from a file descriptor, with a deadline, without trusting the lengths."""

    def __init__(self, fd: int, what: str) -> None:
        self.fd, self.what = fd, what

    def _exact(self, n: int, deadline: float | None) -> bytes:
        parts, left = [], n
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([self.fd], [], [], wait)[0]:
                    raise TimeoutError(f"{self.what}: no answer in time")
            chunk = os.read(self.fd, min(left, _CHUNK))
            if not chunk:
                raise EOFError(f"{self.what}: stream ended")
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def frame(self, deadline: float | None = None) -> tuple[dict, dict[str, np.ndarray]]:
        magic, n_json, n_payload = _HEAD.unpack(self._exact(_HEAD.size, deadline))
        if magic != MAGIC or n_json > MAX_JSON or n_payload > MAX_PAYLOAD:
            raise RunnerError(f"{self.what}: expected a q9diff worker frame, got {magic!r}")
        message = json.loads(self._exact(n_json, deadline))
        return message, _unnpz(self._exact(n_payload, deadline))


class WorkerClient:
    """Talks to a worker started with `argv` (a local child, or `ssh … python -m q9diff.runners.worker`)."""

    def __init__(self, argv: list[str], what: str, env: dict | None = None, timeout_s: float = 600) -> None:
        self.what, self.timeout_s = what, timeout_s
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                cwd=package_root(),
            )  # fmt: skip
        except FileNotFoundError:
            raise RunnerError(f"{what}: cannot start {argv[0]}") from None
        self._reader = _Reader(self.proc.stdout.fileno(), what)

    def request(
        self, message: dict, arrays: dict[str, np.ndarray] | None = None
    ) -> tuple[dict, dict[str, np.ndarray]]:
        try:
            self.proc.stdin.write(encode(message, arrays))
            self.proc.stdin.flush()
            reply, out = self._reader.frame(time.monotonic() + self.timeout_s)
        except (BrokenPipeError, EOFError):
            raise RunnerError(self._death()) from None
        except TimeoutError:
            self.proc.kill()
            raise RunnerError(f"{self.what}: no answer within {self.timeout_s:.0f} s; stopped it") from None
        if not reply.get("ok"):
            raise RunnerError(f"{self.what}: {reply.get('error', 'failed')}")
        return reply, out

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        how = f"crashed (signal {-code})" if code < 0 else f"exited with status {code}"
        return f"{self.what} {how}" + (f": {self.last_error()}" if self.last_error() else "")

    def last_error(self) -> str:
        """The worker's last meaningful stderr line (Qualcomm's library banners left out)."""
        self._stderr.seek(0)
        lines = [
            ln.strip()
            for ln in self._stderr.read().decode(errors="replace").splitlines()
            if ln.strip() and "LIBNATIVE" not in ln
        ]
        return lines[-1][:300] if lines else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(encode({"op": "bye"}))
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


class WorkerSession:
    """A Session whose graphs run in a q9diff worker: a local child, or a remote one over ssh."""

    graphs: tuple[GraphSpec, ...] = ()
    notes: tuple[str, ...] = ()
    _client: WorkerClient | None = None

    def run(self, graph: GraphSpec, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        index = self.graphs.index(graph)
        feeds = {t.name: np.ascontiguousarray(inputs[t.name], dtype=t.dtype) for t in graph.inputs}
        _, out = self._client.request({"op": "run", "graph": index}, feeds)
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


# ---- worker side: runs in the child, imports ONNX Runtime only here ----

EP_NAME = "QNNExecutionProvider"


class _Worker:
    def __init__(self, work: Path) -> None:
        import onnxruntime as ort

        if hasattr(ort, "disable_telemetry_events"):  # besides the parent's ORT_DISABLE_TELEMETRY=1
            ort.disable_telemetry_events()
        ort.set_default_logger_severity(3)
        self.ort = ort
        self.dir = work
        self.graphs: list[GraphSpec] = []
        self.sessions: list = []
        self.devices = None

    def _provider(self, so) -> None:
        import onnxruntime_qnn as oq

        ort = self.ort
        if hasattr(ort, "register_execution_provider_library") and hasattr(oq, "get_library_path"):
            if self.devices is None:
                ort.register_execution_provider_library(EP_NAME, oq.get_library_path())
                devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
                npu = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.NPU]
                self.devices = (npu or devices)[:1]
            so.add_provider_for_devices(self.devices, {"backend_type": "htp"})
            return None
        return [(EP_NAME, {"backend_type": "htp", "backend_path": oq.get_qnn_htp_path()})]

    def load(self, binaries: list[str]) -> list[dict]:
        for part, binary in enumerate(binaries):
            link = f"b{part}.bin"
            (self.dir / link).symlink_to(Path(binary).resolve())
            specs = graph_specs(Path(binary), part)
            for i, spec in enumerate(specs):
                wrapper = self.dir / f"b{part}_g{i}.onnx"
                wrapper.write_bytes(epcontext_model(spec, link, i == 0, EP_NAME))
                so = self.ort.SessionOptions()
                so.log_severity_level = 3
                # only the QNN EP runs an EPContext node; said anyway, so no graph ever runs on the CPU
                so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
                if len(specs) > 1:
                    so.add_session_config_entry("ep.share_ep_contexts", "1")
                providers = self._provider(so)
                session = self.ort.InferenceSession(str(wrapper), so, providers=providers)
                self.graphs.append(spec)
                self.sessions.append(session)
        return [g.to_dict() for g in self.graphs]

    def run(self, index: int, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not 0 <= index < len(self.sessions):
            raise ValueError(f"no graph {index}; {len(self.sessions)} loaded")
        spec = self.graphs[index]
        outputs = self.sessions[index].run([t.name for t in spec.outputs], inputs)
        return dict(zip([t.name for t in spec.outputs], outputs, strict=True))


def serve(stdin_fd: int, stdout, work: Path) -> None:
    """Answer requests until `bye` or the end of stdin; wrappers and links go to `work`."""
    reader = _Reader(stdin_fd, "q9diff worker")
    worker = None
    while True:
        try:
            message, arrays = reader.frame()
        except EOFError:
            return
        op, reply, out = message.get("op"), {"ok": True}, {}
        try:
            if op == "bye":
                stdout.write(encode(reply))
                stdout.flush()
                return
            if worker is None:
                worker = _Worker(work)
            if op == "load":
                reply["graphs"] = worker.load(list(message["binaries"]))
            elif op == "run":
                out = worker.run(int(message["graph"]), arrays)
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as exc:  # every failure goes back to the client as one line
            reply, out = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500]}, {}
        stdout.write(encode(reply, out))
        stdout.flush()


def main(argv: list[str] | None = None) -> None:
    """`python -m q9diff.runners.worker [--work DIR]`: DIR (made if absent) is the parent's to remove,
    so that it goes even when Qualcomm's library kills this process; without it, a temporary folder
    this process removes when it ends normally."""
    argv = sys.argv[1:] if argv is None else argv
    # Qualcomm's libraries print to fd 1; the protocol owns it, so their output goes to stderr.
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if argv[:1] == ["--work"] and len(argv) == 2:
        work = Path(argv[1])
        work.mkdir(parents=True, exist_ok=True)
        serve(0, protocol, work)
        # Every reply is out and `work` is the parent's to remove: the process ends without tearing
        # down its sessions and the interpreter one by one (0.14-0.19 s a child, measured, which the
        # parent waits for before it removes `work`), for memory the exit returns anyway.
        sys.stderr.flush()
        os._exit(0)
    with tempfile.TemporaryDirectory(prefix="q9diff-worker-") as tmp:
        serve(0, protocol, Path(tmp))


if __name__ == "__main__":
    main()
