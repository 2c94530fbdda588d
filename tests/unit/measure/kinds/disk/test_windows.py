"""A Windows disk test's directory and diskspd repetitions (kinds/disk/windows.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.disk import windows as disk_windows
from nasplan.remote import shell

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "diskspd"


def test_a_windows_disk_test_runs_diskspd_in_its_own_directory_and_removes_it(
    fake_runner: Callable[[str], Any],
) -> None:
    result = (FIXTURES / "DiskSpdExample-ReadWrite.txt").read_text()
    host = fake_runner("win11")
    host.use_shell(shell.windows(None))
    host.expect("New-Item").expect("-w100", result).expect("-w0", result).expect("Remove-Item")
    saved: dict[str, str] = {}

    def save(name: str, raw: str) -> str:
        saved[name] = raw
        return f"raw/d/{name}.txt"

    reps, errors, warnings = disk_windows.run_repetitions(
        host, "C:\\diskspd.exe", "D:\\bench", [("write", 1), ("read", 1)], 2**30, 5, save
    )
    assert (errors, warnings) == ([], [])
    assert [r["direction"] for r in reps] == ["write", "read"]
    assert reps[0]["bytes"] == 43524096 and reps[1]["bytes"] == 102645760
    assert reps[0]["bytes_per_second"] == pytest.approx(43524096 / 30.01)
    make, write, _read, remove = host.texts()
    workdir = write.split()[-1].rsplit("\\", 1)[0]
    assert workdir.startswith("D:\\bench\\nasplan-diskspd-")
    assert f"'{workdir}'" in make and f"'{workdir}'" in remove
    assert set(saved) == {"write-1", "read-1"}
