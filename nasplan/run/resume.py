"""``nasplan apply --resume RUN_DIR``: what an interrupted or partly failed run left to do.

A run records the fingerprints of what it ran (``fingerprints``: the plan as resolved, -e vars
included, and the inventory as loaded) at its start; a resumed run must bring the same ones
(``previous_run`` says which differs, before anything connects). It keeps each direction of
each repetition that ended ok (a write whose read never ran too), runs the failed and missing
ones again in the run's order (with its seed), none twice, in the same run directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.plan import Plan
from nasplan.measure import kinds
from nasplan.measure.merge import done_indices
from nasplan.results import load_run

# a network setting still changed on a host (killed run, --keep, a host nasplan could not reach)
_NOT_PUT_BACK = ("changed", "kept", "left-to-host")


def _canonical(value: Any) -> str:
    def plain(item: Any) -> Any:
        return str(item.resolve()) if isinstance(item, Path) else str(item)

    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=plain)


def fingerprints(plan: Plan) -> dict[str, str]:
    """``{"plan_sha256", "inventory_sha256"}``: SHA-256 of the resolved plan and of the
    loaded inventory (hosts without their file positions, groups, vars), canonical JSON."""
    hosts = {
        name: {k: v for k, v in dataclasses.asdict(host).items() if k != "origin"}
        for name, host in plan.inventory.hosts.items()
    }
    inventory = {"hosts": hosts, "groups": plan.inventory.groups, "vars": plan.inventory.vars}
    return {
        "plan_sha256": hashlib.sha256(_canonical(plan.resolved).encode()).hexdigest(),
        "inventory_sha256": hashlib.sha256(_canonical(inventory).encode()).hexdigest(),
    }


@dataclass(frozen=True)
class Previous:
    """The run being resumed: its run.json, and its test records by id."""

    run_dir: Path
    run: dict[str, Any]

    @property
    def records(self) -> dict[str, dict[str, Any]]:
        return {test["id"]: test for test in self.run.get("tests") or []}

    @property
    def seed(self) -> int | None:
        seed = self.run.get("seed")
        return seed if isinstance(seed, int) else None

    def nothing_to_do(self, plan: Plan) -> bool:
        """Whether every repetition of every test of the plan ended ok."""
        records = self.records
        for test in plan.tests:
            record = records.get(test.id)
            if record is None or record.get("status") == "skipped":
                return False
            done = done_indices(record, kinds.readout(record).directions_asked(record))
            rule = (record.get("adaptive") or {}) if test.adaptive else None
            if rule is not None and (rule.get("reached") or len(done) >= test.repetitions):
                continue
            if len(done) < test.repetitions:
                return False
        return self.run.get("status") != "interrupted"


def previous_run(run_dir: Path, plan: Plan) -> Previous:
    """The run in ``run_dir``, checked against ``plan``; InputError (nothing touched) when it
    is no run directory, ran another plan or inventory, or left a network setting changed."""
    if not (run_dir / "run.json").is_file():
        raise InputError(f"{run_dir}: not a run directory (no run.json in it)")
    run = load_run(run_dir)
    now = fingerprints(plan)
    for key, what in (("plan_sha256", "plan"), ("inventory_sha256", "inventory")):
        if key not in run:
            raise InputError(f"{run_dir}/run.json has no {key}: a run before --resume existed")
        if run[key] != now[key]:
            given = plan.path if what == "plan" else plan.inventory.path
            raise InputError(
                f"{given}: the {what} is not the one {run_dir.name} ran ({key} "
                f"{now[key][:12]}… here, {run[key][:12]}… in its run.json){_hint(what)}"
            )
    _refuse_changed_network(run_dir, run.get("network") or {})
    return Previous(run_dir, run)


def _hint(what: str) -> str:
    if what == "plan":
        return ": resume with the same plan file, -i and -e as the run had"
    return ": resume with the inventory the run had (its hosts, interfaces and vars)"


def _refuse_changed_network(run_dir: Path, network: Mapping[str, Any]) -> None:
    hosts = sorted(
        name
        for name, host in (network.get("hosts") or {}).items()
        if (host or {}).get("status") in _NOT_PUT_BACK
    )
    if hosts:
        raise InputError(
            f"{run_dir}: the run left network settings changed on {', '.join(hosts)}: "
            f"put them back first (nasplan restore {run_dir})"
        )


def resume_command(
    run_dir: Path,
    extra_vars: Sequence[str] = (),
    limit: Sequence[str] = (),
    tests: Sequence[str] = (),
    *,
    keep: bool = False,
    ask_become_pass: bool = False,
) -> str:
    """The command that finishes a stopped run, with what it ran with that ``--resume`` needs
    again (its ``-e``, ``--limit``, ``--tests``, ``--keep``, ``-K``), quoted for a POSIX shell:
    ``nasplan apply --resume runs/20261202T031900Z-nas -e 'duration_s=2'``."""
    argv = ["nasplan", "apply", "--resume", str(run_dir)]
    for flag, values in (("-e", extra_vars), ("--limit", limit), ("--tests", tests)):
        for value in values:
            argv += [flag, value]
    argv += ["--keep"] * keep + ["-K"] * ask_become_pass
    return shlex.join(argv)
