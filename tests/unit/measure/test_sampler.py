"""The resource sampler: its parser on real output, and the loop run on this machine."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nasplan.measure import sampler
from nasplan.runner import LocalRunner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sampler"


def test_idle_host() -> None:
    parsed = sampler.parse((FIXTURES / "idle-dash.txt").read_text())
    assert parsed["samples"] == 5
    assert parsed["cpu_busy_percent_median"] == pytest.approx(0.495, abs=0.01)
    assert parsed["cpu_busy_percent_max"] == pytest.approx(12.0)
    assert parsed["mem_available_bytes_min"] == 24296960 * 1024
    assert parsed["duration_s"] == pytest.approx(2.01)


def test_both_cores_busy_is_100_percent() -> None:
    parsed = sampler.parse((FIXTURES / "busy-2-cores-dash.txt").read_text())
    assert parsed["cpu_busy_percent_median"] == 100.0


def test_nothing_sampled() -> None:
    parsed = sampler.parse("")
    assert parsed["samples"] == 0
    assert parsed["cpu_busy_percent_median"] is None


def test_loop_samples_and_leaves_nothing_behind() -> None:
    runner = LocalRunner()
    token = f"unit-{os.getpid()}"
    pid = sampler.start(runner, token, max_s=30)
    assert pid is not None
    time.sleep(1.2)
    result = sampler.stop(runner, token, pid)
    assert result is not None and result["samples"] >= 2
    out, flag = sampler.paths(token)
    assert not Path(out).exists() and not Path(flag).exists()
    status = Path(f"/proc/{pid}/status")
    # gone, or a zombie waiting for a lazy init to reap it: either way no longer running
    assert not status.exists() or "\nState:\tZ" in status.read_text()
