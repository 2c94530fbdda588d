"""Bus and NIC findings from run.json alone: negotiated speed, PCIe link, USB bus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasplan.diagnose import bus
from nasplan.facts.gather import parse_facts

PATH = Path(__file__).resolve().parents[2] / "fixtures" / "path"


def _nic(name: str) -> dict[str, Any]:
    """The facts' JSON form of a captured (or kernel-format) NIC section."""
    facts = parse_facts("@@nasplan:uname-s@@\nLinux\n" + (PATH / name).read_text(encoding="utf-8"))
    return facts.interfaces[0].to_dict()


def _run(nic: dict[str, Any], speed: int | None, test_nic: str | None = None) -> dict[str, Any]:
    declared = {"name": nic["name"], "role": "test", "speed_bits_per_second": speed}
    return {
        "hosts": {"nas": {"interfaces": {"p2p": declared}, "facts": {"interfaces": [nic]}}},
        "tests": [
            {"id": "t1", "params": {"client": "ws", "server": "nas"},
             "path": {"server_interface": test_nic or nic["name"]}},
        ],
    }  # fmt: skip


def test_a_nic_that_negotiated_less_than_the_inventory_says() -> None:
    nic = {"name": "eth1", "speed_mbps": 1000, "duplex": "full"}
    found = bus.findings(_run(nic, 2_500_000_000))
    assert [(f["cause"], f["test"], f["host"]) for f in found] == [("nic-speed", "t1", "nas")]
    assert found[0]["text"].startswith("nas eth1 negotiated 1000 Mb/s, inventory says 2.5 Gbit/s")
    assert found[0]["evidence"]["tests"] == ["t1"]


def test_half_duplex_is_named() -> None:
    found = bus.findings(_run({"name": "eth1", "speed_mbps": 100, "duplex": "half"}, 100_000_000))
    assert "negotiated half duplex" in found[0]["text"]


def test_a_virtio_nic_that_says_nothing_has_no_finding() -> None:
    nic = _nic("facts-nic-virtio.txt")
    assert nic["speed_mbps"] is None and "bus" not in nic
    assert bus.findings(_run(nic, 10_000_000_000)) == []


def test_a_pcie_link_below_the_nics_link_names_both_and_the_devices_maximum() -> None:
    nic = _nic("facts-nic-pcie-degraded.txt")
    assert nic["bus"] == {
        "pcie_gt_per_s": 5.0, "pcie_width": 1, "pcie_max_gt_per_s": 8.0, "pcie_max_width": 4,
    }  # fmt: skip
    found = bus.findings(_run(nic, 10_000_000_000))
    assert [f["cause"] for f in found] == ["pcie"]
    assert found[0]["text"] == (
        "nas enp3s0's PCIe link runs at 5 GT/s x1, 4 Gbit/s of data, below its 10 Gbit/s link; "
        "the device can do 8 GT/s x4 (31.5 Gbit/s): it sits in a slower slot or a shared lane."
    )


def test_a_pcie_link_that_carries_the_nics_link_is_not_a_limit() -> None:
    nic = _nic("facts-nic-pcie-degraded.txt")
    assert bus.findings(_run(nic, 1_000_000_000)) == []


def test_a_5gbe_usb_adapter_on_usb_3_gen_1_is_limited_by_the_bus() -> None:
    nic = _nic("facts-nic-usb-gen1.txt")
    assert nic["bus"] == {"usb_speed_mbps": 5000.0}
    found = bus.findings(_run(nic, 5_000_000_000))
    assert [f["cause"] for f in found] == ["usb-bus"]
    assert found[0]["text"] == (
        "nas enx00e04c680001 is a USB NIC on USB 3.2 Gen 1 (5 Gbit/s, 4 Gbit/s of data), "
        "below its 5 Gbit/s link: the bus is the limit."
    )


def test_a_1g_usb_adapter_on_usb_3_is_not_limited() -> None:
    nic = {**_nic("facts-nic-usb-gen1.txt"), "speed_mbps": 1000}
    assert bus.findings(_run(nic, 1_000_000_000)) == []


def test_a_nic_neither_declared_nor_used_is_left_alone() -> None:
    run = _run({"name": "eth9", "speed_mbps": 10, "duplex": "half"}, None, test_nic="eth1")
    run["hosts"]["nas"]["interfaces"] = {}
    assert bus.findings(run) == []
