"""The run's hold on its hosts (nasplan/run/leases.py): where it cannot take one (Windows), and
how the renewals are timed."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.hosts import shell
from nasplan.hosts.lock import acquire_script
from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.progress import PlainProgress
from nasplan.run.leases import EarlyRelease, LeaseKeeper, acquire
from nasplan.runner import LocalRunner, Result


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


class _RenewalClock:
    """A host that answers every lease renewal and notes when each came (time.monotonic)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lost = None
        self.times: list[float] = []

    def try_script(self, script: str, *, timeout_s: float) -> Result:
        assert "nasplan_owns" in script and "lease.tmp" in script  # the renewal, nothing else
        self.times.append(time.monotonic())
        return Result(script, "renewed\n", "", 0)


def test_lease_renewals_are_spread_over_the_interval_not_sent_to_every_host_at_once() -> None:
    renew_s, count = 0.4, 4
    clocks = [_RenewalClock(f"h{i}") for i in range(count)]
    sessions = {
        c.name: HostSession(Host(name=c.name, address=f"198.19.240.{i + 1}"), c, locked=True)  # type: ignore[arg-type]
        for i, c in enumerate(clocks)
    }
    keeper = LeaseKeeper(sessions, "20261201T110000Z-x", 30, renew_s, PlainProgress())
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
        assert refused is not None and "in use by another nasplan run run-a" in refused
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

    def run_script(self, script: str, *, timeout_s: float) -> Result:
        assert 'rm -rf "$nasplan_dir"' in script  # the release, nothing else
        self.released = True
        time.sleep(0.05)  # a renewal may be under way meanwhile: it finds the lock gone
        return Result(script, "", "", 0)


def test_a_host_released_early_is_no_longer_renewed_and_its_lost_lock_is_no_warning() -> None:
    renew_s = 0.1
    hosts = [_ReleasedHost("done"), _ReleasedHost("busy")]
    sessions = {
        h.name: HostSession(Host(name=h.name, address=f"198.19.240.{i + 1}"), h, locked=True)  # type: ignore[arg-type]
        for i, h in enumerate(hosts)
    }
    keeper = LeaseKeeper(sessions, "20261201T140000Z-x", 30, renew_s, PlainProgress())
    keeper.start()
    time.sleep(renew_s * 1.5)
    early = EarlyRelease(keeper, "20261201T140000Z-x", delay_s=10)
    early.release([sessions["done"]])
    assert not hosts[0].released  # later: while the next test measures
    early.join()  # at once, then
    renewed_before = len(hosts[0].times)
    time.sleep(renew_s * 4)
    keeper.stop()

    assert hosts[0].released and not sessions["done"].locked
    assert hosts[0].renewals_after_release == 0 and len(hosts[0].times) == renewed_before
    assert sessions["done"].warnings == []
    assert len(hosts[1].times) >= 4 and sessions["busy"].locked  # the other is still held


def test_an_early_release_waits_for_the_teardown_still_running_on_the_host() -> None:
    # the host's last test may still be stopping its server there (RunContext.defer): the
    # release, which removes what the run left on the host, must not cut into it
    host = _ReleasedHost("done")
    sessions = {"done": HostSession(Host(name="done", address="198.19.240.1"), host, locked=True)}  # type: ignore[arg-type]
    keeper = LeaseKeeper(sessions, "20261201T160000Z-x", 30, 10, PlainProgress())
    teardown = threading.Event()
    early = EarlyRelease(keeper, "20261201T160000Z-x", delay_s=0.01)

    early.release([sessions["done"]], after=teardown)
    time.sleep(0.2)
    assert not host.released  # the delay is long over, the teardown is not
    teardown.set()
    early.join()

    assert host.released and not sessions["done"].locked
