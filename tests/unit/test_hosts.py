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
from nasplan.hosts.session import HostSession, prepare
from nasplan.input.inventory import Host
from nasplan.input.plan import load_plan
from nasplan.measure import kinds
from nasplan.measure.kind import RunContext
from nasplan.measure.pair import check_ready
from nasplan.platforms.generic import GenericLinux
from nasplan.progress import PlainProgress
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.overlap import Overlap
from nasplan.run.planned import tool_needs

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
        prepare(
            {"nas": session},
            {"nas": ["fio", "iperf3"]},
            PlainProgress(stream),
            tasks=Overlap.serial(),
        )
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
    sessions, progress, tasks = {"nas": session}, PlainProgress(log.open("a")), Overlap.serial()
    ctx = RunContext(
        plan, sessions, progress, tasks, KindHooks(tmp_path, tasks, sessions, progress)
    )
    with pytest.raises(CannotStart) as failed:
        check_ready(plan.tests[0], ctx, kinds.bind(plan.tests[0]).needs)
    assert str(failed.value) == session.tool_errors["fio"]
