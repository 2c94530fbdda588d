"""How close ``nasplan apply --list-tests``'s estimate comes to the real wall time of a run, on
plans shaped like the write-ups (needs root: it uses the lab).

The lab is plans/examples/lab-ts253d-volumes.yaml (a QNAP-style NAS with an HDD and an SSD
volume at disk-like rates, and a PC, over a 1G LAN, a 2.5G and a 10G cable) under its own name
and addresses. Each plan runs as ``nasplan apply`` in a new
process; its wall time (the process, start to end) is set against the estimate
``--list-tests`` printed for it:

- ``links``: iperf3 each way on each link (6 cells, 2 s, 3 repetitions, interleaved);
- ``smb``: SMB write and read on each link with two sizes (6 cells, 3 repetitions);
- ``disk``: fio write and read on the NAS's HDD volume (shaped to 180 MiB/s, as a disk is;
  the machine's own disk would answer from its page cache) with two sizes (2 cells, 3
  repetitions);
- ``write-up``: plans/examples/ts253d-matrix.yaml as it is (iperf3 and SMB, the whole table),
  with 3 repetitions, and a disk test beside it;
- ``volumes``: plans/examples/ts253d-volumes.yaml as it is (fio on each volume, iperf3 on each
  link, SMB of 384 MiB to the HDD and the SSD volume over each link, a warm and a cold read, x
  3): its copies onto the HDD move at the volume's 180 MiB/s, not the link's rate.

The goal: every estimate within ±15 % of its run's wall time.

Usage: .venv/bin/python bench/estimate_accuracy.py [--rounds 1] [--json FILE] [--plans NAME...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "plans" / "examples"
GOAL = 0.15
REPETITIONS = 3


def lab_spec() -> dict[str, Any]:
    """The TS-253D lab with both pools under its own name and addresses (a `make demo` lab may
    be up)."""
    spec: dict[str, Any] = yaml.safe_load((EXAMPLES / "lab-ts253d-volumes.yaml").read_text())
    spec["name"] = "est"
    spec["lan"]["prefix"] = "198.19.166.0/24"
    for number, link in enumerate(spec["links"]):
        link["a"]["address"] = f"198.19.167.{4 * number + 1}/30"
        link["b"]["address"] = f"198.19.167.{4 * number + 2}/30"
    return spec


def plans(state: LabState) -> dict[str, dict[str, Any]]:
    """Each plan by name, against the lab's inventory."""
    whole: dict[str, Any] = yaml.safe_load((EXAMPLES / "ts253d-matrix.yaml").read_text())
    whole["inventory"] = str(state.inventory_path)
    whole["vars"]["repetitions"] = REPETITIONS
    net = [t for t in whole["tests"] if t["kind"] == "iperf3"]
    smb = [t for t in whole["tests"] if t["kind"] == "transfer"]
    disk = {
        "id": "disk",
        "kind": "disk",
        "host": "nas",
        "volume": "hdd",
        "direction": "both",
        "matrix": {"size": ["64MiB", "256MiB"]},
        "repetitions": REPETITIONS,
    }
    volumes: dict[str, Any] = yaml.safe_load((EXAMPLES / "ts253d-volumes.yaml").read_text())
    volumes["inventory"] = str(state.inventory_path)
    base = {k: v for k, v in whole.items() if k not in ("tests", "table")}
    alone = {k: v for k, v in base.items() if k != "matrix"}
    return {
        "links": {**base, "name": "est-links", "tests": net},
        "smb": {**base, "name": "est-smb", "tests": smb},
        "disk": {**alone, "name": "est-disk", "tests": [disk]},
        "write-up": {**whole, "name": "est-write-up", "tests": [*whole["tests"], disk]},
        "volumes": {**volumes, "name": "est-volumes"},
    }


def estimate_s(plan_file: Path) -> tuple[float, list[str]]:
    """What ``apply --list-tests --format json`` estimates for the plan."""
    done = subprocess.run(
        [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--list-tests",
         "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    listed = json.loads(done.stdout)
    return float(listed["estimate"]["seconds"]), list(listed["estimate"]["assumptions"])


def run_s(plan_file: Path, out: Path, env: dict[str, str]) -> tuple[float, int]:
    """The wall time of ``nasplan apply`` of the plan, a new process, and its exit code (a run
    that failed early is no fair wall time: the table says so)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(out), "-q"],
        check=False, env={**os.environ, **env}, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep-runs", type=Path, help="copy the run directories here")
    parser.add_argument("--plans", nargs="+", help="only these plans (links, smb, ...)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nasplan-estimate-") as tmp:
        work = Path(tmp)
        lab_file = work / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec(), sort_keys=False))
        state = lab.up(lab_file, work / "state")
        try:
            password = (state.state_dir / "hosts" / "nas" / "smb" / "password").read_text()
            env = {"NASPLAN_LAB_SMB_PASSWORD": password.strip()}
            for name, plan in plans(state).items():
                if args.plans and name not in args.plans:
                    continue
                plan_file = work / f"{name}.yaml"
                plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
                estimated, assumed = estimate_s(plan_file)
                walls = [run_s(plan_file, work / f"{name}-{r}", env) for r in range(args.rounds)]
                for wall, code in walls:
                    rows.append({"plan": name, "estimate_s": estimated, "wall_s": wall,
                                 "exit": code, "assumptions": assumed})  # fmt: skip
            if args.keep_runs:
                for run_dir in work.glob("*-[0-9]*"):
                    subprocess.run(["cp", "-r", str(run_dir), str(args.keep_runs)], check=True)
        finally:
            lab.down(lab_file, work / "state")
    print("| plan | estimate s | wall s | estimate / wall | within ±15 % | exit |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ratio = row["estimate_s"] / row["wall_s"]
        within = "yes" if abs(ratio - 1) <= GOAL else "NO"
        print(f"| {row['plan']} | {row['estimate_s']:.1f} | {row['wall_s']:.1f} | "
              f"{ratio:.2f} | {within} | {row['exit']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
