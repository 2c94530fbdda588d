"""Ansible inventories -> hosts with their vars resolved as Ansible resolves them.

Three forms: YAML (``all: {hosts, children, vars}``), INI (``nasplan.input.ansible_ini``) and the
JSON of ``ansible-inventory --list``; beside the inventory file, ``host_vars/`` and
``group_vars/`` (``NAME``, ``NAME.yml``, ``NAME.yaml``, ``NAME.json`` or a directory ``NAME/`` of
such files, the first of these that exists). Precedence, lowest first, as Ansible's: the ``all``
group's vars, ``group_vars/all``, the other groups' vars (parents before children, then by
``ansible_group_priority``, then by name), their ``group_vars/`` files, the host's own vars, its
``host_vars/`` files. Every ``ansible_*`` var is honoured, refused or warned about by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath, format_json_path, read_yaml

Origin = tuple[Document, JsonPath]  # where a value was set: the file and its path there
KEY = "\0key"  # the loader's position of a mapping key rather than its value
VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")
MAX_VARS_FILES = 1000  # in one host_vars/ or group_vars/ directory

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


@dataclass
class _Group:
    vars: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


@dataclass
class _Graph:
    """Groups and hosts as the inventory file states them, before any precedence."""

    groups: dict[str, _Group] = field(default_factory=dict)
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_origins: dict[str, dict[str, Origin]] = field(default_factory=dict)
    host_where: dict[str, Origin] = field(default_factory=dict)

    def group(self, name: str) -> _Group:
        return self.groups.setdefault(name, _Group())

    def add_host(self, group: str | None, host: str, where: Origin) -> None:
        self.host_where.setdefault(host, where)
        self.host_vars.setdefault(host, {})
        self.host_origins.setdefault(host, {})
        members = self.group(group).hosts if group is not None else []
        if group is not None and host not in members:
            members.append(host)

    def add_child(self, parent: str, child: str) -> None:
        self.group(child)
        if child not in self.group(parent).children:
            self.group(parent).children.append(child)


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


def at(origin: Origin) -> str:
    """``FILE:LINE:COL: json.path`` of an origin."""
    document, path = origin
    shown = path[:-1] if path and path[-1] == KEY else path
    return f"{document.where(path)}: {format_json_path(shown)}"


def is_list_form(data: Mapping[str, Any]) -> bool:
    """Whether a parsed document is ``ansible-inventory --list`` output (or an INI's)."""
    all_group = data.get("all")
    return "_meta" in data or (
        isinstance(all_group, dict) and isinstance(all_group.get("children"), list)
    )


def graph_from_yaml(document: Document) -> _Graph:
    """The YAML form (already checked against ``inventory-ansible``) as a graph."""
    graph = _Graph()

    def walk(name: str, spec: Mapping[str, Any] | None, where: JsonPath) -> None:
        group = graph.group(name)
        spec = spec or {}
        for key, value in (spec.get("vars") or {}).items():
            group.vars[key] = value
            group.origins[key] = (document, (*where, "vars", key))
        for host, host_vars in (spec.get("hosts") or {}).items():
            host_where = (*where, "hosts", host)
            graph.add_host(name, host, (document, (*host_where, KEY)))
            for key, value in (host_vars or {}).items():
                graph.host_vars[host][key] = value
                graph.host_origins[host][key] = (document, (*host_where, key))
        for child, child_spec in (spec.get("children") or {}).items():
            graph.add_child(name, child)
            walk(child, child_spec, (*where, "children", child))

    for name, spec in document.data.items():
        walk(name, spec, (name,))
    return graph


def graph_from_list(document: Document) -> _Graph:
    """``ansible-inventory --list`` JSON (or an INI file read into that shape) as a graph."""
    graph = _Graph()
    data: dict[str, Any] = document.data
    errors: list[str] = []

    def expect(value: Any, kind: type, path: JsonPath, what: str) -> bool:
        if isinstance(value, list) and kind is list:
            if all(isinstance(v, str) for v in value):
                return True
        elif isinstance(value, kind):
            return True
        errors.append(document.error(path, f"expected {what}"))
        return False

    meta = data.get("_meta") or {}
    hostvars = meta.get("hostvars") or {} if isinstance(meta, dict) else {}
    if expect(hostvars, dict, ("_meta", "hostvars"), "a mapping of host -> vars"):
        for host, host_vars in hostvars.items():
            where = ("_meta", "hostvars", host)
            graph.add_host(None, host, (document, (*where, KEY)))
            if expect(host_vars or {}, dict, where, "a mapping of vars"):
                for key, value in (host_vars or {}).items():
                    graph.host_vars[host][key] = value
                    graph.host_origins[host][key] = (document, (*where, key))
    for name, spec in data.items():
        what = "a group: hosts, children, vars"
        if name == "_meta" or not expect(spec or {}, dict, (name,), what):
            continue
        spec = spec or {}
        group = graph.group(name)
        if expect(spec.get("hosts") or [], list, (name, "hosts"), "a list of host names"):
            for index, host in enumerate(spec.get("hosts") or []):
                graph.add_host(name, host, (document, (name, "hosts", index)))
        if expect(spec.get("children") or [], list, (name, "children"), "a list of group names"):
            for child in spec.get("children") or []:
                graph.add_child(name, child)
        if expect(spec.get("vars") or {}, dict, (name, "vars"), "a mapping of vars"):
            for key, value in (spec.get("vars") or {}).items():
                group.vars[key] = value
                group.origins[key] = (document, (name, "vars", key))
    if errors:
        raise InputError(errors)
    return graph


def _depths(graph: _Graph, document: Document) -> dict[str, int]:
    """Each group's depth below ``all`` (its longest path); a cycle of children is an error."""
    parents: dict[str, set[str]] = {name: set() for name in graph.groups}
    for name, group in graph.groups.items():
        for child in group.children:
            parents[child].add(name)
    for name in graph.groups:
        if name != "all" and not parents[name]:
            graph.add_child("all", name)
            parents[name].add("all")
    depth = {"all": 0}
    waiting = {name: len(p) for name, p in parents.items() if name != "all"}
    ready = ["all"]
    while ready:
        name = ready.pop()
        for child in graph.groups[name].children:
            if child == "all":
                raise InputError(document.error((name,), "group 'all' cannot be a child"))
            depth[child] = max(depth.get(child, 0), depth[name] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    looped = sorted(name for name, count in waiting.items() if count > 0)
    if looped:
        raise InputError(document.error((looped[0],), f"groups nest in a loop: {looped}"))
    return depth


def _vars_files(base: Path, kind: str, name: str) -> list[Path]:
    """``base/kind/NAME`` (a file or a directory), ``NAME.yml``, ``.yaml``, ``.json``: the first
    that exists, as Ansible's host_group_vars plugin; a directory's files in sorted order."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return []  # a host or group name that would leave the directory names no file there
    for extension in VARS_EXTENSIONS:
        candidate = base / kind / f"{name}{extension}"
        if candidate.is_dir() and not extension:
            found = sorted(
                p
                for p in candidate.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(candidate).parts)
                and p.suffix in VARS_EXTENSIONS
            )
            if len(found) > MAX_VARS_FILES:
                raise InputError(f"{candidate}: more than {MAX_VARS_FILES} vars files")
            return found
        if candidate.is_file():
            return [candidate]
    return []


def _file_vars(path: Path) -> tuple[dict[str, Any], dict[str, Origin]]:
    document = read_yaml(path)
    if document.data is None:
        return {}, {}
    if not isinstance(document.data, dict):
        raise InputError(document.error((), "a vars file must be a mapping of var: value"))
    return dict(document.data), {k: (document, (k,)) for k in document.data}


def _files_vars(base: Path, kind: str, name: str) -> tuple[dict[str, Any], dict[str, Origin]]:
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for path in _vars_files(base, kind, name):
        found, where = _file_vars(path)
        values.update(found)
        origins.update(where)
    return values, origins


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


def resolve(graph: _Graph, document: Document) -> AnsibleInventory:
    """Every host's vars by Ansible's precedence, mapped to nasplan's names; InputError with
    every refused var; the ignored ones as warnings, each named where it was set."""
    if not graph.host_vars:
        raise InputError(document.error((), "the Ansible inventory lists no hosts"))
    graph.group("all")
    depth = _depths(graph, document)
    base = document.path.parent
    file_vars = {name: _files_vars(base, "group_vars", name) for name in graph.groups}
    parents: dict[str, list[str]] = {name: [] for name in graph.groups}
    for name, group in graph.groups.items():
        for child in group.children:
            parents[child].append(name)

    def priority(name: str) -> int:
        value = str(graph.groups[name].vars.get("ansible_group_priority", 1))
        return int(value) if value.isdigit() else 1

    members: dict[str, set[str]] = {host: set() for host in graph.host_vars}
    for name, group in graph.groups.items():
        for host in group.hosts:
            members[host].add(name)
    for host, direct in members.items():
        if not direct - {"all"}:
            graph.add_host("ungrouped", host, graph.host_where[host])
            direct.add("ungrouped")
    if "ungrouped" in graph.groups and "ungrouped" not in depth:
        graph.add_child("all", "ungrouped")
        depth["ungrouped"] = 1
        parents["ungrouped"] = ["all"]
        file_vars["ungrouped"] = _files_vars(base, "group_vars", "ungrouped")
    hosts: dict[str, AnsibleHost] = {}
    errors: dict[str, None] = {}
    ignored: dict[str, None] = {}
    for host, direct in members.items():
        ancestry, todo = {"all"}, list(direct)
        while todo:
            name = todo.pop()
            if name not in ancestry:
                ancestry.add(name)
                todo.extend(parents.get(name, []))
        ordered = sorted(ancestry - {"all"}, key=lambda g: (depth[g], priority(g), g))
        merged: dict[str, Any] = {}
        origins: dict[str, Origin] = {}
        layers = [
            (graph.groups["all"].vars, graph.groups["all"].origins),
            file_vars["all"],
            *((graph.groups[g].vars, graph.groups[g].origins) for g in ordered),
            *(file_vars[g] for g in ordered),
            (graph.host_vars[host], graph.host_origins[host]),
            _files_vars(base, "host_vars", host),
        ]
        for values, where in layers:
            merged.update(values)
            origins.update(where)
        fields: dict[str, Any] = {}
        field_origins: dict[str, Origin] = {}
        # an alias (ansible_ssh_host) first, so the current name (ansible_host) wins
        for key in sorted(merged, key=lambda k: "_ssh_" not in k):
            target, refusal, ignore = _map_var(key, merged[key])
            if refusal:
                errors[f"{at(origins[key])}: {refusal}"] = None
            elif ignore:
                ignored[f"{at(origins[key])}: ignored: {ignore}"] = None
            if target is not None:
                value = merged[key]
                if key == "ansible_connection":
                    value = connection_of(value)
                fields[target] = value
                field_origins[target] = origins[key]
        hosts[host] = AnsibleHost(fields, field_origins, tuple(ordered), graph.host_where[host])
    if errors:
        raise InputError(sorted(errors))
    return AnsibleInventory(
        hosts=hosts,
        groups={
            name: tuple(h for h in graph.host_vars if name in hosts[h].groups)
            for name in graph.groups
            if name != "all" and (name != "ungrouped" or graph.groups[name].hosts)
        },
        vars=dict(graph.groups["all"].vars) if "all" in graph.groups else {},
        warnings=tuple(ignored),
    )
