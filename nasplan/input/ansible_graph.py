"""Ansible's inventory as ansible-core holds it: groups and hosts with their own vars, every
source added in turn, then each host's vars by Ansible's precedence.

The readers (nasplan.input.ansible_sources) call ``add_group``, ``add_host``, ``set_var`` and
``add_child`` in the order ansible-core's inventory plugins do, file after file; ``reconcile``
then puts every group without a parent under ``all`` and every host without a group in
``ungrouped``, and orders the groups. A host's vars, lowest precedence first (ansible-core's
default ``VARIABLE_PRECEDENCE``, then host vars):

1. the ``all`` group's vars from the inventory files;
2. its other groups' vars from the inventory files, by depth, ``ansible_group_priority``, name;
3. ``group_vars/all`` beside each source, sources in order;
4. ``group_vars/GROUP`` beside each source, sources in order, groups ordered as in 2;
5. the host's own vars from the inventory files (a later file over an earlier one);
6. ``host_vars/HOST`` beside each source, sources in order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath, format_json_path

Origin = tuple[Document, JsonPath]  # where a value was set: the file and its path there
KEY = "\0key"  # the loader's position of a mapping key rather than its value
Layer = tuple[dict[str, Any], dict[str, Origin]]  # vars and where each was set
MAX_HOSTS = 10_000  # in all the sources together: nasplan tests a few, not a fleet
MAX_GROUPS = 10_000


def _check_name(name: str, what: str, where: Origin) -> None:
    """InputError for a host or group name with a NUL byte (no file name can carry one:
    ``host_vars/NAME`` could not even be looked up)."""
    if "\0" in name:
        raise InputError(f"{at(where)}: {what} name {name!r} holds a NUL byte")


def at(origin: Origin) -> str:
    """``FILE:LINE:COL: json.path`` of an origin."""
    document, path = origin
    shown = path[:-1] if path and path[-1] == KEY else path
    return f"{document.where(path)}: {format_json_path(shown)}"


class VarsFiles(Protocol):
    """The ``group_vars/`` and ``host_vars/`` beside one inventory source."""

    def vars_of(self, kind: str, name: str) -> Layer:
        """The vars of ``kind`` (``group_vars`` or ``host_vars``) for ``name``, merged."""
        ...


@dataclass
class _Entry:
    """What a group and a host have alike: a name, where it first appears, its own vars and
    where each was set."""

    name: str
    where: Origin
    vars: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)


@dataclass
class Group(_Entry):
    """One group as the inventory files state it."""

    # dicts as ordered sets: a member is added or looked up in constant time (a list's
    # membership test made reading an inventory of many hosts quadratic)
    hosts: dict[str, None] = field(default_factory=dict)
    children: dict[str, None] = field(default_factory=dict)
    parents: list[str] = field(default_factory=list)
    child_where: dict[str, Origin] = field(default_factory=dict)
    priority: int = 1
    depth: int = 0


@dataclass
class HostEntry(_Entry):
    """One host: its own vars from the inventory files, its groups, where it first appears."""

    groups: dict[str, None] = field(default_factory=dict)


class Graph:
    """Every source's groups and hosts, merged as ansible-core's ``InventoryData`` merges them."""

    def __init__(self, where: Origin) -> None:
        self.groups: dict[str, Group] = {}
        self.hosts: dict[str, HostEntry] = {}
        self.add_group("all", where)
        self.add_group("ungrouped", where)
        self.add_child("all", "ungrouped", where)

    def add_group(self, name: str, where: Origin) -> Group:
        if not name:
            raise InputError(f"{at(where)}: a group needs a name")
        if name not in self.groups:
            _check_name(name, "group", where)
            if len(self.groups) >= MAX_GROUPS:
                raise InputError(f"{at(where)}: more than {MAX_GROUPS} groups in the inventory")
        return self.groups.setdefault(name, Group(name, where))

    def add_host(self, name: str, group: str | None, port: int | None, where: Origin) -> None:
        """A host (its ``ansible_port`` from ``host:port`` only where the host first appears,
        as Ansible's), member of ``group``."""
        if not name:
            raise InputError(f"{at(where)}: a host needs a name")
        if name not in self.hosts:
            if len(self.hosts) >= MAX_HOSTS:
                raise InputError(f"{at(where)}: more than {MAX_HOSTS} hosts in the inventory")
            _check_name(name, "host", where)
            self.hosts[name] = HostEntry(name, where)
            if port:
                self.set_var(name, "ansible_port", port, where, host=True)
        if group is not None:
            self.add_group(group, where)
            if name not in self.groups[group].hosts:
                self.groups[group].hosts[name] = None
                self.hosts[name].groups[group] = None

    def set_var(self, entity: str, key: str, value: Any, where: Origin, *, host: bool) -> None:
        """A host's or a group's own var; ``ansible_group_priority`` orders the group instead
        (Ansible keeps it out of the vars)."""
        if host:
            self.hosts[entity].vars[key] = value
            self.hosts[entity].origins[key] = where
            return
        group = self.groups[entity]
        if key == "ansible_group_priority":
            try:
                group.priority = int(value)
            except (TypeError, ValueError):
                raise InputError(f"{at(where)}: not an integer: {value!r}") from None
            return
        group.vars[key] = value
        group.origins[key] = where

    def add_child(self, parent: str, child: str, where: Origin) -> None:
        if child == "all":
            raise InputError(f"{at(where)}: group 'all' cannot be a child of {parent!r}")
        if parent == child:
            raise InputError(f"{at(where)}: group {child!r} cannot be its own child")
        self.add_group(parent, where)
        self.add_group(child, where)
        if child not in self.groups[parent].children:
            self.groups[parent].children[child] = None
            self.groups[parent].child_where[child] = where
            self.groups[child].parents.append(parent)

    def reconcile(self) -> None:
        """Groups without a parent under ``all``; hosts with no group but ``all`` in
        ``ungrouped``, hosts with another group out of it; every group's depth below ``all``
        (a loop of children is an InputError)."""
        for name, group in self.groups.items():
            if name != "all" and not group.parents:
                self.add_child("all", name, group.where)
        self._depths()
        ungrouped = self.groups["ungrouped"]
        for name, host in self.hosts.items():
            direct = set(host.groups)
            if "ungrouped" in direct:
                if self.ancestry(host) - {"all", "ungrouped"}:
                    del ungrouped.hosts[name]
                    del host.groups["ungrouped"]
            elif not direct - {"all"}:
                ungrouped.hosts[name] = None
                host.groups["ungrouped"] = None

    def _depths(self) -> None:
        """Each group's longest path below ``all`` (Ansible's ``depth``), in topological order."""
        waiting = {name: len(group.parents) for name, group in self.groups.items()}
        ready = [name for name, count in waiting.items() if count == 0]
        while ready:
            name = ready.pop()
            for child in self.groups[name].children:
                child_group = self.groups[child]
                child_group.depth = max(child_group.depth, self.groups[name].depth + 1)
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
        looped = [name for name, count in waiting.items() if count > 0]
        if looped:
            group = self.groups[looped[0]]
            parent = next(p for p in group.parents if waiting[p] > 0)
            where = self.groups[parent].child_where[looped[0]]
            raise InputError(f"{at(where)}: groups nest in a loop: {sorted(looped)}")

    def ancestry(self, host: HostEntry) -> set[str]:
        """The host's groups and all their ancestors, ``all`` included."""
        found, todo = {"all"}, list(host.groups)
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo.extend(self.groups[name].parents)
        return found

    def ordered_groups(self, host: HostEntry) -> list[str]:
        """The host's groups but ``all``, lowest precedence first (depth, priority, name)."""
        groups = self.ancestry(host) - {"all"}
        return sorted(groups, key=lambda g: (self.groups[g].depth, self.groups[g].priority, g))

    def layers(self, host: HostEntry, files: Sequence[VarsFiles]) -> Iterator[Layer]:
        """The host's vars in precedence order, lowest first (the module's list)."""
        ordered = self.ordered_groups(host)
        everyone = self.groups["all"]
        yield everyone.vars, everyone.origins
        for name in ordered:
            yield self.groups[name].vars, self.groups[name].origins
        for source in files:
            yield source.vars_of("group_vars", "all")
        for source in files:
            for name in ordered:
                yield source.vars_of("group_vars", name)
        yield host.vars, host.origins
        for source in files:
            yield source.vars_of("host_vars", host.name)

    def all_vars(self, files: Sequence[VarsFiles]) -> dict[str, Any]:
        """The ``all`` group's vars: the inventory files', then ``group_vars/all``'s."""
        merged = dict(self.groups["all"].vars)
        for source in files:
            merged.update(source.vars_of("group_vars", "all")[0])
        return merged


def merged(layers: Iterator[Layer]) -> Layer:
    """Layers merged, a later one replacing a whole var (Ansible's ``hash_behaviour: replace``)."""
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for layer_values, layer_origins in layers:
        values.update(layer_values)
        origins.update(layer_origins)
    return values, origins
