"""Path findings from run.json alone: a routed path, an asymmetric one, and nothing unmeasured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasplan.diagnose import MODULES, diagnose, path
from nasplan.measure import route

PATH = Path(__file__).resolve().parents[2] / "fixtures" / "path"


def _captured(name: str) -> dict[str, dict[str, Any]]:
    return route.parse((PATH / name).read_text(encoding="utf-8"))


def _test(to: dict[str, Any], back: dict[str, Any] | None, server_nic: str) -> dict[str, Any]:
    """An iperf3 record whose path is the captured namespaces' (client -> router -> server)."""
    links = [
        {"host": "rt", "interface": "r0", "address": "198.19.250.2",
         "speed_bits_per_second": 1_000_000_000},
        {"host": "rt", "interface": "r1", "address": "198.19.250.5",
         "speed_bits_per_second": 2_500_000_000},
    ]  # fmt: skip
    return {
        "id": "to-nas",
        "kind": "iperf3",
        "params": {"client": "ws", "server": "nas", "address": "198.19.250.6"},
        "path": {
            "client_interface": "dgcapc0",
            "server_interface": server_nic,
            "speed_bits_per_second": 1_000_000_000,
            "route": {
                "to": {"address": "198.19.250.6", **to},
                "back": None if back is None else {"address": "198.19.250.1", **back},
                "links": links,
            },
        },
    }


def test_a_routed_path_names_the_router_the_hops_the_trace_and_the_slowest_link() -> None:
    to = _captured("script-client-routed-and-direct.txt")["198.19.250.6"]
    back = _captured("script-server-replies.txt")["198.19.250.1"]
    found = path.findings({"tests": [_test(to, back, "dgcapn0")]})
    assert [f["cause"] for f in found] == ["routed-path"]
    assert found[0]["test"] == "to-nas" and found[0]["host"] == "ws"
    assert found[0]["text"] == (
        "ws dgcapc0 reaches 198.19.250.6 (nas dgcapn0) through a router: gateway 198.19.250.2 "
        "(rt r0); 1 router hop by the reply's TTL 63; tracepath 198.19.250.2 → 198.19.250.6; "
        "slowest link nasplan knows on the way: rt r0 at 1 Gbit/s."
    )
    assert found[0]["evidence"]["hops"] == 1 and found[0]["evidence"]["ttl"] == 63


def test_a_reply_that_leaves_by_another_nic_is_an_asymmetric_path() -> None:
    to = _captured("script-client-routed-and-direct.txt")["198.19.250.6"]
    back = route.parse_route(
        (PATH / "ip-route-get-reply-by-other-nic.txt").read_text(encoding="utf-8"), "198.19.250.1"
    )
    found = path.findings({"tests": [_test(to, back, "dgcapn0")]})
    asymmetric = [f for f in found if f["cause"] == "asymmetric-path"]
    assert asymmetric[0]["host"] == "nas"
    assert asymmetric[0]["text"] == (
        "nas's replies to 198.19.250.1 leave by dgcapn1 via 198.19.250.9, while ws's traffic "
        "arrives on dgcapn0 through 198.19.250.2: the path is asymmetric."
    )


def test_a_direct_path_has_no_finding() -> None:
    to = _captured("script-client-routed-and-direct.txt")["198.19.250.2"]
    back = {"interface": "dgcapr0", "gateway": None, "source": "198.19.250.2", "error": None}
    assert path.findings({"tests": [_test(to, back, "dgcapr0")]}) == []


def test_nothing_is_said_of_a_path_nasplan_did_not_ask() -> None:
    """An old run, or a Windows client: no ``route`` in the path, no finding."""
    old = {"id": "x", "params": {}, "path": {"speed_bits_per_second": 10**9}}
    assert path.findings({"tests": [old, {"id": "y", "path": None}]}) == []


def test_diagnose_calls_every_module_in_order() -> None:
    assert MODULES[:4] == ("path", "bus", "of_kinds", "cpu")
    to = _captured("script-client-routed-and-direct.txt")["198.19.250.6"]
    run = {"hosts": {}, "tests": [_test(to, None, "dgcapn0")]}
    found = diagnose(run)
    assert found[0]["cause"] == "routed-path"
    for one in found:
        assert set(one) == {"cause", "test", "host", "text", "evidence"}
