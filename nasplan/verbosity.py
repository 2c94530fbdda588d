"""How much a command says: ``-q`` (errors and the report path), default, ``-v`` (each remote
command whole, redacted, with its host; a long script's first lines), ``-vv`` (also each
command's exit status and duration), ``-vvv`` (every script whole).

One value, ``Verbosity``, passed explicitly from the command line to whoever prints; the
commands themselves are seen through ``TracedRunner``, a ``Runner`` around the real one.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasplan.errors import InputError
from nasplan.remote.runner import Launched, Result, Runner
from nasplan.remote.shell import HostShell

if TYPE_CHECKING:
    from nasplan.input.inventory import Host

QUIET, NORMAL, COMMANDS, TIMINGS, SCRIPTS = -1, 0, 1, 2, 3
# A script longer than this is shown by its first lines below -vvv (a facts script is pages
# long); a command or a shorter script is shown whole, each of its lines on a line of its own.
SCRIPT_LINES = 12


@dataclass(frozen=True)
class Verbosity:
    """``level``: QUIET (-q), NORMAL, COMMANDS (-v), TIMINGS (-vv), SCRIPTS (-vvv and more)."""

    level: int = NORMAL

    @classmethod
    def from_flags(cls, verbose: int, quiet: bool) -> Verbosity:
        """``-v`` counted and ``-q``; both at once is a usage error (InputError)."""
        if verbose and quiet:
            raise InputError("-q and -v together: choose one")
        return cls(QUIET if quiet else min(verbose, SCRIPTS))

    @property
    def quiet(self) -> bool:
        return self.level <= QUIET

    def traced(
        self,
        connector: Callable[[Host], Runner],
        say: Callable[[str], None],
        secrets: Sequence[str] = (),
    ) -> Callable[[Host], Runner]:
        """``connector`` whose runners log each command through ``say`` (at -v and above),
        redacted with ``secrets`` (a live list: secrets learned later are masked too)."""
        if self.level < COMMANDS:
            return connector

        def one(host: Host) -> Runner:
            runner = connector(host)
            from nasplan.remote.ssh import (
                jump_route,  # a runner that connected: ssh is loaded already
            )

            route = jump_route(runner)
            if route:
                say(f"{host.name}: connected {route}")
            return TracedRunner(runner, Trace(host.name, self.level, say, secrets))

        return one


@dataclass(frozen=True)
class Trace:
    """Where one host's command lines go, and how much of them."""

    host: str
    level: int
    say: Callable[[str], None]
    secrets: Sequence[str] = ()

    def lines(self, command: str) -> list[str]:
        """The command redacted, its lines as they are (blank ones dropped); a script longer
        than SCRIPT_LINES cut to its first ones below -vvv, saying how many more there are."""
        from nasplan.output import redactor_of  # the same masking as every file nasplan writes

        lines = [x.rstrip() for x in redactor_of(self.secrets).text(command).splitlines()]
        lines = [x for x in lines if x.strip()]
        if self.level < SCRIPTS and len(lines) > SCRIPT_LINES:
            more = len(lines) - SCRIPT_LINES
            lines = [*lines[:SCRIPT_LINES], f"... ({more} more lines of this script: -vvv)"]
        return lines or [""]

    def started(self, command: str) -> str:
        """``nas: $ iperf3 -s``, a script's further lines under it (``nas:   ...``): said as the
        command starts (a long one is seen running); its first line returned."""
        first, *rest = self.lines(command)
        self.say(f"{self.host}: $ {first}")
        for line in rest:
            self.say(f"{self.host}:   {line}")
        return first

    def ended(self, line: str, exited: int | None, started_s: float, what: str = "") -> None:
        """At -vv: ``nas: exit 0 after 0.12 s: iperf3 -s`` (None: the host did not answer)."""
        if self.level < TIMINGS:
            return
        took = f"after {time.monotonic() - started_s:.2f} s"
        status = what or ("no answer" if exited is None else f"exit {exited}")
        short = line if len(line) <= 60 else f"{line[:57]}..."
        self.say(f"{self.host}: {status} {took}: {short}")


def _shown(script: str, sudo: bool) -> str:
    return f"sudo {script}" if sudo else script


class TracedRunner:
    """A ``Runner`` that says each command before it runs (and, at -vv, how it ended), then
    hands it to the runner it wraps; everything else is the wrapped runner's."""

    def __init__(self, inner: Runner, trace: Trace) -> None:
        self.inner = inner
        self.trace = trace
        self.name = inner.name

    @property
    def lost(self) -> str | None:
        return self.inner.lost

    @property
    def host_shell(self) -> HostShell:
        return self.inner.host_shell

    def use_shell(self, host_shell: HostShell) -> None:
        self.inner.use_shell(host_shell)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        line, started = self.trace.started(_shown(shlex.join(argv), sudo)), time.monotonic()
        result = self.inner.run(argv, timeout_s=timeout_s, stdin=stdin, sudo=sudo)
        self.trace.ended(line, result.exited, started)
        return result

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        line, started = self.trace.started(_shown(script, sudo)), time.monotonic()
        result = self.inner.run_script(script, timeout_s=timeout_s, stdin=stdin, sudo=sudo)
        self.trace.ended(line, result.exited, started)
        return result

    def try_script(self, script: str, *, timeout_s: float) -> Result | None:
        line, started = self.trace.started(script), time.monotonic()
        result = self.inner.try_script(script, timeout_s=timeout_s)
        self.trace.ended(line, None if result is None else result.exited, started)
        return result

    def start_until(
        self, script: str, markers: Sequence[str], *, timeout_s: float
    ) -> Launched | None:
        line, started = self.trace.started(script), time.monotonic()
        launched = self.inner.start_until(script, markers, timeout_s=timeout_s)
        if launched is not None:
            ended = launched.ended
            what = "left running" if ended is None else f"exit {ended.exited}"
            self.trace.ended(line, None, started, what)
        return launched

    def close(self) -> None:
        self.inner.close()

    def host_key(self) -> str | None:
        return self.inner.host_key()
