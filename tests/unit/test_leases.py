"""The run's hold on its hosts (nasplan/run/leases.py): where it cannot take one (Windows), and
how the renewals are timed."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nasplan.hosts.lock import acquire_script
from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.progress import PlainProgress
from nasplan.remote import shell
from nasplan.remote.runner import LocalRunner, Result, RunnerBase
from nasplan.run.leases import Contest, EarlyRelease, LeaseKeeper, acquire
from nasplan.run.overlap import Overlap


def test_a_windows_host_is_not_locked_and_the_run_says_so(
    fake_runner: Callable[[str], Any],
) -> None:
    runner = fake_runner("win11")  # it must not be sent the POSIX lock script
    runner.use_shell(shell.windows(None))
    session = HostSession(Host(name="win11", address="198.19.16.20"), runner)

    assert acquire(session, "20261201T050000Z-x", 60) is None

    assert runner.calls == [] and session.locked is False
    assert session.warnings == [
        "win11: Windows hosts are not locked: a second nasplan run against it at the same time "
        "is not refused, and what a killed run left there is not cleaned up by the next"
    ]


class _RenewalClock(RunnerBase):
    """A host that answers every lease renewal and notes when each came (time.monotonic); any
    other command fails the test."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.times: list[float] = []

    def run(self, argv: Sequence[str], **_: object) -> Result:
        raise AssertionError(f"{self.name}: unexpected command {argv}")

    def run_script(self, script: str, **_: object) -> Result:
        raise AssertionError(f"{self.name}: unexpected script {script[:200]}")

    def try_script(self, script: str, *, timeout_s: float) -> Result:
        assert "nasplan_owns" in script and "lease.tmp" in script  # the renewal, nothing else
        self.times.append(time.monotonic())
        return Result(script, "renewed\n", "", 0)


def test_lease_renewals_are_spread_over_the_interval_not_sent_to_every_host_at_once() -> None:
    renew_s, count = 0.4, 4
    clocks = [_RenewalClock(f"h{i}") for i in range(count)]
    sessions = {
        c.name: HostSession(Host(name=c.name, address=f"198.19.240.{i + 1}"), c, locked=True)
        for i, c in enumerate(clocks)
    }
    keeper = LeaseKeeper(
        sessions,
        "20261201T110000Z-x",
        30,
        renew_s,
        Overlap.concurrent(),
        PlainProgress(io.StringIO()),
    )
    started = time.monotonic()
    keeper.start()
    time.sleep(renew_s * 2.6)
    keeper.stop()

    firsts = sorted(c.times[0] - started for c in clocks)
    # one host a quarter interval after another, the last one interval in: not four at once
    for index, first in enumerate(firsts):
        assert first == pytest.approx(renew_s * (index + 1) / count, abs=0.06)
    # and each host renews every interval after its first
    for clock in clocks:
        gaps = [b - a for a, b in itertools.pairwise(clock.times)]
        assert gaps and all(gap == pytest.approx(renew_s, abs=0.06) for gap in gaps)


def test_a_lock_this_run_took_in_a_cut_facts_round_trip_is_its_own_not_a_busy_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock script runs in the facts' round trip; when that output was cut before its status
    came back, apply runs it again and finds the lock held by this very run: locked, not busy."""
    node = f"leaseown-{os.getpid()}"
    stub = tmp_path / "uname"  # the lock is /tmp/nasplan-$(uname -n).lock: one of this test's own
    stub.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec /bin/uname "$@"\n')
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    lock_dir = Path(f"/tmp/nasplan-{node}.lock")
    runner = LocalRunner("nas")
    try:
        first = runner.run_script(acquire_script("run-a", 30))  # the facts' round trip took it
        assert first.exited == 0 and lock_dir.is_dir()
        session = HostSession(Host(name="nas", address="198.19.240.9"), runner)

        assert acquire(session, "run-a", 30) is None
        assert session.locked and session.warnings == []

        other = HostSession(Host(name="nas", address="198.19.240.9"), runner)
        refused = acquire(other, "run-b", 30)
        assert refused is not None and "in use by another nasplan run run-a" in refused.message
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)


class _ReleasedHost(_RenewalClock):
    """A host whose lock is gone once released: a renewal then answers "lost"."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.released = False
        self.renewals_after_release = 0

    def try_script(self, script: str, *, timeout_s: float) -> Result:
        if self.released:
            self.renewals_after_release += 1
            return Result(script, "lost\n", "", 0)
        return super().try_script(script, timeout_s=timeout_s)

    def run_script(self, script: str, **_: object) -> Result:
        assert 'rm -rf "$nasplan_dir"' in script  # the release, nothing else
        self.released = True
        time.sleep(0.05)  # a renewal may be under way meanwhile: it finds the lock gone
        return Result(script, "", "", 0)


def test_a_host_released_early_is_no_longer_renewed_and_its_lost_lock_is_no_warning() -> None:
    renew_s = 0.1
    hosts = [_ReleasedHost("done"), _ReleasedHost("busy")]
    sessions = {
        h.name: HostSession(Host(name=h.name, address=f"198.19.240.{i + 1}"), h, locked=True)
        for i, h in enumerate(hosts)
    }
    tasks = Overlap.concurrent()
    keeper = LeaseKeeper(
        sessions, "20261201T140000Z-x", 30, renew_s, tasks, PlainProgress(io.StringIO())
    )
    keeper.start()
    time.sleep(renew_s * 1.5)
    early = EarlyRelease(keeper, "20261201T140000Z-x", tasks)
    early.release([sessions["done"]], lambda name: None)
    early.join()
    renewed_before = len(hosts[0].times)
    time.sleep(renew_s * 4)
    keeper.stop()

    assert hosts[0].released and not sessions["done"].locked
    assert hosts[0].renewals_after_release == 0 and len(hosts[0].times) == renewed_before
    assert sessions["done"].warnings == []
    assert len(hosts[1].times) >= 4 and sessions["busy"].locked  # the other is still held


def _one_locked_host(
    renew_s: float,
) -> tuple[_ReleasedHost, dict[str, HostSession], Overlap, LeaseKeeper]:
    """A locked host "done" of a run whose leases (30 s) are renewed every ``renew_s``."""
    host = _ReleasedHost("done")
    sessions = {"done": HostSession(Host(name="done", address="198.19.240.1"), host, locked=True)}
    tasks = Overlap.concurrent()
    keeper = LeaseKeeper(
        sessions, "20261201T160000Z-x", 30, renew_s, tasks, PlainProgress(io.StringIO())
    )
    return host, sessions, tasks, keeper


def test_an_early_release_waits_for_the_teardown_still_running_on_the_host() -> None:
    # the host's last test may still be stopping its server there (RunContext.defer): the
    # release, which removes what the run left on the host, must not cut into it
    host, sessions, tasks, keeper = _one_locked_host(0.05)
    keeper.start()
    stopping = threading.Event()
    teardown = tasks.start(stopping.wait, "teardown")
    early = EarlyRelease(keeper, "20261201T160000Z-x", tasks)

    early.release([sessions["done"]], lambda name: teardown if name == "done" else None)
    time.sleep(0.3)  # several renewals' times
    assert not host.released  # the teardown is not over
    stopping.set()
    early.join()
    keeper.stop()

    assert host.released and not sessions["done"].locked


def test_hosts_are_released_at_once_side_by_side_only_the_teardowns_waiting() -> None:
    # the client host's release does not wait for the server's stop on the other host; the
    # server host's does; both start as the test ends, not at a renewal's time
    renew_s = 10.0
    hosts = [_ReleasedHost("client"), _ReleasedHost("server")]
    sessions = {
        h.name: HostSession(Host(name=h.name, address=f"198.19.240.{i + 1}"), h, locked=True)
        for i, h in enumerate(hosts)
    }
    tasks = Overlap.concurrent()
    keeper = LeaseKeeper(
        sessions, "20261201T160000Z-x", 30, renew_s, tasks, PlainProgress(io.StringIO())
    )
    keeper.start()
    stopping = threading.Event()
    teardown = tasks.start(stopping.wait, "teardown")
    early = EarlyRelease(keeper, "20261201T160000Z-x", tasks)

    started = time.monotonic()
    early.release(sessions.values(), lambda name: teardown if name == "server" else None)
    deadline = started + 2
    while not hosts[0].released and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hosts[0].released and time.monotonic() - started < 1  # at once, not at 10 s
    assert not hosts[1].released  # its server still stops
    stopping.set()
    early.join()
    keeper.stop()

    assert hosts[1].released and not any(s.locked for s in sessions.values())


class _Outage(_RenewalClock):
    """A host whose renewals fail (an exception, as a cut link gives) while ``down``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.down = False
        self.failed = 0

    def try_script(self, script: str, *, timeout_s: float) -> Result:
        if self.down:
            self.failed += 1
            raise OSError("No route to host")
        return super().try_script(script, timeout_s=timeout_s)


def _kept(host: _Outage, lease_s: float, renew_s: float) -> tuple[HostSession, LeaseKeeper]:
    session = HostSession(Host(name=host.name, address="198.19.240.7"), host, locked=True)
    progress = PlainProgress(io.StringIO())
    keeper = LeaseKeeper(
        {host.name: session}, "20261202T010000Z-x", lease_s, renew_s, Overlap.concurrent(), progress
    )
    return session, keeper


def test_renewals_that_fail_for_less_than_a_lease_are_retried_and_the_lease_kept() -> None:
    host = _Outage("nas")
    session, keeper = _kept(host, lease_s=1.0, renew_s=0.1)
    keeper.start()
    time.sleep(0.25)
    host.down = True  # an outage shorter than the lease
    time.sleep(0.5)
    host.down = False
    renewed = len(host.times)
    time.sleep(0.4)
    keeper.stop()

    assert host.failed >= 3
    assert len(host.times) >= renewed + 3  # renewing again once the host answers
    assert not session.lost and session.error is None


def test_a_host_silent_for_a_whole_lease_is_lost_at_its_end_saying_why_and_never_renewed() -> None:
    """An outage longer than the lease: the host's watchdogs have stopped the run's work, so the
    host is lost when the lease runs out (not only once it answers again), on the console."""
    host = _Outage("nas")
    session, keeper = _kept(host, lease_s=0.5, renew_s=0.1)
    keeper.start()
    time.sleep(0.15)
    host.down = True
    time.sleep(0.35)
    assert not session.lost  # less than a lease: renewals still tried
    time.sleep(0.45)
    assert session.lost  # a lease without a renewal: lost, although the host never answered
    host.down = False
    renewed = len(host.times)
    time.sleep(0.3)
    keeper.stop()

    assert session.error is not None
    assert "its lease ran out: not renewed for" in session.error
    assert "No route to host" in session.error
    assert len(host.times) == renewed  # no renewal after it lapsed
    assert keeper.lapsed(["nas"]) == session.error


def test_a_gap_in_nasplan_itself_longer_than_a_lease_is_a_lapse_before_any_renewal_ran() -> None:
    """nasplan stopped (SIGSTOP) or starved: on its way again, the leases it could not renew
    have run out, known at once from its own clock."""
    host = _Outage("nas")
    _, keeper = _kept(host, lease_s=0.3, renew_s=10)  # the first renewal comes much later
    keeper.start()
    assert keeper.lapsed(["nas"]) is None
    time.sleep(0.35)

    reason = keeper.lapsed(["nas", "elsewhere"])
    keeper.stop()

    assert reason is not None and reason.startswith("nas: its lease ran out: not renewed for ")
    assert "nasplan itself did not run to renew it" in reason
    assert host.times == []


def _busy(holder: str, lease_until: str = "999999") -> str:
    """What the acquire script prints for a host another run holds."""
    return (
        f"@@nasplan:owner@@\nrun_id={holder}\npid=1\ncontrol=elsewhere\nuser=ann\n"
        f"started_clock=100\n@@nasplan:clock@@\nnow=101\nlease_until={lease_until}\n"
    )


LOCKED = "\n@@nasplan:locked@@\n/tmp/nasplan-h.lock\n"


def _contested(fake_runner: Callable[[str], Any], replies: dict[str, list[Result]]) -> Any:
    """Two hosts whose acquire scripts answer ``replies`` in turn, and their sessions."""
    sessions = {}
    for name, answers in replies.items():
        runner = fake_runner(name)
        for answer in answers:
            runner.expect("nasplan_dir", reply=answer)
        sessions[name] = HostSession(Host(name=name, address="198.19.240.3"), runner)
    return sessions


def test_a_run_refused_by_an_earlier_run_starting_at_the_same_moment_yields_its_hosts(
    fake_runner: Callable[[str], Any],
) -> None:
    sessions = _contested(
        fake_runner,
        {
            "h1": [Result("", LOCKED, "", 0), Result("", "@@nasplan:removed@@\n", "", 0)],
            "h2": [Result("", _busy("run-a-1"), "", 75)],
        },
    )
    contest = Contest("run-b-2", 30)
    for session in sessions.values():
        contest.take(session, None)
    contest.settle(sessions, PlainProgress(io.StringIO()))

    assert not sessions["h1"].locked  # released: the earlier run takes it
    assert sorted(contest.refused) == ["h1", "h2"]
    assert "this run yielded" in (sessions["h1"].error or "")


def test_a_run_refused_only_by_a_later_run_waits_for_it_to_yield(
    fake_runner: Callable[[str], Any],
) -> None:
    sessions = _contested(
        fake_runner,
        {
            "h1": [Result("", LOCKED, "", 0)],
            "h2": [Result("", _busy("run-b-2"), "", 75), Result("", LOCKED, "", 0)],
        },
    )
    contest = Contest("run-a-1", 30, wait_s=2, pause_s=0.01)
    for session in sessions.values():
        contest.take(session, None)
    contest.settle(sessions, PlainProgress(io.StringIO()))

    assert all(s.locked and s.error is None for s in sessions.values())
    assert contest.refused == {}


@pytest.mark.parametrize(
    ("owner", "lease"),
    [
        ("", ""),  # a run whose /tmp was full wrote both as empty files (older nasplan)
        ("control=elsewhere\n", "999999999\n"),  # an owner with no run id: unreadable
        ("run_id=run-a\npid=1\ncontrol=elsewhere\nuser=ann\n", None),  # no lease at all
    ],
)
def test_a_lock_without_a_readable_owner_or_lease_is_stale_and_taken_over_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: str, lease: str | None
) -> None:
    """A lock is made whole (owner and lease) beside its place and renamed into place: one
    without them is none, whoever left it; the run takes it over and says so."""
    node = f"leaseless-{os.getpid()}"
    stub = tmp_path / "uname"
    stub.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec /bin/uname "$@"\n')
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    lock_dir = Path(f"/tmp/nasplan-{node}.lock")
    lock_dir.mkdir()
    try:
        (lock_dir / "owner").write_text(owner)
        if lease is not None:
            (lock_dir / "lease").write_text(lease)
        session = HostSession(Host(name="nas", address="198.19.240.9"), LocalRunner("nas"))

        assert acquire(session, "run-b", 30) is None

        assert session.locked
        assert (lock_dir / "owner").read_text().startswith("run_id=run-b\n")
        assert (lock_dir / "lease").read_text().strip().isdigit()
        assert sorted(p.name for p in lock_dir.iterdir()) == ["lease", "owner"]
        assert not list(Path("/tmp").glob(f"nasplan-{node}.lock.*"))  # nothing beside it
        said = session.warnings[-1]
        if owner.startswith("run_id="):
            assert said.startswith("nas: took over the stale lock of run run-a"), said
        else:
            assert said.startswith("nas: took over a lock with no readable owner"), said
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)


def test_a_lock_being_held_is_refused_and_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename of a second run's lock does not land inside the one in place."""
    node = f"leaseheld-{os.getpid()}"
    stub = tmp_path / "uname"
    stub.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec /bin/uname "$@"\n')
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    lock_dir = Path(f"/tmp/nasplan-{node}.lock")
    runner = LocalRunner("nas")
    try:
        assert runner.run_script(acquire_script("run-a", 60)).exited == 0
        before = {p.name: p.read_text() for p in lock_dir.iterdir()}
        session = HostSession(Host(name="nas", address="198.19.240.9"), runner)

        refused = acquire(session, "run-b", 60)

        assert refused is not None and "in use by another nasplan run run-a" in refused.message
        assert "lease runs out in 60 s" in refused.message or "lease runs out in 59 s" in (
            refused.message
        )
        assert {p.name: p.read_text() for p in lock_dir.iterdir()} == before
        assert not list(Path("/tmp").glob(f"nasplan-{node}.lock.*"))
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)


class _Dropped(_RenewalClock):
    """A host whose SSH connection ended (its sshd killed): the runner knows it is lost."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.lost: str | None = None


def test_a_host_whose_connection_ended_is_named_lost_by_the_next_renewal() -> None:
    """Not at the end of the test under way: within one renewal interval, on the console."""
    host = _Dropped("nas")
    session = HostSession(Host(name="nas", address="198.19.240.8"), host, locked=True)
    console = io.StringIO()
    tasks, progress = Overlap.concurrent(), PlainProgress(console)
    keeper = LeaseKeeper({"nas": session}, "20261202T020000Z-x", 30, 0.1, tasks, progress)
    keeper.start()
    time.sleep(0.25)
    host.lost = "nas: SSH connection lost"
    time.sleep(0.3)
    keeper.stop()

    assert session.lost and session.error == "nas: SSH connection lost"
    assert "host nas: [lost] nas: SSH connection lost" in console.getvalue()


def test_a_tmp_that_cannot_hold_the_lock_is_named_in_one_line() -> None:
    from nasplan.run.leases import unwritable

    full = unwritable("nas", "error=sh: 300: printf: printf: I/O error\nfree_kib=0\n")
    assert full.startswith("nas: /tmp is full (0 B free): no space left on device for the host's")
    assert "\n" not in full
    other = unwritable("nas", "error=mkdir: cannot create directory: Read-only file system\n")
    assert other.startswith(
        "nas: /tmp is not writable (mkdir: cannot create directory: Read-only file system)"
    )
