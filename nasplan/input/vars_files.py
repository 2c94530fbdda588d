"""A plan's vars from outside its ``vars:``. ``vars_files:``, read as an Ansible play reads its
own: each file (relative to the plan) a YAML or JSON mapping of vars, a later file's var over an
earlier one's, all of them over the plan's ``vars:`` and under ``-e`` (Ansible's precedence:
play vars_files over play vars). And ``-e``: a warning for a var no template names."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, read_yaml

MAX_FILES = 100


def read_vars_files(document: Document) -> dict[str, Any]:
    """The vars of the plan's ``vars_files`` merged in order ({} when it names none); an
    InputError located at the plan's entry (a missing file) or in the file (not a mapping)."""
    named = (document.data or {}).get("vars_files") if isinstance(document.data, dict) else None
    if named is None:
        return {}
    if isinstance(named, str):
        named = [named]
    if not isinstance(named, list) or not all(isinstance(n, str) and n for n in named):
        raise InputError(document.error(("vars_files",), "expected a list of file names"))
    if len(named) > MAX_FILES:
        raise InputError(document.error(("vars_files",), f"more than {MAX_FILES} files"))
    merged: dict[str, Any] = {}
    for index, name in enumerate(named):
        path = Path(name).expanduser()
        path = path if path.is_absolute() else document.path.parent / path
        if "{{" in name:
            raise InputError(
                document.error(("vars_files", index), "a vars file's name cannot be a template")
            )
        if not path.exists():
            raise InputError(document.error(("vars_files", index), f"{path}: no such file"))
        read = read_yaml(path)
        if read.data is None:
            continue
        if not isinstance(read.data, dict):
            raise InputError(read.error((), "a vars file must be a mapping of var: value"))
        merged.update(read.data)
    return merged


class ExtraVars(dict[str, Any]):
    """``-e`` vars merged, knowing which were typed as ``-e KEY=VALUE`` (``typed``): only those
    are warned about when unused (a shared ``-e @vars.yml`` holds vars for other plays too)."""

    def __init__(self, merged: Mapping[str, Any], typed: frozenset[str]) -> None:
        super().__init__(merged)
        self.typed = typed


def unused_extra_vars(plan_texts: Sequence[str], given: Mapping[str, Any]) -> list[str]:
    """A warning for each ``-e`` var no template of the plan names (``vars.KEY``,
    ``vars['KEY']``), with the plan's names closest to it: ``-e duraton_s=2`` is a typo nasplan
    would otherwise pass over in silence. None when a template uses ``vars`` as a whole."""
    text = "\n".join(plan_texts)
    if _WHOLE_VARS.search(text):
        return []
    named = set(_NAMED_VAR.findall(text)) | set(_INDEXED_VAR.findall(text))
    warnings = []
    for key in given:
        if key not in named:
            close = difflib.get_close_matches(key, sorted(named), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            warnings.append(f"-e {key}: no template of the plan uses vars.{key}{hint}")
    return warnings


_NAMED_VAR = re.compile(r"\bvars\.([A-Za-z_][A-Za-z0-9_]*)")
_INDEXED_VAR = re.compile(r"\bvars\[\s*['\"]([^'\"]+)['\"]\s*\]")
# ``vars`` not followed by ``.name`` or ``['name']`` (``vars | dictsort``, ``vars[key]``)
_WHOLE_VARS = re.compile(r"\bvars\b(?!\s*(?:\.[A-Za-z_]|\[\s*['\"]|:))")
