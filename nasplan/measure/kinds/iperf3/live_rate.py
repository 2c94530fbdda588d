"""The running iperf3 test's rate each second, for the console: its server's interval lines read
while the client runs, as repeating work of the run's (``Tasks.every``: no thread of its own,
nothing in a serial run), each second's rate handed to ``Progress.rate``."""

from __future__ import annotations

from collections.abc import Callable

from nasplan.measure.kinds.iperf3.live import LiveRates
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.progress import Progress
from nasplan.tasks import Repeating, Tasks

# how often the server's output is looked at: a line comes each second, shown within this
READ_EVERY_S = 0.25


def what_of(params: Iperf3Params) -> str:
    """Which rate the server's lines give (``Progress.rate``'s ``what``): what it received (""),
    what it sent (``-R``: "sent"), or with ``--bidir`` what it received ("forward")."""
    if params.bidir:
        return "forward"
    return "sent" if params.reverse else ""


class LiveRate:
    """One test's servers, followed one repetition at a time."""

    def __init__(
        self, tasks: Tasks, progress: Progress, test_id: str, params: Iperf3Params
    ) -> None:
        self.tasks = tasks
        self.progress = progress
        self.test_id = test_id
        self.params = params
        self._reading: Repeating | None = None

    def follow(self, read: Callable[[], str | None]) -> None:
        """Read a launched server's output (``Launched.read``) until it ends or ``stop``."""
        self.stop()
        rates = LiveRates(self.params.parallel, bidir=self.params.bidir)
        what = what_of(self.params)

        def look() -> bool:
            try:
                text = read()
                if text is None:
                    return False
                for at_s, bits_per_second in rates.feed(text):
                    self.progress.rate(self.test_id, bits_per_second, at_s, what)
            except Exception:  # only a display: it never fails a test, it stops
                return False
            return True

        name = f"rate {self.test_id}"
        self._reading = self.tasks.every(READ_EVERY_S, look, name, first_s=READ_EVERY_S)

    def stop(self) -> None:
        """No further look (the client's result is in)."""
        if self._reading is not None:
            self._reading.stop()
            self._reading = None
