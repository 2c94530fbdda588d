"""FreeBSD and macOS facts (sysctl, BSD ifconfig) from real recorded output (jc fixtures)."""

from __future__ import annotations

from os_facts import freebsd_facts, macos_facts


def test_macos_facts_come_from_sysctl_and_ifconfig() -> None:
    facts = macos_facts()
    assert facts.kernel_name == "Darwin"
    assert facts.os_pretty == "macOS 10.14.6"
    assert facts.cpu_model == "Intel(R) Core(TM) i5-8279U CPU @ 2.40GHz"
    assert facts.cpu_cores == 8
    assert facts.memory_bytes == 17179869184
    en0 = facts.interface("en0")
    assert en0 is not None
    assert en0.mtu_bytes == 1500
    assert en0.mac == "f0:18:98:03:d9:30"
    assert en0.state == "up"
    assert "192.168.1.72/24" in en0.addresses  # netmask 0xffffff00
    assert facts.interface("lo0") is not None and facts.interface("lo0").mtu_bytes == 16384  # type: ignore[union-attr]


def test_macos_media_line_gives_link_speed_and_duplex() -> None:
    en5 = macos_facts("bsd/osx-10.14.6_ifconfig2.out").interface("en5")
    assert en5 is not None
    assert (en5.speed_mbps, en5.duplex) == (100, "full")  # autoselect (100baseTX <full-duplex>)
    inactive = macos_facts("bsd/osx-10.14.6_ifconfig2.out").interface("ap1")
    assert inactive is not None and inactive.state == "down"


def test_freebsd_facts_name_nic_driver_speed_and_jumbo_mtu() -> None:
    facts = freebsd_facts()
    assert (facts.kernel_name, facts.os_pretty) == ("FreeBSD", "FreeBSD 12.1-RELEASE")
    assert (facts.cpu_cores, facts.memory_bytes) == (1, 2107092992)
    ix0 = facts.interface("ix0")
    assert ix0 is not None
    assert (ix0.mtu_bytes, ix0.speed_mbps, ix0.duplex, ix0.driver) == (9000, 10000, "full", "ix")
    assert ix0.addresses == ("10.10.2.101/24",)  # FreeBSD 13 style inet A/24
    mce0 = facts.interface("mce0")
    assert mce0 is not None
    assert mce0.speed_mbps == 100000  # 100GBase-SR4, no "autoselect (...)"
    assert "23.246.26.130/25" in mce0.addresses  # netmask 0xffffff80
    assert "2a00:86c0:1026:1026::130/64" in mce0.addresses
