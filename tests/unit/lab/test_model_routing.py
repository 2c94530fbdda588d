"""Lab options for diagnosis: a router host, static routes, a NIC slower than its link."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.lab import hostfs
from nasplan.lab.model import Lab, load_lab

ROUTED = """\
name: t-route
lan: {prefix: 198.18.20.0/24, rate: 1G}
hosts:
  nas: {routes: [{to: 198.18.21.0/30, via: 198.18.21.5}]}
  rt: {forward: true}
  ws: {routes: [{to: 198.18.21.4/30, via: 198.18.21.2}]}
links:
  - name: front
    rate: 1G
    a: {host: ws, interface: eth1, address: 198.18.21.1/30}
    b: {host: rt, interface: eth1, address: 198.18.21.2/30}
  - name: back
    rate: 2.5G
    a: {host: rt, interface: eth2, address: 198.18.21.5/30}
    b: {host: nas, interface: eth1, address: 198.18.21.6/30, negotiated: 1G}
"""


def _load(tmp_path: Path, text: str = ROUTED) -> Lab:
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return load_lab(path)


def test_a_router_forwards_and_hosts_carry_their_routes(tmp_path: Path) -> None:
    lab = _load(tmp_path)
    assert lab.host("rt").forward and not lab.host("ws").forward
    assert lab.host("ws").routes == (("198.18.21.4/30", "198.18.21.2"),)
    assert lab.host("rt").routes == ()


def test_a_negotiated_speed_shapes_the_link_and_leaves_its_rate(tmp_path: Path) -> None:
    back = _load(tmp_path).links[1]
    assert back.bits_per_second == 2_500_000_000  # the inventory's speed
    assert back.b.negotiated_bits_per_second == 1_000_000_000
    assert back.shaped_bits_per_second == 1_000_000_000
    assert _load(tmp_path).links[0].shaped_bits_per_second == 1_000_000_000


def test_a_route_outside_the_lab_range_is_refused_with_its_position(tmp_path: Path) -> None:
    with pytest.raises(InputError) as excinfo:
        _load(tmp_path, ROUTED.replace("to: 198.18.21.0/30", "to: 10.0.0.0/8"))
    (message,) = excinfo.value.messages
    assert ":4:" in message and "hosts.nas.routes[0].to" in message and "outside" in message


def test_the_negotiated_speed_is_a_file_bound_over_the_nics_sysfs_speed(tmp_path: Path) -> None:
    commands = hostfs.negotiated_speed_commands(tmp_path, {"eth1": 1000})
    assert commands == [
        ["mount", "--bind", str(tmp_path / "sysfs-eth1-speed"), "/sys/class/net/eth1/speed"]
    ]
    assert (tmp_path / "sysfs-eth1-speed").read_text() == "1000\n"
    assert hostfs.negotiated_speed_commands(tmp_path, {}) == []
