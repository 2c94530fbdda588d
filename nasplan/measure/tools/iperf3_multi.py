"""Parallel iperf3 before 3.16: one single-stream process per port, rates summed.

iperf3 before 3.16 runs all ``-P`` streams in one thread, so one CPU core caps the result.
Here N one-off servers listen on consecutive ports and one client script starts N clients
with ``-P 1`` at once (one round trip), printing each JSON after a marker line.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import time
from collections.abc import Callable
from typing import Any

from nasplan.measure.tools import iperf3
from nasplan.measure.tools.iperf3_server import PORT_IN_USE_EXIT, SERVER_READY_TIMEOUT_S
from nasplan.runner import Runner

MARKER = "=== nasplan-iperf3-port "
_MARKER_LINE = re.compile(r"^=== nasplan-iperf3-port (?P<port>[0-9]+) ===$", re.MULTILINE)


def needs_processes(parallel: int, *versions: str | None) -> bool:
    """True when ``parallel`` > 1 and any end runs iperf3 older than 3.16 (unknown: False)."""
    return parallel > 1 and any(iperf3.single_threaded(version) for version in versions)


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


def _all(scripts: list[str]) -> str:
    """One script running each of ``scripts`` in its own subshell; stops at the first failure."""
    return "\n".join(f"(\n{script}\n) || exit $?" for script in scripts) + "\n"


def _attempt(
    server: Runner,
    client: Runner,
    server_iperf3: str,
    argvs: list[list[str]],
    single: list[iperf3.Iperf3Params],
    params: iperf3.Iperf3Params,
    token: str,
    hooks: iperf3.ClientHooks,
) -> tuple[str, dict[str, Any]]:
    ports = [one.port for one in single]
    files = [iperf3.temp_paths(token, port) for port in ports]
    # One round trip starts every server, one runs every client, one stops every server.
    starts = [
        iperf3.server_start_script(server_iperf3, port, pidfile, logfile)
        for port, (pidfile, logfile) in zip(ports, files, strict=True)
    ]
    started = server.run_script(_all(starts), timeout_s=SERVER_READY_TIMEOUT_S * len(ports) + 10)
    raw = ""
    try:
        if not started.ok:
            reason = " ".join((started.stderr + started.stdout).split())[:200]
            if started.exited == PORT_IN_USE_EXIT:
                raise iperf3.Iperf3Error(reason)  # "is already in use": retried
            raise iperf3.Iperf3Error(
                f"could not start the iperf3 servers on {server.name}: {reason}"
            )
        timeout_s = params.duration_s + params.omit_s + iperf3.CLIENT_TIMEOUT_MARGIN_S
        hooks[0]()
        raw = client.run_script(client_script(argvs, ports), timeout_s=timeout_s).stdout
        outputs = split(raw)
        parts = []
        for port in ports:
            try:
                parts.append(iperf3.parse(outputs.get(port, "")))
            except iperf3.Iperf3Error as exc:
                raise iperf3.Iperf3Error(f"port {port}: {exc}", raw or None) from exc
        hooks[1]()
        return raw, combine(parts)
    finally:
        grace_s = 2.0 if raw else 0
        stop = [iperf3.server_stop_script(pid, log, grace_s=grace_s) for pid, log in files]
        server.run_script("\n".join(f"(\n{script}\n)" for script in stop), timeout_s=30)


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
    sleep: Callable[[float], None] = time.sleep,
    hooks: iperf3.ClientHooks = (iperf3.nothing, iperf3.nothing),
) -> tuple[str, dict[str, Any]]:
    """Run ``params.parallel`` single-stream clients against as many one-off servers, summed.

    Returns ``(raw marker-separated client JSON, combine() result)``; raises Iperf3Error.
    Every server started is stopped in ``finally``; a busy server or a taken port is retried.
    ``hooks``: as iperf3.run_repetition's.
    """
    ports = [params.port + i for i in range(params.parallel)]
    single = [dataclasses.replace(params, parallel=1, port=port) for port in ports]
    argvs = [
        iperf3.client_argv(client_iperf3, address, one, iperf3_version=client_iperf3_version)
        for one in single
    ]
    return iperf3.retry_when_busy(
        lambda n: _attempt(
            server, client, server_iperf3, argvs, single, params, f"{token}-{n}", hooks
        ),
        sleep,
    )
