"""One iperf3 repetition through the runner seam: the server's start and stop, the client, the
busy retry, and what runs around the client (``Around``), against doubles that fail loudly."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.iperf3 import multi as iperf3_multi
from nasplan.measure.kinds.iperf3.repetition import (
    BUSY_BACKOFF_S,
    Around,
    run_repetition,
)
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import Iperf3Error
from nasplan.remote.runner import Launched, Result

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.12"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


Make = Callable[[str], Any]  # the fake_runner fixture of tests/unit/conftest.py


def scripted(make: Make, name: str, answers: list[tuple[str, Result]]) -> Any:
    """A FakeRunner (tests/unit/conftest.py) answering ``answers`` in order, nothing else."""
    runner = make(name)
    for fragment, result in answers:
        runner.expect(fragment, reply=result)
    return runner


def ok(stdout: str = "") -> Result:
    return Result("cmd", stdout, "", 0)


def test_run_repetition_retries_a_busy_server_then_succeeds(
    fake_runner: Callable[[str], Any],
) -> None:
    server_log = fixture("tcp-single-server-log.json")
    server = scripted(
        fake_runner,
        "nas",
        [("-s -1 -p", ok()), ("kill", ok()), ("-s -1 -p", ok()), ("kill", ok(server_log))],
    )
    client = scripted(
        fake_runner, "ws", [("-c 198.18.0.10", ok(fixture("error-server-busy.json"))),
               ("-c 198.18.0.10", ok(fixture("tcp-single.json")))],
    )  # fmt: skip
    pauses: list[float] = []
    raw, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=2), "tok",
        sleep=pauses.append,
    )  # fmt: skip
    assert pauses == [BUSY_BACKOFF_S[0]]
    assert raw == fixture("tcp-single.json")
    assert rep["bits_per_second"] == pytest.approx(956948139.91649473)
    assert not server.queue and not client.queue
    # the exact commands, kept for run.json: the server's (the attempt that measured), then
    # the argv the client host ran
    served, kept = rep["commands"]
    assert kept["host"] == "ws" and "server" not in kept
    assert kept["argv"][:8] == ["iperf3", "-J", "-c", "198.18.0.10", "-p", "5201", "-t", "2"]
    assert shlex.join(kept["argv"]) in client.texts()[-1]
    assert served["host"] == "nas" and served["server"] is True
    pidfile, logfile = served["argv"][6], served["argv"][9]
    assert served["argv"] == ["iperf3", "-s", "-1", "-p", "5201", "--pidfile", pidfile, "-J",
                              "--logfile", logfile]  # fmt: skip
    started = server.texts("-s -1 -p")[-1]  # the daemon's start script runs just that argv
    assert f"pidfile={pidfile}\n" in started and f"logfile={logfile}\n" in started
    assert 'exec "$iperf3" -s -1 -p "$port" --pidfile "$pidfile" -J --logfile "$logfile"' in started
    assert "tok-1" in pidfile  # the second attempt's files, not the busy first one's


def test_run_repetition_retries_when_the_port_is_taken(fake_runner: Make) -> None:
    taken = Result("sh", "", "nasplan: iperf3 port 5201 is already in use on nas\n", 3)
    server = scripted(
        fake_runner, "nas", [("-s -1 -p", taken), ("-s -1 -p", ok()), ("kill", ok())]
    )  # no stop after a start that found the port taken: that server is not ours
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("tcp-single.json")))])
    pauses: list[float] = []
    _, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=2), "t",
        sleep=pauses.append,
    )  # fmt: skip
    assert pauses == [BUSY_BACKOFF_S[0]]
    assert rep["streams"] == 1
    assert not server.queue


def test_run_repetition_gives_up_after_the_last_backoff(fake_runner: Make) -> None:
    attempts = len(BUSY_BACKOFF_S) + 1
    server = scripted(fake_runner, "nas", [("-s -1 -p", ok()), ("kill", ok())] * attempts)
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("error-server-busy.json")))] * attempts)
    pauses: list[float] = []
    with pytest.raises(Iperf3Error, match="server is busy"):
        run_repetition(
            server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
            sleep=pauses.append,
        )  # fmt: skip
    assert pauses == list(BUSY_BACKOFF_S)


def test_run_repetition_stops_the_server_when_the_client_fails(
    fake_runner: Callable[[str], Any],
) -> None:
    server = scripted(fake_runner, "nas", [("-s -1 -p", ok()), ("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("error-connection-refused.json")))])
    with pytest.raises(Iperf3Error, match="Connection refused"):
        run_repetition(
            server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
            sleep=lambda _: pytest.fail("connection refused must not be retried"),
        )  # fmt: skip
    assert not server.queue  # the stop script ran
    assert "grace=0" in server.texts()[-1]  # and did not wait for a test that never came


def test_run_repetition_reports_a_server_that_would_not_start(
    fake_runner: Callable[[str], Any],
) -> None:
    failed = Result("sh", "", "sh: 1: /opt/iperf3: not found\nnasplan: /opt/iperf3 -s -D failed", 1)
    server = scripted(fake_runner, "nas", [("-s -1 -p", failed), ("kill", ok())])
    client = scripted(fake_runner, "ws", [])
    with pytest.raises(Iperf3Error, match=r"could not start the iperf3 server on nas: .*not found"):
        run_repetition(
            server, client, "/opt/iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t"
        )


def test_processes_mode_uses_three_round_trips_and_retries_a_taken_port(
    fake_runner: Callable[[str], Any],
) -> None:
    single = fixture("tcp-single.json")
    taken = Result("cmd", "", "port 5201 is already in use", 3)
    server = scripted(
        fake_runner, "nas",
        [("-s -1 -p", taken), ("kill", ok()),  # first attempt: a port was taken; all stopped
         ("-s -1 -p", ok()), ("kill", ok())],  # second: one round trip starts both servers
    )  # fmt: skip
    both = f"{iperf3_multi.MARKER}5201 ===\n{single}\n{iperf3_multi.MARKER}5202 ===\n{single}\n"
    client = scripted(fake_runner, "ws", [("-c 198.18.0.10", ok(both))])
    pauses: list[float] = []
    raw, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10",
        Iperf3Params(duration_s=2, parallel=2, port=5201), "tok", processes=True,
        sleep=pauses.append,
    )  # fmt: skip
    assert raw == both
    assert pauses == [BUSY_BACKOFF_S[0]]
    assert server.texts()[2].count("-s -1 -p") == 2  # both servers in one script
    assert "-p 5201" in client.texts()[0] and "-p 5202" in client.texts()[0]
    assert rep["processes"] == 2
    assert rep["bits_per_second"] == pytest.approx(2 * 956948139.91649473)
    assert not server.queue and not client.queue
    # kept: a server per port, then a client per port
    kept = rep["commands"]
    assert [(c["host"], c.get("server", False)) for c in kept] == [
        ("nas", True), ("nas", True), ("ws", False), ("ws", False)]  # fmt: skip
    assert [c["argv"][4] for c in kept[:2]] == ["5201", "5202"]
    for served in kept[:2]:
        assert f"pidfile={served['argv'][6]}\n" in server.texts()[2]


class Noted(Around):
    """An Around that notes each call in ``events``; it takes the server's stop when ``takes``."""

    def __init__(self, takes: bool = True) -> None:
        self.events: list[str] = []
        self.takes = takes
        self.stops: list[Callable[[], None]] = []

    def start_text(self) -> str:
        self.events.append("start_text")
        return "echo riding-start\n"

    def started(self, stdout: str) -> None:
        self.events.append(f"started {stdout.strip()}".strip())

    def before_client(self) -> None:
        self.events.append("before_client")

    def after_result(self) -> None:
        self.events.append("after_result")

    def stop_text(self) -> str:
        self.events.append("stop_text")
        return "echo riding-stop\n"

    def stopped(self, stdout: str) -> None:
        self.events.append(f"stopped {stdout.strip()}".strip())

    def defer_stop(self, stop: Callable[[], None]) -> bool:
        self.events.append("defer_stop")
        self.stops.append(stop)
        return self.takes


def test_around_rides_in_the_servers_scripts_and_takes_its_stop_to_run_later(
    fake_runner: Make,
) -> None:
    server = scripted(
        fake_runner, "nas", [("echo riding-start", ok("PID 1")), ("echo riding-stop", ok("log"))]
    )
    client = scripted(fake_runner, "ws", [("-c 198.18.0.10", ok(fixture("tcp-single.json")))])
    around = Noted()
    _, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=2), "t",
        around=around,
    )  # fmt: skip
    assert rep["streams"] == 1
    assert around.events == [
        "start_text", "started PID 1", "before_client", "after_result", "stop_text", "defer_stop"
    ]  # fmt: skip
    assert len(server.texts()) == 1  # the stop is the caller's now
    (stop,) = around.stops
    stop()
    assert around.events[-1] == "stopped log"
    assert "grace=200" in server.texts()[-1]  # the server may still be writing its log


def test_after_a_failed_client_the_server_stops_at_once_and_its_stop_is_not_offered(
    fake_runner: Make,
) -> None:
    server = scripted(fake_runner, "nas", [("-s -1 -p", ok()), ("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("error-connection-refused.json")))])
    around = Noted()
    with pytest.raises(Iperf3Error, match="Connection refused"):
        run_repetition(
            server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
            around=around,
        )  # fmt: skip
    assert "defer_stop" not in around.events and "after_result" not in around.events
    assert around.events[-2:] == ["stop_text", "stopped"]
    assert "grace=0" in server.texts()[-1]


def test_a_server_left_to_run_now_is_stopped_before_the_repetition_returns(
    fake_runner: Make,
) -> None:
    server = scripted(fake_runner, "nas", [("-s -1 -p", ok()), ("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("tcp-single.json")))])
    around = Noted(takes=False)
    run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
        around=around,
    )  # fmt: skip
    assert around.events[-2:] == ["defer_stop", "stopped"]
    assert not server.queue


def test_a_recent_iperf3_on_a_runner_that_cannot_launch_starts_as_a_daemon_with_its_rider(
    fake_runner: Make,
) -> None:
    # iperf3 >= 3.7 would run on its own channel; a runner without one (start_until: None)
    # gets the daemon's start script, the riding text in it all the same
    server = scripted(fake_runner, "nas", [("echo riding-start", ok()), ("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("tcp-single.json")))])
    around = Noted(takes=False)
    run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
        server_iperf3_version="3.12", around=around,
    )  # fmt: skip
    assert "--pidfile" in server.texts()[0]  # the daemon's start script
    assert around.events.count("start_text") == 1


def test_processes_mode_waits_for_the_caller_around_its_clients(fake_runner: Make) -> None:
    single = fixture("tcp-single.json")
    both = f"{iperf3_multi.MARKER}5201 ===\n{single}\n{iperf3_multi.MARKER}5202 ===\n{single}\n"
    server = scripted(fake_runner, "nas", [("-s -1 -p", ok()), ("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c 198.18.0.10", ok(both))])
    around = Noted()
    run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10",
        Iperf3Params(duration_s=2, parallel=2, port=5201), "tok", processes=True, around=around,
    )  # fmt: skip
    # no text rides along in several servers' scripts; their stop is never deferred
    assert around.events == ["before_client", "after_result"]
    assert not server.queue


class Following(Noted):
    """A Noted that reads the launched server's output as ``server_runs`` offers it."""

    def __init__(self) -> None:
        super().__init__(takes=False)
        self.read: Callable[[], str | None] | None = None

    def server_runs(self, read: Callable[[], str | None]) -> None:
        self.events.append("server_runs")
        self.read = read


def test_a_launched_servers_output_is_offered_while_its_client_runs(fake_runner: Make) -> None:
    server = scripted(fake_runner, "nas", [("kill", ok())])
    client = scripted(fake_runner, "ws", [("-c", ok(fixture("tcp-single.json")))])
    ready = "Server listening on 5201\n@@nasplan:iperf3-server@@\n"
    lines = ["[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec\n", None]
    launched: list[str] = []

    def start_until(script: str, markers: Any, *, timeout_s: float) -> Launched:
        launched.append(script)
        return Launched(ready, None, read=lambda: lines.pop(0))

    server.start_until = start_until
    around = Following()
    _, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.0.10", Iperf3Params(duration_s=1), "t",
        server_iperf3_version="3.12", around=around,
    )  # fmt: skip
    assert "-i 1 --forceflush" in launched[0]
    served = rep["commands"][0]  # kept as the launched server ran it
    assert served == {
        "host": "nas",
        "server": True,
        "argv": ["iperf3", "-s", "-1", "-p", "5201", "-i", "1", "--forceflush"],
    }
    assert '"$iperf3" -s -1 -p "$port" -i 1 --forceflush' in launched[0]
    assert around.events[0] == "start_text" and around.events[1].startswith("started Server")
    assert around.events[2:5] == ["server_runs", "before_client", "after_result"]
    assert around.read is not None
    assert around.read() == "[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec\n"
    assert around.read() is None
