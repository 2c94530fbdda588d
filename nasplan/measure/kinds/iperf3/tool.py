"""iperf3: the client's argv, version rules, pure parsers of its ``-J`` output, its error.

The server's scripts are ``server`` (POSIX sh) and ``server_windows`` (PowerShell); one
repetition (a one-off server, the client, the server's stop) is
``nasplan.measure.kinds.iperf3.repetition``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from nasplan.errors import ToolError, UnknownOutput
from nasplan.measure.kinds.iperf3.server import LAUNCH_SINCE
from nasplan.measure.kinds.iperf3.server import server_start_script as server_start_script
from nasplan.measure.kinds.iperf3.server import server_stop_script as server_stop_script
from nasplan.measure.kinds.iperf3.server import temp_paths as temp_paths
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.tools.jsondoc import count, find_object, number

CONNECT_TIMEOUT_MS = 3000
# --connect-timeout appeared in iperf 3.2 (RELNOTES); older clients reject the option.
_CONNECT_TIMEOUT_SINCE = (3, 2)
# iperf 3.16 (RELNOTES): "multi-threaded: each stream runs in its own thread"; before, the -P
# streams of one process share one thread, so one CPU core may cap the result.
MULTI_THREADED_SINCE = (3, 16)
# What parse() reads: the layout of iperf3 3.0 to 3.19's -J output (tests/fixtures/iperf3/).
_KNOWN_JSON = "a JSON object with start and end.sum_received.bits_per_second (or end.sum)"
_BUSY_MARKERS = ("the server is busy", "is already in use")


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
    "per_stream",
    "congestion",
    "block_bytes",
    "local_address",
)

# DSCP names (RFC 2474 class selectors, RFC 2597 assured forwarding, RFC 3246 expedited
# forwarding) -> the code point; iperf3's -S takes the whole TOS byte: the code point << 2.
DSCP_NAMES: dict[str, int] = {
    **{f"CS{n}": 8 * n for n in range(8)},
    **{f"AF{c}{d}": 8 * c + 2 * d for c in range(1, 5) for d in range(1, 4)},
    "EF": 46,
}


class Iperf3Error(ToolError):
    """iperf3 failed; the message is iperf3's own (e.g. ``unable to connect to server: ...``).

    ``raw`` is the client output that carried the failure (worth saving), None when there was none.
    """

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


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


def launches(version: str | None) -> bool:
    """True when ``version`` is known and can run as a server on its own channel, saying when it
    listens (3.7: ``--forceflush``; ``iperf3_server.server_launch_script``)."""
    parsed = version_tuple(version)
    return parsed is not None and parsed >= LAUNCH_SINCE


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
    argv = [iperf3_path, "-J", "-c", address, "-p", str(params.port)]
    if params.bytes_total is not None:
        argv += ["-n", str(params.bytes_total)]
    else:
        argv += ["-t", str(params.duration_s)]
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
    if params.congestion:
        argv += ["-C", params.congestion]
    if params.length_bytes is not None:
        argv += ["-l", str(params.length_bytes)]
    if params.ip_version is not None:
        argv.append(f"-{params.ip_version}")
    if params.dscp is not None:
        argv += ["-S", str(params.dscp << 2)]
    return argv


def excerpt(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut after ``limit`` characters (what an error message quotes)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _find_document(raw: str) -> dict[str, Any] | None:
    """The iperf3 result object in ``raw``, skipping any text (or debug JSON) printed before it."""
    return find_object(
        raw, lambda obj: isinstance(obj.get("start"), dict), object_pairs_hook=_bidir_names
    )


# The sums iperf3 3.7 to 3.10 wrote twice with --bidir (esnet/iperf#952, #1196)
_REPEATED_SUMS = ("sum", "sum_sent", "sum_received")


def _bidir_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object of iperf3's, its repeated sums named as iperf3 3.11+ names them.

    With --bidir, iperf3 3.7 to 3.10 printed the reverse direction's sums (server -> client)
    under the same keys as the forward ones: a JSON reader keeps the last, the reverse, as if it
    were the forward direction. 3.11 named them ``*_bidir_reverse``; so does this, taking the
    block that says ``"sender": false`` (the reverse) when a sum key comes twice.
    """
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in _REPEATED_SUMS and key in found:
            earlier = found[key]
            reverse_is_later = not (isinstance(value, dict) and value.get("sender") is True)
            forward, reverse = (earlier, value) if reverse_is_later else (value, earlier)
            found[key] = forward
            found[f"{key}_bidir_reverse"] = reverse
        else:
            found[key] = value
    return found


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


def _positive(block: Mapping[str, Any], key: str) -> int | None:
    """A TCP_INFO figure of iperf3's, None when absent or 0 (0: not the sender's, not read)."""
    value = count(block, key)
    return value if value else None


def _per_stream(end: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Each TCP stream's sender side: its rate and what bounds one stream (rate <= window /
    RTT): ``max_snd_cwnd_bytes``, ``max_snd_wnd_bytes`` (the peer's advertised window: iperf3
    3.10+), ``min_rtt_us``/``mean_rtt_us``/``max_rtt_us`` (None where absent). Streams the
    client received on (-R: the server's figures are not in the client's output) are left out;
    None when none is left."""
    rows = []
    for stream in end.get("streams") or []:
        sent = stream.get("sender") if isinstance(stream, dict) else None
        # "sender": false (3.7+): the client received on it (-R, --bidir's reverse streams)
        if not isinstance(sent, dict) or sent.get("sender") is False:
            continue
        rows.append(
            {
                "bits_per_second": number(sent, "bits_per_second"),
                "retransmits": count(sent, "retransmits"),
                "max_snd_cwnd_bytes": _positive(sent, "max_snd_cwnd"),
                "max_snd_wnd_bytes": _positive(sent, "max_snd_wnd"),
                "min_rtt_us": _positive(sent, "min_rtt"),
                "mean_rtt_us": _positive(sent, "mean_rtt"),
                "max_rtt_us": _positive(sent, "max_rtt"),
            }
        )
    return rows or None


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
        if bidir:  # names of iperf3 >= 3.11 (3.7-3.10's repeated keys renamed: _bidir_names)
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


def _settings_used(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What iperf3 says it used: the sender's congestion control (``sender_tcp_congestion``,
    3.1+; None for UDP), the bytes a write or datagram carried (``test_start.blksize``), and
    the client's end of its first data connection (``start.connected``: the bound address, the
    family)."""
    start, end = doc.get("start") or {}, doc.get("end") or {}
    congestion = end.get("sender_tcp_congestion") if isinstance(end, dict) else None
    connected = start.get("connected") or [{}]
    local = connected[0].get("local_host") if isinstance(connected[0], dict) else None
    return {
        "congestion": str(congestion) if congestion else None,
        "block_bytes": count(start.get("test_start"), "blksize"),
        "local_address": str(local) if local else None,
    }


def _result_document(raw: str) -> dict[str, Any]:
    """The result object of ``raw``; Iperf3Error with iperf3's error, or saying that there is no
    JSON, or JSON of a layout nasplan does not know (in an UnknownOutput's words)."""
    doc = _find_document(raw)
    if doc is None:
        other = find_object(raw, lambda obj: True)
        if other is not None and not other.get("error"):
            raise Iperf3Error(str(UnknownOutput("iperf3 -J", _KNOWN_JSON, excerpt(raw))), raw)
        said = excerpt(raw) or "(empty)"
        raise Iperf3Error(f"no iperf3 JSON result in the output: {said}", raw or None)
    if doc.get("error"):
        raise Iperf3Error(str(doc["error"]), raw)
    return doc


def parse(raw: str) -> dict[str, Any]:
    """Parse ``iperf3 -J`` client output into a repetition dict (see module docs for the keys).

    Raises Iperf3Error with iperf3's message when the output holds an ``error`` or no result.
    Keys: the CONTRACT_KEYS of run.json, plus ``protocol``, ``iperf3_version``, ``streams``,
    ``omit_s``, ``tcp_mss_bytes``, ``per_stream`` (TCP: each stream's sender figures, see
    _per_stream), ``intervals`` (non-omitted, the client's own per-second view:
    the sending rate unless -R), and for --bidir ``reverse_*`` (the server -> client direction).
    """
    doc = _result_document(raw)
    start = doc["start"]
    found_end = doc.get("end")
    end: dict[str, Any] = found_end if isinstance(found_end, dict) else {}
    test_start = start.get("test_start") or {}
    udp = str(test_start.get("protocol", "TCP")).upper() == "UDP"
    # older iperf3 UDP results have only "sum" (sender counts, receiver jitter/loss)
    sent = end.get("sum_sent") or end.get("sum")
    received = end.get("sum_received") or end.get("sum")
    if not received or number(received, "bits_per_second") is None:
        version = f"iperf3 {_version(start) or 'of an unknown version'}"
        command = f"iperf3 -J ({version})"
        raise Iperf3Error(str(UnknownOutput(command, _KNOWN_JSON, json.dumps(end)[:80])), raw)
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
        "per_stream": None if udp else _per_stream(end),
        **_settings_used(doc),
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


def parse_client(stdout: str, stderr: str, host: str) -> dict[str, Any]:
    """parse() of a client run's output; with no JSON at all, the error quotes ``host``'s stderr
    (iperf3 3.12 exits 0 even on errors, its reason on stderr)."""
    try:
        return parse(stdout)
    except Iperf3Error as exc:
        if "no iperf3 JSON" in str(exc) and stderr.strip():
            raise Iperf3Error(f"{host}: {excerpt(stderr)}", exc.raw) from exc
        raise


def is_server_busy(error: Iperf3Error | str) -> bool:
    """True when the failure is another test holding the server or its port (worth a retry)."""
    text = str(error).lower()
    return any(marker in text for marker in _BUSY_MARKERS)
