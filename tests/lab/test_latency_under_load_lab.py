"""In the lab: a LAN switch port that holds 40 ms of packets queues them under an iperf3 load; the
client's pings say so (idle vs loaded) in the record, the report and the Diagnosis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.lab import netns, services
from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "l45-queue",
    "lan": {"prefix": "198.18.216.0/24", "rate": "100M"},
    "hosts": {
        "nas": {"personality": "debian", "services": ["smb"]},
        "ws": {"personality": "debian"},
    },
}


@pytest.fixture(scope="module")
def ran(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("queue")
    with running_lab(LAB) as state:
        # the LAN switch's port to the NAS is the path's narrowest (90 of the 100 Mbit/s the
        # workstation sends) and holds 40 ms of packets at its rate (a deep buffer); the lab's
        # own shaper there holds 10 ms
        netns.run(
            ["tc", "qdisc", "replace", "dev", state.hosts["nas"].lan_root_side, "root", "tbf",
             "rate", "90mbit", "burst", "65536", "latency", "40ms"],
        )  # fmt: skip
        # reno, as most senders' (cubic is not allowed as a namespace's default here), fills
        # the queue; the lab host's default, BBR, keeps it short
        netns.run(["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"],
                  netns=state.hosts["ws"].namespace)  # fmt: skip
        smb = "{{ hosts.nas.smb.%s }}"
        plan = {
            "name": "l45-queue",
            "inventory": str(state.inventory_path),
            "tests": [
                {"id": "load", "kind": "iperf3", "server": "nas", "client": "ws",
                 "duration_s": 2, "repetitions": 1, "congestion": "cubic",
                 "latency_under_load": True},
                {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas",
                 "client": "ws", "size": "24MiB", "repetitions": 1, "latency_under_load": True,
                 "share": smb % "share", "user": smb % "user",
                 "password_env": smb % "password_env"},
            ],
        }  # fmt: skip
        password = services.read_password(state.host_dir("nas"))
        assert password
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(work / "run")],
            capture_output=True, text=True, cwd=ROOT, timeout=180, check=False,
            env={**os.environ, services.SMB_PASSWORD_ENV: password},
        )  # fmt: skip
    run = load_run(work / "run")  # validated against the run schema
    return {
        "proc": proc,
        "test": run["tests"][0],
        "smb": run["tests"][1],
        "diagnosis": run.get("diagnosis") or [],
        "report": (work / "run" / "report.md").read_text(),
    }


def test_the_pings_rise_by_the_queue_under_load(ran: dict[str, Any]) -> None:
    test = ran["test"]
    assert test["status"] == "ok", (test["error"], ran["proc"].stderr[-2000:])
    rep = test["repetitions"][0]
    assert rep["loaded_pings"] >= 5
    under = test["latency_under_load"]
    assert under["idle_rtt_median_ms"] < 5
    # a full 40 ms queue at the switch's port, minus what cubic leaves empty
    assert 20 < under["increase_ms"] < 60, under
    assert under["loaded_rtt_p95_ms"] >= under["loaded_rtt_median_ms"]


def test_the_report_and_the_diagnosis_say_how_long_the_link_queues(ran: dict[str, Any]) -> None:
    under = ran["test"]["latency_under_load"]
    (found,) = [
        f for f in ran["diagnosis"] if f["cause"] == "queue-under-load" and f["test"] == "load"
    ]
    assert found["text"].startswith(
        f"the path ws → nas.lan (198.18.216.10) queues {under['increase_ms']:.1f} ms under load"
    )
    assert f"queues {under['increase_ms']:.1f} ms under load" in ran["report"]
    assert "; round-trip time idle " in ran["report"]
    assert f"RTT +{under['increase_ms']:.1f} ms under load" in ran["report"]


def test_a_copy_to_the_nas_queues_on_its_way_in_and_not_out(ran: dict[str, Any]) -> None:
    smb = ran["smb"]
    assert smb["status"] == "ok", smb["error"]
    by_direction = smb["latency_under_load"]["directions"]
    # the writes cross the switch port that queues; the reads come back through one that
    # does not (the lab's own 10 ms shaper on the NAS, whose sender keeps its queue short)
    # (a copy of 24 MiB spends part of its time in slow start, under a full queue)
    assert by_direction["write"]["increase_ms"] > 10, by_direction
    assert by_direction["read"]["increase_ms"] < by_direction["write"]["increase_ms"] / 2
    (found,) = [
        f for f in ran["diagnosis"] if f["cause"] == "queue-under-load" and f["test"] == "smb"
    ]
    assert "while it writes" in found["text"]
