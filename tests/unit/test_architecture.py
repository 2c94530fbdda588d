"""The layout as documented: every module of the package named in docs/architecture.md."""

from __future__ import annotations

import ast
import importlib
import re
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "nasplan"


def documented_paths(text: str) -> set[str]:
    """Module paths named in the doc: ``nasplan/x/y.py``, and ``a.py b.py`` after a folder."""
    named: set[str] = set()
    for cell in re.findall(r"^\| (.+?) \|", text, re.MULTILINE):
        folder = ""
        for word in re.findall(r"`([^`]+)`", cell):
            if word.startswith("nasplan/"):
                folder = word.rsplit("/", 1)[0] if word.endswith(".py") else word.rstrip("/")
                named.add(word)
            elif word.endswith(".py") and folder:
                named.add(f"{folder}/{word}")
    return named


def test_every_module_is_in_the_architecture_doc() -> None:
    named = documented_paths((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    modules = {path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py")}
    missing = sorted(modules - named)
    assert not missing, f"add these modules to docs/architecture.md: {missing}"
    gone = sorted(name for name in named if name.endswith(".py") and name not in modules)
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


# Folders are floors, lowest first: each room (a folder of the package, or a module at its top)
# stands on one floor, and a module imports only modules of its own room or of rooms on lower
# floors, so that data flows one way: nothing in measure/ or network/ reaches up into a use case
# or a document. Rooms on one floor do not import each other. Every room is named here.
FLOORS: tuple[tuple[str, ...], ...] = (
    # the contracts and what every room reads: stdlib (and yaml, jinja2) only below them
    # (and the NBD server the client's bridge and the lab's shaped disks speak)
    ("nasplan", "errors", "units", "quantities", "tasks", "sections", "significance", "nbd_bridge"),
    # files written, statistics of repetitions; plans and inventories read and checked
    ("output", "analysis", "input"),
    # talking to hosts (runners, quoting, sudo); the run directory; the console; the lab; the
    # starter files `nasplan init` writes
    ("remote", "results", "progress", "lab", "starter"),
    ("facts", "verbosity"),
    ("platforms",),
    # sessions and their locks
    ("hosts",),
    # network changes: snapshot, arm, apply, verify, restore
    ("network",),
    # the kinds of tests and their tools; `nasplan probe`
    ("measure", "probe"),
    ("diagnose",),
    ("report",),
    # the use cases: a run's time, comparisons of runs
    ("compare", "run"),
    # `nasplan inventory` (loaded by name, as `nasplan lab`)
    ("inventory_cli",),
    ("cli",),
    ("__main__",),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_names() -> set[str]:
    return {module_name(path) for path in PACKAGE.rglob("*.py")}


def imports() -> dict[str, set[str]]:
    """Module -> the nasplan modules it imports anywhere (top level, functions, TYPE_CHECKING)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nasplan"):
                assert node.module is not None
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("nasplan.")}
        graph[name] = found - {name}
    return graph


def room_of(module: str) -> str:
    """``nasplan.measure.kinds.iperf3`` -> ``measure``; ``nasplan.cli`` -> ``cli``;
    ``nasplan`` (the package's face) -> ``nasplan``."""
    parts = module.split(".")
    if len(parts) == 1:
        return parts[0]
    return parts[1]


def floor_of(room: str) -> int | None:
    """The floor that names ``room``; None: no floor."""
    return next((index for index, rooms in enumerate(FLOORS) if room in rooms), None)


def floor(module: str) -> int:
    found = floor_of(room_of(module))
    assert found is not None, f"{module}'s room {room_of(module)} is on no floor of FLOORS"
    return found


def test_every_room_is_on_a_floor() -> None:
    unplaced = sorted({room_of(m) for m in module_names()} - {r for f in FLOORS for r in f})
    assert not unplaced, f"name these rooms' floor in FLOORS: {unplaced}"


def test_every_room_on_the_floors_exists() -> None:
    named = [room for rooms in FLOORS for room in rooms]
    assert len(named) == len(set(named)), "a room stands on two floors"
    gone = sorted(set(named) - {room_of(m) for m in module_names()})
    assert not gone, f"FLOORS names rooms that do not exist: {gone}"


def test_a_folder_is_one_room_on_one_floor() -> None:
    assert room_of("nasplan.measure.kinds.iperf3") == room_of("nasplan.measure") == "measure"
    assert floor("nasplan.remote.ssh") == floor("nasplan.remote.shell")
    assert floor("nasplan.input.plan") < floor("nasplan.remote.ssh") < floor("nasplan.run.apply")


def test_no_module_imports_a_room_above_its_own_or_beside_it() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if room_of(target) != room_of(module) and floor(target) >= floor(module)
    )
    assert not wrong, f"imports up a floor, or across one: {wrong}"


def test_the_import_graph_has_no_cycle() -> None:
    graph = imports()
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            cycle = [*trail[trail.index(module) :], module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_no_product_code_looks_like_a_test_to_pytest() -> None:
    """pytest collects ``test_*.py`` / ``*_test.py`` files and ``Test*`` classes it meets."""
    looks_like_tests = [
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name.startswith("test_") or path.stem.endswith("_test")
    ]
    test_classes = [
        f"{path.relative_to(ROOT).as_posix()}: {node.name}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test")
    ]
    assert not looks_like_tests and not test_classes, looks_like_tests + test_classes


THREAD_ROOMS = ("nasplan/run/overlap.py", "nasplan/remote/ssh_channel.py", "nasplan/lab/")


def test_threads_are_started_only_in_the_rooms_that_own_them() -> None:
    """``threading.Thread`` and ``ThreadPoolExecutor`` only in run/overlap.py (a run's work
    beside the caller), ssh_channel.py (its channel watchdog) and the lab: nowhere else starts
    a thread."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(THREAD_ROOMS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.Attribute):
                names.append(node.attr)
            elif isinstance(node, ast.Name):
                names.append(node.id)
            if {"Thread", "ThreadPoolExecutor"} & set(names):
                found.append(f"{relative}:{node.lineno}")
    assert not found, f"threads outside {THREAD_ROOMS}: {sorted(set(found))}"


def _kind_and_method_names() -> dict[str, set[str]]:
    """Each kind's and each transfer method's plan name -> the files allowed to say it."""
    from nasplan.measure import kinds, methods

    allowed = {name: {f"nasplan/measure/kinds/{module}/"} for name, module in kinds.MODULES.items()}
    for name in methods.METHODS:
        allowed.setdefault(name, set()).add(f"nasplan/measure/methods/{name}.py")
    return allowed


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for item in node.elts for s in _strings(item)]
    return []


REGISTRIES = ("nasplan/measure/kinds/__init__.py", "nasplan/measure/methods/__init__.py")


def test_no_code_branches_on_a_kind_s_or_a_method_s_name_outside_its_own_module() -> None:
    """A kind describes itself (``nasplan.measure.kind.Readout``) and so does a transfer method:
    a comparison of a kind or method against a name, or a table keyed by their names, outside
    their own module is knowledge of the kind living elsewhere. The lab (whose services share
    some names) is not a kind's user."""
    from nasplan.measure import kinds, methods

    allowed = _kind_and_method_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("nasplan/lab/"):
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                names = {s for side in sides for s in _strings(side)} & allowed.keys()
                other = " ".join(
                    ast.get_source_segment(source, side) or ""
                    for side in sides
                    if not _strings(side)
                )
                if names and ("kind" in other or "method" in other):
                    found += [
                        f"{relative}:{node.lineno} {n}"
                        for n in names
                        if not relative.startswith(tuple(allowed[n]))
                    ]
            elif isinstance(node, ast.Dict) and relative not in REGISTRIES:
                keys = {s for key in node.keys if key is not None for s in _strings(key)}
                for names in (kinds.MODULES.keys(), methods.METHODS.keys()):
                    if len(keys & names) >= 2:
                        found.append(f"{relative}:{node.lineno} {sorted(keys & names)}")
    for path in sorted(PACKAGE.rglob("*.j2")):
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r"\bkind\b\s*(==|!=|\bin\b)|\"kind\",\s*\"(equalto|in)\"", line):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{number}")
    assert not found, f"branches on a kind's or a method's name outside its module: {found}"


KINDS = PACKAGE / "measure" / "kinds"


def _kind_folders() -> list[Path]:
    return sorted(path for path in KINDS.iterdir() if path.is_dir() and path.name != "__pycache__")


def _kinds_and_sections() -> set[str]:
    """Each kind's plan name and folder name, and the names report/ once picked sections by."""
    from nasplan.measure import kinds

    return {*kinds.MODULES, *kinds.MODULES.values(), "transfers"}


def test_no_module_or_template_under_report_names_a_kind_or_a_section() -> None:
    """report/ asks each kind for its section (``Readout.section``): no string in its modules,
    no quoted name and no include in its templates picks a kind or a section by name."""
    named = _kinds_and_sections()
    own = {path.name for path in (PACKAGE / "report" / "templates").glob("*.j2")}
    found = []
    for path in sorted((PACKAGE / "report").rglob("*")):
        relative = path.relative_to(ROOT).as_posix()
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in named:
                    found.append(f"{relative}:{node.lineno} {node.value!r}")
        elif path.suffix == ".j2":
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, 1):
                quoted = set(re.findall(r"[\"']([A-Za-z0-9_.-]+)[\"']", line))
                included = set(re.findall(r"{%-? *include +[\"']([^\"']+)[\"']", line))
                found += [f"{relative}:{number} {n!r}" for n in sorted(quoted & named)]
                found += [f"{relative}:{number} include {n}" for n in sorted(included - own)]
                if re.search(r"\bsections?(_notes)?\s*(\.get\(|\[)", line):
                    found.append(f"{relative}:{number} a section picked by its name")
    assert not found, f"report/ names a kind or a section; ask the kind instead: {found}"


def _settings_type(kind: object) -> type:
    """The ``S`` of the kind's ``Kind[S]``."""
    from nasplan.measure.kind import Kind

    for cls in type(kind).__mro__:
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is Kind:
                found: type = typing.get_args(base)[0]
                return found
    raise AssertionError(f"{type(kind).__name__} is no Kind[S]")


def _settings_wrong(module: str, kind: object) -> list[str]:
    """Its ``settings.py`` holds (defines, or names where the kind's methods share it) the frozen
    dataclass the kind's ``settings(test)`` gives."""
    if not (KINDS / module / "settings.py").is_file():
        return [f"{module}/: no settings.py"]
    settings = importlib.import_module(f"nasplan.measure.kinds.{module}.settings")
    wanted = _settings_type(kind)
    wrong = []
    if getattr(settings, wanted.__name__, None) is not wanted:
        wrong.append(f"{module}/settings.py: no {wanted.__name__}, the kind's settings")
    params = getattr(wanted, "__dataclass_params__", None)
    if params is None or not params.frozen:
        wrong.append(f"{module}/: {wanted.__name__} is no frozen dataclass")
    return wrong


def test_every_kind_folder_has_the_same_shape() -> None:
    """A kind is a folder under measure/kinds/ named in ``kinds.MODULES``: its ``__init__.py``
    defines ``KIND`` (an instance of the kind's own ``Kind`` subclass, whose ``name`` is the plan
    name); its ``settings.py`` its settings, a frozen dataclass; no folder inside; its own
    section is its ``section.md.j2`` (a ``view.py`` only beside one), and a section the kind
    gives is a template that exists."""
    from nasplan.measure import kinds
    from nasplan.measure.kind import Kind

    folders = _kind_folders()
    assert {f.name for f in folders} == set(kinds.MODULES.values())
    assert not [p for p in KINDS.glob("*.py") if p.name != "__init__.py"], "a kind is a folder"
    wrong = []
    for name, module in kinds.MODULES.items():
        folder = KINDS / module
        kind = kinds.kind(name)
        if not isinstance(kind, Kind) or kind.name != name:
            wrong.append(f"{module}/__init__.py: KIND is no Kind named {name!r}")
        wrong += _settings_wrong(module, kind)
        inside = {p.name for p in folder.iterdir() if p.name != "__pycache__"}
        if [p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"]:
            wrong.append(f"{module}/: a folder inside")
        if "view.py" in inside and "section.md.j2" not in inside:
            wrong.append(f"{module}/: a view.py without its section.md.j2")
        if ("section.md.j2" in inside) and (
            kind.section is None or kind.section.package != (f"{kinds.__name__}.{module}")
        ):
            wrong.append(f"{module}/: its section.md.j2 is not the section it gives")
        section = kind.section
        if section is not None:
            source = PACKAGE.parent / section.package.replace(".", "/") / section.template
            if not source.is_file():
                wrong.append(f"{module}/: its section {section.source} does not exist")
        if [p for p in inside if not p.endswith((".py", ".j2"))]:
            wrong.append(f"{module}/: a file neither Python nor a template")
    assert not wrong, wrong


def test_a_kind_folder_imports_no_other_kind_but_a_section_it_shares() -> None:
    """What two kinds use stands below them in measure/ (tools/, fio_workdir.py, ...): a kind's
    folder imports another kind's only for the section they share (its ``view``: iSCSI's tests
    in the transfers' section)."""
    prefix = "nasplan.measure.kinds."
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        if module.startswith(prefix)
        for target in targets
        if target.startswith(prefix)
        and target.split(".")[3] != module.split(".")[3]
        and not target.endswith(".view")
    )
    assert not wrong, f"a kind that imports another kind's code: {wrong}"
