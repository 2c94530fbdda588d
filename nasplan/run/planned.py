"""What a plan asks of a run, read from the plan alone: its hosts, its tests bound to their
kinds, the tools each host needs, the password variables it reads; and a run's outcome."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure import kinds
from nasplan.measure.kind import BoundTest
from nasplan.remote.runner import Runner
from nasplan.remote.ssh import connect

EXIT_OK, EXIT_TEST_FAILED, EXIT_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3


@dataclass(frozen=True)
class Outcome:
    """What apply did: the run directory (None for --check), the exit code, and the seconds
    each phase of the run took (``open_hosts``, ``prepare``, ..., ``finish``)."""

    run_dir: Path | None
    exit_code: int
    spans: Mapping[str, float] = field(default_factory=dict)


def plan_hosts(plan: Plan) -> dict[str, Host]:
    """The inventory hosts a plan uses, with the plan's known_hosts applied when it names one."""
    # (a matrix cell's own network settings may change a host no test runs on)
    names = {*plan.host_names, *(h for t in plan.tests if t.network for h in t.network.hosts)}
    hosts = {name: plan.inventory.hosts[name] for name in sorted(names)}
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


def unset_variables(
    plan: Plan, environ: Mapping[str, str], *, sudo_asked: bool = False
) -> list[str]:
    """The password variables the run would read that are not set: a host's sudo password
    (``become_password_env``; not when ``sudo_asked``, -K), a transfer's SMB password
    (``password_env``), an iSCSI test's CHAP secret (``chap_secret_env``)."""
    problems = [
        f"{name}: the sudo password comes from ${host.become_password_env}, which is not set "
        "(export it, or pass -K to apply)"
        for name, host in sorted(plan_hosts(plan).items())
        if host.become_password_env and host.become_password_env not in environ and not sudo_asked
    ]
    for test in plan.tests:
        for key, what in (("password_env", "SMB password"), ("chap_secret_env", "CHAP secret")):
            variable = test.settings.get(key)
            if variable and variable not in environ:
                problems.append(
                    f"test {test.id}: the {what} comes from ${variable}, which is not set: "
                    "the test would fail"
                )
    return problems


def connect_with_passwords(passwords: Mapping[str, str]) -> Callable[[Host], Runner]:
    """``ssh.connect`` handing each host its sudo password (None when it has none)."""

    def one(host: Host) -> Runner:
        return connect(host, become_password=passwords.get(host.name))

    return one


def local_boot_id() -> str | None:
    """This machine's kernel boot id (Linux), to tell hosts that share its kernel; else None."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None
