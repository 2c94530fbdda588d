"""``kind: iperf3`` run() through the runner seam: what it asks each host, what it records."""

from __future__ import annotations

import io
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import HostLostError
from nasplan.measure import kinds
from nasplan.measure.kind import RunContext
from nasplan.measure.kinds.iperf3.runs import version_warnings
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Launched, Result
from nasplan.run.cell import Cell
from nasplan.run.overlap import Overlap

from .conftest import riding_client, riding_start, riding_stop, run_cell

IPERF3 = Path(__file__).resolve().parents[3] / "fixtures" / "iperf3" / "3.12"
TEST = "  - {id: p2p, kind: iperf3, server: nas, client: ws, duration_s: 2, repetitions: 1}\n"
TOOLS = {"iperf3": "/usr/bin/iperf3"}


def run_settled(ctx: RunContext) -> dict[str, Any]:
    """The plan's first test run as apply runs it: its teardown settled after it (what fills
    its ``resources``)."""
    cell = run_cell(ctx, ctx.plan.tests[0])
    assert cell.record()["resources"] is None  # the teardown is the run's until it settles
    ctx.settle()
    return cell.record()


def test_one_repetition_is_recorded_with_its_path_raw_file_and_resources(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(TEST, TOOLS)
    # the NAS's sampler rides along in the server's start and stop, the workstation's in the
    # client's script
    nas.expect("port=5201", riding_start())
    server_log = (IPERF3 / "tcp-single-server-log.json").read_text()
    nas.expect("kill", riding_stop(server_log))
    client_output = (IPERF3 / "tcp-single.json").read_text()
    ws.expect("/usr/bin/iperf3 -J -c 198.18.251.1 -p 5201 -t 2", reply=riding_client(client_output))

    record = run_settled(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert record["params"]["address"] == "198.18.251.1"
    assert record["params"]["parallel_mode"] == "streams"
    rep = record["repetitions"][0]
    assert rep["bits_per_second"] == pytest.approx(956948139.91649473)
    assert (ctx.hooks.run_dir / rep["raw_file"]).read_text() == client_output
    path = record["path"]
    assert (path["mtu_bytes"], path["speed_bits_per_second"]) == (9000, 10**10)
    assert path["server_interface"] == path["client_interface"] == "eth1"
    assert record["efficiency"] == pytest.approx(956948139.9 / path["theoretical_bits_per_second"])
    assert set(record["resources"]) == {"nas", "ws"}
    assert record["resources"]["nas"]["samples"] > 1
    assert record["resources"]["nas"] == record["resources"]["ws"]  # the same capture
    # no round trip of their own: the client's script is the workstation's only one
    assert nas.texts("nasplan-sampler") == nas.texts("port=5201")
    assert ws.texts("nasplan-sampler") == ws.texts() and len(ws.texts()) == 1
    # iperf3's own seconds, on the test's clock from the repetition's start, as its timeline
    (series,) = record["timeline"]["throughput"]
    assert series["source"] == "iperf3" and series["fall"] is None
    assert series["bits_per_second"] == rep["interval_bits_per_second"]
    assert series["t_s"] == [round(rep["started_s"] + i, 2) for i in (1, 2)]


def test_the_clients_sampler_starts_before_it_in_its_script_and_stops_after_it(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(TEST, TOOLS)
    log = (IPERF3 / "tcp-single-server-log.json").read_text()
    nas.expect("port=5201", riding_start()).expect("kill", riding_stop(log))
    client_output = (IPERF3 / "tcp-single.json").read_text()
    ws.expect("-c 198.18.251.1", reply=riding_client(client_output))

    record = run_settled(ctx)

    assert record["status"] == "ok", record["error"]
    (script,) = ws.texts()
    at = script.index
    # the sampler sees the whole measurement: it runs before the client starts and is stopped
    # once the client ended (and only then: a client that failed leaves it to its teardown)
    assert at("nasplan-sampler") < at('"$@" &') < at('wait "$client"') < at('rm -f "$flag"')
    assert at('if [ "$status" -eq 0 ]') < at('rm -f "$flag"')
    assert record["resources"]["ws"]["samples"] > 1
    assert record["resources"]["nas"]["samples"] > 1


def test_a_client_that_failed_leaves_its_sampler_to_the_teardown(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(TEST, TOOLS)
    nas.expect("port=5201", riding_start()).expect("kill")
    refused = (IPERF3 / "error-connection-refused.json").read_text()
    said = f"{refused}\n@@nasplan:sampler-started@@\n4243\n"  # no stop: the client failed
    ws.expect("-c 198.18.251.1", said, exited=1)

    record = run_settled(ctx)

    assert record["status"] == "failed" and "Connection refused" in record["error"]
    (stop,) = ws.texts("pid=4243")  # its own round trip, for the PID the client's script said
    assert "-J -c" not in stop
    assert record["resources"]["ws"]["samples"] > 1


def test_a_host_that_is_not_ready_fails_the_test_before_any_command(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(TEST, TOOLS)
    ctx.sessions["nas"].error = "nas: sudo: wrong password"

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("failed", "nas: sudo: wrong password")
    assert record["repetitions"] == [] and record["path"] is None


def test_a_missing_iperf3_fails_the_test_with_the_platforms_reason(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(TEST, {})
    ctx.sessions["ws"].tool_errors["iperf3"] = "ws: iperf3 not found; install it by hand"

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["error"] == "ws: iperf3 not found; install it by hand"


def test_a_refused_connection_is_recorded_and_the_server_stopped(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(TEST, TOOLS)
    nas.expect("-s -1 -p", riding_start()).expect("kill")
    refused = (IPERF3 / "error-connection-refused.json").read_text()
    ws.expect("-c 198.18.251.1", reply=riding_client(refused))

    record = run_settled(ctx)

    assert record["status"] == "failed"
    assert "Connection refused" in record["error"]
    assert record["repetitions"][0]["raw_file"] == "raw/p2p/rep-1.json"
    # the server's stop (after a failure) had no sampler in it: the NAS's sampler, started in
    # the server's start, is stopped in a round trip of its own, and what it saw is kept
    (server_stop,) = nas.texts("grace=")
    assert "nasplan:sampler" not in server_stop
    assert len(nas.texts('rm -f "$flag"')) == 1 and record["resources"]["nas"]["samples"] > 1


def test_iperf3_version_warnings() -> None:
    assert version_warnings("nas", "3.16", "ws", "3.16", 4) == []
    [differ] = version_warnings("nas", "3.12", "ws", "3.17.1", 1)
    assert differ.startswith("iperf3 versions differ: nas has 3.12, ws has 3.17.1")
    assert version_warnings("nas", "3.12", "ws", "3.12", 1) == []
    threads = version_warnings("nas", "3.9", "ws", "3.9", 2)
    assert [w.split(" on ")[1].split()[0] for w in threads] == ["nas", "ws"]
    assert all("one thread" in w for w in threads)
    [spread] = version_warnings("nas", "3.12", "ws", "3.12", 2, processes=True)
    assert "3.12 on nas and 3.12 on ws is single-threaded" in spread
    assert "2 separate iperf3 processes" in spread


def test_a_checkpoint_is_saved_after_each_repetition_but_the_last(
    kind_context: Callable[..., Any],
) -> None:
    # apply saves the finished record right after the test: saving it after the last repetition
    # too would write run.json twice between two measurements
    ctx, nas, ws = kind_context(TEST.replace("repetitions: 1", "repetitions: 3"), TOOLS)
    for _ in range(3):
        nas.expect("port=5201")
        nas.expect("kill", (IPERF3 / "tcp-single-server-log.json").read_text())
        ws.expect("/usr/bin/iperf3 -J -c", reply=riding_client(CLIENT_OUTPUT))
    saved: list[int] = []
    ctx.hooks.on_checkpoint = lambda: saved.append(len(cell.parts[-1].record["repetitions"]))
    cell = Cell(kinds.bind(ctx.plan.tests[0]))
    ctx.hooks.cell = cell

    record = cell.bound.run_part(cell.part(1, 3), ctx)

    assert record["status"] == "ok"
    assert saved == [1, 2]
    # the last repetition is kept as well (what a host lost right then keeps), unsaved
    assert len(cell.parts[-1].record["repetitions"]) == 3 and not cell.parts[-1].ended


CLIENT_OUTPUT = (IPERF3 / "tcp-single.json").read_text()
TWO_TESTS = TEST + TEST.replace("id: p2p,", "id: p2p-again,")
SERVER_LOG = (IPERF3 / "tcp-single-server-log.json").read_text()


def _two_tests_on_one_pair(
    kind_context: Callable[..., Any], events: list[str], first_stop: Callable[[str], Result]
) -> tuple[Any, Any, Any]:
    """Two one-repetition tests between the same hosts (servers on ports 5201 and 5202), run as
    apply runs them; the first server's stop is answered by ``first_stop``. ``events`` gets a
    line as each server start and client comes."""
    ctx, nas, ws = kind_context(TWO_TESTS, TOOLS, tasks=Overlap.concurrent())
    client_output = (IPERF3 / "tcp-single.json").read_text()

    def noted(what: str, stdout: str) -> Callable[[str], Result]:
        def reply(text: str) -> Result:
            events.append(what)
            if "-J -c" in text:  # a client's script, the workstation's sampler in it
                return riding_client(stdout)(text)
            return Result(text, stdout, "", 0)

        return reply

    def stop(text: str) -> Result | None:
        if "grace=" not in text:
            return None  # the sampler's own stop
        if "-5201.pid" in text:
            return first_stop(text)
        return Result(text, riding_stop(SERVER_LOG), "", 0)

    nas.standing[:0] = [
        ("port=5201", noted("start 1", riding_start())),
        ("port=5202", noted("start 2", riding_start())),
        ("grace=", stop),
    ]
    ws.standing[:0] = [
        ("-p 5201", noted("client 1", client_output)),
        ("-p 5202", noted("client 2", client_output)),
    ]
    return ctx, nas, ws


def test_a_tests_teardown_runs_while_the_next_test_starts_and_ends_before_it_measures(
    kind_context: Callable[..., Any],
) -> None:
    events: list[str] = []

    def first_stop(text: str) -> Result:
        events.append("stop 1 begins")
        deadline = time.monotonic() + 2
        while "start 2" not in events and time.monotonic() < deadline:
            time.sleep(0.01)  # the next test's server start comes meanwhile
        time.sleep(0.2)  # a slow stop: the next client must still wait for it
        events.append("stop 1 ends")
        return Result(text, riding_stop(SERVER_LOG), "", 0)

    ctx, _, _ = _two_tests_on_one_pair(kind_context, events, first_stop)

    cells = [run_cell(ctx, ctx.plan.tests[0]), run_cell(ctx, ctx.plan.tests[1])]
    ctx.settle()
    first, second = (cell.record() for cell in cells)

    assert first["status"] == second["status"] == "ok"
    # the first test's server stop overlapped the second's start, and was over before the
    # second client measured
    assert events == [
        "start 1", "client 1", "stop 1 begins", "start 2", "stop 1 ends", "client 2"
    ]  # fmt: skip
    # what the first test's samplers saw is in its record once it settled
    assert first["resources"]["nas"]["samples"] > 1
    assert second["resources"]["nas"]["samples"] > 1


def test_a_host_lost_in_a_tests_teardown_fails_that_test_and_says_so(
    kind_context: Callable[..., Any],
) -> None:
    def first_stop(text: str) -> Result:
        raise HostLostError("nas", "nas: SSH connection lost: connection reset by peer")

    events: list[str] = []
    ctx, _, _ = _two_tests_on_one_pair(kind_context, events, first_stop)
    ctx.progress = ctx.hooks.progress = PlainProgress(shown := io.StringIO())

    cell = run_cell(ctx, ctx.plan.tests[0])
    assert cell.record()["status"] == "ok"  # measured: what comes after is not known yet
    ctx.settle()

    first = cell.record()
    assert first["status"] == "failed"
    assert first["error"] == "nas: SSH connection lost: connection reset by peer"
    assert first["summary"]["n"] == 1  # the measurement is kept
    assert ctx.sessions["nas"].lost
    assert "test p2p: failed after its measurement: nas: SSH connection lost" in shown.getvalue()
    # the next test on the lost host does not start
    second = kinds.bind(ctx.plan.tests[1]).run(ctx)
    assert second["status"] == "failed" and "start 2" not in events


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        ("", "iperf3 TCP ws -> nas, 1 x 2 s"),
        (", reverse: true", "iperf3 TCP nas -> ws (-R), 1 x 2 s"),
        (", bidir: true, parallel: 2", "iperf3 TCP ws <-> nas (--bidir), 2 streams, 1 x 2 s"),
        (", protocol: udp, bitrate: 2.5G", "iperf3 UDP ws -> nas at 2.50 Gbit/s, 1 x 2 s"),
    ],
)
def test_the_check_line_says_protocol_bitrate_and_which_way_the_data_flows(
    kind_context: Callable[..., Any], extra: str, line: str
) -> None:
    ctx, _, _ = kind_context(TEST.replace(", repetitions: 1}", f", repetitions: 1{extra}}}"), TOOLS)
    assert kinds.bind(ctx.plan.tests[0]).description == line


class Stop:
    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Looks(Overlap):
    """The serial run's tasks, but repeating work kept for the test to run when it says."""

    def __init__(self) -> None:
        super().__init__(False)
        self.work: list[Callable[[], bool]] = []
        self.handles: list[Stop] = []

    def every(self, interval_s: float, work: Any, name: str, *, first_s: float) -> Any:
        self.work.append(work)
        self.handles.append(Stop())
        return self.handles[-1]


class Rates(PlainProgress):
    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.rates: list[tuple[str, float, float, str]] = []

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        self.rates.append((test_id, bits_per_second, at_s, what))


def test_a_launched_servers_seconds_reach_the_progress_while_the_client_runs(
    kind_context: Callable[..., Any],
) -> None:
    tasks = Looks()
    ctx, nas, ws = kind_context(TEST.replace("duration_s: 2", "duration_s: 3"), TOOLS, tasks)
    progress = Rates()
    ctx.progress = progress
    said = (Path(IPERF3) / "server-text" / "tcp-single.txt").read_text()
    pieces = [said[: len(said) // 2], said[len(said) // 2 :]]
    ready = "Server listening on 5201\n" + riding_start() + "\n@@nasplan:iperf3-server@@\n"
    scripts: list[str] = []

    def start_until(script: str, markers: Any, *, timeout_s: float) -> Launched:
        scripts.append(script)
        return Launched(ready, None, read=lambda: pieces.pop(0) if pieces else None)

    nas.start_until = start_until
    nas.expect("kill", riding_stop(""))
    client_output = (IPERF3 / "tcp-single.json").read_text()

    def client(text: str) -> Result:
        (look,) = tasks.work  # the server's output is read while the client runs
        assert look() and look() and not look()
        return riding_client(client_output)(text)

    ws.expect("/usr/bin/iperf3 -J -c 198.18.251.1 -p 5201 -t 3", reply=client)

    record = run_settled(ctx)

    assert record["status"] == "ok" and "-i 1 --forceflush" in scripts[0]
    assert [(t, at_s, what) for t, _, at_s, what in progress.rates] == [
        ("p2p", 1.0, ""), ("p2p", 2.0, ""), ("p2p", 3.0, "")
    ]  # fmt: skip
    assert [h.stopped for h in tasks.handles] == [True]  # no look once the client's result is in
    assert record["resources"]["nas"]["samples"] > 1  # the riding sampler read as before


def test_two_clients_at_once_each_against_a_server_of_its_own(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        "  - {id: office, kind: iperf3, server: nas, clients: [ws, ws2], duration_s: 2,\n"
        "     repetitions: 1, bidir: true, port: 5301}\n",
        TOOLS,
        clients=("ws2",),
    )
    ws2 = ctx.sessions["ws2"].runner
    # one script starts a one-off server a client (ports 1000 apart), one stops them
    nas.expect("port=5301", "")
    nas.expect("kill")
    bidir = (IPERF3 / "tcp-bidir.json").read_text()
    ws.expect("/usr/bin/iperf3 -J -c 198.18.251.1 -p 5301 -t 2", bidir)
    ws2.expect("/usr/bin/iperf3 -J -c 198.18.251.1 -p 6301 -t 2", bidir)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    start = nas.texts("port=5301")[0]
    assert "port=6301" in start
    (rep,) = record["repetitions"]
    one = rep["clients"]["ws"]
    assert rep["bits_per_second"] == pytest.approx(2 * one["bits_per_second"])
    assert rep["reverse_bits_per_second"] == pytest.approx(2 * one["reverse_bits_per_second"])
    assert rep["fairness"] == pytest.approx(1.0)
    assert (ctx.hooks.run_dir / one["raw_file"]).read_text() == bidir
    # the NAS's own end is the path of the whole; each client's own path beside it
    assert set(record["paths"]) == {"ws", "ws2"}
    assert record["together"]["reverse"]["clients"]["ws2"] == one["reverse_bits_per_second"]
    readout = kinds.readout(record)
    forward, reverse = readout.series(record)
    assert readout.measured(record, reverse) == (
        "iperf3 TCP, 1 stream, --bidir reverse, 2 clients at once"
    )
    assert "Jain 1.00 (fair)" in readout.also(record, forward)
    assert readout.flow(record, "reverse").endswith("→ ws + ws2")
    # every command of the repetition is kept once on it: each server first, then each client
    servers = [c for c in rep["commands"] if c.get("server")]
    assert [(c["host"], c["argv"][c["argv"].index("-p") + 1]) for c in servers] == [
        ("nas", "5301"),
        ("nas", "6301"),
    ]
    for c in servers:  # the start script's servers, with its files
        assert f"pidfile={c['argv'][c['argv'].index('--pidfile') + 1]}" in start
    clients = [(c["host"], shlex.join(c["argv"])) for c in rep["commands"] if not c.get("server")]
    for (name, kept), ran in zip(clients, (ws, ws2), strict=True):  # what each client ran
        assert f"set -- {kept}\n" in ran.texts("iperf3 -J")[0], name
    assert [name for name, _ in clients] == ["ws", "ws2"]
    assert "commands" not in one


def test_a_next_test_on_other_hosts_measures_while_the_last_ones_teardown_still_runs(
    kind_context: Callable[..., Any],
) -> None:
    # the second test's hosts are not the first's: the first's server stop (on nas) goes on
    # across the second's measurement; nothing of it runs on a host that measures
    second_pair = "  - {id: other, kind: iperf3, server: ws2, client: ws3, duration_s: 2, " \
        "repetitions: 1, port: 5202}\n"  # fmt: skip
    ctx, nas, ws = kind_context(TEST + second_pair, TOOLS, Overlap.concurrent(), ("ws2", "ws3"))
    ws2, ws3 = ctx.sessions["ws2"].runner, ctx.sessions["ws3"].runner
    client_output = (IPERF3 / "tcp-single.json").read_text()
    events: list[str] = []

    def noted(what: str, reply: Callable[[str], Result]) -> Callable[[str], Result]:
        def answer(text: str) -> Result:
            events.append(what)
            return reply(text)

        return answer

    def first_stop(text: str) -> Result | None:
        if "grace=" not in text:
            return None  # the sampler's own stop
        events.append("stop 1 begins")
        deadline = time.monotonic() + 2
        while "client 2" not in events and time.monotonic() < deadline:
            time.sleep(0.01)  # the next test measures meanwhile
        events.append("stop 1 ends")
        return Result(text, riding_stop(SERVER_LOG), "", 0)

    def started(text: str) -> Result:
        return Result(text, riding_start(), "", 0)

    def stopped(text: str) -> Result:
        return Result(text, riding_stop(SERVER_LOG), "", 0)

    nas.standing[:0] = [("port=5201", noted("start 1", started)), ("grace=", first_stop)]
    ws.standing[:0] = [("-p 5201", noted("client 1", riding_client(client_output)))]
    ws2.standing[:0] = [("port=5202", noted("start 2", started)), ("grace=", stopped)]
    ws3.standing[:0] = [("-p 5202", noted("client 2", riding_client(client_output)))]

    cells = [run_cell(ctx, ctx.plan.tests[0]), run_cell(ctx, ctx.plan.tests[1])]
    ctx.settle()
    first, second = (cell.record() for cell in cells)

    assert first["status"] == second["status"] == "ok"
    assert events == [
        "start 1", "client 1", "stop 1 begins", "start 2", "client 2", "stop 1 ends"
    ]  # fmt: skip
    # one server start and one stop a test, each on its own server's host
    assert len(nas.texts("grace=")) == len(ws2.texts("grace=")) == 1
    assert not ws.texts("grace=") and not ws3.texts("port=")
    # the first test's record is completed once settled, after the second measured
    assert first["resources"]["nas"]["samples"] > 1


NEXT_ON_OTHER_HOSTS = TEST.replace("duration_s: 2", "duration_s: 1") + (
    "  - {id: other, kind: iperf3, server: ws2, client: ws3, duration_s: 1, repetitions: 1,\n"
    "     port: 5202}\n"
)


def _launching(runner: Any, events: list[str], port: int) -> list[str]:
    """``runner`` launching its iperf3 server on a channel of its own (iperf3 >= 3.7), noted in
    ``events``; the scripts it was given."""
    scripts: list[str] = []
    ready = f"Server listening on {port}\n" + riding_start() + "\n@@nasplan:iperf3-server@@\n"

    def start_until(script: str, markers: Any, *, timeout_s: float) -> Launched:
        events.append(f"start {runner.name}")
        scripts.append(script)
        return Launched(ready, None)

    runner.start_until = start_until
    runner.standing[:0] = [("grace=", lambda text: Result(text, riding_stop(SERVER_LOG), "", 0))]
    return scripts


def test_the_next_tests_server_starts_on_its_own_host_while_the_last_client_measures(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(NEXT_ON_OTHER_HOSTS, TOOLS, Overlap.concurrent(), ("ws2", "ws3"))
    ws2, ws3 = ctx.sessions["ws2"].runner, ctx.sessions["ws3"].runner
    ctx.hooks.ahead.upcoming = lambda: ctx.plan.tests[1]  # the run's word: it comes next
    events: list[str] = []
    _launching(nas, events, 5201)
    scripts = _launching(ws2, events, 5202)
    client_output = (IPERF3 / "tcp-single.json").read_text()

    def first_client(text: str) -> Result:
        events.append("client 1 begins")
        deadline = time.monotonic() + 3
        while "start ws2" not in events and time.monotonic() < deadline:
            time.sleep(0.01)  # measuring: the next server starts meanwhile, on ws2
        events.append("client 1 ends")
        return riding_client(client_output)(text)

    def second_client(text: str) -> Result:
        events.append("client 2")
        return riding_client(client_output)(text)

    ws.standing[:0] = [("-p 5201", first_client)]
    ws3.standing[:0] = [("-p 5202", second_client)]

    cells = [run_cell(ctx, ctx.plan.tests[0]), run_cell(ctx, ctx.plan.tests[1])]
    ctx.settle()
    first, second = (cell.record() for cell in cells)

    assert first["status"] == second["status"] == "ok"
    assert events == [
        "start nas", "client 1 begins", "start ws2", "client 1 ends", "client 2"
    ]  # fmt: skip
    # one server start on ws2 (the one made ahead, its sampler riding in it), one stop
    assert len(scripts) == 1 and "nasplan-sampler" in scripts[0]
    assert len(ws2.texts("grace=")) == 1 and not ws3.texts("port=")
    assert second["resources"]["ws2"]["samples"] > 1
    (rep,) = second["repetitions"]
    assert [c["host"] for c in rep["commands"]] == ["ws2", "ws3"]


def test_no_server_starts_ahead_on_a_host_that_measures(kind_context: Callable[..., Any]) -> None:
    # the next test's server is this test's client: it starts once this client has ended
    plan = NEXT_ON_OTHER_HOSTS.replace("server: ws2, client: ws3", "server: ws, client: ws3")
    ctx, nas, ws = kind_context(plan, TOOLS, Overlap.concurrent(), ("ws2", "ws3"))
    ctx.hooks.ahead.upcoming = lambda: ctx.plan.tests[1]
    events: list[str] = []
    _launching(nas, events, 5201)
    _launching(ws, events, 5202)
    client_output = (IPERF3 / "tcp-single.json").read_text()

    def first_client(text: str) -> Result:
        time.sleep(1.0)  # past the time a server would start ahead
        events.append("client 1 ends")
        return riding_client(client_output)(text)

    ws.standing[:0] = [("-p 5201", first_client)]
    ctx.sessions["ws3"].runner.standing[:0] = [("-p 5202", riding_client(client_output))]

    for test in ctx.plan.tests:
        run_cell(ctx, test)
    ctx.settle()

    assert events == ["start nas", "client 1 ends", "start ws"]


def test_a_server_started_ahead_that_no_test_takes_is_stopped(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(NEXT_ON_OTHER_HOSTS, TOOLS, Overlap.concurrent(), ("ws2", "ws3"))
    ws2 = ctx.sessions["ws2"].runner
    ctx.hooks.ahead.upcoming = lambda: ctx.plan.tests[1]
    events: list[str] = []
    _launching(ws2, events, 5202)
    client_output = (IPERF3 / "tcp-single.json").read_text()

    def first_client(text: str) -> Result:
        deadline = time.monotonic() + 3
        while "start ws2" not in events and time.monotonic() < deadline:
            time.sleep(0.01)
        return riding_client(client_output)(text)

    nas.expect("port=5201", riding_start())
    nas.allow("grace=", riding_stop(SERVER_LOG))
    ws.standing[:0] = [("-p 5201", first_client)]

    run_cell(ctx, ctx.plan.tests[0])
    ctx.settle()
    ctx.hooks.ahead.drop()  # the run ends (stopped) before the next test

    assert events == ["start ws2"]
    assert len(ws2.texts("grace=")) == 1  # its server stopped
