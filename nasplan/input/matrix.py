"""A plan's ``matrix:``: GitHub Actions' ``strategy.matrix`` rules, cells, ids, subsets.

A matrix names dimensions with lists of scalar values; its cells are their combinations in
the order the dimensions are written, ``exclude`` removes the cells matching all of an entry's
keys, then each ``include`` entry extends every original cell none of whose dimension values it
would overwrite, or becomes a cell of its own when it extends none (GitHub's rules, exactly)::

    >>> [c for c, _ in combinations(Matrix.of({"a": [1, 2], "exclude": [{"a": 1}]}))]
    [{'a': 2}]

A cell's test id is ``base[dim=value,...]`` (``smb[link=p2p10,size=1GiB]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath, format_json_path

MAX_CELLS = 1000  # one test's matrix (the plan's and its own together)
MAX_PLAN_TESTS = 5000  # every test of a plan once its matrices are expanded
RESERVED = frozenset({"include", "exclude"})
# keys of a test a dimension never sets (the test's identity and its own matrix)
NOT_SET_BY_DIMENSION = frozenset({"id", "name", "kind", "matrix"})

Scalar = str | int | float | bool
# a cell: dimension -> (value, JSON path of the value in the plan), in the matrix's order
Cell = dict[str, tuple[Scalar, JsonPath]]


def value_text(value: Any) -> str:
    """A cell value as an id shows it: as written (``1GiB``, ``9000``, ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cell_label(cell: Mapping[str, Any]) -> str:
    """``{"link": "p2p10", "size": "1GiB"}`` -> ``link=p2p10,size=1GiB``."""
    return ",".join(f"{key}={value_text(value)}" for key, value in cell.items())


def cell_id(base_id: str, cell: Mapping[str, Any]) -> str:
    """``smb`` + a cell -> ``smb[link=p2p10,size=1GiB]``; ``base_id`` itself outside a matrix."""
    return f"{base_id}[{cell_label(cell)}]" if cell else base_id


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.,=+\[\]-]+$")


def dir_name(test_id: str) -> str:
    """The directory of a test's raw files under ``raw/``: its id when every character is safe
    in a path and a URL (``smb[link=p2p10,size=1GiB]``), else the id with the others as ``_``
    and a short hash of the id (``disk[path=_share_ssd]-3f2a9c1b``), so no two ids share one."""
    if _SAFE_NAME.match(test_id) and test_id not in (".", ".."):
        return test_id
    import hashlib  # only for an id a matrix value made unsafe

    digest = hashlib.sha256(test_id.encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_.,=+\[\]-]", "_", test_id) + "-" + digest


def file_stem(test_id: str) -> str:
    """A test's id as part of a file name on a host (letters, digits, ``_ . -`` only: a share's,
    a URL's and a remote shell's syntax never sees a matrix id's brackets): its id when it has
    no other character, else ``smb_link_p2p10_size_1GiB_-3f2a9c1b``."""
    if re.fullmatch(r"[A-Za-z0-9_.-]+", test_id):
        return test_id
    import hashlib  # only for an id a matrix value made unsafe

    digest = hashlib.sha256(test_id.encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", test_id) + "-" + digest


def _same(a: Any, b: Any) -> bool:
    """Equal as YAML values: ``true`` is not ``1``."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


@dataclass(frozen=True)
class Matrix:
    """A validated matrix: dimensions in order, ``include`` and ``exclude`` entries, and where
    each value stands in the plan (``where``: the matrix's own JSON path)."""

    dimensions: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    include: tuple[Mapping[str, Scalar], ...] = ()
    exclude: tuple[Mapping[str, Scalar], ...] = ()
    where: JsonPath = ("matrix",)

    @classmethod
    def of(cls, raw: Mapping[str, Any], where: JsonPath = ("matrix",)) -> Matrix:
        """A Matrix from a mapping the schema's ``matrix`` definition accepted."""
        return cls(
            dimensions=tuple((k, tuple(v)) for k, v in raw.items() if k not in RESERVED),
            include=tuple(raw.get("include") or ()),
            exclude=tuple(raw.get("exclude") or ()),
            where=where,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Its dimensions' names, then the keys only ``include`` adds, in order."""
        names = [name for name, _ in self.dimensions]
        for entry in self.include:
            names += [key for key in entry if key not in names]
        return tuple(names)

    def most_cells(self) -> int:
        """An upper bound of its cell count, known before any cell is built."""
        count = 1
        for _, values in self.dimensions:
            count *= len(values)
            if count > MAX_CELLS * MAX_CELLS:  # enough to refuse; no huge integers
                break
        return (count if self.dimensions else 0) + len(self.include)


def combinations(matrix: Matrix) -> list[Cell]:
    """The matrix's cells by GitHub's rules, each value with its place in the plan."""
    cells: list[Cell] = [{}] if matrix.dimensions else []
    for name, values in matrix.dimensions:
        cells = [
            {**cell, name: (value, (*matrix.where, name, index))}
            for cell in cells
            for index, value in enumerate(values)
        ]
    cells = [
        cell
        for cell in cells
        if not any(
            all(key in cell and _same(cell[key][0], v) for key, v in entry.items())
            for entry in matrix.exclude
        )
    ]
    original = {name for name, _ in matrix.dimensions}
    extended = [False] * len(cells)
    added: list[Cell] = []
    for number, entry in enumerate(matrix.include):
        placed = {
            key: (value, (*matrix.where, "include", number, key)) for key, value in entry.items()
        }
        fits = False
        for index, cell in enumerate(cells[: len(extended)]):
            if all(
                key not in original or key not in cell or _same(cell[key][0], value)
                for key, value in entry.items()
            ):
                cell.update(placed)
                extended[index] = fits = True
        if not fits:
            added.append(placed)
    return cells + added


def check_matrix(document: Document, raw: Any, where: JsonPath) -> Matrix:
    """``raw`` (a plan's or a test's ``matrix``) checked against the schema's definition and
    GitHub's rules; InputError with one located line per problem."""
    from nasplan.input.loader import describe_error, subschema_validator

    errors = []
    for error in subschema_validator("plan", "matrix").iter_errors(raw):
        path, message, _ = describe_error(error)
        errors.append(document.error((*where, *path), message))
    if errors:
        raise InputError(sorted(set(errors)))
    matrix = Matrix.of(raw, where)
    names = {name for name, _ in matrix.dimensions}
    if not names and not matrix.include:
        errors.append(document.error(where, "a matrix needs a dimension or an include entry"))
    for index, entry in enumerate(matrix.exclude):
        unknown = sorted(set(entry) - names)
        if unknown:
            errors.append(
                document.error(
                    (*where, "exclude", index, unknown[0]),
                    f"exclude names {unknown[0]!r}, not a dimension of the matrix "
                    f"(has: {', '.join(sorted(names)) or 'none'})",
                )
            )
    if matrix.most_cells() > MAX_CELLS:
        errors.append(
            document.error(where, f"the matrix has more than {MAX_CELLS} cells; split the plan")
        )
    if errors:
        raise InputError(errors)
    if matrix.exclude and not combinations(matrix):
        # no cell left would run the test without its matrix: not what was written
        raise InputError(
            document.error(
                (*where, "exclude"),
                "exclude leaves no cell of the matrix: "
                + ("none of the plan's tests" if where == ("matrix",) else "nothing of the test")
                + " would run; remove an exclude entry, or the test",
            )
        )
    return matrix


def join(document: Document, plan: Matrix | None, test: Matrix | None) -> list[tuple[Cell, Cell]]:
    """The cells of a test as (the plan's matrix's part, the test's own part): each cell of the
    plan's matrix with each of the test's; [] when neither has a matrix. A dimension named in
    both, and more than MAX_CELLS cells together, are errors."""
    if plan is None and test is None:
        return []
    if plan is not None and test is not None:
        for name in test.names:
            if name in plan.names:
                raise InputError(
                    document.error(
                        (*test.where, name),
                        f"dimension {name!r} is in the plan's matrix too; name it in one",
                    )
                )
        if plan.most_cells() * test.most_cells() > MAX_CELLS:
            raise InputError(
                document.error(
                    test.where,
                    f"with the plan's matrix, more than {MAX_CELLS} cells; split the plan",
                )
            )
    outer = combinations(plan) if plan is not None else [{}]
    inner = combinations(test) if test is not None else [{}]
    return [(a, b) for a in outer for b in inner]


_MATRIX_NAME = re.compile(
    r"(?<![\w.])matrix\s*(?:\.\s*([A-Za-z_][\w]*)|\[\s*['\"]([^'\"]+)['\"]\s*\])?"
)


def references(value: Any) -> set[str] | None:
    """The dimensions a value's Jinja names (``{{ matrix.link }}`` -> {"link"}); "" stands for
    ``matrix`` used whole; None when it names no matrix at all."""
    found: set[str] = set()
    texts = [value] if isinstance(value, str) else []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str) and item is not value:
            texts.append(item)
    for text in texts:
        if "matrix" not in text or ("{{" not in text and "{%" not in text):
            continue
        for match in _MATRIX_NAME.finditer(text):
            found.add(match.group(1) or match.group(2) or "")
    return found or None


def check_references(
    document: Document, raw: Mapping[str, Any], where: JsonPath, names: Sequence[str]
) -> list[str]:
    """Located errors for each key of ``raw`` whose Jinja names the matrix where there is none
    (``names`` empty) or a dimension it does not have."""
    errors = []
    for key, value in raw.items():
        if key == "matrix":
            continue
        used = references(value)
        if used is None:
            continue
        if not names:
            errors.append(
                document.error(
                    (*where, key),
                    "{{ matrix.* }} outside a matrix: give the test (or the plan) a matrix:",
                )
            )
            continue
        unknown = sorted(name for name in used if name and name not in names)
        if unknown:
            errors.append(
                document.error(
                    (*where, key),
                    f"matrix.{unknown[0]}: the matrix has no dimension {unknown[0]!r} "
                    f"(has: {', '.join(names)})",
                )
            )
    return errors


@dataclass(frozen=True)
class CellDocument(Document):
    """The plan document as one cell's test sees it: errors name the test and its cell
    (``tests[0] smb[size=1GiB]: size: ...``), at the matrix's value for a key a dimension set."""

    index: int = 0
    test_id: str = ""
    set_by: Mapping[str, JsonPath] = field(default_factory=dict)

    def error(self, json_path: JsonPath, message: str) -> str:
        rest = tuple(json_path[2:]) if json_path[:2] == ("tests", self.index) else None
        if rest is None:
            return super().error(json_path, message)
        origin = self.set_by.get(str(rest[0])) if rest else None
        where = self.where(origin if origin is not None else json_path)
        return f"{where}: tests[{self.index}] {self.test_id}: {format_json_path(rest)}: {message}"


def select(ids: Iterable[tuple[str, str]], patterns: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ids (of (id, base id) pairs) that a pattern matches, in order, and the patterns that
    matched none. A pattern is an id, or a glob over ids and base ids where only ``*`` and
    ``?`` are wild (``smb[link=p2p10*``: brackets are literal)."""
    compiled = [(p, re.compile(_glob(p))) for p in patterns]
    chosen: list[str] = []
    used: set[str] = set()
    for test_id, base_id in ids:
        hits = [p for p, rx in compiled if rx.fullmatch(test_id) or rx.fullmatch(base_id)]
        if hits:
            chosen.append(test_id)
            used.update(hits)
    return chosen, [p for p in patterns if p not in used]


def _glob(pattern: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


# after a comma, a dimension's value: ``nic=lan*`` goes on the cell a bracket opened
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def split_list(values: Iterable[str]) -> list[str]:
    """``("a,b", "c")`` -> ``["a", "b", "c"]``; a comma inside brackets stays
    (``smb[link=p2p10,size=1GiB]`` is one id), and so does one inside a bracket never closed
    when a dimension's value follows it (``tcp[client=pc,nic=lan*`` is one pattern;
    ``smb[link=p2p10*,lan`` is two: ``lan`` is no ``NAME=VALUE``)."""
    out: list[str] = []
    for value in values:
        depth, start, unclosed = 0, 0, False
        for index, char in enumerate(value):
            if char == "[" and "]" in value[index:]:
                depth += 1
            elif char == "[":
                unclosed = True
            elif char == "]" and depth:
                depth -= 1
            if char != "," or depth > 0:
                continue
            if unclosed and _ASSIGNMENT.match(value, index + 1):
                continue
            out.append(value[start:index])
            start, unclosed = index + 1, False
        out.append(value[start:])
    return [item.strip() for item in out if item.strip()]


def to_json_cell(cell: Cell) -> dict[str, Scalar]:
    """A cell's values alone, in order."""
    return {key: value for key, (value, _) in cell.items()}
