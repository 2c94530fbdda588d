"""Jumbo frames + p2p addressing through NAS shells without ``ip -j``: BusyBox ``ip`` (QNAP) and
BusyBox ``ifconfig``/``route`` alone (Synology), applied, verified, measured and put back."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import cut_off

from nasplan.hosts.session import close_sessions, open_sessions
from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.progress import PlainProgress
from nasplan.remote.ssh import connect
from nasplan.run.apply import apply
from nasplan.run.network_phase import NetworkPhase
from nasplan.run.overlap import Overlap
from nasplan.run.request import RunRequest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 6
LAB = {
    "name": "bb-net",
    "lan": {"prefix": "198.19.32.0/24", "rate": "1G"},
    "hosts": {
        "qnap": {"personality": "qnap", "personality_options": {"net_tools": "busybox"}},
        "syno": {"personality": "synology",
                 "personality_options": {"net_tools": "busybox-ifconfig"}},
        "ws": {"personality": "debian"},
    },
    "links": [
        {"name": "p2p", "rate": "10G",
         "a": {"host": "qnap", "interface": "eth1"}, "b": {"host": "ws", "interface": "eth1"}},
        # syno's end already has an address: the plan's goes on an alias label (eth1:0).
        {"name": "p2q", "rate": "10G",
         "a": {"host": "syno", "interface": "eth1", "address": "198.19.34.1/30"},
         "b": {"host": "ws", "interface": "eth2", "address": "198.19.34.2/30"}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def bb_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def host_sh(state: LabState, host: str, command: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(state.ssh_config_path), "-o", "BatchMode=yes", host, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def nic_states(state: LabState) -> dict[str, Any]:
    """Every host's NICs (MTU, flags, address/prefix/label) and routes, read from outside its
    namespace with the machine's iproute2 (the hosts themselves have no ``ip -j``), and
    nasplan's revert directories left in its /tmp."""
    found: dict[str, Any] = {}
    for name, host in state.hosts.items():
        ns = ["ip", "-n", host.namespace]
        nics = json.loads(subprocess.run([*ns, "-j", "addr", "show"], capture_output=True,
                                         text=True, check=True).stdout)  # fmt: skip
        routes = subprocess.run([*ns, "route", "show"], capture_output=True, text=True, check=True)
        found[name] = {
            "nics": {
                n["ifname"]: (
                    n["mtu"],
                    "UP" in n["flags"],
                    [(a["local"], a["prefixlen"], a.get("label")) for a in n["addr_info"]],
                )
                for n in nics
            },
            "routes": routes.stdout,
            "revert_files": host_sh(state, name, "ls -d /tmp/nasplan-revert-* 2>/dev/null").stdout,
        }
    return found


def write_plan(state: LabState, directory: Path, *, duration_s: int = 1) -> Path:
    def link(name: str, a: str, b: str, b_nic: str, prefix: str) -> dict[str, Any]:
        return {"name": name, "a": {"host": a, "interface": "eth1"},
                "b": {"host": b, "interface": b_nic}, "prefix": prefix, "mtu": 9000}  # fmt: skip

    def test(server: str, link_name: str) -> dict[str, Any]:
        return {"id": f"{server}-jumbo", "kind": "iperf3", "server": server, "client": "ws",
                "target": f"link:{link_name}@{server}", "duration_s": duration_s,
                "repetitions": 1}  # fmt: skip

    plan = {
        "name": "bb-jumbo",
        "inventory": str(state.inventory_path),
        "network": {"confirm_timeout_s": TIMEOUT_S},
        "links": [
            link("p2p", "qnap", "ws", "p2p", "198.19.33.0/30"),
            link("p2q", "syno", "ws", "p2q", "198.19.33.4/30"),
        ],
        "tests": [test("qnap", "p2p"), test("syno", "p2q")],
    }
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def test_the_nas_shells_have_busybox_network_tools_and_no_ip_json(bb_lab: LabState) -> None:
    qnap = host_sh(bb_lab, "qnap", 'readlink -f "$(command -v ip)" /bin/sh; ip -j addr; echo $?')
    assert qnap.stdout.splitlines()[:2] == ["/usr/bin/busybox", "/usr/bin/busybox"]
    assert qnap.stdout.splitlines()[-1] == "1" and "[" not in qnap.stdout
    syno = host_sh(bb_lab, "syno", "command -v ip; ls /usr/bin/ip /usr/sbin/ip; ifconfig --help")
    assert syno.stdout.strip() == "" and "BusyBox" in syno.stderr


def test_jumbo_p2p_through_busybox_nas_shells_restores_every_nic_exactly(
    bb_lab: LabState, tmp_path: Path
) -> None:
    # qnap's cable end starts down: nasplan brings it up for the run and down again after.
    qnap_ns = bb_lab.hosts["qnap"].namespace
    subprocess.run(["ip", "-n", qnap_ns, "link", "set", "eth1", "down"], check=True)
    try:
        before = nic_states(bb_lab)
        assert before["qnap"]["nics"]["eth1"][1] is False
        outcome = apply(
            RunRequest(load_plan(write_plan(bb_lab, tmp_path)), out=tmp_path / "run"),
            PlainProgress(io.StringIO()),
        )
        run = json.loads((tmp_path / "run/run.json").read_text())
        assert outcome.exit_code == 0, run["network"]["error"] or [t["error"] for t in run["tests"]]
        hosts = run["network"]["hosts"]
        assert {h: hosts[h]["net_tools"] for h in hosts} == {
            "qnap": "ip-text",
            "syno": "ifconfig",
            "ws": "ip-json",
        }
        facts = {h: run["hosts"][h]["facts"] for h in hosts}
        assert (facts["qnap"]["ip_json"], facts["syno"]["ip_json"]) == (False, None)
        assert hosts["qnap"]["applied"]["eth1"]["mtu_bytes"] == 9000
        assert hosts["qnap"]["applied"]["eth1"]["addresses"] == ["198.19.33.1/30"]
        assert hosts["syno"]["applied"]["eth1"]["addresses"] == ["198.19.34.1/30", "198.19.33.5/30"]
        checks = run["network"]["checks"]
        assert len([c for c in checks if c["check"] == "df-ping"]) == 4
        assert all(c["ok"] for c in checks), [c for c in checks if not c["ok"]]
        assert {t["id"]: t["path"]["mtu_bytes"] for t in run["tests"]} == {
            "qnap-jumbo": 9000,
            "syno-jumbo": 9000,
        }
        assert all(t["summary"]["median"] > 0 for t in run["tests"])
        assert {h["status"] for h in hosts.values()} == {"restored"}
        assert nic_states(bb_lab) == before
    finally:
        subprocess.run(["ip", "-n", qnap_ns, "link", "set", "eth1", "up"], check=True)


def test_keep_then_nasplan_restore_on_busybox_shells(bb_lab: LabState, tmp_path: Path) -> None:
    before = nic_states(bb_lab)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "nasplan"]
    kept = subprocess.run(
        [*cmd, "apply", str(write_plan(bb_lab, tmp_path)), "--keep", "--out", str(out)],
        capture_output=True, text=True, timeout=180, check=False, cwd=ROOT,
    )  # fmt: skip
    assert kept.returncode == 0, kept.stderr
    during = nic_states(bb_lab)
    assert during["qnap"]["nics"]["eth1"] == (9000, True, [("198.19.33.1", 30, "eth1")])
    assert during["syno"]["nics"]["eth1"][2] == [
        ("198.19.34.1", 30, "eth1"),
        ("198.19.33.5", 30, "eth1:0"),
    ]
    snapshot = json.loads((out / "network/snapshots.json").read_text())
    tools = {h: s["net_tools"] for h, s in snapshot["hosts"].items()}
    assert tools["qnap"]["kind"] == "ip-text" and tools["qnap"]["ip"] == "/usr/local/bin/ip"
    assert tools["syno"] == {
        "kind": "ifconfig",
        "ip": "ip",
        "ifconfig": "/usr/local/bin/ifconfig",
        "route": "/usr/local/bin/route",
    }
    restored = subprocess.run(
        [*cmd, "restore", str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    assert restored.returncode == 0, restored.stderr
    assert nic_states(bb_lab) == before
    run = json.loads((out / "run.json").read_text())
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}


def test_busybox_shells_cut_off_after_the_change_revert_by_their_own_timer(
    bb_lab: LabState, tmp_path: Path
) -> None:
    before = nic_states(bb_lab)
    plan = load_plan(write_plan(bb_lab, tmp_path))
    progress = PlainProgress(io.StringIO())
    hosts = {n: plan.inventory.hosts[n] for n in plan.host_names}
    sessions = open_sessions(hosts, progress, tasks=Overlap.concurrent())
    phase = NetworkPhase(
        plan.network, sessions, tmp_path, progress, lambda h: connect(h, timeout_s=3)
    )
    lifts: list[threading.Timer] = []
    try:
        phase.snapshot()
        phase.arm_and_apply()
        for host in ("qnap", "syno"):
            lift_argv = cut_off(bb_lab.hosts[host].lan_root_side)
            lifts.append(
                threading.Timer(TIMEOUT_S + 2, subprocess.run, (lift_argv,), {"check": True})
            )
        for lift in lifts:
            lift.start()
        phase.verify()
        phase.confirm()
    finally:
        phase.teardown()
        for lift in lifts:
            lift.join()
        close_sessions(sessions)
    record = phase.to_dict()
    for host in ("qnap", "syno"):
        assert record["hosts"][host]["status"] == "reverted-by-host", record["hosts"][host]
        assert record["hosts"][host]["confirmed"] is False
    assert record["hosts"]["ws"]["status"] == "restored"
    assert nic_states(bb_lab) == before
