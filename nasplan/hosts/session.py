"""Connect to every host of a plan in parallel, gather facts, detect platforms, prepare tools."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasplan import platforms
from nasplan.errors import HostLostError, NasplanError
from nasplan.facts.gather import HostFacts, gather_with, parse_iperf3_version
from nasplan.facts.volumes import describe as describe_volume
from nasplan.input.inventory import Host
from nasplan.platforms import Command, Platform, PlatformError, detect, posix_by_hint
from nasplan.progress import Progress
from nasplan.remote.runner import Result, Runner
from nasplan.remote.ssh import connect
from nasplan.tasks import Tasks


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

    def recorded_state(self) -> RecordedHost:
        """What run.json records of the host, as one comparable value (``to_dict`` reads only
        this, so a cache keyed on it cannot miss a change)."""
        return RecordedHost(
            self.host,
            self.facts,
            self.platform,
            self.error,
            self.lost,
            tuple(sorted(self.tools.items())),
            tuple(sorted(self.tool_errors.items())),
            tuple(self.actions),
        )

    def to_dict(self) -> dict[str, Any]:
        """run.json ``hosts.<name>``."""
        return self.recorded_state().to_dict()


def _fields(record: RecordedHost) -> list[Any]:
    return [getattr(record, f.name) for f in dataclasses.fields(record)]


@dataclass(frozen=True)
class RecordedHost:
    """Everything run.json ``hosts.<name>`` shows of a session, and nothing else."""

    host: Host
    facts: HostFacts | None
    platform: Platform | None
    error: str | None
    lost: bool
    tools: tuple[tuple[str, str], ...]
    tool_errors: tuple[tuple[str, str], ...]
    actions: tuple[str, ...]

    def same_as(self, other: RecordedHost | None) -> bool:
        """The same record: the same objects or equal values (facts compare by identity first:
        they are replaced, never changed in place)."""
        if other is None:
            return False
        return all(a is b or a == b for a, b in zip(_fields(self), _fields(other), strict=True))

    def to_dict(self) -> dict[str, Any]:
        """run.json ``hosts.<name>``."""
        platform, facts = self.platform, self.facts
        return {
            "address": self.host.address,
            "platform": platform.name if platform else None,
            "os": platform.os_name(facts) if platform and facts else None,
            "platform_hint": self.host.platform_hint,
            "reachable": facts is not None and not self.lost,
            "lost": self.lost,
            "error": self.error,
            "interfaces": {k: i.to_dict() for k, i in sorted(self.host.interfaces.items())},
            "facts": facts.to_dict() if facts else None,
            "tools": dict(self.tools),
            "tool_errors": dict(self.tool_errors),
            "actions": list(self.actions),
            **({"volumes": self.volumes()} if self.host.volumes else {}),
        }

    def volumes(self) -> dict[str, Any]:
        """run.json ``hosts.<name>.volumes``: each inventory volume and what the facts say it
        is (``nasplan.facts.volumes.describe``: disks, RAID level, filesystem, free space)."""
        storage = self.facts.storage if self.facts else {}
        return {
            name: {**volume.to_dict(), "found": describe_volume(volume.path, storage)}
            for name, volume in sorted(self.host.volumes.items())
        }


def _platform_warning(session: HostSession) -> str | None:
    hint, platform = session.host.platform_hint, session.platform
    if hint in ("auto", None) or platform is None:
        return None
    if hint not in platform.hints:
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
    also: str | Callable[[Host], str | None] | None = None,
    *,
    tasks: Tasks,
) -> dict[str, HostSession]:
    """Connect and gather facts on every host at once: one SSH round trip each for the facts.

    ``also``: POSIX sh run in that same round trip on POSIX hosts (apply: the host lock, and
    the routes the inventory already names, --check: the looks its tests ask for), or a host
    -> that script (None: nothing more on that host).
    ``then``: the next step for a host whose facts came, given ``also``'s result (None where it
    did not run: Windows), run at once in the same worker: a host does not wait for the
    slowest host's facts before it. ``tasks``: where the hosts are worked on at once.
    """
    sessions = {name: HostSession(host) for name, host in sorted(hosts.items())}

    def one(session: HostSession) -> None:
        progress.host(session.host.name, "connecting")
        try:
            session.runner = connector(session.host)
            session.facts, also_result = gather_with(
                session.runner,
                also(session.host) if callable(also) else also,
                windows=not posix_by_hint(session.host.platform_hint),
                tool_paths=session.host.tools,
            )
        except NasplanError as exc:
            session.error = str(exc)
            # one line in the user's terms: the host's name is the line's own already
            said = session.error.removeprefix(f"{session.host.name}: ")
            progress.host(session.host.name, f"[unreachable] {said}")
            return
        if session.host.tools and platforms.of(session.runner).posix_shell:
            session.facts = with_inventory_tools(session.runner, session.facts, session.host.tools)
        session.platform = detect(session.facts)
        warning = _platform_warning(session)
        if warning:
            session.warnings.append(warning)
        progress.host(session.host.name, f"{session.platform.name}, facts gathered")
        if then is not None:
            then(session, also_result)

    tasks.each(sessions.values(), one)
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
    *,
    tasks: Tasks,
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

    tasks.each(sessions.values(), guarded)


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
        reason = session.runner.lost if session.runner is not None else None
        if reason is not None and not session.lost:
            session.mark_lost(reason)
            newly.append(name)
    return newly


def close_sessions(sessions: Mapping[str, HostSession]) -> None:
    """Close every connection, ignoring ones already gone."""
    for session in sessions.values():
        if session.runner is not None:
            # Closing must never mask the run's outcome.
            with contextlib.suppress(Exception):
                session.runner.close()
