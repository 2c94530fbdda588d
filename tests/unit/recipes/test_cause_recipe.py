"""The add-a-diagnosis-cause recipe of docs/architecture.md, followed for ``few-repetitions`` (a
test or direction with fewer ok repetitions than a confidence interval needs) in a scratch copy
of the checkout: it touches the files its steps name and no other, the guards and the cause's
own test pass, and a kept run's diagnosis there names it."""

from __future__ import annotations

from pathlib import Path

from scratch_tree import Recipe, ScratchTree

FEW = r'''"""Findings on tests with too few repetitions to say how sure their median is: fewer than
MIN_OK ok repetitions in a direction (two numbers give a median, not a confidence interval)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.diagnose.common import finding

CAUSE = "few-repetitions"
MIN_OK = 3


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One finding per test and direction with 1 to MIN_OK - 1 ok repetitions."""
    found = []
    for test in run.get("tests") or []:
        counted: dict[str | None, int] = {}
        for rep in test.get("repetitions") or []:
            if rep.get("status") == "ok":
                direction = rep.get("direction")
                counted[direction] = counted.get(direction, 0) + 1
        for direction, ok in counted.items():
            if ok < MIN_OK:
                where = f" {direction}" if direction else ""
                text = (
                    f"{ok} ok{where} repetition{'s' if ok > 1 else ''}: too few to say how sure "
                    f"the median is; run it with repetitions: {MIN_OK} or more"
                )
                evidence = {"ok": ok, "direction": direction, "min_ok": MIN_OK}
                found.append(finding(CAUSE, test.get("id"), None, text, evidence))
    return found
'''

UNIT_TEST = r'''"""few-repetitions: fewer than 3 ok repetitions, on a kept run's records."""

from __future__ import annotations

import json
from pathlib import Path

from nasplan.diagnose import few

RUN = Path(__file__).resolve().parents[3] / "docs" / "examples" / "ts253d-10g" / "run.json"


def test_two_repetitions_are_named_and_five_are_not() -> None:
    run = json.loads(RUN.read_text(encoding="utf-8"))
    assert few.findings(run) == []
    test = next(t for t in run["tests"] if t["id"] == "p2p-10g")
    test["repetitions"] = test["repetitions"][:2]
    (found,) = few.findings(run)
    assert (found["cause"], found["test"]) == ("few-repetitions", "p2p-10g")
    assert found["evidence"]["ok"] == 2
    assert found["text"].startswith("2 ok repetitions: too few")
'''


def follow(tree: ScratchTree) -> None:
    """The recipe's steps, in its order."""
    # 1. the cause's module
    tree.write("nasplan/diagnose/few.py", FEW)
    # 2. the registry
    tree.replace("nasplan/diagnose/__init__.py", '"queue", "short")', '"queue", "short", "few")')
    # 3. run.json's schema names the cause
    tree.replace(
        "nasplan/schemas/run.schema.json", "short-run (docs/", "short-run, few-repetitions (docs/"
    )
    # 4. the manual's cause table
    tree.insert_after(
        "docs/measurements.md",
        "with the `size` or `duration_s` to use |\n",
        "| `few-repetitions` | fewer than 3 ok repetitions in a direction: a median, but no "
        "confidence interval; with the `repetitions` to use |\n",
    )
    # 5. the module table
    tree.insert_before(
        "docs/architecture.md",
        "| `nasplan/diagnose/common.py` |",
        "| `nasplan/diagnose/few.py` | a direction with fewer than 3 ok repetitions |\n",
    )
    # 6. its unit test
    tree.write("tests/unit/diagnose/test_diagnose_few.py", UNIT_TEST)


def test_the_cause_recipe_gives_a_cause_the_guards_its_test_and_the_diagnosis_accept(
    tmp_path: Path,
) -> None:
    recipe = Recipe.read("Add a diagnosis cause", "few")
    assert recipe.files == {
        "nasplan/diagnose/few.py",
        "nasplan/diagnose/__init__.py",
        "nasplan/schemas/run.schema.json",
    }
    tree = ScratchTree.copy(tmp_path)

    follow(tree)

    recipe.assert_touched(tree.changed())
    tree.assert_guards_pass(extra=["tests/unit/diagnose/test_diagnose_few.py"])
    said = tree.python(
        """
        import json
        from pathlib import Path

        from nasplan.diagnose import diagnose

        run = json.loads(Path("docs/examples/ts253d-10g/run.json").read_text())
        test = next(t for t in run["tests"] if t["id"] == "smb-10g")
        test["repetitions"] = [r for r in test["repetitions"] if r["direction"] == "read"][:1]
        found = [f for f in diagnose(run) if f["cause"] == "few-repetitions"]
        print(len(found), found[0]["test"], found[0]["text"])
        """
    )
    assert said.strip() == (
        "1 smb-10g 1 ok read repetition: too few to say how sure the median is; "
        "run it with repetitions: 3 or more"
    )
    # a step left out is caught: the cause not in the manual's table
    tree.replace("docs/measurements.md", "| `few-repetitions` |", "| few |")
    left_out = tree.run_guards(guards=["tests/unit/recipes/test_registries.py"])
    assert left_out.returncode == 1 and "cause table lacks ['few-repetitions']" in left_out.stdout
