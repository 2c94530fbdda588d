"""``nasplan apply``: connect, gather facts, prepare tools, run tests, save run.json + report."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nasplan import __version__
from nasplan.analysis import annotate_transfers
from nasplan.hosts import HostSession, close_sessions, open_sessions, planned_installs, prepare
from nasplan.inventory import Host
from nasplan.measure import kinds
from nasplan.measure.kind import BoundTest, RunContext, skipped, summary_text
from nasplan.network.phase import NetworkPhase, describe_changes
from nasplan.plan import Plan
from nasplan.progress import Progress
from nasplan.report.render import write_report
from nasplan.results import new_run_dir, save_run
from nasplan.runner import Runner
from nasplan.ssh import connect

EXIT_OK, EXIT_TEST_FAILED, EXIT_UNREACHABLE = 0, 1, 3


@dataclass(frozen=True)
class Outcome:
    """What apply did: the run directory (None for --check) and the exit code."""

    run_dir: Path | None
    exit_code: int


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def connect_with_passwords(passwords: Mapping[str, str]) -> Callable[[Host], Runner]:
    """``ssh.connect`` handing each host its sudo password (None when it has none)."""

    def one(host: Host) -> Runner:
        return connect(host, become_password=passwords.get(host.name))

    return one


def plan_hosts(plan: Plan) -> dict[str, Host]:
    """The inventory hosts a plan uses, with the plan's known_hosts applied when it names one."""
    hosts = {name: plan.inventory.hosts[name] for name in plan.host_names}
    if plan.known_hosts is not None:
        hosts = {n: dataclasses.replace(h, known_hosts=plan.known_hosts) for n, h in hosts.items()}
    return hosts


def bound_tests(plan: Plan) -> list[BoundTest]:
    """The plan's tests, each bound to its kind with its settings parsed once."""
    return [kinds.bind(test) for test in plan.tests]


def tool_needs(plan: Plan, bound: list[BoundTest] | None = None) -> dict[str, list[str]]:
    """Host -> the tools its tests need, plus the plan's ``setup.packages`` on every host."""
    needs: dict[str, set[str]] = {name: set(plan.setup_packages) for name in plan.host_names}
    for one in bound_tests(plan) if bound is None else bound:
        for host, tools in one.needs.items():
            needs.setdefault(host, set()).update(tools)
    return {host: sorted(tools) for host, tools in needs.items()}


def check(plan: Plan, progress: Progress, connector: Callable[[Host], Runner] = connect) -> Outcome:
    """``apply --check``: connect and gather facts, print what would happen, change nothing."""
    bound = bound_tests(plan)
    sessions = open_sessions(plan_hosts(plan), progress, connector)
    try:
        needs = tool_needs(plan, bound)
        for name, session in sessions.items():
            if session.error:
                progress.message(f"{name}: UNREACHABLE: {session.error}")
                continue
            platform = session.platform.name if session.platform else "?"
            installs = planned_installs(session, needs.get(name, []))
            todo = f"would {'; '.join(installs)}" if installs else "nothing to install"
            progress.message(f"{name} ({platform}): {todo}")
            for warning in session.warnings:
                progress.message(f"warning: {warning}")
        for name in plan.network.hosts:
            facts = sessions[name].facts if name in sessions else None
            current = {nic.name: nic for nic in facts.interfaces} if facts else {}
            for line in describe_changes(plan.network.changes(name), current):
                progress.message(f"{name}: would set {line} (and put it back after the run)")
        for one in bound:
            progress.message(f"test {one.test.id}: would run {one.description}")
        unreachable = any(s.error for s in sessions.values())
        return Outcome(None, EXIT_UNREACHABLE if unreachable else EXIT_OK)
    finally:
        close_sessions(sessions)


def apply(
    plan: Plan,
    progress: Progress,
    *,
    out: Path | None = None,
    base_dir: Path | None = None,
    connector: Callable[[Host], Runner] = connect,
    keep: bool = False,
    become_passwords: Mapping[str, str] | None = None,
) -> Outcome:
    """Run the plan; always saves run.json and report.md, also after a failure or Ctrl-C.

    Declared network changes are made after prepare and undone at the end (``keep``: left).
    ``become_passwords`` (host -> sudo password) go to sudo on stdin and are masked in files.
    """
    if become_passwords and connector is connect:
        connector = connect_with_passwords(become_passwords)
    bound = bound_tests(plan)
    started = _utc_now()
    run_dir = new_run_dir(base_dir or Path.cwd(), plan.name, started, out)
    run: dict[str, Any] = {
        "schema_version": 1,
        "nasplan_version": __version__,
        "run_id": run_dir.name,
        "plan_file": str(plan.path),
        "inventory_file": str(plan.inventory.path),
        "plan": dict(plan.resolved),
        "started_at": _iso(started),
        "finished_at": None,
        "status": "interrupted",
        "hosts": {},
        "tests": [],
        "warnings": [],
    }
    sessions: dict[str, HostSession] = {}
    ctx = RunContext(plan, sessions, run_dir, progress)
    ctx.secrets.extend(sorted(set((become_passwords or {}).values())))
    network = NetworkPhase(
        plan.network,
        sessions,
        run_dir,
        progress,
        connector,
        keep=keep,
        inventory_file=str(plan.inventory.path.resolve()),
        known_hosts=str(plan.known_hosts.resolve()) if plan.known_hosts else None,
    )
    try:
        sessions.update(open_sessions(plan_hosts(plan), progress, connector))
        prepare(sessions, tool_needs(plan, bound), progress)
        network.setup()
        for one in bound:
            if not network.ok:
                record = skipped(one.test, f"network setup failed: {network.error}")
            else:
                record = one.run(ctx)
            run["tests"].append(record)
            shown = summary_text(record["summary"])
            progress.test_done(one.test.id, record["status"], record["error"] or shown)
        memory = {n: s.facts.memory_bytes if s.facts else None for n, s in sessions.items()}
        annotate_transfers(run["tests"], memory)
        network.teardown()
        # A host that was reached but cannot be used (sudo refused, tools missing) counts too.
        unreachable = any(s.facts is None or s.error for s in sessions.values())
        failed = any(t["status"] != "ok" for t in run["tests"]) or not network.ok
        run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(run_dir, code)
    finally:
        try:
            network.teardown()  # a no-op when done above; restores after an error or Ctrl-C
        finally:
            close_sessions(sessions)
            run["finished_at"] = _iso(_utc_now())
            run["hosts"] = {name: s.to_dict() for name, s in sorted(sessions.items())}
            run["warnings"] = [w for s in sessions.values() for w in s.warnings] + ctx.warnings
            if network.active:
                run["network"] = network.to_dict()
                run["warnings"] += network.warnings
            save_run(run_dir, run, secrets=ctx.secrets)
            write_report(run_dir)
