"""The layout as documented: every module of the package named in docs/architecture.md."""

from __future__ import annotations

import ast
import re
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


# Lower first. A module imports only modules of its own layer or of layers below it, so that
# data flows one way: nothing in measure/ or network/ reaches up into a use case or a document.
# A name is one module exactly (a package's name: its __init__ alone); ``NAME.*`` is a whole
# room, the package and every module under it. Every module is named, or lies in a room.
LAYERS: tuple[tuple[str, ...], ...] = (
    (  # the contracts and what every room reads: stdlib (and yaml, jinja2) only below them
        "nasplan",
        "nasplan.errors",
        "nasplan.units",
        "nasplan.tasks",
        "nasplan.sections",
        "nasplan.hosts.shell",
        "nasplan.runner",
        "nasplan.input.localfile",
        "nasplan.input.schema_memo",
        "nasplan.input.loader",
        "nasplan.input.templating",
        "nasplan.facts.bsd",
        "nasplan.facts.storage",
        # packages whose __init__ holds a docstring at most
        "nasplan.facts",
        "nasplan.hosts",
        "nasplan.input",
        "nasplan.network",
        "nasplan.run",
    ),
    (
        "nasplan.run.overlap",
        "nasplan.run.signals",
        "nasplan.input.ansible_ini",
        "nasplan.input.ansible",
        "nasplan.input.inventory",
        "nasplan.input.matrix",
        "nasplan.input.cells",
        "nasplan.input.table",
        "nasplan.input.plan",
        "nasplan.input.subset",
        "nasplan.input.extra_vars",
        "nasplan.input.lab_files",
        "nasplan.analysis",
        "nasplan.directions",
        "nasplan.output",
        "nasplan.facts.gather",
        "nasplan.facts.windows",
        "nasplan.hosts.become",
        "nasplan.hosts.timeouts",
        "nasplan.network.model",
        "nasplan.network.state",
        "nasplan.network.iptext",
        "nasplan.network.ifconfig",
        "nasplan.network.bsd",
        "nasplan.network.tools",
    ),
    (
        "nasplan.ssh",
        "nasplan.hosts.local",
        "nasplan.platforms.*",
        "nasplan.results",
        "nasplan.progress",
        "nasplan.verbosity",
        "nasplan.network.scripts",
        "nasplan.network.truenas",
        "nasplan.network.backends",
        "nasplan.network.checks",
        "nasplan.network.restore",
        "nasplan.hosts.lock",
    ),
    ("nasplan.hosts.session", "nasplan.run.leases"),
    ("nasplan.run.network_phase", "nasplan.measure.*"),
    ("nasplan.report.*", "nasplan.compare.*", "nasplan.diagnose.*"),
    (
        "nasplan.run.apply",
        "nasplan.run.restore",
        "nasplan.run.check",
        "nasplan.run.listing",
        "nasplan.run.checkpoint",
        "nasplan.run.kind_hooks",
        "nasplan.run.lapses",
        "nasplan.run.planned",
        "nasplan.run.schedule",
        "nasplan.run.resume",
        "nasplan.probe",
    ),
    ("nasplan.cli", "nasplan.__main__", "nasplan.lab.*"),
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


def layer_of(module: str) -> int | None:
    """The layer that names ``module``, or the room it lies in (the longest); None: no layer."""
    best: tuple[int, int | None] = (-1, None)
    for index, names in enumerate(LAYERS):
        for name in names:
            if name == module:
                return index
            room = name.removesuffix(".*")
            if name.endswith(".*") and (module == room or module.startswith(room + ".")):
                best = max(best, (len(room), index), key=lambda b: b[0])
    return best[1]


def layer(module: str) -> int:
    found = layer_of(module)
    assert found is not None, f"{module} is in no layer of LAYERS: add it"
    return found


def test_every_module_is_in_a_layer() -> None:
    unplaced = sorted(m for m in module_names() if layer_of(m) is None)
    assert not unplaced, f"name these modules' layer in LAYERS: {unplaced}"


def test_every_name_in_the_layers_is_a_module_or_a_package() -> None:
    modules = module_names()
    named = [name for names in LAYERS for name in names]
    assert len(named) == len(set(named)), "a name stands in two layers"
    gone = [name for name in named if name.removesuffix(".*") not in modules]
    assert not gone, f"LAYERS names modules that do not exist: {gone}"


def test_a_bare_package_name_is_its_init_alone() -> None:
    assert layer_of("nasplan") == 0 and layer_of("nasplan.run") == 0
    assert layer_of("nasplan.run.apply") != layer_of("nasplan.run")
    assert layer_of("nasplan.not_a_module") is None
    assert layer_of("nasplan.measure.kinds.iperf3") == layer_of("nasplan.measure")


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert not upward, f"upward imports: {upward}"


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


THREAD_ROOMS = ("nasplan/run/overlap.py", "nasplan/ssh.py", "nasplan/lab/")


def test_threads_are_started_only_in_the_rooms_that_own_them() -> None:
    """``threading.Thread`` and ``ThreadPoolExecutor`` only in run/overlap.py (a run's work
    beside the caller), ssh.py (its channel watchdog) and the lab: nowhere else starts a thread."""
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


MAX_FUNCTION_LINES = 60


def test_no_function_of_run_or_measure_is_longer_than_60_lines() -> None:
    long = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {node.name} "
        f"({(node.end_lineno or node.lineno) - node.lineno + 1} lines)"
        for room in ("run", "measure")
        for path in sorted((PACKAGE / room).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
