"""Connect to every host of a plan in parallel, gather facts, detect platforms, prepare tools."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nasplan.errors import HostLostError, NasplanError
from nasplan.facts.gather import HostFacts, gather_with, parse_iperf3_version
from nasplan.input.inventory import Host
from nasplan.platforms import Command, Platform, PlatformError, detect
from nasplan.progress import Progress
from nasplan.runner import Result, Runner
from nasplan.ssh import connect

MAX_PARALLEL_HOSTS = 64

T = TypeVar("T")


@dataclass
class HostSession:
    """A host during a run: its connection, facts, platform, tool paths, and what went wrong."""

    host: Host
    runner: Runner | None = None
    facts: HostFacts | None = None
    platform: Platform | None = None
    tools: dict[str, str] = field(default_factory=dict)
    # A tool its platform cannot provide fails only the tests that need it, with this reason.
    tool_errors: dict[str, str] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    # the host stopped answering during the run (after it had been reached)
    lost: bool = False
    # this run holds the host's nasplan lock (nasplan.hosts.lock)
    locked: bool = False

    @property
    def ready(self) -> bool:
        return self.runner is not None and self.error is None

    def mark_lost(self, reason: str) -> None:
        """Record that the host stopped answering: its later tests fail with ``reason``."""
        self.lost = True
        self.error = self.error or reason

    def to_dict(self) -> dict[str, Any]:
        """run.json ``hosts.<name>``."""
        return {
            "address": self.host.address,
            "platform": self.platform.name if self.platform else None,
            "os": self.platform.os_name(self.facts) if self.platform and self.facts else None,
            "platform_hint": self.host.platform_hint,
            "reachable": self.facts is not None and not self.lost,
            "lost": self.lost,
            "error": self.error,
            "interfaces": {k: i.to_dict() for k, i in sorted(self.host.interfaces.items())},
            "facts": self.facts.to_dict() if self.facts else None,
            "tools": dict(sorted(self.tools.items())),
            "tool_errors": dict(sorted(self.tool_errors.items())),
            "actions": list(self.actions),
        }

    def recorded_state(self) -> tuple[Any, ...]:
        """Everything ``to_dict`` reads (HostsPart compares it from one save to the next)."""
        return (
            self.host,
            self.facts,
            self.platform,
            self.error,
            self.lost,
            tuple(self.tools.items()),
            tuple(self.tool_errors.items()),
            tuple(self.actions),
        )


class HostsPart:
    """run.json's ``hosts`` as it is now: built again only when a session changed in what it
    records, else the very same dict (never changed once handed out), whose text RunSaver then
    reuses without encoding 30 hosts' facts again at every save (``RunSaver(frozen=...)``)."""

    def __init__(self, sessions: Mapping[str, HostSession]) -> None:
        self._sessions = sessions
        # the states the part was built from (held: an object's id is not reused meanwhile)
        self._states: list[tuple[str, tuple[Any, ...]]] = []
        self._part: dict[str, Any] = {}

    def now(self) -> dict[str, Any]:
        """The part, rebuilt if anything it shows changed since the last call."""
        states = [(name, s.recorded_state()) for name, s in sorted(self._sessions.items())]
        if not _same_states(states, self._states):
            self._part = {name: self._sessions[name].to_dict() for name, _ in states}
            self._states = states
        return self._part


def _same_states(
    new: list[tuple[str, tuple[Any, ...]]], old: list[tuple[str, tuple[Any, ...]]]
) -> bool:
    return len(new) == len(old) and all(
        name == was_name and all(a is b or a == b for a, b in zip(state, was, strict=True))
        for (name, state), (was_name, was) in zip(new, old, strict=True)
    )


def in_parallel(items: Iterable[T], work: Callable[[T], None]) -> None:
    """Run ``work`` on every item with a bounded pool; ``work`` records its own errors."""
    batch = list(items)
    if not batch:
        return
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_HOSTS, len(batch))) as pool:
        for future in [pool.submit(work, item) for item in batch]:
            future.result()


def _platform_warning(session: HostSession) -> str | None:
    hint, platform = session.host.platform_hint, session.platform
    if hint in ("auto", None) or platform is None:
        return None
    aliases = {"ubuntu": "debian"}
    if aliases.get(hint, hint) != platform.name:
        return (
            f"{session.host.name}: inventory says platform {hint!r} "
            f"but the host looks like {platform.name!r}"
        )
    return None


def open_sessions(
    hosts: Mapping[str, Host],
    progress: Progress,
    connector: Callable[[Host], Runner] = connect,
    then: Callable[[HostSession, Result | None], None] | None = None,
    also: str | None = None,
) -> dict[str, HostSession]:
    """Connect and gather facts on every host at once: one SSH round trip each for the facts.

    ``also``: POSIX sh run in that same round trip on POSIX hosts (apply: the host lock).
    ``then``: the next step for a host whose facts came, given ``also``'s result (None where it
    did not run: Windows), run at once in the same worker: a host does not wait for the
    slowest host's facts before it.
    """
    sessions = {name: HostSession(host) for name, host in sorted(hosts.items())}

    def one(session: HostSession) -> None:
        progress.host(session.host.name, "connecting")
        try:
            session.runner = connector(session.host)
            session.facts, also_result = gather_with(
                session.runner,
                also,
                windows=session.host.platform_hint == "windows",
                tool_paths=session.host.tools,
            )
        except NasplanError as exc:
            session.error = str(exc)
            progress.host(session.host.name, f"[unreachable] {exc}")
            return
        if session.host.tools and session.facts.kernel_name != "Windows":
            session.facts = with_inventory_tools(session.runner, session.facts, session.host.tools)
        session.platform = detect(session.facts)
        warning = _platform_warning(session)
        if warning:
            session.warnings.append(warning)
        progress.host(session.host.name, f"{session.platform.name}, facts gathered")
        if then is not None:
            then(session, also_result)

    in_parallel(sessions.values(), one)
    return sessions


def with_inventory_tools(runner: Runner, facts: HostFacts, tools: Mapping[str, str]) -> HostFacts:
    """``facts`` with the inventory's ``tools:`` paths (they win), iperf3's version read again.

    Windows reads them in its facts script already; POSIX hosts take them as given.
    """
    version = _installed_iperf3_version(runner, tools) if "iperf3" in tools else None
    return dataclasses.replace(
        facts,
        tools={**facts.tools, **tools},
        iperf3_version=version or facts.iperf3_version,
    )


def planned_installs(session: HostSession, packages: Sequence[str]) -> list[str]:
    """What ``prepare`` would do on this host, as lines for --check: ``would apt-get install
    -y iperf3``, or ``cannot install iperf3: <the platform's advice>``."""
    if session.facts is None or session.platform is None:
        return []
    try:
        commands = session.platform.install_commands(session.facts, list(packages))
    except PlatformError as exc:
        return [f"cannot install {', '.join(packages)}: {exc}"]
    return [f"would {command.description}" for command in commands]


def _installable(
    session: HostSession, wanted: Sequence[str], progress: Progress
) -> tuple[list[str], list[Command]]:
    """The tools the platform can provide and its commands; the others go to tool_errors."""
    assert session.facts is not None and session.platform is not None
    try:
        return list(wanted), session.platform.install_commands(session.facts, wanted)
    except PlatformError:
        pass
    # One tool at a time, to tell which of them the platform cannot provide.
    possible: list[str] = []
    for tool in wanted:
        try:
            session.platform.install_commands(session.facts, [tool])
        except PlatformError as exc:
            session.tool_errors[tool] = f"{session.host.name}: {exc}"
            progress.host(session.host.name, f"[{tool} unavailable] {exc}")
        else:
            possible.append(tool)
    return possible, session.platform.install_commands(session.facts, possible)


def prepare(
    sessions: Mapping[str, HostSession],
    needs: Mapping[str, Sequence[str]],
    progress: Progress,
) -> None:
    """Make each host's needed tools available (only where missing) and find their paths.

    ``needs``: host name -> tools. A tool the platform cannot provide is recorded in
    ``tool_errors``; a failed install or a refused sudo makes the whole host unusable.
    """

    def one(session: HostSession) -> None:
        if not session.ready or session.facts is None or session.platform is None:
            return
        facts, platform, runner = session.facts, session.platform, session.runner
        assert runner is not None
        wanted, commands = _installable(session, list(needs.get(session.host.name, ())), progress)
        found: dict[str, str] = {}
        for command in commands:
            progress.host(session.host.name, command.description)
            try:
                result = runner.run_script(command.script, sudo=command.sudo, timeout_s=600)
            except NasplanError as exc:  # sudo refused: wrong password, user not allowed
                session.error = f"{session.host.name}: {exc}"
                progress.host(session.host.name, f"[failed] {exc}")
                return
            if not result.ok:
                detail = (result.stderr or result.stdout).strip().splitlines()
                session.error = (
                    f"{session.host.name}: {command.description} failed (exit {result.exited})"
                    + (f": {detail[-1]}" if detail else "")
                )
                progress.host(session.host.name, f"[failed] {session.error}")
                return
            session.actions.append(command.description)
            for line in result.stdout.splitlines():
                printed = line.strip()
                if printed.startswith("/"):
                    found[printed.rsplit("/", 1)[-1]] = printed
        for tool in wanted:
            path = found.get(tool) or platform.tool_path(facts, tool)
            if path is None:
                session.error = f"{session.host.name}: {tool} is still not available after install"
                return
            session.tools[tool] = path
        if found and session.facts is not None:
            session.facts = dataclasses.replace(
                session.facts,
                tools={**session.facts.tools, **found},
                iperf3_version=_installed_iperf3_version(runner, found)
                or session.facts.iperf3_version,
            )
        progress.host(session.host.name, "ready")

    def guarded(session: HostSession) -> None:
        try:
            one(session)
        except HostLostError as exc:  # stopped answering half-way: its tests fail with why
            session.mark_lost(str(exc))
            progress.host(session.host.name, f"[lost] {exc}")

    in_parallel(sessions.values(), guarded)


def _installed_iperf3_version(runner: Runner, found: Mapping[str, str]) -> str | None:
    """The version of an iperf3 just installed (the facts predate it), or None."""
    path = found.get("iperf3")
    if path is None:
        return None
    result = runner.run([path, "--version"], timeout_s=30)
    return parse_iperf3_version(result.stdout.strip().splitlines()[0] if result.stdout else "")


def mark_lost_hosts(sessions: Mapping[str, HostSession]) -> list[str]:
    """Mark sessions whose connection stopped answering as lost; return their new names."""
    newly = []
    for name, session in sessions.items():
        reason = getattr(session.runner, "lost", None)
        if isinstance(reason, str) and not session.lost:
            session.mark_lost(reason)
            newly.append(name)
    return newly


def close_sessions(sessions: Mapping[str, HostSession]) -> None:
    """Close every connection, ignoring ones already gone."""
    for session in sessions.values():
        close = getattr(session.runner, "close", None)
        if close is not None:
            # Closing must never mask the run's outcome.
            with contextlib.suppress(Exception):
                close()
