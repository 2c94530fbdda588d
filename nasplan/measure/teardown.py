"""A finished test's teardown on its hosts, run while the next test starts (RunContext.defer).

After a test's last measurement what is left on its hosts is clean-up: the iperf3 server's stop
and log, the resource samplers' stop (~15-20 ms of SSH round trips). Run in a thread of its own,
it overlaps the next test's own start (its server's start and readiness wait), and is settled
(waited for, then its record completed in the run's own thread) before the next measurement
begins: nothing of a test's teardown ever runs while another test measures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Teardown:
    """``work`` (remote clean-up, in a thread started at once), then ``done(error)`` in the
    thread that calls ``settle``: ``error`` is what ``work`` raised, None when it returned."""

    def __init__(
        self, work: Callable[[], object], done: Callable[[BaseException | None], None]
    ) -> None:
        self._work = work
        self._done = done
        self._error: BaseException | None = None
        # set once ``work`` has returned or raised: what waits for the hosts to be left alone
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nasplan-teardown", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # handed to ``done`` in the settling thread
            self._error = exc
        finally:
            self.finished.set()

    def settle(self) -> None:
        """Wait for ``work``, then call ``done`` (RunContext.settle does, once)."""
        self._thread.join()
        self._done(self._error)
