"""Load YAML with source positions and validate it against nasplan's JSON Schemas.

Every problem is reported as ``FILE:LINE:COL: json.path: message`` so a user can jump to it.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from nasplan.errors import InputError, NasplanError
from nasplan.input import schema_memo
from nasplan.input.localfile import MAX_YAML_BYTES, read_text_bounded

if TYPE_CHECKING:  # imported where a document is validated (schema_memo: not every time)
    import jsonschema

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


# ``FILE:LINE:COL: rest``; a file name holds no ": " (what follows the position starts so).
_LOCATED = re.compile(r"^(?P<file>(?:(?!: ).)+?):(?P<line>\d+):(?P<column>\d+): (?P<rest>.*)$")
# what format_json_path writes: ``tests[0].server``, ``(root)``; never a space
_JSON_PATH = re.compile(r"^(\(root\)|[^\s:\[\].]+(\[\d+\]|\.[^\s:\[\].]+)*)$")
# what a matrix cell's error says after the position (nasplan.input.matrix.CellDocument)
_CELL = re.compile(
    r"^(?P<test>tests\[\d+\]) (?P<id>[^\s:]+): (?:(?P<key>[^\s:\[\]]+): )?(?P<message>.*)$"
)


@dataclass(frozen=True)
class Located:
    """A located error line taken apart: ``FILE:LINE:COL: json.path: message`` (``path`` None
    where the line names none, as a YAML syntax error)."""

    file: str
    line: int
    column: int
    path: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def located(text: str) -> Located | None:
    """``text`` as a Located when it is in the ``FILE:LINE:COL: ...`` form, else None."""
    match = _LOCATED.match(text)
    if match is None:
        return None
    head, sep, tail = match["rest"].partition(": ")
    path, message = (head, tail) if sep and _JSON_PATH.match(head) else (None, match["rest"])
    cell = _CELL.match(match["rest"]) if path is None else None
    if cell is not None:  # a matrix cell's test: ``tests[0] smb[size=1GiB]: size: message``
        path = f"{cell['test']}.{cell['key']}" if cell["key"] else cell["test"]
        message = f"{cell['id']}: {cell['message']}"
    return Located(match["file"], int(match["line"]), int(match["column"]), path, message)


def user_lines(exc: NasplanError) -> list[str]:
    """What the command line prints for an error: a located input error exactly as
    ``FILE:LINE:COL: json.path: message`` (the form editors and CI match), any other line
    as ``nasplan: message``."""
    lines = exc.messages if isinstance(exc, InputError) else str(exc).splitlines()
    is_input = isinstance(exc, InputError)
    return [
        line if is_input and located(line) else f"nasplan: {line}"
        for line in lines or [type(exc).__name__]
    ]


def format_json_path(json_path: JsonPath) -> str:
    """``('tests', 0, 'server')`` -> ``tests[0].server``; the empty path is ``(root)``."""
    out = ""
    for part in json_path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


# Bounds on what a YAML document may expand to (``MAX_YAML_BYTES`` bounds the text itself).
MAX_DEPTH = 64
MAX_ALIAS_NODES = 50_000
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Tags whose Python values (bytes, sets, dates) nasplan's JSON files and schemas cannot carry.
_REFUSED_TAGS = ("binary", "set", "omap", "pairs", "timestamp")


class _UniqueKeyLoader(_BaseLoader):  # type: ignore[misc,valid-type]  # libyaml when available
    """SafeLoader that refuses duplicate and non-string mapping keys (a silent override hides
    typos; ``on:`` would be the boolean True) and reads dates as plain strings."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _MERGE_TAG:
            continue  # ``<<: *defaults``: flatten_mapping merges it below
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
            shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a collection"
            raise yaml.constructor.ConstructorError(
                None, None, f"mapping key {shown!r} is not a string (quote it)", key_node.start_mark
            )
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node))


def _refuse_tag(loader: _UniqueKeyLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"YAML tag {node.tag.rsplit(':', 1)[-1]!r} is not supported here",
        node.start_mark,
    )


def _vault(loader: _UniqueKeyLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        "a value encrypted with ansible-vault (!vault): nasplan does not decrypt it (in an "
        "inventory: encrypt the whole vars file instead, and read it with --inventory-reader "
        "ansible)",
        node.start_mark,
    )


def _unsafe(loader: _UniqueKeyLoader, node: yaml.Node) -> Any:
    """Ansible's ``!unsafe 'text'``: the text as it stands (nasplan renders no inventory value)."""
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    raise yaml.constructor.ConstructorError(
        None, None, "!unsafe goes on a single value", node.start_mark
    )


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)
for _tag in _REFUSED_TAGS:
    _UniqueKeyLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)
_UniqueKeyLoader.add_constructor("!vault", _vault)
_UniqueKeyLoader.add_constructor("!unsafe", _unsafe)


# Python refuses to read a decimal integer longer than this (sys.get_int_max_str_digits)
MAX_INT_DIGITS = 4300
_DECIMAL = re.compile(r"[-+]?[0-9_]+")


def _too_long_integer(text: str) -> bool:
    """Whether YAML would read ``text`` as a decimal integer Python refuses to build."""
    return len(text) > MAX_INT_DIGITS and _DECIMAL.fullmatch(text) is not None


def _check_expansion(text: str, path: Path) -> None:
    """Refuse nesting deeper than MAX_DEPTH and aliases expanding past MAX_ALIAS_NODES.

    Works on the event stream (no recursion, no expansion) so a "billion laughs" document is
    refused in the time it takes to read it, before anything is built from it.
    """
    # per open collection: [expanded node count, deepest nesting below it]
    stack: list[list[int]] = [[0, 0]]
    anchors: dict[str, tuple[int, int]] = {}
    open_anchors: list[str | None] = []
    alias_nodes = 0

    def fail(event: yaml.Event, message: str) -> None:
        mark = event.start_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise InputError(f"{path}:{line}:{col}: {message}")

    def add(size: int, depth: int) -> None:
        stack[-1][0] += size
        stack[-1][1] = max(stack[-1][1], depth)

    for event in yaml.parse(text, Loader=_UniqueKeyLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([1, 0])
            open_anchors.append(event.anchor)
            if len(stack) - 1 > MAX_DEPTH:
                fail(event, f"nesting deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            size, below = stack.pop()
            anchor = open_anchors.pop()
            if anchor is not None:
                anchors[anchor] = (size, below + 1)
            add(size, below + 1)
        elif isinstance(event, yaml.ScalarEvent):
            if event.implicit[0] and _too_long_integer(event.value):
                fail(event, f"an integer of more than {MAX_INT_DIGITS} digits")
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0)
            add(1, 0)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                fail(event, f"alias *{event.anchor} refers to a node that contains it (a cycle)")
            size, below = anchors.get(str(event.anchor), (1, 0))
            alias_nodes += size
            if alias_nodes > MAX_ALIAS_NODES:
                fail(event, f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?)")
            if len(stack) - 1 + below > MAX_DEPTH:
                fail(event, f"alias *{event.anchor} nests deeper than {MAX_DEPTH} levels")
            add(size, below)


def _collect_positions(
    node: yaml.Node, json_path: JsonPath, out: dict[JsonPath, tuple[int, int]]
) -> None:
    out[json_path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            _collect_positions(value_node, (*json_path, key), out)
            # A key's own position is more useful than its value's for "unknown key" errors.
            key_path = (*json_path, key, "\0key")  # a name: mypy at 3.10 misreads x[(*a, b)]
            out[key_path] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_positions(item, (*json_path, index), out)


def parse_yaml(path: Path, text: str) -> Document:
    """Parse YAML text into a Document; a syntax error becomes a one-line InputError."""
    try:
        _check_expansion(text, path)
        loader = _UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
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


def yaml_root_is_mapping(text: str) -> bool:
    """Whether ``text`` opens as a YAML mapping (whatever follows, errors included): only the
    first events are read."""
    try:
        for event in yaml.parse(text, Loader=_UniqueKeyLoader):
            if isinstance(event, yaml.NodeEvent):
                return isinstance(event, yaml.MappingStartEvent)
    except yaml.YAMLError:
        return False
    return False


def scalar_value(text: str) -> Any:
    """The number, boolean or null ``text`` spells in YAML (``"5"`` -> 5, ``"true"`` -> True,
    ``"~"`` -> None), else ``text`` itself. Only a single scalar is ever built: a text that is a
    collection (or an alias bomb) stays text, however it nests."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return text
    if not isinstance(node, yaml.ScalarNode) or _too_long_integer(node.value):
        return text
    value = yaml.SafeLoader("").construct_object(node)
    return value if isinstance(value, (int, float, bool)) or value is None else text


def read_yaml(path: Path) -> Document:
    """Read and parse a YAML file; a missing, unreadable, special or too large file, and one
    that nests or expands beyond the limits, is a one-line InputError."""
    return parse_yaml(path, read_text_bounded(path, MAX_YAML_BYTES, "YAML file"))


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Load the JSON Schema ``name`` (``"plan"``, ``"inventory"``, ``"lab"``, ``"run"``)."""
    text = (
        resources.files("nasplan").joinpath("schemas").joinpath(f"{name}.schema.json").read_text()
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def describe_error(error: jsonschema.ValidationError) -> tuple[JsonPath, str, bool]:
    """(json path, message, whether the position is the key's rather than the value's); the
    message one short line whatever the value (a list of 5000 entries shown by its start and
    its size)."""
    json_path, message, at_key = _describe(error)
    shown = repr(error.instance)
    if len(shown) > 60 and shown in message:
        message = message.replace(shown, _short_repr(error.instance))
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "…"
    return json_path, message, at_key


def _describe(error: jsonschema.ValidationError) -> tuple[JsonPath, str, bool]:
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
            near = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.75)
            guess = f"did you mean {near[0]!r}? " if near else ""
            return (*json_path, key), f"unknown key {key!r} ({guess}known keys: {known})", True
    if error.validator == "enum" and isinstance(error.instance, str):
        hint = (schema.get("x-hints") or {}).get(error.instance)
        if hint:  # a value people write for another one (``kind: smb``)
            return json_path, f"{error.message}: {hint}", False
    if error.validator == "type" and (unit := _unit_in_text(json_path, error.instance)):
        return json_path, unit, False
    if error.validator == "required":
        message = str(error.message).replace("is a required property", "is required")
        return json_path, message, False
    if error.validator == "pattern" and "description" in schema:
        return (
            json_path,
            f"{error.instance!r} is not valid: expected {schema['description']}",
            False,
        )
    if error.validator in ("oneOf", "anyOf") and "description" in schema:
        expected = schema["description"]
        return json_path, f"{error.instance!r} is not valid: expected {expected}", False
    if error.validator in ("oneOf", "anyOf") and error.context:
        from jsonschema.exceptions import best_match

        return _describe(best_match(error.context))
    message = str(error.message)
    if len(message) <= _MAX_MESSAGE_CHARS:
        return json_path, message, False
    # jsonschema's own message repeats the whole value: 1,500 entries are not one line
    if error.validator in _SIZE_RULES and isinstance(error.instance, (list, dict, str)):
        noun, word = _SIZE_RULES[error.validator]
        given = f"{len(error.instance)} {noun}"
        return json_path, f"{given}: {word} {error.validator_value} allowed", False
    message = message.replace(repr(error.instance), _short_repr(error.instance))
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "…"
    return json_path, message, False


# the schema rules on a value's size -> (what is counted, the bound's word)
_SIZE_RULES = {
    "maxItems": ("entries", "at most"),
    "minItems": ("entries", "at least"),
    "maxProperties": ("keys", "at most"),
    "minProperties": ("keys", "at least"),
    "maxLength": ("characters", "at most"),
}
# a message longer than this shows the value it is about shortened
_MAX_MESSAGE_CHARS = 300


def _short_repr(value: Any) -> str:
    """A long value as a message shows it: its start and its size."""
    text = repr(value)
    if isinstance(value, (list, dict, str)) and len(text) > 60:
        return (
            f"{text[:50]}… ({len(value)} {'characters' if isinstance(value, str) else 'entries'})"
        )
    return text


# A key's unit by the end of its name (docs/architecture.md: units in names).
_UNITS = {"_s": "seconds", "_ms": "milliseconds", "_bytes": "bytes", "_percent": "%"}
_NUMBER_WITH_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*[A-Za-z%]+\s*$")


def _unit_in_text(json_path: JsonPath, instance: Any) -> str | None:
    """The message for ``duration_s: 10s``: a number with a unit where the key's name already
    says the unit; None for anything else."""
    key = json_path[-1] if json_path else None
    found = _NUMBER_WITH_UNIT.match(instance) if isinstance(instance, str) else None
    unit = next((u for end, u in _UNITS.items() if str(key).endswith(end)), None)
    if not found or unit is None or isinstance(key, int):
        return None
    return (
        f"{instance!r} is not a number: {key} is in {unit} by its name, so write the number "
        f"alone ({key}: {found.group(1)})"
    )


@cache
def subschema_validator(schema_name: str, definition: str) -> jsonschema.Draft202012Validator:
    """A validator of ``$defs/<definition>`` of a schema (its other ``$defs`` resolvable)."""
    import jsonschema

    schema = load_schema(schema_name)
    return jsonschema.Draft202012Validator(
        {"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    )


@cache
def _validator(schema_name: str) -> jsonschema.Draft202012Validator:
    """One validator per schema, built once (its $ref lookups are cached inside it)."""
    import jsonschema

    return jsonschema.Draft202012Validator(
        load_schema(schema_name), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def is_valid(schema_name: str, data: Any) -> bool:
    """Whether ``data`` is valid against a schema; a document found valid before (same
    content, schema and nasplan) is not validated again (nasplan.input.schema_memo)."""
    memo_key = schema_memo.key(schema_name, data)
    if schema_memo.known_valid(memo_key):
        return True
    if not _validator(schema_name).is_valid(data):
        return False
    schema_memo.remember(memo_key)
    return True


def schema_errors(document: Document, schema_name: str) -> list[str]:
    """Validate ``document`` against a schema; one formatted line per problem, in file order."""
    if is_valid(schema_name, document.data):
        return []
    found: list[tuple[tuple[int, int], str]] = []
    for error in _validator(schema_name).iter_errors(document.data):
        json_path, message, at_key = describe_error(error)
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
