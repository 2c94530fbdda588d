"""``nasplan apply``: one run of a plan, its phases in order.

``Run``: ``open_hosts`` (connect, facts and each host's lock in one round trip) -> ``prepare``
(tools) -> ``network`` (declared changes, armed to revert) -> ``paths`` (how each pair of hosts
routes to each other, what the facts' round trip could not ask) -> ``tests`` (the tests phase,
``nasplan.run.measure_phase``) -> ``conclude`` (verdicts, network put back, status), and
``finish`` always (restore after an error or Ctrl-C, locks released, run.json and report.md).
Every thread of the run starts in ``Run.tasks`` (``nasplan.run.overlap``); each phase's wall
time is in the outcome (``Outcome.spans``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from nasplan import __version__
from nasplan.analysis import shared_kernels
from nasplan.errors import RunDirError
from nasplan.hosts.session import HostSession, close_sessions, prepare
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure import kinds
from nasplan.measure.capacity import stated_volumes
from nasplan.measure.kind import Routes, RunContext
from nasplan.measure.verdicts import annotated
from nasplan.output import require_free_space, secrets_from_environ, sync_files
from nasplan.progress import Progress, RedactedProgress
from nasplan.remote.runner import Runner
from nasplan.remote.ssh import connect
from nasplan.remote.timeouts import Timeouts, from_environ
from nasplan.results import new_run_dir
from nasplan.run import leases, paths
from nasplan.run.cell import Cell
from nasplan.run.checkpoint import HostsPart, RunRecord, RunSaver, long_lived_objects_frozen
from nasplan.run.clock import RunClock, step_text
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.lapses import LapseGuard
from nasplan.run.measure_phase import MeasurePhase
from nasplan.run.networks import Networks, network_phase
from nasplan.run.opening import open_hosts
from nasplan.run.overlap import Overlap
from nasplan.run.planned import (
    EXIT_OK,
    EXIT_TEST_FAILED,
    EXIT_UNREACHABLE,
    Outcome,
    bound_tests,
    connect_with_passwords,
    local_boot_id,
    tool_needs,
)
from nasplan.run.reach import Reach
from nasplan.run.request import RunRequest
from nasplan.run.resume import Previous, fingerprints
from nasplan.run.schedule import Schedule
from nasplan.run.signals import Stopped, held_back
from nasplan.tasks import Tasks
from nasplan.verbosity import Verbosity


def apply(
    request: RunRequest,
    progress: Progress,
    *,
    connector: Callable[[Host], Runner] = connect,
    tasks: Tasks | None = None,
    verbosity: Verbosity | None = None,
) -> Outcome:
    """Run the request's plan into a new run directory (its ``out``, else runs/<id> in the
    working directory), or on in the directory of the run it resumes (its ok repetitions kept).

    Declared network changes are made after prepare and undone at the end (``keep``: left).
    Sudo passwords go to sudo on stdin and are masked in files. ``tasks``: where the run's
    background work goes (default: threads). ``verbosity``: -v says each command (redacted).
    Raises RunDirError when the run directory is (or becomes) full: hosts are restored first.
    """
    if request.become_passwords and connector is connect:
        connector = connect_with_passwords(request.become_passwords)
    run = Run(request, progress, connector, tasks, verbosity)
    try:
        return _phases(run)
    except KeyboardInterrupt as exc:  # after finish: the report says what ran and what did not
        raise Stopped(exc, run.run_dir) from None


def _phases(run: Run) -> Outcome:
    """The run's phases in order, and ``finish`` always."""
    run.record.checkpoint()
    try:
        with run.span("open_hosts"):
            run.open_hosts()
        with run.span("prepare"):
            run.prepare()
        with long_lived_objects_frozen():
            with run.span("network"):
                run.network()
            with run.span("paths"):
                run.paths()
            with run.span("tests"):
                run.tests()
            with run.span("conclude"):
                return run.conclude()
    except RunDirError:
        run.dir_full = True  # said once, by whoever catches it
        raise
    finally:
        with run.span("finish"):
            run.finish()


class Run:
    """One apply of a plan: its hosts, its record, its tasks, and its phases in order."""

    def __init__(
        self,
        request: RunRequest,
        progress: Progress,
        connector: Callable[[Host], Runner] = connect,
        tasks: Tasks | None = None,
        verbosity: Verbosity | None = None,
        timeouts: Timeouts | None = None,
        clock: RunClock | None = None,
    ) -> None:
        self.plan = plan = request.plan
        self.tasks: Tasks = tasks if tasks is not None else Overlap.concurrent()
        self.timeouts = timeouts or from_environ()
        self.sessions: dict[str, HostSession] = {}
        self.spans: dict[str, float] = {}
        self.clock = clock or RunClock()  # the wall clock stamps, the monotonic clock counts
        started = self.clock.started.replace(microsecond=0)
        self.run_dir = _run_dir(request, started)
        schedule = _schedule(request)
        known = _known_secrets(plan, request.become_passwords)
        # one list of secrets for every byte written: files (the hooks) and progress lines
        self.progress = RedactedProgress(progress, known)
        self.hooks = KindHooks(self.run_dir, self.tasks, self.sessions, self.progress, known)
        self.ctx = RunContext(plan, self.sessions, self.progress, self.tasks, self.hooks)
        # what each phase learned of the hosts' routes, passed on to the next (none yet)
        self.routes: Routes = self.ctx.routes
        # -v: each command said, redacted as every byte written
        self.connector = (verbosity or Verbosity()).traced(
            connector, self.progress.message, self.hooks.secrets
        )
        self.reach = Reach(self.sessions, self.run_dir, self.progress, self.connector, self.tasks)
        phase = network_phase(self.reach, plan, request.keep, self.timeouts)
        self.networks = Networks(phase, schedule.groups[0][0])
        self.lock_id = f"{self.run_dir.name}-{secrets.token_hex(4)}"
        self.keeper, self.early = leases.hold(
            self.sessions, self.lock_id, self.timeouts, self.tasks, self.progress,
            until_the_end=schedule.changes_network,
        )  # fmt: skip
        header = _header(plan, self.run_dir, started, schedule.seed, request.previous)
        # the run's own warnings (the Diagnosis's routed paths), beside the hosts' and tests'
        self.warnings: list[str] = []
        # the tests as concluded (their verdicts): None until then, the cells' records before
        self.concluded: list[dict[str, Any]] | None = None
        self.measure = MeasurePhase(
            self.ctx, self.hooks, schedule, self.networks, lambda: self.record.checkpoint(),
            header["sequence"], self.early, LapseGuard(self.keeper),
        )  # fmt: skip
        self.record = self._run_record(header)
        self.dir_full = False  # the run directory filled up (RunDirError on its way out)

    def _run_record(self, header: dict[str, Any]) -> RunRecord:
        """run.json as the run goes on: ``header``, and the tests, hosts, warnings, network
        and sequence as the phases have them when it is saved."""
        return RunRecord(
            header,
            HostsPart(self.sessions),
            secrets=lambda: self.hooks.secrets,
            tests=lambda: self.concluded if self.concluded is not None else self.measure.records(),
            warnings=self._warnings,
            network=self.networks.part,
            saver=RunSaver(self.run_dir, frozen=("hosts",)),
            sequence=lambda: self.measure.sequence,
        )

    @contextlib.contextmanager
    def span(self, phase: str) -> Iterator[None]:
        """Time ``phase`` (``Outcome.spans``: seconds of each phase the run went through)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.spans[phase] = time.perf_counter() - started

    def open_hosts(self) -> None:
        """Connect to every host at once: facts and the host's lock in one round trip each
        (``nasplan.run.opening``); then the leases are renewed."""
        bound = [cell.bound for cell in self.measure.cells]
        lease_s = self.timeouts.lease_s
        self.routes = open_hosts(self.reach, self.plan, bound, self.lock_id, lease_s)
        self.keeper.start()

    def prepare(self) -> None:
        """Make each host's tools available the platform's way (only where missing)."""
        bound = [cell.bound for cell in self.measure.cells]
        prepare(self.sessions, tool_needs(self.plan, bound), self.progress, tasks=self.tasks)
        self.record.checkpoint()

    def network(self) -> None:
        """Make the plan's network changes (armed to revert) and check them; a failure skips
        every test, and ``finish`` still puts every host back."""
        self.networks.setup()
        if paths.lost_said(self.sessions, self.progress) or self.networks.phase.active:
            self.record.checkpoint()

    def paths(self) -> None:
        """How each client -> server test's hosts route to each other, as the network now is
        (``nasplan.run.paths``); nothing when the network setup failed."""
        if self.networks.ok:
            bound = [cell.bound for cell in self.measure.cells]
            routes, tasks = self.routes, self.tasks
            self.routes = paths.ask_routes(
                self.plan, bound, self.sessions, routes, tasks, self.progress
            )

    def tests(self) -> None:
        """Every part of every test in the plan's order (``nasplan.run.measure_phase``), with
        the routes the phases before found."""
        self.measure.run(self.routes)

    def conclude(self) -> Outcome:
        """The last teardown settled, the transfers' verdicts, the network put back, and the
        run's status and exit code."""
        # the report's modules (Jinja) load while the last test's teardown still runs on its
        # hosts, rather than after it
        importlib.import_module("nasplan.report.render")
        self.hooks.settle()
        facts = {n: s.facts for n, s in self.sessions.items()}
        memory = {n: f.cache_bytes if f else None for n, f in facts.items()}
        boot_ids = {n: f.boot_id if f else None for n, f in facts.items()}
        local = {n for n, s in self.sessions.items() if s.host.is_local}
        shared = shared_kernels(boot_ids, local_boot_id(), local)
        stated = stated_volumes(s.host for s in self.sessions.values())
        self.concluded = tests = annotated(self.measure.records(), memory, shared, stated)
        self.networks.teardown()
        # a host that was reached but cannot be used (sudo refused, tools missing) counts too
        unreachable = any(s.facts is None or s.error for s in self.sessions.values())
        failed = any(t["status"] != "ok" for t in tests) or not self.networks.ok
        self.record.run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        self._diagnose()
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(self.run_dir, code, self.spans)

    def _diagnose(self) -> None:
        """run.json's ``diagnosis`` (nasplan.diagnose, from the record alone); a routed or
        asymmetric path is also a warning of its test."""
        from nasplan.diagnose import diagnose

        found = diagnose(self.record.snapshot())
        self.record.run["diagnosis"] = found
        for one in found:
            if one["cause"] in ("routed-path", "asymmetric-path"):
                self.warnings.append(f"{one['test']}: {one['text']}")

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
            self.networks.teardown()
        finally:
            self.keeper.stop()
            releasing = self.tasks.start(self._release_all, "release")
            self._ended()
            if self.concluded is None:  # cut short: the tests under way say so
                self.measure.stop()
            written = self.record.snapshot()
            try:
                self._write(written, synced=self.hooks.unsynced)
            finally:
                releasing.wait()
            final = self.record.snapshot()
            if final != written:  # a release removed something the run left there: say so
                self._write(final, synced=[])
            self.record.saver.close()

    def _ended(self) -> None:
        """run.json's end by the monotonic clock (``RunClock.ended``), a step of the wall
        clock in the run's warnings."""
        before = dict(self.record.run)  # a resumed run's earlier sessions: from its header
        ended = self.clock.ended(before)
        self.record.run.update(ended)
        steps = ended.get("clock_steps") or []
        if len(steps) > len(before.get("clock_steps") or []):
            self.warnings.append(step_text(steps[-1]["step_s"]))

    def _release_all(self) -> None:
        """The releases under way (``EarlyRelease``) waited for, this run's lock released on
        every host still locked (what it left there goes with it), then every connection
        closed."""
        if self.early is not None:
            self.early.join()
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
            saver = self.record.saver
            if saver.saved is not run:  # not even into the space held for it: say what is lost
                lacks = saver.lacking(run)
                self.progress.message(f"nasplan: {saver.path} keeps its last save, lacking {lacks}")
            if not self.dir_full:  # else said by whoever catches the run's own RunDirError
                self.progress.message(f"nasplan: {exc}")

    def _warnings(self, tests: list[dict[str, Any]]) -> list[str]:
        """Every warning of the run so far: a resumed run's from before, the inventory's, the
        hosts', the tests' (each with its id), the run's own, the network's."""
        found = [*self.record.run["warnings"], *self.plan.inventory.warnings]
        found += [w for s in self.sessions.values() for w in s.warnings]
        found += [f"{t['id']}: {w}" for t in tests for w in t.get("warnings") or []]
        # what a test's own numbers say (a UDP test's loss), judged by its kind
        found += [f"{t['id']}: {c.text}" for t in tests for c in kinds.readout(t).caveats(t)]
        found += self.warnings + self.networks.warnings
        return list(dict.fromkeys(found))


def _schedule(request: RunRequest) -> Schedule:
    """The run's tests (each with what a resumed run kept of it) in the plan's order, by
    network settings, with the order's seed."""
    plan, previous = request.plan, request.previous
    kept = previous.records if previous is not None else {}
    cells = [Cell(one, kept.get(one.test.id)) for one in bound_tests(plan)]
    return Schedule.of(cells, plan.network, plan.order, _seed(plan, previous))


def _run_dir(request: RunRequest, started: datetime) -> Path:
    """The new run directory (a resumed run's own), after checking there is room for it."""
    if request.previous is not None:
        require_free_space(request.previous.run_dir)
        return request.previous.run_dir
    base = Path.cwd()
    out = request.out
    require_free_space(out if out is not None else base / "runs")
    return new_run_dir(base, request.plan.name, started, out)


def _header(
    plan: Plan, run_dir: Path, started: datetime, seed: int, previous: Previous | None
) -> dict[str, Any]:
    """run.json's keys in their order, as a run that has not done anything yet (a resumed run:
    its first start, the order it ran so far, when it was resumed)."""
    before = previous.run if previous is not None else {}
    files = [str(p.resolve()) for p in plan.inventory.sources]
    # --resume reads the run's own inventories again by their absolute paths: the report names
    # the inventory as it was first given (its bare file name would say `inventory.yaml`)
    same = before.get("inventory_files") == files and before.get("inventory_file")
    header = {
        "schema_version": 1,
        "nasplan_version": __version__,
        "run_id": run_dir.name,
        "plan_file": str(plan.path),
        "inventory_file": str(before["inventory_file"] if same else plan.inventory.path),
        "inventory_files": files,
        "inventory_reader": plan.inventory.reader,
        **({"login": dict(plan.inventory.login)} if plan.inventory.login else {}),
        "plan": dict(plan.resolved),
        **fingerprints(plan),
        "order": plan.order.name,
        "seed": seed,
        "sequence": list(before.get("sequence") or []),
        "started_at": before.get("started_at") or _iso(started),
        "finished_at": None,
        "status": "interrupted",
        "hosts": {},
        "tests": [],
        # a resumed run's warnings from before it was interrupted (``Run._warnings`` adds on)
        "warnings": list(before.get("warnings") or []),
    }
    if previous is not None:
        header["resumed_at"] = [*before.get("resumed_at", []), _iso(started)]
        # the earlier sessions' time and the steps of the wall clock they saw (RunClock.ended)
        header.update({k: before[k] for k in ("duration_s", "clock_steps") if k in before})
    if plan.subset is not None:  # --limit / --tests: a part of the plan
        header["subset"] = dict(plan.subset)
    return header


def _seed(plan: Plan, previous: Previous | None) -> int:
    """The order's seed: the plan's (or ``vars.seed``), else the resumed run's, else drawn."""
    if plan.order.seed is not None:
        return plan.order.seed
    if previous is not None and previous.seed is not None:
        return previous.seed
    return secrets.randbelow(2**31)


def _known_secrets(plan: Plan, become_passwords: Mapping[str, str]) -> list[str]:
    """The secrets known before the run: sudo passwords and the environment variables the
    plan and inventory name as secrets."""
    known = sorted(set(become_passwords.values()))
    structures = [plan.resolved, *(dataclasses.asdict(h) for h in plan.inventory.hosts.values())]
    return known + secrets_from_environ(structures, os.environ)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
