"""Network changes against the lab: jumbo frames + p2p addressing, always put back."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import cut_off, nic_state

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
    "name": "net-lab",
    "lan": {"prefix": "198.18.32.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
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
def net_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def write_plan(
    state: LabState, directory: Path, *, link_mtu: int | None = 9000, **extra: Any
) -> Path:
    link: dict[str, Any] = {
        "name": "p2p",
        "a": {"host": "nas", "interface": "p2p"},
        "b": {"host": "ws", "interface": "p2p"},
        "prefix": "198.18.33.0/30",
    }
    if link_mtu:
        link["mtu"] = link_mtu
    plan = {
        "name": "net-jumbo",
        "inventory": str(state.inventory_path),
        "network": {"confirm_timeout_s": TIMEOUT_S},
        "links": [link],
        "tests": [
            {
                "id": "p2p",
                "kind": "iperf3",
                "server": "nas",
                "client": "ws",
                "target": "link:p2p@nas",
                "duration_s": extra.pop("duration_s", 1),
                "repetitions": 1,
            }
        ],
        **extra,
    }
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def all_states(state: LabState) -> dict[str, Any]:
    return {name: nic_state(state, name) for name in state.hosts}


def test_jumbo_p2p_applies_measures_and_restores(net_lab: LabState, tmp_path: Path) -> None:
    before = all_states(net_lab)
    plan = load_plan(write_plan(net_lab, tmp_path))
    outcome = apply(RunRequest(plan, out=tmp_path / "run"), PlainProgress(io.StringIO()))
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert outcome.exit_code == 0, run["network"]["error"] or run["tests"][0]["error"]
    assert run["tests"][0]["params"]["address"] == "198.18.33.1"
    assert run["tests"][0]["path"]["mtu_bytes"] == 9000
    df = [c for c in run["network"]["checks"] if c["check"] == "df-ping"]
    assert {c["host"] for c in df} == {"nas", "ws"} and all("8972 bytes" in c["detail"] for c in df)
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}
    assert "## Network changes" in (tmp_path / "run/report.md").read_text()
    assert all_states(net_lab) == before


def test_ctrl_c_in_a_test_restores_every_host(net_lab: LabState, tmp_path: Path) -> None:
    before = all_states(net_lab)
    plan = write_plan(net_lab, tmp_path, duration_s=10)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nasplan", "apply", str(plan), "--out", str(tmp_path / "run")],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # Ctrl-C as at a terminal: a test run started in the background (`cmd &`, as some CI
        # and editor runners do) inherits SIGINT ignored, and Python then keeps it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:
        seen += line
        if "repetition" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    seen += proc.stderr.read()
    assert proc.wait(timeout=60) == 130, seen
    assert "network: restored" in seen
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["status"] == "interrupted"
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}
    assert all_states(net_lab) == before


def test_host_cut_off_after_the_change_reverts_by_itself(net_lab: LabState, tmp_path: Path) -> None:
    before = all_states(net_lab)
    plan = load_plan(write_plan(net_lab, tmp_path))
    progress = PlainProgress(io.StringIO())
    hosts = {n: plan.inventory.hosts[n] for n in plan.host_names}
    sessions = open_sessions(hosts, progress, tasks=Overlap.concurrent())
    port = net_lab.hosts["nas"].lan_root_side
    phase = NetworkPhase(
        plan.network, sessions, tmp_path, progress, lambda h: connect(h, timeout_s=3)
    )
    lift: threading.Timer | None = None
    try:
        phase.snapshot()
        phase.arm_and_apply()
        lift_argv = cut_off(port)
        lift = threading.Timer(TIMEOUT_S + 2, subprocess.run, (lift_argv,), {"check": True})
        lift.start()
        phase.verify()
        phase.confirm()
    finally:
        phase.teardown()
        if lift is not None:
            lift.join()
        close_sessions(sessions)
    record = phase.to_dict()
    assert record["hosts"]["nas"]["status"] == "reverted-by-host", record["hosts"]["nas"]
    assert record["hosts"]["nas"]["confirmed"] is False
    assert record["hosts"]["ws"]["status"] == "restored"
    assert "nas: ssh check failed" in (phase.error or "")
    assert all_states(net_lab) == before


def test_smaller_peer_mtu_fails_the_df_ping_naming_both_ends(
    net_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(net_lab)
    path = write_plan(
        net_lab,
        tmp_path,
        link_mtu=None,
        interfaces=[{"host": "nas", "interface": "p2p", "mtu": 9000}],
    )
    outcome = apply(RunRequest(load_plan(path), out=tmp_path / "run"), PlainProgress(io.StringIO()))
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert outcome.exit_code == 1
    assert run["tests"][0]["status"] == "skipped"
    error = run["network"]["error"]
    assert "from nas eth1" in error and "to ws eth1 198.18.33.2 (MTU 1500)" in error
    assert "ws eth1 has the smaller MTU 1500" in error
    assert any("disagree on MTU" in w for w in run["warnings"])
    assert all_states(net_lab) == before


def test_keep_then_restore_puts_hosts_back_and_records_it(
    net_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(net_lab)
    plan = write_plan(net_lab, tmp_path)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "nasplan"]
    kept = subprocess.run(
        [*cmd, "apply", str(plan), "--keep", "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert kept.returncode == 0, kept.stderr
    during = nic_state(net_lab, "nas")["nics"]["eth1"]
    assert during[0] == 9000 and "198.18.33.1" in during[2]  # left in place, as asked
    assert {h["status"] for h in json.loads((out / "run.json").read_text())["network"][
        "hosts"].values()} == {"kept"}  # fmt: skip
    restored = subprocess.run(
        [*cmd, "restore", str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    assert restored.returncode == 0, restored.stderr
    assert all_states(net_lab) == before
    run = json.loads((out / "run.json").read_text())
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}
    assert run["network"]["kept"] is False
    assert "nasplan restore: hosts restored" in run["network"]["warnings"]


def test_check_shows_the_changes_from_the_current_mtu_and_makes_none(
    net_lab: LabState, tmp_path: Path
) -> None:
    before = all_states(net_lab)
    proc = subprocess.run(
        [sys.executable, "-m", "nasplan", "apply", str(write_plan(net_lab, tmp_path)), "--check"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "nas: would set eth1: MTU 1500 -> 9000 (and put it back after the run)" in proc.stderr
    assert "ws: would set eth1: + 198.18.33.2/30" in proc.stderr
    assert all_states(net_lab) == before
