"""The revert timer on a host without setsid(1) (macOS, FreeBSD), run for real: the generated
arm, confirm and restore scripts under dash and BusyBox sh with a PATH that has no setsid, so the
timer is detached with nohup and is no process-group leader (the disarm's ``kill -TERM -PGID``
then finds no group; the timer must still end by itself and never restore twice). No namespace
or lab is needed; it sits with the lab tests for its ~20 s of real timers."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nasplan.network import scripts
from nasplan.sections import split_sections

TIMEOUT_S = 2  # the host clock counts whole seconds: the timer fires 1 to 2 s after arming
COREUTILS = ("rm", "mkdir", "cat", "mv", "sleep", "date", "touch", "tr")


@dataclass
class Host:
    """A PATH of symlinks without setsid, the shell that runs the scripts, the host's lock dir."""

    shell: str
    bin_dir: Path
    lock_dir: Path
    work: Path

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(self.bin_dir)}
        return subprocess.run(
            [self.shell, "-c", script], capture_output=True, text=True, env=env, timeout=30
        )

    @property
    def revert_dir(self) -> str:
        return str(self.work / "revert")

    @property
    def restores(self) -> list[str]:
        log = self.work / "restores.log"
        return log.read_text().splitlines() if log.exists() else []

    def arm(self, timeout_s: int) -> int:
        """Arm a revert whose apply touches ``applied`` and whose restore logs a line."""
        script = scripts.arm_and_apply_script(
            self.revert_dir,
            timeout_s,
            [["sh", "-c", 'echo restored >> "$1"', "restore", str(self.work / "restores.log")]],
            [["touch", str(self.work / "applied")]],
            [],
            any_detacher=True,
        )
        done = self.run(script)
        assert done.returncode == 0, done.stderr
        sections = split_sections(done.stdout)
        assert sections["detached-with"] == "nohup"
        assert (self.work / "applied").exists() and self.restores == []
        return int(sections["armed"])


def _link(bin_dir: Path, name: str, target: str | None) -> None:
    if target is None:
        pytest.skip(f"{name} is not installed")
    (bin_dir / name).symlink_to(target)


@pytest.fixture(params=["dash", "busybox"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if request.param == "busybox":
        busybox = shutil.which("busybox")
        for name in ("sh", *COREUTILS):
            _link(bin_dir, name, busybox)
    else:
        _link(bin_dir, "sh", shutil.which("dash"))
        for name in COREUTILS:
            _link(bin_dir, name, shutil.which(name))
    _link(bin_dir, "nohup", shutil.which("nohup"))  # BusyBox has no nohup applet
    # `uname -n` names the host's lock dir (/tmp/nasplan-NODE.lock): one of this test's own.
    node = f"bsdtimer-{os.getpid()}-{request.param}"
    uname = bin_dir / "uname"
    real_uname = shutil.which("uname")
    uname.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec {real_uname} "$@"\n')
    uname.chmod(0o755)
    assert shutil.which("setsid", path=str(bin_dir)) is None
    work = tmp_path / "work"
    work.mkdir()
    state = Host(str(bin_dir / "sh"), bin_dir, Path(f"/tmp/nasplan-{node}.lock"), work)
    try:
        yield state
    finally:
        shutil.rmtree(state.lock_dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"nasplan-revert" in cmdline and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@contextlib.contextmanager
def timer(host: Host, timeout_s: int = TIMEOUT_S) -> Iterator[int]:
    """Arm; yield the timer's PID; afterwards it must be gone (else it is stopped, and fails)."""
    pid = host.arm(timeout_s)
    try:
        assert _alive(pid)
        assert os.getpgid(pid) != pid  # nohup: in the script's group, not a leader of its own
        yield pid
        assert _until(lambda: not _alive(pid), 3), "the revert timer was left running"
    finally:
        if _alive(pid):  # started by this test: stop it rather than leave it behind
            os.kill(pid, signal.SIGTERM)


def _uptime_s() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]))


def test_unconfirmed_the_timer_restores_once_after_its_timeout(host: Host) -> None:
    started = time.monotonic()
    with timer(host):
        assert _until(lambda: (Path(host.revert_dir) / "done").exists(), 5)
    assert host.restores == ["restored"]
    assert time.monotonic() - started >= TIMEOUT_S - 1
    assert (Path(host.revert_dir) / "fired").exists()


def test_confirmed_it_waits_for_the_lease_then_restores(host: Host) -> None:
    host.lock_dir.mkdir()
    # The lease outlives the confirm timeout by seconds: room for a slow machine.
    (host.lock_dir / "lease").write_text(f"{_uptime_s() + TIMEOUT_S + 5}\n")
    with timer(host):
        confirm = host.run(scripts.confirm_script(host.revert_dir))
        assert confirm.stdout.strip() == "confirmed"
        time.sleep(TIMEOUT_S + 1)  # past the confirm timeout: the lease still runs
        assert host.restores == []
        assert _until(lambda: (Path(host.revert_dir) / "done").exists(), 10)
    assert host.restores == ["restored"]


def test_disarmed_by_the_restore_it_ends_by_itself_and_never_restores_again(host: Host) -> None:
    # A 60 s timeout: the timer must end within a second of the disarm on its own (nohup: the
    # disarm's kill finds no process group), long before it could fire.
    with timer(host, timeout_s=60):
        restore = host.run(
            scripts.restore_script(
                host.revert_dir,
                [["sh", "-c", 'echo restored >> "$1"', "restore", str(host.work / "restores.log")]],
                [],
                force=False,
            )
        )
        assert split_sections(restore.stdout)["outcome"] == "restored", restore.stderr
    assert host.restores == ["restored"]
    assert not Path(host.revert_dir).exists()
