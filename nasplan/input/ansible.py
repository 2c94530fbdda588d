"""Ansible inventories -> hosts with their vars resolved as Ansible resolves them.

The sources (nasplan.input.ansible_sources: YAML, INI, ``ansible-inventory --list`` JSON, host
lists, directories of them, several ``-i`` in order) make one graph
(nasplan.input.ansible_graph), whose precedence gives each host's vars; here those vars become
nasplan's fields: every ``ansible_*`` var honoured, refused or warned about by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import Origin, at, merged
from nasplan.input.ansible_sources import Sources
from nasplan.input.proxy_jump import jump_of_ssh_args

HONOURED = {
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "ansible_ssh_private_key_file": "identity_file",
    "ansible_private_key_file": "identity_file",
}
SSH_CONNECTIONS = ("ssh", "paramiko", "paramiko_ssh", "smart")
# ssh's arguments a jump host may come in (-J HOPS, -o ProxyJump=HOPS); any other option refused
JUMP_ARGUMENTS = ("ansible_ssh_common_args", "ansible_ssh_extra_args")
SSH_ARGUMENTS = (
    "ansible_ssh_args",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
    "ansible_scp_extra_args",
    "ansible_sftp_extra_args",
)
IGNORED_BECAUSE = {
    "ansible_become": "nasplan uses sudo by itself where a command needs root and the user is "
    "not root",
    "ansible_host_key_checking": "nasplan always checks host keys (known_hosts: FILE names the "
    "file)",
    "ansible_ssh_host_key_checking": "nasplan always checks host keys (known_hosts: FILE names "
    "the file)",
    "ansible_shell_type": "nasplan finds the host's shell itself",
    "ansible_shell_executable": "nasplan finds the host's shell itself",
    "ansible_ssh_executable": "nasplan's SSH client is built in (paramiko)",
}


@dataclass(frozen=True)
class AnsibleHost:
    """A host's vars under nasplan's names (``address``, ``user``, ...), its groups, its place."""

    fields: dict[str, Any]
    origins: dict[str, Origin]  # where each field was set
    groups: tuple[str, ...]
    where: Origin


@dataclass(frozen=True)
class AnsibleInventory:
    """Hosts, groups (each with its children's hosts), the ``all`` vars, and what was ignored."""

    hosts: dict[str, AnsibleHost]
    groups: dict[str, tuple[str, ...]]
    vars: dict[str, Any]
    warnings: tuple[str, ...]


def connection_of(value: Any) -> str | None:
    """nasplan's ``connection`` for an ``ansible_connection`` value: ``ssh`` (ssh, paramiko,
    smart), ``local``, None for any other."""
    shown = str(value).removeprefix("ansible.builtin.")
    if shown in SSH_CONNECTIONS:
        return "ssh"
    return "local" if shown == "local" else None


def _map_var(key: str, value: Any) -> tuple[str | None, str | None, str | None]:
    """(nasplan's name for it or None, why it is refused or None, why it is ignored or None)."""
    if not key.startswith("ansible_"):
        return key.removeprefix("nasplan_"), None, None
    if key in HONOURED:
        return HONOURED[key], None, None
    if key == "ansible_group_priority":
        return None, None, None  # read where groups are ordered
    if "pass" in key:
        if "become" in key or "sudo" in key:
            how = "name an environment variable that holds it (become_password_env: VAR) or pass -K"
        else:
            how = "log in with a key (ansible_ssh_private_key_file, or an ssh-agent)"
        return None, f"nasplan never takes a secret from an inventory file: {how}", None
    if key in JUMP_ARGUMENTS:
        try:
            jump = jump_of_ssh_args(value)
        except ValueError as exc:
            return None, str(exc), None
        return ("proxy_jump" if jump is not None else None), None, None
    if key in SSH_ARGUMENTS:
        refusal = (
            "nasplan cannot pass options to ssh: put their equivalent (ProxyJump, IdentityFile, "
            "UserKnownHostsFile, ...) in an ssh_config file and name it with nasplan_ssh_config: "
            "FILE"
        )
        return None, refusal, None
    if key == "ansible_connection":
        if connection_of(value) is not None:
            return "connection", None, None
        return None, f"{value!r} is not supported: nasplan connects over SSH, or runs locally", None
    if key == "ansible_become_method":
        if value == "sudo":
            return None, None, None
        return None, f"{value!r} is not supported: nasplan becomes root with sudo only", None
    if key == "ansible_become_user":
        if value == "root":
            return None, None, None
        return None, f"{value!r} is not supported: nasplan becomes root only", None
    if key.endswith("_interpreter"):
        return None, None, "nasplan runs no Python (or other interpreter) on hosts"
    return None, None, IGNORED_BECAUSE.get(key, "nasplan does not use it")


def resolve(read: Sources) -> AnsibleInventory:
    """Every host's vars by Ansible's precedence, mapped to nasplan's names; InputError with
    every refused var; the ignored ones as warnings, each named where it was set."""
    graph = read.graph
    if not graph.hosts:
        if not read.documents:  # directories without a file
            raise InputError(f"{read.given[0]}: the Ansible inventory lists no hosts (no file)")
        raise InputError(read.documents[0].error((), "the Ansible inventory lists no hosts"))
    hosts: dict[str, AnsibleHost] = {}
    errors: dict[str, None] = {}
    ignored: dict[str, None] = {}
    for name, entry in graph.hosts.items():
        values, origins = merged(graph.layers(entry, read.vars_dirs))
        fields: dict[str, Any] = {}
        field_origins: dict[str, Origin] = {}
        # an alias (ansible_ssh_host) first, so the current name (ansible_host) wins
        for key in sorted(values, key=lambda k: "_ssh_" not in k):
            target, refusal, ignore = _map_var(key, values[key])
            if refusal:
                errors[f"{at(origins[key])}: {refusal}"] = None
            elif ignore:
                ignored[f"{at(origins[key])}: ignored: {ignore}"] = None
            if target is not None:
                value = values[key]
                if key == "ansible_connection":
                    value = connection_of(value)
                elif key in JUMP_ARGUMENTS:
                    value = jump_of_ssh_args(value)
                fields[target] = value
                field_origins[target] = origins[key]
        groups = tuple(graph.ordered_groups(entry))
        hosts[name] = AnsibleHost(fields, field_origins, groups, entry.where)
    if errors:
        raise InputError(sorted(errors))
    return AnsibleInventory(
        hosts=hosts,
        groups={
            group: tuple(h for h in graph.hosts if group in hosts[h].groups)
            for group in graph.groups
            if group != "all" and (group != "ungrouped" or graph.groups[group].hosts)
        },
        vars=graph.all_vars(read.vars_dirs),
        warnings=tuple(ignored),
    )
