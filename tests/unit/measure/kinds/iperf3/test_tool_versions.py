"""iperf3's own outputs from several versions (tests/fixtures/iperf3/README.md says where each
came from): what nasplan reads from each is what a user would read off iperf3's summary lines.

3.6 and 3.9 (a cloud benchmark's results), 3.16 (UDP into a link it overran, 92 % lost; a
paced 1 Mbit/s run), 3.10.1 (--bidir when iperf3 still wrote each sum twice; UDP with only
``end.sum``), 3.18 (multi-threaded -P 4, --bidir with and without -P, UDP with loss), and the
text a 3.10.1 / 3.18 server prints each second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.iperf3.live import LiveRates
from nasplan.measure.kinds.iperf3.tool import parse, single_threaded

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3"
MBIT = 1e6


def parsed(name: str) -> dict[str, Any]:
    # bytes as they came: the 3.6 capture ends its lines with CRLF
    return parse((FIXTURES / name).read_bytes().decode())


def mbit(value: float | None) -> float:
    assert value is not None
    return round(value / MBIT, 2)


def test_iperf_3_6_a_transfer_of_200_mib_with_windows_line_ends() -> None:
    result = parsed("3.6/tcp-200MiB-crlf.json")
    assert result["iperf3_version"] == "3.6"
    assert (mbit(result["bits_per_second"]), mbit(result["sent_bits_per_second"])) == (
        87.44,
        88.93,
    )
    # -n 200M: iperf3 stops once the 128 KiB block that crosses 200 MiB went out; the
    # receiver's count is what arrived by then
    assert result["bytes"] == 210_143_232 and result["retransmits"] == 0
    assert result["streams"] == 1 and result["protocol"] == "tcp"


def test_iperf_3_9_the_omitted_seconds_are_left_out() -> None:
    result = parsed("3.9/tcp-omit-3.json")
    assert result["omit_s"] == 3
    # 13 intervals in the file, the first 3 omitted: the 1049 retransmits of one of those
    # are not the test's
    assert len(result["intervals"]) == 10
    assert result["retransmits"] == 0
    assert (mbit(result["bits_per_second"]), mbit(result["sent_bits_per_second"])) == (
        298.45,
        298.96,
    )
    stream = result["per_stream"][0]
    assert stream["min_rtt_us"] and stream["mean_rtt_us"] and stream["max_snd_cwnd_bytes"]


def test_iperf_3_16_udp_that_lost_92_percent_reports_what_arrived() -> None:
    result = parsed("3.16/udp-unlimited-loss-92pct.json")
    assert result["protocol"] == "udp" and result["retransmits"] is None
    assert mbit(result["bits_per_second"]) == 131.58  # arrived, not the 1667 Mbit/s sent
    assert mbit(result["sent_bits_per_second"]) == 1667.4
    assert round(result["lost_percent"], 2) == 92.03
    assert (result["lost_packets"], result["packets"]) == (2744190, 2981957)
    assert round(result["jitter_ms"], 4) == 0.0513


def test_iperf_3_16_paced_udp_without_loss() -> None:
    result = parsed("3.16/udp-1m.json")
    assert mbit(result["bits_per_second"]) == 1.0
    assert (result["lost_packets"], result["lost_percent"]) == (0, 0.0)
    assert round(result["jitter_ms"], 4) == 0.0515
    assert len(result["intervals"]) == 20


def test_iperf_3_10_bidir_each_direction_though_its_sums_came_twice() -> None:
    """3.7 to 3.10 wrote --bidir's reverse sums under the forward sums' keys: read as plain
    JSON, the reverse direction's figures replaced the forward's in silence."""
    result = parsed("3.10.1/tcp-bidir.json")
    assert (mbit(result["bits_per_second"]), mbit(result["sent_bits_per_second"])) == (
        950.58,
        964.64,
    )
    assert (
        mbit(result["reverse_bits_per_second"]),
        mbit(result["reverse_sent_bits_per_second"]),
    ) == (951.59, 964.12)
    assert all(row["reverse_bits_per_second"] for row in result["intervals"])
    assert [round(row["bits_per_second"] / MBIT) for row in result["intervals"]] == [978, 951]


def test_iperf_3_10_udp_has_only_the_senders_sum() -> None:
    result = parsed("3.10.1/udp-100m-over-90m-link.json")
    # the link's 90 Mbit/s paced the sender itself (its socket said "no buffer space"): what
    # it sent all arrived
    assert mbit(result["bits_per_second"]) == 87.76
    assert (result["lost_packets"], result["packets"]) == (0, 15152)


def test_iperf_3_18_four_streams_each_in_its_own_thread() -> None:
    result = parsed("3.18/tcp-parallel-4.json")
    assert not single_threaded("3.18")  # 3.16+: no one core for all four streams
    assert result["streams"] == 4
    assert [mbit(s["bits_per_second"]) for s in result["per_stream"]] == [
        245.65,
        244.61,
        245.65,
        239.37,
    ]
    assert mbit(sum(s["bits_per_second"] for s in result["per_stream"])) == mbit(
        result["sent_bits_per_second"]
    )
    assert mbit(result["bits_per_second"]) == 956.52


@pytest.mark.parametrize(
    ("name", "streams", "forward", "reverse"),
    [
        ("3.18/tcp-bidir.json", 1, (947.08, 959.63), (949.17, 962.77)),
        ("3.18/tcp-bidir-parallel-2.json", 2, (947.15, 971.03), (955.0, 982.02)),
    ],
)
def test_iperf_3_18_bidir_each_direction(
    name: str, streams: int, forward: tuple[float, float], reverse: tuple[float, float]
) -> None:
    result = parsed(name)
    assert result["streams"] == streams
    assert (mbit(result["bits_per_second"]), mbit(result["sent_bits_per_second"])) == forward
    assert (
        mbit(result["reverse_bits_per_second"]),
        mbit(result["reverse_sent_bits_per_second"]),
    ) == reverse
    # the streams the client sent on: the reverse ones are the server's to report
    assert len(result["per_stream"]) == streams


def test_iperf_3_18_udp_with_loss() -> None:
    result = parsed("3.18/udp-100m-over-90m-link.json")
    assert (mbit(result["bits_per_second"]), mbit(result["sent_bits_per_second"])) == (
        86.33,
        99.97,
    )
    assert round(result["lost_percent"], 2) == 13.33
    assert (result["lost_packets"], result["packets"]) == (2302, 17267)


@pytest.mark.parametrize("version", ["3.10.1", "3.18"])
@pytest.mark.parametrize(
    ("name", "parallel", "bidir"),
    [("tcp-parallel-4", 4, False), ("tcp-bidir", 1, True), ("tcp-bidir-parallel-2", 2, True)],
)
def test_a_servers_text_gives_the_rate_each_second(
    version: str, name: str, parallel: int, bidir: bool
) -> None:
    text = (FIXTURES / version / "server-text" / f"{name}.txt").read_text()
    rates = LiveRates(parallel, bidir=bidir).feed(text)
    # three whole seconds of a 3 s test on a 1 Gbit/s link: the sliver after them left out
    assert [second for second, _ in rates] == [1.0, 2.0, 3.0]
    assert all(930 * MBIT <= rate <= 960 * MBIT for _, rate in rates), rates
