"""What a run lends a test kind (``nasplan.measure.kind.RunHooks``): raw files, secrets, the
running test's checkpoints, and a finished test's clean-up beside the next test's start.

Whatever a kind hands over is a value for the run: a checkpoint's record is copied into the log
of the test's cell (``nasplan.run.cell``), and a teardown's work returns what completes its
part (``TornDown``), appended to that cell's log once the run settles it. A teardown runs while
the next test starts and is settled (waited for) before that test measures on a host it works
on, so nothing of one test runs on a host while another measures there; a test measuring on
other hosts lets it (and the releases beside it) go on across its measurement
(``settle(hosts)``). With ``Overlap.serial()`` it runs when it is deferred: the same order,
one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from nasplan import results
from nasplan.errors import HostLostError
from nasplan.hosts.session import HostSession
from nasplan.measure.ahead import Ahead
from nasplan.progress import Progress
from nasplan.run.cell import Cell
from nasplan.tasks import Task, Tasks


class KindHooks:
    """``RunHooks`` of one run: ``run_dir`` for raw outputs, ``secrets`` masked in every file;
    ``sessions`` and ``progress``: a host lost in a teardown is marked lost and its test said
    failed.

    ``cell``: the test whose part runs now (set by the run around each part); what it hands
    over goes into that cell's log. ``on_checkpoint``: run after a checkpoint (the run saves
    run.json).
    """

    def __init__(
        self,
        run_dir: Path,
        tasks: Tasks,
        sessions: Mapping[str, HostSession],
        progress: Progress,
        secrets: list[str] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.tasks = tasks
        self.sessions = sessions
        self.progress = progress
        self.secrets: list[str] = secrets if secrets is not None else []
        self.cell: Cell | None = None
        self.on_checkpoint: Callable[[], None] | None = None
        # raw outputs written during the run, put on disk at its end (``output.sync_files``)
        self.unsynced: list[Path] = []
        self._pending: tuple[Task, Cell | None, int] | None = None
        # the hosts the pending teardown works on (None: any); work run beside it (releases)
        self._on: frozenset[str] | None = None
        self._beside: list[Task] = []
        self.ahead = Ahead()  # the next test's start, made while one measures

    def save_raw(self, relative_path: str, text: str) -> str:
        written = results.save_raw(self.run_dir, relative_path, text, self.secrets, durable=False)
        self.unsynced.append(self.run_dir / written)
        return written

    def mask(self, secret: str) -> None:
        self.secrets.append(secret)

    def checkpoint(self, record: Mapping[str, Any], *, last: bool = False) -> None:
        if self.cell is not None:
            self.cell.returned(record)
        if self.on_checkpoint is not None and not last:
            self.on_checkpoint()

    def defer(
        self, work: Callable[[], Mapping[str, Any]], hosts: Collection[str] | None = None
    ) -> None:
        self.settle()
        number = self.cell.number if self.cell is not None else 0
        self._on = None if hosts is None else frozenset(hosts)
        self._pending = (self.tasks.start(work, "teardown"), self.cell, number)

    def beside(self, tasks: Collection[Task]) -> None:
        """Work the run started beside the teardown (a host's release): settled with it, so
        that it never runs across the next measurement either."""
        self._beside += tasks

    def settle(self, hosts: Collection[str] | None = None) -> None:
        """Wait for the deferred teardown and the work beside it (releases). ``hosts``: the
        next measurement's; then only when the teardown works on one of them: one on other
        hosts goes on across that measurement and is settled by the next full settle (the
        next teardown's ``defer``, the end). A release is of a host no later test uses."""
        if hosts is not None and not self._works_on(hosts):
            return
        beside, self._beside = self._beside, []
        for task in beside:  # their errors are their own (a release is best effort)
            task.wait()
        pending, self._pending = self._pending, None
        if pending is None:
            return
        task, cell, number = pending
        task.wait()
        error = task.error
        if error is not None and not isinstance(error, HostLostError):
            raise error
        completes = task.result if isinstance(task.result, Mapping) else {}
        if cell is not None:
            cell.torn_down(number, completes, str(error) if error is not None else None)
        if isinstance(error, HostLostError):
            session = self.sessions.get(error.host)
            if session is not None:
                session.mark_lost(str(error))
            if cell is not None:
                self.progress.test_done(cell.test.id, "failed", f"after its measurement: {error}")

    def _works_on(self, hosts: Collection[str]) -> bool:
        """Whether the pending teardown works on any of ``hosts`` (unknown hosts: it may)."""
        if self._pending is None:
            return False
        return self._on is None or not self._on.isdisjoint(hosts)

    def teardown_on(self, host: str) -> Task | None:
        """The deferred teardown still working on ``host``, if any (what its release waits
        for); None too when the teardown leaves that host alone."""
        if self._pending is None or (self._on is not None and host not in self._on):
            return None
        return self._pending[0]
