"""The runners by name: `local` or `ssh://user@host[:port]`."""

from __future__ import annotations

from q9diff.runners.base import Runner, RunnerUnavailable


def runner(spec: str) -> Runner:
    """A session runner by name: `local` or `ssh://user@host[:port]` (see q9diff.runners.ssh)."""
    if spec == "local":
        from q9diff.runners.local import LocalRunner  # start-up: runners.local

        return LocalRunner()
    if spec.startswith("ssh://"):
        from q9diff.runners.ssh.runner import SshRunner  # start-up: runners.ssh.runner

        return SshRunner.from_url(spec)
    raise RunnerUnavailable(f"unknown runner {spec!r}; choose local, genie or ssh://user@host[:port]")
