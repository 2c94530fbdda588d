"""ping argv and the parser, on real iputils and busybox output (tests/fixtures/ping)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.tools import ping

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ping"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_iputils_rtt_and_loss() -> None:
    parsed = ping.parse(fixture("iputils-ok.txt"))
    assert (parsed["packets"], parsed["received"], parsed["lost_percent"]) == (5, 5, 0.0)
    assert parsed["rtt_min_ms"] == 0.057
    assert parsed["rtt_avg_ms"] == 0.237
    assert parsed["rtt_max_ms"] == 0.919
    assert parsed["rtt_mdev_ms"] == 0.341


def test_busybox_has_no_mdev() -> None:
    parsed = ping.parse(fixture("busybox-ok.txt"))
    assert parsed["rtt_avg_ms"] == 0.073
    assert parsed["rtt_mdev_ms"] is None
    assert parsed["received"] == 5


@pytest.mark.parametrize("name", ["iputils-no-reply.txt", "busybox-unreachable.txt"])
def test_no_reply_is_full_loss_without_rtt(name: str) -> None:
    parsed = ping.parse(fixture(name))
    assert parsed["received"] == 0
    assert parsed["lost_percent"] == 100.0
    assert parsed["rtt_avg_ms"] is None


def test_local_mtu_too_small_is_reported() -> None:
    parsed = ping.parse(fixture("iputils-df-8972-local-mtu.txt"))
    assert parsed["local_mtu_bytes"] == 1500
    assert parsed["errors"] == 2
    assert parsed["received"] == 0


def test_output_without_statistics_raises_with_pings_message() -> None:
    with pytest.raises(ping.PingError, match="ping broadcast"):
        ping.parse(fixture("iputils-broadcast-refused.txt"))


def test_df_probe_argv_fills_one_mtu() -> None:
    params = ping.PingParams(count=2, payload_bytes=1500 - 28, dont_fragment=True)
    argv = ping.ping_argv("/bin/ping", "198.18.34.10", params)
    assert argv[-1] == "198.18.34.10"
    assert argv[argv.index("-M") + 1] == "do"
    assert argv[argv.index("-s") + 1] == "1472"


def probed_sizes(runner: Any) -> list[int]:
    """The packet sizes (payload + 28 header bytes) the probe sent, in order."""
    return [int(text.split()[text.split().index("-s") + 1]) + 28 for text in runner.texts("-s")]


def test_mtu_probe_one_probe_when_expected_mtu_passes(fake_runner: Any, df_path: Any) -> None:
    runner = fake_runner("ws").allow("-M do", reply=df_path(9000))
    probe = ping.probe_path_mtu(runner, "ping", "198.18.34.10", 9000)
    assert probe["ok"] and probe["path_mtu_bytes"] == 9000
    assert probed_sizes(runner) == [9000]


def test_mtu_probe_finds_the_smaller_path_mtu(fake_runner: Any, df_path: Any) -> None:
    runner = fake_runner("ws").allow("-M do", reply=df_path(1500))
    probe = ping.probe_path_mtu(runner, "ping", "198.18.34.10", 9000)
    assert probe["path_mtu_bytes"] == 1500
    assert probe["ok"] is False
    assert len(probed_sizes(runner)) < 20


def test_mtu_probe_of_a_loopback_expects_the_largest_ipv4_packet(
    fake_runner: Any, df_path: Any
) -> None:
    """Linux's lo has MTU 65536; no IPv4 packet is larger than 65535 bytes."""
    runner = fake_runner("ws").allow("-M do", reply=df_path(ping.IPV4_MAX_PACKET_BYTES))
    probe = ping.probe_path_mtu(runner, "ping", "127.0.0.1", 65536)
    assert (probe["ok"], probe["path_mtu_bytes"], probe["expected_mtu_bytes"]) == (
        True,
        65535,
        65535,
    )
    assert probed_sizes(runner) == [65535]
