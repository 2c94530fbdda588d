"""The manual under docs/: generated pages match the schemas, links lead somewhere, and the
README's sample output is a real report's."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "scripts/gen-reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_are_what_the_schemas_generate() -> None:
    gen = generator()
    assert set(gen.PAGES) == {ROOT / "docs/plan-reference.md", ROOT / "docs/inventory-reference.md"}
    for path, render in gen.PAGES.items():
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        assert committed == render(), (
            f"{path.relative_to(ROOT)} differs from the schemas: run scripts/gen-reference.py"
        )


def test_the_stop_rule_table_is_the_codes() -> None:
    """docs/measurements.md's t values are StopRule's: the table between its markers is what
    scripts/gen-stop-rule.py prints, and it gives the t the code stops with."""
    from nasplan.input.plan import Adaptive
    from nasplan.measure.adaptive import StopRule

    spec = importlib.util.spec_from_file_location(
        "gen_stop_rule", ROOT / "scripts/gen-stop-rule.py"
    )
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    committed = gen.PAGE.read_text(encoding="utf-8")
    assert committed == gen.render(committed), (
        "docs/measurements.md's stop-rule table differs from the code: run scripts/gen-stop-rule.py"
    )
    rule = StopRule.of(Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02))
    assert f"| {rule.t:.2f} (3) |" in committed
    assert f"| {rule.early_t:.2f} (2 degrees of freedom) |" in committed


def test_the_reference_pages_name_every_key_and_kind() -> None:
    """A key the generator skipped would pass the drift test; the schema's names are all there."""
    import json

    plan = json.loads((ROOT / "nasplan/schemas/plan.schema.json").read_text())
    text = (ROOT / "docs/plan-reference.md").read_text(encoding="utf-8")
    for kind in plan["$defs"]["test"]["properties"]["kind"]["enum"]:
        assert f"### kind: {kind}" in text
        for key in plan["$defs"][kind]["properties"]:
            assert f"| `{key}` |" in text
    for key in plan["properties"]:
        assert f"| `{key}` |" in text
    inventory = json.loads((ROOT / "nasplan/schemas/inventory.schema.json").read_text())
    text = (ROOT / "docs/inventory-reference.md").read_text(encoding="utf-8")
    for section in ("host", "interface", "vars"):
        for key in inventory["$defs"][section]["properties"]:
            assert f"| `{key}` |" in text


def headings(path: Path) -> set[str]:
    anchor = generator().anchor
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {anchor(line.lstrip("#").strip()) for line in text.splitlines() if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        name, _, fragment = target.partition("#")
        linked = (page.parent / name).resolve() if name else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in headings(linked):
            broken.append(f"{target}: no heading #{fragment} in {linked.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_links_every_page_of_the_manual() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


def test_the_readme_sample_output_is_a_real_report() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    report = (ROOT / "docs/examples/ts253d-10g/report.md").read_text(encoding="utf-8")
    sample = re.search(r"## What you get.*?```text\n(.*?)```", readme, re.S)
    assert sample is not None
    lines = [line for line in sample.group(1).splitlines() if line.strip()]
    assert len(lines) >= 5
    missing = [line for line in lines if line not in report.splitlines()]
    assert not missing, "README's sample output is not in the example report: " + missing[0]
