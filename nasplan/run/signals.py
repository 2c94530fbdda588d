"""The signals that end a run: Ctrl-C (SIGINT), ``timeout`` and systemd (SIGTERM), a closed
terminal (SIGHUP) all stop it the same way, and none of them cuts into putting things back.

``as_interrupts``: SIGTERM and SIGHUP raise ``Terminated`` (a KeyboardInterrupt) where the run
is, as Ctrl-C does, so the run restores its hosts, keeps what it measured and writes its report;
the CLI exits 128 + the signal's number. ``held_back``: while hosts are restored and the run's
files written, any of them is held and raised once that is done (nested: the outermost raises).
Signals are the process's: this module keeps the one piece of process-wide state they need.

A signal that arrives while the main thread runs paramiko's code is raised a moment later, once
it is out of it: an exception raised between one of paramiko's ``lock.acquire()`` and the
``try`` that releases it leaves the lock held, and every later command on that connection (the
restore, the sampler's stop, a lease renewal) then waits forever. nasplan's own waits poll, so
paramiko's calls are short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The run was asked to stop by a signal other than Ctrl-C (``signum``)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class Stopped(KeyboardInterrupt):
    """A run ended by ``cause`` (Ctrl-C, or ``Terminated``) once it had put its hosts back and
    written what it measured in ``run_dir``: where its report is, and what to resume."""

    def __init__(self, cause: KeyboardInterrupt, run_dir: Path) -> None:
        self.cause, self.run_dir = cause, run_dir
        super().__init__(str(cause))


# Libraries a KeyboardInterrupt must not be raised inside (see above); how soon a signal that
# arrived there is tried again (SIGALRM).
_UNSAFE = ("paramiko",)
AGAIN_S = 0.02


def _in_unsafe_code(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).partition(".")[0] in _UNSAFE:
            return True
        frame = frame.f_back
    return False


class _Deferred:
    """A signal that arrived inside paramiko, raised again when SIGALRM comes."""

    signum: int | None = None


def _raise(signum: int, frame: FrameType | None) -> None:
    if _in_unsafe_code(frame):
        _Deferred.signum = _Deferred.signum or signum
        signal.setitimer(signal.ITIMER_REAL, AGAIN_S)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _again(alarm: int, frame: FrameType | None) -> None:
    """SIGALRM: the deferred signal once more, through whatever handles it now (held_back's
    catcher, or _raise, which defers it again while the main thread is still in paramiko)."""
    signum, _Deferred.signum = _Deferred.signum, None
    if signum is not None:
        signal.raise_signal(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def as_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Terminated`` inside (SIGINT: KeyboardInterrupt, as always),
    never inside paramiko's code (raised once out of it)."""
    if not _in_main_thread():
        yield
        return
    handlers = {**dict.fromkeys(STOPPING, _raise), signal.SIGALRM: _again}
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        yield
    finally:
        if _Deferred.signum is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        pending, _Deferred.signum = _Deferred.signum, None
        if pending is not None:  # arrived just before the end: not lost
            signal.raise_signal(pending)


class _Held:
    """The signals held back so far, and how deep ``held_back`` is nested."""

    depth = 0
    caught: list[int] = []  # noqa: RUF012 - one list for the process, as its signals are


@contextlib.contextmanager
def held_back() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back inside; the first one is raised on leaving the
    outermost ``held_back`` (unless leaving it with an exception already)."""
    if not _in_main_thread():
        yield
        return
    _Held.depth += 1
    previous = {}
    if _Held.depth == 1:
        _Held.caught = []
        previous = {
            signum: signal.signal(signum, lambda signum, _: _Held.caught.append(signum))
            for signum in STOPPING
        }
    try:
        yield
    finally:
        _Held.depth -= 1
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if _Held.depth == 0 and _Held.caught:
        _raise(_Held.caught[0], None)


def ignore_from_now_on() -> None:
    """The process is exiting: SIGINT, SIGTERM and SIGHUP from now on (one already received and
    not yet handled included) change nothing."""
    if _in_main_thread():
        for signum in STOPPING:
            signal.signal(signum, signal.SIG_IGN)
