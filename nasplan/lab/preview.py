"""The inventory ``lab up`` will write, computed from the lab file alone (no root, nothing made),
so ``nasplan validate`` checks a plan against a lab that is not up yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nasplan.errors import InputError
from nasplan.input.lab_files import lab_file_for
from nasplan.lab import iscsi, nfs, services, volumes
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
        interfaces: dict[str, Any] = {
            "lan": {
                "name": LAN_INTERFACE,
                "role": "lan",
                "speed": lab.lan_rate,
                "address": host.lan_address,
            }
        }
        for link in lab.links:
            for end in (link.a, link.b):
                if end.host == host.name:
                    entry = {"name": end.interface, "role": "test", "speed": link.rate}
                    if end.address:
                        entry["address"] = end.address
                    interfaces[link.name] = entry
        hosts[host.name] = {
            "address": host.lan_address.split("/")[0],
            "platform": host.personality,
            "interfaces": interfaces,
            **_host_vars(lab, state_dir, host.name),
        }
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
    # `lab up` makes the client key the inventory names; an empty stand-in (0600) beside the
    # preview lets the check that an identity_file exists pass before the lab is up.
    (out.parent / data["vars"]["identity_file"]).touch(mode=0o600)
    return lab_file
