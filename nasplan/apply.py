"""``nasplan apply``: connect, gather facts, prepare tools, run tests, save run.json + report."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nasplan import __version__
from nasplan.analysis import efficiency, summarize
from nasplan.hosts import HostSession, close_sessions, open_sessions, planned_installs, prepare
from nasplan.inventory import Host
from nasplan.measure import iperf3
from nasplan.paths import describe_path, nic_holding, nic_towards, path_end
from nasplan.plan import Plan, TestSpec
from nasplan.progress import Progress
from nasplan.report.render import write_report
from nasplan.results import new_run_dir, save_raw, save_run
from nasplan.runner import Runner
from nasplan.ssh import connect
from nasplan.units import format_bits_per_second

EXIT_OK, EXIT_TEST_FAILED, EXIT_UNREACHABLE = 0, 1, 3
REQUIRED_TOOLS = {"iperf3": ("iperf3",)}


@dataclass(frozen=True)
class Outcome:
    """What apply did: the run directory (None for --check) and the exit code."""

    run_dir: Path | None
    exit_code: int


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def plan_hosts(plan: Plan) -> dict[str, Host]:
    """The inventory hosts a plan uses, with the plan's known_hosts applied when it names one."""
    hosts = {name: plan.inventory.hosts[name] for name in plan.host_names}
    if plan.known_hosts is not None:
        hosts = {n: dataclasses.replace(h, known_hosts=plan.known_hosts) for n, h in hosts.items()}
    return hosts


def _packages(plan: Plan) -> list[str]:
    wanted = set(plan.setup_packages)
    for test in plan.tests:
        wanted.update(REQUIRED_TOOLS.get(test.kind, ()))
    return sorted(wanted)


def target_address(test: TestSpec, plan: Plan, server: HostSession) -> str:
    """The address the client sends to: the target interface's, else the server's address."""
    target = test.target
    if target.address:
        return target.address
    if target.interface:
        iface = plan.inventory.hosts[test.server].interfaces[target.interface]
        if iface.address:
            return iface.address
        nic = server.facts.interface(iface.name) if server.facts else None
        for cidr in nic.addresses if nic else ():
            if ":" not in cidr:
                return cidr.split("/")[0]
        raise ValueError(
            f"interface {target.label()} ({iface.name}) has no IPv4 address in the inventory "
            "or on the host"
        )
    return server.host.address


def iperf3_params(test: TestSpec) -> iperf3.Iperf3Params:
    """Plan settings -> the measurement's parameters."""
    s = test.settings
    window = s.get("window")
    return iperf3.Iperf3Params(
        duration_s=int(s.get("duration_s", 10)),
        omit_s=int(s.get("omit_s", 0)),
        parallel=int(s.get("parallel", 1)),
        reverse=bool(s.get("reverse", False)),
        bidir=bool(s.get("bidir", False)),
        protocol=str(s.get("protocol", "tcp")),
        udp_bitrate_bits_per_second=_rate_or_none(s.get("bitrate")),
        zerocopy=bool(s.get("zerocopy", False)),
        window_bytes=_window_bytes(window) if window else None,
        mss_bytes=s.get("mss"),
        port=int(s["port"]),
    )


def _rate_or_none(value: Any) -> int | None:
    from nasplan.units import parse_rate

    return None if value is None else parse_rate(value)


def _window_bytes(text: str) -> int:
    factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * factor


def _test_record(test: TestSpec, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": test.id,
        "kind": test.kind,
        "name": test.name,
        "status": "failed",
        "error": None,
        "params": params,
        "path": None,
        "repetitions": [],
        "summary": summarize([], "bits_per_second"),
        "efficiency": None,
    }


def run_iperf3_test(
    test: TestSpec,
    plan: Plan,
    sessions: Mapping[str, HostSession],
    run_dir: Path,
    progress: Progress,
) -> dict[str, Any]:
    """Run every repetition of one iperf3 test; failures are recorded, never raised."""
    params = iperf3_params(test)
    record = _test_record(
        test,
        {
            "server": test.server,
            "client": test.client,
            "target": test.target.label(),
            "address": None,
            "repetitions": test.repetitions,
            **{k: v for k, v in dataclasses.asdict(params).items()},
        },
    )
    server, client = sessions[test.server], sessions[test.client]
    for session in (server, client):
        if not session.ready:
            record["error"] = session.error or f"{session.host.name} is not ready"
            return record
    assert server.runner is not None and client.runner is not None
    assert server.facts is not None and client.facts is not None
    try:
        address = target_address(test, plan, server)
    except ValueError as exc:
        record["error"] = str(exc)
        return record
    record["params"]["address"] = address
    record["path"] = describe_path(
        path_end(server.host, nic_holding(server.facts, address)),
        path_end(client.host, nic_towards(client.facts, address)),
    )
    total_s = (params.duration_s + params.omit_s + 1) * test.repetitions
    token = secrets.token_hex(4)
    errors: list[str] = []
    for index in range(1, test.repetitions + 1):
        progress.test(test.id, index, test.repetitions, total_s)
        rep = _run_repetition(test, params, address, server, client, run_dir, index, token)
        if rep["error"]:
            errors.append(f"repetition {index}: {rep['error']}")
        record["repetitions"].append(rep)
    rates = [r["bits_per_second"] for r in record["repetitions"] if r["status"] == "ok"]
    record["summary"] = summarize(rates, "bits_per_second")
    theoretical = record["path"]["theoretical_bits_per_second"]
    median = record["summary"]["median"]
    record["efficiency"] = efficiency(median, theoretical) if median and theoretical else None
    record["status"] = "failed" if errors else "ok"
    record["error"] = "; ".join(errors) or None
    return record


def _run_repetition(
    test: TestSpec,
    params: iperf3.Iperf3Params,
    address: str,
    server: HostSession,
    client: HostSession,
    run_dir: Path,
    index: int,
    token: str,
) -> dict[str, Any]:
    assert server.runner is not None and client.runner is not None
    raw_name = f"raw/{test.id}/rep-{index}.json"
    rep: dict[str, Any] = {"index": index, "status": "failed", "error": None, "raw_file": None}
    try:
        raw, parsed = iperf3.run_repetition(
            server.runner,
            client.runner,
            server.tools["iperf3"],
            client.tools["iperf3"],
            address,
            params,
            f"{token}-{index}",
            client_iperf3_version=client.facts.iperf3_version if client.facts else None,
        )
    except iperf3.Iperf3Error as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = save_raw(run_dir, raw_name, exc.raw)
        return rep
    rep.update(iperf3.repetition_fields(parsed))
    rep["status"] = "ok"
    rep["raw_file"] = save_raw(run_dir, raw_name, raw)
    return rep


def check(plan: Plan, progress: Progress, connector: Callable[[Host], Runner] = connect) -> Outcome:
    """``apply --check``: connect and gather facts, print what would happen, change nothing."""
    sessions = open_sessions(plan_hosts(plan), progress, connector)
    try:
        packages = _packages(plan)
        for name, session in sessions.items():
            if session.error:
                progress.message(f"{name}: UNREACHABLE: {session.error}")
                continue
            platform = session.platform.name if session.platform else "?"
            installs = planned_installs(session, packages)
            todo = f"would {'; '.join(installs)}" if installs else "nothing to install"
            progress.message(f"{name} ({platform}): {todo}")
            for warning in session.warnings:
                progress.message(f"warning: {warning}")
        for test in plan.tests:
            progress.message(
                f"test {test.id}: would run {test.kind} {test.client} -> {test.target.label()}, "
                f"{test.repetitions} repetition(s)"
            )
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
) -> Outcome:
    """Run the plan; always saves run.json and report.md, also after a failure or Ctrl-C."""
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
    try:
        sessions = open_sessions(plan_hosts(plan), progress, connector)
        prepare(sessions, _packages(plan), progress)
        for test in plan.tests:
            record = run_iperf3_test(test, plan, sessions, run_dir, progress)
            run["tests"].append(record)
            summary = record["summary"]
            median = summary["median"]
            shown = f"median {format_bits_per_second(median)}" if median else ""
            progress.test_done(test.id, record["status"], record["error"] or shown)
        unreachable = any(s.facts is None for s in sessions.values())
        failed = any(t["status"] != "ok" for t in run["tests"])
        run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(run_dir, code)
    finally:
        close_sessions(sessions)
        run["finished_at"] = _iso(_utc_now())
        run["hosts"] = {name: s.to_dict() for name, s in sorted(sessions.items())}
        run["warnings"] = [w for s in sessions.values() for w in s.warnings]
        save_run(run_dir, run)
        write_report(run_dir)
