"""Latency: ping argv, a pure parser of iputils and busybox ping output, a path-MTU probe."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nasplan.errors import NasplanError
from nasplan.remote.runner import Runner

# IPv4 (20) + ICMP (8) headers: a DF ping of MTU - 28 payload bytes fills one MTU-sized packet.
ICMP_IPV4_HEADER_BYTES = 28
MIN_PROBE_MTU_BYTES = 576
# IPv4's total-length field is 16 bits: no packet is larger, whatever a NIC's MTU (Linux's
# loopback has 65536), so a DF probe expects at most this much.
IPV4_MAX_PACKET_BYTES = 65535

_SUMMARY = re.compile(
    r"(?P<tx>[0-9]+) packets transmitted, (?P<rx>[0-9]+) (?:packets )?received,"
    r"(?: \+(?P<errors>[0-9]+) errors,)?(?: \+[0-9]+ duplicates,)? (?P<loss>[0-9.]+)% packet loss"
)
# iputils: "rtt min/avg/max/mdev = a/b/c/d ms"; busybox: "round-trip min/avg/max = a/b/c ms"
_RTT = re.compile(
    r"(?:rtt|round-trip) min/avg/max(?:/mdev)? = "
    r"(?P<min>[0-9.]+)/(?P<avg>[0-9.]+)/(?P<max>[0-9.]+)(?:/(?P<mdev>[0-9.]+))? ms"
)
_LOCAL_MTU = re.compile(r"message too long, mtu=(?P<mtu>[0-9]+)")
_ERROR_LINE = re.compile(r"^ping: (?P<text>.+)$", re.MULTILINE)


class PingError(NasplanError):
    """ping printed no statistics (bad option, unknown host, refused by the kernel)."""


@dataclass(frozen=True, kw_only=True)
class PingParams:
    """How one ping run is made; ``payload_bytes`` + ``dont_fragment`` make an MTU probe."""

    count: int = 10
    interval_s: float | None = 0.2
    reply_timeout_s: int = 1
    payload_bytes: int | None = None
    dont_fragment: bool = False

    def __post_init__(self) -> None:
        if self.count < 1 or self.reply_timeout_s < 1:
            raise ValueError("ping needs count >= 1 and reply_timeout_s >= 1")


def ping_argv(ping_path: str, address: str, params: PingParams) -> list[str]:
    """``[ping, -n, -c, 10, -i, 0.2, -W, 1, (-M do -s N), address]``; -M is iputils only."""
    argv = [ping_path, "-n", "-c", str(params.count)]
    if params.interval_s is not None:
        argv += ["-i", f"{params.interval_s:g}"]
    argv += ["-W", str(params.reply_timeout_s)]
    if params.dont_fragment:
        argv += ["-M", "do"]
    if params.payload_bytes is not None:
        argv += ["-s", str(params.payload_bytes)]
    argv.append(address)
    return argv


def timeout_s(params: PingParams) -> float:
    """How long a ping run may take before it is killed."""
    return params.count * ((params.interval_s or 1.0) + params.reply_timeout_s) + 10


def parse(raw: str) -> dict[str, Any]:
    """ping output -> ``{"packets", "received", "lost_percent", "errors", "rtt_min_ms",
    "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms", "local_mtu_bytes", "messages"}``.

    RTTs are None when no reply came (and mdev on busybox, which does not print it);
    ``local_mtu_bytes`` is the MTU the kernel named when a DF packet was too big to send.
    Raises PingError when there is no statistics line at all.
    """
    messages = sorted(set(_ERROR_LINE.findall(raw)))
    summary = _SUMMARY.search(raw)
    if summary is None:
        text = "; ".join(messages) or " ".join(raw.split())[:200] or "(no output)"
        raise PingError(f"ping printed no statistics: {text}")
    rtt = _RTT.search(raw)
    local_mtu = _LOCAL_MTU.search(raw)

    def ms(key: str) -> float | None:
        value = rtt.group(key) if rtt else None
        return float(value) if value is not None else None

    return {
        "packets": int(summary["tx"]),
        "received": int(summary["rx"]),
        "lost_percent": float(summary["loss"]),
        "errors": int(summary["errors"] or 0),
        "rtt_min_ms": ms("min"),
        "rtt_avg_ms": ms("avg"),
        "rtt_max_ms": ms("max"),
        "rtt_mdev_ms": ms("mdev"),
        "local_mtu_bytes": int(local_mtu["mtu"]) if local_mtu else None,
        "messages": messages,
    }


def run_ping(
    runner: Runner, ping_path: str, address: str, params: PingParams
) -> tuple[str, dict[str, Any]]:
    """Run ping once on ``runner``: ``(raw output, parse() result)``; raises PingError."""
    result = runner.run(ping_argv(ping_path, address, params), timeout_s=timeout_s(params))
    raw = result.stdout + result.stderr
    return raw, parse(raw)


def _passes(probe: Callable[[int], dict[str, Any]], mtu_bytes: int) -> bool:
    return bool(probe(mtu_bytes)["received"] > 0)


def probe_path_mtu(
    runner: Runner, ping_path: str, address: str, expected_mtu_bytes: int
) -> dict[str, Any]:
    """The largest packet that crosses the path with don't-fragment set, up to the expected MTU.

    One probe when the expected MTU passes; else a binary search down to MIN_PROBE_MTU_BYTES.
    An MTU above IPV4_MAX_PACKET_BYTES (a loopback's) expects the largest IPv4 packet.
    Returns ``{"expected_mtu_bytes", "path_mtu_bytes" (None: not even the minimum passed),
    "ok" (path MTU == expected), "probes", "local_mtu_bytes"}``; raises PingError when ping
    cannot send DF probes at all (busybox ping has no -M).
    """
    expected_mtu_bytes = min(expected_mtu_bytes, IPV4_MAX_PACKET_BYTES)
    probes: list[dict[str, Any]] = []

    def probe(mtu_bytes: int) -> dict[str, Any]:
        params = PingParams(
            count=2,
            interval_s=0.2,
            payload_bytes=mtu_bytes - ICMP_IPV4_HEADER_BYTES,
            dont_fragment=True,
        )
        _, parsed = run_ping(runner, ping_path, address, params)
        probes.append({"mtu_bytes": mtu_bytes, "received": parsed["received"]})
        local = parsed["local_mtu_bytes"]
        if local is not None:
            found["local_mtu_bytes"] = local
        return parsed

    found: dict[str, Any] = {"local_mtu_bytes": None}
    path_mtu: int | None = None
    if _passes(probe, expected_mtu_bytes):
        path_mtu = expected_mtu_bytes
    elif _passes(probe, MIN_PROBE_MTU_BYTES):
        # invariant: low passes, high does not
        low, high = MIN_PROBE_MTU_BYTES, expected_mtu_bytes
        local = found["local_mtu_bytes"]
        if local is not None and low < local < high:
            # nothing larger than the sending NIC's own MTU can leave the host
            if _passes(probe, local):
                low = high = local
            else:
                high = local
        while high - low > 1:
            middle = (low + high) // 2
            if _passes(probe, middle):
                low = middle
            else:
                high = middle
        path_mtu = low
    return {
        "expected_mtu_bytes": expected_mtu_bytes,
        "path_mtu_bytes": path_mtu,
        "ok": path_mtu == expected_mtu_bytes,
        "probes": probes,
        "local_mtu_bytes": found["local_mtu_bytes"],
    }
