"""The running lab's record (``state.json``): what was created, so it can be checked and undone."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError, LabError
from nasplan.input.localfile import MAX_RUN_JSON_BYTES, read_json_bounded
from nasplan.lab import hostfs

STATE_VERSION = 1
STATE_FILE = "state.json"


class InRoot:
    """A file of a layout under its folder (its attribute ``under``: ``root``, or the lab's
    ``state_dir``): ``pid_path = InRoot("tgtd.pid")`` reads as ``self.root / "tgtd.pid"``."""

    def __init__(self, *parts: str, under: str = "root") -> None:
        self.parts, self.under = parts, under

    def __get__(self, layout: Any, owner: type | None = None) -> Path:
        return Path(getattr(layout, self.under)).joinpath(*self.parts)


@dataclass
class HostState:
    """A running lab host: namespace, LAN address/prefix, personality, sshd PID, interfaces."""

    name: str
    namespace: str
    address: str
    personality: str
    lan_root_side: str
    sshd_pid: int | None = None
    # inventory key -> {name, role, rate, address?}
    interfaces: dict[str, dict[str, str]] = field(default_factory=dict)
    # volume name -> {path, share?, export?, description}: what the inventory lists
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    # its memory limit's cgroup directory (``nasplan.lab.cgroups``), None: no limit
    cgroup: str | None = None
    # the lab host it is reached through (it has no LAN port; ``address`` is a link's), or None
    jump: str | None = None

    @property
    def ip(self) -> str:
        """The LAN address without its prefix (what ssh connects to)."""
        return self.address.split("/", 1)[0]


@dataclass
class LinkState:
    """A shaped link: LAN (``lan``) or point-to-point; ``ends`` are (namespace or None, device)."""

    name: str
    rate: str
    mtu_bytes: int
    ends: list[tuple[str | None, str]]


@dataclass
class LabState:
    """Everything ``lab up`` made, and where its generated files are."""

    state_dir: Path
    lab_name: str
    lab_file: str
    bridge: str
    control_address: str
    link_prefix: str
    namespace_prefix: str
    hosts: dict[str, HostState] = field(default_factory=dict)
    links: dict[str, LinkState] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    root_links: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    # what the hosts' volumes made (``nasplan.lab.volumes.Made``): undone after the namespaces
    volume_pids: list[int] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    fuse_dirs: list[str] = field(default_factory=list)
    created_privsep_dir: bool = False
    complete: bool = False
    # sha256 of the lab file's data: a changed file means the running lab is stale.
    lab_digest: str = ""

    inventory_path = InRoot("inventory.yaml", under="state_dir")
    known_hosts_path = InRoot("known_hosts", under="state_dir")
    identity_path = InRoot("id_ed25519", under="state_dir")
    ssh_config_path = InRoot("ssh_config", under="state_dir")
    state_path = InRoot(STATE_FILE, under="state_dir")

    def host_dir(self, host: str) -> Path:
        """Where a host's sshd_config, host key, wrapper and log live."""
        return self.state_dir / "hosts" / host

    def host_path(self, host: str, path: str | Path) -> Path:
        """``path`` as lab host ``host`` sees it (its private /tmp, a vendor's root), reachable
        from the control node: ``/proc/<its sshd>/root/<path>``; LabError when sshd is not up."""
        return hostfs.host_path(self.hosts[host].sshd_pid, path)

    def save(self) -> None:
        """Write ``state.json`` atomically (a crash mid-write must not lose the teardown record)."""
        data: dict[str, Any] = asdict(self)
        data["state_dir"] = str(self.state_dir)
        data["schema_version"] = STATE_VERSION
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.state_path)


def load_state(state_dir: Path) -> LabState | None:
    """Read ``<state_dir>/state.json``; None when there is none, LabError when it is unreadable."""
    path = state_dir / STATE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        data = read_json_bounded(path, MAX_RUN_JSON_BYTES, "lab state file")
    except InputError as exc:
        raise LabError(f"cannot read lab state: {exc}") from None
    if not isinstance(data, dict):
        raise LabError(f"{path}: cannot read lab state: not a JSON object")
    if data.pop("schema_version", None) != STATE_VERSION:
        raise LabError(f"{path}: unknown lab state version")
    data["state_dir"] = Path(data["state_dir"])
    data["hosts"] = {name: HostState(**host) for name, host in data["hosts"].items()}
    data["links"] = {
        name: LinkState(
            name=link["name"],
            rate=link["rate"],
            mtu_bytes=link["mtu_bytes"],
            ends=[(ns, dev) for ns, dev in link["ends"]],
        )
        for name, link in data["links"].items()
    }
    return LabState(**data)
