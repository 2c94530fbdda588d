"""``nasplan apply --list-tests``: the tests a run would run (a matrix's cells, a subset), each
with its kind, hosts and repetitions, and an estimate of the run's duration, from the plan
alone: nothing connects.

The estimate is a floor, not a promise: iperf3 (duration + omit + ~1 s) per repetition; a
transfer or an iSCSI test its bytes over the path's nominal rate (the target interface's speed
in the inventory; ``ASSUMED_PATH_BITS_PER_SECOND`` when none is known); a disk test its bytes at
``ASSUMED_DISK_BYTES_PER_SECOND``; pings their count × interval. Connecting, gathering facts and
installing tools come on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan.input.plan import Plan, PlanTest
from nasplan.units import format_bits_per_second, parse_size

STEP_S = 1.0  # a repetition's own start and end: a server started, a file opened, a clean-up
ASSUMED_PATH_BITS_PER_SECOND = 1_000_000_000
ASSUMED_DISK_BYTES_PER_SECOND = 200 * 2**20  # 200 MiB/s: a single hard disk's sequential rate
DEFAULT_SIZE = {"transfer": "1GiB", "disk": "64MiB", "iscsi": "64MiB"}


@dataclass(frozen=True)
class Estimate:
    """A run's estimated duration (``seconds``) and what it assumed, in words."""

    seconds: float
    assumptions: tuple[str, ...] = ()

    def text(self) -> str:
        """``about 12 min 30 s (an estimate: ...)``."""
        said = "; ".join(self.assumptions)
        return f"about {duration_text(self.seconds)} (an estimate{': ' + said if said else ''})"

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 1), "assumptions": list(self.assumptions)}


def duration_text(seconds: float) -> str:
    """``75`` -> ``1 min 15 s``; ``7300`` -> ``2 h 1 min``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def path_bits_per_second(plan: Plan, test: PlanTest) -> int | None:
    """The nominal rate of the interface the test targets (the inventory's speed, both ends of
    a plan link), None when the inventory does not say."""
    hosts = plan.inventory.hosts
    network = test.network or plan.network
    link = network.link(test.target.link) if test.target.link else None
    ends = [(e.host, e.interface_key) for e in (link.a, link.b)] if link else []
    if not ends and test.target.host and test.target.interface:
        ends = [(test.target.host, test.target.interface)]
    speeds = [
        iface.speed_bits_per_second
        for host, key in ends
        if host in hosts and key and (iface := hosts[host].interfaces.get(key)) is not None
        and iface.speed_bits_per_second
    ]  # fmt: skip
    return min(speeds) if speeds else None


def _directions(settings: Mapping[str, Any]) -> int:
    return 2 if settings.get("direction", "both") == "both" else 1


def seconds_of(plan: Plan, test: PlanTest) -> tuple[float, str | None]:
    """One test's estimated seconds, and an assumption it made (None when it made none)."""
    s, reps = test.settings, test.repetitions
    if test.kind == "iperf3":
        return (int(s.get("duration_s", 10)) + int(s.get("omit_s", 0)) + STEP_S) * reps, None
    if test.kind in ("latency", "ping-sweep"):
        count = int(s.get("count", 10 if test.kind == "latency" else 2))
        sizes = len(s.get("sizes_bytes", [1500, 9000])) if test.kind == "ping-sweep" else 1
        return (count * float(s.get("interval_s", 0.2)) * sizes + STEP_S) * reps, None
    size_bytes = parse_size(s.get("size", DEFAULT_SIZE.get(test.kind, "64MiB")))
    moved_bytes = size_bytes * _directions(s)
    if test.kind == "disk":
        if s.get("path", "").find(":\\") == 1:  # diskspd on Windows runs duration_s
            return (int(s.get("duration_s", 10)) + STEP_S) * _directions(s) * reps, None
        rate = ASSUMED_DISK_BYTES_PER_SECOND
        return (moved_bytes / rate + STEP_S) * reps, "disks at 200 MiB/s"
    bits = path_bits_per_second(plan, test)
    said = "transfers at the path's nominal rate"
    if bits is None:
        bits = ASSUMED_PATH_BITS_PER_SECOND
        said = f"paths of unknown speed at {format_bits_per_second(bits)}"
    return (moved_bytes * 8 / bits + STEP_S * _directions(s)) * reps, said


def estimate(plan: Plan) -> Estimate:
    """The whole run's estimate: every test's, and each assumption once."""
    total, assumed = 0.0, []
    for test in plan.tests:
        seconds, said = seconds_of(plan, test)
        total += seconds
        if said and said not in assumed:
            assumed.append(said)
    assumed.append("connecting and installing not counted")
    return Estimate(total, tuple(assumed))


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
                "estimate_s": round(seconds_of(plan, test)[0], 1),
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
    for test in plan.tests:
        hosts = ", ".join(test.hosts)
        reps = f"{test.repetitions} rep{'s' if test.repetitions != 1 else ''}"
        if test.adaptive is not None:
            reps = f"{test.adaptive.min_n}-{test.repetitions} reps"
        out.append(f"  {test.id:<{width}}  {test.kind:<10}  {hosts:<16}  {reps}")
    return [*out, summary(plan)]
