"""The contract every command runner meets (SSH to a host, or the local machine in tests)."""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Protocol, runtime_checkable

from nasplan.errors import NasplanError
from nasplan.remote.shell import POSIX, HostShell
from nasplan.units import format_seconds


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


def _let_go() -> None:
    """Nothing left to let go of (a command that has ended)."""


@dataclass(frozen=True)
class Launched:
    """A command started and left running once its output said it was ready (``start_until``).

    ``output``: its standard output up to and with the ready markers (all of it if it ended).
    ``ended``: None while it runs on; else how it ended before them (124: timed out).
    ``close``: let go of it (its SSH channel, its pipes) once it has ended: while it runs, its
    output still has somewhere to go. ``ended_within(seconds)``: wait up to that long for it to
    end; whether it did (None: the runner cannot tell). ``read()``: what it printed on standard
    output since ``output`` or the last read, without waiting ("": nothing new; None once its
    output ended or it was let go of); None: the runner cannot read it on. It may be read from
    another thread than the one that closes it.
    """

    output: str
    ended: Result | None
    close: Callable[[], None] = _let_go
    ended_within: Callable[[float], bool] | None = None
    read: Callable[[], str | None] | None = None


@runtime_checkable
class Runner(Protocol):
    """Runs commands on one host. ``argv`` is quoted by the host's shell; ``script`` is shell
    text in the host's script language (POSIX sh; PowerShell on Windows).

    ``sudo=True`` runs it as root (through sudo when the login user is not root);
    ``stdin`` is fed to the command's standard input (never put secrets in argv).
    ``RunnerBase`` gives every member but ``run`` and ``run_script`` a default.
    """

    name: str

    @property
    def lost(self) -> str | None:
        """Why the host stopped answering (its later commands fail at once); None while it
        answers."""
        ...

    @property
    def host_shell(self) -> HostShell:
        """The shell the host speaks (``shell.POSIX`` until ``use_shell`` said otherwise)."""
        ...

    def use_shell(self, host_shell: HostShell) -> None:
        """Speak ``host_shell`` from now on (set once the facts show a Windows host).

        Raises NasplanError when this runner cannot speak it.
        """
        ...

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

    def try_script(self, script: str, *, timeout_s: float) -> Result | None:
        """``script`` as the login user; None when the host did not answer within ``timeout_s``,
        without marking it lost (a lease renewal during a short link outage must not end the
        run)."""
        ...

    def start_until(
        self, script: str, markers: Sequence[str], *, timeout_s: float
    ) -> Launched | None:
        """Start ``script`` (POSIX sh, as the login user) and return once its standard output
        holds every one of ``markers``, the command left running (``Launched.close``); or once
        it ended or ``timeout_s`` passed without them (``Launched.ended``). None: this runner
        cannot leave a command running, the caller starts it another way."""
        ...

    def close(self) -> None:
        """Let go of what the runner holds (its connection: commands after it fail)."""
        ...

    def host_key(self) -> str | None:
        """The host's public key this connection checked against known_hosts, as a known_hosts
        line's key part (``ssh-ed25519 AAAA...``); None: no SSH (this machine, a test double)."""
        ...


class RunnerBase(Runner):
    """The defaults of a runner that speaks only POSIX sh, never loses its host and holds
    nothing open: a subclass sets ``name`` and writes ``run`` and ``run_script``."""

    lost: str | None = None
    host_shell: HostShell = POSIX

    def use_shell(self, host_shell: HostShell) -> None:
        if host_shell.is_windows:
            raise NasplanError(f"{self.name}: a Windows host, and this runner speaks only POSIX sh")
        self.host_shell = host_shell

    def try_script(self, script: str, *, timeout_s: float) -> Result | None:
        return self.run_script(script, timeout_s=timeout_s)

    def start_until(
        self, script: str, markers: Sequence[str], *, timeout_s: float
    ) -> Launched | None:
        return None

    def close(self) -> None:
        """Nothing to let go of."""

    def host_key(self) -> str | None:
        """No SSH, no host key."""
        return None


class LocalRunner(RunnerBase):
    """Runs commands on this machine: tests, the control node's own checks, and (through
    ``nasplan.remote.local``) an inventory's ``connection: local`` host.

    Each command runs in a session of its own (a Ctrl-C at the terminal reaches nasplan, not
    what it runs: nasplan stops them itself), with /dev/null as input unless given some. A
    command that outlives its timeout is killed with its whole process group (124). ``close``
    kills, by their process group, the commands that still run: those ``start_until`` left
    running, and any another thread is still waiting for.
    ``netns``: run everything in that network namespace (``ip netns exec``).
    """

    # None: a command without ``timeout_s`` may run for as long as it takes
    default_timeout_s: float | None = None

    def __init__(self, name: str = "local", netns: str | None = None) -> None:
        self.name = name
        self.netns = netns
        # what this runner started and may still run (start_until's, commands in progress)
        self._launched: list[subprocess.Popen[bytes]] = []
        self._running: set[subprocess.Popen[bytes]] = set()
        self._launched_lock = threading.Lock()
        # a launched command's pipes are read (``Launched.read``) and closed under it: a
        # closed pipe's descriptor may be reused at once, and must not be read then
        self._pipes_lock = threading.Lock()

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
        return self._exec(list(argv), shlex.join(argv), timeout_s, stdin)

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        return self._exec(["sh", "-c", script], script, timeout_s, stdin)

    def start_until(self, script: str, markers: Sequence[str], *, timeout_s: float) -> Launched:
        """Start ``script`` (sh) and return once its standard output holds every one of
        ``markers``, or once it ended or ``timeout_s`` passed without them (``Launched.ended``).
        """
        proc = subprocess.Popen(
            [*self._prefix(), "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        with self._launched_lock:  # those that ended are let go of (reaped) here
            self._launched = [p for p in self._launched if p.poll() is None] + [proc]
        assert proc.stdout is not None and proc.stderr is not None
        pipes = (proc.stdout, proc.stderr)

        def close() -> None:
            with self._pipes_lock:
                for pipe in pipes:
                    pipe.close()
            proc.poll()

        out = bytearray()
        deadline = time.monotonic() + timeout_s
        wanted = [marker.encode() for marker in markers]
        while not all(marker in out for marker in wanted):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                text = out.decode(errors="replace")
                return Launched(
                    text,
                    Result(script, text, f"timed out after {format_seconds(timeout_s)}", 124),
                    close,
                )
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                err = proc.stderr.read().decode(errors="replace")
                text = out.decode(errors="replace")
                close()
                return Launched(text, Result(script, text, err, proc.wait()))
            out += chunk

        def ended_within(seconds: float) -> bool:
            try:
                proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                return False
            return True

        def read() -> str | None:
            with self._pipes_lock:
                return _read_ready(proc.stdout)

        return Launched(out.decode(errors="replace"), None, close, ended_within, read)

    def close(self) -> None:
        """Kill what this runner started that still runs (each command's process group)."""
        with self._launched_lock:
            launched, self._launched = self._launched, []
            running = list(self._running)
        for proc in running:  # its caller's thread reads its end and closes its pipes
            _kill_group(proc)
        for proc in launched:
            if proc.poll() is None:
                _kill_group(proc)
            with self._pipes_lock:
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()

    def _exec(
        self, command: list[str], shown: str, timeout_s: float | None, stdin: str | None
    ) -> Result:
        limit_s = timeout_s if timeout_s is not None else self.default_timeout_s
        proc = subprocess.Popen(
            [*self._prefix(), *command],
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        with self._launched_lock:
            self._running.add(proc)
        try:
            out, err = proc.communicate(None if stdin is None else stdin.encode(), limit_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                out, _ = proc.communicate(timeout=_REAPED_S)
            except subprocess.TimeoutExpired:  # a detached child still holds its output open
                out = b""
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
            return Result(
                shown,
                out.decode(errors="replace"),
                f"timed out after {format_seconds(limit_s)}",
                124,
            )
        finally:
            with self._launched_lock:
                self._running.discard(proc)
        return Result(
            shown, out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode
        )


def _read_ready(pipe: IO[bytes] | None) -> str | None:
    """What ``pipe`` holds now, without waiting ("": nothing); None once it ended or closed."""
    if pipe is None or pipe.closed:
        return None
    got = bytearray()
    try:
        while select.select([pipe], [], [], 0)[0]:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                pipe.close()  # its end: the next read says so
                break
            got += chunk
    except (OSError, ValueError):
        return None
    return got.decode(errors="replace")


# How long a killed command's output may take to end (its pipes closed by its last process).
_REAPED_S = 5.0


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process group ``proc`` leads (started with ``start_new_session``)."""
    try:  # the group outlives its leader while a member runs: its id is not reused meanwhile
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # ended meanwhile
        return
    except PermissionError:  # a member became another user's (sudo): its leader at least
        proc.kill()
    proc.wait()
