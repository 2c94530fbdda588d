"""A NAS reached only through a jump host: ``nas`` has no LAN port, sits behind ``gw`` on a
link of its own, and ``gw`` does not forward. A plan runs through the jump (facts, an iperf3
test gw -> nas over that link), with strict host-key checking on both hops, from the inventory
``lab up`` writes, from an Ansible inventory's ``ansible_ssh_common_args`` and from an
ssh_config's ProxyJump; a wrong key on either hop and a damaged known_hosts are refused."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.errors import HostLostError
from nasplan.input.inventory import load_inventory
from nasplan.lab import LabState
from nasplan.remote.ssh import connect

ROOT = Path(__file__).resolve().parents[2]
LAN = "198.19.136"
BACK = "198.19.137"
LAB = {
    "name": "jump-lab",
    "lan": {"prefix": f"{LAN}.0/24", "rate": "1G"},
    "hosts": {"gw": {}, "ws": {}, "nas": {"jump": "gw"}},
    "links": [
        {
            "name": "back",
            "rate": "1G",
            "a": {"host": "gw", "interface": "eth1", "address": f"{BACK}.1/30"},
            "b": {"host": "nas", "interface": "eth1", "address": f"{BACK}.2/30"},
        }
    ],
}
GW = f"{LAN}.10"
NAS = f"{BACK}.2"
PLAN = """\
name: behind-a-jump
inventory: {inventory}
tests:
  - {{id: back, kind: iperf3, server: nas, client: gw, target: {target}, duration_s: 1,
     repetitions: 1}}
"""


@pytest.fixture(scope="module")
def jump_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def nasplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def plan_for(tmp_path: Path, inventory: Path, target: str = NAS) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.format(inventory=inventory, target=target))
    return plan


def inventory_with(state: LabState, tmp_path: Path, **vars_: str) -> Path:
    """The lab's inventory with absolute key paths and ``vars_`` set for every host."""
    data = yaml.safe_load(state.inventory_path.read_text())
    data["vars"].update(
        {
            "identity_file": str(state.identity_path),
            "known_hosts": str(state.known_hosts_path),
            **vars_,
        }
    )
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_plan_runs_on_a_nas_reached_only_through_its_jump_host(
    jump_lab: LabState, tmp_path: Path
) -> None:
    written = yaml.safe_load(jump_lab.inventory_path.read_text())["hosts"]["nas"]
    assert written["address"] == NAS and "lan" not in written["interfaces"]
    assert written["proxy_jump"] == f"root@{GW}:22"
    plan = plan_for(tmp_path, jump_lab.inventory_path, "nas.back")
    proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"), "-v")
    assert proc.returncode == 0, proc.stderr
    assert f"nas: connected through root@{GW}:22" in proc.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["hosts"]["nas"]["facts"]["hostname"] == "nas"
    assert {i["name"] for i in run["hosts"]["nas"]["facts"]["interfaces"]} == {"lo", "eth1"}
    test = run["tests"][0]
    assert test["status"] == "ok", test["error"]
    assert test["repetitions"][0]["bits_per_second"] > 0.5e9  # a 1G link, through nothing


def test_the_nas_is_not_reachable_but_through_the_jump(jump_lab: LabState) -> None:
    # Even with a route to the NAS's link through gw, a LAN host gets no answer: gw does not
    # forward, and the NAS has no way back to the LAN.
    ws = jump_lab.hosts["ws"].namespace
    subprocess.run(["ip", "-n", ws, "route", "add", f"{BACK}.0/30", "via", GW], check=True)
    probe = f"import socket; socket.create_connection(('{NAS}', 22), timeout=1)"
    proc = subprocess.run(
        ["ip", "netns", "exec", ws, sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode != 0 and "timed out" in proc.stderr


def test_ansible_proxy_jump_and_ssh_config_proxy_jump_reach_it(
    jump_lab: LabState, tmp_path: Path
) -> None:
    ini = tmp_path / "hosts.ini"
    ini.write_text(
        "[all:vars]\nansible_user=root\n"
        f"ansible_ssh_private_key_file={jump_lab.identity_path}\n"
        f"nasplan_known_hosts={jump_lab.known_hosts_path}\n"
        "[lab]\n"
        f"gw ansible_host={GW}\n"
        f"nas ansible_host={NAS} ansible_ssh_common_args='-o ProxyJump=root@{GW}:22'\n"
    )
    proc = nasplan("apply", "--check", "-v", str(plan_for(tmp_path, ini)))
    assert proc.returncode == 0, proc.stderr
    assert f"nas: connected through root@{GW}:22" in proc.stderr
    # the lab's ssh_config names nas by alias, behind `ProxyJump gw`
    aliases = tmp_path / "aliases.yaml"
    aliases.write_text(
        f"vars: {{ssh_config: {jump_lab.ssh_config_path}}}\nhosts: {{gw: {{}}, nas: {{}}}}\n"
    )
    proc = nasplan("apply", "--check", "-v", str(plan_for(tmp_path, aliases)))
    assert proc.returncode == 0, proc.stderr
    assert f"nas: connected through root@{GW}:22" in proc.stderr


def test_a_chain_of_two_jumps_and_closing_closes_every_hop(jump_lab: LabState) -> None:
    host = load_inventory(jump_lab.inventory_path).hosts["nas"]
    chained = dataclasses.replace(host, proxy_jump=f"root@{GW},root@{BACK}.1:22")
    runner = connect(chained)
    try:
        assert runner.run(["hostname"]).stdout.strip() == "nas"
        assert [hop.host for hop in runner.jumps] == [GW, f"{BACK}.1"]
        hops = [hop.client.get_transport() for hop in runner.jumps]
        assert all(hop.is_active() for hop in hops)
    finally:
        runner.close()
    assert not any(hop.is_active() for hop in hops)


@pytest.mark.parametrize(("hop", "address"), [("jump host", GW), ("target", NAS)])
def test_a_changed_key_on_either_hop_is_refused(
    jump_lab: LabState, tmp_path: Path, hop: str, address: str
) -> None:
    other = jump_lab.host_dir("ws") / "ssh_host_ed25519_key.pub"
    other_key = " ".join(other.read_text().split()[:2])
    lines = jump_lab.known_hosts_path.read_text().splitlines()
    known = tmp_path / "known_hosts"
    known.write_text(
        "".join(f"{address} {other_key}\n" if line.startswith(f"{address} ") else f"{line}\n"
                for line in lines)
    )  # fmt: skip
    inventory = inventory_with(jump_lab, tmp_path, known_hosts=str(known))
    proc = nasplan("apply", "--check", str(plan_for(tmp_path, inventory)))
    assert proc.returncode == 3, proc.stderr
    if hop == "jump host":
        expected = f"jump host (root@{GW}:22): host key CHANGED: got ssh-ed25519 SHA256:"
    else:
        expected = f"(root@{NAS}:22 through root@{GW}:22): host key CHANGED: got ssh-ed25519"
    said = [line for line in proc.stderr.splitlines() if expected in line]
    assert said and said[0].startswith("host nas: [unreachable] "), proc.stderr


def test_a_damaged_known_hosts_is_one_located_line_before_any_connection(
    jump_lab: LabState, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(jump_lab.known_hosts_path.read_text() + f"{NAS} ssh-ed25519 AAAA!!x\n")
    inventory = inventory_with(jump_lab, tmp_path, known_hosts=str(known))
    proc = nasplan("apply", "--check", str(plan_for(tmp_path, inventory)))
    line = len(jump_lab.known_hosts_path.read_text().splitlines()) + 1
    column = len(f"{NAS} ssh-ed25519 ") + 1
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"{known}:{line}:{column}: known_hosts: the ssh-ed25519 key is not valid base64 "
        "(Only base64 data is allowed)"
    ]
    known.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    proc = nasplan("apply", "--check", str(plan_for(tmp_path, inventory)))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"{known}:1:1: not UTF-8 text (invalid start byte)"]


def test_a_jump_connection_that_ends_loses_the_host_and_says_where(jump_lab: LabState) -> None:
    runner = connect(load_inventory(jump_lab.inventory_path).hosts["nas"])
    try:
        runner.jumps[0].client.close()  # the jump host's connection goes (gw rebooted, cut off)
        deadline = time.monotonic() + 5
        while runner.connection.client.get_transport().is_active():
            assert time.monotonic() < deadline, "the NAS's connection outlived its jump"
            time.sleep(0.05)
        with pytest.raises(HostLostError, match=f"the jump host root@{GW}:22 closed it"):
            runner.run(["true"])
        assert runner.lost
    finally:
        runner.close()
