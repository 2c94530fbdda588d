"""``Run`` phase by phase, without root: FakeRunners for the hosts, ``Overlap.serial()``.

The plan: a NAS and a workstation, one latency test from the workstation to the NAS (ping and
the path-MTU probe answered with real captured iputils output). Each host answers its facts
round trip with a real capture, its lock, its resource sampler and, at the end, its release.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import HostLostError, NasplanError
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan, load_plan
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Result
from nasplan.run.apply import Run, apply
from nasplan.run.clock import RunClock
from nasplan.run.overlap import Overlap
from nasplan.run.planned import EXIT_OK, EXIT_UNREACHABLE
from nasplan.run.request import RunRequest
from nasplan.run.signals import Stopped

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FACTS = (FIXTURES / "facts" / "debian12-netns-veth.txt").read_text(encoding="utf-8")
PING_OK = (FIXTURES / "ping" / "iputils-ok.txt").read_text(encoding="utf-8")
SAMPLES = (FIXTURES / "sampler" / "idle-dash.txt").read_text(encoding="utf-8")
TESTS = "  - {id: rtt, kind: latency, server: nas, client: ws, count: 5, repetitions: 2}\n"


def _plan(tmp_path: Path, tests: str = TESTS, network: str = "") -> Plan:
    (tmp_path / "inventory.yaml").write_text(
        "hosts:\n"
        "  nas: {address: 198.18.251.1, interfaces: {p2p: {name: eth1}}}\n"
        "  ws: {address: 198.18.251.2, interfaces: {p2p: {name: eth1}}}\n"
    )
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(f"name: unit\ninventory: inventory.yaml\n{network}tests:\n{tests}")
    return load_plan(plan_file)


def _answer(stdout: str) -> Callable[[str], Result | None]:
    """A standing reply that leaves the facts and lock scripts (which name the sampler and the
    lock's other sections too) to the queue."""

    def reply(command: str) -> Result | None:
        lock_or_facts = "nasplan_section hostname" in command or "locked@@" in command
        return None if lock_or_facts else Result(command, stdout, "", 0)

    return reply


def _host(runner: Any) -> Any:
    """``runner`` answering what every run asks of a host: facts (its lock taken on its own),
    the resource sampler's start and stop, and the lock's release."""
    runner.expect("nasplan_section hostname", FACTS)
    runner.expect("locked@@", "\n@@nasplan:locked@@\n/tmp/nasplan-x.lock\n")
    _standing(runner)
    return runner


def _standing(runner: Any) -> None:
    runner.allow("nasplan-sampler", reply=_answer("4242\n"))
    runner.allow('rm -f "$flag"', reply=_answer(SAMPLES))
    runner.allow("@@nasplan:removed@@", reply=_answer("@@nasplan:removed@@\n"))
    runner.allow("@@nasplan:route:", reply=_answer(""))  # the paths phase: no route known


def _df(command: str) -> Result:
    """A DF ping over a path whose MTU is 9000, as the facts say (real iputils outputs)."""
    argv = command.split()
    passes = int(argv[argv.index("-s") + 1]) + 28 <= 9000
    name = "iputils-df-1472-ok.txt" if passes else "iputils-df-8972-peer-drops.txt"
    return Result(command, (FIXTURES / "ping" / name).read_text(encoding="utf-8"), "", 0)


@pytest.fixture()
def hosts(fake_runner: Callable[[str], Any]) -> dict[str, Any]:
    nas, ws = _host(fake_runner("nas")), _host(fake_runner("ws"))
    ws.allow("-M do", reply=_df)
    return {"nas": nas, "ws": ws}


def _run(tmp_path: Path, plan: Plan, hosts: dict[str, Any]) -> Run:
    def connector(host: Host) -> Any:
        return hosts[host.name]

    progress = PlainProgress(io.StringIO())
    return Run(RunRequest(plan, out=tmp_path / "run"), progress, connector, Overlap.serial())


def _saved(run: Run) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run.run_dir / "run.json").read_text())
    return loaded


def test_each_phase_leaves_run_json_saying_what_it_did(
    tmp_path: Path, hosts: dict[str, Any]
) -> None:
    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    run = _run(tmp_path, _plan(tmp_path), hosts)
    run.record.checkpoint()
    assert _saved(run)["status"] == "interrupted" and _saved(run)["hosts"] == {}

    run.open_hosts()
    assert sorted(run.sessions) == ["nas", "ws"]
    assert all(s.locked and s.facts is not None for s in run.sessions.values())

    run.prepare()
    saved = _saved(run)
    assert saved["hosts"]["nas"]["reachable"] and saved["hosts"]["nas"]["facts"]["hostname"]

    run.network()  # no network changes declared: nothing to do, nothing saved
    assert "network" not in _saved(run)

    run.tests()
    record = _saved(run)["tests"][0]
    assert (record["id"], record["status"], len(record["repetitions"])) == ("rtt", "ok", 2)

    outcome = run.conclude()
    assert outcome.exit_code == EXIT_OK
    run.finish()
    saved = _saved(run)
    assert (saved["status"], saved["finished_at"] is not None) == ("ok", True)
    assert (run.run_dir / "report.md").is_file()
    for runner in hosts.values():  # released: the lock's release script ran on each host
        assert runner.texts("@@nasplan:removed@@")


def test_a_host_lost_during_a_test_fails_it_and_the_run_keeps_going(
    tmp_path: Path, hosts: dict[str, Any]
) -> None:
    def lost(command: str) -> Result:
        raise HostLostError("ws", "ws: the connection stopped answering")

    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", reply=lost)
    tests = TESTS + TESTS.replace("id: rtt,", "id: rtt-again,")

    outcome = apply(
        RunRequest(_plan(tmp_path, tests), out=tmp_path / "run"),
        PlainProgress(io.StringIO()),
        connector=lambda host: hosts[host.name],
        tasks=Overlap.serial(),
    )

    run = json.loads((tmp_path / "run" / "run.json").read_text())
    first, second = run["tests"]
    assert first["status"] == "failed" and "stopped answering" in first["error"]
    assert [r["status"] for r in first["repetitions"]] == ["ok"]  # the finished one is kept
    assert second["status"] == "failed" and "stopped answering" in second["error"]
    assert run["hosts"]["ws"]["lost"] is True
    assert (outcome.exit_code, run["status"]) == (EXIT_UNREACHABLE, "unreachable")


def test_a_failed_network_phase_skips_every_test_and_still_releases_the_hosts(
    tmp_path: Path, fake_runner: Callable[[str], Any]
) -> None:
    network = (
        "links:\n  - {name: p2p, a: {host: nas, interface: p2p}, b: {host: ws, interface: p2p},"
        " prefix: 198.18.4.0/30, mtu: 9000}\n"
    )
    ws = _host(fake_runner("ws"))

    def unreachable(host: Host) -> Any:
        if host.name == "nas":
            raise NasplanError("nas: connection refused")
        return ws

    outcome = apply(
        RunRequest(_plan(tmp_path, network=network), out=tmp_path / "run"),
        PlainProgress(io.StringIO()),
        connector=unreachable,
        tasks=Overlap.serial(),
    )

    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [t["status"] for t in run["tests"]] == ["skipped"]
    assert "network setup failed" in run["tests"][0]["error"]
    assert "nas not ready" in run["network"]["error"]
    assert ws.texts("@@nasplan:removed@@")  # the reachable host's lock released
    assert outcome.exit_code == EXIT_UNREACHABLE


def test_an_interrupted_run_keeps_what_it_measured_and_writes_its_report(
    tmp_path: Path, hosts: dict[str, Any]
) -> None:
    def ctrl_c(command: str) -> Result:
        raise KeyboardInterrupt

    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    hosts["ws"].expect("ping -n -c 5", reply=ctrl_c)
    tests = TESTS + TESTS.replace("id: rtt,", "id: rtt-again,")

    with pytest.raises(KeyboardInterrupt):
        apply(
            RunRequest(_plan(tmp_path, tests, "order: sequential\n"), out=tmp_path / "run"),
            PlainProgress(io.StringIO()),
            connector=lambda host: hosts[host.name],
            tasks=Overlap.serial(),
        )

    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "interrupted" and run["finished_at"] is not None
    # the finished test is kept; the one in flight is interrupted (not failed, not left out)
    assert [(t["id"], t["status"], len(t["repetitions"])) for t in run["tests"]] == [
        ("rtt", "ok", 2),
        ("rtt-again", "interrupted", 0),
    ]
    assert run["tests"][1]["error"] == "interrupted: the run was stopped after 0 of 2 repetitions"
    report = (tmp_path / "run" / "report.md").read_text()
    assert "2 tests (1 ok, 1 interrupted)" in report
    for runner in hosts.values():
        assert runner.texts("@@nasplan:removed@@")


def _routes(name: str, swaps: dict[str, str]) -> str:
    """A route script's real captured output (tests/fixtures/path), its addresses swapped."""
    text = (FIXTURES / "path" / name).read_text(encoding="utf-8")
    for old, new in swaps.items():
        text = text.replace(old, new)
    return text


# the captured client -> router -> server namespaces, readdressed as this plan's hosts
SWAPS = {"198.19.250.6": "198.18.251.1", "198.19.250.1": "198.18.251.2"}


def test_routes_the_facts_did_not_bring_are_asked_once_per_host_after_the_network_phase(
    tmp_path: Path, hosts: dict[str, Any]
) -> None:
    """The FakeRunners answer the facts alone (the lock on its own): the paths phase asks each
    host once; the client's answer (a real capture through a router) becomes the test's
    ``path.route``, run.json's ``diagnosis`` and a warning."""
    routed = _routes("script-client-routed-and-direct.txt", SWAPS)

    def client_routes(text: str) -> Result | None:
        return None if "nasplan_section hostname" in text else Result(text, routed, "", 0)

    hosts["ws"].standing.insert(0, ("@@nasplan:route:", client_routes))
    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    run = _run(tmp_path, _plan(tmp_path), hosts)
    run.open_hosts()
    run.prepare()
    run.network()
    run.paths()
    asked = {
        name: [t for t in hosts[name].texts("@@nasplan:route:") if "nasplan_section" not in t]
        for name in ("nas", "ws")
    }
    assert [len(asked["nas"]), len(asked["ws"])] == [1, 1]
    assert "-o route get 198.18.251.1" in asked["ws"][0]
    run.tests()
    run.conclude()
    run.finish()
    saved = _saved(run)
    to = saved["tests"][0]["path"]["route"]["to"]
    assert (to["gateway"], to["hops"], to["interface"]) == ("198.19.250.2", 1, "dgcapc0")
    assert saved["tests"][0]["path"]["client_interface"] == "dgcapc0"
    assert [f["cause"] for f in saved["diagnosis"] if f["cause"] == "routed-path"] == [
        "routed-path"
    ]
    assert any(w.startswith("rtt: ws dgcapc0 reaches 198.18.251.1") for w in saved["warnings"])
    assert "**routed-path** (rtt)" in (run.run_dir / "report.md").read_text()


def test_routes_the_inventory_names_ride_in_the_facts_round_trip(
    tmp_path: Path, fake_runner: Callable[[str], Any]
) -> None:
    """Both hosts' addresses are in the inventory: the facts' round trip asks the routes (the
    client's to the NAS, the NAS's back); the paths phase asks only the routed path's trace,
    which the facts' round trip leaves out (a slow trace must not hold the facts)."""
    locked = "\n@@nasplan:locked@@\n/tmp/nasplan-x.lock\n"
    traced = _routes("script-client-routed-and-direct.txt", SWAPS)
    answers = {
        "ws": traced.split("\n@@nasplan:trace:")[0] + "\n",
        "nas": _routes("script-server-replies.txt", SWAPS),
    }
    hosts = {}
    for name, routes in answers.items():
        runner = fake_runner(name)
        also = f"\n@@nasplan:also@@\n{routes}{locked}\n@@nasplan:also-exit@@\n0\n"
        runner.expect("nasplan_section hostname", FACTS + also)
        _standing(runner)
        hosts[name] = runner
    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    hosts["ws"].allow("-M do", reply=_df)
    run = _run(tmp_path, _plan(tmp_path), hosts)
    run.open_hosts()
    facts_call = hosts["ws"].texts("nasplan_section hostname")[0]
    assert '"$nasplan_ip" -o route get 198.18.251.1' in facts_call
    assert '"$nasplan_ip" -o route get 198.18.251.2' in hosts["nas"].texts("nasplan_section")[0]
    assert "tracepath" not in facts_call
    run.prepare()
    run.network()

    def client_trace(text: str) -> Result | None:
        return None if "nasplan_section hostname" in text else Result(text, traced, "", 0)

    hosts["ws"].standing.insert(0, ("@@nasplan:route:", client_trace))
    run.paths()
    # the NAS: nothing of its own; the workstation: one script, for the trace
    assert hosts["nas"].texts("@@nasplan:route:") == hosts["nas"].texts("nasplan_section hostname")
    (trace_call,) = [t for t in hosts["ws"].texts("tracepath -n") if "nasplan_section" not in t]
    assert "-o route get 198.18.251.1" in trace_call
    run.tests()
    run.conclude()
    run.finish()
    route = _saved(run)["tests"][0]["path"]["route"]
    assert (route["to"]["gateway"], route["back"]["gateway"]) == ("198.19.250.2", "198.19.250.5")
    assert route["to"]["trace"] == ["198.19.250.2", "198.18.251.1"]


def test_an_interrupted_interleaved_run_is_resumed_to_the_end_in_its_directory(
    tmp_path: Path, hosts: dict[str, Any], fake_runner: Callable[[str], Any]
) -> None:
    def ctrl_c(command: str) -> Result:
        raise KeyboardInterrupt

    from nasplan.run.resume import previous_run

    # round 1: rtt 1, rtt-again 1; Ctrl-C in rtt's second repetition
    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    hosts["ws"].expect("ping -n -c 5", reply=ctrl_c)

    class Waits(PlainProgress):
        said: list[tuple[str, str]] = []  # noqa: RUF012 - this test's own

        def waiting(self, test_id: str, summary: str) -> None:
            self.said.append((test_id, summary))

    plan = _plan(tmp_path, TESTS + TESTS.replace("id: rtt,", "id: rtt-again,"))
    with pytest.raises(KeyboardInterrupt) as stopped:
        apply(
            RunRequest(plan, out=tmp_path / "run"),
            Waits(io.StringIO()),
            connector=lambda host: hosts[host.name],
            tasks=Overlap.serial(),
        )
    # the console was told which tests wait for their next round, in their kind's unit
    assert [(test_id, summary.split(", last ")[0]) for test_id, summary in Waits.said] == [
        ("rtt", "1 of 2 repetitions done"),
        ("rtt-again", "1 of 2 repetitions done"),
    ]
    assert all(summary.endswith(" ms") for _, summary in Waits.said)
    # where the stopped run is, for the command line's report line and --resume command
    assert isinstance(stopped.value, Stopped) and stopped.value.run_dir == tmp_path / "run"
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["order"] == "interleaved" and isinstance(run["seed"], int)
    assert run["sequence"] == [["rtt", 1], ["rtt-again", 1], ["rtt", 2]]
    assert [len(t["repetitions"]) for t in run["tests"]] == [1, 1]
    # the test in flight and the one waiting for its round: both interrupted, not failed
    assert [(t["status"], t["error"]) for t in run["tests"]] == [
        ("interrupted", "interrupted: the run was stopped after 1 of 2 repetitions")
    ] * 2

    again = {"nas": _host(fake_runner("nas")), "ws": _host(fake_runner("ws"))}
    again["ws"].allow("-M do", reply=_df)
    again["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    outcome = apply(
        RunRequest(plan, previous=previous_run(tmp_path / "run", plan)),
        PlainProgress(io.StringIO()),
        connector=lambda host: again[host.name],
        tasks=Overlap.serial(),
    )

    assert outcome.exit_code == EXIT_OK and outcome.run_dir == tmp_path / "run"
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "ok" and len(run["resumed_at"]) == 1
    assert [(t["id"], t["status"], len(t["repetitions"])) for t in run["tests"]] == [
        ("rtt", "ok", 2),
        ("rtt-again", "ok", 2),
    ]
    assert run["sequence"][3:] == [["rtt", 2], ["rtt-again", 2]]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "rtt-again" in report
    for runner in again.values():
        assert runner.texts("@@nasplan:removed@@")  # its lock released


def test_resume_refuses_another_plan_and_says_when_there_is_nothing_to_do(
    tmp_path: Path, hosts: dict[str, Any]
) -> None:
    from click.testing import CliRunner

    from nasplan.cli import main

    hosts["ws"].expect("ping -n -c 5", PING_OK).expect("ping -n -c 5", PING_OK)
    plan = _plan(tmp_path)
    apply(
        RunRequest(plan, out=tmp_path / "run"),
        PlainProgress(io.StringIO()),
        connector=lambda host: hosts[host.name],
        tasks=Overlap.serial(),
    )
    saved = (tmp_path / "run" / "run.json").read_bytes()
    plan_file, run_dir = str(tmp_path / "plan.yaml"), str(tmp_path / "run")

    said = CliRunner().invoke(main, ["apply", plan_file, "--resume", run_dir])
    assert (said.exit_code, said.output.strip()) == (
        0,
        f"nothing to do: every repetition of every test in {run_dir} ended ok",
    )

    changed = CliRunner().invoke(main, ["apply", plan_file, "--resume", run_dir, "-e", "x=1"])
    assert changed.exit_code == 2
    assert f"{plan_file}: the plan is not the one run ran (plan_sha256 " in changed.output
    assert "Traceback" not in changed.output
    (tmp_path / "inventory.yaml").write_text(
        (tmp_path / "inventory.yaml").read_text().replace("198.18.251.2", "198.18.251.3")
    )
    changed = CliRunner().invoke(main, ["apply", plan_file, "--resume", run_dir])
    assert changed.exit_code == 2 and "the inventory is not the one" in changed.output
    assert "inventory_sha256" in changed.output
    assert (tmp_path / "run" / "run.json").read_bytes() == saved  # nothing touched
    for args, said in (
        ([], "nasplan: apply needs PLAN_FILE (or --resume RUN_DIR)"),
        (
            ["--resume", str(tmp_path)],
            f"nasplan: {tmp_path}: not a run directory (no run.json in it)",
        ),
        (["--resume", run_dir, "--check"], "nasplan: --resume goes without --check"),
    ):
        refused = CliRunner().invoke(main, ["apply", *args])
        assert (refused.exit_code, refused.output.strip()) == (2, said)


@pytest.mark.parametrize("step_s", [-3600.0, 3600.0], ids=["back-an-hour", "on-an-hour"])
def test_a_step_of_the_control_nodes_wall_clock_leaves_the_runs_times_right(
    tmp_path: Path, hosts: dict[str, Any], step_s: float
) -> None:
    """The wall clock steps an hour once the tests ran (each ping's repetition moves the
    monotonic clock 7 s): run.json's finished_at is still after started_at, its duration and
    the report's run time are the 14 s that passed, and the step is said."""
    now = {"mono": 1000.0, "wall": datetime(2026, 12, 5, 7, 0, 0, tzinfo=timezone.utc)}

    def ping(command: str) -> Result:
        now["mono"] += 7.0
        now["wall"] += timedelta(seconds=7)
        return Result(command, PING_OK, "", 0)

    def stepped(command: str) -> Result:
        now["wall"] += timedelta(seconds=step_s)
        return ping(command)

    hosts["ws"].expect("ping -n -c 5", reply=ping).expect("ping -n -c 5", reply=stepped)
    clock = RunClock(wall=lambda: now["wall"], monotonic=lambda: now["mono"])
    progress = PlainProgress(io.StringIO())
    request = RunRequest(_plan(tmp_path), out=tmp_path / "run")
    run = Run(request, progress, lambda h: hosts[h.name], Overlap.serial(), clock=clock)
    run.open_hosts()
    run.prepare()
    run.tests()
    run.conclude()
    run.finish()

    saved = _saved(run)
    assert (saved["started_at"], saved["finished_at"]) == (
        "2026-12-05T07:00:00Z",
        "2026-12-05T07:00:14Z",
    )
    assert saved["duration_s"] == 14.0
    assert saved["clock_steps"] == [{"step_s": step_s, "at": "2026-12-05T07:00:14Z"}]
    said = [w for w in saved["warnings"] if "wall clock stepped" in w]
    assert said == [
        f"the control node's wall clock stepped {step_s:+.1f} s during the run: "
        "its times (the run's, each test's) were counted on its monotonic clock"
    ]
    report = (run.run_dir / "report.md").read_text()
    assert "(the run took 14 s)" in report
    assert "wall clock stepped" in report
    assert saved["tests"][0]["status"] == "ok"


def test_a_run_clock_without_a_step_notes_none() -> None:
    ticks = iter([5.0, 65.5, 65.5])
    wall = iter([datetime(2026, 1, 1, tzinfo=timezone.utc)] * 1
                + [datetime(2026, 1, 1, 0, 1, 1, tzinfo=timezone.utc)])  # fmt: skip
    clock = RunClock(wall=lambda: next(wall), monotonic=lambda: next(ticks))
    ended = clock.ended({"duration_s": 100.0, "clock_steps": []})
    # a resumed run: the earlier sessions' time added; a 0.5 s difference is no step
    assert ended == {"finished_at": "2026-01-01T00:01:00Z", "duration_s": 160.5}
