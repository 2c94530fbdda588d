"""iperf3's options users reach for (-C, -l, -B, -4/-6, -n, DSCP): argv and what iperf3 said it
used, read from real 3.12 output captured with these options (tests/fixtures/iperf3/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import (
    DSCP_NAMES,
    client_argv,
    parse,
)

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.12"


def parsed(name: str) -> dict[str, Any]:
    return parse((FIXTURES / name).read_text())


def test_each_option_reaches_the_argv() -> None:
    params = Iperf3Params(
        duration_s=2,
        congestion="reno",
        length_bytes=64,
        bind_address="198.18.0.2",
        ip_version=4,
        dscp=46,
        protocol="udp",
        udp_bitrate_bits_per_second=10_000_000,
    )
    argv = client_argv("iperf3", "198.18.0.1", params)
    joined = " ".join(argv)
    for part in ("-t 2", "-C reno", "-l 64", "-B 198.18.0.2", "-4", "-S 184", "-u -b 10000000"):
        assert f" {part}" in f" {joined}", part


def test_bytes_replace_the_time_iperf3_refuses_both() -> None:
    argv = client_argv("iperf3", "::1", Iperf3Params(duration_s=10, bytes_total=64 * 2**20))
    assert argv[argv.index("-n") + 1] == "67108864"
    assert "-t" not in argv


def test_an_option_not_asked_is_not_passed() -> None:
    argv = client_argv("iperf3", "198.18.0.1", Iperf3Params(duration_s=1))
    assert not {"-C", "-l", "-B", "-4", "-6", "-S", "-n"} & set(argv)


def test_dscp_names_are_the_rfc_code_points() -> None:
    assert (DSCP_NAMES["EF"], DSCP_NAMES["AF41"], DSCP_NAMES["CS1"], DSCP_NAMES["AF11"]) == (
        46,
        34,
        8,
        10,
    )


@pytest.mark.parametrize(
    "bad",
    [{"ip_version": 5}, {"dscp": 64}, {"dscp": -1}, {"congestion": "reno; rm -rf /"}],
)
def test_params_refuse_what_iperf3_would(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Iperf3Params(duration_s=1, **bad)


def test_the_congestion_control_used_is_what_iperf3_says_the_sender_ran() -> None:
    assert parsed("tcp-congestion-reno.json")["congestion"] == "reno"
    # without -C: the kernel's default of the capture host
    assert parsed("tcp-length-16k.json")["congestion"] == "bbr"


def test_the_write_and_datagram_length_is_iperf3s_blksize() -> None:
    assert parsed("tcp-length-16k.json")["block_bytes"] == 16384
    assert parsed("tcp-single.json")["block_bytes"] == 131072  # iperf3's TCP default
    udp = parsed("udp-length-64.json")
    assert (udp["protocol"], udp["block_bytes"], udp["congestion"]) == ("udp", 64, None)
    # a 64-byte datagram at 20 Mbit/s: some 39,000 packets in one second
    assert udp["packets"] == pytest.approx(20e6 / 8 / 64, rel=0.05)


def test_the_address_the_client_sent_from_shows_the_bind_and_the_family() -> None:
    assert parsed("tcp-bind.json")["local_address"] == "127.0.0.2"
    assert parsed("tcp-ipv6.json")["local_address"] == "::1"


def test_a_bytes_run_reports_the_bytes_it_moved_and_its_own_seconds() -> None:
    result = parsed("tcp-bytes-64M.json")
    # the receiver's count: iperf3's end of test cuts what is still in flight of the 64 MiB sent
    assert 0.9 * 64 * 2**20 < result["bytes"] <= 64 * 2**20
    assert 0 < result["duration_s"] < 1
