"""Tools per host: each host gets what its own tests need; a tool its platform cannot provide
fails only the tests that need it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import CannotStart
from nasplan.facts.gather import parse_facts
from nasplan.hosts.session import HostSession, HostsPart, prepare
from nasplan.input.inventory import Host
from nasplan.input.plan import load_plan
from nasplan.measure import kinds
from nasplan.measure.kind import RunContext, check_ready
from nasplan.platforms.generic import GenericLinux
from nasplan.progress import PlainProgress
from nasplan.run.apply import tool_needs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "facts"


def test_tool_needs_are_per_host(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text("hosts: {nas: {}, ws: {}}\n")
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: p\ninventory: inventory.yaml\ntests:\n"
        "  - {kind: iperf3, server: nas, client: ws}\n"
        "  - {kind: disk, host: nas, path: /volume1/test}\n"
    )
    assert tool_needs(load_plan(plan)) == {"nas": ["fio", "iperf3"], "ws": ["iperf3"]}


def test_a_tool_the_platform_cannot_provide_fails_only_its_tests(
    tmp_path: Path, fake_runner: Callable[[str], Any]
) -> None:
    facts = parse_facts((FIXTURES / "debian12-root.txt").read_text())
    assert facts.tool("iperf3")
    facts = dataclasses.replace(facts, tools={**facts.tools, "fio": None})
    session = HostSession(Host("nas", "198.18.0.10"), fake_runner("nas"), facts, GenericLinux())
    log = tmp_path / "progress.log"
    with log.open("w") as stream:
        prepare({"nas": session}, {"nas": ["fio", "iperf3"]}, PlainProgress(stream))
    assert session.ready  # the host itself is fine
    assert session.tools == {"iperf3": facts.tool("iperf3")}
    assert "fio not found" in session.tool_errors["fio"]
    assert "[fio unavailable]" in log.read_text()
    (tmp_path / "inventory.yaml").write_text("hosts: {nas: {}, ws: {}}\n")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(
        "name: p\ninventory: inventory.yaml\ntests:\n"
        "  - {kind: disk, host: nas, path: /volume1/test}\n"
    )
    plan = load_plan(plan_file)
    ctx = RunContext(plan, {"nas": session}, tmp_path, PlainProgress(log.open("a")))
    with pytest.raises(CannotStart) as failed:
        check_ready(plan.tests[0], ctx, kinds.bind(plan.tests[0]).needs)
    assert str(failed.value) == session.tool_errors["fio"]


def test_hosts_part_is_rebuilt_exactly_when_a_host_changes_in_what_run_json_shows(
    fake_runner: Callable[[str], Any],
) -> None:
    facts = parse_facts((FIXTURES / "debian12-root.txt").read_text())
    sessions = {
        name: HostSession(Host(name, f"198.18.0.{i}"), fake_runner(name), facts, GenericLinux())
        for i, name in enumerate(("nas", "ws"), start=10)
    }
    part = HostsPart(sessions)
    first = part.now()
    assert first == {name: s.to_dict() for name, s in sessions.items()}
    assert part.now() is first  # nothing changed: the same dict, its text reused
    sessions["ws"].warnings.append("not in hosts")  # warnings live elsewhere in run.json
    assert part.now() is first
    changes: list[Callable[[HostSession], None]] = [
        lambda s: s.mark_lost("ws: host stopped answering"),
        lambda s: s.actions.append("apt-get install -y iperf3"),
        lambda s: s.tools.update(iperf3="/usr/bin/iperf3"),
        lambda s: setattr(s, "facts", dataclasses.replace(facts, hostname="renamed")),
    ]
    before = first
    for change in changes:
        change(sessions["ws"])
        now = part.now()
        assert now is not before and now["ws"] == sessions["ws"].to_dict()
        assert part.now() is now
        before = now
