"""Public lab operations: ``up``, ``down``, ``status``, ``reshape`` (CLI and tests call these)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from nasplan.errors import InputError, LabError
from nasplan.lab import build, cgroups, netns, shaping
from nasplan.lab.model import Lab, load_lab, normalize_rate
from nasplan.lab.state import HostState, LabState, LinkState, load_state
from nasplan.units import format_size, parse_rate, parse_size

Report = Callable[[str], None]
T = TypeVar("T")
ROOT_MESSAGE = "nasplan lab needs root (network namespaces)"


def _quiet(_: str) -> None:
    pass


def require_root() -> None:
    """Raise LabError unless running as root (namespaces, veths and tc need it)."""
    if os.geteuid() != 0:
        raise LabError(ROOT_MESSAGE)


def default_state_dir(lab: Lab) -> Path:
    """``<lab file dir>/.lab/<lab name>``."""
    return lab.path.resolve().parent / ".lab" / lab.name


def up(lab_file: Path, state_dir: Path | None = None, report: Report = _quiet) -> LabState:
    """Bring the lab up (or verify it is already up, or repair it); return its state."""
    lab = load_lab(lab_file)
    require_root()
    state_dir = (state_dir or default_state_dir(lab)).resolve()
    existing = load_state(state_dir)
    if existing is not None:
        if existing.lab_name != lab.name:
            raise LabError(f"{state_dir} holds lab {existing.lab_name}, not {lab.name}")
        found = build.problems(existing)
        if existing.lab_digest != lab.digest:
            found.append(f"{lab.path} changed since it was brought up")
        if not found:
            report(f"lab {lab.name} is already up ({state_dir})")
            return existing
        report(f"lab {lab.name} is broken ({'; '.join(found)}): rebuilding it")
        build.teardown(existing)
    taken = build.conflicts(lab)
    if taken:
        raise LabError("\n".join([f"cannot bring lab {lab.name} up:", *taken]))
    state = build.new_state(lab, state_dir)
    try:
        build.build(lab, state)
    except BaseException as exc:
        failures = build.teardown(state)
        if isinstance(exc, KeyboardInterrupt):
            raise
        leftovers = f" (cleanup problems: {'; '.join(failures)})" if failures else ""
        raise LabError(f"lab up failed and was undone: {exc}{leftovers}") from exc
    report(f"lab {lab.name} is up: {len(state.hosts)} hosts, state in {state_dir}")
    return state


def resolve_state_dir(lab_file: Path | None, state_dir: Path | None) -> tuple[Lab | None, Path]:
    """The lab (when its file is given) and the state directory to use."""
    lab = load_lab(lab_file) if lab_file is not None else None
    if state_dir is not None:
        return lab, state_dir.resolve()
    if lab is None:
        raise InputError("give the lab file or --state-dir")
    return lab, default_state_dir(lab)


def down(
    lab_file: Path | None = None, state_dir: Path | None = None, report: Report = _quiet
) -> None:
    """Tear the lab down: daemons, namespaces, bridge, links, generated files. Idempotent."""
    lab, state_dir = resolve_state_dir(lab_file, state_dir)
    require_root()
    state = load_state(state_dir)
    if state is None and lab is None:
        report(f"no lab state in {state_dir}: nothing to do")
        return
    if state is None:
        assert lab is not None
        # Without a record, remove exactly the names this lab file would have created.
        state = build.new_state(lab, state_dir)
        state.namespaces = [host.namespace for host in lab.hosts]
        state.root_links = [lab.names.bridge]
        state.root_links += [lab.names.lan_root_side(host.index) for host in lab.hosts]
        for index in range(len(lab.links)):
            state.root_links += [lab.names.link_end(index, side) for side in ("a", "b")]
    failures = build.teardown(state)
    if failures:
        raise LabError("\n".join(["lab down left something behind:", *failures]))
    report(f"lab {state.lab_name} is down")


@dataclass(frozen=True)
class HostStatus:
    """A host as ``lab status`` sees it."""

    host: HostState
    namespace_exists: bool
    sshd_alive: bool


@dataclass(frozen=True)
class LinkStatus:
    """A link as ``lab status`` sees it; ``shaped_bits_per_second`` per end (None: unknown)."""

    link: LinkState
    shaped_bits_per_second: list[int | None]


@dataclass(frozen=True)
class LabStatus:
    """The recorded lab, its hosts' and links' live state, and what is wrong."""

    state: LabState
    hosts: list[HostStatus]
    links: list[LinkStatus]
    problems: list[str]


def status(lab_file: Path | None = None, state_dir: Path | None = None) -> LabStatus | None:
    """The lab's live status, or None when it is not up (no state.json)."""
    _, state_dir = resolve_state_dir(lab_file, state_dir)
    state = load_state(state_dir)
    if state is None:
        return None
    is_root = os.geteuid() == 0
    hosts = [
        HostStatus(
            host=host,
            namespace_exists=netns.namespace_exists(host.namespace),
            sshd_alive=host.sshd_pid is not None and netns.pid_alive(host.sshd_pid),
        )
        for host in state.hosts.values()
    ]
    links = [
        LinkStatus(
            link=link,
            shaped_bits_per_second=[
                shaping.shaped_rate(dev, ns) if is_root else None for ns, dev in link.ends
            ],
        )
        for link in state.links.values()
    ]
    return LabStatus(state, hosts, links, build.problems(state))


def _running(state_dir: Path) -> LabState:
    """The state of the lab up in ``state_dir`` (root only); LabError when none is."""
    require_root()
    state = load_state(state_dir.resolve())
    if state is None:
        raise LabError(f"no lab is up with state in {state_dir}")
    return state


def _named(found: Mapping[str, T], what: str, name: str) -> T:
    """The lab's ``what`` (link, host) called ``name``; InputError naming those there are."""
    if name not in found:
        raise InputError(f"unknown {what} {name!r} ({what}s: {', '.join(found)})")
    return found[name]


def reshape(state_dir: Path, link_name: str, rate: str | int) -> LinkState:
    """Shape every end of ``link_name`` (``lan`` or a link's name) to ``rate``; return the link."""
    state = _running(state_dir)
    link = _named(state.links, "link", link_name)
    try:
        bits_per_second = parse_rate(rate)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if bits_per_second < 1000:
        raise InputError(f"rate {rate!r} is below 1 kbit/s")
    for namespace, device in link.ends:
        shaping.shape(device, bits_per_second, namespace)
    link.rate = normalize_rate(rate)
    state.save()
    build.write_files(state)
    return link


def set_memory(state_dir: Path, host_name: str, size: str) -> str:
    """Give the running lab's ``host_name`` a memory limit of ``size`` (its cgroup's, which the
    lab file's ``memory:`` made); the limit as said back."""
    state = _running(state_dir)
    host = _named(state.hosts, "host", host_name)
    if host.cgroup is None:
        raise InputError(
            f"host {host_name} has no memory limit: give it one in the lab file (memory: 1GiB) "
            "and bring the lab up again, then change it here"
        )
    try:
        limit = parse_size(size)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    cgroups.set_limit(Path(host.cgroup), limit)
    return format_size(limit)
