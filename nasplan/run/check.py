"""``nasplan apply --check``: connect and gather facts, read what each test needs on its hosts
(a directory, a share, an export), say what would happen, change nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan import platforms
from nasplan.errors import CannotStart
from nasplan.facts import storage, volumes
from nasplan.hosts.session import HostSession, close_sessions, open_sessions, planned_installs
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure import estimate, probes
from nasplan.measure.kind import PROBE_CANNOT_TELL, BoundTest, Probe
from nasplan.progress import Progress
from nasplan.remote.runner import Result, Runner
from nasplan.remote.ssh import connect
from nasplan.run import listing
from nasplan.run.overlap import Overlap
from nasplan.run.planned import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_TEST_FAILED,
    EXIT_UNREACHABLE,
    bound_tests,
    plan_hosts,
    tool_needs,
    unset_variables,
)
from nasplan.tasks import Tasks
from nasplan.verbosity import Verbosity

# a look at a directory, a share or an export: a share that does not answer must not hold it
PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Checked:
    """What ``--check`` found: per host its platform and installs (or why it is unreachable),
    the network changes, the tests it would run, the problems; and the exit code (an
    ``Outcome`` without a run directory)."""

    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: list[dict[str, str]] = field(default_factory=list)
    tests: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # what it read on the hosts for the tests (``Kind.probes``): host, what, found (yes, no,
    # unknown), why, the tests that need it
    looked: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int = EXIT_OK
    run_dir: Path | None = None
    # how many tests (matrix cells, of the plan's when a subset) and how long, estimated
    summary: str = ""
    estimate: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``--format json``: ``{"hosts": {...}, "installs": {...}, "changes": [...],
        "tests": [...], "estimate": {"seconds", "assumptions", "tests"}, "problems": [...],
        "exit_code": 0}``."""
        return {
            "hosts": self.hosts,
            "installs": {name: host["installs"] for name, host in self.hosts.items()},
            "changes": self.changes,
            "tests": self.tests,
            "looked": self.looked,
            "estimate": self.estimate,
            "problems": self.problems,
            "exit_code": self.exit_code,
        }

    def lines(self) -> list[str]:
        """The same as lines for the console (an unreachable host was said as it failed)."""
        out: list[str] = []
        for name, host in self.hosts.items():
            if not host["reachable"]:
                continue
            todo = "; ".join(host["installs"]) if host["installs"] else "nothing to install"
            out.append(f"{name} ({host['platform'] or '?'}): {todo}")
            out += [f"{name} {what}: {text}" for what, text in host.get("storage", {}).items()]
            out += [f"warning: {warning}" for warning in host["warnings"]]
        out += [f"{c['host']}: would set {c['change']} (and put it back after the run)"
                for c in self.changes]  # fmt: skip
        out += [f"test {t['id']}: would run {t['would_run']}" for t in self.tests]
        out += [_looked_line(one) for one in self.looked]
        out += [self.summary] if self.summary else []
        return out + [f"problem: {problem}" for problem in self.problems]


def check(
    plan: Plan,
    progress: Progress,
    connector: Callable[[Host], Runner] = connect,
    environ: Mapping[str, str] | None = None,
    tasks: Tasks | None = None,
    *,
    verbosity: Verbosity | None = None,
    say: bool = True,
) -> Checked:
    """Find what the run would install, change and run on each host; ``say``: print it.

    Exit code 2 when a password variable the run needs is not set (``environ``, default the
    process environment), 1 when something a test needs is not there (a directory, a share,
    an export: what its kind's probes read), else 0, or 3 when a host is unreachable.
    """
    missing = unset_variables(plan, os.environ if environ is None else environ)
    bound = bound_tests(plan)
    connector = (verbosity or Verbosity()).traced(connector, progress.message)
    hosts = plan_hosts(plan)
    # the looks known before any facts (a disk test's directory) ride in the facts' round trip
    early = _early_probes(plan, bound, hosts)
    with_facts: dict[str, Result] = {}

    def also(host: Host) -> str | None:
        found = early.get(host.name)
        return probes.together([p.script for p in found]) if found else None

    def then(session: HostSession, result: Result | None) -> None:
        if result is not None:
            with_facts[session.host.name] = result

    sessions = open_sessions(
        hosts, progress, connector, then=then, also=also, tasks=tasks or Overlap.concurrent()
    )
    try:
        looked, cannot = _look(
            plan, bound, sessions, tasks or Overlap.concurrent(), _answered(early, with_facts)
        )
        checked = _checked(plan, bound, sessions, missing, (looked, cannot))
    finally:
        close_sessions(sessions)
    if say:
        for line in checked.lines():
            progress.message(line)
    return checked


def _checked(
    plan: Plan,
    bound: list[BoundTest],
    sessions: Mapping[str, HostSession],
    missing: list[str],
    found: tuple[list[dict[str, Any]], list[str]],
) -> Checked:
    """What ``--check`` found, from the hosts' sessions (a host unreachable as they opened: its
    error) and what it read on them (``found``: ``_look``'s, which marks no host lost), with the
    password variables ``missing``."""
    unreachable = any(s.error for s in sessions.values())
    looked, cannot = found
    problems = missing + cannot
    problems += [f"{o['missing']}: {o['why']}" for o in looked if o["found"] == "no"]
    would_fail = EXIT_TEST_FAILED if len(problems) > len(missing) else EXIT_OK
    return Checked(
        hosts=_hosts(plan, sessions, bound),
        changes=_changes(plan, sessions),
        tests=[{"id": one.test.id, "would_run": one.description} for one in bound],
        problems=problems,
        looked=looked,
        exit_code=EXIT_UNREACHABLE if unreachable else EXIT_INPUT if missing else would_fail,
        summary=listing.summary(plan),
        estimate={**_estimate(plan, sessions), "tests": len(plan.tests)},
    )


Key = tuple[str, str, str | None]


def _key(probe: Probe) -> Key:
    return (probe.host, probe.script, probe.stdin)


def _early_probes(
    plan: Plan, bound: list[BoundTest], hosts: Mapping[str, Host]
) -> dict[str, list[Probe]]:
    """Per host, the distinct looks its tests ask for before any host answered (a directory
    named in the plan), without a secret on stdin: what the facts' round trip can carry."""
    bare = {name: HostSession(host) for name, host in hosts.items()}
    early: dict[str, dict[Key, Probe]] = {}
    for one in bound:
        try:
            found = one.probes(plan, bare)
        except (CannotStart, ValueError):
            continue  # said by the look with the facts in
        for probe in found:
            if probe.stdin is None and probe.host in hosts:
                early.setdefault(probe.host, {}).setdefault(_key(probe), probe)
    return {host: list(found.values()) for host, found in early.items()}


def _answered(
    early: Mapping[str, list[Probe]], with_facts: Mapping[str, Result]
) -> dict[Key, Result]:
    """What each look that rode with a host's facts answered (none for a host whose round
    trip did not run them: Windows, cut off)."""
    answers: dict[Key, Result] = {}
    for host, result in with_facts.items():
        found = early.get(host, [])
        for probe, done in zip(found, probes.apart(result, len(found)), strict=True):
            answers[_key(probe)] = done
    return answers


def _estimate(plan: Plan, sessions: Mapping[str, HostSession]) -> dict[str, Any]:
    """The run's estimate with the link speeds the hosts negotiated (``--list-tests`` has only
    the inventory's)."""
    facts = {name: session.facts for name, session in sessions.items()}
    speeds = estimate.negotiated_speeds(facts, plan)
    found = listing.estimate(estimate.with_negotiated(plan, speeds)).to_dict()
    if speeds:
        found["assumptions"].append(estimate.NEGOTIATED)
    return found


def _look(
    plan: Plan,
    bound: list[BoundTest],
    sessions: Mapping[str, HostSession],
    tasks: Tasks,
    answered: Mapping[Key, Result],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Each test's probes (``Kind.probes``) on its reachable POSIX hosts, each distinct one
    once: the answers that came with the facts (``answered``), the rest in one script per host
    (a look with a secret on its stdin: a command of its own), all hosts at once; what was
    found, and the tests that could not say what they need (a target without an address: the
    run's own error)."""
    wanted: dict[Key, tuple[Probe, list[str]]] = {}
    cannot = []
    for one in bound:
        try:
            found = one.probes(plan, sessions)
        except (CannotStart, ValueError) as exc:
            cannot.append(f"test {one.test.id}: {exc}")
            continue
        for probe in found:
            session = sessions.get(probe.host)
            if session is None or session.error or session.runner is None:
                continue  # an unreachable host is said as such
            if not platforms.of(session.runner).posix_shell:
                continue  # the probes are POSIX sh; a Windows host is looked at by the run
            wanted.setdefault(_key(probe), (probe, []))[1].append(one.test.id)
    done: dict[Key, Result] = {key: answered[key] for key in wanted if key in answered}
    per_host: dict[str, list[Key]] = {}
    alone: list[list[Key]] = []  # a secret on stdin: the look's own command
    for key in wanted:
        if key in done:
            continue
        if key[2] is None:
            per_host.setdefault(key[0], []).append(key)
        else:
            alone.append([key])

    def look(keys: list[Key]) -> None:
        runner = sessions[keys[0][0]].runner
        assert runner is not None
        if keys[0][2] is not None:
            probe = wanted[keys[0]][0]
            done[keys[0]] = runner.run_script(
                probe.script, stdin=probe.stdin, timeout_s=PROBE_TIMEOUT_S
            )
            return
        script = probes.together([key[1] for key in keys])
        whole = runner.run_script(script, timeout_s=PROBE_TIMEOUT_S * len(keys))
        done.update(zip(keys, probes.apart(whole, len(keys)), strict=True))

    tasks.each([*per_host.values(), *alone], look)
    return [_found(wanted[key], done[key]) for key in wanted], cannot


def _found(wanted: tuple[Probe, list[str]], done: Result) -> dict[str, Any]:
    """``looked``'s entry of one probe and what it answered."""
    probe, tests = wanted
    said = [line for line in done.stdout.splitlines() if line.strip()]
    found = "yes" if done.ok else "unknown" if done.exited == PROBE_CANNOT_TELL else "no"
    why = said[-1].strip() if said else (done.stderr.strip() or f"exit {done.exited}")
    return {
        "host": probe.host, "what": probe.what, "found": found,
        "why": "" if done.ok else why, "missing": probe.missing, "tests": tests,
    }  # fmt: skip


def _looked_line(one: Mapping[str, Any]) -> str:
    """``nas: the disk test's path /volume1/test (a writable directory): there (disk-1)``."""
    tests = one["tests"]
    named = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
    found = {"yes": "there", "no": f"NOT THERE: {one['why']}", "unknown": one["why"]}
    return f"{one['host']}: {one['what']}: {found[one['found']]} (for {named})"


def _hosts(
    plan: Plan, sessions: Mapping[str, HostSession], bound: list[BoundTest]
) -> dict[str, dict[str, Any]]:
    """Each host's platform and what would be installed there, or why it is unreachable."""
    needs = tool_needs(plan, bound)
    found: dict[str, dict[str, Any]] = {}
    for name, session in sessions.items():
        reachable = session.error is None
        found[name] = {
            "reachable": reachable,
            "platform": session.platform.name if session.platform else None,
            "error": session.error,
            "installs": planned_installs(session, needs.get(name, [])) if reachable else [],
            "warnings": list(session.warnings),
            "storage": _storage(session),
        }
    return found


def _storage(session: HostSession) -> dict[str, str]:
    """The host's volumes as its facts show them, and a memory limit below its RAM."""
    facts = session.facts
    if facts is None:
        return {}
    paths = {f"volume {n}": v.path for n, v in sorted(session.host.volumes.items())}
    found = volumes.describe_all(paths, facts.storage)
    if facts.memory_limit_bytes:
        found["memory limit"] = storage.size_text(facts.memory_limit_bytes)
    return found


def _changes(plan: Plan, sessions: Mapping[str, HostSession]) -> list[dict[str, str]]:
    """Each declared network change, against the host's current state."""
    if not plan.network.hosts:
        return []
    from nasplan.run.host_network import describe_changes  # a plan that changes the network

    changes: list[dict[str, str]] = []
    for name in plan.network.hosts:
        facts = sessions[name].facts if name in sessions else None
        current = {nic.name: nic for nic in facts.interfaces} if facts else {}
        changes += [
            {"host": name, "change": line}
            for line in describe_changes(plan.network.changes(name), current)
        ]
    return changes
