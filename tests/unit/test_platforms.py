"""Platform detection, vendor OS names and install commands, from captured facts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nasplan.facts.gather import HostFacts, parse_facts
from nasplan.platforms import PlatformError, detect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def facts(name: str) -> HostFacts:
    return parse_facts((FIXTURES / "facts" / name).read_text())


@pytest.mark.parametrize(
    ("fixture", "platform"),
    [
        ("qnap-lab-busybox-ifconfig.txt", "qnap"),
        ("synology-dsm7-lab-admin.txt", "synology"),
        # SCALE's os-release says Debian: the TrueNAS markers must win.
        ("truenas-scale-lab.txt", "truenas"),
        ("debian12-root.txt", "debian"),
        ("debian12-nonroot.txt", "debian"),
        # busybox captured on Debian: its os-release still says Debian.
        ("busybox.txt", "debian"),
    ],
)
def test_platform_is_detected_from_captured_facts(fixture: str, platform: str) -> None:
    assert detect(facts(fixture)).name == platform


def test_unknown_os_falls_back_to_generic_linux() -> None:
    other = dataclasses.replace(facts("busybox.txt"), os_id="alpine", os_like=None)
    assert detect(other).name == "linux"


def test_truenas_fixture_really_looks_like_debian_underneath() -> None:
    scale = facts("truenas-scale-lab.txt")
    assert scale.os_id == "debian" and "/etc/version" in scale.markers


def without(facts_: HostFacts, *tools: str) -> HostFacts:
    return dataclasses.replace(facts_, tools={**facts_.tools, **dict.fromkeys(tools)})


def test_qnap_installs_missing_iperf3_with_entware_by_full_path() -> None:
    qnap = facts("qnap-lab-busybox-ifconfig.txt")
    [command] = detect(qnap).install_commands(qnap, ["iperf3"])
    assert command.sudo and command.description == "opkg install iperf3"
    assert "/opt/bin/opkg install iperf3" in command.script
    assert "printf '%s\\n' /opt/bin/iperf3" in command.script
    present = facts("qnap-lab-busybox-ifconfig-entware-iperf3.txt")
    assert detect(present).install_commands(present, ["iperf3"]) == []


def test_qnap_without_entware_explains_how_to_get_it() -> None:
    bare = without(facts("qnap-lab-busybox-ifconfig.txt"), "opkg")
    with pytest.raises(PlatformError, match=r"qnapclub\.eu/en/howto/1.*Entware-std"):
        detect(bare).install_commands(bare, ["iperf3"])


def test_synology_uses_synogear_as_root_and_knows_its_limits() -> None:
    dsm = facts("synology-dsm7-lab-admin.txt")
    assert dsm.tool("iperf3") is None and dsm.is_root is False
    [command] = detect(dsm).install_commands(dsm, ["iperf3"])
    assert command.sudo and command.script.splitlines()[1].startswith(
        "/usr/syno/bin/synogear install"
    )
    assert "/var/packages/DiagnosisTool/target/tool/iperf3" in command.script
    with pytest.raises(PlatformError, match="not part of Synology's Diagnosis Tool"):
        detect(dsm).install_commands(without(dsm, "fio"), ["fio"])
    with pytest.raises(PlatformError, match="synogear is missing"):
        detect(dsm).install_commands(without(dsm, "synogear"), ["iperf3"])


def test_truenas_never_installs_anything() -> None:
    scale = facts("truenas-scale-lab.txt")
    assert detect(scale).install_commands(scale, ["fio"]) == []
    assert detect(scale).install_commands(scale, ["iperf3"]) == []
    with pytest.raises(PlatformError, match="apt is disabled"):
        detect(scale).install_commands(without(scale, "iperf3"), ["iperf3"])


def test_vendor_os_names_come_from_their_marker_files() -> None:
    def os_of(fixture: str) -> str | None:
        facts = parse_facts((FIXTURES / "facts" / fixture).read_text())
        return detect(facts).os_name(facts)

    assert os_of("synology-dsm7-lab-admin.txt") == "DSM 7.2.1-69057 Update 5"
    assert os_of("qnap-lab-busybox-ifconfig.txt") == "QTS 5.1.0 build 20230822"
    assert os_of("truenas-scale-lab.txt") == "TrueNAS SCALE 24.04.2"
    assert os_of("debian12-root.txt") == "Debian GNU/Linux 12 (bookworm)"
