"""The inventory ``lab up`` will write, computed from the lab file alone (no root, nothing made),
so ``nasplan validate`` checks a plan against a lab that is not up yet."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import yaml

from nasplan.errors import InputError
from nasplan.input.lab_files import lab_file_for
from nasplan.lab import iscsi, nfs, services, volumes
from nasplan.lab.inventory_out import jump_spec
from nasplan.lab.model import LAN_INTERFACE, Lab, load_lab
from nasplan.lab.personalities.synology import ADMIN_USER, PASSWORD_ENV


def _host_vars(lab: Lab, state_dir: Path, name: str) -> dict[str, Any]:
    host = lab.host(name)
    entry: dict[str, Any] = {}
    if host.personality == "synology" and host.personality_options.get("ssh_user") == ADMIN_USER:
        entry.update(user=ADMIN_USER, become_password_env=PASSWORD_ENV)
    host_dir = state_dir / "hosts" / name
    found: dict[str, Any] = {}
    if "smb" in host.services:
        found["smb"] = {
            "share": services.SMB_SHARE,
            "user": services.SMB_USER,
            "password_env": services.SMB_PASSWORD_ENV,
            "password_file": str(services.smb_files(host_dir).password_path),
        }
    if "nfs" in host.services:
        export_path = nfs.nfs_files(host_dir).export_path
        found["nfs"] = {"export": nfs.NFS_EXPORT, "server_path": str(export_path)}
    if "iscsi" in host.services:
        settings = iscsi.target_settings(name, host.iscsi)
        found.update(iscsi.vars_of(settings, iscsi.iscsi_files(host_dir)))
    if host.volumes:
        entry["volumes"] = {v.name: volumes.inventory_entry(v, host.services) for v in host.volumes}
    if found:
        entry["vars"] = found
    return entry


def preview_inventory(lab_file: Path, state_dir: Path) -> dict[str, Any]:
    """The native inventory ``lab up LAB_FILE`` writes into ``state_dir`` (addresses, interfaces,
    the login user a personality asks for, service vars); passwords are never part of it."""
    lab = load_lab(lab_file)
    hosts: dict[str, Any] = {}
    groups: dict[str, dict[str, list[str]]] = {}
    for host in lab.hosts:
        groups.setdefault(host.personality, {"hosts": []})["hosts"].append(host.name)
        interfaces: dict[str, Any] = {}
        if host.jump is None:
            interfaces["lan"] = {
                "name": LAN_INTERFACE,
                "role": "lan",
                "speed": lab.lan_rate,
                "address": host.lan_address,
            }
        for link in lab.links:
            for end in (link.a, link.b):
                if end.host == host.name:
                    entry = {"name": end.interface, "role": "test", "speed": link.rate}
                    if end.address:
                        entry["address"] = end.address
                    interfaces[link.name] = entry
        hosts[host.name] = {
            "address": host.address.split("/")[0],
            "platform": host.personality,
            "interfaces": interfaces,
        }
        if host.jump is not None:
            hosts[host.name]["proxy_jump"] = jump_spec(lab.host(host.jump).address.split("/")[0])
        hosts[host.name].update(_host_vars(lab, state_dir, host.name))
    return {
        "vars": {"user": "root", "identity_file": "id_ed25519", "known_hosts": "known_hosts",
                 "framing": "tc"},
        "groups": groups,
        "hosts": hosts,
    }  # fmt: skip


def write_preview(inventory_path: Path, out: Path) -> Path:
    """Write the inventory ``lab up`` would generate at ``inventory_path`` into ``out``; return
    the lab file it comes from. InputError when no lab file beside ``.lab/`` makes it."""
    lab_file = lab_file_for(inventory_path)
    if lab_file is None:
        raise InputError(
            f"{inventory_path} is written by `nasplan lab up`, and no lab file in "
            f"{inventory_path.parent.parent.parent} is named {inventory_path.parent.name!r}"
        )
    data = preview_inventory(lab_file, inventory_path.parent.resolve())
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    # `lab up` makes the client key the inventory names; a stand-in (0600) beside the preview
    # lets the checks of an identity_file (there, a private key's shape) pass before the lab is up.
    stand_in = out.parent / data["vars"]["identity_file"]
    stand_in.touch(mode=0o600)
    stand_in.write_text(_stand_in_key(), encoding="ascii")
    return lab_file


def _stand_in_key() -> str:
    """A private key file in OpenSSH's format around an all-zero ed25519 key: the shape of the
    one `lab up` makes, for validation only (it never logs in anywhere)."""

    def string(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    public = string(b"ssh-ed25519") + string(bytes(32))
    private = struct.pack(">II", 0, 0) + public + string(bytes(64)) + string(b"stand-in")
    private += bytes(range(1, 1 + (-len(private)) % 8))  # padded to the cipher's block (8)
    blob = b"openssh-key-v1\0" + string(b"none") * 2 + string(b"") + struct.pack(">I", 1)
    body = base64.b64encode(blob + string(public) + string(private)).decode()
    lines = [body[start : start + 70] for start in range(0, len(body), 70)]
    return "\n".join(
        ["-----BEGIN OPENSSH PRIVATE KEY-----", *lines, "-----END OPENSSH PRIVATE KEY-----", ""]
    )
