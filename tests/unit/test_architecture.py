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
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "nasplan",
        "nasplan.errors",
        "nasplan.units",
        "nasplan.runner",
        "nasplan.input.loader",
        "nasplan.sections",
    ),
    (
        "nasplan.input.inventory",
        "nasplan.input.plan",
        "nasplan.input.lab_files",
        "nasplan.analysis",
        "nasplan.directions",
        "nasplan.facts.gather",
        "nasplan.facts.storage",
        "nasplan.hosts.become",
        "nasplan.network.model",
        "nasplan.network.state",
        "nasplan.network.iptext",
        "nasplan.network.ifconfig",
        "nasplan.network.bsd",
        "nasplan.network.tools",
    ),
    (
        "nasplan.ssh",
        "nasplan.platforms",
        "nasplan.results",
        "nasplan.progress",
        "nasplan.network.scripts",
        "nasplan.network.truenas",
        "nasplan.network.backends",
        "nasplan.network.checks",
        "nasplan.network.restore",
        "nasplan.hosts.lock",
    ),
    ("nasplan.hosts.session", "nasplan.run.leases"),
    ("nasplan.run.network_phase", "nasplan.measure"),
    ("nasplan.report", "nasplan.compare"),
    ("nasplan.run.apply", "nasplan.run.restore"),
    ("nasplan.cli", "nasplan.__main__", "nasplan.lab"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


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


def layer(module: str) -> int:
    """The layer of ``module``: that of the longest prefix named in LAYERS."""
    best = (-1, -1)
    for index, names in enumerate(LAYERS):
        for prefix in names:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), index)
    assert best[1] >= 0, f"{module} is in no layer of LAYERS: add it"
    return best[1]


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
