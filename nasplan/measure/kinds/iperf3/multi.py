"""Parallel iperf3 before 3.16: one single-stream process per port, rates summed.

iperf3 before 3.16 runs all ``-P`` streams in one thread, so one CPU core caps the result.
Here N one-off servers listen on consecutive ports (one script starts them all, one stops them)
and one client script starts N clients with ``-P 1`` at once, printing each JSON after a marker
line. The repetition that runs them is ``nasplan.measure.kinds.iperf3.repetition.run_repetition``
(``processes``).
"""

from __future__ import annotations

import re
import secrets
import shlex
from typing import Any

from nasplan.hosts.lock import PRELUDE
from nasplan.measure.kinds.iperf3 import server as iperf3_server
from nasplan.measure.kinds.iperf3 import tool as iperf3

MARKER = "=== nasplan-iperf3-port "
_MARKER_LINE = re.compile(r"^=== nasplan-iperf3-port (?P<port>[0-9]+) ===$", re.MULTILINE)


def needs_processes(parallel: int, *versions: str | None) -> bool:
    """True when ``parallel`` > 1 and any end runs iperf3 older than 3.16 (unknown: False)."""
    return parallel > 1 and any(iperf3.single_threaded(version) for version in versions)


def client_script(argvs: list[list[str]], ports: list[int]) -> str:
    """POSIX sh: start every client in the background, wait, print each output after a marker.

    The outputs' directory and each client are registered in the host's lock: should the run
    die before the script removes the directory (its channel gone, the script ends at its next
    write), the next run, its ``--resume`` or ``nasplan restore`` removes it and stops them."""
    lines = [f"dir=/tmp/nasplan-iperf3-multi.{secrets.token_hex(6)}", PRELUDE]
    # recorded in the lock before it is made
    lines += ['nasplan_register - - "$dir" || exit 1', 'mkdir -m 700 -- "$dir" || exit 1']
    for argv, port in zip(argvs, ports, strict=True):
        lines.append(f'{shlex.join(argv)} > "$dir/{port}.json" 2>&1 &')
        # the lock's clean-up stops a PID only while its command line holds these arguments
        lines.append(f"nasplan_register $! {shlex.quote(' '.join(argv[1:]))}")
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
    streams = [row for p in parts for row in p.get("per_stream") or []]
    result["per_stream"] = streams or None
    return result


def _all(scripts: list[str]) -> str:
    """One script running each of ``scripts`` in its own subshell; stops at the first failure."""
    return "\n".join(f"(\n{script}\n) || exit $?" for script in scripts) + "\n"


def temp_paths(token: str, ports: list[int]) -> list[tuple[str, str]]:
    """Each server's ``(pidfile, logfile)`` under /tmp, in the order of ``ports``."""
    return [iperf3_server.temp_paths(token, port) for port in ports]


def servers_start_script(server_iperf3: str, ports: list[int], token: str) -> str:
    """POSIX sh starting a one-off server on each of ``ports``; stops at the first that fails
    (exit 3: its port is in use, as ``iperf3_server.server_start_script``)."""
    files = temp_paths(token, ports)
    return _all(
        [
            iperf3_server.server_start_script(server_iperf3, port, pidfile, logfile)
            for port, (pidfile, logfile) in zip(ports, files, strict=True)
        ]
    )


def servers_stop_script(ports: list[int], token: str, *, grace_s: float) -> str:
    """POSIX sh stopping every server of ``servers_start_script`` still there."""
    stops = [
        iperf3_server.server_stop_script(pidfile, logfile, grace_s=grace_s)
        for pidfile, logfile in temp_paths(token, ports)
    ]
    return "\n".join(f"(\n{script}\n)" for script in stops)


def parse(raw: str, ports: list[int]) -> dict[str, Any]:
    """The marker-separated output of ``client_script`` -> one combined parse() result; raises
    Iperf3Error naming the port of a client that failed."""
    outputs = split(raw)
    parts = []
    for port in ports:
        try:
            parts.append(iperf3.parse(outputs.get(port, "")))
        except iperf3.Iperf3Error as exc:
            raise iperf3.Iperf3Error(f"port {port}: {exc}", raw or None) from exc
    return combine(parts)
