"""Bus and NIC findings: the negotiated speed against the inventory's, the PCIe link under a
NIC against the device's maximum, a USB NIC's bus, a NIC that heats while its rate falls.

Read from each host's facts (``interfaces[].speed_mbps``, ``duplex``, ``bus``: sysfs, gathered
once per run) and the inventory's interfaces in run.json; only NICs the inventory names or a
test's path used. A NIC whose sysfs said nothing has no finding here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.diagnose.common import finding, rate_text
from nasplan.diagnose.heat import heat_findings

# sysfs ``speed`` of a USB device (Mbit/s) -> its name, and the share of it that carries data
# (8b/10b line code at 5 Gbit/s, 128b/132b above; USB 2's own overhead is left out)
_USB = {
    1.5: ("USB 1.0 low speed", 1.0),
    12: ("USB 1.1", 1.0),
    480: ("USB 2.0", 1.0),
    5000: ("USB 3.2 Gen 1", 0.8),
    10000: ("USB 3.2 Gen 2", 128 / 132),
    20000: ("USB 3.2 Gen 2x2", 128 / 132),
}


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``nic-speed``, ``pcie``, ``usb-bus`` and ``nic-heat`` findings, host by host."""
    used = _used_nics(run)
    found: list[dict[str, Any]] = []
    for name, host in sorted((run.get("hosts") or {}).items()):
        facts = (host or {}).get("facts") or {}
        nics = {nic.get("name"): nic for nic in facts.get("interfaces") or []}
        declared = {i.get("name"): i for i in ((host or {}).get("interfaces") or {}).values()}
        wanted = set(declared) | {nic for (h, nic) in used if h == name}
        for nic_name in sorted(n for n in wanted if n in nics):
            nic, tests = nics[nic_name], used.get((name, nic_name), [])
            nominal = (declared.get(nic_name) or {}).get("speed_bits_per_second")
            test = tests[0] if len(tests) == 1 else None
            for found_one in (
                _speed(name, nic, nominal),
                _pcie(name, nic, nominal),
                _usb(name, nic, nominal),
            ):
                if found_one is not None:
                    found_one["test"] = test
                    found_one["evidence"]["tests"] = tests
                    found.append(found_one)
    return found + heat_findings(run)


def _used_nics(run: Mapping[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(host, NIC) -> the ids of the tests whose path went through it."""
    used: dict[tuple[str, str], list[str]] = {}
    for test in run.get("tests") or []:
        path, params = test.get("path") or {}, test.get("params") or {}
        for role in ("client", "server"):
            host, nic = params.get(role), path.get(f"{role}_interface")
            if host and nic:
                used.setdefault((str(host), str(nic)), []).append(str(test.get("id")))
    return used


def _speed(host: str, nic: Mapping[str, Any], nominal: int | None) -> dict[str, Any] | None:
    """The NIC negotiated less than the inventory says, or half duplex."""
    speed_mbps, duplex = nic.get("speed_mbps"), nic.get("duplex")
    slower = bool(nominal and speed_mbps and speed_mbps * 1_000_000 < nominal)
    half = duplex == "half"
    if not slower and not half:
        return None
    said = []
    if slower:
        assert nominal is not None
        said.append(f"negotiated {speed_mbps} Mb/s, inventory says {rate_text(nominal)}")
    if half:
        said.append("negotiated half duplex")
    text = (
        f"{host} {nic['name']} " + " and ".join(said) + ": the link carries no more than that "
        "(a cable, a switch port or the other end that cannot do more)."
    )
    evidence = _evidence(
        nic, speed_mbps=speed_mbps, duplex=duplex, inventory_speed_bits_per_second=nominal
    )
    return finding("nic-speed", None, host, text, evidence)


def _lane_gbit_per_s(gt_per_s: float) -> float:
    """Data a PCIe lane carries: 8b/10b up to 5 GT/s (PCIe 1, 2), 128b/130b from 8 GT/s."""
    return gt_per_s * (0.8 if gt_per_s <= 5 else 128 / 130)


def _link_speed(nic: Mapping[str, Any], nominal: int | None) -> int | None:
    """What the NIC should carry: the inventory's speed, else what it negotiated."""
    if nominal:
        return int(nominal)
    speed = nic.get("speed_mbps")
    return int(speed) * 1_000_000 if speed else None


def _pcie(host: str, nic: Mapping[str, Any], nominal: int | None) -> dict[str, Any] | None:
    """The PCIe link under the NIC carries less than the NIC's link."""
    bus = nic.get("bus") or {}
    gt, width = bus.get("pcie_gt_per_s"), bus.get("pcie_width")
    link = _link_speed(nic, nominal)
    if not gt or not width or not link:
        return None
    usable = _lane_gbit_per_s(gt) * width * 1e9
    if usable >= link:
        return None
    max_gt, max_width = bus.get("pcie_max_gt_per_s"), bus.get("pcie_max_width")
    could = ""
    if max_gt and max_width and (max_gt > gt or max_width > width):
        could = (
            f"; the device can do {max_gt:g} GT/s x{max_width} "
            f"({_lane_gbit_per_s(max_gt) * max_width:.3g} Gbit/s): it sits in a slower slot "
            "or a shared lane"
        )
    text = (
        f"{host} {nic['name']}'s PCIe link runs at {gt:g} GT/s x{width}, "
        f"{usable / 1e9:.3g} Gbit/s of data, below its {rate_text(link)} link{could}."
    )
    read = ("pcie_gt_per_s", "pcie_width", "pcie_max_gt_per_s", "pcie_max_width")
    evidence = _evidence(
        nic, **{k: bus.get(k) for k in read}, pcie_bits_per_second=usable, link_bits_per_second=link
    )
    return finding("pcie", None, host, text, evidence)


def _usb(host: str, nic: Mapping[str, Any], nominal: int | None) -> dict[str, Any] | None:
    """A USB NIC on a bus slower than its link (a 5GbE adapter on USB 3.2 Gen 1)."""
    speed = (nic.get("bus") or {}).get("usb_speed_mbps")
    link = _link_speed(nic, nominal)
    if not speed or not link:
        return None
    name, share = _USB.get(float(speed), (f"USB at {speed:g} Mbit/s", 1.0))
    usable = float(speed) * 1e6 * share
    if usable >= link:
        return None
    text = (
        f"{host} {nic['name']} is a USB NIC on {name} ({rate_text(float(speed) * 1e6)}, "
        f"{rate_text(usable)} of data), below its {rate_text(link)} link: the bus is the limit."
    )
    evidence = _evidence(
        nic, usb_speed_mbps=speed, usb_bits_per_second=usable, link_bits_per_second=link
    )
    return finding("usb-bus", None, host, text, evidence)


def _evidence(nic: Mapping[str, Any], **read: Any) -> dict[str, Any]:
    """A NIC finding's evidence: the interface's name, then what was read of it."""
    return {"interface": nic["name"], **read}
