"""A lab host's volumes: filesystems on disks of a shaped rate, mounted inside the host.

Each disk is nbdkit's ``memory`` plugin behind its ``rate`` filter (reads and writes at the
disk's rate in bytes per second; a disk whose reads and writes differ, or with a write cache,
is ``nasplan.lab.shaped_disk`` instead), served by ``nbdfuse`` as one file in a FUSE mount of the
host's state directory and attached to a loop device with direct I/O (so the machine's page
cache does not sit between the filesystem and its disk: the host's own page cache is the NAS's
cache, bounded by its memory limit, ``nasplan.lab.cgroups``). The filesystem (ext4, xfs, or a
Btrfs RAID over several disks) is made on the loop devices and mounted in the host's mount
namespace at the volume's path, where its sshd's commands and its daemons see it.

``lab down`` undoes it in order once the host's processes are gone (its mount namespace with
them): each loop device detached, each FUSE mount unmounted, each nbdfuse stopped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import daemon, netns
from nasplan.lab.model import LabVolume

NBDFUSE = "nbdfuse"
NBDKIT = "nbdkit"
FUSERMOUNT = "fusermount3"
READY_TIMEOUT_S = 10.0
# nbdkit's rate filter lets a burst of this many seconds through before it holds to the rate;
# short, so that a small file is measured at the disk's rate too
BURSTINESS_S = 0.05
_MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "nodiscard,lazy_itable_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f", "-K"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}


@dataclass
class Made:
    """What a host's volumes made on the machine, for ``lab down``: nbdfuse PIDs, loop
    devices, FUSE mount points."""

    pids: list[int] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    fuse_dirs: list[str] = field(default_factory=list)


def disk_argv(fuse_dir: Path, volume: LabVolume) -> list[str]:
    """nbdfuse serving one disk of ``volume`` as ``fuse_dir/nbd``: nbdkit's memory plugin (sparse:
    only what is written takes the machine's memory) behind the rate filter (bits per second),
    or for a disk of more than one rate (``LabVolume.shaped``) ``nasplan.lab.shaped_disk``."""
    if volume.shaped:
        return [NBDFUSE, str(fuse_dir), "--command", *shaped_disk_argv(volume)]
    bits = volume.bytes_per_second * 8
    return [
        NBDFUSE, str(fuse_dir), "--command",
        NBDKIT, "-s", "--exit-with-parent", "--filter=rate",
        "memory", str(volume.size_bytes), f"rate={bits}", f"burstiness={BURSTINESS_S}",
    ]  # fmt: skip


def shaped_disk_argv(volume: LabVolume) -> list[str]:
    """``python3 -m nasplan.lab.shaped_disk``'s argv for one disk of ``volume``."""
    argv = [
        sys.executable, "-m", "nasplan.lab.shaped_disk", str(volume.size_bytes),
        f"--read-rate={volume.read_rate}", f"--write-rate={volume.write_rate}",
    ]  # fmt: skip
    if volume.write_cache is not None:
        argv += [
            f"--cache-bytes={volume.write_cache.size_bytes}",
            f"--cache-rate={volume.write_cache.bytes_per_second}",
        ]
    return argv


def mkfs_argv(volume: LabVolume, loops: list[str]) -> list[str]:
    """The filesystem over the volume's loop devices (a Btrfs RAID over several)."""
    argv = list(_MKFS[volume.filesystem])
    if volume.filesystem == "btrfs" and len(loops) > 1:
        argv += ["-d", volume.raid, "-m", "raid1" if volume.raid == "raid0" else volume.raid]
    return [*argv, "-L", volume.name[:12], *loops]


def start(volume: LabVolume, host_dir: Path, sshd_pid: int, root: str, made: Made) -> None:
    """Make ``volume``'s disks and filesystem and mount it at ``root + path`` in the mount
    namespace of the host whose sshd is ``sshd_pid`` (``root``: a vendor personality's own);
    each piece into ``made`` as it is made. LabError naming what failed."""
    for disk in range(volume.disks):
        fuse_dir = host_dir / "volumes" / volume.name / f"disk{disk}"
        fuse_dir.mkdir(parents=True, exist_ok=True)
        log = fuse_dir.parent / f"disk{disk}.log"
        made.pids.append(daemon.spawn_here(disk_argv(fuse_dir, volume), log))
        made.fuse_dirs.append(str(fuse_dir))
        _wait_for(fuse_dir / "nbd", made.pids[-1], log)
        loop = _run(["losetup", "--find", "--show", "--direct-io=on", str(fuse_dir / "nbd")])
        made.loops.append(loop.strip())
    loops = made.loops[-volume.disks :]
    _run(mkfs_argv(volume, loops))
    mount = ["nsenter", f"--target={sshd_pid}", "--mount", "--", "sh", "-c", _MOUNT, "sh"]
    _run([*mount, root + volume.path, loops[0], volume.filesystem])


# $1: where, $2: the device, $3: its filesystem. Open to every user of the host, as a share is.
_MOUNT = 'mkdir -p -- "$1" && mount -t "$3" -- "$2" "$1" && chmod 1777 -- "$1"'


def _wait_for(path: Path, pid: int, log: Path) -> None:
    """Wait until nbdfuse serves its file; LabError when it exits or the time runs out."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not path.exists():
        if not netns.pid_alive(pid):
            raise LabError(f"nbdfuse for {path} exited: {daemon.log_tail(log)}")
        if time.monotonic() > deadline:
            raise LabError(f"nbdfuse did not serve {path} within {READY_TIMEOUT_S:g} s")
        time.sleep(0.05)


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise LabError(f"{argv[0]} failed: {said[0]}")
    return proc.stdout


def stop(made: Made) -> list[str]:
    """Undo what ``start`` made, once the host's mount namespace is gone; what failed."""
    failures = []
    for loop in made.loops:
        proc = subprocess.run(["losetup", "-d", loop], capture_output=True, text=True, check=False)
        if proc.returncode != 0 and "No such device" not in proc.stderr:
            failures.append(f"losetup -d {loop}: {proc.stderr.strip()}")
    for fuse_dir in made.fuse_dirs:
        if Path(fuse_dir, "nbd").exists() or _mounted(fuse_dir):
            subprocess.run([FUSERMOUNT, "-u", "-z", fuse_dir], capture_output=True, check=False)
    netns.stop_pids(made.pids)
    for fuse_dir in made.fuse_dirs:
        if _mounted(fuse_dir):
            failures.append(f"FUSE mount {fuse_dir} is still there")
    return failures


def _mounted(path: str) -> bool:
    """Whether ``path`` is a mount point of this (the machine's) mount namespace."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[1:2] == [path] for line in mounts)


def inventory_entry(volume: LabVolume, services: tuple[str, ...]) -> dict[str, str]:
    """What the lab inventory says of ``volume``: its path, its share and export where the host
    serves them, what it is in words, and its rates (``stated_rate``): ``rate``, the slower
    direction's, and where reads and writes differ ``read_rate`` and ``write_rate`` too."""
    disks = f"{volume.disks} disks ({volume.raid})" if volume.disks > 1 else "1 disk"
    read, write = stated_rate(volume, "read"), stated_rate(volume, "write")
    entry = {
        "path": volume.path,
        "description": f"lab volume: {volume.filesystem} on {disks} of {volume.rate_text} each",
        "rate": _mib_per_s(min(read, write)),
    }
    if read != write:
        entry |= {"read_rate": _mib_per_s(read), "write_rate": _mib_per_s(write)}
    if "smb" in services:
        entry["share"] = volume.name
    if "nfs" in services:
        entry["export"] = f"/{volume.name}"
    return entry


def _mib_per_s(bytes_per_second: int) -> str:
    return f"{bytes_per_second / 2**20:g}MiB/s"


def stated_rate(volume: LabVolume, direction: str = "read") -> int:
    """The volume's sequential rate in bytes/s one way (``read``, ``write``) as its inventory
    states it: one disk's for one disk and for RAID 1 (it writes every disk, and a single stream
    reads one mirror), the disks' together for RAID 0, half of them for RAID 10. A write cache's
    rate is left out: a long copy outlasts it."""
    rate = volume.read_rate if direction == "read" else volume.write_rate
    if volume.disks < 2 or volume.raid == "raid1":
        return rate
    stripes = volume.disks if volume.raid == "raid0" else volume.disks // 2
    return rate * max(stripes, 1)


def tools_missing() -> list[str]:
    """The programs lab volumes need that this machine lacks."""
    return [t for t in (NBDFUSE, NBDKIT, FUSERMOUNT, "losetup") if shutil.which(t) is None]
