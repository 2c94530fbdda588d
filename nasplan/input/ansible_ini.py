"""Ansible's INI inventory -> a Document in the shape of ``ansible-inventory --list``.

Read by the rules of ansible-core's ``ini`` inventory plugin: ``[group]`` sections of host lines,
``[group:vars]`` of ``key=value`` lines, ``[group:children]`` of group names; hosts before any
section are ``ungrouped``; ``#`` and ``;`` start a comment line. A host line is split as a shell
would (quotes keep spaces) and may carry ``key=value`` vars, ``host:port`` and ranges
(``www[01:50].example.com``, ``db-[a:f]``, ``[1:9:2]``), expanded here. A value is read as a
Python literal where it is one (``22`` a number, ``"a b"`` a string, ``[1, 2]`` a list) and as
its text otherwise, in host lines and in ``:vars`` sections alike: ansible-core does so in both,
although Ansible's guide says ``:vars`` values are strings.

The Document's data is ``{"_meta": {"hostvars": {host: vars}}, group: {"hosts": [...],
"children": [...], "vars": {...}}}``, its positions the line and column each value came from.
"""

from __future__ import annotations

import ast
import re
import shlex
import string
import warnings
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")
_HOST_PORT = re.compile(r"^(.+):(\d+)$")
_BRACKETED_IPV6 = re.compile(r"^\[([0-9a-fA-F:.]+)\](?::(\d+))?$")
MAX_RANGE_HOSTS = 10_000  # what one host line may expand to


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


def expand_range(pattern: str) -> list[str]:
    """``www[01:03].lan`` -> ``www01.lan www02.lan www03.lan`` (Ansible's host ranges).

    Raises ValueError with what is wrong (bounds, unequal widths, over MAX_RANGE_HOSTS hosts).
    """
    pending, out = [pattern], []
    while pending:
        name = pending.pop(0)
        if "[" not in name:
            out.append(name)
            continue
        head, _, rest = name.partition("[")
        bounds_text, closed, tail = rest.partition("]")
        if not closed:
            raise ValueError(f"host range not closed with ']': {pattern}")
        bounds = bounds_text.split(":")
        if len(bounds) not in (2, 3):
            raise ValueError(f"host range must be begin:end or begin:end:step: [{bounds_text}]")
        begin, end = bounds[0] or "0", bounds[1]
        if not end:
            raise ValueError(f"host range must specify end value: [{bounds_text}]")
        try:
            step = int(bounds[2]) if len(bounds) == 3 else 1
            width = len(begin) if begin[0] == "0" and len(begin) > 1 else 0
            if width and width != len(end):
                raise ValueError("host range must specify equal-length begin and end formats")
            if begin in string.ascii_letters and end in string.ascii_letters:
                first, last = string.ascii_letters.index(begin), string.ascii_letters.index(end)
                if first > last:
                    raise ValueError("host range must have begin <= end")
                parts = list(string.ascii_letters[first : last + 1 : step])
            else:
                numbers = range(int(begin), int(end) + 1, step)
                if len(numbers) > MAX_RANGE_HOSTS:
                    raise ValueError(f"more than {MAX_RANGE_HOSTS} hosts")
                parts = [str(n).zfill(width) for n in numbers]
        except ValueError as exc:
            raise ValueError(f"host range [{bounds_text}] in {pattern}: {exc}") from None
        pending = [f"{head}{part}{tail}" for part in parts] + pending
        if len(out) + len(pending) > MAX_RANGE_HOSTS:
            raise ValueError(f"host range {pattern} expands to more than {MAX_RANGE_HOSTS} hosts")
    return out


def split_port(pattern: str) -> tuple[str, int | None]:
    """``nas:2222`` -> (``nas``, 2222); ``[fe80::1]:22`` -> (``fe80::1``, 22); IPv6 has no port."""
    bracketed = _BRACKETED_IPV6.match(pattern)
    if bracketed:
        return bracketed.group(1), int(bracketed.group(2)) if bracketed.group(2) else None
    outside = re.sub(r"\[[^\]]*\]", "", pattern)  # a range's colons are not a port's
    match = _HOST_PORT.match(pattern)
    if match and outside.count(":") == 1:
        return match.group(1), int(match.group(2))
    return pattern, None


class _Reader:
    """One INI file read line by line into --list form with positions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {"_meta": {"hostvars": {}}}
        self.positions: dict[JsonPath, tuple[int, int]] = {}
        self.defined: set[str] = {"all", "ungrouped"}  # Ansible's implicit groups
        self.pending: dict[str, tuple[str, int]] = {}  # group -> (what named it, line)

    def fail(self, line: int, col: int, message: str) -> InputError:
        return InputError(f"{self.path}:{line}:{col}: {message}")

    def group(self, name: str, line: int) -> dict[str, Any]:
        if name not in self.data:
            self.data[name] = {"hosts": [], "children": [], "vars": {}}
            self.positions[(name,)] = (line, 1)
        group: dict[str, Any] = self.data[name]
        return group

    def section(self, name: str, kind: str, line: int) -> None:
        if kind not in ("hosts", "children", "vars"):
            raise self.fail(line, 1, f"section [{name}:{kind}] has unknown type: {kind}")
        if name not in self.defined:
            if kind == "vars":
                self.pending.setdefault(name, (f"[{name}:vars] names undefined group", line))
            self.defined.add(name)
            self.group(name, line)
        if kind != "vars" and name in self.pending:
            del self.pending[name]

    def host_line(self, group: str, text: str, line: int, col: int) -> None:
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as exc:
            raise self.fail(line, col, f"cannot split the host line: {exc}") from None
        pattern = tokens[0]
        name_pattern, port = split_port(pattern)
        if pattern.endswith(":") and port is None:
            raise self.fail(line, col, f"host {pattern!r} ends in ':' (reserved for a port)")
        try:
            names = expand_range(name_pattern)
        except ValueError as exc:
            raise self.fail(line, col, str(exc)) from None
        if "---" in names:
            raise self.fail(line, col, "a host named '---': is this a YAML file with an error?")
        host_vars: dict[str, tuple[Any, int]] = {}
        if port is not None:
            host_vars["ansible_port"] = (port, col)
        for token in tokens[1:]:
            key, equals, value = token.partition("=")
            at = max(text.find(f"{key}=" if equals else token), 0) + col
            if not equals or not key:
                raise self.fail(line, at, f"expected key=value host variable, got: {token}")
            host_vars[key] = (parse_value(value), at)
        members: list[str] = self.group(group, line)["hosts"]
        hostvars = self.data["_meta"]["hostvars"]
        for name in names:
            if name not in members:
                self.positions[(group, "hosts", len(members))] = (line, col)
                members.append(name)
            if name not in hostvars:
                hostvars[name] = {}
                self.positions[("_meta", "hostvars", name)] = (line, col)
            for key, (value, at) in host_vars.items():
                hostvars[name][key] = value
                self.positions[("_meta", "hostvars", name, key)] = (line, at)

    def var_line(self, group: str, text: str, line: int, col: int) -> None:
        key, equals, value = text.partition("=")
        if not equals:
            raise self.fail(line, col, f"expected key=value, got: {text}")
        key = key.strip()
        self.group(group, line)["vars"][key] = parse_value(value.strip())
        self.positions[(group, "vars", key)] = (line, col)

    def child_line(self, group: str, text: str, line: int, col: int) -> None:
        match = _GROUP_NAME.match(text)
        if not match:
            raise self.fail(line, col, f"expected a group name, got: {text}")
        child = match.group(1)
        children: list[str] = self.group(group, line)["children"]
        if child not in self.defined:
            self.pending.setdefault(child, (f"[{group}:children] includes undefined group", line))
        if child not in children:
            self.positions[(group, "children", len(children))] = (line, col)
            children.append(child)


def parse_ini(path: Path, text: str) -> Document:
    """Parse INI inventory text; a line Ansible would refuse is a FILE:LINE:COL InputError."""
    reader = _Reader(path)
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
    for name, (what, number) in sorted(reader.pending.items(), key=lambda item: item[1][1]):
        raise reader.fail(number, 1, f"{what} {name!r}")
    return Document(path=path, data=reader.data, positions=reader.positions)
