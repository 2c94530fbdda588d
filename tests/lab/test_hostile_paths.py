"""In the lab: a disk test's path that fio would read as something else never writes there.

fio cuts ``filename=`` at ``;`` and splits it at ``:``; a plan path holding them used to make
fio overwrite an unrelated file as root and report ok. Such a path is refused at validation,
and a path that only *resolves* on the host to one (a symlink) is refused on the host before
fio runs. Every case reads the unrelated file back over SSH afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testinfra
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "hi-disk",
    "lan": {"prefix": "198.19.80.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}},
}
VICTIM_TEXT = "an unrelated file nasplan must not touch\n"


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[Any]:
    with running_lab(LAB) as state:
        yield state


@pytest.fixture
def volume() -> Iterator[Path]:
    """A directory on the (shared) file system the lab host sees, with a victim file in it."""
    with tempfile.TemporaryDirectory(prefix="hi-disk-", dir="/var/tmp") as d:
        root = Path(d)
        (root / "victim").write_text(VICTIM_TEXT)
        yield root


def apply(tmp_path: Path, inventory: Path, disk_path: str) -> subprocess.CompletedProcess[str]:
    plan = {
        "name": "hi-disk",
        "inventory": str(inventory),
        "tests": [
            {
                "id": "disk",
                "kind": "disk",
                "host": "nas",
                "path": disk_path,
                "size": "1MiB",
                "repetitions": 1,
            }
        ],
    }
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    return subprocess.run(
        [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
        check=False,
    )


def read_back(state: Any, path: Path) -> tuple[str, str]:
    """(the victim's content, what is in its directory) as the NAS sees them over SSH."""
    host = testinfra.get_host("ssh://nas", ssh_config=str(state.ssh_config_path))
    return (
        host.check_output(f"cat {path / 'victim'}") + "\n",
        host.check_output(f"ls -A {path}"),
    )


@pytest.mark.parametrize("separator", [";", ":"])
def test_path_with_fio_separator_is_refused_and_nothing_written(
    lab: Any, volume: Path, tmp_path: Path, separator: str
) -> None:
    (volume / "dir").mkdir()
    disk_path = f"{volume}/victim{separator}{volume}/dir"
    proc = apply(tmp_path, lab.inventory_path, disk_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "tests[0].path" in proc.stderr and "no ; : quotes" in proc.stderr
    assert not (tmp_path / "run").exists()  # refused before any run directory or connection
    victim, listing = read_back(lab, volume)
    assert victim == VICTIM_TEXT
    assert listing.split() == ["dir", "victim"]


def test_path_resolving_on_the_host_to_a_separator_is_refused_there(
    lab: Any, volume: Path, tmp_path: Path
) -> None:
    """The plan's path is clean, but on the NAS it is a symlink into a directory named a:b."""
    (volume / "a:b").mkdir()
    (volume / "link").symlink_to(volume / "a:b")
    proc = apply(tmp_path, lab.inventory_path, str(volume / "link"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    run = yaml.safe_load((tmp_path / "run" / "run.json").read_text())
    (test,) = run["tests"]
    assert test["status"] == "failed"
    assert f"resolves to '{volume}/a:b/nasplan-fio-" in test["error"]
    assert "fio would not read" in test["error"]
    assert test["repetitions"] == []  # fio never ran
    victim, listing = read_back(lab, volume)
    assert victim == VICTIM_TEXT
    assert sorted(listing.split()) == ["a:b", "link", "victim"]
    host = testinfra.get_host("ssh://nas", ssh_config=str(lab.ssh_config_path))
    assert host.check_output(f"ls -A '{volume}/a:b'") == ""  # its test directory removed


def test_clean_path_still_measures(lab: Any, volume: Path, tmp_path: Path) -> None:
    proc = apply(tmp_path, lab.inventory_path, str(volume))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    victim, listing = read_back(lab, volume)
    assert victim == VICTIM_TEXT and listing.split() == ["victim"]
