"""The lab's iSCSI target for real: tgtd in the NAS's namespace, libiscsi on the client."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import watch_argv

from nasplan.analysis import VERDICTS
from nasplan.input.plan import load_plan
from nasplan.lab import LabState, down, iscsi, netns, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_TEST_FAILED
from nasplan.run.request import RunRequest

MIB = 2**20


def test_lab_iscsi_target_serves_a_chap_protected_lun_and_leaves_nothing(
    make_lab: Callable[[dict[str, Any]], LabState], tmp_path: Path
) -> None:
    spec = {
        "name": "is-svc",
        "lan": {"prefix": "198.19.48.0/24", "rate": "1G"},
        "hosts": {"nas": {"services": ["iscsi"], "iscsi": {"lun_size": "8MiB"}}, "ws": {}},
    }
    state = make_lab(spec)
    nas_dir = state.host_dir("nas")
    files = iscsi.iscsi_files(nas_dir)
    inventory = yaml.safe_load(state.inventory_path.read_text())
    assert inventory["hosts"]["nas"]["vars"]["iscsi"] == {
        "iqn": "iqn.2026-12.lab.nasplan:nas.scratch",
        "lun": 1,
        "port": 3260,
        "lun_size_bytes": 8 * MIB,
        "scratch": True,
        "chap_user": "nasplan",
        "chap_secret_env": "NASPLAN_LAB_ISCSI_SECRET",
        "chap_secret_file": str(files.secret_path),
    }
    assert files.secret_path.stat().st_mode & 0o777 == 0o600
    secret = iscsi.read_secret(nas_dir)
    assert secret and secret not in state.inventory_path.read_text()
    assert services.problems("nas", nas_dir) == []
    pid = int(files.pid_path.read_text())
    assert pid in state.pids and netns.pid_alive(pid)

    # Debian's own libiscsi tool, from the client's namespace: without CHAP the login fails,
    # with the secret (from the environment, as libiscsi reads it) it lists LUN 1 of 8 MiB.
    url = "iscsi://198.19.48.10/iqn.2026-12.lab.nasplan:nas.scratch/1"
    ws = state.hosts["ws"].namespace
    refused = subprocess.run(
        ["ip", "netns", "exec", ws, "iscsi-inq", url], capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0
    assert "Authentication failure" in refused.stdout + refused.stderr
    env = {**os.environ, "LIBISCSI_CHAP_USERNAME": "nasplan", "LIBISCSI_CHAP_PASSWORD": secret}
    listed = subprocess.run(
        ["ip", "netns", "exec", ws, "iscsi-ls", "-s", "iscsi://198.19.48.10"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert "Target:iqn.2026-12.lab.nasplan:nas.scratch Portal:198.19.48.10:3260" in listed.stdout
    assert "Lun:1    Type:DIRECT_ACCESS (Size:7M)" in listed.stdout, listed.stdout

    # lab down: tgtd (which ignores SIGTERM) is asked to exit, and nothing is left.
    started = time.monotonic()
    down(tmp_path / "is-svc.yaml", tmp_path / "state" / "is-svc")
    assert time.monotonic() - started < 4.0
    assert not netns.pid_alive(pid)
    assert not nas_dir.exists()
    assert not any(name.startswith("npl-is-svc-") for name in netns.list_namespaces())


def test_iscsi_write_and_read_beside_iperf3_and_fio_with_chap_kept_secret(
    make_lab: Callable[[dict[str, Any]], LabState],
    tmp_path: Path,
    shared_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = {
        "name": "is-run",
        "lan": {"prefix": "198.19.49.0/24", "rate": "200M"},
        "hosts": {"nas": {"services": ["iscsi"], "iscsi": {"lun_size": "16MiB"}}, "ws": {}},
    }
    state = make_lab(spec)
    secret = iscsi.read_secret(state.host_dir("nas"))
    assert secret
    monkeypatch.setenv("NASPLAN_LAB_ISCSI_SECRET", secret)
    lun = {"server": "nas", "client": "ws", "iqn": "{{ hosts.nas.iscsi.iqn }}", "lun": 1,
           "chap_user": "{{ hosts.nas.iscsi.chap_user }}",
           "chap_secret_env": "{{ hosts.nas.iscsi.chap_secret_env }}"}  # fmt: skip
    plan = {
        "name": "iscsi",
        "inventory": str(state.inventory_path),
        "tests": [
            {"kind": "iperf3", "id": "lan", "server": "nas", "client": "ws", "duration_s": 1,
             "repetitions": 1},
            {"kind": "iperf3", "id": "lan-r", "server": "nas", "client": "ws", "duration_s": 1,
             "reverse": True, "repetitions": 1},
            {"kind": "disk", "id": "nas-disk", "host": "nas", "path": str(shared_dir),
             "size": "4MiB", "repetitions": 1},
            {"kind": "iscsi", "id": "blk", **lun, "scratch": True, "size": "4MiB",
             "repetitions": 2},
            {"kind": "iscsi", "id": "bad-iqn", **lun, "iqn": "iqn.2026-12.lab.nasplan:nas.nosuch",
             "direction": "read", "size": "1MiB", "repetitions": 1},
        ],
    }  # fmt: skip
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))

    with watch_argv(secret) as seen:
        outcome = apply(
            RunRequest(load_plan(plan_path), out=tmp_path / "run"), make_progress(io.StringIO())
        )
    assert seen == []  # the secret was in no process's argv while the run went on

    run = load_run(tmp_path / "run")
    tests = {t["id"]: t for t in run["tests"]}
    assert outcome.exit_code == EXIT_TEST_FAILED  # bad-iqn fails, alone
    blk = tests["blk"]
    assert (blk["status"], blk["error"]) == ("ok", None)
    assert [(r["direction"], r["bytes"]) for r in blk["repetitions"]] == [
        ("write", 4 * MIB), ("write", 4 * MIB), ("read", 4 * MIB), ("read", 4 * MIB)
    ]  # fmt: skip
    # 200M LAN shaped by tc: nothing crosses it faster than the TCP maximum (23.9 MB/s).
    limit = blk["path"]["theoretical_bits_per_second"] / 8
    for direction in ("write", "read"):
        median = blk["directions"][direction]["median"]
        assert 0.2 * limit < median < 1.02 * limit, (direction, median)
        verdict = blk["bottleneck"][direction]
        assert verdict["verdict"] in VERDICTS and verdict["verdict"] != "unknown"
        assert verdict["text"].startswith(f"iSCSI {direction} ")
        assert verdict["evidence"]["network_source"] == "iperf3"
        assert verdict["evidence"]["disk_bytes_per_second"] is not None
    # What was written is on the LUN's backing file: random data (a zero byte in 256), not the
    # sparse file's zeros; the LUN beyond the 4 MiB is untouched.
    lun_bytes = iscsi.iscsi_files(state.host_dir("nas")).lun_path.read_bytes()
    assert lun_bytes[: 4 * MIB].count(0) < 2 * 4 * MIB // 256
    assert lun_bytes[4 * MIB :].count(0) == 12 * MIB

    bad = tests["bad-iqn"]
    assert bad["status"] == "failed"
    assert bad["error"] == (
        "read 1: iSCSI login to iscsi://198.19.49.10:3260/iqn.2026-12.lab.nasplan:nas.nosuch/1 "
        "failed: Failed to log in to target. Status: Target not found(515) (no target with "
        "this IQN behind the portal (`iscsi-ls iscsi://198.19.49.10:3260` lists the portal's "
        "targets))"
    )
    # Nothing of the initiator is left on the client.
    assert not list(state.host_path("ws", "/tmp").glob("nasplan-iscsi.*"))
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    report = (tmp_path / "run" / "report.md").read_text()
    assert "### blk (iscsi)" in report and "iSCSI (block storage)" in report
    assert "- **blk** (write): iSCSI write " in report
    assert "## Other tests" not in report  # iSCSI has its place beside the file transfers
    # Every command kept and shown, the secret in none (checked in every file above): each
    # iSCSI repetition's initiator (its login and timed write or read), iperf3's server too.
    for rep in blk["repetitions"]:
        (kept,) = rep["commands"]
        assert kept["host"] == "ws" and kept["argv"][0] == "python3"
        assert kept["argv"][kept["argv"].index("--direction") + 1] == rep["direction"]
        assert kept["argv"][kept["argv"].index("--chap-user") + 1] == "nasplan"
    commands = report.split("## Commands")[1]
    shown = shlex.join(blk["repetitions"][0]["commands"][0]["argv"])
    # (each part copies the initiator to a temporary directory of its own)
    assert f"# write, repetition 1\nws: {shown}\n" in commands
    served, _ = tests["lan"]["repetitions"][0]["commands"]
    assert (served["host"], served["server"], served["argv"][1:3]) == ("nas", True, ["-s", "-1"])
    assert f"nas: {shlex.join(served['argv'])} (server, started first)\n" in commands
