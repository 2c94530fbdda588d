"""``nasplan apply``: connect, gather facts, prepare tools, run tests, save run.json + report."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import os
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasplan import __version__
from nasplan.analysis import annotate_transfers, shared_kernels
from nasplan.errors import HostLostError, RunDirError
from nasplan.hosts.lock import acquire_script
from nasplan.hosts.session import (
    HostSession,
    HostsPart,
    close_sessions,
    in_parallel,
    mark_lost_hosts,
    open_sessions,
    planned_installs,
    prepare,
)
from nasplan.hosts.timeouts import Timeouts, from_environ
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure import kinds
from nasplan.measure.kind import BoundTest, RunContext, fail_for_lost_host, skipped
from nasplan.output import require_free_space, secrets_from_environ, sync_files
from nasplan.progress import Progress, RedactedProgress, result_text
from nasplan.results import RunSaver, new_run_dir
from nasplan.run import leases
from nasplan.runner import Result, Runner
from nasplan.ssh import connect

if TYPE_CHECKING:
    from nasplan.run.network_phase import NetworkPhase

EXIT_OK, EXIT_TEST_FAILED, EXIT_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3


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


def local_boot_id() -> str | None:
    """This machine's kernel boot id (Linux), to tell hosts that share its kernel; else None."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


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


def unset_variables(plan: Plan, environ: Mapping[str, str]) -> list[str]:
    """The password variables the run would read that are not set: a host's sudo password
    (``become_password_env``), a transfer's SMB password (``password_env``)."""
    problems = [
        f"{name}: the sudo password comes from ${host.become_password_env}, which is not set "
        "(export it, or pass -K to apply)"
        for name, host in sorted(plan_hosts(plan).items())
        if host.become_password_env and host.become_password_env not in environ
    ]
    problems += [
        f"test {test.id}: the SMB password comes from ${variable}, which is not set: "
        "the test would fail"
        for test in plan.tests
        if (variable := test.settings.get("password_env")) and variable not in environ
    ]
    return problems


def check(
    plan: Plan,
    progress: Progress,
    connector: Callable[[Host], Runner] = connect,
    environ: Mapping[str, str] | None = None,
) -> Outcome:
    """``apply --check``: connect and gather facts, print what would happen, change nothing.

    Exit code 2 when a password variable the run needs is not set (``environ``, default the
    process environment), else 0, or 3 when a host is unreachable.
    """
    missing = unset_variables(plan, os.environ if environ is None else environ)
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
            todo = "; ".join(installs) if installs else "nothing to install"
            progress.message(f"{name} ({platform}): {todo}")
            for warning in session.warnings:
                progress.message(f"warning: {warning}")
        for name in plan.network.hosts:
            # Only a plan that changes the network imports the network phase's code.
            from nasplan.run.network_phase import describe_changes

            facts = sessions[name].facts if name in sessions else None
            current = {nic.name: nic for nic in facts.interfaces} if facts else {}
            for line in describe_changes(plan.network.changes(name), current):
                progress.message(f"{name}: would set {line} (and put it back after the run)")
        for one in bound:
            progress.message(f"test {one.test.id}: would run {one.description}")
        for problem in missing:
            progress.message(f"problem: {problem}")
        unreachable = any(s.error for s in sessions.values())
        if unreachable:
            return Outcome(None, EXIT_UNREACHABLE)
        return Outcome(None, EXIT_INPUT if missing else EXIT_OK)
    finally:
        close_sessions(sessions)


def run_test(one: BoundTest, ctx: RunContext) -> dict[str, Any]:
    """One test's record; a host lost on the way fails it, keeping its finished repetitions."""
    ctx.running = None
    try:
        return one.run(ctx)
    except HostLostError as exc:
        record = ctx.running or dict(skipped(one.test, str(exc)))
        return fail_for_lost_host(record, exc, ctx.sessions)
    finally:
        ctx.running = None


def _locker(
    run_id: str, lease_s: float, progress: Progress
) -> Callable[[HostSession, Result | None], None]:
    """What takes one ready host's nasplan lock (``taken``: the lock script's result when it ran
    in the facts round trip); a host another run holds becomes unusable."""

    def one(session: HostSession, taken: Result | None) -> None:
        if not session.ready:
            return
        try:
            refused = leases.acquire(session, run_id, lease_s, taken)
        except HostLostError as exc:
            session.mark_lost(str(exc))
            progress.host(session.host.name, f"[lost] {exc}")
            return
        if refused:
            session.error = refused
            progress.host(session.host.name, f"[in use] {refused}")

    return one


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
    """Run the plan; run.json is saved from the start and after every repetition, so a run
    killed, cut off or out of disk keeps what it measured; report.md is written at the end.

    Declared network changes are made after prepare and undone at the end (``keep``: left).
    ``become_passwords`` (host -> sudo password) go to sudo on stdin and are masked in files.
    Raises RunDirError when the run directory is (or becomes) full: hosts are restored first.
    """
    if become_passwords and connector is connect:
        connector = connect_with_passwords(become_passwords)
    bound = bound_tests(plan)
    timeouts = from_environ()
    started = _utc_now()
    require_free_space(out if out is not None else (base_dir or Path.cwd()) / "runs")
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
    known: list[str] = sorted(set((become_passwords or {}).values()))
    known += secrets_from_environ(
        [plan.resolved, *(dataclasses.asdict(h) for h in plan.inventory.hosts.values())],
        os.environ,
    )
    # One list of secrets for every byte written: files (through ctx) and progress lines.
    progress = RedactedProgress(progress, known)
    # a test's teardown on its hosts runs while the next test starts (settled before it measures)
    ctx = RunContext(plan, sessions, run_dir, progress, secrets=known, overlap=True)
    network = _network_phase(plan, sessions, run_dir, progress, connector, keep, timeouts)
    lock_id = f"{run_dir.name}-{secrets.token_hex(4)}"
    keeper = leases.LeaseKeeper(sessions, lock_id, timeouts.lease_s, timeouts.renew_s, progress)
    # a host is released once its last test is done, unless its settings are put back at the end
    early = None if network.active else leases.EarlyRelease(keeper, lock_id)
    last_uses = {host: index for index, one in enumerate(bound) for host in one.test.hosts}

    hosts_part = HostsPart(sessions)

    def snapshot(running: dict[str, Any] | None = None) -> dict[str, Any]:
        current = dict(run)
        current["tests"] = run["tests"] + ([running] if running is not None else [])
        current["hosts"] = hosts_part.now()
        current["warnings"] = [w for s in sessions.values() for w in s.warnings] + ctx.warnings
        if network.active:
            current["network"] = network.to_dict()
            current["warnings"] += network.warnings
        return current

    saver = RunSaver(run_dir, frozen=("hosts",))

    def checkpoint(running: dict[str, Any] | None = None) -> None:
        # atomic, on disk at the run's end (_finish): no fsync between two measurements
        saver.save(snapshot(running), ctx.secrets, durable=False)

    ctx.on_checkpoint = checkpoint
    checkpoint()
    try:
        # Each host's lock is taken as soon as its facts are in, and the host is known to the
        # finally below from then on: a run stopped during the connections releases it too.
        locker = _locker(lock_id, timeouts.lease_s, progress)

        def lock(session: HostSession, taken: Result | None) -> None:
            sessions[session.host.name] = session
            locker(session, taken)

        # The lock is taken in the facts' own round trip (a POSIX host), checked by `lock`.
        taking = acquire_script(lock_id, timeouts.lease_s)
        opened = open_sessions(plan_hosts(plan), progress, connector, then=lock, also=taking)
        sessions.clear()
        sessions.update(opened)
        keeper.start()
        prepare(sessions, tool_needs(plan, bound), progress)
        # What lives for the whole run (modules, plan, sessions, facts) is left out of the
        # cyclic garbage collector's passes from here on: a full pass over it took 30-60 ms
        # (30 hosts), at a random moment, often between two measurements.
        gc.freeze()
        checkpoint()
        try:
            network.setup()
        except HostLostError as exc:
            network.fail(str(exc))
        if mark_lost_hosts(sessions) or network.active:  # else nothing new to save
            checkpoint()
        for index, one in enumerate(bound):
            if not one.settles_itself:
                ctx.settle()
            if not network.ok:
                record = skipped(one.test, f"network setup failed: {network.error}")
            else:
                record = run_test(one, ctx)
            for name in mark_lost_hosts(sessions):
                progress.host(name, f"[lost] {sessions[name].error}")
            run["tests"].append(record)
            checkpoint()
            shown = result_text(record)
            progress.test_done(one.test.id, record["status"], record["error"] or shown)
            if early is not None and index < len(bound) - 1:  # the last: with the report
                done = sorted(name for name, last in last_uses.items() if last == index)
                teardown = ctx.pending.finished if ctx.pending is not None else None
                early.release([sessions[name] for name in done if name in sessions], teardown)
        # The report's modules (Jinja) are imported while the last test's teardown is still
        # running on its hosts (~30 ms a process, else after it, on the run's last stretch).
        importlib.import_module("nasplan.report.render")
        ctx.settle()
        memory = {n: s.facts.memory_bytes if s.facts else None for n, s in sessions.items()}
        boot_ids = {n: s.facts.boot_id if s.facts else None for n, s in sessions.items()}
        annotate_transfers(run["tests"], memory, shared_kernels(boot_ids, local_boot_id()))
        network.teardown()
        # A host that was reached but cannot be used (sudo refused, tools missing) counts too.
        unreachable = any(s.facts is None or s.error for s in sessions.values())
        failed = any(t["status"] != "ok" for t in run["tests"]) or not network.ok
        run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(run_dir, code)
    finally:
        try:
            with contextlib.suppress(Exception):  # settled above, unless the run was cut short
                ctx.settle()
            network.teardown()  # a no-op when done above; restores after an error or Ctrl-C
        finally:
            keeper.stop()
            if early is not None:
                early.join()
            # The hosts release their locks while run.json and the report are written; should a
            # host have removed something this run left there, both are written again with it.
            releasing = threading.Thread(target=_release, args=(sessions, lock_id), daemon=True)
            releasing.start()
            run["finished_at"] = _iso(_utc_now())
            written = snapshot()
            try:
                _finish(saver, written, ctx.secrets, progress, ctx.unsynced)
            finally:
                releasing.join()
                gc.unfreeze()  # collectable again once the run is over (apply as a library)
            final = snapshot()
            if final != written:  # the raw outputs are on disk since the first _finish
                _finish(saver, final, ctx.secrets, progress)


def _network_phase(
    plan: Plan,
    sessions: Mapping[str, HostSession],
    run_dir: Path,
    progress: Progress,
    connector: Callable[[Host], Runner],
    keep: bool,
    timeouts: Timeouts,
) -> NetworkPhase | _NoNetworkChanges:
    """The run's network phase; for a plan that declares no network change (most plans) one
    that does nothing, and the phase's code is never imported."""
    if not plan.network.active:
        return _NoNetworkChanges()
    from nasplan.run.network_phase import NetworkPhase

    return NetworkPhase(
        plan.network,
        sessions,
        run_dir,
        progress,
        connector,
        keep=keep,
        inventory_file=str(plan.inventory.path.resolve()),
        known_hosts=str(plan.known_hosts.resolve()) if plan.known_hosts else None,
        reconnect_grace_s=timeouts.reconnect_grace_s,
    )


class _NoNetworkChanges:
    """The network phase of a plan without network changes: nothing to set up or put back."""

    active = False

    def __init__(self) -> None:
        self.error: str | None = None
        self.warnings: list[str] = []

    @property
    def ok(self) -> bool:
        return self.error is None

    def setup(self) -> bool:
        return True

    def fail(self, message: str) -> None:
        self.error = message

    def teardown(self) -> None:
        pass

    def to_dict(self) -> dict[str, Any]:
        return {}


def _release(sessions: Mapping[str, HostSession], lock_id: str) -> None:
    """Release this run's lock on every host (what it left there goes with it), then close.
    Hosts released early (or never locked) need no thread of their own here."""
    locked = [session for session in sessions.values() if session.locked]
    in_parallel(locked, lambda s: leases.release(s, lock_id))
    close_sessions(sessions)


def _finish(
    saver: RunSaver,
    run: dict[str, Any],
    secrets: list[str],
    progress: Progress,
    unsynced: Sequence[Path] = (),
) -> None:
    """Save the final run.json and render report.md, and put the raw outputs written during
    the run on disk (``unsynced``); a full disk is said once, not raised over the run's own
    outcome (the last run.json saved during the run stays whole)."""
    # Imported here, not at the top: `apply --check` renders no report (Jinja comes with it).
    from nasplan.report.render import write_report

    try:
        saver.save(run, secrets)
        write_report(saver.path.parent, secrets=secrets, check=False)  # written just now
        sync_files(unsynced, saver.path.parent)
    except RunDirError as exc:
        progress.message(f"nasplan: {exc}; run.json keeps what was saved before")
