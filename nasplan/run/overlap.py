"""Every thread of a run starts here: ``Overlap.concurrent()`` for runs, ``Overlap.serial()``
for unit tests and debugging (the same code, one thread, a fixed order).

What overlaps in a run: the hosts' connections and facts (``each``), a test's teardown while the
next test starts, the samplers' start and stop beside the server's, the lease renewals, and the
releases of hosts the plan is done with. ``nasplan.tasks`` is the contract the lower layers see.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# hosts connected, gathered or released at once (a bounded pool: 100 hosts are not 100 threads)
MAX_PARALLEL_HOSTS = 64


class _Thread:
    """A task running in a daemon thread of its own (a hung host never holds the process)."""

    def __init__(self, work: Callable[[], object], name: str) -> None:
        self._work = work
        self._error: BaseException | None = None
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"nasplan-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # handed to whoever waits (Task.error)
            self._error = exc
        finally:
            self._finished.set()

    @property
    def error(self) -> BaseException | None:
        return self._error

    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._finished.wait(timeout_s)


class _Deferred:
    """A task run in the caller's thread the first time anyone waits for it (serial mode)."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._work: Callable[[], object] | None = work
        self._error: BaseException | None = None

    @property
    def error(self) -> BaseException | None:
        return self._error

    def done(self) -> bool:
        return self._work is None

    def wait(self, timeout_s: float | None = None) -> bool:
        work, self._work = self._work, None
        if work is not None:
            try:
                work()
            except BaseException as exc:
                self._error = exc
        return True


class Overlap:
    """A run's ``Tasks``: threads (``concurrent``) or one thread in a fixed order (``serial``)."""

    def __init__(self, threads: bool) -> None:
        self.threads = threads
        self._started: list[_Thread | _Deferred] = []

    @classmethod
    def concurrent(cls) -> Overlap:
        """Threads: what ``nasplan apply`` uses."""
        return cls(True)

    @classmethod
    def serial(cls) -> Overlap:
        """No thread at all: each task runs when first waited for, ``each`` is a loop."""
        return cls(False)

    def start(self, work: Callable[[], object], name: str) -> _Thread | _Deferred:
        """``work`` in a thread of its own now, or (serial) when first waited for."""
        task: _Thread | _Deferred = _Thread(work, name) if self.threads else _Deferred(work)
        self._started.append(task)
        return task

    def each(self, items: Iterable[T], work: Callable[[T], object]) -> None:
        """``work`` on every item (a bounded pool, or one after another), all done on return."""
        batch = list(items)
        if not batch:
            return
        if not self.threads or len(batch) == 1:
            for item in batch:
                work(item)
            return
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_HOSTS, len(batch))) as pool:
            for future in [pool.submit(work, item) for item in batch]:
                future.result()

    def join(self) -> None:
        """Wait for every task started so far (serial: run those nobody waited for)."""
        for task in list(self._started):
            task.wait()
