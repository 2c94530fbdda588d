"""In the lab: the CrystalDiskMark grid with fio on a NAS volume whose disk is shaped to
50 MiB/s: every job read and written within the volume's shaping, latency growing with the
queue depth, and the grid in the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "l45-cdm",
    "lan": {"prefix": "198.18.218.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"personality": "debian",
                "volumes": {"hdd": {"rate": "50MiB/s", "size": "256MiB"}}},
        "ws": {"personality": "debian"},
    },
}  # fmt: skip
SHAPED = 50 * 2**20


@pytest.fixture(scope="module")
def ran(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("cdm")
    with running_lab(LAB) as state:
        plan = {
            "name": "l45-cdm",
            "inventory": str(state.inventory_path),
            "tests": [
                {"id": "cdm", "kind": "disk-profile", "host": "nas", "volume": "hdd",
                 "size": "32MiB", "duration_s": 1, "repetitions": 1},
            ],
        }  # fmt: skip
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(work / "run")],
            capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
        )  # fmt: skip
    run = load_run(work / "run")  # validated against the run schema
    report = (work / "run" / "report.md").read_text()
    return {"proc": proc, "test": run["tests"][0], "report": report}


def test_the_grid_runs_on_the_volume_within_its_shaping(ran: dict[str, Any]) -> None:
    test = ran["test"]
    assert test["status"] == "ok", (test["error"], ran["proc"].stderr[-2000:])
    assert test["params"]["path"].startswith("/srv/hdd")
    cells = {row["job"]: row["cells"] for row in test["grid"]}
    assert list(cells) == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    for mode in ("read", "write"):
        for job, cell in cells.items():
            # the lab's disk is a rate (nbdkit's), not a head that seeks: every job meets it
            assert cell[mode]["bytes_per_second"] < 1.2 * SHAPED, (job, mode, cell)
            assert cell[mode]["iops"] > 0
            assert cell[mode]["latency_p99_us"] >= cell[mode]["latency_p50_us"] > 0
        seq8, seq1 = cells["SEQ1M Q8T1"][mode], cells["SEQ1M Q1T1"][mode]
        assert seq1["bytes_per_second"] > 0.3 * SHAPED
        # at one rate, 8 requests in flight wait about 8 times as long as one (Little's law)
        assert 4 < seq8["latency_p50_us"] / seq1["latency_p50_us"] < 12, (seq8, seq1)
        assert (
            cells["RND4K Q32T1"][mode]["latency_p50_us"]
            > 8 * (cells["RND4K Q1T1"][mode]["latency_p50_us"])
        )


def test_the_report_prints_the_grid_as_the_benchmarks_do(ran: dict[str, Any]) -> None:
    report = ran["report"]
    assert "## Disk profiles" in report
    assert "| Test | Read (MB/s) | Write (MB/s) |" in report
    for job in ("SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"):
        assert f"| {job} | " in report
    assert "| Test | Mode | IOPS | Latency p50 | p99 | p99.9 | n |" in report
