"""The Windows + Mac example plan and the inventory's ``tools:``."""

from __future__ import annotations

from pathlib import Path

import pytest
from keyfiles import write_private_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def home_with_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example inventories log in with ~/.ssh/id_ed25519, which validation wants to exist."""
    (tmp_path / ".ssh").mkdir(mode=0o700)
    write_private_key(tmp_path / ".ssh" / "id_ed25519")
    monkeypatch.setenv("HOME", str(tmp_path))


def test_the_windows_and_mac_example_plan_validates_with_its_inventory() -> None:
    from nasplan.input.plan import load_plan

    plan = load_plan(ROOT / "plans/examples/qnap-windows-mac.yaml")
    clients = {(t.client, t.target.label(), t.settings.get("parallel", 1)) for t in plan.tests}
    assert len(plan.tests) == 11
    # the CrystalDiskMark grid from the PC, through the QNAP's share (diskspd there)
    (grid,) = [t for t in plan.tests if t.kind == "disk-profile"]
    assert grid.hosts == ("qnap", "win11") and grid.settings["through"]["share"] == "Public"
    assert ("win11", "qnap.tengig", 2) in clients and ("macmini", "qnap.lan", 1) in clients
    win11 = plan.inventory.hosts["win11"]
    assert win11.platform_hint == "windows"
    assert win11.tools == {"iperf3": "C:\\iperf3\\iperf3.exe"}
    assert win11.interfaces["tengig"].name == "Ethernet 2"


def test_an_unknown_tool_in_the_inventory_is_a_located_error(tmp_path: Path) -> None:
    from nasplan.errors import InputError
    from nasplan.input.inventory import load_inventory

    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n  pc:\n    platform: windows\n    tools: {iperf2: 'C:\\x.exe'}\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    assert f"{path}:4:" in "\n".join(info.value.messages)
    assert "hosts.pc.tools" in "\n".join(info.value.messages)


def test_the_mac_to_truenas_core_jumbo_example_changes_both_ends_their_own_way() -> None:
    from os_facts import freebsd_facts, macos_facts

    from nasplan.input.network import NicChange
    from nasplan.input.plan import load_plan
    from nasplan.network.backends import for_platform
    from nasplan.network.state import NicState
    from nasplan.platforms import detect

    plan = load_plan(ROOT / "plans/examples/mac-core-jumbo.yaml")
    assert plan.network.changes("macmini") == (NicChange("en8", 9000, ("198.19.19.2/30",)),)
    assert plan.network.changes("core") == (NicChange("ix0", 9000, ("198.19.19.1/30",)),)
    assert {t.target.label() for t in plan.tests if t.id.startswith("cable")} == {"link:cable@core"}
    mac = macos_facts(tools="ifconfig=/sbin/ifconfig")
    core = freebsd_facts(tools="midclt=/usr/local/bin/midclt\nifconfig=/sbin/ifconfig")
    mac_script = for_platform(detect(mac), mac).arm_and_apply_script(
        "/tmp/r", 60, plan.network.changes("macmini"), {"en8": NicState("en8", 1500, True, ())}
    )
    assert "/sbin/ifconfig en8 inet 198.19.19.2 netmask 0xfffffffc alias" in mac_script
    core_backend = for_platform(detect(core), core)
    assert core_backend.mechanism == "truenas-interface-commit"
    core_script = core_backend.arm_and_apply_script(
        "/tmp/r", 60, plan.network.changes("core"), {"ix0": NicState("ix0", 1500, True, ())}
    )
    assert "interface.commit" in core_script and "ifconfig ix0" not in core_script
