"""``nasplan apply --list-tests``: the tests a run would run (a matrix's cells, a subset), each
with its kind, hosts and repetitions, and an estimate of the run's duration, from the plan
alone: nothing connects.

Each kind estimates its own tests (``Kind.estimate``: its settings, the path's nominal rate in
the inventory); connecting, gathering facts and installing tools come on top.
"""

from __future__ import annotations

from typing import Any

from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import kinds
from nasplan.measure.estimate import RUN_S, Estimate


def seconds_of(plan: Plan, test: PlanTest) -> float:
    """One test's estimated seconds."""
    return estimate_of(plan, test).seconds


def estimate_of(plan: Plan, test: PlanTest) -> Estimate:
    """One test's estimate, by its kind."""
    return kinds.bind(test).estimate(plan)


def estimate(plan: Plan) -> Estimate:
    """The whole run's estimate: every test's, and each assumption once."""
    total = Estimate(0.0)
    for test in plan.tests:
        total += estimate_of(plan, test)
    start = Estimate(RUN_S, (f"about {RUN_S:g} s to connect, check tools and report",))
    return total + start + Estimate(0.0, ("installing tools not counted",))


def _cells(plan: Plan) -> int:
    return sum(1 for test in plan.tests if test.cell)


def listing(plan: Plan) -> dict[str, Any]:
    """``--list-tests --format json``: ``{"plan", "tests": [{id, base_id, cell, kind, hosts,
    repetitions, estimate_s}], "count", "matrix_cells", "subset", "estimate"}``."""
    return {
        "plan": plan.name,
        "tests": [
            {
                "id": test.id,
                "base_id": test.base_id or test.id,
                "cell": dict(test.cell),
                "kind": test.kind,
                "hosts": list(test.hosts),
                "repetitions": test.repetitions,
                "estimate_s": round(seconds_of(plan, test), 1),
            }
            for test in plan.tests
        ],
        "count": len(plan.tests),
        "matrix_cells": _cells(plan),
        "subset": dict(plan.subset) if plan.subset else None,
        "estimate": estimate(plan).to_dict(),
    }


def summary(plan: Plan) -> str:
    """``12 tests (12 matrix cells), of 36 in the plan; about 9 min 40 s (an estimate: ...)``."""
    count = len(plan.tests)
    cells = _cells(plan)
    text = f"{count} test{'s' if count != 1 else ''}"
    if cells:
        text += f" ({cells} matrix cell{'s' if cells != 1 else ''})"
    if plan.subset:
        text += f", of {plan.subset['of']} in the plan"
    return f"{text}; {estimate(plan).text()}"


def lines(plan: Plan) -> list[str]:
    """The listing for the console: ``plan NAME:``, one line per test, the summary."""
    out = [f"plan {plan.name}:"]
    width = max(len(test.id) for test in plan.tests)
    kind_width = max([10, *(len(test.kind) for test in plan.tests)])  # disk-profile: 12
    for test in plan.tests:
        hosts = ", ".join(test.hosts)
        reps = f"{test.repetitions} rep{'s' if test.repetitions != 1 else ''}"
        if test.adaptive is not None:
            reps = f"{test.adaptive.min_n}-{test.repetitions} reps"
        out.append(f"  {test.id:<{width}}  {test.kind:<{kind_width}}  {hosts:<16}  {reps}")
    return [*out, summary(plan)]
