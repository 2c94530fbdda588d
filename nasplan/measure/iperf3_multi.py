"""Parallel iperf3 before 3.16: one single-stream process per port, rates summed.

iperf3 before 3.16 runs all ``-P`` streams in one thread, so one CPU core caps the result.
Here N one-off servers listen on consecutive ports and one client script starts N clients
with ``-P 1`` at once (one round trip), printing each JSON after a marker line.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from typing import Any

from nasplan.measure import iperf3
from nasplan.measure.iperf3_server import SERVER_READY_TIMEOUT_S
from nasplan.runner import Runner

# iperf 3.16 (RELNOTES): "multi-threaded: each stream runs in its own thread".
MULTI_THREADED_SINCE = (3, 16)
MARKER = "=== nasplan-iperf3-port "
_MARKER_LINE = re.compile(r"^=== nasplan-iperf3-port (?P<port>[0-9]+) ===$", re.MULTILINE)


def needs_processes(parallel: int, *versions: str | None) -> bool:
    """True when ``parallel`` > 1 and any end runs iperf3 older than 3.16 (unknown: False)."""
    if parallel <= 1:
        return False
    known = [v for v in (iperf3.version_tuple(x) for x in versions) if v is not None]
    return any(v < MULTI_THREADED_SINCE for v in known)


def client_script(argvs: list[list[str]], ports: list[int]) -> str:
    """POSIX sh: start every client in the background, wait, print each output after a marker."""
    lines = ["dir=$(mktemp -d /tmp/nasplan-iperf3-multi.XXXXXX) || exit 1"]
    for argv, port in zip(argvs, ports, strict=True):
        lines.append(f'{shlex.join(argv)} > "$dir/{port}.json" 2>&1 &')
    lines.append("wait")
    for port in ports:
        lines.append(f'echo "{MARKER}{port} ==="; cat "$dir/{port}.json"; echo')
    lines.append('rm -rf "$dir"')
    return "\n".join(lines) + "\n"


def split(raw: str) -> dict[int, str]:
    """Marker-separated client outputs -> port -> that client's raw output."""
    found = list(_MARKER_LINE.finditer(raw))
    ends = [m.start() for m in found[1:]] + [len(raw)]
    return {int(m["port"]): raw[m.end() : end] for m, end in zip(found, ends, strict=True)}


def _sum(values: list[Any]) -> Any:
    numbers = [v for v in values if isinstance(v, (int, float))]
    return sum(numbers) if len(numbers) == len(values) and numbers else None


def combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the parse() results of the single-stream clients into one repetition result.

    Rates, bytes and retransmits add up; duration and CPU are the largest of them;
    interval rates add up second by second.
    """
    first = parts[0]
    result = dict(first)
    for key in ("bits_per_second", "sent_bits_per_second", "received_bits_per_second"):
        result[key] = _sum([p.get(key) for p in parts])
    for key in ("bytes", "retransmits", "lost_packets", "packets"):
        result[key] = _sum([p.get(key) for p in parts])
    for key in ("duration_s", "cpu_client_percent", "cpu_server_percent"):
        values = [p[key] for p in parts if isinstance(p.get(key), (int, float))]
        result[key] = max(values) if values else None
    rows = [p.get("intervals") or [] for p in parts]
    result["intervals"] = [
        {**same[0], "bits_per_second": _sum([r.get("bits_per_second") for r in same])}
        for same in zip(*rows, strict=False)
    ]
    result["streams"] = len(parts)
    result["processes"] = len(parts)
    return result


def run_repetition(
    server: Runner,
    client: Runner,
    server_iperf3: str,
    client_iperf3: str,
    address: str,
    params: iperf3.Iperf3Params,
    token: str,
    *,
    client_iperf3_version: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run ``params.parallel`` single-stream clients against as many one-off servers, summed.

    Returns ``(raw marker-separated client JSON, combine() result)``; raises Iperf3Error.
    Every server started is stopped in ``finally``.
    """
    ports = [params.port + i for i in range(params.parallel)]
    single = [dataclasses.replace(params, parallel=1, port=port) for port in ports]
    started: list[tuple[str, str]] = []
    raw = ""
    try:
        for one in single:
            pidfile, logfile = iperf3.temp_paths(token, one.port)
            result = server.run_script(
                iperf3.server_start_script(server_iperf3, one.port, pidfile, logfile),
                timeout_s=SERVER_READY_TIMEOUT_S + 10,
            )
            started.append((pidfile, logfile))
            if not result.ok:
                reason = " ".join((result.stderr + result.stdout).split())[:200]
                raise iperf3.Iperf3Error(f"iperf3 server on port {one.port}: {reason}")
        argvs = [
            iperf3.client_argv(client_iperf3, address, one, iperf3_version=client_iperf3_version)
            for one in single
        ]
        timeout_s = params.duration_s + params.omit_s + iperf3.CLIENT_TIMEOUT_MARGIN_S
        raw = client.run_script(client_script(argvs, ports), timeout_s=timeout_s).stdout
        outputs = split(raw)
        parts = []
        for port in ports:
            try:
                parts.append(iperf3.parse(outputs.get(port, "")))
            except iperf3.Iperf3Error as exc:
                raise iperf3.Iperf3Error(f"port {port}: {exc}", raw or None) from exc
        return raw, combine(parts)
    finally:
        for pidfile, logfile in started:
            server.run_script(
                iperf3.server_stop_script(pidfile, logfile, grace_s=2.0 if raw else 0),
                timeout_s=15,
            )
