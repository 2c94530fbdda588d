"""A plan's tests expanded into their matrix cells: each test's body rendered once per cell
with ``matrix`` in its Jinja, a dimension named like a key of the test setting that key, and
schema errors told with the test's cell (``plan.yaml:14:9: tests[0] smb[size=1GiB]: size: ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasplan.errors import InputError
from nasplan.input.loader import (
    Document,
    JsonPath,
    format_json_path,
    is_valid,
    load_schema,
    located,
    schema_errors,
)
from nasplan.input.matrix import (
    MAX_PLAN_TESTS,
    NOT_SET_BY_DIMENSION,
    Cell,
    CellDocument,
    Matrix,
    cell_id,
    check_matrix,
    check_references,
    combinations,
    join,
    references,
    to_json_cell,
    value_text,
)

if TYPE_CHECKING:
    from nasplan.input.inventory import Inventory
    from nasplan.input.network import NetworkSpec

# (value, context, document, path) -> the value rendered (plan.py's _render_value)
Render = Callable[[Any, Mapping[str, Any], Document, JsonPath], Any]
NETWORK_KEYS = ("links", "interfaces", "network")


@dataclass(frozen=True)
class Expanded:
    """One test of the expanded plan: its body rendered for its cell, the plan's test it comes
    from (``tests[index]``), its cell ({} outside a matrix) and which keys a dimension set."""

    body: dict[str, Any]
    index: int
    base_id: str
    cell: Cell = field(default_factory=dict)
    set_by: Mapping[str, JsonPath] = field(default_factory=dict)
    network_key: str | None = None  # the plan cell's network settings (None: the plan's)

    @property
    def test_id(self) -> str:
        return cell_id(self.base_id, to_json_cell(self.cell))

    def document(self, document: Document) -> Document:
        """``document`` whose errors on this test name its cell (itself outside a matrix)."""
        if not self.cell:
            return document
        return CellDocument(
            document.path,
            document.data,
            document.positions,
            index=self.index,
            test_id=self.test_id,
            set_by=self.set_by,
        )


@dataclass
class Expansion:
    """The plan's tests, expanded, and its network settings per plan cell when they use the
    plan's matrix (``variants``: key -> the rendered links/interfaces/network)."""

    tests: list[Expanded]
    matrix: Matrix | None = None
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)


def _kind_keys(kind: Any) -> set[str]:
    """The keys a test of ``kind`` may set (its schema's properties) a dimension may set."""
    definition = load_schema("plan")["$defs"].get(kind) if isinstance(kind, str) else None
    if not isinstance(definition, dict):
        return set()
    return set(definition.get("properties", {})) - NOT_SET_BY_DIMENSION


def expand(
    document: Document,
    data: Mapping[str, Any],
    context: Mapping[str, Any],
    render: Render,
) -> Expansion:
    """Every test of the plan once per cell of its matrix (the plan's and its own), rendered;
    InputError listing every located problem."""
    plan_matrix = None
    if data.get("matrix") is not None:
        plan_matrix = check_matrix(
            document, render(data["matrix"], context, document, ("matrix",)), ("matrix",)
        )
    expansion = Expansion([], plan_matrix)
    errors: list[str] = []
    most = max(MAX_PLAN_TESTS, len(data["tests"]))  # a matrix never grows a plan past this
    for index, raw in enumerate(data["tests"]):
        try:
            expansion.tests += _expand_test(document, raw, index, plan_matrix, context, render)
        except InputError as exc:
            errors += exc.messages
        if len(expansion.tests) > most:
            raise InputError(
                document.error(
                    ("tests", index), f"the plan expands to more than {MAX_PLAN_TESTS} tests"
                )
            )
    if errors:
        raise InputError(errors)
    return expansion


def _expand_test(
    document: Document,
    raw: Any,
    index: int,
    plan_matrix: Matrix | None,
    context: Mapping[str, Any],
    render: Render,
) -> list[Expanded]:
    where: JsonPath = ("tests", index)
    if not isinstance(raw, dict):
        return [Expanded(render(raw, context, document, where), index, "")]
    own = None
    if raw.get("matrix") is not None:
        own = check_matrix(
            document,
            render(raw["matrix"], context, document, (*where, "matrix")),
            (*where, "matrix"),
        )
    names = [*(plan_matrix.names if plan_matrix else ()), *(own.names if own else ())]
    errors = check_references(document, raw, where, names)
    if references(raw.get("id")) is not None:
        message = "an id cannot use the matrix: each cell's id is the test's id with its cell added"
        errors.append(document.error((*where, "id"), message))
    cells = join(document, plan_matrix, own)
    if errors:
        raise InputError(errors)
    body = {key: value for key, value in raw.items() if key != "matrix"}
    if not cells:
        rendered = render(body, context, document, where)
        return [Expanded(rendered, index, _base_id(rendered, index))]
    base = _base_id(render({k: body[k] for k in ("id", "kind") if k in body},
                           context, document, where), index)  # fmt: skip
    settable = _kind_keys(render(body.get("kind"), context, document, (*where, "kind")))
    out = []
    for outer, inner in cells:
        cell = {**outer, **inner}
        values = to_json_cell(cell)
        set_by = {key: path for key, (_, path) in cell.items() if key in settable}
        set_by = {key: path for key, path in set_by.items() if key not in raw}
        one = Expanded({}, index, base, cell, set_by, _cell_key(to_json_cell(outer)))
        cell_document = one.document(document)
        rendered = render(body, {**context, "matrix": values}, cell_document, where)
        rendered.update({key: values[key] for key in set_by})
        if "name" in raw and references(raw["name"]) is None:
            rendered["name"] = f"{rendered['name']} [{one.test_id[len(base) + 1 : -1]}]"
        out.append(Expanded(rendered, index, base, cell, set_by, one.network_key))
    return out


def _base_id(body: Any, index: int) -> str:
    """A test's id in the plan: its ``id``, else ``KIND-N`` (N: its place, from 1)."""
    if not isinstance(body, dict):
        return f"test-{index + 1}"
    return str(body.get("id") or f"{body.get('kind')}-{index + 1}")


def _cell_key(values: Mapping[str, Any]) -> str:
    return json.dumps(list(values.items()))


def network_variants(
    document: Document,
    data: Mapping[str, Any],
    expansion: Expansion,
    context: Mapping[str, Any],
    render: Render,
) -> dict[str, dict[str, Any]] | None:
    """The plan's ``links``, ``interfaces`` and ``network`` rendered per cell of the plan's
    matrix (plan cell key -> those keys) when they use it; None when they do not."""
    used = [key for key in NETWORK_KEYS if references(data.get(key)) is not None]
    if not used:
        return None
    if expansion.matrix is None:
        raise InputError(
            document.error(
                (used[0],), "{{ matrix.* }} in the network settings needs a plan-level matrix:"
            )
        )
    names = list(expansion.matrix.names)
    errors = [
        line for key in used for line in check_references(document, {key: data[key]}, (), names)
    ]
    if errors:
        raise InputError(errors)
    variants: dict[str, dict[str, Any]] = {}
    for cell in combinations(expansion.matrix):
        values = to_json_cell(cell)
        ctx = {**context, "matrix": values}
        variants[_cell_key(values)] = {
            key: render(data[key], ctx, document, (key,)) for key in NETWORK_KEYS if key in data
        }
    return variants


_TEST_PATH = re.compile(r"^tests\[(\d+)\](?:\.(.*))?$")


def cell_schema_errors(document: Document, resolved: Mapping[str, Any], expansion: Expansion
                       ) -> list[str]:  # fmt: skip
    """The schema's errors of the expanded plan (``resolved``: its tests are
    ``expansion.tests``' bodies), each on a test naming that test's plan place and cell, at the
    key in the test or, for a key a dimension set, at the matrix's value; an error every cell
    of a test shares is told once, for its first cell."""
    if is_valid("plan", resolved):
        return []
    positions: dict[JsonPath, tuple[int, int]] = {}
    by_test: dict[int, list[tuple[JsonPath, tuple[int, int]]]] = {}
    for path, place in document.positions.items():
        if len(path) >= 2 and path[0] == "tests" and isinstance(path[1], int):
            by_test.setdefault(path[1], []).append((path[2:], place))
        else:
            positions[path] = place
    for number, one in enumerate(expansion.tests):
        for tail, place in by_test.get(one.index, ()):
            moved: JsonPath = ("tests", number, *tail)  # a name: mypy at 3.10 misreads x[(*a,)]
            positions[moved] = place
        for key, origin in one.set_by.items():
            if origin in document.positions:
                positions[("tests", number, key)] = document.positions[origin]
                positions[("tests", number, key, "\0key")] = document.positions[origin]
    lines = schema_errors(Document(document.path, resolved, positions), "plan")
    out: list[str] = []
    told: set[tuple[int, str, str]] = set()
    for line in lines:
        found = located(line)
        match = _TEST_PATH.match(found.path or "") if found else None
        if found is None or match is None:
            out.append(line)
            continue
        one = expansion.tests[int(match[1])]
        rest = match[2] or ""
        if not one.cell:
            where = f"{found.file}:{found.line}:{found.column}"
            out.append(f"{where}: {format_json_path(('tests', one.index))}"
                       f"{'.' + rest if rest else ''}: {found.message}")  # fmt: skip
            continue
        said = (one.index, rest, found.message)
        if said in told:
            continue
        told.add(said)
        shown = f"{rest}: " if rest else ""
        out.append(f"{found.file}:{found.line}:{found.column}: tests[{one.index}] "
                   f"{one.test_id}: {shown}{found.message}")  # fmt: skip
    return out


def cell_networks(
    document: Document,
    resolved: Mapping[str, Any],
    expansion: Expansion | None,
    inventory: Inventory,
) -> dict[str, NetworkSpec]:
    """Plan cell key -> its own network settings, parsed once per distinct rendering, when the
    plan's network settings use its matrix ({} when they do not)."""
    if expansion is None or not expansion.variants:
        return {}
    from nasplan.input.network import parse_network

    parsed: dict[str, NetworkSpec] = {}
    out: dict[str, NetworkSpec] = {}
    for key, variant in expansion.variants.items():
        text = json.dumps(variant, sort_keys=True)
        if text not in parsed:
            data = {**resolved, **variant}
            errors = schema_errors(Document(document.path, data, document.positions), "plan")
            if errors:
                raise InputError([f"{line} (matrix cell {_label(key)})" for line in errors])
            parsed[text] = parse_network(document, data, inventory)
        out[key] = parsed[text]
    return out


def _label(key: str) -> str:
    return ",".join(f"{k}={value_text(v)}" for k, v in json.loads(key))


def once_per_test(errors: list[str]) -> list[str]:
    """Located errors with an error every cell of a plan test shares told once (for its first
    cell): ``tests[0] smb[size=1GiB]: server: ...`` and the same for ``size=10GiB`` are one."""
    told: set[str] = set()
    out = []
    for line in errors:
        key = re.sub(r"^(.*?: tests\[\d+\]) [^\s:]+(:.*)$", r"\1\2", line)
        if key not in told:
            told.add(key)
            out.append(line)
    return out
