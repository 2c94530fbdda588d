"""A lock's cleanup never removes through a mount: what a run mounted (listed in the lock's
``mounts`` before it was mounted) is unmounted first, and a listed directory that still has a
mount at or under it is kept, not ``rm -rf``'d (through a live share that would delete the
NAS's own files).

Live: the cleanup run by dash and by BusyBox sh (with BusyBox's awk, sed and rm), against a
mount table written here (``nasplan_mountinfo``) or ``mount``'s output (macOS, FreeBSD); and,
as root, against real bind mounts in a private mount namespace (``unshare -m``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nasplan.hosts.lock import _CLEANUP, PRELUDE

SHELLS = {"dash": ["dash"], "busybox": ["busybox", "sh"]}
BUSYBOX_TOOLS = ("awk", "sed", "rm", "tr", "grep", "cat")


def _env(tmp_path: Path, shell: str, fake_bin: dict[str, str] | None = None) -> dict[str, str]:
    if shutil.which(SHELLS[shell][0]) is None:
        pytest.skip(f"{shell} not installed")
    bin_dir = tmp_path / f"bin-{shell}"
    bin_dir.mkdir(exist_ok=True)
    if shell == "busybox":
        busybox = shutil.which("busybox")
        assert busybox is not None
        for tool in BUSYBOX_TOOLS:
            (bin_dir / tool).unlink(missing_ok=True)
            (bin_dir / tool).symlink_to(busybox)
    for name, text in (fake_bin or {}).items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _cleanup(
    lock: Path, shell: str, env: dict[str, str], setup: str = "", argv: tuple[str, ...] = ()
) -> str:
    script = _CLEANUP + setup + f"nasplan_cleanup '{lock}'\n"
    done = subprocess.run(
        [*argv, *SHELLS[shell], "-c", script],
        capture_output=True, text=True, env=env, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout


def _mountinfo_line(mount_point: str) -> str:
    escaped = mount_point.replace("\\", "\\134").replace(" ", "\\040")
    return f"36 35 0:42 / {escaped} rw,relatime shared:1 - fuse.smbnetfs smbnetfs rw\n"


def _lock(tmp_path: Path, files: list[Path], mounts: tuple[str, ...] | list[str] = ()) -> Path:
    lock = tmp_path / "lock"
    lock.mkdir(exist_ok=True)
    (lock / "files").write_text("".join(f"{f}\n" for f in files))
    (lock / "mounts").write_text("".join(f"{m}\n" for m in mounts))
    return lock


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_listed_directory_with_a_mount_inside_is_kept_the_others_removed(
    tmp_path: Path, shell: str
) -> None:
    work = tmp_path / "nasplan-fio-ab12 with space"
    share = work / "nasplan-share"
    share.mkdir(parents=True)
    (share / "the NAS's file").write_text("precious")
    plain = tmp_path / "nasplan-tmp.x1"
    plain.mkdir()
    (plain / "f").write_text("local")
    table = tmp_path / "mountinfo"
    table.write_text(_mountinfo_line("/proc") + _mountinfo_line(str(share)))
    lock = _lock(tmp_path, [work, plain])
    said = _cleanup(lock, shell, _env(tmp_path, shell), f"nasplan_mountinfo='{table}'\n")
    assert said.splitlines() == [f"kept {work} (a mount is in it)", f"file {plain}"]
    assert (share / "the NAS's file").read_text() == "precious"
    assert not plain.exists()


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_mount_beside_the_directory_with_a_longer_name_does_not_keep_it(
    tmp_path: Path, shell: str
) -> None:
    work = tmp_path / "nasplan-fio-ab12"
    work.mkdir()
    table = tmp_path / "mountinfo"
    table.write_text(_mountinfo_line(f"{work}-other") + _mountinfo_line(str(tmp_path)))
    said = _cleanup(
        _lock(tmp_path, [work]), shell, _env(tmp_path, shell), f"nasplan_mountinfo='{table}'\n"
    )
    assert said.splitlines() == [f"file {work}"]
    assert not work.exists()


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_without_proc_the_mount_table_is_read_from_mount(tmp_path: Path, shell: str) -> None:
    work = tmp_path / "nasplan-fio-cd34"
    (work / "mnt").mkdir(parents=True)
    plain = tmp_path / "nasplan-fio-ef56"
    plain.mkdir()
    # macOS's form: no "type", options in parentheses
    fake_mount = f"#!/bin/sh\necho '//nasplan@nas/data on {work}/mnt (smbfs, nodev, nosuid)'\n"
    env = _env(tmp_path, shell, {"mount": fake_mount})
    said = _cleanup(_lock(tmp_path, [work, plain]), shell, env, "nasplan_mountinfo=/nonexistent\n")
    assert said.splitlines() == [f"kept {work} (a mount is in it)", f"file {plain}"]
    assert work.exists() and not plain.exists()


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_an_iscsi_login_is_logged_out_and_only_listed_mount_points_are_unmounted(
    tmp_path: Path, shell: str
) -> None:
    calls = tmp_path / "calls"
    recorder = f'#!/bin/sh\necho "$(basename "$0") $*" >> \'{calls}\'\n'
    env = _env(tmp_path, shell, {"iscsiadm": recorder, "umount": recorder, "sudo": "exit 1\n"})
    table = tmp_path / "mountinfo"
    table.write_text(_mountinfo_line("/etc"))
    mounts = [
        "iscsi iqn.2005-10.org.freenas.ctl:lab 198.18.7.1:3260",
        "kernel /etc",  # not a nasplan-* path: never unmounted
        "kernel relative/nasplan-mnt",
        f"kernel {tmp_path}/nasplan-mnt-gone",  # not mounted (any more): nothing to do
    ]
    said = _cleanup(_lock(tmp_path, [], mounts), shell, env, f"nasplan_mountinfo='{table}'\n")
    assert said.splitlines() == ["iscsi iqn.2005-10.org.freenas.ctl:lab (198.18.7.1:3260)"]
    assert calls.read_text().splitlines() == [
        "iscsiadm -m node -T iqn.2005-10.org.freenas.ctl:lab -p 198.18.7.1:3260 --logout"
    ]


def test_register_mount_writes_the_line_before_anything_is_mounted(tmp_path: Path) -> None:
    lock = tmp_path / "nasplan-h.lock"
    lock.mkdir()
    script = (
        PRELUDE
        + f"nasplan_dir='{lock}'\n"
        + "nasplan_register_mount fuse /tmp/nasplan-mnt-1 && "
        + "nasplan_register_mount iscsi iqn.x:y 198.18.7.1:3260 && echo ok\n"
    )
    done = subprocess.run(["dash", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "ok\n"
    lines = (lock / "mounts").read_text().splitlines()
    assert lines == ["fuse /tmp/nasplan-mnt-1", "iscsi iqn.x:y 198.18.7.1:3260"]


def _can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare -m")
@pytest.mark.parametrize("registered", [True, False], ids=["registered", "unknown-mount"])
def test_a_real_mount_in_a_listed_directory(tmp_path: Path, registered: bool) -> None:
    """A share stands in as a bind mount of the NAS's directory, in a mount namespace of the
    test's own: registered, it is unmounted and the local directory removed; not registered
    (someone else's), the directory is kept. The NAS's file survives both."""
    nas = tmp_path / "nas"
    nas.mkdir()
    (nas / "photo.jpg").write_text("precious")
    work = tmp_path / "nasplan-fio-9f9f"
    mnt = work / "nasplan-mnt-9f9f"
    mnt.mkdir(parents=True)
    (work / "local").write_text("ours")
    lock = _lock(tmp_path, [work], [f"kernel {mnt}"] if registered else [])
    setup = f"mount --bind '{nas}' '{mnt}'\n"
    argv = ("unshare", "-m", "--propagation", "private")
    said = _cleanup(lock, "dash", dict(os.environ), setup, argv)
    if registered:
        assert said.splitlines() == [f"mount {mnt}", f"file {work}"]
        assert not work.exists()
    else:
        assert said.splitlines() == [f"kept {work} (a mount is in it)"]
        assert (work / "local").exists()
    assert (nas / "photo.jpg").read_text() == "precious"
