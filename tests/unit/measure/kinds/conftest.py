"""A plan of two hosts joined by a 10G, MTU 9000 link, whose sessions talk to FakeRunners."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.facts.gather import NicFacts, parse_facts
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest, load_plan
from nasplan.measure import kinds
from nasplan.measure.kind import RunContext
from nasplan.platforms.generic import GenericLinux
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Result
from nasplan.run.cell import Cell
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.overlap import Overlap

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SAMPLER_PID = "4242"


def fixture_text(relative: str) -> str:
    """A captured tool output under tests/fixtures."""
    return (FIXTURES / relative).read_text(encoding="utf-8")


def sampled(runner: Any) -> Any:
    """``runner`` answering the resource sampler's start and stop scripts (a real capture). A
    sampler riding along in an iperf3 server's start or stop script, or in a client's, is left
    to the test's own expectations (``riding_start``, ``riding_stop``, ``riding_client``)."""

    def start(text: str) -> Result | None:
        rides = "port=" in text or " -J -c " in text
        return None if rides else Result(text, SAMPLER_PID + "\n", "", 0)

    def stop(text: str) -> Result | None:
        samples = fixture_text("sampler/idle-dash.txt")
        rides = "pidfile=" in text or " -J -c " in text
        return None if rides else Result(text, samples, "", 0)

    runner.allow("nasplan-sampler", reply=start).allow('rm -f "$flag"', reply=stop)
    # a transfer's copies recorded (its place's free space checked in the same script): they fit
    runner.allow("echo recorded", "recorded\n")
    # where a transfer wrote, after a failure: df -P -k's line of a roomy file system
    # (space.free_bytes)
    return runner.allow('df -P -k -- "$p"', "/tmp\n/dev/sda1 1000000000 1000 999999000 1% /\n")


def riding_start(stdout: str = "") -> str:
    """What a server start script with the host's sampler riding along prints: its section."""
    return f"@@nasplan:sampler-started@@\n{SAMPLER_PID}\n{stdout}"


def riding_stop(log: str) -> str:
    """What a server stop script with the sampler riding along prints: the server's log, then
    the sampler's section (a real capture of its lines)."""
    return f"{log}\n@@nasplan:sampler@@\n{fixture_text('sampler/idle-dash.txt')}"


def riding_client(output: str) -> Callable[[str], Result]:
    """A reply to an iperf3 client script with the host's sampler riding along, as it prints:
    the client's own ``output``, then the sampler's sections: its PID when the script started
    it, what it saw (a real capture of its lines) when the script stopped it."""

    def reply(text: str) -> Result:
        started = f"\n@@nasplan:sampler-started@@\n{SAMPLER_PID}\n"
        stopped = f"\n@@nasplan:sampler@@\n{fixture_text('sampler/idle-dash.txt')}"
        said = output + (started if "nasplan-sampler" in text else "")
        return Result(text, said + (stopped if 'rm -f "$flag"' in text else ""), "", 0)

    return reply


@pytest.fixture()
def kind_context(
    tmp_path: Path, fake_runner: Callable[[str], Any]
) -> Callable[..., tuple[RunContext, Any, Any]]:
    """``make(tests_yaml, tools=...)`` -> (RunContext, nas FakeRunner, ws FakeRunner).

    The NAS (198.18.251.1) and the workstation (198.18.251.2) share eth1, 10 Gbit/s, MTU 9000:
    the NAS's facts are a real capture of a lab namespace, the workstation's its mirror image.
    Both runners answer the resource sampler (a real capture of its output). ``tasks``: the
    run's background work, ``Overlap.serial()`` unless a test needs threads
    (``Overlap.concurrent()``, as apply runs).
    """

    def make(
        tests_yaml: str,
        tools: dict[str, str] | None = None,
        tasks: Overlap | None = None,
        clients: tuple[str, ...] = (),
    ) -> tuple[RunContext, Any, Any]:
        others = "".join(
            f"  {c}: {{address: 198.18.251.{10 + i}}}\n" for i, c in enumerate(clients)
        )
        (tmp_path / "inventory.yaml").write_text(
            "hosts:\n  nas: {address: 198.18.251.1}\n  ws: {address: 198.18.251.2}\n" + others
        )
        plan_file = tmp_path / "plan.yaml"
        plan_file.write_text(f"name: unit\ninventory: inventory.yaml\ntests:\n{tests_yaml}")
        plan = load_plan(plan_file)
        nas_facts = parse_facts(fixture_text("facts/debian12-netns-veth.txt"))
        ws_nic = NicFacts("eth1", 9000, "up", None, 10000, "full", "veth", ("198.18.251.2/30",))
        ws_facts = dataclasses.replace(nas_facts, hostname="ws", interfaces=(ws_nic,))
        nas, ws = sampled(fake_runner("nas")), sampled(fake_runner("ws"))
        # ``clients``: more workstations like ws (its facts, a runner of their own)
        hosts = [("nas", nas, nas_facts), ("ws", ws, ws_facts)]
        hosts += [(c, sampled(fake_runner(c)), ws_facts) for c in clients]
        sessions = {
            name: HostSession(
                plan.inventory.hosts[name], runner, facts, GenericLinux(), dict(tools or {})
            )
            for name, runner, facts in hosts
        }
        run_dir = tmp_path / "run"
        (run_dir / "raw").mkdir(parents=True)
        progress = PlainProgress(io.StringIO())
        tasks = tasks or Overlap.serial()
        hooks = KindHooks(run_dir, tasks, sessions, progress)
        ctx = RunContext(plan, sessions, progress, tasks, hooks)
        return ctx, nas, ws

    return make


def run_cell(ctx: RunContext, test: PlanTest) -> Cell:
    """``test`` run whole as apply runs it: its record handed to a cell of its own (a deferred
    teardown completes it there once settled: ``cell.record()`` after ``ctx.settle()``)."""
    cell = Cell(kinds.bind(test))
    part = cell.part(1, test.repetitions)
    assert isinstance(ctx.hooks, KindHooks)
    ctx.hooks.cell = cell
    cell.returned(cell.bound.run_part(part, ctx), ended=True)
    return cell
