"""The running repetition's rate each second (nasplan/progress.py ``Progress.rate``): in place on
a terminal, never a line of its own in a log, nothing with ``-q``."""

from __future__ import annotations

import io

from rich.console import Console

from nasplan.progress import (
    LiveProgress,
    PlainProgress,
    QuietProgress,
    RedactedProgress,
    make_progress,
)


def live(buffer: io.StringIO) -> LiveProgress:
    return LiveProgress(Console(file=buffer, force_terminal=True, width=200, color_system=None))


def test_a_terminal_shows_the_latest_rate_on_the_tests_line() -> None:
    buffer = io.StringIO()
    progress = live(buffer)
    progress.test("net", 1, 3, 12.0)
    progress.rate("net", 941.2e6, 1.0)
    progress.rate("net", 938.4e6, 2.0)
    progress.rate("other", 1e9, 1.0)  # a test that is not running: nothing
    progress.close()
    last = buffer.getvalue().rsplit("test net", 1)[1].splitlines()[0]
    assert "repetition 1/3" in last and last.rstrip().endswith("now 938.4 Mbit/s"), last
    assert "other" not in buffer.getvalue()


def test_a_terminal_says_which_rate_and_forgets_it_with_the_next_repetition() -> None:
    buffer = io.StringIO()
    progress = live(buffer)
    progress.test("rev", 1, 2, 8.0)
    progress.rate("rev", 2.5e9, 1.0, "sent")
    progress.close()
    last = buffer.getvalue().rsplit("test rev", 1)[1].splitlines()[0]
    assert "repetition 1/2" in last and last.rstrip().endswith("now 2.50 Gbit/s sent"), last

    buffer = io.StringIO()
    progress = live(buffer)
    progress.test("rev", 1, 2, 8.0)
    progress.rate("rev", 2.5e9, 1.0, "sent")
    progress.test("rev", 2, 2, 8.0)
    progress.close()
    last = buffer.getvalue().rsplit("test rev", 1)[1].splitlines()[0]
    assert "repetition 2/2" in last and "now" not in last, last


def test_a_finished_test_shows_its_result_not_a_rate() -> None:
    buffer = io.StringIO()
    progress = live(buffer)
    progress.test("net", 1, 1, 4.0)
    progress.rate("net", 941.2e6, 3.0, "forward")
    progress.test_done("net", "ok", "median 940.0 Mbit/s")
    progress.close()
    last = buffer.getvalue().rsplit("test net", 1)[1].splitlines()[0]
    assert last.split() == ["ok", "median", "940.0", "Mbit/s"], last


def test_a_log_gets_no_line_a_second() -> None:
    buffer = io.StringIO()
    progress = make_progress(buffer)
    assert isinstance(progress, PlainProgress)
    progress.test("net", 1, 2, 8.0)
    for second in range(1, 4):
        progress.rate("net", 941e6, float(second))
    progress.test("net", 2, 2, 8.0)
    progress.rate("net", 941e6, 1.0)
    progress.test_done("net", "ok", "median 941.0 Mbit/s")
    assert buffer.getvalue().splitlines() == [
        "test net: repetition 1/2 (~8 s in all)",
        "test net: repetition 2/2 (~8 s in all)",
        "test net: ok median 941.0 Mbit/s",
    ]


def test_quiet_says_no_rate() -> None:
    buffer = io.StringIO()
    progress = make_progress(buffer, quiet=True)
    assert isinstance(progress, QuietProgress)
    progress.test("net", 1, 1, 4.0)
    progress.rate("net", 941e6, 1.0)
    progress.test_done("net", "ok", "median 941.0 Mbit/s")
    assert buffer.getvalue() == ""


def test_a_redacted_progress_passes_the_rate_on() -> None:
    buffer = io.StringIO()
    inner = live(buffer)
    progress = RedactedProgress(inner, ["s3cret"])
    progress.test("net", 1, 1, 4.0)
    progress.rate("net", 941.2e6, 1.0, "sent")
    progress.close()
    assert "now 941.2 Mbit/s sent" in buffer.getvalue().rsplit("test net", 1)[1]


def test_a_test_waiting_for_its_next_round_has_no_clock_and_no_rate() -> None:
    buffer = io.StringIO()
    progress = live(buffer)
    progress.test("smb", 1, 3, 12.0)
    progress.rate("smb", 941.2e6, 1.0)
    progress.waiting("smb", "1 of 3 repetitions done, last 281.2 MiB/s")
    progress.rate("smb", 900e6, 2.0)  # a late rate of the part that ended: not shown
    progress.close()
    last = buffer.getvalue().rsplit("test smb", 1)[1].splitlines()[0]
    assert last.split() == [
        "waiting:",
        "1",
        "of",
        "3",
        "repetitions",
        "done,",
        "last",
        "281.2",
        "MiB/s",
    ], last

    buffer = io.StringIO()
    progress = live(buffer)
    progress.waiting("smb", "1 of 3 repetitions done, last 281.2 MiB/s")
    progress.test("smb", 2, 3, 12.0)  # its next round: running again, its clock from 0
    progress.close()
    last = buffer.getvalue().rsplit("test smb", 1)[1].splitlines()[0]
    assert "repetition 2/3" in last and "waiting" not in last and " 0/12 s" in last, last
