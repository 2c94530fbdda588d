"""nasplan killed (SIGKILL) at a step of a transfer: every copy it was making on the NAS's
volume (an SMB file, a set of many files over SMB and NFS, an NFS cold read's file, an rsync
copy with its temp dir) or through the client's mount (``method: copy``) was recorded in that
host's lock and in run.json before it was made, so ``nasplan restore``, the next run and
``--resume`` remove it; every host and the volume (the mount) are read back afterwards.

(The lab's nfs-ganesha keeps a file it wrote open a while after it is removed: its space comes
back later, so the volume is larger than the copies need.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import FAST_TIMERS, leftovers, nasplan_process, wait_for

from nasplan.lab import LabState, services

ROOT = Path(__file__).resolve().parents[2]
VOLUME = "/srv/v1"
FAST = FAST_TIMERS
LAB = {
    "name": "killxfer",
    "lan": {"prefix": "198.18.44.0/24", "rate": "1G"},
    "hosts": {
        "kxnas": {
            "services": ["smb", "nfs"],
            "volumes": {"v1": {"rate": "400MiB/s", "size": "320MiB", "path": VOLUME}},
        },
        "kxws": {},
    },
}
SMB = {"user": "{{ hosts.kxnas.smb.user }}", "password_env": "{{ hosts.kxnas.smb.password_env }}"}
COMMON = {"kind": "transfer", "server": "kxnas", "client": "kxws", "volume": "v1"}
CASES = {
    # id: (the test, the progress line to kill after, how what it left is removed)
    "smb-file": (
        {**COMMON, "method": "smb", "size": "16MiB", "repetitions": 20, **SMB},
        "write, repetition 2/",
        "restore",
    ),
    "smb-set": (
        {**COMMON, "method": "smb", "files": {"count": 300, "size": "16KiB"}, "repetitions": 8,
         **SMB},
        "read, repetition 1/",
        "next run",
    ),
    "nfs-set": (
        {**COMMON, "method": "nfs", "files": {"count": 200, "size": "16KiB"}, "repetitions": 8},
        "write, repetition 2/",
        "resume",
    ),
    "nfs-cold": (
        {**COMMON, "method": "nfs", "size": "8MiB", "read_cache": "cold", "repetitions": 4},
        "cold-read, repetition 1/",
        "restore",
    ),
    # rsync writes .NAME.XXXXXX first: in a recorded nasplan-* temp dir beside the copy
    "rsync-file": (
        {**COMMON, "method": "rsync", "size": "16MiB", "repetitions": 10},
        "write, repetition 2/",
        "restore",
    ),
    # dd through the client's mount (a directory every lab host sees stands in for it)
    "copy-file": (
        {**{k: v for k, v in COMMON.items() if k != "volume"}, "method": "copy",
         "size": "16MiB", "repetitions": 10},
        "write, repetition 2/",
        "resume",
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def on_volume(lab: LabState) -> set[str]:
    """What nasplan left on the NAS's volume (its copies are named nasplan-...)."""
    return left_in(lab.host_path("kxnas", VOLUME))


def left_in(directory: Path) -> set[str]:
    """What nasplan or its tools left in ``directory``: its copies (nasplan-...) and a tool's
    hidden temp file of one (rsync's .nasplan-....XXXXXX)."""
    return {p.name for p in directory.iterdir() if p.name.lstrip(".").startswith("nasplan")}


def write_plan(lab: LabState, directory: Path, name: str, test: dict[str, Any]) -> Path:
    plan = {"name": name, "inventory": str(lab.inventory_path), "tests": [{"id": name, **test}]}
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def nasplan(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_transfer_killed_mid_step_leaves_nothing_once_restore_resume_or_the_next_run_ran(
    lab: LabState, tmp_path: Path, shared_dir: Path, case: str
) -> None:
    test, step, cleaner = CASES[case]
    env = {**FAST, services.SMB_PASSWORD_ENV: services.read_password(lab.host_dir("kxnas")) or ""}
    holder, where, place = "kxnas", VOLUME, lab.host_path("kxnas", VOLUME)
    if test["method"] == "copy":  # through the client's mount: the client holds the copies
        holder, where, place = "kxws", str(shared_dir), shared_dir
        test = {**test, "mounted_path": where}
    if test["method"] == "rsync":
        test = {**test, "ssh_identity": str(lab.identity_path),
                "ssh_known_hosts": str(lab.known_hosts_path)}  # fmt: skip
    before = leftovers(lab)
    assert on_volume(lab) == set() and left_in(place) == set()
    run_dir = tmp_path / "run"
    proc = nasplan_process("apply", str(write_plan(lab, tmp_path, case, test)), "--out",
                           str(run_dir), env=env)  # fmt: skip
    wait_for(proc, step)
    time.sleep(0.3)  # the copy under way
    proc.kill()
    proc.wait()

    left = left_in(place)
    assert left, "the kill came after the copies were removed: it tests nothing"
    # recorded in run.json before they were made (a tool's temp file inside one of them)
    run = json.loads((run_dir / "run.json").read_text())
    reps = run["tests"][0]["repetitions"]  # (rsync's own temp dir made and used: copies ok)
    assert reps and all(r["status"] == "ok" for r in reps), reps
    created = run["tests"][0]["created"][holder]
    assert {Path(p).name for p in created} >= left, (created, left)
    assert all(p.startswith(f"{where}/nasplan-") for p in created), created

    if cleaner == "restore":
        done = nasplan("restore", str(run_dir), env=env)
        assert done.returncode == 0, done.stderr
        assert f"host {holder}: removed the killed run's lock and " in done.stderr, done.stderr
        assert f"file {where}/nasplan-" in done.stderr, done.stderr
    elif cleaner == "next run":
        other = {**COMMON, "method": "nfs", "size": "1MiB", "repetitions": 1}
        done = nasplan("apply", str(write_plan(lab, tmp_path, "next", other)), "--out",
                       str(tmp_path / "next"), env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "took over the stale lock of run" in done.stderr, done.stderr
        assert f"file {where}/nasplan-" in done.stderr, done.stderr
    else:
        done = nasplan("apply", "--resume", str(run_dir), env=env)
        assert done.returncode == 0, done.stderr
        assert "took over the stale lock of run" in done.stderr, done.stderr
        assert f"file {where}/nasplan-" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    assert on_volume(lab) == set() and left_in(place) == set()  # the volume, the mount: as were
    deadline = time.monotonic() + 10  # a process the kill left stops with its lease
    while leftovers(lab) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(lab) - before == set()  # every host's /tmp and processes: as they were


def test_a_volume_too_small_for_the_copies_is_refused_before_anything_is_made(
    lab: LabState, tmp_path: Path
) -> None:
    env = {**FAST, services.SMB_PASSWORD_ENV: services.read_password(lab.host_dir("kxnas")) or ""}
    before = leftovers(lab)
    test = {**COMMON, "method": "smb", "files": {"count": 100, "size": "4MiB"}, **SMB}
    done = nasplan("apply", str(write_plan(lab, tmp_path, "big", test)), "--out",
                   str(tmp_path / "big"), env=env)  # fmt: skip
    assert done.returncode == 1, done.stderr
    run = json.loads((tmp_path / "big/run.json").read_text())
    error = run["tests"][0]["error"]
    assert error.startswith(f"kxnas: {VOLUME} has "), error
    assert "free, the test writes 800.0 MiB there (the copies); nothing was made" in error
    assert on_volume(lab) == set() and leftovers(lab) - before == set()


def test_a_volume_that_fills_mid_copy_is_named_full(lab: LabState, tmp_path: Path) -> None:
    """The volume fills (another writer) while nfs-cp writes a file of its own each repetition:
    the test's error names the full volume first, not only what the tool said of it."""
    env = {**FAST}
    filler = lab.host_path("kxnas", f"{VOLUME}/filler")
    test = {**COMMON, "method": "nfs", "size": "4MiB", "direction": "write", "repetitions": 12}
    proc = nasplan_process("apply", str(write_plan(lab, tmp_path, "fills", test)), "--out",
                           str(tmp_path / "fills"), env=env)  # fmt: skip
    try:
        wait_for(proc, "write, repetition 2/")
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)
        proc.wait(timeout=120)
        run = json.loads((tmp_path / "fills/run.json").read_text())
        error = run["tests"][0]["error"]
        assert error.startswith(f"kxnas: {VOLUME} is full ("), error
        assert " B free)" in error or " KiB free)" in error, error
    finally:
        filler.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert on_volume(lab) == set()


def test_an_smb_set_onto_a_volume_that_fills_says_no_word_of_copies_never_made(
    lab: LabState, tmp_path: Path
) -> None:
    """Many files over SMB while the volume fills (another writer): the test fails naming the
    full volume; its clean-up removes what was made and warns of nothing it never made (the
    set's one-file twin a failed write never put)."""
    env = {**FAST, services.SMB_PASSWORD_ENV: services.read_password(lab.host_dir("kxnas")) or ""}
    filler = lab.host_path("kxnas", f"{VOLUME}/filler")
    test = {**COMMON, "method": "smb", "files": {"count": 300, "size": "64KiB"},
            "direction": "write", "repetitions": 2, **SMB}  # fmt: skip
    proc = nasplan_process("apply", str(write_plan(lab, tmp_path, "setfills", test)), "--out",
                           str(tmp_path / "setfills"), env=env)  # fmt: skip
    try:
        wait_for(proc, "write, repetition 1/")  # checked, recorded: the volume fills at once
        with filler.open("wb") as taken:  # to the last block, root's reserve too (smbd's)
            end = 0
            for chunk in (16 * 2**20, 2**20, 64 * 2**10):
                while True:
                    try:
                        os.posix_fallocate(taken.fileno(), end, chunk)
                    except OSError:
                        break
                    end += chunk
        proc.wait(timeout=120)
        record = json.loads((tmp_path / "setfills/run.json").read_text())["tests"][0]
        error = record["error"]
        assert record["status"] == "failed", record["repetitions"]
        assert error.startswith(f"kxnas: {VOLUME} is full ("), error
        assert "cleanup" not in error and "NASPLAN_" not in error, error
        assert "write 1: smbclient: NT_STATUS_DISK_FULL " in error, error
        assert not [w for w in record.get("warnings") or [] if "cleanup" in w], record["warnings"]
    finally:
        filler.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert on_volume(lab) == set()
