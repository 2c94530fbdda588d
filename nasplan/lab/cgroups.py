"""A memory limit for a lab host: a cgroup its sshd and daemons run in.

A NAS's read and write cache is its page cache, and a cgroup's memory limit bounds the page
cache of the processes in it: with the host's sshd (so every command nasplan runs there) and
its daemons (smbd, ganesha, tgtd) inside, the lab's NAS has the RAM the lab file gives it.
Both layouts the kernel offers are used as they are: cgroup v2 (``memory.max`` in the unified
hierarchy, Debian 12's default) and cgroup v1 (``memory.limit_in_bytes`` under
``/sys/fs/cgroup/memory``, a hybrid layout). Each group is named ``nasplan-lab-<lab>-<host>``
and removed at ``lab down``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from nasplan.errors import LabError

ROOT = Path("/sys/fs/cgroup")
PREFIX = "nasplan-lab-"
# the shell prefix that puts a daemon into a group before it execs: $1 the group's procs file
JOIN_SCRIPT = 'echo $$ > "$1" && shift && exec "$@"'


@dataclass(frozen=True)
class Layout:
    """Where the memory controller is: its hierarchy's root and its limit file's name."""

    root: Path
    limit_file: str

    def group(self, name: str) -> Path:
        return self.root / name


def layout(root: Path = ROOT) -> Layout:
    """The memory controller this kernel offers; LabError when it has none."""
    controllers = root / "cgroup.controllers"
    if controllers.exists() and "memory" in controllers.read_text().split():
        return Layout(root, "memory.max")
    if (root / "memory" / "memory.limit_in_bytes").exists():
        return Layout(root / "memory", "memory.limit_in_bytes")
    raise LabError(
        f"no cgroup memory controller under {root} (neither cgroup v2 with memory in "
        "cgroup.controllers nor v1's memory hierarchy): a lab host's memory cannot be limited"
    )


def group_name(lab: str, host: str) -> str:
    """``nasplan-lab-<lab>-<host>``."""
    return f"{PREFIX}{lab}-{host}"


def create(name: str, limit_bytes: int, found: Layout | None = None) -> Path:
    """Make the group ``name`` with its memory limit; its directory."""
    where = found or layout()
    group = where.group(name)
    if where.limit_file == "memory.max":
        _enable_memory(where.root)
    group.mkdir(exist_ok=True)
    set_limit(group, limit_bytes)
    return group


def _enable_memory(root: Path) -> None:
    """cgroup v2 hands a controller to child groups only when the parent enables it."""
    control = root / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        try:
            control.write_text("+memory")
        except OSError as exc:
            raise LabError(f"cannot enable the memory controller in {control}: {exc}") from None


def set_limit(group: Path, limit_bytes: int) -> None:
    """Write the group's memory limit (memory.max or memory.limit_in_bytes)."""
    limit = "memory.max" if (group / "memory.max").exists() else "memory.limit_in_bytes"
    try:
        (group / limit).write_text(str(int(limit_bytes)))
    except OSError as exc:
        raise LabError(f"cannot set {group / limit} to {limit_bytes} bytes: {exc}") from None


def procs_file(group: Path) -> Path:
    """The file a PID is written to to move that process into the group."""
    return group / "cgroup.procs"


def join_argv(group: Path) -> list[str]:
    """argv to put before a command's so that it runs in ``group`` (it execs the command)."""
    return ["sh", "-c", JOIN_SCRIPT, "nasplan-cgroup", str(procs_file(group))]


def join_prefix(pid: int) -> list[str]:
    """argv to put before a daemon's so that it runs in the lab group process ``pid`` is in
    (its host's sshd); [] when that process is in none."""
    group = group_of(pid)
    return [] if group is None else join_argv(group)


def group_of(pid: int) -> Path | None:
    """The lab group (``nasplan-lab-*``) process ``pid`` is in, None when in none."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if not path.rsplit("/", 1)[-1].startswith(PREFIX):
            continue
        if controllers == "":
            return ROOT / path.lstrip("/")
        if "memory" in controllers.split(","):
            return ROOT / "memory" / path.lstrip("/")
    return None


def remove(group: Path, timeout_s: float = 5.0) -> str | None:
    """Remove the group once its processes are gone (a killed one leaves it a moment later);
    what went wrong, None when removed or never made."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            group.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if time.monotonic() > deadline:
                return f"cannot remove cgroup {group}: {exc}"
        time.sleep(0.1)
