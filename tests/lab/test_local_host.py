"""The workstation as a host: a plan whose client is the control node itself (``connection:
local``), run from inside the lab client's namespace, so that nasplan's own machine is that host
(its NICs are the namespace's) and reaches the NAS over SSH from there."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import nic_state

from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "198.19.186"
LINK_PREFIX = "198.19.187.0/30"
LAB = {
    "name": "lcl-host",
    "lan": {"prefix": f"{PREFIX}.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "pc": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "1G",
            "a": {"host": "nas", "interface": "eth1"},
            "b": {"host": "pc", "interface": "eth1"},
        }
    ],
}


@pytest.fixture(scope="module")
def local_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def local_inventory(state: LabState, directory: Path) -> Path:
    """The lab's inventory with ``pc`` as this machine: ``connection: local``, its interfaces,
    no address (the SSH settings in ``vars`` stay for the NAS)."""
    data = yaml.safe_load(state.inventory_path.read_text())
    for key in ("identity_file", "known_hosts"):
        data["vars"][key] = str(state.inventory_path.parent / data["vars"][key])
    data["hosts"]["pc"] = {"connection": "local", "interfaces": data["hosts"]["pc"]["interfaces"]}
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def write_plan(inventory: Path, directory: Path) -> Path:
    plan = {
        "name": "local-client",
        "inventory": str(inventory),
        "network": {"confirm_timeout_s": 20},
        "links": [
            {
                "name": "p2p",
                "a": {"host": "nas", "interface": "p2p"},
                "b": {"host": "pc", "interface": "p2p"},
                "prefix": LINK_PREFIX,
                "mtu": 9000,
            }
        ],
        "tests": [
            # the local host as iperf3's client, then as its server (left running by start_until)
            {"id": "to-nas", "kind": "iperf3", "server": "nas", "client": "pc",
             "target": "link:p2p@nas", "duration_s": 1, "repetitions": 2},
            {"id": "to-pc", "kind": "iperf3", "server": "pc", "client": "nas",
             "target": "link:p2p@pc", "duration_s": 1, "repetitions": 1},
        ],
    }  # fmt: skip
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def local_nics(namespace: str) -> dict[str, tuple[int, list[str]]]:
    """This machine's NICs as the local host sees them (inside ``namespace``): MTU, addresses."""
    out = subprocess.run(
        ["ip", "-n", namespace, "-j", "addr", "show"],
        capture_output=True, text=True, check=True, timeout=10,
    ).stdout  # fmt: skip
    return {
        n["ifname"]: (n["mtu"], [a["local"] for a in n.get("addr_info", [])])
        for n in json.loads(out)
    }


def iperf3_in(namespace: str) -> list[str]:
    """Command lines of the iperf3 processes running in ``namespace``."""
    pids = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True, timeout=10
    ).stdout.split()
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "iperf3" in argv:
            found.append(argv)
    return found


def test_a_plan_whose_client_is_this_machine_measures_changes_and_restores(
    local_lab: LabState, tmp_path: Path
) -> None:
    pc_ns = local_lab.hosts["pc"].namespace
    lock = Path(f"/tmp/nasplan-{socket.gethostname()}.lock")
    files_before = set(Path("/tmp").glob("nasplan-*-pc*"))  # revert dirs, iperf3 and sampler files
    pc_before, nas_before = local_nics(pc_ns), nic_state(local_lab, "nas")
    assert pc_before["eth1"][0] == 1500 and not lock.exists()
    plan = write_plan(local_inventory(local_lab, tmp_path), tmp_path)

    # nasplan on the lab client's network: the control node is the pc
    argv = [sys.executable, "-m", "nasplan", "apply", str(plan), "--out", str(tmp_path / "run")]
    proc = subprocess.run(
        ["ip", "netns", "exec", pc_ns, *argv, "-v"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run["status"] == "ok"

    # the local host's facts are this machine's, i.e. the namespace's NICs
    pc = run["hosts"]["pc"]
    assert pc["reachable"] and pc["platform"] == "debian"
    nics = {nic["name"]: nic for nic in pc["facts"]["interfaces"]}
    assert {"eth0", "eth1"} <= set(nics) and not any(n.startswith("npl") for n in nics)
    assert f"{local_lab.hosts['pc'].address}" in nics["eth0"]["addresses"]
    assert nics["eth1"]["mtu_bytes"] == 1500  # gathered before the change

    # both directions measured over the jumbo link, with the local host at either end
    to_nas, to_pc = run["tests"]
    for test in (to_nas, to_pc):
        assert test["status"] == "ok", test["error"]
        assert test["path"]["mtu_bytes"] == 9000
        assert all(r["bits_per_second"] > 100e6 for r in test["repetitions"])
    assert len(to_nas["repetitions"]) == 2 and to_nas["params"]["address"] == "198.19.187.1"
    assert to_pc["params"]["address"] == "198.19.187.2"

    # the change was armed with the same detached timer as on any Linux host, then put back
    network = run["network"]
    assert network["hosts"]["pc"]["status"] == "restored", network
    assert network["hosts"]["pc"]["mechanism"] == "setsid-timer"
    assert network["hosts"]["pc"]["detached_with"] == "setsid"
    assert local_nics(pc_ns) == pc_before and nic_state(local_lab, "nas") == nas_before

    # -v says the local host's commands as any host's; nothing is left behind on this machine
    assert "pc: $ " in proc.stderr and "nas: $ " in proc.stderr
    assert not lock.exists() and set(Path("/tmp").glob("nasplan-*-pc*")) == files_before
    assert iperf3_in(pc_ns) == []


def nasplan_in(namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``nasplan ARGS`` run on this machine inside ``namespace``."""
    return subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, "-m", "nasplan", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_kept_change_on_this_machine_is_restored_and_this_machine_probed(
    local_lab: LabState, tmp_path: Path
) -> None:
    pc_ns = local_lab.hosts["pc"].namespace
    pc_before, nas_before = local_nics(pc_ns), nic_state(local_lab, "nas")
    files_before = set(Path("/tmp").glob("nasplan-*-pc*"))
    inventory = local_inventory(local_lab, tmp_path)
    plan = write_plan(inventory, tmp_path)

    kept = nasplan_in(pc_ns, "apply", str(plan), "--out", str(tmp_path / "run"), "--keep")
    assert kept.returncode == 0, kept.stderr[-3000:]
    assert local_nics(pc_ns)["eth1"] == (9000, ["198.19.187.2"])

    restored = nasplan_in(pc_ns, "restore", str(tmp_path / "run"))
    assert restored.returncode == 0 and "Traceback" not in restored.stderr, restored.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["network"]["hosts"]["pc"]["status"] == "restored"
    assert local_nics(pc_ns) == pc_before and nic_state(local_lab, "nas") == nas_before
    assert set(Path("/tmp").glob("nasplan-*-pc*")) == files_before

    probed = nasplan_in(pc_ns, "probe", "-i", str(inventory), "pc", "--out", str(tmp_path / "p"))
    assert probed.returncode == 0, probed.stderr
    derived = json.loads((tmp_path / "p" / "derived.json").read_text())
    assert {"eth0", "eth1"} <= {nic["name"] for nic in derived["facts"]["interfaces"]}
    assert derived["platform"] == "debian" and local_nics(pc_ns) == pc_before
