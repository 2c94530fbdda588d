"""Where an Ansible inventory comes from: each ``-i`` read in Ansible's order into one graph.

A source is a file, a directory of inventory files, or a comma-separated host list
(``-i 'nas,ws:2222,'``). Several sources are read in the order given, each adding to the groups,
hosts and vars of those before (a later value over an earlier one). A directory is read as
ansible-core reads one: its entries in sorted order, subdirectories the same way, leaving out
hidden entries, ``group_vars``, ``host_vars``, ``vars_plugins`` and names ending in ``~``,
``.orig``, ``.cfg``, ``.retry``, ``.bak``, ``.swp``, ``.md``, ``.txt``, ``.rst``, ``.rpm``,
``.pyc``, ``.pyo`` (``.ini`` and ``.yml`` files are read).

Each file is tried as Ansible's inventory plugins try it: an executable starting with ``#!`` is
an inventory script, a ``.yml`` / ``.yaml`` file with a ``plugin:`` key an inventory plugin's
configuration, a ``.toml`` file a TOML inventory (nasplan reads none of the three itself:
``--inventory-reader ansible`` does); a file with no extension or ``.yml``, ``.yaml``, ``.json``
whose YAML is a mapping is a YAML inventory (or ``ansible-inventory --list`` JSON); any other is
INI. ``group_vars/`` and ``host_vars/`` are looked up beside each source (in the directory a
directory source is, beside a file source) by nasplan.input.ansible_vars.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import KEY, Graph, Origin
from nasplan.input.ansible_ini import read_ini
from nasplan.input.ansible_patterns import expand_pattern, parse_address
from nasplan.input.ansible_vars import VAULT_HEADER, VarsDir
from nasplan.input.loader import Document, JsonPath, parse_yaml, schema_errors, yaml_root_is_mapping
from nasplan.input.localfile import MAX_YAML_BYTES, read_bytes_bounded, text_of

_IGNORED_SUFFIXES = (
    *(".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst"),
    *(".orig", ".cfg", ".retry"),
)
_IGNORED = re.compile(
    r"^\.|^host_vars$|^group_vars$|^vars_plugins$|(?:"
    + "|".join(re.escape(s) for s in _IGNORED_SUFFIXES)
    + r")$"
)
YAML_SUFFIXES = ("", ".yml", ".yaml", ".json")
MAX_FILES = 1000  # inventory files in all the sources together
MAX_DEPTH = 16  # directories within a directory source
REFUSED_READER = "read it through Ansible: --inventory-reader ansible"


@dataclass
class Sources:
    """What the sources gave: the graph, the vars beside each source, the first document (for
    messages about the whole), and each document's source directory (relative paths)."""

    graph: Graph
    given: tuple[Path, ...] = ()
    vars_dirs: list[VarsDir] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    bases: dict[Path, Path] = field(default_factory=dict)
    native: Document | None = None  # a single nasplan inventory, read as such

    def base_of(self, document: Document) -> Path:
        """The directory a value set in ``document`` is relative to: its source's."""
        first = self.documents[0].path.parent if self.documents else Path()
        return self.bases.get(document.path, first)


def is_list_form(data: Mapping[str, Any]) -> bool:
    """Whether a parsed document is ``ansible-inventory --list`` output."""
    all_group = data.get("all")
    return "_meta" in data or (
        isinstance(all_group, dict) and isinstance(all_group.get("children"), list)
    )


def is_native(data: Any) -> bool:
    """Whether a parsed document is a nasplan inventory (top-level ``hosts`` or ``groups``)."""
    if not isinstance(data, dict) or is_list_form(data):
        return False
    return "hosts" in data or "groups" in data


def read_sources(sources: Sequence[Path], playbook_dir: Path | None = None) -> Sources:
    """Every source read in order into one graph, reconciled; InputError at the first file
    Ansible would not read or nasplan refuses (each with its FILE:LINE:COL). ``playbook_dir``:
    the directory whose ``group_vars/`` and ``host_vars/`` Ansible reads after the sources' own
    (the playbook's, ``--playbook-dir``, or the current one for ``ansible-inventory``)."""
    first = Document(Path(str(sources[0])), None)
    read = Sources(Graph((first, ())), tuple(sources))
    files = 0
    for source in sources:
        kind = _kind(source)
        if kind is None and "," in str(source):
            read.documents.append(_host_list(str(source), read.graph))
            continue
        base = source if kind == "directory" else source.parent
        read.vars_dirs.append(VarsDir(base, read.bases))
        for path in _inventory_files(source) if kind == "directory" else [source]:
            files += 1
            if files > MAX_FILES:
                raise InputError(f"{source}: more than {MAX_FILES} inventory files")
            document = _read_file(path, read, alone=len(sources) == 1 and path == source)
            if read.native is not None:
                return read
            read.documents.append(document)
            read.bases[document.path] = base
    if playbook_dir is not None:
        # Ansible's "playbook group_vars" come after the inventory's at each level (all, groups,
        # hosts): the last vars directory in the graph's layers
        read.vars_dirs.append(VarsDir(playbook_dir, read.bases))
    read.graph.reconcile()
    return read


def _kind(path: Path) -> str | None:
    """``directory``, ``file`` (or anything else read as one, to be refused there), or None
    where nothing is (a dangling link too); a name the system refuses is an InputError."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return "directory" if stat.S_ISDIR(info.st_mode) else "file"


def _inventory_files(directory: Path, depth: int = 0) -> list[Path]:
    """A directory's entries in sorted order, Ansible's ignored names left out,
    subdirectories read the same way."""
    if depth >= MAX_DEPTH:
        raise InputError(f"{directory}: directories nested more than {MAX_DEPTH} deep")
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise InputError(f"{directory}: cannot read the directory: {exc.strerror or exc}") from None
    found: list[Path] = []
    for name in names:
        if not _IGNORED.search(name):
            path = directory / name
            if _kind(path) == "directory":
                found.extend(_inventory_files(path, depth + 1))
            else:
                found.append(path)
    return found


def _read_file(path: Path, read: Sources, *, alone: bool) -> Document:
    """One inventory file into the graph, tried as Ansible's plugins try it (module doc)."""
    data = read_bytes_bounded(path, MAX_YAML_BYTES, "inventory file")
    if data.startswith((b"#!", b"\x7fELF")) and os.access(path, os.X_OK):
        raise InputError(
            f"{path}:1:1: an inventory script (executable): nasplan does not run it; "
            f"{REFUSED_READER}"
        )
    if data.lstrip().startswith(VAULT_HEADER):
        raise InputError(
            f"{path}:1:1: an inventory encrypted with ansible-vault: nasplan does not decrypt "
            f"it; {REFUSED_READER} (with the vault password as Ansible finds it)"
        )
    if path.suffix == ".toml":
        message = f"{path}:1:1: a TOML inventory: nasplan does not read TOML; {REFUSED_READER}"
        raise InputError(message)
    text = text_of(path, data)
    yaml_error: InputError | None = None
    if path.suffix in YAML_SUFFIXES:
        try:
            document = parse_yaml(path, text)
        except InputError as exc:
            yaml_error = exc
        else:
            if isinstance(document.data, dict) and document.data:
                return _read_yaml(document, read, alone=alone)
    try:
        return read_ini(path, text, read.graph)
    except InputError as ini_error:
        looks_yaml = path.suffix in YAML_SUFFIXES[1:] or yaml_root_is_mapping(text)
        raise (yaml_error if yaml_error is not None and looks_yaml else ini_error) from None


def _read_yaml(document: Document, read: Sources, *, alone: bool) -> Document:
    """A YAML mapping: an inventory plugin's configuration (refused), ``--list`` JSON, a
    nasplan inventory (only alone), or Ansible's YAML inventory."""
    data: dict[str, Any] = document.data
    if data.get("plugin"):
        plugin = data["plugin"]
        message = f"an inventory plugin's configuration (plugin: {plugin}): {REFUSED_READER}"
        raise InputError(document.error(("plugin",), message))
    if is_list_form(data):
        read_list(document, read.graph)
    elif is_native(data):
        if not alone:
            message = (
                "a nasplan inventory (top-level hosts:) is read alone, not merged with other "
                "inventories: name only it, or write it as an Ansible inventory"
            )
            raise InputError(document.error(("hosts" if "hosts" in data else "groups",), message))
        read.native = document
    else:
        errors = schema_errors(document, "inventory-ansible")
        if errors:
            raise InputError(errors)
        for name, spec in data.items():
            _yaml_group(document, read.graph, name, spec, (name,))
    return document


def _yaml_group(document: Document, graph: Graph, name: str, spec: Any, path: JsonPath) -> None:
    """One group of a YAML inventory, as Ansible's ``yaml`` plugin walks it (keys in order;
    ``hosts:`` or ``children:`` may name a single one as a string)."""
    graph.add_group(name, (document, (*path, KEY)))
    for key, value in (spec or {}).items():
        section = {value: None} if isinstance(value, str) else value or {}
        where = (*path, key)
        if key == "vars":
            for var, var_value in section.items():
                graph.set_var(name, var, var_value, (document, (*where, var)), host=False)
        elif key == "children":
            for child, child_spec in section.items():
                _yaml_group(document, graph, child, child_spec, (*where, child))
                graph.add_child(name, child, (document, (*where, child, KEY)))
        elif key == "hosts":
            for pattern, host_vars in section.items():
                _yaml_host(document, graph, name, pattern, host_vars or {}, (*where, pattern))


def _yaml_host(
    document: Document,
    graph: Graph,
    group: str,
    pattern: str,
    host_vars: Mapping[str, Any],
    path: JsonPath,
) -> None:
    try:
        names, port = expand_pattern(pattern)
    except ValueError as exc:
        raise InputError(document.error((*path, KEY), str(exc))) from None
    for host in names:
        graph.add_host(host, group, port, (document, (*path, KEY)))
        for key, value in host_vars.items():
            graph.set_var(host, key, value, (document, (*path, key)), host=True)


def read_list(document: Document, graph: Graph) -> None:
    """``ansible-inventory --list`` (or ``--export``) JSON into the graph."""
    data: dict[str, Any] = document.data
    errors: list[str] = []

    def expect(value: Any, kind: type, path: JsonPath, what: str) -> bool:
        if isinstance(value, list):
            if kind is list and all(isinstance(v, str) for v in value):
                return True
        elif isinstance(value, kind):
            return True
        errors.append(document.error(path, f"expected {what}"))
        return False

    meta = data.get("_meta") or {}
    hostvars = meta.get("hostvars") or {} if isinstance(meta, dict) else {}
    if expect(hostvars, dict, ("_meta", "hostvars"), "a mapping of host -> vars"):
        for host, host_vars in hostvars.items():
            where: JsonPath = ("_meta", "hostvars", host)
            graph.add_host(host, None, None, (document, (*where, KEY)))
            if expect(host_vars or {}, dict, where, "a mapping of vars"):
                for key, value in (host_vars or {}).items():
                    graph.set_var(host, key, value, (document, (*where, key)), host=True)
    for name, spec in data.items():
        what = "a group: hosts, children, vars"
        if name == "_meta" or not expect(spec or {}, dict, (name,), what):
            continue
        spec = spec or {}
        graph.add_group(name, (document, (name, KEY)))
        if expect(spec.get("hosts") or [], list, (name, "hosts"), "a list of host names"):
            for index, host in enumerate(spec.get("hosts") or []):
                graph.add_host(host, name, None, (document, (name, "hosts", index)))
        if expect(spec.get("children") or [], list, (name, "children"), "a list of group names"):
            for index, child in enumerate(spec.get("children") or []):
                graph.add_child(name, child, (document, (name, "children", index)))
        if expect(spec.get("vars") or {}, dict, (name, "vars"), "a mapping of vars"):
            for key, value in (spec.get("vars") or {}).items():
                graph.set_var(name, key, value, (document, (name, "vars", key)), host=False)
    if errors:
        raise InputError(errors)


def _host_list(text: str, graph: Graph) -> Document:
    """``-i 'nas,ws:2222,'``: hosts in ``ungrouped`` (Ansible's ``host_list``: no ranges)."""
    document = Document(Path(text), None)
    origin: Origin = (document, ())
    for item in (part.strip() for part in text.split(",")):
        if item:
            try:
                host, port = parse_address(item)
            except ValueError:
                host, port = item, None
            if "[" in host:
                host, port = item, None
            graph.add_host(host, "ungrouped", port, origin)
    return document
