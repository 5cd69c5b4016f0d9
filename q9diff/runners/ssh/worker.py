"""q9diff's own worker (`python -m q9diff.runners.worker`, onnxruntime-qnn on the device) over the
ssh channel, with the same framed protocol as the local runner."""

from __future__ import annotations

from pathlib import Path

from q9diff.guard import python_argv
from q9diff.runners.base import RunnerError
from q9diff.runners.ssh.client import QairtPaths, SshClient, SshSession, remote_command
from q9diff.runners.worker import WorkerClient, WorkerSession


class SshWorkerSession(WorkerSession, SshSession):
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
        SshSession.close(self)
