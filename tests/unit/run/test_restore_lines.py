"""What ``nasplan restore`` says of the lock a run left on a host: a killed run's, or one that
ended with the host lost (its release could not reach it)."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from typing import Any

import pytest

from nasplan.progress import PlainProgress
from nasplan.run.restore import _ending, _remove_stale_lock

# a PID no process has (above the kernel's pid_max)
GONE = 4_194_399


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ({"finished_at": None}, "host nas: removed the killed run's lock and file /tmp/nasplan-x"),
        (
            {"finished_at": "2026-12-05T08:00:00Z"},
            "host nas: removed the run's lock and file /tmp/nasplan-x",
        ),
    ],
)
def test_restore_says_how_the_run_that_left_the_lock_ended(
    fake_runner: Callable[[str], Any], run: dict[str, Any], said: str
) -> None:
    owner = f"run_id=20261205T070000Z-p-1\ncontrol={socket.gethostname()}\npid={GONE}\n"
    nas = fake_runner("nas").expect('cat "$nasplan_dir/owner"', f"@@nasplan:owner@@\n{owner}")
    # the run is gone (restore holds its directory): its lock removed at once, lease or not
    nas.expect("force=1", "@@nasplan:removed@@\nfile /tmp/nasplan-x\n")
    console = io.StringIO()

    _remove_stale_lock(nas, "20261205T070000Z-p", "nas", PlainProgress(console), _ending(run))

    assert said in console.getvalue(), console.getvalue()
