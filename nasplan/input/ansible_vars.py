"""``group_vars/`` and ``host_vars/`` beside an inventory source, found and read as Ansible's
``host_group_vars`` plugin finds them.

For a group or host NAME in ``BASE/group_vars`` (or ``host_vars``): the first of ``NAME``,
``NAME.yml``, ``NAME.yaml``, ``NAME.json`` that exists; a directory is read whole: its files with
no extension or one of those three, in sorted order, subdirectories without an extension the
same way, hidden names and names ending in ``~`` left out. Each file is a YAML (or JSON) mapping
of vars, an empty file none; a later file's var replaces an earlier one's. A name starting with
``/`` names no file, as in Ansible; nasplan also leaves names with ``..`` or a backslash alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import Layer, Origin
from nasplan.input.loader import parse_yaml
from nasplan.input.localfile import MAX_YAML_BYTES, read_bytes_bounded, text_of

VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")  # Ansible's order
MAX_VARS_FILES = 1000  # under one group's or host's directory
MAX_DEPTH = 16
VAULT_HEADER = b"$ANSIBLE_VAULT;"


class VarsDir:
    """The vars files of one source's directory ``base``, each read once."""

    def __init__(self, base: Path, bases: dict[Path, Path]) -> None:
        self.base = base
        self.bases = bases  # every document read -> the directory relative paths start from
        self.cache: dict[tuple[str, str], Layer] = {}

    def vars_of(self, kind: str, name: str) -> Layer:
        """The vars of ``kind`` (``group_vars`` or ``host_vars``) for ``name``, files merged."""
        key = (kind, name)
        if key not in self.cache:
            values: dict[str, Any] = {}
            origins: dict[str, Origin] = {}
            for path in self.files(kind, name):
                found_values, found_origins = vars_file(path)
                self.bases[path] = self.base
                values.update(found_values)
                origins.update(found_origins)
            self.cache[key] = (values, origins)
        return self.cache[key]

    def files(self, kind: str, name: str) -> list[Path]:
        """The files Ansible reads for ``name`` under ``base/kind``, in its order."""
        if not name or name.startswith("/") or ".." in name or "\\" in name:
            return []
        for extension in VARS_EXTENSIONS:
            candidate = self.base / kind / f"{name}{extension}"
            try:
                os.stat(candidate)
            except (FileNotFoundError, NotADirectoryError):
                if candidate.is_symlink():
                    return [candidate]  # dangling: read_yaml says so
                continue
            except OSError as exc:
                raise InputError(f"{candidate}: cannot read: {exc.strerror or exc}") from None
            if candidate.is_dir():
                found = _directory_files(candidate, 0)
                if len(found) > MAX_VARS_FILES:
                    raise InputError(f"{candidate}: more than {MAX_VARS_FILES} vars files")
                return found
            return [candidate]  # whatever it is: the bounded read says what is wrong with it
        return []


def _directory_files(directory: Path, depth: int) -> list[Path]:
    if depth >= MAX_DEPTH:
        raise InputError(f"{directory}: directories nested more than {MAX_DEPTH} deep")
    found: list[Path] = []
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name.endswith("~"):
            continue
        if entry.is_dir():
            if not entry.suffix:
                found.extend(_directory_files(entry, depth + 1))
        elif entry.suffix in VARS_EXTENSIONS:  # a FIFO or a dangling link: refused when read
            found.append(entry)
    return found


def vars_file(path: Path) -> Layer:
    """One vars file's vars and where each is set; an empty file has none."""
    data = read_bytes_bounded(path, MAX_YAML_BYTES, "vars file")
    if data.startswith(VAULT_HEADER):
        raise InputError(
            f"{path}:1:1: encrypted with ansible-vault: nasplan does not decrypt it; read the "
            "inventory through Ansible: --inventory-reader ansible"
        )
    document = parse_yaml(path, text_of(path, data))
    if document.data is None:
        return {}, {}
    if not isinstance(document.data, dict):
        raise InputError(document.error((), "a vars file must be a mapping of var: value"))
    return dict(document.data), {k: (document, (k,)) for k in document.data}
