"""The estimate reads the volumes' rates and, once the hosts answered, the link speeds they
negotiated: plans/examples/ts253d-volumes.yaml against the inventory its lab writes (an HDD
volume at 180 MiB/s, an SSD at 900 MiB/s), and the lab NAS's captured facts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nasplan.facts.gather import parse_facts
from nasplan.input.plan import Plan, load_plan
from nasplan.lab.preview import preview_inventory
from nasplan.measure import estimate, kinds
from nasplan.measure.kinds import disk as disk_kind
from nasplan.run import listing

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "plans" / "examples"
FACTS = ROOT / "tests" / "fixtures" / "facts" / "qnap-lab-volumes.txt"
MIB = 2**20


@pytest.fixture()
def plan(tmp_path: Path) -> Plan:
    """The write-up's plan with both volumes, against its lab's inventory."""
    inventory = preview_inventory(EXAMPLES / "lab-ts253d-volumes.yaml", tmp_path / "state")
    for key in ("identity_file", "known_hosts"):  # what lab up makes: not needed to estimate
        inventory["vars"].pop(key, None)
        for host in inventory["hosts"].values():
            host.pop(key, None)
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    document = yaml.safe_load((EXAMPLES / "ts253d-volumes.yaml").read_text())
    document["inventory"] = str(tmp_path / "inventory.yaml")
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return load_plan(tmp_path / "plan.yaml")


def test_a_disk_test_on_a_volume_is_estimated_at_its_rate(plan: Plan) -> None:
    cells = {t.id: t for t in plan.tests}
    hdd = kinds.bind(cells["disk[volume=hdd]"]).estimate(plan)
    ssd = kinds.bind(cells["disk[volume=ssd]"]).estimate(plan)
    assert hdd.assumptions == ("volume hdd at 180 MiB/s (the inventory's rate)",)
    assert ssd.assumptions == ("volume ssd at 900 MiB/s (the inventory's rate)",)
    # 256 MiB written and read once each
    each = 2 * (256 / 180 + disk_kind.STEP_S)
    assert hdd.seconds == pytest.approx(estimate.parts(plan, cells["disk[volume=hdd]"])
                                        * disk_kind.PART_S + each)  # fmt: skip


def test_a_copy_onto_the_hdd_volume_moves_at_the_volume_s_rate_not_the_link_s(plan: Plan) -> None:
    cells = {t.id: t for t in plan.tests}
    onto_hdd = cells["smb[link=p2p10,volume=hdd]"]
    rate, said = estimate.copy_rate(plan, onto_hdd, "hdd")
    assert rate == 180 * MIB
    assert said[-1] == "volume hdd at 180 MiB/s (the inventory's rate)"
    # the SSD's 900 MiB/s is over what a copy moves at best: the path's share and the cap
    rate, said = estimate.copy_rate(plan, cells["smb[link=p2p10,volume=ssd]"], "ssd")
    assert rate == estimate.ASSUMED_COPY_BYTES_PER_SECOND and len(said) == 1
    # on the 1G LAN the link is the slower
    rate, _ = estimate.copy_rate(plan, cells["smb[link=lan,volume=hdd]"], "hdd")
    assert rate == pytest.approx(1e9 * estimate.TCP_SHARE / 8)
    total = listing.estimate(plan)
    assert "volume hdd at 180 MiB/s (the inventory's rate)" in total.text()
    assert "link speeds: the inventory's" in total.text()
    seconds = kinds.bind(onto_hdd).estimate(plan).seconds
    assert seconds > 3 * 3 * 384 / 180  # three repetitions of write, read, cold read


def test_apply_check_estimates_with_the_speed_a_link_negotiated(plan: Plan) -> None:
    # the lab NAS's facts, its p2p25 cable's NIC (eth1) negotiated down to 1000 Mb/s
    text = FACTS.read_text()
    facts = parse_facts(text)
    assert facts.interface("eth1") is not None and facts.interface("eth1").speed_mbps == 10000
    down = text.replace("name=eth1\nmtu=1500\noperstate=up\naddress=82:6a:3b:84:34:b0\n"
                        "speed=10000", "name=eth1\nmtu=1500\noperstate=up\n"
                        "address=82:6a:3b:84:34:b0\nspeed=1000")  # fmt: skip
    assert down != text
    # as captured: every NIC at least as fast as the inventory says (a veth's 10000 Mb/s)
    assert estimate.negotiated_speeds({"nas": facts}, plan) == {}
    speeds = estimate.negotiated_speeds({"nas": parse_facts(down), "pc": None}, plan)
    assert speeds == {"nas": {"p2p25": 1_000_000_000}}
    slower = estimate.with_negotiated(plan, speeds)
    cell = next(t for t in plan.tests if t.id == "smb[link=p2p25,volume=ssd]")
    assert estimate.path_bits_per_second(plan, cell) == 2_500_000_000
    assert estimate.path_bits_per_second(slower, cell) == 1_000_000_000
    lan = next(t for t in plan.tests if t.id == "smb[link=lan,volume=ssd]")
    assert estimate.path_bits_per_second(slower, lan) == 1_000_000_000  # as the inventory said
    assert listing.estimate(slower).seconds > listing.estimate(plan).seconds
