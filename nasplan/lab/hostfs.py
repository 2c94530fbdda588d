"""What a lab host has of its own on disk: a private ``/tmp``, and reading a host's files.

Each host's sshd starts in a mount namespace of its own (``sshd.start``) where a fresh tmpfs
(mode 1777) covers ``/tmp``; the host's daemons join that namespace (``daemon.spawn_on_host``),
and a vendor personality binds the same tmpfs into its root. So two labs with a host of the same
name, or a lab host and the machine, never see each other's ``/tmp`` (nasplan's host lock lives
there). When the lab's state directory lies under ``/tmp`` (a test's ``tmp_path``), it is bound
back at its own path inside the private ``/tmp``: the host's sshd_config, keys and service files
stay where the lab wrote them. The tmpfs goes away with the namespace's last process.
"""

from __future__ import annotations

from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import netns

TMP = Path("/tmp")
# An empty directory in the host's state directory: the tmpfs is mounted here first, so that the
# state directory (maybe under the /tmp it will cover) can still be bound into it, then moved.
STAGE_DIR = "tmp-stage"


def state_dir_of(host_dir: Path) -> Path:
    """The lab's state directory of a host's state directory (``<state>/hosts/<host>``)."""
    return host_dir.parent.parent


def _under_tmp(state_dir: Path) -> Path | None:
    """``state_dir`` relative to ``/tmp``, or None when it lies elsewhere."""
    if state_dir.is_relative_to(TMP) and state_dir != TMP:
        return state_dir.relative_to(TMP)
    return None


def private_tmp_commands(host_dir: Path) -> list[list[str]]:
    """Commands (argv lists, run in the host's new mount namespace) giving it its own ``/tmp``."""
    stage = host_dir / STAGE_DIR
    state_dir = state_dir_of(host_dir)
    commands = [
        ["mkdir", "-p", str(stage)],
        ["mount", "-t", "tmpfs", "-o", "mode=1777", "nasplan-tmp", str(stage)],
    ]
    inside = _under_tmp(state_dir)
    if inside is not None:
        commands += [
            ["mkdir", "-p", str(stage / inside)],
            ["mount", "--bind", str(state_dir), str(stage / inside)],
        ]
    commands.append(["mount", "--move", str(stage), str(TMP)])
    return commands


def negotiated_speed_commands(host_dir: Path, speeds_mbps: dict[str, int]) -> list[list[str]]:
    """Commands (in the host's mount namespace) showing each NIC's negotiated speed: a file
    holding it, bound over ``/sys/class/net/IF/speed``. A veth's speed cannot be set (``ethtool
    -s`` is not supported), and only this host sees the file: the machine's sysfs is untouched.
    The files are written here, in the host's state directory."""
    commands = []
    for nic, mbps in sorted(speeds_mbps.items()):
        speed_file = host_dir / f"sysfs-{nic}-speed"
        speed_file.write_text(f"{mbps}\n")
        commands.append(["mount", "--bind", str(speed_file), f"/sys/class/net/{nic}/speed"])
    return commands


def cgroup_commands(hierarchy: Path) -> list[list[str]]:
    """Commands (in the host's mount namespace) showing the host its memory cgroup as a system
    shows it: ``ip netns exec`` mounted a /sys of its own, without /sys/fs/cgroup's mounts.
    ``hierarchy``: the memory controller's (``/sys/fs/cgroup`` for cgroup v2, its ``memory``
    directory for v1), mounted at the same path."""
    cgroup = Path("/sys/fs/cgroup")
    if hierarchy == cgroup:
        return [["mount", "-t", "cgroup2", "nasplan-cgroup", str(cgroup)]]
    return [
        ["mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "nasplan-cgroup", str(cgroup)],
        ["mkdir", "-p", str(hierarchy)],
        ["mount", "-t", "cgroup", "-o", "memory", "nasplan-cgroup-memory", str(hierarchy)],
    ]


def chroot_tmp_commands(host_dir: Path, root: Path) -> list[list[str]]:
    """Commands binding the host's private ``/tmp`` into a vendor root at ``root``.

    The bind is not recursive: the state directory is bound again on its own, so that the root
    does not hold a copy of itself (the vendor root lives in the state directory).
    """
    commands = [["mount", "--bind", str(TMP), f"{root}{TMP}"]]
    state_dir = state_dir_of(host_dir)
    if _under_tmp(state_dir) is not None:
        commands.append(["mount", "--bind", str(state_dir), f"{root}{state_dir}"])
    return commands


def host_path(sshd_pid: int | None, path: str | Path) -> Path:
    """``path`` as a lab host sees it, reachable from the control node (``/proc/PID/root/...``).

    ``sshd_pid`` is the host's sshd: its root is the host's own (a vendor's overlay) in the
    host's mount namespace, so ``host_path(pid, "/tmp/x")`` is the host's private ``/tmp/x``.
    """
    if sshd_pid is None or not netns.pid_alive(sshd_pid):
        raise LabError(f"the lab host's sshd (PID {sshd_pid}) is not running")
    return Path(f"/proc/{sshd_pid}/root") / Path(path).relative_to("/")
