"""``-e``: extra vars from the command line, as Ansible reads them.

``-e KEY=VALUE`` (the value a YAML scalar), ``-e @vars.yml`` (a YAML or JSON file of vars, read
boundedly, errors located in it), ``-e '{"json": 1}'`` or ``-e '{yaml: flow}'`` (a mapping).
Repeated ``-e`` merge left to right, a later one replacing a whole var (Ansible's default
``hash_behaviour: replace``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, located, parse_yaml, read_yaml
from nasplan.input.plan import parse_extra_var
from nasplan.input.vars_files import ExtraVars


def _mapping(document: Document, what: str) -> dict[str, Any]:
    """The document's vars; an InputError located in it when it is not a mapping."""
    if document.data is None:
        return {}
    if not isinstance(document.data, dict):
        raise InputError(document.error((), f"{what}: expected a mapping of vars (KEY: VALUE)"))
    return dict(document.data)


def one_extra_var(text: str) -> dict[str, Any]:
    """The vars of one ``-e`` argument: ``@FILE``, ``{...}`` (a mapping) or ``KEY=VALUE``."""
    if text.startswith("@"):
        name = text[1:]
        if not name:
            raise InputError("-e @: expected a file name after @ (-e @vars.yml)")
        try:
            document = read_yaml(Path(name))
        except InputError as exc:
            # a problem of the file itself (not found, a directory, a FIFO) names the argument
            raise InputError(
                [line if located(line) else f"-e {text}: {line}" for line in exc.messages]
            ) from None
        return _mapping(document, f"-e {text}")
    if text.lstrip().startswith(("{", "[")):
        return _mapping(parse_yaml(Path("-e"), text), "-e")
    if "=" not in text:
        raise InputError(f"-e {text!r}: expected KEY=VALUE, @FILE or a mapping ({{KEY: VALUE}})")
    key, value = parse_extra_var(text)
    return {key: value}


def extra_vars(texts: Sequence[str]) -> ExtraVars:
    """Every ``-e`` of the command line, merged left to right (a later var wins), knowing
    which were typed as ``KEY=VALUE``."""
    merged: dict[str, Any] = {}
    typed: set[str] = set()
    for text in texts:
        found = one_extra_var(text)
        merged.update(found)
        typed = (typed | set(found)) if _is_typed(text) else typed - set(found)
    return ExtraVars(merged, frozenset(typed))


def _is_typed(text: str) -> bool:
    return not text.startswith("@") and not text.lstrip().startswith(("{", "["))
