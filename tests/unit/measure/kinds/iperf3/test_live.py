"""A running iperf3 server's interval lines (nasplan/measure/kinds/iperf3/live.py), on the real
text output of iperf3 3.12's one-off server (``-s -1 -i 1 --forceflush``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.measure.kinds.iperf3.live import Interval, LiveRates, interval

SERVER_TEXT = Path(__file__).resolve().parents[4] / "fixtures/iperf3/3.12/server-text"


def said(name: str) -> str:
    return (SERVER_TEXT / f"{name}.txt").read_text()


def intervals(text: str) -> list[Interval]:
    return [found for line in text.splitlines() if (found := interval(line)) is not None]


def summary_bits_per_second(text: str, *, role: str = "") -> float:
    """The end-of-test line's rate (the one that ends with ``receiver`` or ``sender``, of all
    streams: ``[SUM]`` when there is one), read apart from the parser under test."""
    ends = [
        line for line in text.splitlines()
        if line.rstrip().endswith(("receiver", "sender")) and role in line
    ]  # fmt: skip
    line = next((line for line in ends if line.startswith("[SUM]")), ends[-1])
    number, unit = line.split("bits/sec")[0].split()[-2:]
    return float(number) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[unit]


def test_one_stream_gives_each_second_once_near_the_whole_test() -> None:
    text = said("tcp-single")
    rates = LiveRates(1).feed(text)
    assert [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]
    whole = summary_bits_per_second(text)
    assert all(0.8 * whole < rate < 1.2 * whole for _, rate in rates), (rates, whole)
    first, *_, sliver = intervals(text)
    assert (first.stream, first.role, first.start_s, first.omitted) == (6, None, 0.0, False)
    # the test's last packets after its third second: no second of their own
    assert (sliver.start_s, sliver.end_s) == (3.0, 3.0)
    assert interval("[  6]   3.00-3.04   sec  3.50 MBytes   734 Mbits/sec") is not None
    assert LiveRates(1).feed("[  6]   3.00-3.04   sec  3.50 MBytes   734 Mbits/sec\n") == []


def test_the_end_of_test_summary_is_no_interval() -> None:
    text = said("tcp-single")
    summary = [line for line in text.splitlines() if line.rstrip().endswith("receiver")]
    assert summary and all(interval(line) is None for line in summary)
    for line in text.splitlines():
        if "Server listening" in line or "Accepted connection" in line or line.startswith("-"):
            assert interval(line) is None


def test_several_streams_give_their_sum_lines() -> None:
    text = said("tcp-parallel-2")
    rates = LiveRates(2).feed(text)
    sums = [i for i in intervals(text) if i.stream is None and i.end_s > i.start_s]
    assert len({i.stream for i in intervals(text)} - {None}) == 2
    assert rates == [(i.end_s, i.bits_per_second) for i in sums]
    assert [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]
    whole = summary_bits_per_second(text)
    assert all(0.8 * whole < rate < 1.2 * whole for _, rate in rates), (rates, whole)


def test_reverse_gives_the_servers_sent_rate() -> None:
    text = said("tcp-reverse")
    rates = LiveRates(1).feed(text)
    assert [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]
    whole = summary_bits_per_second(text)
    assert all(0.8 * whole < rate < 1.2 * whole for _, rate in rates), (rates, whole)


@pytest.mark.parametrize(("name", "parallel"), [("tcp-bidir", 1), ("tcp-bidir-parallel-2", 2)])
def test_bidir_gives_what_the_server_receives(name: str, parallel: int) -> None:
    text = said(name)
    roles = {i.role for i in intervals(text)}
    assert roles == {"RX", "TX"}
    rates = LiveRates(parallel, bidir=True).feed(text)
    received = [
        (i.end_s, i.bits_per_second)
        for i in intervals(text)
        if i.role == "RX" and (i.stream is None) == (parallel > 1) and i.end_s > i.start_s
    ]
    assert rates == received and [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]
    whole = summary_bits_per_second(text, role="[RX-S]")
    assert all(0.8 * whole < rate < 1.2 * whole for _, rate in rates), (rates, whole)


def test_udp_gives_the_rate_whatever_follows_it() -> None:
    text = said("udp-100m")
    rates = LiveRates(1).feed(text)
    assert [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]
    assert all(90e6 < rate < 110e6 for _, rate in rates), rates


def test_omitted_seconds_are_left_out() -> None:
    text = said("tcp-omit-1")
    assert any(i.omitted for i in intervals(text))
    rates = LiveRates(1).feed(text)
    assert [at_s for at_s, _ in rates] == [1.0, 2.0, 3.0]


def test_lines_that_come_in_pieces_give_the_same_rates() -> None:
    text = said("tcp-parallel-2")
    live = LiveRates(2)
    pieces = [live.feed(text[i : i + 7]) for i in range(0, len(text), 7)]
    assert [rate for piece in pieces for rate in piece] == LiveRates(2).feed(text)
    # a second already said is not said again (a line repeated, or fed twice)
    assert live.feed(text) == []


def test_units_are_decimal_bits() -> None:
    line = "[  5]   1.00-2.00   sec   112 MBytes   941 Mbits/sec"
    assert interval(line) == Interval(5, None, 1.0, 2.0, 941e6, False)
    gbit = "[SUM][RX-S]   0.00-1.00   sec  1.10 GBytes  9.41 Gbits/sec"
    assert interval(gbit) == Interval(None, "RX", 0.0, 1.0, 9.41e9, False)
    assert interval("[  5]   0.00-1.00   sec  0.00 Bytes  0.00 bits/sec") is not None
