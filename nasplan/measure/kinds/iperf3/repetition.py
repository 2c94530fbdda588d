"""One iperf3 repetition on two hosts: a one-off server, the client, the server's stop.

``run_repetition``: one iperf3 process a side (``-P`` streams in it), or (``processes``) one
single-stream process per stream (iperf3 before 3.16, ``multi``). Both retry a busy
server or a taken port (BUSY_BACKOFF_S) and take an ``Around``: what the caller runs around the
client (its test's samplers), rides in the server's scripts, and whether it takes the server's
stop to run later (its test's teardown).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn, TypeVar

from nasplan import platforms
from nasplan.measure.commands import command
from nasplan.measure.kinds.iperf3 import multi as iperf3_multi
from nasplan.measure.kinds.iperf3 import server as iperf3_server
from nasplan.measure.kinds.iperf3 import server_windows as iperf3_server_windows
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.kinds.iperf3.server import PORT_IN_USE_EXIT, SERVER_READY_TIMEOUT_S
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import Iperf3Error, excerpt
from nasplan.measure.sampler import NO_RIDE, Ride
from nasplan.remote.runner import Launched, Result, Runner

# "server is busy" is transient (someone else's test); retry after these pauses, in seconds.
BUSY_BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0)
CLIENT_TIMEOUT_MARGIN_S = 15
# as long as a server's start may take: its readiness wait plus the SSH round trip's
_START_TIMEOUT_S = SERVER_READY_TIMEOUT_S + 10
_STOP_TIMEOUT_S = 15
# after a measurement the one-off server exits by itself once its log is written; after a
# failure it would wait for a client forever
_STOP_GRACE_S = 2.0


class Around:
    """What runs around one iperf3 client; here nothing (a caller overrides what it needs).

    In order: ``start_text`` goes into the server's start script and ``started`` reads that
    script's output; ``server_runs`` when the server runs on a channel whose output can be read
    on (its interval lines while the client runs); ``before_client`` once the server listens;
    ``client_ride`` rides in the client's script and ``client_ended`` reads its output;
    ``after_result`` once the client's result is in; ``stop_text`` goes into the server's stop
    script and ``stopped`` reads its output. ``defer_stop`` is offered the server's stop after a
    measurement: True when it takes it (to run later, ``stopped`` with it), False to have it run
    now; after a failure it runs at once. The texts are asked once per attempt and are POSIX sh:
    a caller gives none for a Windows server (its scripts are PowerShell) nor to
    a repetition in ``processes`` (not asked).
    """

    def start_text(self) -> str:
        """Shell text for the server's start script ("": none)."""
        return ""

    def started(self, stdout: str) -> None:
        """The start script's output (its own section of it: ``nasplan.sections``)."""

    def server_runs(self, read: Callable[[], str | None]) -> None:
        """The launched server's output from here on: ``read()`` gives what it printed since
        the last read ("": nothing new; None once it ended). Not called for a daemon server."""

    def before_client(self) -> None:
        """The server listens; the client runs next."""

    def client_ride(self) -> Ride:
        """Shell text riding in the client's script (a POSIX client's only)."""
        return NO_RIDE

    def client_ended(self, stdout: str) -> None:
        """The client script's whole output (the riding text's sections after iperf3's)."""

    def after_result(self) -> None:
        """The client's result is in; the server's stop comes next."""

    def stop_text(self) -> str:
        """Shell text for the server's stop script ("": none)."""
        return ""

    def stopped(self, stdout: str) -> None:
        """The stop script's output (the server's log, then the text's sections)."""

    def defer_stop(self, stop: Callable[[], None]) -> bool:
        """Take the server's ``stop`` to run it later (True), or leave it to run now (False)."""
        return False


NOTHING = Around()


@dataclass(frozen=True)
class _Job:
    """What every attempt of one repetition needs."""

    server: Runner
    client: Runner
    server_iperf3: str
    launches: bool  # the server may run on its own channel (iperf3.launches)
    argv: tuple[str, ...]
    params: Iperf3Params


@dataclass(frozen=True)
class _OneOff:
    """A one-off server of one attempt: where it runs, its scripts, iperf3, port and files."""

    runner: Runner
    scripts: ModuleType  # iperf3_server, or iperf3_server_windows on a Windows host
    iperf3: str
    port: int
    pidfile: str
    logfile: str


@dataclass(frozen=True)
class Started:
    """A repetition's first server, launched before its turn (``start_ahead``)."""

    one: _OneOff
    launched: Launched
    argv: list[str]

    def stop(self, also: str = "", around: Around = NOTHING) -> None:
        """Stop it unused (no test took it)."""
        _stop_server(self.one, self.launched, 0, also, around)


def start_ahead(
    server: Runner,
    server_iperf3: str,
    params: Iperf3Params,
    token: str,
    *,
    server_iperf3_version: str | None,
    around: Around,
) -> Started | None:
    """The first attempt's server of the repetition ``token`` (as ``run_repetition`` is given
    it) launched now, on its own channel; None where it would be a daemon (an older iperf3, a
    Windows host) or its runner cannot leave it running. Raises Iperf3Error as its start."""
    if not iperf3.launches(server_iperf3_version) or not platforms.of(server).posix_shell:
        return None
    one = _one_off_on(server, server_iperf3, params, f"{token}-0")
    launched = _launch(one, around.start_text())
    if launched is None:
        return None
    around.started(launched.output)
    if launched.ended is not None:
        _launch_failed(one, launched)
    return Started(one, launched, iperf3_server.launch_argv(one.iperf3, one.port))


def run_repetition(
    server: Runner,
    client: Runner,
    server_iperf3: str,
    client_iperf3: str,
    address: str,
    params: Iperf3Params,
    token: str,
    *,
    client_iperf3_version: str | None = None,
    server_iperf3_version: str | None = None,
    processes: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    around: Around = NOTHING,
    started: Started | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run one iperf3 test: start a one-off server, run the client, always stop the server.

    Returns ``(raw client JSON text, iperf3.parse() result)``; raises Iperf3Error. The server
    runs on its own channel when its version is known to allow it (``iperf3.launches``) on a
    POSIX host whose runner can leave it running, else as a daemon. The server's stop runs
    before this returns unless ``around.defer_stop`` takes it. ``started``: the first
    attempt's server, launched ahead (``start_ahead``).

    ``processes``: ``params.parallel`` single-stream clients against as many one-off servers,
    summed (raw: marker-separated client JSON, ``iperf3_multi.combine()``'s result). One round
    trip starts every server, one runs every client, one stops every server (always, at once:
    ``around``'s texts and ``defer_stop`` are not asked).
    """
    if processes:
        ports = tuple(params.port + i for i in range(params.parallel))
        argvs = _stream_argvs(client_iperf3, address, params, ports, client_iperf3_version)
        many = _Processes(server, client, server_iperf3, params, argvs, ports)
        return retry_when_busy(lambda n: _attempt_processes(many, f"{token}-{n}", around), sleep)
    argv = iperf3.client_argv(client_iperf3, address, params, iperf3_version=client_iperf3_version)
    launches = iperf3.launches(server_iperf3_version)
    job = _Job(server, client, server_iperf3, launches, tuple(argv), params)
    return retry_when_busy(
        lambda n: _attempt(job, f"{token}-{n}", around, started if n == 0 else None), sleep
    )


def _attempt(
    job: _Job, token: str, around: Around, ahead: Started | None = None
) -> tuple[str, dict[str, Any]]:
    one = ahead.one if ahead is not None else _one_off(job, token)
    if ahead is not None:
        launched, server_argv = ahead.launched, ahead.argv
    else:
        launched, server_argv = _start_server(one, job.launches, around)
    measured = False
    try:
        if launched.read is not None:
            around.server_runs(launched.read)
        around.before_client()
        stdout, parsed = _run_client(job, around)
        parsed["commands"].insert(0, command(one.runner.name, server_argv, server=True))
        measured = True
        around.after_result()
    finally:
        grace_s = _STOP_GRACE_S if measured else 0
        stop = functools.partial(_stop_server, one, launched, grace_s, around.stop_text(), around)
        if not (measured and around.defer_stop(stop)):
            stop()
    return stdout, parsed


# The iperf3 server's launcher and stopper by the language of the host's scripts
# (``Platform.scripts``): a platform of a new script language adds its module here.
SERVER_SCRIPTS: dict[str, ModuleType] = {"sh": iperf3_server, "powershell": iperf3_server_windows}


def _one_off(job: _Job, token: str) -> _OneOff:
    return _one_off_on(job.server, job.server_iperf3, job.params, token)


def _one_off_on(server: Runner, server_iperf3: str, params: Iperf3Params, token: str) -> _OneOff:
    scripts = SERVER_SCRIPTS[platforms.of(server).scripts]
    # the server's name in the path: inventory hosts that are one machine tell their files apart
    pidfile, logfile = scripts.temp_paths(f"{token}-{server.name}", params.port)
    return _OneOff(server, scripts, server_iperf3, params.port, pidfile, logfile)


def _start_server(one: _OneOff, launches: bool, around: Around) -> tuple[Launched, list[str]]:
    """``one`` listening, on its own channel when ``launches`` (and the runner can leave it
    running: ``Runner.start_until``) on a POSIX host, else as a daemon, and the server's argv
    as it ran; Iperf3Error when it would not."""
    also = around.start_text()
    posix = one.scripts is iperf3_server
    launched = _launch(one, also) if launches and posix else None
    if launched is None:  # an older iperf3, Windows, or a runner that cannot leave it running
        script = one.scripts.server_start_script(
            one.iperf3, one.port, one.pidfile, one.logfile, also=also
        )
        started = one.runner.run_script(script, timeout_s=_START_TIMEOUT_S)
        around.started(started.stdout)
        if not started.ok:
            _start_failed(one, started)
        argv = one.scripts.server_argv(one.iperf3, one.port, one.pidfile, one.logfile)
        return Launched(started.stdout, None), argv
    # the riding text's section ends at the launch section's line (one write: nothing of
    # iperf3's falls inside it)
    around.started(launched.output)
    if launched.ended is not None:
        _launch_failed(one, launched)
    return launched, iperf3_server.launch_argv(one.iperf3, one.port)


def _launch(one: _OneOff, also: str) -> Launched | None:
    """The server in the foreground of its own channel, ready once it said it listens; None
    when the runner cannot leave a command running."""
    script = iperf3_server.server_launch_script(
        one.iperf3, one.port, one.pidfile, one.logfile, also=also
    )
    markers = [iperf3_server.READY_MARKER, iperf3_server.launch_section_marker()]
    return one.runner.start_until(script, markers, timeout_s=_START_TIMEOUT_S)


def _start_failed(one: _OneOff, started: Result) -> NoReturn:
    """Raise why a daemon server did not start (after stopping what may be left of it)."""
    reason = excerpt(started.stderr + started.stdout) or f"exit status {started.exited}"
    if started.exited == PORT_IN_USE_EXIT:
        raise Iperf3Error(reason)
    stop = one.scripts.server_stop_script(one.pidfile, one.logfile, grace_s=0)
    one.runner.run_script(stop, timeout_s=_STOP_TIMEOUT_S)
    raise Iperf3Error(f"could not start the iperf3 server on {one.runner.name}: {reason}")


def _launch_failed(one: _OneOff, launched: Launched) -> NoReturn:
    """Raise why a launched server ended before it listened (after stopping what may still
    run); a port someone else listens on is said as such (retried)."""
    ended = launched.ended
    assert ended is not None
    launched.close()
    stop = iperf3_server.server_stop_script(one.pidfile, one.logfile, grace_s=0)
    one.runner.run_script(stop, timeout_s=_STOP_TIMEOUT_S)
    if ended.exited == 124:
        reason = f"it did not listen on port {one.port} within {_START_TIMEOUT_S} s"
    else:
        check = one.runner.run_script(iperf3_server.port_check_script(one.port), timeout_s=15)
        if check.exited == PORT_IN_USE_EXIT:
            raise Iperf3Error(excerpt(check.stderr))
        said = excerpt(iperf3_server.launch_said(launched.output) + ended.stderr)
        reason = said or f"{one.iperf3} -s ended before it listened on port {one.port}"
    raise Iperf3Error(f"could not start the iperf3 server on {one.runner.name}: {reason}")


def _run_client(job: _Job, around: Around) -> tuple[str, dict[str, Any]]:
    """The client's raw output and its parse(); Iperf3Error when it measured nothing."""
    client, params = job.client, job.params
    timeout_s = params.duration_s + params.omit_s + CLIENT_TIMEOUT_MARGIN_S
    if not platforms.of(client).posix_shell:  # the client's script below is POSIX sh
        result = client.run(job.argv, timeout_s=timeout_s)
        stdout = result.stdout
    else:  # under the host lease's watchdog, as the server; the host's sampler riding in it
        ride = around.client_ride()
        script = iperf3_server.client_script(
            job.argv, before=ride.before, said=ride.said, stop=ride.stop
        )
        result = client.run_script(script, timeout_s=timeout_s)
        around.client_ended(result.stdout)
        stdout = iperf3_server.client_said(result.stdout) if ride != NO_RIDE else result.stdout
    parsed = iperf3.parse_client(stdout, result.stderr, client.name)
    return stdout, {**parsed, "commands": [command(client.name, job.argv)]}


def _stop_server(
    one: _OneOff, launched: Launched, grace_s: float, also: str, around: Around
) -> None:
    """Stop the server (``grace_s`` to end by itself first), remove its files; ``also`` rides
    in the stop script, whose output goes to ``around.stopped``."""
    grace = grace_s
    try:
        # a launched server is seen to end on its own channel: the stop script then needs no
        # grace of its own, and kills one still there
        if grace > 0 and launched.ended_within is not None:
            launched.ended_within(grace)
            grace = 0
        script = one.scripts.server_stop_script(one.pidfile, one.logfile, grace_s=grace, also=also)
        stopped = one.runner.run_script(script, timeout_s=_STOP_TIMEOUT_S)
    finally:
        launched.close()
    around.stopped(stopped.stdout)


def _stream_argvs(
    iperf3_path: str,
    address: str,
    params: Iperf3Params,
    ports: tuple[int, ...],
    version: str | None,
) -> tuple[list[str], ...]:
    """A single-stream client's argv for each of ``ports``."""
    return tuple(
        iperf3.client_argv(
            iperf3_path, address, dataclasses.replace(params, parallel=1, port=port),
            iperf3_version=version,
        )
        for port in ports
    )  # fmt: skip


@dataclass(frozen=True)
class _Processes:
    """What every attempt of a repetition in processes needs: a client and a server per port."""

    server: Runner
    client: Runner
    server_iperf3: str
    params: Iperf3Params
    argvs: tuple[list[str], ...]
    ports: tuple[int, ...]


def _attempt_processes(job: _Processes, token: str, around: Around) -> tuple[str, dict[str, Any]]:
    server, params, ports = job.server, job.params, list(job.ports)
    start = iperf3_multi.servers_start_script(job.server_iperf3, ports, token)
    started = server.run_script(start, timeout_s=SERVER_READY_TIMEOUT_S * len(ports) + 10)
    raw = ""
    try:
        if not started.ok:
            reason = " ".join((started.stderr + started.stdout).split())[:200]
            if started.exited == PORT_IN_USE_EXIT:
                raise Iperf3Error(reason)  # "is already in use": retried
            raise Iperf3Error(f"could not start the iperf3 servers on {server.name}: {reason}")
        timeout_s = params.duration_s + params.omit_s + CLIENT_TIMEOUT_MARGIN_S
        around.before_client()
        script = iperf3_multi.client_script(list(job.argvs), ports)
        raw = job.client.run_script(script, timeout_s=timeout_s).stdout
        parsed = iperf3_multi.parse(raw, ports)
        servers = [
            command(server.name, iperf3_server.server_argv(job.server_iperf3, port, *files),
                    server=True)
            for port, files in zip(ports, iperf3_multi.temp_paths(token, ports), strict=True)
        ]  # fmt: skip
        clients = [command(job.client.name, argv) for argv in job.argvs]
        parsed["commands"] = servers + clients
        around.after_result()
        return raw, parsed
    finally:
        grace_s = _STOP_GRACE_S if raw else 0
        stop = iperf3_multi.servers_stop_script(ports, token, grace_s=grace_s)
        server.run_script(stop, timeout_s=30)


T = TypeVar("T")


def retry_when_busy(attempt: Callable[[int], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``attempt(n)`` again after each of BUSY_BACKOFF_S while iperf3 says it is busy."""
    pauses_s = list(BUSY_BACKOFF_S)
    number = 0
    while True:
        try:
            return attempt(number)
        except Iperf3Error as exc:
            if not pauses_s or not iperf3.is_server_busy(exc):
                raise
            sleep(pauses_s.pop(0))
        number += 1
