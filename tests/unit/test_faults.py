"""Fault handling that needs no lab: stalls, step timeouts, the host lock's scripts, full disks."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

import pytest

from nasplan.analysis import stall_reason
from nasplan.errors import InputError, RunDirError
from nasplan.hosts import lock as hostlock
from nasplan.output import redactor_of, require_free_space, write_text
from nasplan.remote.timeouts import from_environ


def rows(rates: list[float], width_s: float = 1.0) -> list[dict[str, float]]:
    return [
        {"start_s": i * width_s, "end_s": (i + 1) * width_s, "bits_per_second": rate}
        for i, rate in enumerate(rates)
    ]


def test_intervals_at_zero_are_a_stall_with_when() -> None:
    reason = stall_reason(rows([9.4e8, 9.4e8, 0.0, 0.0, 0.0, 9.3e8]))
    assert reason is not None
    assert reason.startswith("stalled: 3 of 6 intervals at or near 0 bit/s, from 2.0 s to 5.0 s")


def test_a_steady_or_merely_slow_run_is_no_stall() -> None:
    assert stall_reason(rows([9.4e8, 5.0e8, 9.1e8])) is None
    assert stall_reason(rows([1.0e6, 1.1e6])) is None
    assert stall_reason([]) is None


def test_a_final_sliver_of_an_interval_is_not_a_stall() -> None:
    sliver = {"start_s": 3.0, "end_s": 3.0004, "bits_per_second": 0.0}
    assert stall_reason([*rows([9.4e8, 9.4e8, 9.4e8]), sliver]) is None


def test_timeouts_come_from_the_environment_and_bad_ones_are_refused() -> None:
    assert from_environ({}).channel_s == 10
    assert from_environ({"NASPLAN_CHANNEL_S": "2.5"}).channel_s == 2.5
    with pytest.raises(InputError, match="NASPLAN_LEASE_S='-1': expected a number"):
        from_environ({"NASPLAN_LEASE_S": "-1"})


def sh(script: str, _tmp: Path) -> subprocess.CompletedProcess[str]:
    # The scripts use /tmp/nasplan-<hostname>.lock: run them under a hostname of their own.
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)


def test_lock_is_refused_while_its_lease_runs_and_taken_over_after(tmp_path: Path) -> None:
    lock = Path(f"/tmp/nasplan-{os.uname().nodename}.lock")
    if lock.exists():
        pytest.skip(f"{lock} is in use on this machine")
    try:
        first = sh(hostlock.acquire_script("run-a", 30), tmp_path)
        assert first.returncode == 0 and "@@nasplan:locked@@" in first.stdout, first.stderr
        second = sh(hostlock.acquire_script("run-b", 30), tmp_path)
        assert second.returncode == hostlock.EXIT_BUSY
        holder = hostlock.parse_holder(second.stdout)
        assert holder.fields["run_id"] == "run-a" and holder.age_s is not None
        assert holder.lease_left_s is not None and 25 <= holder.lease_left_s <= 30
        # run-a's lease runs out: run-b takes over and removes what run-a registered.
        leftover = Path("/tmp/nasplan-ft-unit-leftover")
        leftover.write_text("x")
        fio_dir = tmp_path / "volume" / "nasplan-fio-0123abcd"
        fio_dir.mkdir(parents=True)
        (lock / "files").write_text(f"{leftover}\n/etc/passwd\n{fio_dir}\n{tmp_path}\n")
        (lock / "lease").write_text("0\n")
        third = sh(hostlock.acquire_script("run-b", 30), tmp_path)
        assert third.returncode == 0, third.stdout
        assert f"file {leftover}" in third.stdout and not leftover.exists()
        assert f"file {fio_dir}" in third.stdout and not fio_dir.exists()
        assert Path("/etc/passwd").exists() and tmp_path.exists()  # not nasplan's: kept
        assert "run_id=run-b" in (lock / "owner").read_text()
        assert sh(hostlock.renew_script("run-a", 30), tmp_path).stdout.strip() == "lost"
        assert sh(hostlock.renew_script("run-b", 30), tmp_path).stdout.strip() == "renewed"
        sh(hostlock.release_script("run-b"), tmp_path)
        assert not lock.exists()
    finally:
        subprocess.run(["rm", "-rf", str(lock)], check=False)


def test_a_full_disk_is_one_clear_error_and_the_old_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    write_text(target, "old\n", redactor_of([]))

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(RunDirError, match=r"run.json: cannot write: the disk is full"):
        write_text(target, "new\n", redactor_of([]))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_too_little_free_space_is_refused_before_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"MB free, a run needs at least .* --out"):
        require_free_space(tmp_path / "runs", min_bytes=10**18)
    require_free_space(tmp_path / "runs", min_bytes=1)


def _uptime_s() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]))


def _arm(tmp_path: Path, lease: Path) -> tuple[Path, subprocess.Popen[bytes]]:
    from nasplan.network import scripts

    directory = tmp_path / "revert"
    directory.mkdir()
    (directory / "restore.sh").write_text(f"touch {tmp_path / 'restored'}\n")
    argv = ["setsid", "sh", "-c", scripts._REVERT_DAEMON, "nasplan-revert", str(directory)]
    daemon = subprocess.Popen([*argv, "1", str(lease)])
    for _ in range(50):
        if (directory / "pid").exists():
            break
        time.sleep(0.1)
    confirm = subprocess.run(
        ["sh", "-c", scripts.confirm_script(str(directory))], capture_output=True, text=True
    )
    assert confirm.stdout.strip() == "confirmed"
    return directory, daemon


def test_a_confirmed_revert_stays_armed_until_the_lease_runs_out(tmp_path: Path) -> None:
    lease = tmp_path / "lease"
    # The host clock counts whole seconds (uptime cut): a lease 4 s ahead still runs 3 s from
    # now whatever the fraction, past the 2 s below (3 s ahead failed when the cut was ~0.9 s).
    lease.write_text(f"{_uptime_s() + 4}\n")
    directory, daemon = _arm(tmp_path, lease)
    try:
        time.sleep(2)  # past the 1 s confirm timeout: confirmed, the lease still runs
        assert not (tmp_path / "restored").exists()
        daemon.wait(timeout=6)  # the lease ran out: the host puts the snapshot back
        assert (tmp_path / "restored").exists() and (directory / "fired").exists()
    finally:
        daemon.kill()


def test_a_confirmed_revert_without_a_lease_is_disarmed(tmp_path: Path) -> None:
    directory, daemon = _arm(tmp_path, tmp_path / "no-lease")
    try:
        daemon.wait(timeout=4)
        assert not (tmp_path / "restored").exists() and not (directory / "fired").exists()
    finally:
        daemon.kill()
