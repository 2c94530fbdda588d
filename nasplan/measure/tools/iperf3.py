"""iperf3: client argv, server start/stop scripts, pure parsers of ``-J`` output, one repetition."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, TypeVar

from nasplan.errors import NasplanError
from nasplan.hosts import shell
from nasplan.measure.tools import iperf3_server, iperf3_server_windows
from nasplan.measure.tools.iperf3_server import (
    LAUNCH_SECTION,
    LAUNCH_SINCE,
    PORT_IN_USE_EXIT,
    READY_MARKER,
    SERVER_READY_TIMEOUT_S,
    launch_section_marker,
)
from nasplan.measure.tools.iperf3_server import server_start_script as server_start_script
from nasplan.measure.tools.iperf3_server import server_stop_script as server_stop_script
from nasplan.measure.tools.iperf3_server import temp_paths as temp_paths
from nasplan.measure.tools.jsondoc import count, find_object, number
from nasplan.runner import Launched, Launcher, Runner
from nasplan.sections import split_sections

# "server is busy" is transient (someone else's test); retry after these pauses, in seconds.
BUSY_BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0)
CLIENT_TIMEOUT_MARGIN_S = 15
CONNECT_TIMEOUT_MS = 3000
# --connect-timeout appeared in iperf 3.2 (RELNOTES); older clients reject the option.
_CONNECT_TIMEOUT_SINCE = (3, 2)
# iperf 3.16 (RELNOTES): "multi-threaded: each stream runs in its own thread"; before, the -P
# streams of one process share one thread, so one CPU core may cap the result.
MULTI_THREADED_SINCE = (3, 16)
_BUSY_MARKERS = ("the server is busy", "is already in use")
# (just before the client runs, once its result is in): see run_repetition
ClientHooks = tuple[Callable[[], None], Callable[[], None]]
# takes the server's stop (after a measurement) to run it later
Defer = Callable[[Callable[[], None]], None]


class Rider(Protocol):
    """Shell text riding along in the server host's own round trips (its resource sampler:
    nasplan.measure.sampler.Riding): one SSH session fewer there at each end of a test."""

    def start_text(self) -> str: ...
    def started(self, stdout: str) -> None: ...
    def stop_text(self) -> str: ...
    def stopped(self, stdout: str) -> None: ...


class NoRider:
    """Nothing rides along."""

    def start_text(self) -> str:
        return ""

    def started(self, stdout: str) -> None:
        pass

    def stop_text(self) -> str:
        return ""

    def stopped(self, stdout: str) -> None:
        pass


NO_RIDER = NoRider()


# The repetition keys of run.json (schemas/run.schema.json, $defs.repetition) that parse() fills.
CONTRACT_KEYS: tuple[str, ...] = (
    "bits_per_second",
    "sent_bits_per_second",
    "received_bits_per_second",
    "bytes",
    "duration_s",
    "retransmits",
    "cpu_client_percent",
    "cpu_server_percent",
    "jitter_ms",
    "lost_packets",
    "packets",
    "lost_percent",
)


class Iperf3Error(NasplanError):
    """iperf3 failed; the message is iperf3's own (e.g. ``unable to connect to server: ...``).

    ``raw`` is the client output that carried the failure (worth saving), None when there was none.
    """

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


@dataclass(frozen=True, kw_only=True)
class Iperf3Params:
    """How one iperf3 client run is made (server side: a one-off ``iperf3 -s -1``)."""

    duration_s: int
    omit_s: int = 0
    parallel: int = 1
    reverse: bool = False
    bidir: bool = False
    protocol: str = "tcp"
    udp_bitrate_bits_per_second: int | None = None
    zerocopy: bool = False
    window_bytes: int | None = None
    mss_bytes: int | None = None
    port: int = 5201
    bind_address: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in ("tcp", "udp"):
            raise ValueError(f"iperf3 protocol must be tcp or udp, not {self.protocol!r}")
        if self.duration_s < 1 or self.parallel < 1 or self.omit_s < 0:
            raise ValueError("iperf3 needs duration_s >= 1, parallel >= 1 and omit_s >= 0")


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"3.12"`` or ``"iperf 3.1.3"`` -> ``(3, 12)`` / ``(3, 1, 3)``; None when unknown."""
    if not version:
        return None
    match = re.search(r"(\d+(?:\.\d+)+)", version)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def single_threaded(version: str | None) -> bool:
    """True when ``version`` is known and older than 3.16 (all -P streams in one thread)."""
    parsed = version_tuple(version)
    return parsed is not None and parsed < MULTI_THREADED_SINCE


def before_connect_timeout(version: str | None) -> bool:
    """True when ``version`` is known and older than 3.2 (3.1.3: the last Windows build esnet
    published; no ``--connect-timeout``)."""
    parsed = version_tuple(version)
    return parsed is not None and parsed < _CONNECT_TIMEOUT_SINCE


def client_argv(
    iperf3_path: str,
    address: str,
    params: Iperf3Params,
    *,
    iperf3_version: str | None = None,
) -> list[str]:
    """The client command as argv, JSON output always on, e.g. ``[iperf3, -J, -c, addr, ...]``.

    ``--connect-timeout`` is added unless ``iperf3_version`` is known to predate it (3.2).
    """
    argv = [iperf3_path, "-J", "-c", address, "-p", str(params.port), "-t", str(params.duration_s)]
    version = version_tuple(iperf3_version)
    if version is None or version >= _CONNECT_TIMEOUT_SINCE:
        argv += ["--connect-timeout", str(CONNECT_TIMEOUT_MS)]
    if params.omit_s > 0:
        argv += ["-O", str(params.omit_s)]
    if params.parallel > 1:
        argv += ["-P", str(params.parallel)]
    if params.reverse:
        argv.append("-R")
    if params.bidir:
        argv.append("--bidir")
    if params.protocol == "udp":
        argv.append("-u")
        if params.udp_bitrate_bits_per_second is not None:
            argv += ["-b", str(params.udp_bitrate_bits_per_second)]
    if params.zerocopy:
        argv.append("-Z")
    if params.window_bytes is not None:
        argv += ["-w", str(params.window_bytes)]
    if params.mss_bytes is not None:
        argv += ["-M", str(params.mss_bytes)]
    if params.bind_address:
        argv += ["-B", params.bind_address]
    return argv


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _find_document(raw: str) -> dict[str, Any] | None:
    """The iperf3 result object in ``raw``, skipping any text (or debug JSON) printed before it."""
    return find_object(raw, lambda obj: isinstance(obj.get("start"), dict))


def _version(start: Mapping[str, Any]) -> str | None:
    version = start.get("version")
    return str(version).removeprefix("iperf ").strip() if version else None


def _direction(
    sent: Mapping[str, Any] | None, received: Mapping[str, Any] | None
) -> dict[str, Any]:
    return {
        "bits_per_second": number(received, "bits_per_second"),
        "sent_bits_per_second": number(sent, "bits_per_second"),
        "received_bits_per_second": number(received, "bits_per_second"),
        "bytes": count(received, "bytes"),
        "duration_s": number(received, "seconds"),
        "retransmits": count(sent, "retransmits"),
    }


def _intervals(doc: Mapping[str, Any], bidir: bool) -> list[dict[str, Any]]:
    rows = []
    for item in doc.get("intervals") or []:
        total = item.get("sum") or {}
        if total.get("omitted"):
            continue
        row = {
            "start_s": number(total, "start"),
            "end_s": number(total, "end"),
            "bits_per_second": number(total, "bits_per_second"),
            "retransmits": count(total, "retransmits"),
        }
        if bidir:  # names of iperf3 >= 3.11; 3.7-3.10 used others (RELNOTES, #952)
            row["reverse_bits_per_second"] = number(
                item.get("sum_bidir_reverse"), "bits_per_second"
            )
        rows.append(row)
    return rows


def _udp_arrived(result: Mapping[str, Any]) -> dict[str, Any]:
    """iperf3 before 3.2 reports UDP as one ``sum``: the sender's rate with the receiver's loss.

    What arrived is the sent rate times the share of datagrams that were not lost.
    """
    sent, packets, lost = (
        result.get(k) for k in ("sent_bits_per_second", "packets", "lost_packets")
    )
    if sent is None or not packets or lost is None:
        return {}
    arrived = sent * (packets - lost) / packets
    return {"bits_per_second": arrived, "received_bits_per_second": arrived}


def parse(raw: str) -> dict[str, Any]:
    """Parse ``iperf3 -J`` client output into a repetition dict (see module docs for the keys).

    Raises Iperf3Error with iperf3's message when the output holds an ``error`` or no result.
    Keys: the CONTRACT_KEYS of run.json, plus ``protocol``, ``iperf3_version``, ``streams``,
    ``omit_s``, ``tcp_mss_bytes``, ``intervals`` (non-omitted, the client's own per-second view:
    the sending rate unless -R), and for --bidir ``reverse_*`` (the server -> client direction).
    """
    doc = _find_document(raw)
    if doc is None:
        excerpt = _excerpt(raw) or "(empty)"
        raise Iperf3Error(f"no iperf3 JSON result in the output: {excerpt}", raw or None)
    if doc.get("error"):
        raise Iperf3Error(str(doc["error"]), raw)
    start = doc["start"]
    end = doc.get("end") or {}
    test_start = start.get("test_start") or {}
    udp = str(test_start.get("protocol", "TCP")).upper() == "UDP"
    # older iperf3 UDP results have only "sum" (sender counts, receiver jitter/loss)
    sent = end.get("sum_sent") or end.get("sum")
    received = end.get("sum_received") or end.get("sum")
    if not received:
        raise Iperf3Error("iperf3 reported no end-of-test summary (end.sum_received)", raw)
    bidir = "sum_received_bidir_reverse" in end
    cpu = end.get("cpu_utilization_percent")
    result: dict[str, Any] = {
        **_direction(sent, received),
        "cpu_client_percent": number(cpu, "host_total"),
        "cpu_server_percent": number(cpu, "remote_total"),
        "jitter_ms": None,
        "lost_packets": None,
        "packets": None,
        "lost_percent": None,
        "protocol": "udp" if udp else "tcp",
        "iperf3_version": _version(start),
        "streams": count(test_start, "num_streams") or len(end.get("streams") or []) or None,
        "omit_s": count(test_start, "omit"),
        "tcp_mss_bytes": None
        if udp
        else count(start, "tcp_mss") or count(start, "tcp_mss_default"),
        "intervals": _intervals(doc, bidir),
    }
    if udp:
        result["retransmits"] = None
        result.update(
            jitter_ms=number(received, "jitter_ms"),
            lost_packets=count(received, "lost_packets"),
            packets=count(received, "packets"),
            lost_percent=number(received, "lost_percent"),
        )
        if "sum_received" not in end:
            result.update(_udp_arrived(result))
    if bidir:
        reverse = _direction(
            end.get("sum_sent_bidir_reverse"), end.get("sum_received_bidir_reverse")
        )
        result.update({f"reverse_{key}": value for key, value in reverse.items()})
    return result


def repetition_fields(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """Only the run.json repetition keys (CONTRACT_KEYS) of a parse() result, None when absent."""
    return {key: parsed.get(key) for key in CONTRACT_KEYS}


def parse_server_log(raw: str) -> dict[str, Any] | None:
    """The server's own view of the test from its ``-J --logfile``; None when absent or unreadable.

    Keys: iperf3_version, received_bits_per_second, sent_bits_per_second, cpu_percent, error.
    """
    doc = _find_document(raw)
    if doc is None:
        return None
    end = doc.get("end") or {}
    return {
        "iperf3_version": _version(doc["start"]),
        "received_bits_per_second": number(end.get("sum_received"), "bits_per_second"),
        "sent_bits_per_second": number(end.get("sum_sent"), "bits_per_second"),
        "cpu_percent": number(end.get("cpu_utilization_percent"), "host_total"),
        "error": str(doc["error"]) if doc.get("error") else None,
    }


def is_server_busy(error: Iperf3Error | str) -> bool:
    """True when the failure is another test holding the server or its port (worth a retry)."""
    text = str(error).lower()
    return any(marker in text for marker in _BUSY_MARKERS)


def nothing() -> None:
    """No step of the caller's around the client."""


def _attempt(
    server: Runner,
    client: Runner,
    server_iperf3: str,
    argv: list[str],
    params: Iperf3Params,
    token: str,
    hooks: ClientHooks = (nothing, nothing),
    rider: Rider = NO_RIDER,
    defer: Defer | None = None,
    server_iperf3_version: str | None = None,
) -> tuple[str, dict[str, Any]]:
    windows = shell.of(server).is_windows
    scripts = iperf3_server_windows if windows else iperf3_server
    # the server's name in the path: hosts sharing one /tmp (the lab) tell their files apart
    pidfile, logfile = scripts.temp_paths(f"{token}-{server.name}", params.port)
    one = OneOff(server_iperf3, params.port, pidfile, logfile)
    version = version_tuple(server_iperf3_version)
    if not windows and isinstance(server, Launcher) and version and version >= LAUNCH_SINCE:
        launched = _launch(server, server, one, rider)
    else:
        launched = _start(server, scripts, one, rider)
    parsed: dict[str, Any] | None = None
    try:
        timeout_s = params.duration_s + params.omit_s + CLIENT_TIMEOUT_MARGIN_S
        hooks[0]()
        if shell.of(client).is_windows:
            result = client.run(argv, timeout_s=timeout_s)
        else:  # under the host lease's watchdog, as the server
            result = client.run_script(iperf3_server.client_script(argv), timeout_s=timeout_s)
        try:
            parsed = parse(result.stdout)
        except Iperf3Error as exc:
            # iperf3 3.12 exits 0 even on errors; stderr helps when no JSON came at all
            if "no iperf3 JSON" in str(exc) and result.stderr.strip():
                message = f"{client.name}: {_excerpt(result.stderr)}"
                raise Iperf3Error(message, exc.raw) from exc
            raise
        hooks[1]()
    finally:
        # after a test the one-off server exits by itself once its log is written; after a
        # failure it would wait for a client forever
        grace_s = 2.0 if parsed is not None else 0
        also = rider.stop_text()

        def stop() -> None:
            # a launched server is seen to end on its own channel, at once; the stop script
            # (whose look naps 10 ms at a time) then waits no more and kills one still there
            waits, grace = launched.ended_within, grace_s
            try:
                if grace > 0 and waits is not None:
                    waits(grace)
                    grace = 0
                script = scripts.server_stop_script(pidfile, logfile, grace_s=grace, also=also)
                stopped = server.run_script(script, timeout_s=15)
            finally:
                launched.close()
            rider.stopped(stopped.stdout)
            if parsed is not None:
                parsed["server"] = parse_server_log(stopped.stdout.partition("\n@@nasplan:")[0])

        if parsed is not None and defer is not None:
            defer(stop)  # the measurement is in: the server's stop may come later
        else:
            stop()
    return result.stdout, parsed


@dataclass(frozen=True)
class OneOff:
    """A one-off server to start: its iperf3, port, and files on the host."""

    iperf3: str
    port: int
    pidfile: str
    logfile: str


def _start(server: Runner, scripts: ModuleType, one: OneOff, rider: Rider) -> Launched:
    """A daemon server, ready once the start script saw its port listening (iperf3 < 3.7,
    one whose version is unknown, Windows)."""
    pidfile, logfile = one.pidfile, one.logfile
    script = scripts.server_start_script(
        one.iperf3, one.port, pidfile, logfile, also=rider.start_text()
    )
    started = server.run_script(script, timeout_s=SERVER_READY_TIMEOUT_S + 10)
    rider.started(started.stdout)
    if not started.ok:
        reason = _excerpt(started.stderr + started.stdout) or f"exit status {started.exited}"
        if started.exited == PORT_IN_USE_EXIT:
            raise Iperf3Error(reason)
        server.run_script(scripts.server_stop_script(pidfile, logfile, grace_s=0), timeout_s=15)
        raise Iperf3Error(f"could not start the iperf3 server on {server.name}: {reason}")
    return Launched(started.stdout, None)


def _launch(server: Runner, launcher: Launcher, one: OneOff, rider: Rider) -> Launched:
    """The server in the foreground of its own channel, ready once it said it listens
    (``server`` and ``launcher``: one runner, seen as both)."""
    server_iperf3, port, pidfile, logfile = one.iperf3, one.port, one.pidfile, one.logfile
    script = iperf3_server.server_launch_script(
        server_iperf3, port, pidfile, logfile, also=rider.start_text()
    )
    # as long as the background start may take: its readiness wait plus the SSH round trip's
    limit_s = SERVER_READY_TIMEOUT_S + 10
    ends = launch_section_marker()
    launched = launcher.start_until(script, [READY_MARKER, ends], timeout_s=limit_s)
    # the rider's section ends at the launch section's line (one write: nothing of iperf3's
    # falls inside it); iperf3's own lines are the rest
    rider.started(launched.output)
    ended = launched.ended
    if ended is None:
        return launched
    # it did not listen: stop what may still run (a server that never said it listens)
    launched.close()
    server.run_script(iperf3_server.server_stop_script(pidfile, logfile, grace_s=0), timeout_s=15)
    if ended.exited == 124:
        reason = f"it did not listen on port {port} within {limit_s} s"
    else:
        check = server.run_script(iperf3_server.port_check_script(port), timeout_s=15)
        if check.exited == PORT_IN_USE_EXIT:
            raise Iperf3Error(_excerpt(check.stderr))
        said = _excerpt(_iperf3_lines(launched.output) + ended.stderr)
        reason = said or f"{server_iperf3} -s ended before it listened on port {port}"
    raise Iperf3Error(f"could not start the iperf3 server on {server.name}: {reason}")


def _iperf3_lines(output: str) -> str:
    """What iperf3 itself printed in a launch script's output: the lines before the first
    ``@@nasplan:`` section and those of the launch section (the rider's section is ours)."""
    head = output.split("@@nasplan:", 1)[0]
    return head + "\n" + split_sections(output).get(LAUNCH_SECTION, "")


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
    sleep: Callable[[float], None] = time.sleep,
    hooks: ClientHooks = (nothing, nothing),
    rider: Rider = NO_RIDER,
    defer: Defer | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run one iperf3 test: start a one-off server, run the client, always stop the server.

    Returns ``(raw client JSON text, parse() result + "server": parse_server_log())``; "server"
    is None for a server launched on its own channel (``server_iperf3_version`` >= 3.7 on a
    POSIX host whose runner is a Launcher): it keeps no JSON log.
    ``defer``: given the server's stop once the client's result is in, to run it later (the
    result's "server" is filled then); without it, or after a failure, the stop runs at once.
    Retries "server is busy" / "port in use" after BUSY_BACKOFF_S; raises Iperf3Error otherwise.
    ``hooks``: called once the server listens, just before the client, and once the client's
    result is in, before the server is stopped (the test's resource sampler waits for its start
    and is stopped there, its round trips overlapping the server's). ``rider``: shell text run
    in the server's start and stop scripts (the server host's sampler).
    """
    argv = client_argv(client_iperf3, address, params, iperf3_version=client_iperf3_version)
    return retry_when_busy(
        lambda n: _attempt(
            server,
            client,
            server_iperf3,
            argv,
            params,
            f"{token}-{n}",
            hooks,
            rider,
            defer,
            server_iperf3_version,
        ),
        sleep,
    )


T = TypeVar("T")


def retry_when_busy(attempt: Callable[[int], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``attempt(n)`` again after each of BUSY_BACKOFF_S while iperf3 says it is busy."""
    pauses_s = list(BUSY_BACKOFF_S)
    number = 0
    while True:
        try:
            return attempt(number)
        except Iperf3Error as exc:
            if not pauses_s or not is_server_busy(exc):
                raise
            sleep(pauses_s.pop(0))
        number += 1
