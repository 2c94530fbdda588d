"""The running iperf3 test's rate each second (kinds/iperf3/live_rate.py): a launched server's
real output (iperf3 3.12, ``-i 1``) read as repeating work, each second to the progress."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from nasplan.measure.kinds.iperf3.live_rate import LiveRate, what_of
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.progress import PlainProgress

SERVER_TEXT = Path(__file__).resolve().parents[4] / "fixtures/iperf3/3.12/server-text"


class Rates(PlainProgress):
    """A plain progress that keeps each rate it is given."""

    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.rates: list[tuple[str, float, float, str]] = []

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        self.rates.append((test_id, bits_per_second, at_s, what))


class Stopped:
    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Looks:
    """Tasks whose repeating work runs when the test says (``look``), as a run's timer would."""

    def __init__(self) -> None:
        self.work: list[Callable[[], bool]] = []
        self.handles: list[Stopped] = []
        self.intervals_s: list[float] = []

    def every(
        self, interval_s: float, work: Callable[[], bool], name: str, *, first_s: float
    ) -> Stopped:
        self.work.append(work)
        self.intervals_s.append(interval_s)
        self.handles.append(Stopped())
        return self.handles[-1]

    def look(self) -> bool:
        return self.work[-1]()


def reader(chunks: list[str]) -> Callable[[], str | None]:
    """``Launched.read`` over ``chunks``, then the end (None)."""
    return lambda: chunks.pop(0) if chunks else None


def test_each_second_of_a_launched_server_goes_to_the_progress_as_it_comes() -> None:
    text = (SERVER_TEXT / "tcp-single.txt").read_text()
    tasks, progress = Looks(), Rates()
    live = LiveRate(tasks, progress, "net", Iperf3Params(duration_s=3))
    half = len(text) // 2
    live.follow(reader([text[:half], "", text[half:]]))
    assert tasks.intervals_s == [pytest.approx(0.25)]
    assert tasks.look() and tasks.look() and tasks.look()
    assert not tasks.look()  # its output ended: no further look
    assert [(t, at_s, what) for t, _, at_s, what in progress.rates] == [
        ("net", 1.0, ""), ("net", 2.0, ""), ("net", 3.0, "")
    ]  # fmt: skip
    assert all(5e8 < rate < 1.1e9 for _, rate, _, _ in progress.rates)


def test_a_new_repetition_stops_the_last_ones_reading_and_the_result_stops_it() -> None:
    tasks, progress = Looks(), Rates()
    live = LiveRate(tasks, progress, "net", Iperf3Params(duration_s=3))
    live.follow(reader([]))
    live.follow(reader([]))
    assert [h.stopped for h in tasks.handles] == [True, False]
    live.stop()
    assert tasks.handles[-1].stopped


def test_a_reader_that_fails_only_ends_the_reading() -> None:
    def broken() -> str | None:
        raise OSError("channel gone")

    tasks, progress = Looks(), Rates()
    LiveRate(tasks, progress, "net", Iperf3Params(duration_s=3)).follow(broken)
    assert not tasks.look() and progress.rates == []


@pytest.mark.parametrize(
    ("params", "what"),
    [
        (Iperf3Params(duration_s=3), ""),
        (Iperf3Params(duration_s=3, reverse=True), "sent"),
        (Iperf3Params(duration_s=3, bidir=True), "forward"),
        (Iperf3Params(duration_s=3, bidir=True, reverse=True), "forward"),
    ],
)
def test_the_rate_is_named_by_what_the_server_does(params: Iperf3Params, what: str) -> None:
    assert what_of(params) == what


def test_bidir_reads_what_the_server_received() -> None:
    text = (SERVER_TEXT / "tcp-bidir.txt").read_text()
    tasks, progress = Looks(), Rates()
    params = Iperf3Params(duration_s=3, bidir=True)
    LiveRate(tasks, progress, "both", params).follow(reader([text]))
    assert tasks.look()
    assert [(at_s, what) for _, _, at_s, what in progress.rates] == [
        (1.0, "forward"), (2.0, "forward"), (3.0, "forward")
    ]  # fmt: skip
