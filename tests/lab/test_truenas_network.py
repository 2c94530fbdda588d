"""TrueNAS network changes go through the middleware's own commit with rollback and checkin."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testinfra
import yaml
from lab_helpers import nic_state

from nasplan.hosts.session import close_sessions, open_sessions
from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.progress import PlainProgress
from nasplan.remote.ssh import connect
from nasplan.run.apply import apply
from nasplan.run.network_phase import NetworkPhase
from nasplan.run.overlap import Overlap
from nasplan.run.request import RunRequest

TIMEOUT_S = 5
LAB = {
    "name": "tnas-net",
    "lan": {"prefix": "198.18.41.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "truenas"}, "ws": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "a": {"host": "nas", "interface": "eth1"},
            "b": {"host": "ws", "interface": "eth1"},
        }
    ],
}


@pytest.fixture(scope="module")
def tnas_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def write_plan(state: LabState, directory: Path) -> Path:
    plan = {
        "name": "tnas-jumbo",
        "inventory": str(state.inventory_path),
        "network": {"confirm_timeout_s": TIMEOUT_S},
        "links": [
            {
                "name": "p2p",
                "a": {"host": "nas", "interface": "p2p"},
                "b": {"host": "ws", "interface": "p2p"},
                "prefix": "198.18.42.0/30",
                "mtu": 9000,
            }
        ],
        "tests": [
            {
                "id": "p2p",
                "kind": "iperf3",
                "server": "nas",
                "client": "ws",
                "target": "link:p2p@nas",
                "duration_s": 1,
                "repetitions": 1,
            }
        ],
    }
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def host_state(state: LabState, name: str) -> dict[str, Any]:
    """NICs, routes and revert files as a user checks them, and on the NAS midclt's view."""
    seen = nic_state(state, name)
    if name == "nas":
        host = testinfra.get_host(f"ssh://{name}", ssh_config=str(state.ssh_config_path))
        seen["waiting"] = host.check_output("midclt call interface.checkin_waiting")
        seen["pending"] = host.check_output("midclt call interface.has_pending_changes")
    return seen


def all_states(state: LabState) -> dict[str, Any]:
    return {name: host_state(state, name) for name in state.hosts}


def test_truenas_change_uses_interface_commit_and_is_restored(
    tnas_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(tnas_lab)
    assert before["nas"]["waiting"] == "null" and before["nas"]["pending"] == "False"
    outcome = apply(
        RunRequest(load_plan(write_plan(tnas_lab, tmp_path)), out=tmp_path / "run"),
        PlainProgress(io.StringIO()),
    )
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert outcome.exit_code == 0, run["network"]["error"] or run["tests"][0]["error"]
    hosts = run["network"]["hosts"]
    assert hosts["nas"]["mechanism"] == "truenas-interface-commit"
    assert hosts["ws"]["mechanism"] == "setsid-timer"
    assert hosts["nas"]["confirmed"] is True
    assert hosts["nas"]["applied"]["eth1"]["mtu_bytes"] == 9000
    assert hosts["nas"]["applied"]["eth1"]["addresses"] == ["198.18.42.1/30"]
    assert run["tests"][0]["path"]["mtu_bytes"] == 9000
    assert {h["status"] for h in hosts.values()} == {"restored"}
    snapshots = json.loads((tmp_path / "run/network/snapshots.json").read_text())
    assert snapshots["hosts"]["nas"]["mechanism"] == "truenas-interface-commit"
    assert all_states(tnas_lab) == before


def test_truenas_rolls_back_by_itself_when_nasplan_never_checks_in(
    tnas_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(tnas_lab)
    plan = load_plan(write_plan(tnas_lab, tmp_path))
    progress = PlainProgress(io.StringIO())
    hosts = {n: plan.inventory.hosts[n] for n in plan.host_names}
    sessions = open_sessions(hosts, progress, tasks=Overlap.concurrent())
    port = tnas_lab.hosts["nas"].lan_root_side  # created by the lab, in the root namespace
    phase = NetworkPhase(
        plan.network, sessions, tmp_path, progress, lambda h: connect(h, timeout_s=3)
    )
    lift: threading.Timer | None = None
    try:
        phase.snapshot()
        phase.arm_and_apply()
        assert phase.hosts["nas"].applied["eth1"].mtu_bytes == 9000
        subprocess.run(["ip", "link", "set", "dev", port, "down"], check=True)
        up = ["ip", "link", "set", "dev", port, "up"]
        lift = threading.Timer(TIMEOUT_S + 2, subprocess.run, (up,), {"check": True})
        lift.start()
        phase.verify()
        phase.confirm()
    finally:
        phase.teardown()
        if lift is not None:
            lift.join()
        close_sessions(sessions)
    record = phase.to_dict()["hosts"]
    assert record["nas"]["mechanism"] == "truenas-interface-commit"
    assert record["nas"]["status"] == "reverted-by-host", record["nas"]
    assert record["nas"]["confirmed"] is False
    assert record["ws"]["status"] == "restored"
    assert all_states(tnas_lab) == before


def test_kept_truenas_change_is_undone_by_nasplan_restore(
    tnas_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(tnas_lab)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "nasplan"]
    plan = write_plan(tnas_lab, tmp_path)
    kept = subprocess.run(
        [*cmd, "apply", str(plan), "--keep", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert kept.returncode == 0, kept.stderr
    during = host_state(tnas_lab, "nas")
    assert during["nics"]["eth1"][0] == 9000 and "198.18.42.1" in during["nics"]["eth1"][2]
    assert (during["waiting"], during["pending"]) == ("null", "False")  # checked in: it stays
    nas = testinfra.get_host("ssh://nas", ssh_config=str(tnas_lab.ssh_config_path))
    log = "/var/lib/nasplan-lab-midclt/calls.log"
    nas.check_output(f"rm -f {log}")
    restored = subprocess.run(
        [*cmd, "restore", str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    assert restored.returncode == 0, restored.stderr
    # nasplan restore used the middleware, as the snapshot file said
    restore_calls = nas.check_output(f"cat {log}").split()
    assert restore_calls[:4] == [
        "interface.checkin_waiting",
        "interface.update",
        "interface.commit",
        "interface.checkin",
    ]
    assert all_states(tnas_lab) == before
    run = json.loads((out / "run.json").read_text())
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}


def test_truenas_change_is_put_back_by_the_host_when_nasplan_is_killed(
    tnas_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(tnas_lab)
    plan = yaml.safe_load(write_plan(tnas_lab, tmp_path).read_text())
    plan["tests"][0]["duration_s"] = 4
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False))
    env = {**os.environ, "NASPLAN_LEASE_S": "3", "NASPLAN_RENEW_S": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "nasplan"]
    argv = [*cmd, "apply", str(tmp_path / "plan.yaml"), "--out", str(tmp_path / "run")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "repetition 1/1" in line:
            break
    during = host_state(tnas_lab, "nas")
    assert during["nics"]["eth1"][0] == 9000
    assert (during["waiting"], during["pending"]) == ("null", "False")  # checked in
    proc.kill()
    proc.wait()

    def network() -> dict[str, Any]:
        return {
            n: (s["nics"], s["routes"], s.get("pending")) for n, s in all_states(tnas_lab).items()
        }

    # checked in, yet guarded on the run's lease: the host puts the snapshot back by itself
    deadline = time.monotonic() + 15
    wanted = {n: (s["nics"], s["routes"], s.get("pending")) for n, s in before.items()}
    while network() != wanted:
        assert time.monotonic() < deadline, network()
        time.sleep(0.5)
    restored = subprocess.run(
        [*cmd, "restore", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert restored.returncode == 0, restored.stderr
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["network"]["hosts"]["nas"]["status"] == "reverted-by-host"
    assert all_states(tnas_lab) == before


# eth1 as a NAS set up in its UI with DHCP on and one static alias: the DHCP client's lease is
# live only (finite lifetime, as a lease is), the alias is in the middleware's configuration.
CONFIGURED = "198.19.16.1/24"
LEASE = "198.19.17.7/24"


def midclt_json(nas: Any, method: str, *args: Any) -> Any:
    argv = ["midclt", "call", method, *(json.dumps(a) for a in args)]
    return json.loads(nas.check_output(shlex.join(argv)))


def alias_of(address: str) -> dict[str, Any]:
    ip, _, prefix = address.partition("/")
    return {"type": "INET", "address": ip, "netmask": int(prefix)}


def eth1_configuration(nas: Any) -> dict[str, Any]:
    """What the middleware has stored for eth1 (``interface.query``, not its live state)."""
    (entry,) = midclt_json(nas, "interface.query", [["id", "=", "eth1"]])
    return {k: entry[k] for k in ("aliases", "ipv4_dhcp", "ipv6_auto", "mtu")}


def lease_is_dynamic(nas: Any) -> bool:
    (nic,) = json.loads(nas.check_output("ip -j addr show dev eth1"))
    return any(
        f"{a['local']}/{a['prefixlen']}" == LEASE and a.get("dynamic") for a in nic["addr_info"]
    )


@pytest.fixture
def dhcp_nic(tnas_lab: LabState) -> Iterator[Any]:
    """The NAS's eth1 with DHCP on, a configured alias and a lease; put back as it was after."""
    nas = testinfra.get_host("ssh://nas", ssh_config=str(tnas_lab.ssh_config_path))
    was = eth1_configuration(nas)
    configure_eth1(nas, {"ipv4_dhcp": True, "aliases": [alias_of(CONFIGURED)]})
    nas.check_output(f"ip addr add {LEASE} dev eth1 valid_lft 900 preferred_lft 900")
    try:
        yield nas
    finally:
        configure_eth1(nas, was)
        assert eth1_configuration(nas) == was


def configure_eth1(nas: Any, update: dict[str, Any]) -> None:
    """Store ``update`` in the middleware's eth1 configuration and commit it (no rollback)."""
    midclt_json(nas, "interface.update", "eth1", update)
    nas.check_output(shlex.join(["midclt", "call", "interface.commit", '{"rollback": false}']))


def test_truenas_never_writes_a_dhcp_address_as_static_and_restores_the_aliases_exactly(
    tnas_lab: LabState, dhcp_nic: Any, tmp_path: Path
) -> None:
    nas = dhcp_nic
    configured = eth1_configuration(nas)
    assert configured == {
        "aliases": [alias_of(CONFIGURED)],
        "ipv4_dhcp": True,
        "ipv6_auto": False,
        "mtu": None,
    }
    before = all_states(tnas_lab)
    assert lease_is_dynamic(nas)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "nasplan"]
    plan = write_plan(tnas_lab, tmp_path)
    kept = subprocess.run(
        [*cmd, "apply", str(plan), "--keep", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        assert kept.returncode == 0, kept.stderr
        # the configured alias and nasplan's address: the lease stays the DHCP client's
        during = eth1_configuration(nas)
        assert during["aliases"] == [alias_of(CONFIGURED), alias_of("198.18.42.1/30")]
        assert (during["ipv4_dhcp"], during["mtu"]) == (True, 9000)
        assert lease_is_dynamic(nas)
        snapshot = json.loads((out / "network/snapshots.json").read_text())
        eth1 = snapshot["hosts"]["nas"]["before"]["eth1"]
        assert LEASE in eth1["addresses"]
        assert eth1["configured"] == {
            "aliases": [CONFIGURED],
            "ipv4_dhcp": True,
            "ipv6_auto": False,
            "mtu_bytes": None,
        }
    finally:  # a failed check leaves no kept change behind for the next test
        restored = subprocess.run(
            [*cmd, "restore", str(out)], capture_output=True, text=True, timeout=120, check=False
        )
    assert restored.returncode == 0, restored.stderr
    assert eth1_configuration(nas) == configured
    assert lease_is_dynamic(nas)
    assert all_states(tnas_lab) == before


def test_a_truenas_run_puts_the_configuration_back_and_leaves_the_lease_alone(
    tnas_lab: LabState, dhcp_nic: Any, tmp_path: Path
) -> None:
    nas = dhcp_nic
    configured = eth1_configuration(nas)
    before = all_states(tnas_lab)
    outcome = apply(
        RunRequest(load_plan(write_plan(tnas_lab, tmp_path)), out=tmp_path / "run"),
        PlainProgress(io.StringIO()),
    )
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert outcome.exit_code == 0, run["network"]["error"] or run["tests"][0]["error"]
    applied = run["network"]["hosts"]["nas"]["applied"]["eth1"]["addresses"]
    assert {CONFIGURED, LEASE, "198.18.42.1/30"} <= set(applied)
    assert run["network"]["hosts"]["nas"]["status"] == "restored"
    assert eth1_configuration(nas) == configured
    assert lease_is_dynamic(nas)
    assert all_states(tnas_lab) == before
