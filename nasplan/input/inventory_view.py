"""What nasplan read from an inventory, shown as ``ansible-inventory`` shows it.

``list_view`` is ``ansible-inventory --list``'s JSON (groups with their own hosts and children,
``_meta.hostvars``), ``graph_view`` its ``--graph`` text, ``host_view`` its ``--host NAME`` JSON
plus a ``nasplan`` key (what nasplan will connect to and use: address, port, user,
identity_file, proxy_jump, platform, volumes; null for a host it leaves out, with
``unusable``: why) and ``sources``: where each of those was set (``FILE:LINE:COL``).
Pure functions of a ReadInventory: nothing connects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import Graph, at, merged
from nasplan.input.inventory import Host, ReadInventory

SHOWN = ("address", "port", "user", "identity_file", "proxy_jump", "connection", "platform")


def _json(value: Any) -> Any:
    """A value as JSON carries it (dates, paths and tuples as text and lists)."""
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


HIDDEN = "(hidden: nasplan shows no password)"


def hidden(hostvars: dict[str, Any]) -> dict[str, Any]:
    """A host's vars with the value of each ``*pass*`` var hidden (ansible-inventory shows it;
    nasplan never prints a secret)."""
    return {k: HIDDEN if "pass" in k.lower() else v for k, v in hostvars.items()}


def _hostvars(read: ReadInventory) -> dict[str, dict[str, Any]]:
    """Every host's vars after precedence, as ``ansible-inventory --host`` prints them (a
    password hidden)."""
    sources = read.sources
    if sources is None:  # a nasplan inventory: its hosts' vars and connection keys
        return {
            name: _json({**dict(host.vars), **_nasplan_fields(host)})
            for name, host in read.inventory.hosts.items()
        }
    return {
        name: hidden(_json(merged(sources.graph.layers(entry, sources.vars_dirs))[0]))
        for name, entry in sources.graph.hosts.items()
    }


def _nasplan_fields(host: Host) -> dict[str, Any]:
    fields = {
        "address": host.address,
        "port": host.port,
        "user": host.user,
        "identity_file": str(host.identity_file) if host.identity_file else None,
        "proxy_jump": host.proxy_jump,
        "connection": host.connection,
        "platform": host.platform_hint,
        "known_hosts": str(host.known_hosts) if host.known_hosts else None,
        "ssh_config": str(host.ssh_config) if host.ssh_config else None,
        "volumes": {name: volume.to_dict() for name, volume in host.volumes.items()},
    }
    return {k: v for k, v in fields.items() if v is not None and v != {}}


def list_view(read: ReadInventory) -> dict[str, Any]:
    """``ansible-inventory --list``: groups from ``all`` down, each once, then ``_meta``."""
    hostvars = _hostvars(read)
    result: dict[str, Any] = {}
    sources = read.sources
    if sources is None:
        groups = read.inventory.groups
        result["all"] = {"children": ["ungrouped", *groups]}
        grouped = {h for members in groups.values() for h in members}
        ungrouped = [h for h in read.inventory.hosts if h not in grouped]
        if ungrouped:
            result["ungrouped"] = {"hosts": ungrouped}
        for name, members in groups.items():
            if members:
                result[name] = {"hosts": list(members)}
    else:
        _list_group(sources.graph, "all", result, set())
    result["_meta"] = {"hostvars": {h: v for h, v in hostvars.items() if v}}
    return result


def _list_group(graph: Graph, name: str, result: dict[str, Any], seen: set[str]) -> None:
    group = graph.groups[name]
    shown: dict[str, Any] = {}
    if name != "all" and group.hosts:
        shown["hosts"] = list(group.hosts)
    if group.children:
        shown["children"] = list(group.children)
    if shown:
        result[name] = shown
    for child in group.children:
        if child not in seen:
            seen.add(child)
            _list_group(graph, child, result, seen)


def graph_view(read: ReadInventory, top: str = "all") -> str:
    """``ansible-inventory --graph [GROUP]``."""
    sources = read.sources
    if sources is None:
        lines = ["@all:"]
        groups = read.inventory.groups
        grouped = {h for members in groups.values() for h in members}
        ungrouped = [h for h in read.inventory.hosts if h not in grouped]
        for name, members in {"ungrouped": tuple(ungrouped), **groups}.items():
            lines.append(f"  |--@{name}:")
            lines += [f"  |  |--{h}" for h in members]
        return "\n".join(lines)
    if top not in sources.graph.groups:
        known = ", ".join(sources.graph.groups)
        raise InputError(f"--graph {top}: no such group (groups: {known})")
    return "\n".join(_graph_lines(sources.graph, top, 0))


def _graph_lines(graph: Graph, name: str, depth: int) -> Iterator[str]:
    def shown(text: str, level: int) -> str:
        return "  |" * level + "--" + text if level else text

    yield shown(f"@{name}:", depth)
    group = graph.groups[name]
    for child in group.children:
        yield from _graph_lines(graph, child, depth + 1)
    if name != "all":
        for host in group.hosts:
            yield shown(host, depth + 1)


def host_view(read: ReadInventory, name: str) -> dict[str, Any]:
    """``ansible-inventory --host NAME`` plus ``nasplan`` and ``sources`` (module doc)."""
    hostvars = _hostvars(read)
    if name not in hostvars:
        known = ", ".join(sorted(hostvars)) or "none"
        raise InputError(f"{read.inventory.named}: no host {name!r} (hosts: {known})")
    shown: dict[str, Any] = dict(hostvars[name])
    host = read.inventory.hosts.get(name)
    if host is None:
        shown["nasplan"] = None
        shown["unusable"] = list(read.inventory.unusable.get(name, ()))
        return shown
    shown["nasplan"] = _nasplan_fields(host)
    shown["sources"] = _sources(read, host)
    return shown


def _sources(read: ReadInventory, host: Host) -> dict[str, str]:
    """nasplan field -> where it was set; a field nobody set -> where its default comes from."""
    found: dict[str, str] = {}
    parsed = read.parsed
    if parsed is not None:
        origins = parsed.hosts[host.name].origins
        for field in (*SHOWN, "volumes", "known_hosts", "ssh_config"):
            if field in origins:
                found[field] = at(origins[field])
        if "address" not in found:
            found["address"] = f"{at(parsed.hosts[host.name].where)} (the host's name)"
        for field, where in read.login.items():  # -u, --private-key, Ansible's defaults
            if field not in found:
                found[field] = where
    else:
        for field in _nasplan_fields(host):
            found[field] = read.login.get(field, host.origin)
    return found
