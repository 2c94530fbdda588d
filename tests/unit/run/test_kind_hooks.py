"""What a run lends a kind around a teardown: the hosts it works on decide which release waits
for it, and what runs beside it is settled with it."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

from nasplan.progress import PlainProgress
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.overlap import Overlap


def _hooks(tmp_path: Path) -> KindHooks:
    return KindHooks(tmp_path, Overlap.concurrent(), {}, PlainProgress(io.StringIO()))


def test_a_teardown_that_names_its_hosts_holds_only_their_releases(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)
    stopping = threading.Event()
    hooks.defer(lambda: stopping.wait() and {}, hosts={"nas"})
    assert hooks.teardown_on("nas") is not None
    assert hooks.teardown_on("ws") is None  # the client host's release does not wait
    stopping.set()
    hooks.settle()
    assert hooks.teardown_on("nas") is None  # settled: nothing left to wait for

    hooks.defer(lambda: {})  # hosts unknown: any of the test's waits
    assert hooks.teardown_on("ws") is not None and hooks.teardown_on("nas") is not None
    hooks.settle()


def test_work_beside_the_teardown_is_settled_with_it(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)
    tasks = Overlap.concurrent()
    ended: list[str] = []
    hooks.defer(lambda: ended.append("teardown") or {}, hosts={"nas"})
    hooks.beside([tasks.start(lambda: time.sleep(0.2) or ended.append("release"), "release")])
    hooks.settle()  # what the next measurement waits for: both
    assert sorted(ended) == ["release", "teardown"]


def test_a_measurement_on_other_hosts_does_not_wait_for_the_teardown(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)
    tasks = Overlap.concurrent()
    stopping = threading.Event()
    hooks.defer(lambda: stopping.wait() and {}, hosts={"nas"})
    hooks.beside([tasks.start(stopping.wait, "release ws")])
    hooks.settle({"nas2", "ws2"})  # returns at once: nothing of it runs there
    assert hooks.teardown_on("nas") is not None  # still pending, settled later
    waited = threading.Thread(target=hooks.settle, args=({"ws2", "nas"},))
    waited.start()
    waited.join(0.1)
    assert waited.is_alive()  # a measurement on nas waits for the teardown there
    stopping.set()
    waited.join(2)
    assert not waited.is_alive() and hooks.teardown_on("nas") is None
