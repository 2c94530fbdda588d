"""``nasplan apply``: one run of a plan, its phases in order.

``Run``: ``open_hosts`` (connect, facts and each host's lock in one round trip) -> ``prepare``
(tools) -> ``network`` (declared changes, armed to revert) -> ``paths`` (how each pair of hosts
routes to each other, what the facts' round trip could not ask) -> ``tests`` (each kind's record,
run.json saved after every repetition) -> ``conclude`` (verdicts, network put back, status), and
``finish`` always (restore after an error or Ctrl-C, locks released, run.json and report.md).
Every thread of the run starts in ``Run.tasks`` (``nasplan.run.overlap``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import secrets
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from nasplan import __version__
from nasplan.analysis import annotate_transfers, shared_kernels
from nasplan.errors import CannotStart, HostLostError, NasplanError, RunDirError
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
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import route
from nasplan.measure.kind import (
    BoundTest,
    RunContext,
    fail_for_lost_host,
    skipped,
    target_address,
)
from nasplan.network.model import NetworkSpec
from nasplan.output import require_free_space, secrets_from_environ, sync_files
from nasplan.progress import Place, Progress, RedactedProgress, result_text
from nasplan.results import new_run_dir
from nasplan.run import leases
from nasplan.run.checkpoint import RunRecord, RunSaver, long_lived_objects_frozen
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.lapses import LapseGuard
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
from nasplan.run.resume import Previous, fingerprints
from nasplan.run.schedule import Cell, Slice, network_groups, slices, time_left_s
from nasplan.run.signals import held_back
from nasplan.runner import Result, Runner
from nasplan.ssh import connect
from nasplan.tasks import Tasks
from nasplan.units import format_metric
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
    previous: Previous | None = None,
) -> Outcome:
    """Run the plan into a new run directory (``out``, else ``base_dir``/runs/<id>), or on in
    the directory of the ``previous`` run (``--resume``: its ok repetitions kept).

    Declared network changes are made after prepare and undone at the end (``keep``: left).
    ``become_passwords`` (host -> sudo password) go to sudo on stdin and are masked in files.
    ``tasks``: where the run's background work goes (default: threads). ``verbosity``: -v says
    each command (redacted). Raises RunDirError when the run directory is (or becomes) full:
    hosts are restored first.
    """
    if become_passwords and connector is connect:
        connector = connect_with_passwords(become_passwords)
    place = RunPlace(out, base_dir, previous)
    run = Run(plan, progress, place, connector, keep, become_passwords, tasks)
    run.connector = (verbosity or Verbosity()).traced(
        run.connector, run.progress.message, run.hooks.secrets
    )
    run.record.checkpoint()
    try:
        run.open_hosts()
        run.prepare()
        with long_lived_objects_frozen():
            run.network()
            run.paths()
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
    previous: Previous | None = None

    def make(self, plan_name: str, started: datetime) -> Path:
        """The new run directory (a resumed run's own), after checking there is room for it."""
        if self.previous is not None:
            require_free_space(self.previous.run_dir)
            return self.previous.run_dir
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
        previous = place.previous
        kept = previous.records if previous is not None else {}
        self.cells = [Cell(one, kept.get(one.test.id)) for one in self.bound]
        self.seed = _seed(plan, previous)
        # the cells by their network settings (a matrix cell's own, else the plan's)
        self.groups = network_groups(self.cells, plan.network)
        self.keep = keep
        # the cell whose part runs now, and the one before (its teardown completes its record)
        self.cell: Cell | None = None
        self.last_cell: Cell | None = None
        known = _known_secrets(plan, become_passwords or {})
        # one list of secrets for every byte written: files (the hooks) and progress lines
        self.progress = RedactedProgress(progress, known)
        self.hooks = KindHooks(self.run_dir, self.tasks, known)
        self.ctx = RunContext(plan, self.sessions, self.progress, self.tasks, self.hooks)
        self.network_phase = _network_phase(self, self.groups[0][0])
        self.networks_before: list[dict[str, Any]] = []  # earlier groups' network parts
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
        changes = any(spec.active for spec, _ in self.groups)
        self.early = None if changes else leases.EarlyRelease(self.keeper, self.lock_id, self.tasks)
        self.record = RunRecord(
            _header(plan, self.run_dir, started, self.seed, previous),
            self.sessions,
            secrets=lambda: self.hooks.secrets,
            warnings=self._warnings,
            network=self._network_part,
            saver=RunSaver(self.run_dir, frozen=("hosts",)),
        )
        self.hooks.on_checkpoint = self._checkpoint_part
        self.record.run["tests"] = self._records()
        # the run directory filled up during the run (RunDirError on its way out)
        self.dir_full = self.concluded = False

    @functools.cached_property
    def lapses(self) -> LapseGuard:
        """No measurement across a lapse of a host's lease (``nasplan.run.lapses``)."""
        return LapseGuard(self.keeper)

    def open_hosts(self) -> None:
        """Connect to every host at once: facts and the host's lock in one round trip each.

        A host is known to ``finish`` as soon as its facts are in (its lock is then released
        even when the run stops during the connections); one held by another run is unusable,
        unless that run started at the same moment and yields to this one (``leases.Contest``).
        """
        contest = leases.Contest(self.lock_id, self.timeouts.lease_s)
        lock_text = acquire_script(self.lock_id, self.timeouts.lease_s)
        early = self._early_probes()

        def also(host: Host) -> str:
            probes = early.get(host.name)
            return lock_text if probes is None else route.script(probes, route.FACTS) + lock_text

        def lock(session: HostSession, taken: Result | None) -> None:
            self.sessions[session.host.name] = session
            if taken is not None and session.host.name in early:
                self.ctx.routes[session.host.name] = route.parse(taken.stdout)
            self._guarded(lambda: contest.take(session, taken), session)

        opened = open_sessions(
            plan_hosts(self.plan),
            self.progress,
            self.connector,
            then=lock,
            also=also,
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

    def _early_probes(self) -> dict[str, route.Probes]:
        """The routes the facts' round trip asks: to the addresses the inventory gives, back to
        the clients' addresses there (none when the plan changes the network: ``paths``)."""
        if self.plan.network.active:
            return {}
        tests = [one.test for one in self.bound]
        pairs, addresses = route.inventory_pairs(tests, self.plan.inventory)
        return route.missing_probes(pairs, {}, addresses)

    def paths(self) -> None:
        """How each client -> server test's hosts route to each other, as the network now is:
        what the facts' round trip did not ask, one script per host, all at once
        (``RunContext.routes``, read by ``open_pair``); a host that cannot say (Windows, an
        error) is left out: its path is then not known."""
        if not self.network_phase.ok:
            return
        pairs = []
        for one in self.bound:
            test = one.test
            ends = [self.sessions.get(test.client), self.sessions.get(test.server)]
            if not test.client or any(s is None or not s.ready for s in ends):
                continue
            with contextlib.suppress(CannotStart):
                address = target_address(test, self.plan, self.sessions[test.server])
                pairs.append((test.client, test.server, address))
        addresses = {
            name: [a for nic in s.facts.interfaces for a in nic.addresses] if s.facts else []
            for name, s in self.sessions.items()
        }
        wanted = route.missing_probes(pairs, self.ctx.routes, addresses)

        def ask(name: str) -> None:
            session = self.sessions[name]
            if session.runner is None or session.runner.host_shell.is_windows:
                return
            try:
                found = route.gather(session.runner, wanted[name], route.Asker.of(session.facts))
            except HostLostError:
                raise
            except NasplanError:
                return
            self.ctx.routes.setdefault(name, {}).update(found)

        self.tasks.each(sorted(wanted), lambda name: self._guarded(lambda: ask(name), None))

    def tests(self) -> None:
        """Every part of every test, in the plan's order (``run.schedule``), group by group of
        network settings (matrix cells with their own: each group's made in turn); each part's
        record merged into its test's, run.json saved; hosts released once no test needs
        them."""
        released: set[str] = set()
        for number, (spec, cells) in enumerate(self.groups):
            if number:
                self._next_network(spec)
            for step in slices(cells, self.plan.order, self.seed):
                self._part(step, released)

    def _part(self, step: Slice, released: set[str]) -> None:
        """One part of a test, its record saved; its test said done when it wants no more."""
        cell = step.cell
        record = self.lapses.after(self._run_slice(step), cell.test.hosts)
        cell.ended(record)
        if record["status"] == "skipped":  # it never ran: not in the order of what ran
            del self.record.run["sequence"][-step.count :]
        for name in mark_lost_hosts(self.sessions):
            self.progress.host(name, f"[lost] {self.sessions[name].error}")
        self._checkpoint_part(None)
        if not cell.stopped():
            return
        record = cell.record()
        shown = result_text(record)
        self.progress.test_done(cell.test.id, record["status"], record["error"] or shown)
        if self.early is not None:
            self._release_done(released)

    def _next_network(self, spec: NetworkSpec) -> None:
        """The next group of cells' network settings: the last group's put back, these made
        (a failure skips the group's tests, as the first group's)."""
        self.hooks.settle()  # a test's teardown may still run over the settings put back
        self.network_phase.teardown()
        if self.network_phase.active:
            self.networks_before.append(self.network_phase.to_dict())
        self.network_phase = _network_phase(self, spec)
        self.network()

    def _release_done(self, released: set[str]) -> None:
        """Release the hosts no test wants any more (the last: at the end)."""
        open_cells = [c for c in self.cells if not c.stopped()]
        if not open_cells:
            return
        wanted = {host for cell in open_cells for host in cell.test.hosts}
        done = sorted({h for c in self.cells for h in c.test.hosts} - wanted - released)
        released.update(done)
        assert self.early is not None
        self.early.release(
            [self.sessions[name] for name in done if name in self.sessions],
            self.hooks.teardown_running(),
        )

    def _run_slice(self, step: Slice) -> dict[str, Any]:
        """One part of a test: its repetitions in run.json's ``sequence``, its record."""
        cell = step.cell
        test = cell.part(step.first, step.count)
        self.last_cell, self.cell = self.cell, cell
        self.record.run["sequence"] += [[test.id, index] for index in test.indices]
        self._say_where(test)
        return self._run_test(cell.bound, test)

    def _checkpoint_part(self, record: dict[str, Any] | None) -> None:
        """run.json now: the running part's ``record`` (None: as it is) in its test's; a
        lease of its hosts that ran out meanwhile stops it (``LapseGuard``)."""
        lapse = None
        if self.cell is not None and record is not None:
            lapse = self.lapses.check(record, self.cell.test.hosts)
            self.cell.add(record)
        for cell in (self.cell, self.last_cell):
            if cell is not None:
                cell.touch()
        self.record.run["tests"] = self._records()
        self.record.checkpoint()
        if lapse is not None:
            raise lapse
        if record is not None:  # the next repetition's line: this one's rate, the time left
            self._say_where(None)

    def _records(self) -> list[dict[str, Any]]:
        return [cell.record() for cell in self.cells if cell.started]

    def _say_where(self, test: PlanTest | None) -> None:
        """Where the run stands, for a long run's console: the running cell (``test``: its part
        now begins; None: the part goes on), its repetitions, the last one's rate, the time
        left."""
        cell, cells = self.cell, self.cells
        assert cell is not None
        test = test or cell.test
        position = next(i for i, c in enumerate(cells, 1) if c is cell)
        self.progress.place(
            Place(
                test=test.id,
                noun="cell" if test.cell else "test",
                cell=position,
                cells=len(cells),
                repetitions=cell.test.repetitions_text,
                last=_last_rate(cell),
                left_s=time_left_s(cells),
            )
        )

    def _run_test(self, one: BoundTest, test: PlanTest) -> dict[str, Any]:
        """One part's record (``test``: the whole test or a part of it); a host lost on the way
        fails it, keeping its finished repetitions; skipped when the network setup failed."""
        if not one.settles_itself:
            self.hooks.settle()
        if not self.network_phase.ok:
            return skipped(test, f"network setup failed: {self.network_phase.error}")
        self.hooks.running = None
        try:
            if test is one.test or one.run_part is None:
                record = one.run(self.ctx)
            else:
                record = one.run_part(test, self.ctx)
        except HostLostError as exc:
            record = self.hooks.running or dict(skipped(test, str(exc)))
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
        for cell in self.cells:  # every teardown completed its part's record
            cell.touch()
        self.concluded = True
        tests = self.record.run["tests"] = self._records()
        facts = {n: s.facts for n, s in self.sessions.items()}
        memory = {n: f.memory_bytes if f else None for n, f in facts.items()}
        boot_ids = {n: f.boot_id if f else None for n, f in facts.items()}
        local = {n for n, s in self.sessions.items() if s.host.is_local}
        annotate_transfers(tests, memory, shared_kernels(boot_ids, local_boot_id(), local))
        self.network_phase.teardown()
        # a host that was reached but cannot be used (sudo refused, tools missing) counts too
        unreachable = any(s.facts is None or s.error for s in self.sessions.values())
        failed = any(t["status"] != "ok" for t in tests) or not self.network_phase.ok
        self.record.run["status"] = "unreachable" if unreachable else ("failed" if failed else "ok")
        self._diagnose()
        code = EXIT_UNREACHABLE if unreachable else (EXIT_TEST_FAILED if failed else EXIT_OK)
        return Outcome(self.run_dir, code)

    def _diagnose(self) -> None:
        """run.json's ``diagnosis`` (nasplan.diagnose, from the record alone); a routed or
        asymmetric path is also a warning of its test."""
        from nasplan.diagnose import diagnose

        found = diagnose(self.record.snapshot())
        self.record.run["diagnosis"] = found
        for one in found:
            if one["cause"] in ("routed-path", "asymmetric-path"):
                self.ctx.warnings.append(f"{one['test']}: {one['text']}")

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
            self._cut_short()
            written = self.record.snapshot()
            try:
                self._write(written, synced=self.hooks.unsynced)
            finally:
                releasing.wait()
            self._cut_short()
            final = self.record.snapshot()
            if final != written:  # a release removed something the run left there: say so
                self._write(final, synced=[])
            self.record.saver.close()

    def _cut_short(self) -> None:
        """The tests under way when the run was stopped (Ctrl-C, a full disk), each with the
        repetitions it finished, marked failed saying so (nothing after ``conclude``)."""
        if self.concluded:
            return
        if self.cell is not None and self.hooks.running is not None:
            self.cell.add(self.hooks.running)  # its last checkpoint (the last repetition's too)
        for cell in self.cells:
            cell.touch()
        self.record.run["tests"] = self._records()
        for cell in self.cells:
            if cell.started and not cell.stopped():
                record = cell.record()
                done = sum(1 for rep in record["repetitions"] if rep.get("status") == "ok")
                record["status"] = "failed"
                said = f"the run was stopped after {done} repetitions"
                record["error"] = record.get("error") or said

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
            saver = self.record.saver
            if saver.saved is not run:  # not even into the space held for it: say what is lost
                lacks = saver.lacking(run)
                self.progress.message(f"nasplan: {saver.path} keeps its last save, lacking {lacks}")
            if not self.dir_full:  # else said by whoever catches the run's own RunDirError
                self.progress.message(f"nasplan: {exc}")

    def _warnings(self) -> list[str]:
        """Every warning of the run so far: a resumed run's from before, the inventory's, the
        hosts', the tests', the network's."""
        found = [*self.record.run["warnings"], *self.plan.inventory.warnings]
        found += [w for s in self.sessions.values() for w in s.warnings] + self.ctx.warnings
        found += self.network_phase.warnings if self.network_phase.active else []
        return list(dict.fromkeys(found))  # a test run in parts warns in each part

    def _network_part(self) -> dict[str, Any] | None:
        # cells with network settings of their own: the last group's, with the earlier ones
        parts = [*self.networks_before]
        if self.network_phase.active:
            parts.append(self.network_phase.to_dict())
        if len(parts) > 1:
            return {**parts[-1], "groups": parts[:-1]}
        return parts[0] if parts else None


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


def _network_phase(run: Run, spec: NetworkSpec) -> NetworkPart:
    """The run's network phase for ``spec`` (the plan's, or a group of cells' own); most plans
    change no network setting, and their runs do not import the network phase's code (a
    noticeable part of every start)."""
    plan = run.plan
    if not spec.active:
        return NoNetworkChanges()
    from nasplan.run.network_phase import NetworkPhase

    return NetworkPhase(
        spec,
        run.sessions,
        run.run_dir,
        run.progress,
        run.connector,
        keep=run.keep,
        inventory_file=str(plan.inventory.path.resolve()),
        known_hosts=str(plan.known_hosts.resolve()) if plan.known_hosts else None,
        reconnect_grace_s=run.timeouts.reconnect_grace_s,
        lease_s=run.timeouts.lease_s,
        tasks=run.tasks,
    )


def _header(
    plan: Plan, run_dir: Path, started: datetime, seed: int, previous: Previous | None
) -> dict[str, Any]:
    """run.json's keys in their order, as a run that has not done anything yet (a resumed run:
    its first start, the order it ran so far, when it was resumed)."""
    before = previous.run if previous is not None else {}
    header = {
        "schema_version": 1,
        "nasplan_version": __version__,
        "run_id": run_dir.name,
        "plan_file": str(plan.path),
        "inventory_file": str(plan.inventory.path),
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
    if plan.subset is not None:  # --limit / --tests: a part of the plan
        header["subset"] = dict(plan.subset)
    return header


def _last_rate(cell: Cell) -> str | None:
    """The rate (or latency, MTU) of the cell's last repetition that ended ok, formatted."""
    if not cell.started:
        return None
    record = cell.record()
    metric = (record.get("summary") or {}).get("metric") or "bits_per_second"
    for rep in sorted(record["repetitions"], key=lambda r: r.get("ended_s") or 0.0, reverse=True):
        if rep.get("status") == "ok" and isinstance(rep.get(metric), (int, float)):
            return format_metric(rep[metric], metric)
    return None


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


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
