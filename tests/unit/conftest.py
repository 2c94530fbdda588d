"""The one Runner double of the unit tests: it answers only what a test expects, loudly.

``fake_runner("nas")`` makes a ``FakeRunner``; ``.expect(fragment, stdout)`` queues the next
command it must see (in order), ``.allow(fragment, stdout)`` answers any number of commands
containing ``fragment`` (background work such as the resource sampler; its reply function may
return None to leave a command to the queue); ``stderr``, ``exited`` or ``reply`` (a Result, or
a function of the command's text) make other answers. Any other command
raises AssertionError and is remembered, so that a test fails even when the code under test
swallows the error; the fixture also fails when an expected command never came.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from nasplan.remote import shell
from nasplan.remote.runner import Result, RunnerBase

Reply = Result | Callable[[str], Result | None]


@dataclass
class Call:
    """One command the runner was given: its text (argv joined by spaces, or the script)."""

    text: str
    script: bool
    sudo: bool
    stdin: str | None


@dataclass
class FakeRunner(RunnerBase):
    """A ``nasplan.remote.runner.Runner`` that answers only the commands a test told it to expect.

    ``RunnerBase``'s defaults for the rest: it never loses its host, a lease renewal
    (``try_script``) is a command like any other, and it cannot leave a command running
    (``start_until``: None, so an iperf3 server is started the way older iperf3 is).
    """

    name: str = "fake"
    queue: list[tuple[str, Reply]] = field(default_factory=list)
    standing: list[tuple[str, Reply]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    # The shell the host speaks: POSIX, or (``use_shell``) a Windows host's PowerShell.
    host_shell: shell.HostShell = shell.POSIX

    def use_shell(self, host_shell: shell.HostShell) -> None:
        """Speak ``host_shell`` from now on, Windows too, as ``SshRunner.use_shell``."""
        self.host_shell = host_shell

    def expect(
        self,
        fragment: str,
        stdout: str = "",
        *,
        stderr: str = "",
        exited: int = 0,
        reply: Reply | None = None,
    ) -> FakeRunner:
        """The next queued command must contain ``fragment``; it gets this answer."""
        self.queue.append((fragment, reply or Result(fragment, stdout, stderr, exited)))
        return self

    def allow(self, fragment: str, stdout: str = "", **answer: Any) -> FakeRunner:
        """Any command containing ``fragment`` gets this answer (as ``expect``), every time."""
        self.expect(fragment, stdout, **answer)
        self.standing.append(self.queue.pop())
        return self

    def texts(self, fragment: str = "") -> list[str]:
        """The commands seen so far that contain ``fragment``."""
        return [call.text for call in self.calls if fragment in call.text]

    def _answer(self, call: Call) -> Result:
        self.calls.append(call)
        for fragment, reply in self.standing:
            if fragment in call.text:
                answer = reply(call.text) if callable(reply) else reply
                if answer is not None:
                    return answer
        if self.queue and self.queue[0][0] in call.text:
            _, reply = self.queue.pop(0)
            answer = reply(call.text) if callable(reply) else reply
            assert answer is not None, f"{self.name}: an expected command's reply gave nothing"
            return answer
        wanted = repr(self.queue[0][0]) if self.queue else "nothing more"
        self.unexpected.append(call.text)
        raise AssertionError(
            f"{self.name}: unexpected command (wanted {wanted}): {call.text[:300]}"
        )

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        return self._answer(Call(" ".join(argv), False, sudo, stdin))

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        return self._answer(Call(script, True, sudo, stdin))


@pytest.fixture()
def fake_runner() -> Iterator[Callable[[str], FakeRunner]]:
    """Make FakeRunners; at the end, fail on any unexpected command or any that never came."""
    made: list[FakeRunner] = []

    def make(name: str = "fake") -> FakeRunner:
        runner = FakeRunner(name)
        made.append(runner)
        return runner

    yield make
    for runner in made:
        assert not runner.unexpected, f"{runner.name} was given unexpected commands"
        assert not runner.queue, f"{runner.name} never got: {[f for f, _ in runner.queue]}"
