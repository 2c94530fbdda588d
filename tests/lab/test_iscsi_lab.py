"""The lab's iSCSI target for real: tgtd in the NAS's namespace, libiscsi on the client."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nasplan.lab import LabState, down, iscsi, netns, services

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
