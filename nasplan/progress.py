"""Progress of an apply: a live line per host and per test (running, with its clock and rate;
waiting for its next round, dimmed, with how far it got; done), or plain lines off a TTY."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from nasplan.units import format_bits_per_second

if TYPE_CHECKING:  # rich is imported only for a terminal: plain runs skip its import time
    from rich.console import Console, Group


@dataclass(frozen=True)
class Place:
    """Where a run stands as a part of a test begins: the test, its place among the plan's
    tests (``cell`` of ``cells``), its repetitions (``"5"``, ``"3–15"``), the rate of its last
    repetition, and the time the run still needs (at least, at most; None: not known yet)."""

    test: str
    cell: int
    cells: int
    repetitions: str
    last: str | None = None
    left_s: tuple[float, float] | None = None
    noun: str = "test"  # a matrix's tests are its cells

    def text(self) -> str:
        """``test 2 of 6, last 941.2 Mbit/s, ~4 min left`` ("" for a one-test run's start)."""
        parts = [f"{self.noun} {self.cell} of {self.cells}"] if self.cells > 1 else []
        if self.last:
            parts.append(f"last {self.last}")
        if self.left_s is not None:
            low_s, high_s = self.left_s
            size, unit = _unit(high_s)
            low, high = (f"{s / size:.{1 if unit == 'h' else 0}f}" for s in (low_s, high_s))
            parts.append(f"~{high} {unit} left" if low == high else f"{low}–{high} {unit} left")
        return ", ".join(parts)


def _unit(seconds: float) -> tuple[float, str]:
    """The unit a time left is said in: s, min or h."""
    if seconds < 90:
        return 1.0, "s"
    return (60.0, "min") if seconds < 5400 else (3600.0, "h")


class Progress:
    """What apply reports while it works; ``place`` before each part of a test (a run of
    several tests, or in parts, says where it stands). Each event does nothing here: a display
    writes those it shows."""

    def host(self, name: str, status: str) -> None:
        """A host's state (``facts``, ``ready``, ``[unreachable] ...``)."""

    def place(self, place: Place) -> None:
        """Where the run stands as a part of a test begins."""

    def test(
        self,
        test_id: str,
        repetition: int,
        repetitions: int,
        total_s: float,
        direction: str | None = None,
    ) -> None:
        """A repetition of ``test_id`` begins (``total_s``: the test's estimate, 0: none)."""

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        """The running repetition's rate in the second that ended ``at_s`` into it, as its tool
        said it meanwhile; ``what``: which rate (``sent``: the sender's; ``forward``: one of
        two directions), "" for what arrived. Only a live line shows it: a log would get a line
        a second."""

    def waiting(self, test_id: str, summary: str) -> None:
        """A part of the test ended and it waits for its next one (an interleaved run's next
        round): ``summary`` says how far it got; nothing of it runs meanwhile. A log does not
        print it: its next line for the test says its next repetition began."""

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        """A test ended: its status (``ok``, ``failed``, ...) and its summary."""

    def message(self, text: str) -> None:
        """A line of its own (a problem, a network step)."""

    def close(self) -> None:
        """The run ended: let go of the display."""


def step_text(
    repetition: int, repetitions: int | str, total_s: float, direction: str | None
) -> str:
    """``write, repetition 2/5 (~12 s in all)``: the plan's repetitions of one direction; the
    estimate only when there is one (a disk test's time depends on the disk)."""
    text = f"repetition {repetition}/{repetitions}"
    if direction:
        text = f"{direction}, {text}"
    return f"{text} (~{total_s:.0f} s in all)" if total_s >= 1 else text


class PlainProgress(Progress):
    """One line per event, for logs and pipes (not a rate: a line each second would bury a log's
    lines)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()
        self._place: Place | None = None

    def place(self, place: Place) -> None:
        self._place = place

    def _print(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)

    def host(self, name: str, status: str) -> None:
        self._print(f"host {name}: {status}")

    def test(
        self,
        test_id: str,
        repetition: int,
        repetitions: int,
        total_s: float,
        direction: str | None = None,
    ) -> None:
        place = self._place if self._place and self._place.test == test_id else None
        if place is None:
            self._print(f"test {test_id}: {step_text(repetition, repetitions, total_s, direction)}")
            return
        where = place.text()
        step = step_text(repetition, place.repetitions, 0.0 if where else total_s, direction)
        self._print(f"test {test_id}: {step}" + (f" ({where})" if where else ""))

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        self._print(f"test {test_id}: {status} {summary}".rstrip())

    def message(self, text: str) -> None:
        self._print(text)


def style_of(status: str) -> str:
    """The colour a status is shown in on a terminal: ``green`` ok, ``yellow`` ok with a
    warning (a caveat's ``⚠``) or skipped, ``red`` failed (or a host ``[lost]``), "" else.
    NO_COLOR and a log stay plain: rich drops colours under NO_COLOR, PlainProgress has none."""
    word = status.split(" ", 1)[0]
    if word.startswith("[") or word in ("failed", "error", "interrupted", "lost"):
        return "red"
    if word == "skipped" or "⚠" in status or word.startswith("warning"):
        return "yellow"
    return "green" if word == "ok" else ""


class LiveProgress(Progress):
    """A rich live view that fits the terminal: one overall line (rich.progress's columns:
    cells done of the plan's, a bar, repetitions done, the time left nasplan estimates, the
    time so far), the hosts, the last finished tests, and every running test, never cut (rich
    would crop a view taller than the terminal from the bottom: the running test first)."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.console = console or Console(stderr=True)
        self._hosts: dict[str, str] = {}
        self._tests: dict[str, tuple[str, float, float]] = {}
        self._rates: dict[str, str] = {}  # test -> its running repetition's rate, said
        self._waiting: set[str] = set()  # tests between two parts (an interleaved run)
        self._done: list[str] = []  # finished tests, in the order they finished
        self._repetitions_done = 0
        self._place: Place | None = None
        self._lock = threading.Lock()
        self._bar = Bar(
            TextColumn("[bold]{task.fields[noun]}s[/] {task.completed:.0f}/{task.total:.0f}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[repetitions]}"),
            TextColumn("{task.fields[left]}"),
            TimeElapsedColumn(),
            console=self.console,
            auto_refresh=False,
        )
        self._task = self._bar.add_task("run", total=1, noun="test", repetitions="", left="")
        self._live = Live(get_renderable=self._render, console=self.console, refresh_per_second=4)
        self._live.start()

    def _lines(self) -> list[tuple[str, str, str]]:
        """(label, status, style) of every line below the overall one that fits, in order:
        hosts, the last finished tests, the running ones (all of them), the waiting ones."""
        now = time.monotonic()
        running, waiting = [], []
        for test_id, (status, started, total_s) in self._tests.items():
            if test_id in self._done:
                continue
            if test_id in self._waiting:  # nothing of it runs: no clock, no rate
                waiting.append((f"test {test_id}", status, "dim"))
                continue
            if started and total_s >= 1:
                status = f"{status}  {now - started:.0f}/{total_s:.0f} s"
            elif started:
                status = f"{status}  {now - started:.0f} s"
            if test_id in self._rates:
                status = f"{status}, {self._rates[test_id]}"
            running.append((f"test {test_id}", status, "bold"))
        # the overall line, the cursor, and the line said after the view (the report's path)
        room = max(0, self.console.size.height - 3 - len(running))
        hosts = [(f"host {n}", s, style_of(s)) for n, s in self._hosts.items()]
        if len(hosts) > room // 2:  # many hosts: one line for those that are fine
            fine = [h for h in hosts if not h[2]]
            hosts = [h for h in hosts if h[2]][: max(0, room // 2 - 1)]
            if fine:
                names = ", ".join(h[0][5:] for h in fine)
                hosts.insert(0, (f"{len(fine)} hosts", names, "dim"))
        hosts = hosts[:room]
        room -= len(hosts)
        waiting = waiting[: max(0, room - 1)] if room else []
        room -= len(waiting)
        done = [(f"test {t}", self._tests[t][0], style_of(self._tests[t][0])) for t in self._done]
        if len(done) > room:
            shown = done[len(done) - room + 1 :] if room > 1 else []
            hidden = done[: len(done) - len(shown)]
            bad = sum(1 for d in hidden if d[2] == "red")
            said = f"{len(hidden)} earlier finished" + (f", {bad} of them failed" if bad else "")
            done = ([("…", said, "red" if bad else "dim")] if room else []) + shown
        return [*hosts, *done, *running, *waiting]

    def _render(self) -> Group:
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table

        # Every text is escaped: rich would take `[unreachable]` or `[in use]` for markup and
        # drop it, and raise MarkupError on a `[/` in a message.
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)  # a line a test: a wrapped one would push others out
        table.add_column(no_wrap=True, overflow="ellipsis")
        with self._lock:
            place = self._place
            if place is not None:
                left = place.text().rsplit(", ", 1)[-1] if place.left_s else ""
                self._bar.update(
                    self._task,
                    completed=len(self._done),
                    total=max(place.cells, len(self._done)),
                    noun=place.noun,
                    left=left if left.endswith("left") and len(self._done) < place.cells else "",
                )
            done = self._repetitions_done
            self._bar.update(
                self._task, repetitions=f"{done} repetition{'s' if done != 1 else ''} done"
            )
            for label, status, style in self._lines():
                head, _, name = label.partition(" ")
                shown = f"[bold]{escape(head)}[/] {escape(name)}" if name else escape(head)
                if style == "dim":
                    shown = f"[dim]{escape(label)}[/]"
                table.add_row(shown, f"[{style}]{escape(status)}[/]" if style else escape(status))
        return Group(self._bar.get_renderable(), table)

    def host(self, name: str, status: str) -> None:
        with self._lock:
            self._hosts[name] = status

    def place(self, place: Place) -> None:
        with self._lock:
            self._place = place

    def test(
        self,
        test_id: str,
        repetition: int,
        repetitions: int,
        total_s: float,
        direction: str | None = None,
    ) -> None:
        with self._lock:
            if test_id in self._tests and test_id not in self._waiting:
                self._repetitions_done += 1  # the test's previous repetition ended
            if test_id in self._waiting:  # its next part begins: its clock starts again
                self._waiting.discard(test_id)
                self._tests.pop(test_id, None)
            if test_id in self._done:  # run again (a resumed part): running, not finished
                self._done.remove(test_id)
            started = self._tests.get(test_id, ("", 0.0, 0.0))[1] or time.monotonic()
            place = self._place if self._place and self._place.test == test_id else None
            shown = place.repetitions if place else repetitions
            step = step_text(repetition, shown, 0.0, direction)
            if place is not None and place.cells > 1:  # the overall line says where the run is
                step, total_s = step + (f" (last {place.last})" if place.last else ""), 0.0
            self._tests[test_id] = (step, started, total_s)
            self._rates.pop(test_id, None)

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        said = f"now {format_bits_per_second(bits_per_second)}" + (f" {what}" if what else "")
        with self._lock:
            if test_id in self._tests and test_id not in self._waiting:
                self._rates[test_id] = said  # drawn at the live display's next refresh

    def waiting(self, test_id: str, summary: str) -> None:
        with self._lock:
            if test_id in self._tests and test_id not in self._waiting:
                self._repetitions_done += 1
            self._tests[test_id] = (f"waiting: {summary}", 0.0, 0.0)
            self._rates.pop(test_id, None)
            self._waiting.add(test_id)

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        with self._lock:
            if test_id in self._tests and test_id not in self._waiting:
                self._repetitions_done += 1
            self._tests[test_id] = (f"{status} {summary}".rstrip(), 0.0, 0.0)
            self._rates.pop(test_id, None)
            self._waiting.discard(test_id)
            if test_id in self._done:
                self._done.remove(test_id)
            self._done.append(test_id)

    def message(self, text: str) -> None:
        from rich.markup import escape

        word = text.split(" ", 1)[0]
        style = "red" if word in ("nasplan:", "problem:") else "yellow" if "⚠" in text else ""
        self.console.print(escape(text), style=style or None, highlight=False)

    def close(self) -> None:
        self._live.stop()


class QuietProgress(Progress):
    """``-q``: only what went wrong (a host's ``[unreachable]``, ``[lost]``, ``[failed]``..., a
    test that did not end ok, a problem or a failed network step), as plain lines."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.inner = PlainProgress(stream)

    def host(self, name: str, status: str) -> None:
        if status.startswith("[") or status.startswith("network: failed"):
            self.inner.host(name, status)

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        if status != "ok":
            self.inner.test_done(test_id, status, summary)

    def message(self, text: str) -> None:
        if text.startswith(("nasplan:", "problem:", "network:")):
            self.inner.message(text)


def make_progress(stream: TextIO | None = None, *, quiet: bool = False) -> Progress:
    """Live progress on a terminal, plain lines otherwise; ``quiet``: errors only."""
    target = stream or sys.stderr
    if quiet:
        return QuietProgress(target)
    if target.isatty():
        from rich.console import Console

        return LiveProgress(Console(file=target))
    return PlainProgress(target)


class RedactedProgress(Progress):
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

    def place(self, place: Place) -> None:
        self.inner.place(place)

    def test(
        self,
        test_id: str,
        repetition: int,
        repetitions: int,
        total_s: float,
        direction: str | None = None,
    ) -> None:
        self.inner.test(test_id, repetition, repetitions, total_s, direction)

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        self.inner.rate(test_id, bits_per_second, at_s, what)

    def waiting(self, test_id: str, summary: str) -> None:
        self.inner.waiting(test_id, self._clean(summary))

    def test_done(self, test_id: str, status: str, summary: str) -> None:
        self.inner.test_done(test_id, status, self._clean(summary))

    def message(self, text: str) -> None:
        self.inner.message(self._clean(text))

    def close(self) -> None:
        self.inner.close()
