"""A test's resource samplers (``nasplan.measure.sampler``) started and stopped beside its work.

Each ready host of a test has a ``HostSampler``: its loop's PID and, once stopped, what it saw.
Its start and stop are round trips of their own, handed to the run's ``Tasks`` so that they
overlap the test's own (an iperf3 server's start and stop); or, for the server's host
(``riding``), shell text inside the test's own scripts there (``start_text``/``started``,
``stop_text``/``stopped``), and for the client's host (``client``) inside its client's script
(``client_ride``/``client_rode``): no round trip of their own.

A ``HostSampler`` is used by one thread at a time, handed over explicitly: to a task by
``Tasks.start`` and back by ``Task.wait``; the riding host's to the test's teardown, which the
run waits for (``RunContext.settle``) before it reads ``Sampling.resources``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasplan import platforms
from nasplan.measure import sampler
from nasplan.measure.sampler import MAX_SAMPLING_S, SECTION, STARTED
from nasplan.remote.runner import Runner
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.tasks import Task, Tasks

Resources = dict[str, dict[str, Any] | None]


class HostSampler:
    """One host's sampler: ``pid`` once it runs, ``resources`` (sampler.parse(), None when
    sampling failed) once ``over`` (it failed to start, or was stopped)."""

    def __init__(self, runner: Runner, token: str, max_s: float) -> None:
        self.runner = runner
        self.token = token
        self.max_s = max_s
        self.pid: int | None = None
        self.asked = False  # its start went out (riding: its text was handed out)
        self.over = False
        self.resources: dict[str, Any] | None = None

    def start(self) -> None:
        """Start the loop in a round trip of its own (never raises)."""
        self.asked = True
        self.pid = sampler.start(self.runner, self.token, max_s=self.max_s)
        self.over = self.pid is None

    def stop(self) -> None:
        """Stop a loop still running, in a round trip of its own, and keep what it saw."""
        if self.pid is not None and not self.over:
            self.resources = sampler.stop(self.runner, self.token, self.pid)
        self.over = True

    def start_text(self) -> str:
        """The loop's start as shell text for a script of the test's, once; "" after that."""
        if self.asked:
            return ""
        self.asked = True
        return sampler.start_text(self.token, max_s=self.max_s)

    def started(self, stdout: str) -> None:
        """Read the PID from the output of the script that held ``start_text``."""
        if not self.asked or self.over or self.pid is not None:
            return
        text = split_sections(stdout).get(STARTED, "")
        if text.isdigit():
            self.pid = int(text)
        else:
            self.over = True

    def ride(self, *, last: bool) -> sampler.Ride:
        """The loop riding in one script around the test's work: started by the first such
        script, stopped by the ``last`` one (the same when there is one)."""
        start = not self.asked
        self.asked = True
        running = self.pid is not None and not self.over
        stop = last and (start or running)
        return sampler.ride(self.token, start=start, stop=stop, pid=self.pid, max_s=self.max_s)

    def rode(self, stdout: str) -> None:
        """Read the PID and, once stopped, what the loop saw from a riding script's output."""
        if self.over:
            return
        if STARTED in split_sections(stdout):
            self.started(stdout)
        if self.pid is not None:
            self.stopped(stdout)

    def stop_text(self) -> str:
        """The loop's stop as shell text ("" when it does not run)."""
        if self.pid is None or self.over:
            return ""
        return sampler.stop_text(self.token, self.pid)

    def stopped(self, stdout: str) -> None:
        """Keep what the loop saw, from the output of the script that held ``stop_text`` (not in
        it: the loop still runs, ``stop`` ends it)."""
        if self.pid is None or self.over:
            return
        sections = split_sections(stdout)
        if SECTION in sections:
            parsed = sampler.parse(sections[SECTION])
            self.resources = parsed if parsed["samples"] else None
            self.over = True


class Sampling:
    """Sampling on the ready hosts of one test (POSIX ones; a Windows host's is None).

    ``start`` hands every host's start to ``tasks`` (but the ``riding`` host's: its start and
    stop ride in the test's own scripts there, ``start_text`` ... ``stopped``; and the
    ``client`` host's, riding in its client's scripts, ``client_ride``); ``wait_started``
    before measuring; ``stop`` once the last measurement ended; ``close`` waits and fills
    ``resources``: host -> sampler.parse() result, None when sampling failed there.
    """

    def __init__(
        self,
        sessions: Mapping[str, HostSession],
        hosts: Sequence[str],
        token: str,
        tasks: Tasks,
        *,
        max_s: float = MAX_SAMPLING_S,
        riding: str | None = None,
        client: str | None = None,
    ) -> None:
        self._tasks = tasks
        self._hosts = {
            name: HostSampler(session.runner, f"{token}-{name}", max_s)
            for name in dict.fromkeys(hosts)
            if (session := sessions.get(name)) is not None and session.ready and session.runner
        }
        self._rider = self._posix(riding)
        self._client = self._posix(client) if client != riding else None
        self._starting: list[Task] = []
        self._stopping: list[Task] | None = None
        self.resources: Resources = {}

    def _posix(self, name: str | None) -> HostSampler | None:
        host = self._hosts.get(name or "")
        return host if host and platforms.of(host.runner).posix_shell else None

    def _own(self) -> list[HostSampler]:
        riders = (self._rider, self._client)
        return [host for host in self._hosts.values() if host not in riders]

    def start(self) -> None:
        """Start sampling on every host but the riding ones, without waiting."""
        self._starting = [self._tasks.start(host.start, "sampler-start") for host in self._own()]

    def wait_started(self) -> None:
        """Return once every host's sampler runs (or failed to start): measuring may begin."""
        for task in self._starting:
            task.wait()

    def stop(self) -> None:
        """Stop sampling on every host, without waiting (once; ``close`` waits). The riding
        host's stop goes in the test's next script there (``stop_text``)."""
        if self._stopping is None:
            self.wait_started()
            self._stopping = [self._tasks.start(host.stop, "sampler-stop") for host in self._own()]

    def close(self) -> Resources:
        """Stop (if not yet), wait, and return ``resources``. A riding sampler still running
        (its test failed before its last script) is stopped in a round trip of its own."""
        self.stop()
        for task in self._stopping or []:
            task.wait()
        for rider in (self._rider, self._client):
            if rider is not None:
                rider.stop()
        self.resources = {name: host.resources for name, host in self._hosts.items()}
        return self.resources

    def working(self) -> set[str]:
        """The hosts ``close`` may still send a command to: a sampler asked to start there and
        not known to be over (a riding one ended by the test's own last script is)."""
        return {name for name, host in self._hosts.items() if host.asked and not host.over}

    def start_text(self) -> str:
        """The riding host's sampler start, for the test's first script there (once)."""
        return self._rider.start_text() if self._rider else ""

    def started(self, stdout: str) -> None:
        """The output of the script that held ``start_text``."""
        if self._rider is not None:
            self._rider.started(stdout)

    def stop_text(self) -> str:
        """The riding host's sampler stop once sampling was asked to ``stop`` ("" before)."""
        return self._rider.stop_text() if self._rider and self._stopping is not None else ""

    def stopped(self, stdout: str) -> None:
        """The output of the script that held ``stop_text``."""
        if self._rider is not None:
            self._rider.stopped(stdout)

    def client_ride(self, *, last: bool) -> sampler.Ride:
        """The client host's sampler in its client's script: started in the first, stopped in
        the ``last`` (``sampler.NO_RIDE``: it has a round trip of its own, or none)."""
        return self._client.ride(last=last) if self._client else sampler.NO_RIDE

    def client_rode(self, stdout: str) -> None:
        """The output of a client's script that held ``client_ride``'s texts."""
        if self._client is not None:
            self._client.rode(stdout)


@contextlib.contextmanager
def sampling(
    sessions: Mapping[str, HostSession], hosts: Sequence[str], token: str, tasks: Tasks
) -> Iterator[Resources]:
    """Sample every ready host of ``hosts`` while the block runs; stopped in ``finally``.

    Yields a dict filled on exit: host -> sampler.parse() result (None when sampling failed
    there), for run.json's ``resources`` of the test.
    """
    resources: Resources = {}
    with overlapped(sessions, hosts, token, tasks) as sampled:
        sampled.wait_started()  # the hosts' starts at once, not one after another
        yield resources
    resources.update(sampled.resources)


@contextlib.contextmanager
def overlapped(
    sessions: Mapping[str, HostSession], hosts: Sequence[str], token: str, tasks: Tasks
) -> Iterator[Sampling]:
    """A started Sampling the block waits for (``wait_started``) before it measures and may stop
    early (``stop``, once the last measurement ended); stopped and collected in ``finally``."""
    sampled = Sampling(sessions, hosts, token, tasks)
    sampled.start()
    try:
        yield sampled
    finally:
        sampled.close()
