"""Ansible inventories -> hosts with their vars resolved as Ansible resolves them.

The sources (nasplan.input.ansible_sources: YAML, INI, ``ansible-inventory --list`` JSON, host
lists, directories of them, several ``-i`` in order) make one graph
(nasplan.input.ansible_graph), whose precedence gives each host's vars; here those vars become
nasplan's fields: every ``ansible_*`` var honoured, refused or warned about by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import Origin, at, merged
from nasplan.input.ansible_jinja import HostTemplates, Unrenderable, is_template
from nasplan.input.ansible_sources import Sources
from nasplan.input.proxy_jump import host_key_options, jump_of_ssh_args

if TYPE_CHECKING:  # Jinja is imported only when an inventory holds a template
    from nasplan.input.templating import PlanSandbox

# Where both names are set, Ansible's ssh connection uses the second (its option's vars list:
# the last one set wins), checked by tests/unit/test_ansible_differential.py's connection oracle
HONOURED = {
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "ansible_private_key_file": "identity_file",
    "ansible_ssh_private_key_file": "identity_file",
}
# nasplan's keys that say how to reach a host: in an Ansible inventory only under their
# ``nasplan_`` name (a plain ``port=8080`` or ``user=`` is an application's var, not the login)
CONNECTION_FIELDS = (
    "address",
    "user",
    "port",
    "identity_file",
    "proxy_jump",
    "connection",
)
SSH_CONNECTIONS = ("ssh", "paramiko", "paramiko_ssh", "smart")
# ssh's arguments a jump host may come in (-J HOPS, -o ProxyJump=HOPS); any other option refused
JUMP_ARGUMENTS = ("ansible_ssh_common_args", "ansible_ssh_extra_args")
# the vars Ansible renders to connect (any other stays as written: nasplan does not use it)
RENDERED = (*HONOURED, "ansible_connection", *JUMP_ARGUMENTS)
SSH_ARGUMENTS = (
    "ansible_ssh_args",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
    "ansible_scp_extra_args",
    "ansible_sftp_extra_args",
)
_HOST_KEYS_CHECKED = "nasplan always checks host keys (known_hosts: FILE names the file)"
_SHELL_FOUND = "nasplan finds the host's shell itself"
IGNORED_BECAUSE = {
    "ansible_become": "nasplan uses sudo by itself where a command needs root and the user is "
    "not root",
    "ansible_host_key_checking": _HOST_KEYS_CHECKED,
    "ansible_ssh_host_key_checking": _HOST_KEYS_CHECKED,
    "ansible_shell_type": _SHELL_FOUND,
    "ansible_shell_executable": _SHELL_FOUND,
    "ansible_ssh_executable": "nasplan's SSH client is built in (paramiko)",
}


@dataclass(frozen=True)
class AnsibleHost:
    """A host's vars under nasplan's names (``address``, ``user``, ...), its groups, its place."""

    fields: dict[str, Any]
    origins: dict[str, Origin]  # where each field was set
    groups: tuple[str, ...]
    where: Origin
    # vars under a name nasplan's connection has (port, user, address) that in an Ansible
    # inventory are the user's own: a plan sees them, the connection does not use them
    plain: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AnsibleInventory:
    """Hosts, groups (each with its children's hosts), the ``all`` vars, and what was ignored."""

    hosts: dict[str, AnsibleHost]
    groups: dict[str, tuple[str, ...]]
    vars: dict[str, Any]
    warnings: tuple[str, ...]
    # a host nasplan cannot reach as the inventory says (a network_cli switch, a password):
    # left out, its refusals kept for a plan that names it
    unusable: dict[str, tuple[str, ...]] = field(default_factory=dict)


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
        if key.startswith("nasplan_"):
            return key.removeprefix("nasplan_"), None, None
        return (None if key in CONNECTION_FIELDS else key), None, None
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
        loosened = host_key_options(value)
        kept = (
            f"nasplan keeps strict host-key checking (-o {', -o '.join(loosened)} not used): the "
            "host's key must be in known_hosts (nasplan tells how to add it when it is not)"
            if loosened
            else None
        )
        return ("proxy_jump" if jump is not None else None), None, kept
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


def _rank(key: str) -> int:
    """The order a host's vars are mapped in, a later one winning a field: Ansible's current
    names, then their ``ansible_ssh_`` forms (which Ansible's ssh connection prefers), then
    ``nasplan_`` names (nasplan's own say, over Ansible's)."""
    if key.startswith("nasplan_"):
        return 2
    return 1 if key in HONOURED and "_ssh_" in key else 0


def _host_fields(
    name: str,
    values: dict[str, Any],
    origins: dict[str, Origin],
    groups: tuple[str, ...],
    sandbox: Callable[[], PlanSandbox],
) -> tuple[dict[str, Any], dict[str, Origin], list[str], list[str], dict[str, Any]]:
    """(nasplan's fields, where each was set, refusals, ignored vars, the user's vars under a
    connection field's name) of one host's vars."""
    fields: dict[str, Any] = {}
    field_origins: dict[str, Origin] = {}
    refusals: list[str] = []
    ignored: list[str] = []
    plain: dict[str, Any] = {}
    templates = HostTemplates(sandbox, name, groups, values)
    for key in sorted(values, key=_rank):
        value = values[key]
        if is_template(value) and (key in RENDERED or key.startswith("nasplan_")):
            try:
                value = templates.render(value)
            except Unrenderable as exc:
                refusals.append(f"{at(origins[key])}: {exc}")
                continue
        target, refusal, ignore = _map_var(key, value)
        if key in CONNECTION_FIELDS:
            plain[key] = value
        if refusal:
            refusals.append(f"{at(origins[key])}: {refusal}")
        elif ignore:
            ignored.append(f"{at(origins[key])}: ignored: {ignore}")
        if target is not None:
            if key == "ansible_connection":
                value = connection_of(value)
            elif key in JUMP_ARGUMENTS:
                value = jump_of_ssh_args(value)
            fields[target] = value
            field_origins[target] = origins[key]
    return fields, field_origins, refusals, ignored, plain


def resolve(read: Sources) -> AnsibleInventory:
    """Every host's vars by Ansible's precedence, mapped to nasplan's names; a host with a var
    nasplan cannot honour is left out (``unusable``: its lines, each named where it was set);
    the ignored vars as warnings."""
    graph = read.graph
    if not graph.hosts:
        if not read.documents:  # directories without a file
            raise InputError(f"{read.given[0]}: the Ansible inventory lists no hosts (no file)")
        raise InputError(read.documents[0].error((), "the Ansible inventory lists no hosts"))
    hosts: dict[str, AnsibleHost] = {}
    unusable: dict[str, tuple[str, ...]] = {}
    ignored: dict[str, None] = {}
    made: list[PlanSandbox] = []

    def sandbox() -> PlanSandbox:  # made (and Jinja imported) at the first template
        if not made:
            from nasplan.input.templating import PlanSandbox

            made.append(PlanSandbox())
        return made[0]

    for name, entry in graph.hosts.items():
        values, origins = merged(graph.layers(entry, read.vars_dirs))
        groups = tuple(graph.ordered_groups(entry))
        fields, field_origins, refusals, host_ignored, plain = _host_fields(
            name, values, origins, groups, sandbox
        )
        if refusals:
            unusable[name] = tuple(dict.fromkeys(refusals))
            continue
        ignored.update(dict.fromkeys(host_ignored))
        hosts[name] = AnsibleHost(fields, field_origins, groups, entry.where, plain)
    members: dict[str, list[str]] = {
        group: []
        for group in graph.groups
        if group != "all" and (group != "ungrouped" or graph.groups[group].hosts)
    }
    for name, host in hosts.items():  # linear in hosts x their groups
        for group in host.groups:
            if group in members:
                members[group].append(name)
    return AnsibleInventory(
        hosts=hosts,
        groups={group: tuple(names) for group, names in members.items()},
        vars=graph.all_vars(read.vars_dirs),
        warnings=tuple(ignored),
        unusable=unusable,
    )
