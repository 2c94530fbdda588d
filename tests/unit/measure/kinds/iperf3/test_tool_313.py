"""iperf 3.1.3 (the last esnet build for Windows): the parser on its real JSON, argv, warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.iperf3.runs import version_warnings
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import (
    Iperf3Error,
    client_argv,
    parse,
)

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.1.3"


def raw(name: str) -> str:
    return (FIXTURES / name).read_text()


def doc(name: str) -> dict[str, Any]:
    """The fixture decoded on its own, to compare the parser with."""
    return dict(json.loads(raw(name)))


@pytest.mark.parametrize(
    "name",
    [
        "tcp-single.json",
        "tcp-parallel-2.json",
        "tcp-reverse.json",
        "tcp-single-against-3.12-server.json",
        "tcp-single-with-server-log.json",
    ],
)
def test_tcp_results_of_3_1_3_give_the_receivers_rate_and_cpu(name: str) -> None:
    end = doc(name)["end"]
    parsed = parse(raw(name))
    assert parsed["iperf3_version"] == "3.1.3"
    assert parsed["bits_per_second"] == end["sum_received"]["bits_per_second"]
    assert parsed["sent_bits_per_second"] == end["sum_sent"]["bits_per_second"]
    assert parsed["bytes"] == end["sum_received"]["bytes"]
    assert parsed["retransmits"] == end["sum_sent"]["retransmits"]
    assert parsed["cpu_client_percent"] == end["cpu_utilization_percent"]["host_total"]
    assert parsed["cpu_server_percent"] == end["cpu_utilization_percent"]["remote_total"]
    assert parsed["bits_per_second"] > 1e9  # loopback: well over a gigabit
    assert len(parsed["intervals"]) == 2


def test_two_streams_of_3_1_3_are_counted() -> None:
    parsed = parse(raw("tcp-parallel-2.json"))
    assert parsed["streams"] == 2
    assert len(doc("tcp-parallel-2.json")["end"]["streams"]) == 2


def test_udp_of_3_1_3_has_only_a_sum_and_what_arrived_is_the_sent_rate_less_the_loss() -> None:
    total = doc("udp-100m.json")["end"]["sum"]
    parsed = parse(raw("udp-100m.json"))
    assert parsed["protocol"] == "udp"
    assert parsed["sent_bits_per_second"] == total["bits_per_second"]
    assert parsed["lost_packets"] == total["lost_packets"] > 0
    share = (total["packets"] - total["lost_packets"]) / total["packets"]
    assert parsed["bits_per_second"] == pytest.approx(total["bits_per_second"] * share)
    assert parsed["bits_per_second"] < parsed["sent_bits_per_second"]
    assert parsed["retransmits"] is None


def test_connection_refused_of_3_1_3_is_its_own_message() -> None:
    with pytest.raises(Iperf3Error, match="unable to connect to server: Connection refused"):
        parse(raw("error-connection-refused.json"))


def test_client_argv_for_3_1_3_has_no_connect_timeout_it_would_reject() -> None:
    params = Iperf3Params(duration_s=10, parallel=2)
    argv = client_argv(r"C:\iperf3\iperf3.exe", "198.19.16.10", params, iperf3_version="3.1.3")
    assert argv[0] == r"C:\iperf3\iperf3.exe"
    assert "--connect-timeout" not in argv
    assert argv[argv.index("-P") + 1] == "2"


def test_3_1_3_on_a_windows_client_is_warned_about_like_any_old_iperf3() -> None:
    warnings = version_warnings("nas", "3.12", "win11", "3.1.3", parallel=2)
    assert any("versions differ" in w and "3.1.3" in w for w in warnings)
    assert any("3.1.3 on win11" in w and "one thread" in w for w in warnings)
    assert any(
        "3.1.3 on win11" in w and "2016" in w
        for w in version_warnings("nas", "3.12", "win11", "3.1.3", parallel=1)
    )
