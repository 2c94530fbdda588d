"""In the lab: Ctrl-C in the middle of a disk profile's grid, then ``apply --resume``: the cells
measured before the stop are kept and only the others measured, on the NAS's volume and through
its SMB share, each job, mode and repetition once; the stopped run's report and the resumed
one's hold tests/unit/run_states.py's invariants (the grid the medians of the ok repetitions,
nothing unmeasured shown as 0, the stop said)."""

from __future__ import annotations

import collections
import signal
import time
from pathlib import Path
from typing import Any

import yaml
from lab_helpers import finish, leftovers, nasplan_process
from run_states import check

from nasplan.lab import services
from nasplan.report import pivot
from nasplan.results import load_run

LAB = {
    "name": "stres",
    "lan": {"prefix": "198.18.180.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"services": ["smb"], "volumes": {"v1": {"rate": "200MiB/s", "size": "256MiB"}}},
        "ws": {},
    },
}
JOBS = [{"block_size": "1MiB", "queue_depth": 8}, {"block_size": "4KiB", "pattern": "random"}]
PROFILE = {"kind": "disk-profile", "host": "nas", "jobs": JOBS, "size": "16MiB",
           "duration_s": 1, "repetitions": 2}  # fmt: skip
THROUGH = {"method": "smb", "client": "ws", "share": "v1", "user": "{{ hosts.nas.smb.user }}",
           "password_env": "{{ hosts.nas.smb.password_env }}"}  # fmt: skip


def test_a_profile_stopped_mid_grid_is_resumed_cell_by_cell(
    running_lab: Any, tmp_path: Path
) -> None:
    with running_lab(LAB) as lab:
        plan = {
            "name": "stres",
            "inventory": str(lab.inventory_path),
            "tests": [
                {"id": "cdm", "volume": "v1", **PROFILE},
                {"id": "smb", "through": THROUGH, **PROFILE},
            ],
        }
        plan_file = tmp_path / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        password = services.read_password(lab.host_dir("nas")) or ""
        env = {services.SMB_PASSWORD_ENV: password}
        before = leftovers(lab)
        run_dir = tmp_path / "run"
        proc = nasplan_process("apply", str(plan_file), "--out", str(run_dir), env=env)
        deadline = time.monotonic() + 90
        # two of the four cells of the volume's first round measured: Ctrl-C
        while len(list(run_dir.glob("raw/cdm/*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        said = finish(proc)
        assert proc.returncode == 130, said
        stopped = load_run(run_dir)
        (was,) = [t for t in stopped["tests"] if t["id"] == "cdm"]
        kept = {(r["profile_job"], r["direction"], r["index"]) for r in was["repetitions"]}
        assert was["status"] == "interrupted" and 2 <= len(kept) < 8, was["repetitions"]
        check(stopped, (run_dir / "report.md").read_text(), pivot.run_table(stopped)[0])

        resumed = nasplan_process("apply", "--resume", str(run_dir), env=env)
        said = finish(resumed)
        assert resumed.returncode == 0, said
        assert leftovers(lab) - before == set()
    run = load_run(run_dir)
    check(run, (run_dir / "report.md").read_text(), pivot.run_table(run)[0])
    for test in run["tests"]:
        assert test["status"] == "ok", test["error"]
        counted = collections.Counter(
            (r["profile_job"], r["direction"], r["index"]) for r in test["repetitions"]
        )
        assert set(counted.values()) == {1} and len(counted) == 2 * 2 * 2, counted
        cells = [c for row in test["grid"] for c in row["cells"].values()]
        assert [c["n"] for c in cells] == [2, 2, 2, 2], test["grid"]
    # what the stopped run measured is kept as it was, not measured again
    (cdm,) = [t for t in run["tests"] if t["id"] == "cdm"]
    first = {(r["profile_job"], r["direction"], r["index"]): r for r in cdm["repetitions"]}
    for rep in was["repetitions"]:
        key = (rep["profile_job"], rep["direction"], rep["index"])
        assert first[key]["bytes_per_second"] == rep["bytes_per_second"], key
