"""The contract every command runner meets (SSH to a host, or the local machine in tests)."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Result:
    """What a command did: its output and exit status, as plain values."""

    command: str
    stdout: str
    stderr: str
    exited: int

    @property
    def ok(self) -> bool:
        return self.exited == 0


class Runner(Protocol):
    """Runs one command on one host. ``argv`` is quoted with shlex; ``script`` is shell text.

    ``sudo=True`` runs it as root (through sudo when the login user is not root);
    ``stdin`` is fed to the command's standard input (never put secrets in argv).
    """

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result: ...

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result: ...


class LocalRunner:
    """Runs commands on this machine (tests, and the control node's own checks)."""

    def __init__(self, name: str = "local", netns: str | None = None) -> None:
        self.name = name
        self.netns = netns

    def _prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns] if self.netns else []

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        full = [*self._prefix(), *argv]
        return self._exec(full, shlex.join(argv), timeout_s, stdin)

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        full = [*self._prefix(), "sh", "-c", script]
        return self._exec(full, script, timeout_s, stdin)

    @staticmethod
    def _exec(full: list[str], shown: str, timeout_s: float | None, stdin: str | None) -> Result:
        try:
            proc = subprocess.run(
                full,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return Result(shown, out, f"timed out after {timeout_s} s", 124)
        return Result(shown, proc.stdout, proc.stderr, proc.returncode)
