"""The recipes of docs/architecture.md, followed once more: a small kind (``kind: sleep``) and a
small platform added to a copy of the package, touching exactly the files each recipe lists,
then used from that copy in a fresh interpreter."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from nasplan.input.loader import load_schema
from nasplan.platforms import registry

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def recipe_files(heading: str, name: str) -> set[str]:
    """The package files a recipe's steps touch: each step's ``nasplan/...`` paths, ``NAME`` as
    ``name``; steps that start with *Only when* left out (they apply only then)."""
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    steps = re.split(r"^\d+\. ", section, flags=re.MULTILINE)[1:]
    return {
        path.replace("NAME", name)
        for step in steps
        if not step.startswith("*Only when*")
        for path in re.findall(r"`(nasplan/[^`]+)`", step)
    }


def copy_package(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of nasplan/ under ``tmp_path``, and each file's digest in it."""
    shutil.copytree(
        ROOT / "nasplan", tmp_path / "nasplan", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path, digests(tmp_path)


def digests(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (root / "nasplan").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def changed(root: Path, before: dict[str, str]) -> set[str]:
    after = digests(root)
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def edit_json(path: Path, change: Any) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def insert_before(path: Path, anchor: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path}: {anchor!r}"
    path.write_text(source.replace(anchor, text + anchor), encoding="utf-8")


def run_in_copy(root: Path, script: str) -> str:
    """``script`` in a fresh interpreter that imports nasplan from the copy; its stdout."""
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(root / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SLEEP_KIND = '''\
"""The ``sleep`` test kind: a pause on one host, measured on the controller (no tool)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import summarize
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure.estimate import Estimate
from nasplan.measure.kind import Kind, Record, RunContext, Section
from nasplan.measure.kinds.sleep import view
from nasplan.measure.record import finish, new_record
from nasplan.measure.series import Series

METRIC = "slept_s"


@dataclass(frozen=True)
class SleepSettings:
    """How long each repetition sleeps."""

    seconds: float = 0.01


class Sleep(Kind[SleepSettings]):
    """``kind: sleep``: how long a pause took, lower is better."""

    name = "sleep"
    phrase = "pauses"
    groups = ("Sleep",)
    lower_is_better = True
    metric = METRIC
    section = Section(__name__, view.view)

    def settings(self, test: PlanTest) -> SleepSettings:
        return SleepSettings(float(test.settings.get("seconds", SleepSettings.seconds)))

    def describe(self, test: PlanTest, s: SleepSettings) -> str:
        return f"sleep {s.seconds:g} s, {test.repetitions} times"

    def estimate(self, test: PlanTest, s: SleepSettings, plan: Plan) -> Estimate:
        return Estimate(s.seconds * test.repetitions, ("a sleep takes what it asks",))

    def run(self, test: PlanTest, s: SleepSettings, ctx: RunContext) -> dict[str, Any]:
        record = new_record(test, {"repetitions": test.repetitions}, METRIC)
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, s.seconds * test.repetitions)
            started = time.monotonic()
            time.sleep(s.seconds)
            slept_s = time.monotonic() - started
            rep = {"index": index, "status": "ok", "error": None, "raw_file": None}
            record["repetitions"].append({**rep, METRIC: slept_s})
            ctx.checkpoint(record)
        return self.summarize(record, s)

    def summarize(self, record: dict[str, Any], s: SleepSettings) -> dict[str, Any]:
        record["summary"] = summarize([r[METRIC] for r in record["repetitions"]], METRIC)
        return finish(record, [])

    def measured(self, record: Record, series: Series | None) -> str:
        return "a pause on the host"


KIND = Sleep()
'''

SLEEP_VIEW = '''\
"""The sleep tests' section of report.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nasplan.measure.kind import Record


def view(tests: Sequence[Record]) -> dict[str, Any]:
    return {"tests": list(tests)}
'''

SLEEP_SECTION = """\
## Pauses

{% for t in tests %}
- {{ t.heading }}: {{ t.results[0].median_text }} a pause, {{ t.repetitions | length }} pauses
{% endfor %}
"""


def add_sleep_kind(root: Path) -> None:
    """The add-a-kind recipe, step by step, for ``kind: sleep``."""
    package = root / "nasplan"
    # 1. the kind's folder, its KIND in __init__.py
    folder = package / "measure" / "kinds" / "sleep"
    folder.mkdir()
    (folder / "__init__.py").write_text(SLEEP_KIND, encoding="utf-8")
    # 2. its section of report.md: template and view
    (folder / "view.py").write_text(SLEEP_VIEW, encoding="utf-8")
    (folder / "section.md.j2").write_text(SLEEP_SECTION, encoding="utf-8")
    # 4. the registry
    insert_before(package / "measure" / "kinds" / "__init__.py", "}\n", '    "sleep": "sleep",\n')

    # 5. the plan schema: kind enum, if/then, $defs entry
    def plan(schema: dict[str, Any]) -> None:
        test = schema["$defs"]["test"]
        test["properties"]["kind"]["enum"].append("sleep")
        test["allOf"].append(
            {"if": {"properties": {"kind": {"const": "sleep"}}}, "then": {"$ref": "#/$defs/sleep"}}
        )
        schema["$defs"]["sleep"] = {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind", "host"],
            "properties": {
                "kind": {"const": "sleep"},
                "id": {"$ref": "#/$defs/id"},
                "name": {"type": "string", "minLength": 1},
                "host": {"type": "string", "minLength": 1},
                "seconds": {"type": "number", "minimum": 0, "maximum": 1},
                "repetitions": {"type": "integer", "minimum": 1, "maximum": 100},
            },
        }

    edit_json(package / "schemas" / "plan.schema.json", plan)

    # 6. the run schema: kind enum, the repetition's new key
    def run(schema: dict[str, Any]) -> None:
        schema["$defs"]["test"]["properties"]["kind"]["enum"].append("sleep")
        schema["$defs"]["repetition"]["properties"]["slept_s"] = {
            "type": "number",
            "minimum": 0,
            "description": "sleep: how long the repetition slept, timed on the controller",
        }

    edit_json(package / "schemas" / "run.schema.json", run)


def test_the_add_a_kind_recipe_touches_the_files_it_lists_and_gives_a_working_kind(
    tmp_path: Path,
) -> None:
    listed = recipe_files("Add a test kind", "sleep")
    assert listed == {
        "nasplan/measure/kinds/sleep/__init__.py",
        "nasplan/measure/kinds/sleep/view.py",
        "nasplan/measure/kinds/sleep/section.md.j2",
        "nasplan/measure/kinds/__init__.py",
        "nasplan/schemas/plan.schema.json",
        "nasplan/schemas/run.schema.json",
    }
    root, before = copy_package(tmp_path)

    add_sleep_kind(root)

    assert changed(root, before) == listed
    (root / "inventory.yaml").write_text("hosts:\n  nas: {address: 198.18.0.10}\n")
    shutil.copy(ROOT / "tests" / "fixtures" / "runs" / "sample" / "run.json", root / "run.json")
    (root / "plan.yaml").write_text(
        "name: recipe\ninventory: inventory.yaml\n"
        "tests:\n  - {kind: sleep, host: nas, seconds: 0.001, repetitions: 2}\n"
    )
    said = run_in_copy(
        root,
        """
        import io
        import json
        from pathlib import Path

        import jsonschema

        import nasplan
        from nasplan.input.plan import load_plan
        from nasplan.measure.kinds import bind

        assert Path(nasplan.__file__).parent == Path("nasplan").resolve(), nasplan.__file__
        from nasplan.measure.kinds import readout
        from nasplan.progress import PlainProgress
        from nasplan.report import headline
        from nasplan.report.render import render_report
        from nasplan.run import listing
        from nasplan.run.kind_hooks import run_context
        from nasplan.run.overlap import Overlap

        assert Path(nasplan.__file__).parent == Path("nasplan").resolve(), nasplan.__file__
        plan = load_plan(Path("plan.yaml"))
        bound = bind(plan.tests[0])
        console = io.StringIO()
        ctx = run_context(plan, {}, PlainProgress(console), Path("run"), Overlap.serial())
        kept = []
        ctx.hooks.on_checkpoint = lambda: kept.append(1)
        record = bound.run(ctx)
        run_schema = json.loads(Path("nasplan/schemas/run.schema.json").read_text())
        test_schema = {"$defs": run_schema["$defs"], "$ref": "#/$defs/test"}
        jsonschema.validate({**record, "path": None}, test_schema)
        print(bound.test.kind, bound.description, bound.needs, record["status"])
        print(len(record["repetitions"]), record["summary"]["metric"], record["summary"]["n"])
        # what it says of itself: the estimate, the console, the results table, the headline
        print(listing.summary(plan))
        kind = readout(record)
        print(kind.result_text(record).split()[0], kind.repetition_text(record["repetitions"][0]))
        (row,) = headline.rows(record)
        print(row["group"], "|", row["measured"], "|", row["median_text"], "|", row["flow"])
        print(headline.headline([record, {**record, "id": "other"}])[0])
        # where it stood on the console, its checkpoints, its section of report.md
        print(console.getvalue().splitlines()[0], "|", len(kept), "checkpoints")
        run = json.loads(Path("run.json").read_text())
        report = render_report({**run, "tests": [*run["tests"], {**record, "path": None}]})
        print(next(line for line in report.splitlines() if line.startswith("- sleep")))
        """,
    )
    lines = said.splitlines()
    assert lines[:3] == [
        "sleep sleep 0.001 s, 2 times {} ok",
        "2 slept_s 2",
        "1 test; about 2 s (an estimate: a sleep takes what it asks; about 1.5 s to connect, check "
        "tools and report; installing tools not counted)",
    ]
    assert re.fullmatch(r"median 0\.00[0-9] s", lines[3]), lines[3]
    assert re.fullmatch(r"Sleep \| a pause on the host \| 0\.00[0-9] s \| –", lines[4])
    assert lines[5].startswith("Sleep: lowest 0.00"), lines[5]
    assert lines[6].startswith("test sleep"), lines[6]
    assert lines[6].endswith("| 2 checkpoints"), lines[6]
    assert re.fullmatch(r"- sleep-1: 0\.00[0-9] s a pause, 2 pauses", lines[7]), lines[7]


def test_the_add_a_platform_recipe_touches_the_files_it_lists_and_the_inventory_takes_it(
    tmp_path: Path,
) -> None:
    listed = recipe_files("Add a platform", "plan9")
    assert listed == {
        "nasplan/platforms/plan9.py",
        "nasplan/platforms/__init__.py",
        "nasplan/schemas/inventory.schema.json",
    }
    root, before = copy_package(tmp_path)
    package = root / "nasplan"
    # 1. the platform's module: a PlatformBase with only what differs
    (package / "platforms" / "plan9.py").write_text(
        textwrap.dedent(
            '''\
            """Plan 9: nothing to install, ever."""

            from __future__ import annotations

            from typing import TYPE_CHECKING

            from nasplan.platforms.base import Command, PlatformBase, not_shipped

            if TYPE_CHECKING:
                from nasplan.facts.gather import HostFacts


            class Plan9(PlatformBase):
                name = "plan9"
                aliases = frozenset({"9front"})

                def matches(self, facts: HostFacts) -> bool:
                    return facts.kernel_name == "Plan9"

                def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
                    raise not_shipped(missing, "Plan 9 has no packages")
            '''
        ),
        encoding="utf-8",
    )
    # 2. the registry: a kernel other than Linux goes first
    platforms_init = package / "platforms" / "__init__.py"
    insert_before(platforms_init, "        Windows(),\n", "        Plan9(),\n")
    insert_before(
        platforms_init,
        "from nasplan.platforms.qnap import Qnap\n",
        "from nasplan.platforms.plan9 import Plan9\n",
    )

    # 3. the inventory schema's platform enum
    def inventory(schema: dict[str, Any]) -> None:
        schema["$defs"]["platform"]["enum"] += ["plan9", "9front"]

    edit_json(package / "schemas" / "inventory.schema.json", inventory)

    assert changed(root, before) == listed
    (root / "inventory.yaml").write_text(
        "hosts:\n  glenda: {address: 198.18.0.9, platform: 9front}\n"
    )
    shutil.copy(ROOT / "tests" / "fixtures" / "facts" / "debian12-root.txt", root / "facts.txt")
    said = run_in_copy(
        root,
        """
        import dataclasses
        from pathlib import Path

        from nasplan.facts.gather import parse_facts
        from nasplan.input.inventory import load_inventory
        from nasplan.platforms import detect, posix_by_hint

        host = load_inventory(Path("inventory.yaml")).hosts["glenda"]
        facts = parse_facts(Path("facts.txt").read_text())
        platform = detect(dataclasses.replace(facts, kernel_name="Plan9"))
        print(platform.name, host.platform_hint in platform.hints, posix_by_hint("9front"))
        print(platform.install_commands(facts, ["iperf3"]), platform.network_refusal(facts))
        """,
    )
    assert said.splitlines() == ["plan9 True True", "[] None"]


def test_the_inventory_platform_enum_is_the_names_the_platforms_answer_to() -> None:
    enum = set(load_schema("inventory")["$defs"]["platform"]["enum"])
    answered = {hint for platform in registry() for hint in platform.hints}
    assert enum - {"auto"} == answered
