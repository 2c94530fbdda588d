"""The registries against what names them elsewhere: the plan schema's transfer methods, the
inventory schema's platforms, the diagnosis causes in run.json's schema and in the manual, the
kinds in the manual, the secrets a test names in the check before a run. A guard
(``scratch_tree.GUARDS``): a recipe followed in a scratch tree keeps these true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nasplan.input.loader import load_schema
from nasplan.measure.kinds import MODULES
from nasplan.measure.methods import METHODS
from nasplan.platforms import registry

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "nasplan"


def test_the_plan_schema_s_methods_are_the_registry_s_in_its_order() -> None:
    transfer = load_schema("plan")["$defs"]["transfer"]["properties"]["method"]
    assert transfer["enum"] == list(METHODS)
    assert all(method.name == name and method.label for name, method in METHODS.items())


def test_a_method_written_as_a_kind_gets_a_hint_and_the_manual_names_every_method() -> None:
    hints = load_schema("plan")["$defs"]["test"]["properties"]["kind"]["x-hints"]
    assert set(METHODS) <= hints.keys(), "plan.schema.json's kind x-hints"
    manual = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^    method: smb +# (.+)$", manual, re.MULTILINE)
    assert set(METHODS) <= set(re.findall(r"[a-z0-9-]+", line)), "docs/measurements.md"


def test_the_manual_shows_every_kind_in_a_plan() -> None:
    manual = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    missing = [name for name in MODULES if not re.search(rf"\bkind: {name}\b", manual)]
    assert not missing, f"docs/measurements.md shows no plan with kind: {missing}"


def test_every_secret_a_test_names_is_asked_for_before_the_run() -> None:
    """A test's ``*_env`` key (an environment variable holding a secret) is one that
    ``unset_variables`` of run/planned.py looks up, so a run stops before it starts when the
    variable is not set."""
    definitions = load_schema("plan")["$defs"].values()
    keys = {
        key
        for definition in definitions
        if isinstance(definition, dict)
        for key in definition.get("properties", {})
        if key.endswith("_env")
    }
    assert {"password_env", "chap_secret_env"} <= keys
    source = (PACKAGE / "run" / "planned.py").read_text(encoding="utf-8")
    named = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert keys <= named, f"run/planned.py's unset_variables misses {sorted(keys - named)}"


def test_the_inventory_platform_enum_is_the_names_the_platforms_answer_to() -> None:
    enum = load_schema("inventory")["$defs"]["platform"]["enum"]
    answered = [hint for platform in registry() for hint in sorted(platform.hints)]
    assert sorted(enum) == sorted(["auto", *answered])
    assert len(set(answered)) == len(answered), "two platforms answer to one name"


def causes() -> set[str]:
    """Every ``cause`` a finding of the package is made with: ``finding("name", ...)`` or
    ``finding(CONSTANT, ...)`` with the module's ``CONSTANT = "name"``."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id != "finding" or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
            elif isinstance(first, ast.Name):
                assert first.id in constants, f"{path}: a finding's cause {first.id} unresolved"
                found.add(constants[first.id])
    return found


def test_every_diagnosis_cause_is_named_in_the_run_schema_and_the_manual() -> None:
    found = causes()
    assert {"routed-path", "short-run"} <= found  # the scan sees both ways of naming one
    finding = load_schema("run")["properties"]["diagnosis"]["items"]["properties"]["cause"]
    # "one of a, b, c (docs/measurements.md)"
    described = set(finding["description"].split("one of ", 1)[1].split(" (")[0].split(", "))
    assert described == found, "run.schema.json's diagnosis cause description"
    manual = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \| ", manual, re.MULTILINE))
    assert found <= rows, f"docs/measurements.md's cause table lacks {sorted(found - rows)}"
