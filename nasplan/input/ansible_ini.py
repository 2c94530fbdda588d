"""Ansible's INI inventory, read into the inventory graph by ansible-core's ``ini`` plugin rules.

``[group]`` sections of host lines, ``[group:vars]`` of ``key=value`` lines,
``[group:children]`` of group names; hosts before any section are ``ungrouped``; ``#`` and ``;``
start a comment line. A host line is split as a shell would (quotes keep spaces, ``#`` starts a
comment) and may carry ``key=value`` vars, ``host:port`` and ranges
(nasplan.input.ansible_patterns). A value is read as a Python literal where it is one (``22`` a
number, ``"a b"`` a string, ``True`` a boolean, ``[1, 2]`` a list) and as its text otherwise
(``yes``, ``true``, ``a b``), in host lines and in ``:vars`` sections alike: ansible-core does so
in both, although Ansible's guide says ``:vars`` values are strings.

A group named in ``[g:vars]`` or ``[g:children]`` must be declared somewhere in the file (or by
an earlier source) by ``[g]`` or ``[g:children]``. Positions: a host's var at
``_meta.hostvars.HOST.KEY``, a group's at ``GROUP.vars.KEY``, as ``ansible-inventory --list``
would place them.
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import KEY, Graph, Origin
from nasplan.input.ansible_patterns import expand_pattern
from nasplan.input.loader import Document, JsonPath

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")


def parse_value(text: str) -> Any:
    """An INI value as ansible-core reads it: a Python literal, else the text itself."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _plain(value)


def _plain(value: Any) -> Any:
    """What JSON can carry: tuples and sets as lists, bytes as text, others as Ansible does."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    return value


@dataclass
class _Pending:
    """A group named before it is declared: by ``[g:vars]`` or as a child of ``parents``."""

    line: int
    state: str
    parents: list[str] = field(default_factory=list)


class _Reader:
    """One INI file read line by line into the graph, with the position of each value."""

    def __init__(self, document: Document, graph: Graph) -> None:
        self.document = document
        self.graph = graph
        self.pending: dict[str, _Pending] = {}

    def fail(self, line: int, col: int, message: str) -> InputError:
        return InputError(f"{self.document.path}:{line}:{col}: {message}")

    def at(self, path: JsonPath, line: int, col: int, *, first: bool = False) -> Origin:
        """The origin of ``path``, its position recorded (``first``: only where first seen)."""
        if not first or path not in self.document.positions:
            self.document.positions[path] = (line, col)
        return self.document, path

    def section(self, name: str, kind: str, line: int) -> None:
        if kind not in ("hosts", "children", "vars"):
            raise self.fail(line, 1, f"section [{name}:{kind}] has unknown type: {kind}")
        if name not in self.graph.groups:
            if kind == "vars" and name not in self.pending:
                self.pending[name] = _Pending(line, "vars")
            self.graph.add_group(name, self.at((name, KEY), line, 1, first=True))
        waiting = self.pending.get(name)
        if waiting is not None and kind != "vars":
            self._declared(name)

    def _declared(self, name: str) -> None:
        """A pending group declared: into the parents that named it as a child."""
        waiting = self.pending.pop(name)
        if waiting.state != "children":
            return
        for parent in waiting.parents:
            self.graph.add_child(parent, name, self.at((parent, "children", name), waiting.line, 1))
            if parent in self.pending and self.pending[parent].state == "children":
                self._declared(parent)

    def host_line(self, group: str, text: str, line: int, col: int) -> None:
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as exc:
            raise self.fail(line, col, f"cannot split the host line: {exc}") from None
        if not tokens:
            return
        pattern = tokens[0]
        try:
            names, port = expand_pattern(pattern)
        except ValueError as exc:
            raise self.fail(line, col, str(exc)) from None
        if pattern.strip().endswith(":") and port is None:
            raise self.fail(line, col, f"host {pattern!r} ends in ':' (reserved for a port)")
        if "---" in (name.strip() for name in names):
            raise self.fail(line, col, "a host named '---': is this a YAML file with an error?")
        host_vars: list[tuple[str, Any, int]] = []
        for token in tokens[1:]:
            key, equals, value = token.partition("=")
            found = max(text.find(f"{key}=" if equals else token), 0) + col
            if not equals or not key:
                raise self.fail(line, found, f"expected key=value host variable, got: {token}")
            host_vars.append((key, parse_value(value), found))
        for name in names:
            where = self.at(("_meta", "hostvars", name), line, col, first=True)
            self.graph.add_host(name, group, port, where)
            for key, value, found in host_vars:
                where = self.at(("_meta", "hostvars", name, key), line, found)
                self.graph.set_var(name, key, value, where, host=True)

    def var_line(self, group: str, text: str, line: int, col: int) -> None:
        key, equals, value = text.partition("=")
        if not equals:
            raise self.fail(line, col, f"expected key=value, got: {text}")
        key = key.strip()
        where = self.at((group, "vars", key), line, col)
        self.graph.set_var(group, key, parse_value(value.strip()), where, host=False)

    def child_line(self, group: str, text: str, line: int, col: int) -> None:
        match = _GROUP_NAME.match(text)
        if not match:
            raise self.fail(line, col, f"expected a group name, got: {text}")
        child = match.group(1)
        if child in self.graph.groups:
            self.graph.add_child(group, child, self.at((group, "children", child), line, col))
        elif child in self.pending:
            self.pending[child].parents.append(group)
        else:
            self.pending[child] = _Pending(line, "children", [group])

    def undeclared(self) -> InputError | None:
        """The first group named and never declared, as Ansible reports it."""
        for name, waiting in self.pending.items():
            if waiting.state == "vars":
                return self.fail(waiting.line, 1, f"[{name}:vars] names undefined group {name!r}")
            parent = waiting.parents[-1]
            message = f"[{parent}:children] includes undefined group {name!r}"
            return self.fail(waiting.line, 1, message)
        return None


def read_ini(path: Path, text: str, graph: Graph) -> Document:
    """Read INI inventory text into ``graph``; a line Ansible would refuse is a FILE:LINE:COL
    InputError. The Document returned holds the positions of what was read."""
    document = Document(path=path, data=None, positions={})
    reader = _Reader(document, graph)
    group, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        col = len(raw) - len(raw.lstrip()) + 1
        section = _SECTION.match(line)
        if section:
            group, kind = section.group(1), section.group(2) or "hosts"
            reader.section(group, kind, number)
        elif line.startswith("[") and line.endswith("]"):
            message = f"invalid section {line!r} (no spaces or other characters in a section name)"
            raise reader.fail(number, col, message)
        elif kind == "hosts":
            reader.host_line(group, line, number, col)
        elif kind == "vars":
            reader.var_line(group, line, number, col)
        else:
            reader.child_line(group, line, number, col)
    problem = reader.undeclared()
    if problem is not None:
        raise problem
    return document
