"""The network path of a test: the slowest link of both ends and of a router on the way."""

from __future__ import annotations

from pathlib import Path

from nasplan.facts.gather import NicFacts
from nasplan.input.inventory import load_inventory
from nasplan.measure.netpath import describe_path, first_ipv4, links_on_the_way, path_end

INVENTORY = """
hosts:
  nas:
    address: 198.18.0.10
    interfaces: {back: {name: eth1, role: test, speed: 2.5G, address: 198.18.1.6/30}}
  rt:
    address: 198.18.0.11
    interfaces:
      front: {name: eth1, role: test, speed: 1G, address: 198.18.1.2/30}
      back: {name: eth2, role: test, speed: 2.5G, address: 198.18.1.5/30}
      other: {name: eth3, role: test, speed: 100M, address: 198.18.2.1/30}
  ws:
    address: 198.18.0.12
    interfaces: {front: {name: eth1, role: test, speed: 1G, address: 198.18.1.1/30}}
"""


def test_the_routers_interfaces_towards_the_client_and_the_server(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    inventory = load_inventory(tmp_path / "inventory.yaml")
    links = links_on_the_way(inventory, "198.18.1.2", "198.18.1.6")
    assert [(link["host"], link["interface"], link["speed_bits_per_second"]) for link in links] == [
        ("rt", "eth1", 1_000_000_000),
        ("rt", "eth2", 2_500_000_000),
    ]
    assert links_on_the_way(inventory, None, "198.18.1.6") == []
    assert links_on_the_way(inventory, "198.18.9.9", "198.18.1.6") == []


def test_the_tcp_maximum_uses_the_slowest_link_not_the_servers_end(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    inventory = load_inventory(tmp_path / "inventory.yaml")
    nas = path_end(inventory.hosts["nas"], NicFacts("eth1", 1500, speed_mbps=2500))
    unknown_client = path_end(inventory.hosts["ws"], None)
    links = links_on_the_way(inventory, "198.18.1.2", "198.18.1.6")
    assert describe_path(nas, unknown_client)["speed_bits_per_second"] == 2_500_000_000
    assert describe_path(nas, unknown_client, links)["speed_bits_per_second"] == 1_000_000_000


def test_a_nic_that_negotiated_less_than_the_inventory_says_sets_the_speed(
    tmp_path: Path,
) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    nas = load_inventory(tmp_path / "inventory.yaml").hosts["nas"]
    assert path_end(nas, NicFacts("eth1", 1500, speed_mbps=1000)).speed_bits_per_second == 10**9
    assert path_end(nas, NicFacts("eth1", 1500, speed_mbps=10000)).speed_bits_per_second == (
        2_500_000_000
    )
    assert path_end(nas, NicFacts("eth1", 1500)).speed_bits_per_second == 2_500_000_000


def test_first_ipv4() -> None:
    assert first_ipv4(["fe80::1/64", "198.18.1.1/30"]) == "198.18.1.1"
    assert first_ipv4([]) is None
