"""The Windows + Mac example plan and the inventory's ``tools:``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_windows_and_mac_example_plan_validates_with_its_inventory() -> None:
    from nasplan.plan import load_plan

    plan = load_plan(ROOT / "plans/examples/qnap-windows-mac.yaml")
    clients = {(t.client, t.target.label(), t.settings.get("parallel", 1)) for t in plan.tests}
    assert len(plan.tests) == 10
    assert ("win11", "qnap.tengig", 2) in clients and ("macmini", "qnap.lan", 1) in clients
    win11 = plan.inventory.hosts["win11"]
    assert win11.platform_hint == "windows"
    assert win11.tools == {"iperf3": "C:\\iperf3\\iperf3.exe"}
    assert win11.interfaces["tengig"].name == "Ethernet 2"


def test_an_unknown_tool_in_the_inventory_is_a_located_error(tmp_path: Path) -> None:
    from nasplan.errors import InputError
    from nasplan.inventory import load_inventory

    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n  pc:\n    platform: windows\n    tools: {iperf2: 'C:\\x.exe'}\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    assert f"{path}:4:" in "\n".join(info.value.messages)
    assert "hosts.pc.tools" in "\n".join(info.value.messages)
