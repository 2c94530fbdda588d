"""The iperf3 kind's section of report.md (``section.md.j2`` beside it: *Details*): each test's
path, its median against the path's maximum, and each repetition; and what the iperf3 tests add
to *How the numbers were computed*. From run.json alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from nasplan.analysis import FRAME_OVERHEAD_BYTES, theoretical_udp_bits_per_second
from nasplan.measure import kinds
from nasplan.measure.kind import DASH, Numbers, Record

TCP_RATE = (
    "**Rate** of a TCP repetition: what the receiver got (iperf3's `sum_received`), not what the "
    'sender pushed (shown as "Sent").'
)
UDP_RATE = (
    "**Rate** of a UDP repetition: what arrived (iperf3's receiver figures); loss and jitter are "
    'the receiver\'s; "Sent" is what the client offered.'
)
MEDIAN = (
    " Retransmits are the total over them; CPU use is the median of iperf3's client "
    "(`host_total`) and server (`remote_total`) figures."
)
UDP_MAXIMUM = (
    "**UDP maximum**: the payload rate of full-size UDP datagrams over IPv4: MTU − 28 bytes (20 "
    "IPv4 + 8 UDP) for the same bytes on the wire."
)


def _udp_maximum(path: Mapping[str, Any]) -> float | None:
    """The path's UDP maximum (full-size datagrams), None when its speed or MTU is unknown."""
    speed, mtu = path.get("speed_bits_per_second"), path.get("mtu_bytes")
    if not speed or not mtu or path.get("framing", "ethernet") not in FRAME_OVERHEAD_BYTES:
        return None
    return theoretical_udp_bits_per_second(speed, mtu, path.get("framing") or "ethernet")


def _path_label(params: Mapping[str, Any], path: Mapping[str, Any] | None = None) -> str:
    """``pc → nas.lan (198.18.0.10)``; a test without ``target:`` recorded by an older nasplan
    as ``?`` is named by the server's interface that holds the address (``nas eth0``)."""
    client, target, address = params.get("client"), params.get("target"), params.get("address")
    if not target or target == "?":
        nic = (path or {}).get("server_interface")
        server = params.get("server")
        target = f"{server} {nic}" if server and nic else server
    to = target or address or DASH
    if address and address != target:
        to = f"{to} ({address})"
    return f"{client} → {to}" if client else to


def _sender(params: Mapping[str, Any]) -> str:
    if params.get("bidir"):
        return "both (--bidir)"
    if params.get("reverse"):
        return f"{params.get('server')} (-R)"
    return str(params.get("client", DASH))


def _udp(test: Record) -> bool:
    return str((test.get("params") or {}).get("protocol") or "tcp").lower() == "udp"


def _test(test: Record) -> dict[str, Any]:
    """One test as its section shows it (``test`` with the report's ``heading`` and ``results``)."""
    params = test.get("params") or {}
    path = test.get("path") or {}
    summary = test.get("summary") or {}
    reps = test.get("repetitions", [])
    return {
        "id": test["id"],
        "heading": test["heading"],
        "udp": _udp(test),
        "udp_maximum": _udp_maximum(path),
        "results": test["results"],
        "status": test["status"],
        "error": test.get("error"),
        "path_label": _path_label(params, path),
        "sender": _sender(params),
        "parallel": params.get("parallel", 1),
        "protocol": str(params.get("protocol", "tcp")).upper(),
        "params": params,
        "path": path,
        "summary": summary,
        "median": summary.get("median"),
        "wide_spread": bool(summary.get("wide_spread")),
        "repetitions": [
            {**r, "raw_link": quote(r["raw_file"]) if r.get("raw_file") else None} for r in reps
        ],
        "failed_repetitions": [r for r in reps if r.get("status") != "ok"],
    }


def view(tests: Sequence[Record]) -> dict[str, Any]:
    """What ``section.md.j2`` shows: each test, and what its first line adds after the path."""
    return {
        "tests": [_test(test) for test in tests],
        "details": {t["id"]: kinds.readout(t).detail_text(t) for t in tests},
    }


def numbers(tests: Sequence[Record]) -> Numbers:
    """What a rate, a median and the UDP maximum are for iperf3's tests; the spread they call
    wide."""
    udp = any(_udp(test) for test in tests)
    thresholds = {(test.get("summary") or {}).get("wide_spread_threshold") for test in tests} - {
        None
    }
    return Numbers(
        rates=(TCP_RATE, UDP_RATE) if udp else (TCP_RATE,),
        median=MEDIAN,
        maxima=(UDP_MAXIMUM,) if udp else (),
        spread_thresholds=tuple(sorted(float(t) for t in thresholds if t is not None)),
    )
