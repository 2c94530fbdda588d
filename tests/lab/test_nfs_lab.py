"""NFS transfers for real: nfs-ganesha in the NAS's namespace, libnfs nfs-cp on the client."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from lab_helpers import host_tmp_files

from nasplan.input.plan import load_plan
from nasplan.lab import LabState, netns, nfs, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

LAB = {
    "name": "nfs-lab",
    "lan": {"prefix": "198.18.39.0/24", "rate": "200M"},
    "hosts": {"nas": {"services": ["nfs"]}, "ws": {}},
}
MIB = 2**20


def test_nfs_write_and_read_for_real(
    make_lab: Callable[[dict[str, Any]], LabState], tmp_path: Path
) -> None:
    state = make_lab(LAB)
    nas_dir = state.host_dir("nas")
    files = nfs.nfs_files(nas_dir)
    inventory = yaml.safe_load(state.inventory_path.read_text())
    assert inventory["hosts"]["nas"]["vars"] == {
        "nfs": {"export": "/data", "server_path": str(files.export_path.resolve())}
    }
    assert services.problems("nas", nas_dir) == []
    ganesha_pid = int(files.pid_path.read_text())
    assert ganesha_pid in state.pids and netns.pid_alive(ganesha_pid)

    nfs_var = "{{ hosts.nas.nfs.%s }}"
    plan = {
        "name": "nfs",
        "inventory": str(state.inventory_path),
        "tests": [
            {"kind": "transfer", "id": "nfs", "server": "nas", "client": "ws", "method": "nfs",
             "size": "32MiB", "repetitions": 2, "export": nfs_var % "export",
             "server_path": nfs_var % "server_path"},
        ],
    }  # fmt: skip
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    before = host_tmp_files(state, "nasplan-xfer.*")
    outcome = apply(
        RunRequest(load_plan(plan_path), out=tmp_path / "run"), make_progress(io.StringIO())
    )
    run = load_run(tmp_path / "run")
    (test,) = run["tests"]
    assert outcome.exit_code == EXIT_OK, test["error"]
    assert test["status"] == "ok"
    assert [(r["direction"], r["bytes"]) for r in test["repetitions"]] == [
        *[("write", 32 * MIB)] * 2,
        *[("read", 32 * MIB)] * 2,
    ]
    # 200M LAN shaped by tc: the TCP maximum is about 191 Mbit/s = 23.9 MB/s.
    theoretical_bytes_per_second = test["path"]["theoretical_bits_per_second"] / 8
    for direction in ("write", "read"):
        median = test["directions"][direction]["median"]
        assert 0.5 * theoretical_bytes_per_second < median, (direction, median)
        assert median < 1.02 * theoretical_bytes_per_second, (direction, median)
    raw = (tmp_path / "run" / test["repetitions"][0]["raw_file"]).read_text()
    assert f"copied {32 * MIB} bytes" in raw

    # Nothing left on the export or the client; the run saw no cleanup problem.
    assert list(files.export_path.iterdir()) == []
    assert host_tmp_files(state, "nasplan-xfer.*") == before
    assert run["warnings"] == []
