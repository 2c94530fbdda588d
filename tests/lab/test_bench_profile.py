"""bench/profile_apply.py runs (`make bench` is not part of `make test`, so a layout change could
break it unseen): one round on its own small lab, every phase of the run named in its table, and
nothing of its lab left behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from nasplan.lab import netns

ROOT = Path(__file__).resolve().parents[2]


def test_the_profile_of_one_apply_names_each_phase_and_leaves_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "profile_apply.py"), "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = dict(
        (match[1], float(match[2]))
        for match in re.finditer(r"^\| (.+?) \| ([0-9.]+) \|$", done.stdout, re.MULTILINE)
    )
    for phase in (
        "wall: connect + facts + lock, all hosts",
        "wall: tool checks",
        "wall: tests",
        "wall: teardown, run.json + report at the end",
        "facts round trip (with the lock's take)",
        "iperf3 client",
        "run.json",
        "report.md",
    ):
        assert phase in rows, (phase, done.stdout)
    wall = next(v for k, v in rows.items() if k.startswith("**apply wall time**"))
    # the parts add up to no more than the whole: a phase timed twice would show here
    assert rows["wall: tests"] < wall
    assert rows["wall: tests"] >= 1.0  # one 1 s iperf3 test
    # its lab (named bp) is gone; other labs may come and go beside it (make test: -n 2)
    assert [n for n in netns.list_namespaces() if n.startswith("npl-bp-")] == []
