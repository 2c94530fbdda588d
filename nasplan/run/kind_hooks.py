"""What a run lends a test kind (``nasplan.measure.kind.RunHooks``): raw files, secrets,
checkpoints of the running test, and a finished test's clean-up beside the next test's start.

A test's teardown (its server's stop, its samplers' stop) is handed to the run's ``Tasks``: it
runs while the next test starts and is settled (waited for, then its record completed in the
run's own thread) before that test measures, so nothing of one test runs on the hosts while
another measures. With ``Overlap.serial()`` it runs when settled: the same order, one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nasplan import results
from nasplan.hosts.session import HostSession
from nasplan.input.plan import Plan
from nasplan.measure.kind import RunContext
from nasplan.progress import Progress
from nasplan.tasks import Task, Tasks


class KindHooks:
    """``RunHooks`` of one run: ``run_dir`` for raw outputs, ``secrets`` masked in every file,
    ``on_checkpoint`` called with the running test's record after each repetition."""

    def __init__(
        self,
        run_dir: Path,
        tasks: Tasks,
        secrets: list[str] | None = None,
        on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.tasks = tasks
        self.secrets: list[str] = secrets if secrets is not None else []
        self.on_checkpoint = on_checkpoint
        # the running test's record, as last checkpointed (a lost host fails it with this)
        self.running: dict[str, Any] | None = None
        # raw outputs written during the run, put on disk at its end (``output.sync_files``)
        self.unsynced: list[Path] = []
        self._pending: tuple[Task, Callable[[BaseException | None], None]] | None = None

    def save_raw(self, relative_path: str, text: str) -> str:
        written = results.save_raw(self.run_dir, relative_path, text, self.secrets, durable=False)
        self.unsynced.append(self.run_dir / written)
        return written

    def mask(self, secret: str) -> None:
        self.secrets.append(secret)

    def checkpoint(self, record: dict[str, Any], *, last: bool = False) -> None:
        self.running = record
        if self.on_checkpoint is not None and not last:
            self.on_checkpoint(record)

    def defer(
        self, work: Callable[[], object], done: Callable[[BaseException | None], None]
    ) -> None:
        self.settle()
        self._pending = (self.tasks.start(work, "teardown"), done)

    def settle(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            task, done = pending
            task.wait()
            done(task.error)

    def teardown_running(self) -> Task | None:
        """The deferred teardown still on its hosts, if any (what a release waits for)."""
        return self._pending[0] if self._pending is not None else None


def run_context(
    plan: Plan,
    sessions: Mapping[str, HostSession],
    progress: Progress,
    run_dir: Path,
    tasks: Tasks,
    secrets: list[str] | None = None,
) -> RunContext:
    """A ``RunContext`` with this run's ``KindHooks`` (also what unit tests of a kind use)."""
    return RunContext(plan, sessions, progress, tasks, KindHooks(run_dir, tasks, secrets))
