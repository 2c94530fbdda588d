"""Give back the space of files removed under a lab NFS server: nfs-ganesha keeps a file it
served over NFSv3 open (its cache of file descriptors, closed only when a reaper finds the
server short of descriptors), so a test's copy removed on the NAS (``rm`` over SSH, not through
NFS) would still hold its blocks, and a small volume fills after a copy or two.

``python3 -m nasplan.lab.nfs_release PID ROOT...`` runs beside the server (``nasplan.lab.nfs``)
until process PID is gone: every ``INTERVAL_S`` it truncates each removed file PID still holds
under a ROOT (an export) through ``/proc/PID/fd``, which frees its blocks at once; the server's
descriptor stays open on an empty file nobody can name.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

DELETED = " (deleted)"
INTERVAL_S = 0.05


def removed_files(pid: int, roots: list[str]) -> list[Path]:
    """The descriptors (``/proc/PID/fd/N``) of files process ``pid`` holds under one of
    ``roots`` whose names are gone."""
    found = []
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.endswith(DELETED) and any(_under(target, root) for root in roots):
            found.append(fd)
    return found


def _under(target: str, root: str) -> bool:
    base = root.rstrip("/") + "/"
    return target.startswith(base)


def release(pid: int, roots: list[str]) -> int:
    """Truncate each removed file ``pid`` holds under ``roots``; how many held any bytes."""
    released = 0
    for fd in removed_files(pid, roots):
        try:
            if fd.stat().st_size:
                os.truncate(fd, 0)
                released += 1
        except OSError:
            continue
    return released


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python3 -m nasplan.lab.nfs_release PID ROOT...", file=sys.stderr)
        return 2
    pid, roots = int(args[0]), args[1:]
    while Path(f"/proc/{pid}").exists():
        release(pid, roots)
        time.sleep(INTERVAL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
