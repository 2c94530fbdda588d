"""``nasplan apply``: one run of a plan, its phases in order.

``Run``: ``open_hosts`` (connect, facts and each host's lock in one round trip) -> ``prepare``
(tools) -> ``network`` (declared changes, armed to revert) -> ``tests`` (each kind's record,
run.json saved after every repetition) -> ``conclude`` (verdicts, network put back, status), and
``finish`` always (restore after an error or Ctrl-C, locks released, run.json and report.md).
Every thread of the run starts in ``Run.tasks`` (``nasplan.run.overlap``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import secrets
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from nasplan import __version__
from nasplan.analysis import annotate_transfers, shared_kernels
from nasplan.errors import HostLostError, RunDirError
from nasplan.hosts.lock import acquire_script
from nasplan.hosts.session import (
    HostSession,
    close_sessions,
    mark_lost_hosts,
    open_sessions,
    prepare,
)
from nasplan.hosts.timeouts import Timeouts, from_environ
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure.kind import BoundTest, RunContext, fail_for_lost_host, skipped
from nasplan.output import require_free_space, secrets_from_environ, sync_files
from nasplan.progress import Progress, RedactedProgress, result_text
from nasplan.results import new_run_dir
from nasplan.run import leases
from nasplan.run.checkpoint import RunRecord, RunSaver, long_lived_objects_frozen
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.overlap import Overlap
from nasplan.run.planned import (
    EXIT_OK,
    EXIT_TEST_FAILED,
    EXIT_UNREACHABLE,
    Outcome,
    bound_tests,
    connect_with_passwords,
    local_boot_id,
    plan_hosts,
    tool_needs,
)
from nasplan.run.signals import held_back
from nasplan.runner import Result, Runner
from nasplan.ssh import connect
from nasplan.tasks import Tasks
from nasplan.verbosity import Verbosity


def apply(
    plan: Plan,
    progress: Progress,
    *,
    out: Path | None = None,
    base_dir: Path | None = None,
    connector: Callable[[Host], Runner] = connect,
    keep: bool = False,
    become_passwords: Mapping[str, str] | None = None,
    tasks: Tasks | None = None,
    verbosity: Verbosity | None = None,
) -> Outcome:
    """Run the plan into a new run directory (``out``, else ``base_dir``/runs/<id>).

    Declared network changes are made after prepare and undone at the end (``keep``: left).
    ``become_passwords`` (host -> sudo password) go to sudo on stdin and are masked in files.
    ``tasks``: where the run's background work goes (default: threads). ``verbosity``: -v says
    each command (redacted). Raises RunDirError when the run directory is (or becomes) full:
    hosts are restored first.
    """
    if become_passwords and connector is connect:
        connector = connect_with_passwords(become_passwords)
    run = Run(plan, progress, RunPlace(out, base_dir), connector, keep, become_passwords, tasks)
    run.connector = (verbosity or Verbosity()).traced(
        run.connector, run.progress.message, run.hooks.secrets
    )
    run.record.checkpoint()
    try:
        run.open_hosts()
        run.prepare()
        with long_lived_objects_frozen():
            run.network()
            run.tests()
            return run.conclude()
    except RunDirError:
        run.dir_full = True  # said once, by whoever catches it
        raise
    finally:
        run.finish()


@dataclasses.dataclass(frozen=True)
class RunPlace:
    """Where the run directory goes: ``out`` as given, else a new one under ``base_dir``/runs
    (the working directory when None)."""

    out: Path | None = None
    base_dir: Path | None = None

    def make(self, plan_name: str, started: datetime) -> Path:
        """The new run directory, after checking there is room for it."""
        base = self.base_dir or Path.cwd()
        require_free_space(self.out if self.out is not None else base / "runs")
        return new_run_dir(base, plan_name, started, self.out)


class Run:
    """One apply of a plan: its hosts, its record, its tasks, and its phases in order."""

    def __init__(
        self,
        plan: Plan,
        progress: Progress,
        place: RunPlace,
        connector: Callable[[Host], Runner] = connect,
        keep: bool = False,
        become_passwords: Mapping[str, str] | None = None,
        tasks: Tasks | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.plan = plan
        self.connector = connector
        self.tasks: Tasks = tasks if tasks is not None else Overlap.concurrent()
        self.timeouts = timeouts or from_environ()
        self.bound: list[BoundTest] = bound_tests(plan)
        self.sessions: dict[str, HostSession] = {}
        started = _utc_now()
        self.run_dir = place.make(plan.name, started)
        known = _known_secrets(plan, become_passwords or {})
        # one list of secrets for every byte written: files (the hooks) and progress lines
        self.progress = RedactedProgress(progress, known)
        self.hooks = KindHooks(self.run_dir, self.tasks, known)
        self.ctx = RunContext(plan, self.sessions, self.progress, self.tasks, self.hooks)
        self.network_phase = _network_phase(self, keep)
        self.lock_id = f"{self.run_dir.name}-{secrets.token_hex(4)}"
        self.keeper = leases.LeaseKeeper(
            self.sessions,
            self.lock_id,
            self.timeouts.lease_s,
            self.timeouts.renew_s,
            self.tasks,
            self.progress,
        )
        # with network changes, every host keeps its lock until its settings are put back
        self.early = (
            None
            if plan.network.active
            else leases.EarlyRelease(self.keeper, self.lock_id, self.tasks)
        )
        self.record = RunRecord(
            _header(plan, self.run_dir, started),
            self.sessions,
            secrets=lambda: self.hooks.secrets,
            warnings=self._warnings,
            network=self._network_part,
            saver=RunSaver(self.run_dir, frozen=("hosts",)),
        )
        self.hooks.on_checkpoint = self.record.checkpoint
        # the run directory filled up during the run (RunDirError on its way out)
        self.dir_full = False

    def open_hosts(self) -> None:
        """Connect to every host at once: facts and the host's lock in one round trip each.

        A host is known to ``finish`` as soon as its facts are in (its lock is then released
        even when the run stops during the connections); one held by another run is unusable,
        unless that run started at the same moment and yields to this one (``leases.Contest``).
        """
        contest = leases.Contest(self.lock_id, self.timeouts.lease_s)

        def lock(session: HostSession, taken: Result | None) -> None:
            self.sessions[session.host.name] = session
            self._guarded(lambda: contest.take(session, taken), session)

        opened = open_sessions(
            plan_hosts(self.plan),
            self.progress,
            self.connector,
            then=lock,
            also=acquire_script(self.lock_id, self.timeouts.lease_s),
            tasks=self.tasks,
        )
        self.sessions.clear()
        self.sessions.update(opened)
        self._guarded(lambda: contest.settle(self.sessions, self.progress), None)
        for name, session in sorted(self.sessions.items()):
            if name in contest.refused:
                self.progress.host(name, f"[in use] {session.error}")
            for action in session.actions:
                if action.startswith("took over the stale lock"):
                    self.progress.host(name, action)
        self.keeper.start()

    def _guarded(self, step: Callable[[], object], session: HostSession | None) -> None:
        """``step`` on one host (or all): a host that stops answering is marked lost."""
        try:
            step()
        except HostLostError as exc:
            lost = session or self.sessions.get(exc.host)
            if lost is not None:
                lost.mark_lost(str(exc))
            self.progress.host(exc.host, f"[lost] {exc}")

    def prepare(self) -> None:
        """Make each host's tools available the platform's way (only where missing)."""
        prepare(self.sessions, tool_needs(self.plan, self.bound), self.progress, tasks=self.tasks)
        self.record.checkpoint()

    def network(self) -> None:
        """Make the plan's network changes (armed to revert) and check them; a failure skips
        every test, and ``finish`` still puts every host back."""
        try:
            self.network_phase.setup()
        except HostLostError as exc:
            self.network_phase.fail(str(exc))
        if mark_lost_hosts(self.sessions) or self.network_phase.active:
            self.record.checkpoint()

    def tests(self) -> None:
        """Each test in the plan's order: its record, saved; hosts released once done with."""
        last_uses = {host: index for index, one in enumerate(self.bound) for host in one.test.hosts}
        for index, one in enumerate(self.bound):
            record = self._run_test(one)
            for name in mark_lost_hosts(self.sessions):
                self.progress.host(name, f"[lost] {self.sessions[name].error}")
            self.record.run["tests"].append(record)
            self.record.checkpoint()
            shown = result_text(record)
            self.progress.test_done(one.test.id, record["status"], record["error"] or shown)
            if self.early is not None and index < len(self.bound) - 1:  # the last: at the end
                done = [name for name, last in last_uses.items() if last == index]
                self.early.release(
                    [self.sessions[name] for name in sorted(done) if name in self.sessions],
                    self.hooks.teardown_running(),
                )

    def _run_test(self, one: BoundTest) -> dict[str, Any]:
        """One test's record; a host lost on the way fails it, keeping its finished
        repetitions; skipped when the network setup failed."""
        if not one.settles_itself:
            self.hooks.settle()
        if not self.network_phase.ok:
            return skipped(one.test, f"network setup failed: {self.network_phase.error}")
        self.hooks.running = None
        try:
            record = one.run(self.ctx)
        except HostLostError as exc:
            record = self.hooks.running or dict(skipped(one.test, str(exc)))
            record = fail_for_lost_host(record, exc, self.sessions)
        # (a run cut short keeps its running record here: ``finish`` saves what it measured)
        self.hooks.running = None
        return record

    def conclude(self) -> Outcome:
        """The last teardown settled, the transfers' verdicts, the network put back, and the
        run's status and exit code."""
        # the report's modules (Jinja) load while the last test's teardown still runs on its
        # hosts, rather than after it
        importlib.import_module("nasplan.report.render")
        self.hooks.settle()
        tests = self.record.run["tests"]
        facts = {n: s.facts for n, s in self.sessions.items()}
        memory = {n: f.memory_bytes if f else None for n, f in facts.items()}
        boot_ids = {n: f.boot_id if f else None for n, f in facts.items()}
        annotate_transfers(tests, memory, shared_kernels(boot_ids, local_boot_id()))
        self.network_phase.teardown()
        # a host that was reached but cannot be used (sudo refused, tools missing) counts too
        unreachable = any(s.facts is None or s.error for s in self.sessions.values())
        failed = any(t["status"] != "ok" for t in tests) or not self.network_phase.ok
        self.record.run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(self.run_dir, code)

    def finish(self) -> None:
        """Always: settle, put the network back (a no-op after ``conclude``), stop renewing,
        release the locks while run.json and report.md are written, close the connections.
        Ctrl-C, SIGTERM and SIGHUP are held back meanwhile (raised once it is done)."""
        with held_back():
            self._finish()

    def _finish(self) -> None:
        try:
            with contextlib.suppress(Exception):  # settled in conclude, unless cut short
                self.hooks.settle()
            self.network_phase.teardown()
        finally:
            self.keeper.stop()
            if self.early is not None:
                self.early.join()
            releasing = self.tasks.start(self._release_all, "release")
            self.record.run["finished_at"] = _iso(_utc_now())
            written = self.record.snapshot(self._cut_short())
            try:
                self._write(written, synced=self.hooks.unsynced)
            finally:
                releasing.wait()
            final = self.record.snapshot(self._cut_short())
            if final != written:  # a release removed something the run left there: say so
                self._write(final, synced=[])

    def _cut_short(self) -> dict[str, Any] | None:
        """The test under way when the run was stopped (Ctrl-C, a full disk), with the
        repetitions it finished; None when no test was cut short."""
        running = self.hooks.running
        if running is None:
            return None
        done = sum(1 for rep in running.get("repetitions", []) if rep.get("status") == "ok")
        running["error"] = running.get("error") or f"the run was stopped after {done} repetitions"
        return running

    def _release_all(self) -> None:
        """Release this run's lock on every host still locked (what it left there goes with
        it), then close every connection."""
        locked = [session for session in self.sessions.values() if session.locked]
        self.tasks.each(locked, lambda s: leases.release(s, self.lock_id))
        close_sessions(self.sessions)

    def _write(self, run: dict[str, Any], synced: list[Path]) -> None:
        """The final run.json and report.md, and the raw outputs written during the run put on
        disk; a full disk is said once, not raised over the run's own outcome."""
        from nasplan.report.render import write_report  # Jinja: only a run that reports

        try:
            self.record.saver.save(run, self.hooks.secrets)
            write_report(self.run_dir, secrets=self.hooks.secrets, check=False)
            sync_files(synced, self.run_dir)
        except RunDirError as exc:
            if not self.dir_full:  # else said by whoever catches the run's own RunDirError
                self.progress.message(f"nasplan: {exc}; run.json keeps what was saved before")

    def _warnings(self) -> list[str]:
        """Every warning of the run so far: the inventory's, the hosts', the tests', the
        network's."""
        found = [*self.plan.inventory.warnings]
        found += [w for s in self.sessions.values() for w in s.warnings] + self.ctx.warnings
        return found + (self.network_phase.warnings if self.network_phase.active else [])

    def _network_part(self) -> dict[str, Any] | None:
        return self.network_phase.to_dict() if self.network_phase.active else None


class NetworkPart(Protocol):
    """The network phase as the run sees it (``nasplan.run.network_phase.NetworkPhase``)."""

    error: str | None
    warnings: list[str]

    @property
    def active(self) -> bool: ...
    @property
    def ok(self) -> bool: ...
    def setup(self) -> bool: ...
    def fail(self, message: str) -> None: ...
    def teardown(self) -> None: ...
    def to_dict(self) -> dict[str, Any]: ...


class NoNetworkChanges:
    """The network phase of a plan that changes no network setting: nothing to do."""

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


def _network_phase(run: Run, keep: bool) -> NetworkPart:
    """The run's network phase; most plans change no network setting, and their runs do not
    import the network phase's code (a noticeable part of every start)."""
    plan = run.plan
    if not plan.network.active:
        return NoNetworkChanges()
    from nasplan.run.network_phase import NetworkPhase

    return NetworkPhase(
        plan.network,
        run.sessions,
        run.run_dir,
        run.progress,
        run.connector,
        keep=keep,
        inventory_file=str(plan.inventory.path.resolve()),
        known_hosts=str(plan.known_hosts.resolve()) if plan.known_hosts else None,
        reconnect_grace_s=run.timeouts.reconnect_grace_s,
        lease_s=run.timeouts.lease_s,
        tasks=run.tasks,
    )


def _header(plan: Plan, run_dir: Path, started: datetime) -> dict[str, Any]:
    """run.json's keys in their order, as a run that has not done anything yet."""
    return {
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


def _known_secrets(plan: Plan, become_passwords: Mapping[str, str]) -> list[str]:
    """The secrets known before the run: sudo passwords and the environment variables the
    plan and inventory name as secrets."""
    known = sorted(set(become_passwords.values()))
    structures = [plan.resolved, *(dataclasses.asdict(h) for h in plan.inventory.hosts.values())]
    return known + secrets_from_environ(structures, os.environ)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
