"""A stale lock's cleanup kills only the PIDs whose command line still holds their token: read
from /proc where there is one, else from ``ps -o args=`` (macOS and FreeBSD have no /proc).

Live: real processes, real ``ps`` (procps here), the cleanup run by dash and by BusyBox sh; the
ps path is taken by pointing the script's ``nasplan_proc`` at a directory that is not /proc.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nasplan.hosts.lock import _CLEANUP

SHELLS = {"dash": ["dash"], "busybox": ["busybox", "sh"]}
# With BusyBox sh the text tools are BusyBox's too (its ps has no -p: procps' ps stays).
BUSYBOX_TOOLS = ("tr", "grep", "cat", "rm")
SLEEP = "import time; time.sleep(30)"


def _shell_env(tmp_path: Path, shell: str) -> dict[str, str]:
    if shutil.which(SHELLS[shell][0]) is None:
        pytest.skip(f"{shell} not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if shell == "busybox":
        busybox = shutil.which("busybox")
        assert busybox is not None
        for tool in BUSYBOX_TOOLS:
            link = bin_dir / tool
            if not link.exists():
                link.symlink_to(busybox)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two sleepers: one whose command line holds a long token, one that does not."""
    token = f"{tmp_path}/nasplan-" + "x" * 300 + "-iperf3.pid"  # longer than any $COLUMNS
    holder = subprocess.Popen([sys.executable, "-c", SLEEP, token])
    other = subprocess.Popen(["sleep", "30"])
    started = [holder, other]
    try:
        yield started
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()


def _cleanup(tmp_path: Path, shell: str, pids_text: str, proc_dir: str) -> str:
    lock = tmp_path / "lock"
    lock.mkdir(exist_ok=True)
    (lock / "pids").write_text(pids_text)
    script = _CLEANUP + f"nasplan_proc={proc_dir}\n" + f"nasplan_cleanup {lock}\n"
    done = subprocess.run(
        [*SHELLS[shell], "-c", script],
        capture_output=True,
        text=True,
        env={**_shell_env(tmp_path, shell), "COLUMNS": "40"},
        timeout=20,
        check=True,
    )
    return done.stdout


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 5
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.poll() is not None


@pytest.mark.parametrize("shell", sorted(SHELLS))
@pytest.mark.parametrize("proc_dir", ["/proc", "/nonexistent-proc"], ids=["proc", "ps"])
def test_only_the_pid_whose_command_line_holds_the_token_is_killed(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]], shell: str, proc_dir: str
) -> None:
    holder, other = processes
    token = holder.args[-1]  # type: ignore[index]
    # `other` is registered with the same token: a reused PID that is someone else's now.
    said = _cleanup(tmp_path, shell, f"{holder.pid} {token}\n{other.pid} {token}\n", proc_dir)
    assert said.splitlines() == [f"process {holder.pid} ({token})"]
    assert _gone(holder)
    assert other.poll() is None


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_pid_that_is_gone_or_an_empty_token_kills_nothing(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]], shell: str
) -> None:
    holder, other = processes
    gone = subprocess.Popen(["true"])
    gone.wait()
    said = _cleanup(tmp_path, shell, f"{gone.pid} nasplan\n{other.pid}\n- x\n", "/nonexistent")
    assert said == ""
    assert holder.poll() is None and other.poll() is None


def test_ps_prints_the_whole_command_line_whatever_columns_says(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    holder = processes[0]
    script = _CLEANUP + f"nasplan_proc=/nonexistent\nnasplan_cmdline {holder.pid}\n"
    env = {**os.environ, "COLUMNS": "40"}
    done = subprocess.run(["dash", "-c", script], capture_output=True, text=True, env=env,
                          check=True)  # fmt: skip
    assert done.stdout.split() == [sys.executable, "-c", *SLEEP.split(), holder.args[-1]]  # type: ignore[index]
