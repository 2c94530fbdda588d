"""Every thread of a run starts here: ``Overlap.concurrent()`` for runs, ``Overlap.serial()``
for unit tests and debugging (the same code, one thread, each task run when it is started).

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


class _Outcome:
    """What a task ended with: its ``result``, or the ``error`` it raised (handed to whoever
    waits, ``Task.error``)."""

    _error: BaseException | None = None
    _result: object = None

    @property
    def error(self) -> BaseException | None:
        return self._error

    @property
    def result(self) -> object:
        return self._result

    def _settle(self, work: Callable[[], object]) -> None:
        try:
            self._result = work()
        except BaseException as exc:  # handed to whoever waits, as ``error``
            self._error = exc


class _Thread(_Outcome):
    """A task running in a daemon thread of its own (a hung host never holds the process)."""

    def __init__(self, work: Callable[[], object], name: str) -> None:
        self._work = work
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"nasplan-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._settle(self._work)
        finally:
            self._finished.set()

    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._finished.wait(timeout_s)


class _Ran(_Outcome):
    """A task already run in the caller's thread (serial mode): nothing left to wait for."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._settle(work)

    def done(self) -> bool:
        return True

    def wait(self, timeout_s: float | None = None) -> bool:
        return True


class _Every:
    """``work`` every ``interval_s`` in a daemon thread until ``stop`` or until it returns
    False; the first call after ``first_s``."""

    def __init__(
        self, interval_s: float, work: Callable[[], bool], name: str, first_s: float
    ) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(interval_s, work, first_s), name=f"nasplan-{name}", daemon=True
        )
        self._thread.start()

    def _loop(self, interval_s: float, work: Callable[[], bool], first_s: float) -> None:
        wait_s = first_s
        while not self._stopped.wait(wait_s):
            wait_s = interval_s
            if not work():
                return

    def stop(self) -> None:
        self._stopped.set()


class _Never:
    """Serial mode's repeating work: none (a serial run is a test or a debugger's, too short
    or too slow for a timer to mean anything)."""

    def stop(self) -> None:
        pass


class Overlap:
    """A run's ``Tasks``: threads (``concurrent``) or one thread in a fixed order (``serial``)."""

    def __init__(self, threads: bool) -> None:
        self.threads = threads
        self._started: list[_Thread | _Ran] = []

    @classmethod
    def concurrent(cls) -> Overlap:
        """Threads: what ``nasplan apply`` uses."""
        return cls(True)

    @classmethod
    def serial(cls) -> Overlap:
        """No thread at all: a task runs at once in the caller's thread, ``each`` is a loop,
        repeating work (``every``) never runs."""
        return cls(False)

    def start(self, work: Callable[[], object], name: str) -> _Thread | _Ran:
        """``work`` in a thread of its own, or (serial) run now."""
        task: _Thread | _Ran = _Thread(work, name) if self.threads else _Ran(work)
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

    def every(
        self, interval_s: float, work: Callable[[], bool], name: str, *, first_s: float
    ) -> _Every | _Never:
        """``work`` every ``interval_s`` (first after ``first_s``) until it returns False or
        is stopped; serial: never."""
        return _Every(interval_s, work, name, first_s) if self.threads else _Never()

    def join(self) -> None:
        """Wait for every task started so far."""
        for task in list(self._started):
            task.wait()
