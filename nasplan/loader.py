"""Load YAML with source positions and validate it against nasplan's JSON Schemas.

Every problem is reported as ``FILE:LINE:COL: json.path: message`` so a user can jump to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from nasplan.errors import InputError

JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """A YAML document: its data, and where each JSON path starts in the file."""

    path: Path
    data: Any
    positions: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)

    def where(self, json_path: JsonPath) -> str:
        """``FILE:LINE:COL`` of the deepest known node on ``json_path`` (1-based)."""
        probe = tuple(json_path)
        while probe and probe not in self.positions:
            probe = probe[:-1]
        line, col = self.positions.get(probe, (1, 1))
        return f"{self.path}:{line}:{col}"

    def error(self, json_path: JsonPath, message: str) -> str:
        """A one-line error naming the file position, the JSON path and the message."""
        return f"{self.where(json_path)}: {format_json_path(json_path)}: {message}"


def format_json_path(json_path: JsonPath) -> str:
    """``('tests', 0, 'server')`` -> ``tests[0].server``; the empty path is ``(root)``."""
    out = ""
    for part in json_path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (a silent override hides typos)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node))


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _collect_positions(
    node: yaml.Node, json_path: JsonPath, out: dict[JsonPath, tuple[int, int]]
) -> None:
    out[json_path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            _collect_positions(value_node, (*json_path, key), out)
            # A key's own position is more useful than its value's for "unknown key" errors.
            out[(*json_path, key, "\0key")] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_positions(item, (*json_path, index), out)


def parse_yaml(path: Path, text: str) -> Document:
    """Parse YAML text into a Document; a syntax error becomes a one-line InputError."""
    try:
        node = yaml.compose(text, Loader=_UniqueKeyLoader)
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"{path}:{line}:{col}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}:1:1: YAML error: {exc}") from None
    positions: dict[JsonPath, tuple[int, int]] = {}
    if node is not None:
        _collect_positions(node, (), positions)
    return Document(path=path, data=data, positions=positions)


def read_yaml(path: Path) -> Document:
    """Read and parse a YAML file; a missing or unreadable file is a one-line InputError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    return parse_yaml(path, text)


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Load the JSON Schema ``name`` (``"plan"``, ``"inventory"``, ``"lab"``, ``"run"``)."""
    text = resources.files("nasplan").joinpath("schemas", f"{name}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def _describe(error: jsonschema.ValidationError) -> tuple[JsonPath, str, bool]:
    """(json path, message, whether the position is the key's rather than the value's)."""
    json_path: JsonPath = tuple(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "x-message" in schema:
        # A rule whose generic message ("True was expected") would not tell the user why.
        return json_path, str(schema["x-message"]), False
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            known = ", ".join(sorted(allowed)) or "none"
            key = extra[0]
            return (*json_path, key), f"unknown key {key!r} (known keys: {known})", True
    if error.validator == "required":
        message = str(error.message).replace("is a required property", "is required")
        return json_path, message, False
    if error.validator in ("oneOf", "anyOf") and "description" in schema:
        expected = schema["description"]
        return json_path, f"{error.instance!r} is not valid: expected {expected}", False
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _describe(jsonschema.exceptions.best_match(error.context))
    return json_path, str(error.message), False


def schema_errors(document: Document, schema_name: str) -> list[str]:
    """Validate ``document`` against a schema; one formatted line per problem, in file order."""
    schema = load_schema(schema_name)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    found: list[tuple[tuple[int, int], str]] = []
    for error in validator.iter_errors(document.data):
        json_path, message, at_key = _describe(error)
        key_pos = document.positions.get((*json_path, "\0key")) if at_key else None
        pos = key_pos or document.positions.get(json_path)
        where = f"{document.path}:{pos[0]}:{pos[1]}" if pos else document.where(json_path)
        found.append((pos or (0, 0), f"{where}: {format_json_path(json_path)}: {message}"))
    return [line for _, line in sorted(set(found))]


def load_validated(path: Path, schema_name: str) -> Document:
    """Read ``path`` and validate it against ``schema_name``; raise InputError listing problems."""
    document = read_yaml(path)
    errors = schema_errors(document, schema_name)
    if errors:
        raise InputError(errors)
    return document
