"""The run's hold on its hosts (nasplan/leases.py) where it cannot take one: Windows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasplan import shell
from nasplan.hosts import HostSession
from nasplan.inventory import Host
from nasplan.leases import acquire


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
