"""Progress of an apply: a live line per host and per running test, or plain lines off a TTY."""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table


class Progress(Protocol):
    """What apply reports while it works."""

    def host(self, name: str, status: str) -> None: ...

    def test(self, test_id: str, repetition: int, repetitions: int, total_s: float) -> None: ...

    def test_done(self, test_id: str, status: str, summary: str) -> None: ...

    def message(self, text: str) -> None: ...

    def close(self) -> None: ...


class PlainProgress:
    """One line per event, for logs and pipes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()

    def _print(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)

    def host(self, name: str, status: str) -> None:
        self._print(f"host {name}: {status}")

    def test(self, test_id: str, repetition: int, repetitions: int, total_s: float) -> None:
        self._print(
            f"test {test_id}: repetition {repetition}/{repetitions} (~{total_s:.0f} s in all)"
        )

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        self._print(f"test {test_id}: {status} {summary}".rstrip())

    def message(self, text: str) -> None:
        self._print(text)

    def close(self) -> None:
        pass


class LiveProgress:
    """A rich live table: a line per host and per test, with elapsed of total time."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._hosts: dict[str, str] = {}
        self._tests: dict[str, tuple[str, float, float]] = {}
        self._lock = threading.Lock()
        self._live = Live(get_renderable=self._render, console=self.console, refresh_per_second=4)
        self._live.start()

    def _render(self) -> Table:
        table = Table.grid(padding=(0, 2))
        now = time.monotonic()
        with self._lock:
            for name, status in self._hosts.items():
                table.add_row(f"[bold]host[/] {name}", status)
            for test_id, (status, started, total_s) in self._tests.items():
                if started:
                    status = f"{status}  {now - started:.0f}/{total_s:.0f} s"
                table.add_row(f"[bold]test[/] {test_id}", status)
        return table

    def host(self, name: str, status: str) -> None:
        with self._lock:
            self._hosts[name] = status

    def test(self, test_id: str, repetition: int, repetitions: int, total_s: float) -> None:
        with self._lock:
            started = self._tests.get(test_id, ("", 0.0, 0.0))[1] or time.monotonic()
            self._tests[test_id] = (f"repetition {repetition}/{repetitions}", started, total_s)

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        with self._lock:
            self._tests[test_id] = (f"{status} {summary}".rstrip(), 0.0, 0.0)

    def message(self, text: str) -> None:
        self.console.print(text)

    def close(self) -> None:
        self._live.stop()


def make_progress(stream: TextIO | None = None) -> Progress:
    """Live progress on a terminal, plain lines otherwise."""
    target = stream or sys.stderr
    if target.isatty():
        return LiveProgress(Console(file=target))
    return PlainProgress(target)


class RedactedProgress:
    """Progress whose every line passes the run's secrets (a live list: secrets learned during
    the run, such as an SMB password read from the environment, are masked from then on)."""

    def __init__(self, inner: Progress, secrets: list[str]) -> None:
        self.inner = inner
        self.secrets = secrets

    def _clean(self, text: str) -> str:
        from nasplan.output import redactor_of

        return redactor_of(self.secrets).text(text)

    def host(self, name: str, status: str) -> None:
        self.inner.host(name, self._clean(status))

    def test(self, test_id: str, repetition: int, repetitions: int, total_s: float) -> None:
        self.inner.test(test_id, repetition, repetitions, total_s)

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        self.inner.test_done(test_id, status, self._clean(summary))

    def message(self, text: str) -> None:
        self.inner.message(self._clean(text))

    def close(self) -> None:
        self.inner.close()
