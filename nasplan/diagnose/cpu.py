"""CPU findings: one saturated core while the machine as a whole looks idle.

The sampler's whole-machine figure hides a single-threaded program: iperf3 before 3.16 (every
``-P`` stream in one thread), one iperf3 stream in any version, an SMB daemon serving one
connection. Its busiest-core figure (``resources.<host>.cpu_busiest_core_percent_median``) and
iperf3's own CPU figure (``cpu_client_percent``, ``cpu_server_percent``: the process's time
over the wall clock, so 100 = one core) show it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from nasplan.analysis import CPU_BOUND_PERCENT
from nasplan.diagnose.common import finding
from nasplan.measure import kinds

CAUSE = "cpu-core"


def _median(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return statistics.median(numbers) if numbers else None


def _facts(run: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    return ((run.get("hosts") or {}).get(host) or {}).get("facts") or {}


def _process_percent(test: Mapping[str, Any], host: str) -> float | None:
    """iperf3's own CPU figure of its process on ``host`` (median over ok repetitions)."""
    params = test.get("params") or {}
    side = {params.get("client"): "client", params.get("server"): "server"}.get(host)
    if side is None:  # (only iperf3 records its own process's CPU figure)
        return None
    reps = [r for r in test.get("repetitions") or [] if r.get("status") == "ok"]
    return _median([r.get(f"cpu_{side}_percent") for r in reps])


def core_load(run: Mapping[str, Any], test: Mapping[str, Any], host: str) -> dict[str, Any]:
    """What the run knows of ``host``'s CPU during ``test``: ``{"busiest_core_percent",
    "average_percent", "cores", "iperf3_process_percent"}`` (each None when unknown)."""
    sample = (test.get("resources") or {}).get(host) or {}
    return {
        "busiest_core_percent": sample.get("cpu_busiest_core_percent_median"),
        "average_percent": sample.get("cpu_busy_percent_median"),
        "cores": sample.get("cpu_cores") or _facts(run, host).get("cpu_cores"),
        "iperf3_process_percent": _process_percent(test, host),
    }


def saturated(load: Mapping[str, Any]) -> bool:
    """One core at its limit (sampler or iperf3's own figure) while the machine is not."""
    average = load["average_percent"]
    if average is not None and average >= CPU_BOUND_PERCENT:
        return False  # the whole machine is busy: the transfer verdicts' cpu-bound says so
    figures = (load["busiest_core_percent"], load["iperf3_process_percent"])
    return any(v is not None and v >= CPU_BOUND_PERCENT for v in figures)


def saturated_core(run: Mapping[str, Any], test: Mapping[str, Any], host: str) -> str | None:
    """``one core of nas at 100 % (average 27 % of 4)`` when one core of ``host`` was at its
    limit during ``test`` while the machine was not (what a kind's own causes are lent)."""
    load = core_load(run, test, host)
    return load_text(host, load) if saturated(load) else None


def load_text(host: str, load: Mapping[str, Any]) -> str:
    """``one core of nas at 100 % (average 27 % of 4)``, or iperf3's own figure."""
    core, average, cores = (load[k] for k in ("busiest_core_percent", "average_percent", "cores"))
    if core is not None and core >= CPU_BOUND_PERCENT:
        of = f" of {cores}" if cores else ""
        rest = f" (average {average:.0f} %{of})" if average is not None else ""
        return f"one core of {host} at {core:.0f} %{rest}"
    return f"iperf3 on {host} at {load['iperf3_process_percent']:.0f} % of one core"


def _advice(
    run: Mapping[str, Any], test: Mapping[str, Any], host: str, load: Mapping[str, Any]
) -> str:
    """Why one core, and what to do: the test's kind says (``Readout.core_advice``)."""
    version = _facts(run, host).get("iperf3_version")
    return kinds.readout(test).core_advice(test, host, {**load, "iperf3_version": version})


def _shared(run: Mapping[str, Any], host: str) -> list[str]:
    """Other hosts of the run on the same kernel as ``host`` (lab namespaces)."""
    boot = _facts(run, host).get("boot_id")
    hosts = run.get("hosts") or {}
    return sorted(h for h in hosts if h != host and boot and _facts(run, h).get("boot_id") == boot)


def _busiest_process_first(item: tuple[str, Mapping[str, Any]]) -> tuple[float, str]:
    percent = item[1]["iperf3_process_percent"]
    return (-(percent or 0.0), item[0])


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One finding per test and host with a saturated core (hosts on one kernel named once)."""
    found = []
    for test in run.get("tests") or []:
        if test.get("status") != "ok":
            continue
        said: set[str] = set()
        loads = {host: core_load(run, test, host) for host in test.get("resources") or {}}
        # the host whose iperf3 process was busiest first: on a shared kernel it is the one
        for host, load in sorted(loads.items(), key=_busiest_process_first):
            shared = _shared(run, host)
            if host in said or not saturated(load):
                continue
            said.update([host, *shared])
            note = (
                f" (the whole machine's core: {host} shares one kernel with {', '.join(shared)})"
                if shared and load["busiest_core_percent"] is not None
                else ""
            )
            text = f"{load_text(host, load)}{note} — {_advice(run, test, host, load)}."
            found.append(finding(CAUSE, test["id"], host, text, {**load, "shared_with": shared}))
    return found
