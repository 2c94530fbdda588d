"""The add-a-test-kind recipe of docs/architecture.md, followed for ``kind: sleep`` (a pause on one
host, timed there by ``time -p``, a tool new to nasplan) in a scratch copy of the checkout: it
touches the files its steps name and no other, the guards and the kind's own test pass, and
there ``nasplan apply`` runs a plan of it on this machine (a local host) and its section of
report.md shows it. A step left out leaves a guard red."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from scratch_tree import Recipe, ScratchTree

SETTINGS = '''\
"""`kind: sleep`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SleepSettings:
    """How long each repetition sleeps on the host."""

    seconds: float = 0.01
'''

KIND = '''\
"""The ``sleep`` test kind: a pause on one host, timed there by ``time -p``."""

from __future__ import annotations

from typing import Any

from nasplan.analysis import summarize
from nasplan.errors import CannotStart
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure.estimate import Estimate
from nasplan.measure.kind import Kind, Needs, Record, RunContext, Section
from nasplan.measure.kinds.sleep import gnu_time
from nasplan.measure.kinds.sleep.settings import SleepSettings
from nasplan.measure.pair import check_ready, host_tool
from nasplan.measure.record import finish, new_record
from nasplan.measure.series import Series

METRIC = "slept_s"


class Sleep(Kind[SleepSettings]):
    """``kind: sleep``: how long a pause took on the host, lower is better."""

    name = "sleep"
    phrase = "pauses"
    groups = ("Sleep",)
    lower_is_better = True
    metric = METRIC
    section = Section(__name__)

    def settings(self, test: PlanTest) -> SleepSettings:
        return SleepSettings(float(test.settings.get("seconds", SleepSettings.seconds)))

    def needs(self, test: PlanTest, s: SleepSettings) -> Needs:
        return {test.hosts[0]: ("time",)}

    def describe(self, test: PlanTest, s: SleepSettings) -> str:
        return f"time -p sleep {s.seconds:g} on {test.hosts[0]}, {test.repetitions} times"

    def estimate(self, test: PlanTest, s: SleepSettings, plan: Plan) -> Estimate:
        return Estimate(s.seconds * test.repetitions, ("a sleep takes what it asks",))

    def run(self, test: PlanTest, s: SleepSettings, ctx: RunContext) -> dict[str, Any]:
        record = new_record(test, {"host": test.hosts[0], "seconds": s.seconds}, METRIC)
        session = ctx.sessions[test.hosts[0]]
        try:
            check_ready(test, ctx, self.needs(test, s))
            time_path = host_tool(session, "time")
        except CannotStart as exc:
            return finish(record, [str(exc)])
        assert session.runner is not None
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, s.seconds * test.repetitions)
            rep: dict[str, Any] = {"index": index, "status": "failed", "raw_file": None}
            try:
                raw, slept_s = gnu_time.timed_sleep(session.runner, time_path, s.seconds)
            except gnu_time.TimeError as exc:
                rep["error"] = str(exc)
            else:
                raw_file = ctx.save_raw(f"raw/{test.dir_name}/rep-{index}.txt", raw)
                rep.update(status="ok", error=None, raw_file=raw_file, slept_s=slept_s)
            record["repetitions"].append(rep)
            ctx.checkpoint(record)
        return self.summarize(record, s)

    def summarize(self, record: dict[str, Any], s: SleepSettings) -> dict[str, Any]:
        reps = record["repetitions"]
        record["summary"] = summarize([r[METRIC] for r in reps if r["status"] == "ok"], METRIC)
        errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
        return finish(record, errors)

    def measured(self, record: Record, series: Series | None) -> str:
        return "a pause on the host"


KIND = Sleep()
'''

TOOL = '''\
"""``time -p`` (POSIX): the argv that times a sleep on the host, and a pure parser of its lines."""

from __future__ import annotations

from nasplan.errors import ToolError
from nasplan.remote.runner import Runner


class TimeError(ToolError):
    """time failed or printed no ``real`` line."""


def argv(time_path: str, seconds: float) -> list[str]:
    return [time_path, "-p", "sleep", f"{seconds:g}"]


def parse(output: str) -> float:
    """The ``real`` seconds of ``time -p``'s lines (on its stderr)."""
    for line in output.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "real":
            return float(words[1])
    raise TimeError(f"no real line from time -p: {output.strip()[-200:]!r}")


def timed_sleep(runner: Runner, time_path: str, seconds: float) -> tuple[str, float]:
    """(what time said, the seconds it measured) of one sleep on ``runner``'s host."""
    result = runner.run(argv(time_path, seconds), timeout_s=seconds + 30)
    if not result.ok:
        raise TimeError(f"time -p sleep failed: {result.stderr.strip()[-200:]}")
    return result.stderr, parse(result.stderr)
'''

SECTION = """\
## Pauses

{% for t in tests %}
- {{ t.heading }}: {{ t.results[0].median_text }} a pause, {{ t.repetitions | length }} pauses
{% endfor %}
"""

# what ``/usr/bin/time -p sleep 0.05`` (GNU time) wrote to stderr on Debian 12
CAPTURE = "real 0.05\nuser 0.00\nsys 0.00\n"

UNIT_TEST = '''\
"""kind: sleep: run() through the runner seam, time -p's lines on a real capture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure import kinds
from nasplan.measure.kinds.sleep import gnu_time

CAPTURE = Path(__file__).resolve().parents[3] / "fixtures" / "time" / "sleep-p.txt"
TEST = "  - {id: nap, kind: sleep, host: nas, seconds: 0.05, repetitions: 2}\\n"


def test_each_pause_is_the_real_seconds_time_says(kind_context: Callable[..., Any]) -> None:
    ctx, nas, _ = kind_context(TEST, {"time": "/usr/bin/time"})
    for _ in range(2):
        nas.expect("/usr/bin/time -p sleep 0.05", stderr=CAPTURE.read_text())

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert [r["slept_s"] for r in record["repetitions"]] == [0.05, 0.05]
    raw = ctx.hooks.run_dir / record["repetitions"][0]["raw_file"]
    assert raw.read_text() == CAPTURE.read_text()


def test_a_host_without_time_cannot_start_the_test(kind_context: Callable[..., Any]) -> None:
    ctx, _, _ = kind_context(TEST)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed" and "time" in record["error"]


def test_output_without_a_real_line_is_the_tool_s_error() -> None:
    with pytest.raises(gnu_time.TimeError, match="no real line"):
        gnu_time.parse("sleep: invalid time interval 'x'")
'''


def follow(tree: ScratchTree, leave_out: int | None = None) -> None:
    """The recipe's steps in its order, with its *Only when* step for a new tool (``time``);
    step ``leave_out`` not taken."""

    def step(number: int) -> bool:
        return number != leave_out

    folder = "nasplan/measure/kinds/sleep"
    # 1. its settings; 2. the kind; 3. its section of report.md
    tree.write(f"{folder}/settings.py", SETTINGS)
    tree.write(f"{folder}/__init__.py", KIND)
    tree.write(f"{folder}/section.md.j2", SECTION)
    # 4. the registry, last: the report's last section
    tree.insert_after(
        "nasplan/measure/kinds/__init__.py",
        '    "ping-sweep": "ping_sweep",\n',
        '    "sleep": "sleep",\n',
    )

    # 5. the plan schema: kind enum, if/then, $defs entry
    def plan(schema: dict[str, Any]) -> None:
        test = schema["$defs"]["test"]
        test["properties"]["kind"]["enum"].append("sleep")
        test["allOf"].append(
            {"if": {"properties": {"kind": {"const": "sleep"}}}, "then": {"$ref": "#/$defs/sleep"}}
        )
        schema["$defs"]["sleep"] = {
            "type": "object",
            "description": "a pause on one host, timed there by time -p",
            "additionalProperties": False,
            "required": ["kind", "host"],
            "properties": {
                "kind": {"const": "sleep"},
                "id": {"$ref": "#/$defs/id"},
                "name": {"type": "string", "minLength": 1},
                "host": {"type": "string", "minLength": 1, "description": "the host that sleeps"},
                "seconds": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "default": 0.01,
                    "description": "how long each repetition sleeps",
                },
                "repetitions": {"type": "integer", "minimum": 1, "maximum": 100},
            },
        }

    tree.edit_json("nasplan/schemas/plan.schema.json", plan)

    # 6. the run schema: kind enum, the repetition's new key
    def run(schema: dict[str, Any]) -> None:
        schema["$defs"]["test"]["properties"]["kind"]["enum"].append("sleep")
        schema["$defs"]["repetition"]["properties"]["slept_s"] = {
            "type": "number",
            "minimum": 0,
            "description": "sleep: how long the repetition slept, as time -p measured it",
        }

    tree.edit_json("nasplan/schemas/run.schema.json", run)
    # 7. the reference page
    if step(7):
        tree.regenerate_references()
    # 8. the module table (and step 11's tool)
    if step(8):
        tree.insert_before(
            "docs/architecture.md",
            "\n### Results, analysis, documents",
            "| `nasplan/measure/kinds/sleep/__init__.py` | `kind: sleep`: a pause on one host |\n"
            "| `nasplan/measure/kinds/sleep/settings.py` | its settings, `SleepSettings` |\n"
            "| `nasplan/measure/kinds/sleep/gnu_time.py` | `time -p` argv, parser, one sleep |\n"
            "| `nasplan/measure/kinds/sleep/section.md.j2` | its section |\n",
        )
    # 9. the manual
    tree.insert_before(
        "docs/measurements.md",
        "## Host resources while a test runs",
        "## Pauses\n\n`kind: sleep` with `host:` times a pause there (`time -p`): a plan's "
        "smallest test.\n\n",
    )
    # 10. its unit test, on time's output
    tree.write("tests/unit/measure/kinds/test_sleep.py", UNIT_TEST)
    # 11. (only when: its tool is new) the tool's module, its capture, its name in the facts
    tree.write(f"{folder}/gnu_time.py", TOOL)
    tree.write("tests/fixtures/time/sleep-p.txt", CAPTURE)
    tree.insert_after("nasplan/facts/gather.py", '    "fio",\n', '    "time",\n')


def test_the_recipe_names_the_files_of_each_of_its_steps() -> None:
    recipe = Recipe.read("Add a test kind", "sleep", TOOL="gnu_time")
    folder = "nasplan/measure/kinds/sleep"
    assert recipe.files == {
        f"{folder}/settings.py",
        f"{folder}/__init__.py",
        f"{folder}/section.md.j2",
        "nasplan/measure/kinds/__init__.py",
        "nasplan/schemas/plan.schema.json",
        "nasplan/schemas/run.schema.json",
    }
    assert recipe.other_files == {
        "docs/plan-reference.md",
        "docs/architecture.md",
        "docs/measurements.md",
        "tests/unit/measure/kinds/test_sleep.py",
    }
    # a tool new to nasplan: where the facts and the platforms find it; a secret: the check
    # before the run asks for its variable (every *_env value is masked already: output.py)
    assert {
        f"{folder}/gnu_time.py",
        "nasplan/facts/gather.py",
        "nasplan/platforms/debian.py",
        "nasplan/platforms/macos.py",
        "nasplan/platforms/windows.py",
        "nasplan/facts/windows.py",
        "nasplan/run/planned.py",
    } <= recipe.only_when
    (secret,) = [s for s in recipe.steps if "nasplan/run/planned.py" in s]
    assert secret.startswith("*Only when*") and "`output.py`" in secret


def test_the_kind_recipe_gives_a_kind_the_guards_its_test_and_apply_accept(
    tmp_path: Path,
) -> None:
    recipe = Recipe.read("Add a test kind", "sleep", TOOL="gnu_time")
    tree = ScratchTree.copy(tmp_path)

    follow(tree)

    applied = {"nasplan/measure/kinds/sleep/gnu_time.py", "nasplan/facts/gather.py"}
    recipe.assert_touched(tree.changed(), {*applied, "tests/fixtures/"})
    tree.assert_guards_pass(extra=["tests/unit/measure/kinds/test_sleep.py"])
    if shutil.which("time") is None:
        pytest.skip("no time(1) here for apply to run kind: sleep with")
    tree.write("inventory.yaml", "hosts:\n  me: {connection: local}\n")
    tree.write(
        "plan.yaml",
        "name: naps\ninventory: inventory.yaml\n"
        "tests:\n  - {id: nap, kind: sleep, host: me, seconds: 0.05, repetitions: 2}\n",
    )
    run = tmp_path / "run"
    done = tree.cli("apply", "plan.yaml", "--out", str(run))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (record,) = json.loads((run / "run.json").read_text())["tests"]
    assert (record["kind"], record["status"], len(record["repetitions"])) == ("sleep", "ok", 2)
    assert all(0.04 <= rep["slept_s"] < 1 for rep in record["repetitions"])
    report = (run / "report.md").read_text()
    assert "| a pause on the host |" in report  # the results table's Measured cell
    assert "\n## Pauses\n" in report
    assert re.search(r"^- nap: 0\.0[0-9]+ s a pause, 2 pauses$", report, re.MULTILINE), report


@pytest.mark.parametrize(
    ("left_out", "guard"),
    [
        (7, "tests/unit/test_docs_reference.py"),
        (8, "tests/unit/test_architecture.py"),
    ],
)
def test_a_step_left_out_leaves_its_guard_red(tmp_path: Path, left_out: int, guard: str) -> None:
    tree = ScratchTree.copy(tmp_path)

    follow(tree, leave_out=left_out)

    done = tree.run_guards(guards=[guard])
    assert done.returncode != 0, f"{guard} passed without step {left_out}"
    assert "sleep" in done.stdout
