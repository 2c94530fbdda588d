"""The iperf3 test kind: a plan test -> repetitions on real hosts -> a run.json test record."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import (
    CPU_BOUND_PERCENT,
    MIN_TRUSTED_S,
    efficiency,
    summarize,
    theoretical_udp_bits_per_second,
)
from nasplan.errors import CannotStart
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import space, timeline, together
from nasplan.measure.capacity import NETWORK, Capacity, Evidence
from nasplan.measure.estimate import Estimate, parts, path_rate
from nasplan.measure.kind import DASH, Caveat, Kind, Needs, OneCore, Record, RunContext, Section
from nasplan.measure.kinds.iperf3 import clients as iperf3_together
from nasplan.measure.kinds.iperf3 import runs as iperf3_runs
from nasplan.measure.kinds.iperf3 import streams, udp, view
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.record import finish, new_record, path_params
from nasplan.measure.series import Series, by_direction, single
from nasplan.measure.tools import loaded_ping
from nasplan.units import format_bits_per_second, format_size, parse_rate, parse_size

# Each test of a plan gets its own server port unless it names one: tests never share a server.
FIRST_PORT = 5201
# a repetition's own start and end besides its data: the one-off server started and stopped
STEP_S = 0.05
# a part's own start and end besides its repetitions: its samplers started and stopped
PART_S = 0.05
# Workload parameters compared across as a dimension of their own, labelled or not: 1 vs 4 streams
# on one path says whether one stream is limited (its window, one CPU core) or the link.
STREAM_PARAMS = frozenset({"parallel", "parallel_mode"})
RATE_ASKED, UDP_MAXIMUM = "rate asked", "UDP maximum"
# the slowest rate a `bytes` repetition is waited for before it is given up
BYTES_FLOOR_BITS_PER_SECOND = 10_000_000


def _window_bytes(text: str) -> int:
    factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * factor


def _time_bound_s(total_bytes: int) -> int:
    """How long a ``bytes`` repetition may take: its bytes at BYTES_FLOOR_BITS_PER_SECOND, at
    least 10 s (iperf3 has no time limit with -n; the client is given up past it)."""
    return max(10, math.ceil(total_bytes * 8 / BYTES_FLOOR_BITS_PER_SECOND))


def _length_text(length: int, before_noun: bool = False) -> str:
    """``16 KiB``, ``64 bytes`` (``64-byte`` before a noun)."""
    if length >= 1024 and length % 1024 == 0:
        return f"{length // 1024} KiB"
    return f"{length}-byte" if before_noun else f"{length} bytes"


def _options(params: Mapping[str, Any]) -> list[str]:
    """The iperf3 options a test asked for beyond rate and streams, as its details name them:
    ``-C reno``, ``64-byte datagrams (-l 64)``, ``-B 198.18.0.2``, ``IPv6 only (-6)``,
    ``DSCP 46 (EF)``, ``64 MiB each (-n)``."""
    found = []
    if params.get("congestion"):
        found.append(f"congestion control {params['congestion']} (-C)")
    length = params.get("length_bytes")
    if length:
        what = "datagrams" if _udp({"params": params}) else "writes"
        found.append(f"{_length_text(int(length), True)} {what} (-l {length})")
    if params.get("bind_address"):
        found.append(f"bound to {params['bind_address']} (-B)")
    if params.get("ip_version"):
        found.append(f"IPv{params['ip_version']} only (-{params['ip_version']})")
    dscp = params.get("dscp")
    if dscp is not None:
        names = [n for n, code in iperf3.DSCP_NAMES.items() if code == dscp]
        found.append(f"DSCP {dscp}{f' ({names[0]})' if names else ''} (-S {int(dscp) << 2})")
    if params.get("bytes_total"):
        found.append(f"{format_size(int(params['bytes_total']))} each (-n)")
    return found


def _under_load_also(record: Record) -> str | None:
    """``RTT +10.5 ms under load (0.31 -> 10.8 ms)`` of a latency_under_load test."""
    found = record.get("latency_under_load") or {}
    idle, loaded = found.get("idle_rtt_median_ms"), found.get("loaded_rtt_median_ms")
    if idle is None or loaded is None:
        return None
    return f"RTT {loaded - idle:+.1f} ms under load ({idle:.2f} -> {loaded:.2f} ms)"


def _used(reps: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    return sorted({str(r[key]) for r in reps if r.get(key) is not None})


def _series(rep: dict[str, Any], params: Iperf3Params) -> dict[str, Any] | None:
    """A repetition's per-second rates from iperf3's own intervals, on the test's clock."""
    if rep["status"] != "ok":
        return None
    t_s, rates = timeline.iperf3_points(
        rep.get("interval_bits_per_second") or [], rep["started_s"], params.omit_s
    )
    return timeline.series(
        repetition=rep["index"],
        direction="reverse" if params.reverse else None,
        source="iperf3",
        t_s=t_s,
        bits_per_second=rates,
        started_s=rep["started_s"],
        detect_fall=False,
    )


def _udp(record: Record) -> bool:
    return str((record.get("params") or {}).get("protocol") or "tcp").lower() == "udp"


def _udp_maximum(path: Mapping[str, Any]) -> float | None:
    speed, mtu = path.get("speed_bits_per_second"), path.get("mtu_bytes")
    if not speed or not mtu:
        return None
    try:
        return theoretical_udp_bits_per_second(speed, mtu, path.get("framing") or "ethernet")
    except ValueError:
        return None


def _median_of(reps: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in reps if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def _udp_also(reps: Sequence[Mapping[str, Any]], per_packet: bool = False) -> str:
    """Sent, loss, jitter; ``per_packet`` (a test that set its datagrams' length): packets/s."""
    packets = sum(r.get("packets") or 0 for r in reps)
    lost = sum(r.get("lost_packets") or 0 for r in reps)
    sent, jitter = _median_of(reps, "sent_bits_per_second"), _median_of(reps, "jitter_ms")
    parts = [f"sent {format_bits_per_second(sent)}" if sent is not None else None]
    seconds = sum(r.get("duration_s") or 0 for r in reps if r.get("packets"))
    if per_packet and packets and seconds:
        parts.append(f"{packets / seconds:,.0f} packets/s")
    parts.append(f"loss {lost / packets * 100:.2f} % ({lost} of {packets})" if packets else None)
    parts.append(f"jitter {jitter:.3f} ms" if jitter is not None else None)
    return "; ".join(p for p in parts if p)


def _together_verdict(record: Record) -> dict[str, Any]:
    """Each direction's verdict of clients at once (``nasplan.measure.together.verdict``)."""
    params, path = record.get("params") or {}, record.get("path") or {}
    paths = record.get("paths") or {}
    server = str(params.get("server"))
    cpu = ((record.get("resources") or {}).get(server) or {}).get("cpu_busy_percent_median")
    found = {}
    for one in KIND.series(record):
        shares = ((record.get("together") or {}).get(one.direction or "")) or {}
        median = one.summary.get("median")
        if not shares.get("clients") or not isinstance(median, (int, float)):
            continue
        found[one.direction or "forward"] = together.verdict(
            what=f"iperf3 {one.direction}",
            aggregate_bits_per_second=float(median),
            nas_link_bits_per_second=path.get("theoretical_bits_per_second"),
            nas_link_name=str(path.get("server_interface") or "link"),
            clients={
                c: (rate, (paths.get(c) or {}).get("theoretical_bits_per_second"))
                for c, rate in shares["clients"].items()
            },
            nas_cpu_percent=cpu if isinstance(cpu, (int, float)) else None,
        )
    return found


class Iperf3(Kind[Iperf3Params]):
    """``kind: iperf3``: what the network carries between two hosts, TCP or UDP, in bit/s."""

    name = "iperf3"
    phrase = "TCP throughput with iperf3"
    groups = ("iperf3 TCP", "iperf3 UDP")
    path_rate = True
    short_start = "TCP slow start"
    # iperf3 times its data phase alone: a ratio of short runs still compares rates
    short_skews_ratio = False
    across_params = STREAM_PARAMS
    section = Section(__name__, view.view, view.numbers)
    settles_itself = True

    def settings(self, test: PlanTest) -> Iperf3Params:
        """The measurement's parameters (the port: FIRST_PORT + the test's index)."""
        s = test.settings
        bitrate, window, length = s.get("bitrate"), s.get("window"), s.get("length")
        total = None if s.get("bytes") is None else parse_size(s["bytes"])
        dscp = s.get("dscp")
        return Iperf3Params(
            duration_s=_time_bound_s(total) if total else int(s.get("duration_s", 10)),
            omit_s=int(s.get("omit_s", 0)),
            parallel=int(s.get("parallel", 1)),
            reverse=bool(s.get("reverse", False)),
            bidir=bool(s.get("bidir", False)),
            protocol=str(s.get("protocol", "tcp")),
            udp_bitrate_bits_per_second=None if bitrate is None else parse_rate(bitrate),
            zerocopy=bool(s.get("zerocopy", False)),
            window_bytes=_window_bytes(window) if window else None,
            mss_bytes=s.get("mss"),
            port=int(s.get("port", FIRST_PORT + test.index)),
            bind_address=s.get("bind"),
            congestion=s.get("congestion"),
            length_bytes=None if length is None else _window_bytes(str(length)),
            ip_version=s.get("ip_version"),
            bytes_total=total,
            dscp=iperf3.DSCP_NAMES[dscp.upper()] if isinstance(dscp, str) else dscp,
            latency_under_load=bool(s.get("latency_under_load", False)),
        )

    def needs(self, test: PlanTest, s: Iperf3Params) -> Needs:
        """iperf3 on both ends (every client's); ping on the client for latency under load."""
        client: tuple[str, ...] = ("iperf3", "ping") if s.latency_under_load else ("iperf3",)
        return {test.server: ("iperf3",), **{c: client for c in test.clients}}

    def describe(self, test: PlanTest, s: Iperf3Params) -> str:
        streams = f", {s.parallel} streams" if s.parallel > 1 else ""
        protocol, target = s.protocol.upper(), test.target.label()
        client = f"{' + '.join(test.clients)} at once" if len(test.clients) > 1 else test.client
        if s.bidir:
            flow = f"iperf3 {protocol} {client} <-> {target} (--bidir)"
        elif s.reverse:
            flow = f"iperf3 {protocol} {target} -> {client} (-R)"
        else:
            flow = f"iperf3 {protocol} {client} -> {target}"
        bitrate = s.udp_bitrate_bits_per_second
        rate = f" at {format_bits_per_second(bitrate)}" if bitrate else ""
        if s.protocol == "udp" and bitrate is None:
            rate = " at iperf3's default 1 Mbit/s (set `bitrate`)"
        elif s.protocol == "udp" and bitrate == 0:
            rate = " as fast as it can"
        each = format_size(s.bytes_total) if s.bytes_total else f"{s.duration_s} s"
        asked = {**dataclasses.asdict(s), "bytes_total": None}  # said as each repetition's
        options = "".join(f", {o}" for o in _options(asked))
        options += ", pinged idle and under load" if s.latency_under_load else ""
        return f"{flow}{rate}{streams}{options}, {test.repetitions_text} x {each}"

    def estimate(self, test: PlanTest, s: Iperf3Params, plan: Plan) -> Estimate:
        said: tuple[str, ...] = ()
        data_s: float = s.duration_s
        if s.bytes_total:  # -n: its bytes at the path's rate
            bits, assumed = path_rate(plan, test)
            data_s, said = s.bytes_total * 8 / bits, (assumed.replace("copies", "bytes"),)
        each_s = data_s + s.omit_s + STEP_S
        if s.latency_under_load:  # the idle pings before each repetition
            each_s += loaded_ping.IDLE_COUNT * loaded_ping.INTERVAL_S
        return Estimate(parts(plan, test) * PART_S + each_s * test.repetitions, said)

    def run(self, test: PlanTest, params: Iperf3Params, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one iperf3 test; failures are recorded, never raised."""
        record = new_record(
            test,
            {**path_params(test), **dataclasses.asdict(params)},
            "bits_per_second",
        )
        runs = iperf3_together if len(test.clients) > 1 else iperf3_runs
        try:
            runs.run(test, params, ctx, record, self.needs(test, params))
        except CannotStart as exc:
            record["error"] = str(exc)
            return record
        summed = self.summarize(record, params)
        if summed["status"] == "failed":  # a full /tmp (the server's log) said, before iperf3's
            full = space.full_tmps(ctx.sessions, test.hosts)  # "control socket has closed"
            summed["error"] = "; ".join([*full, summed["error"] or ""]).rstrip("; ")
        return summed

    def summarize(self, record: dict[str, Any], params: Iperf3Params) -> dict[str, Any]:
        """Its timeline, summary, efficiency, status and error."""
        reps = record["repetitions"]
        record["timeline"] = timeline.timeline([_series(rep, params) for rep in reps])
        rates = [r["bits_per_second"] for r in reps if r["status"] == "ok"]
        record["summary"] = summarize(rates, "bits_per_second")
        theoretical = record["path"]["theoretical_bits_per_second"]
        record["efficiency"] = efficiency(record["summary"]["median"], theoretical)
        errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
        if params.latency_under_load:
            ok = [r for r in reps if r["status"] == "ok"]
            record["latency_under_load"] = loaded_ping.summary(ok)
        if (record.get("params") or {}).get("clients"):
            record["together"] = {"forward": together.summary(reps, "bits_per_second")}
            if params.bidir:
                back = together.summary(reps, "reverse_bits_per_second")
                record["together"]["reverse"] = back
        return finish(record, errors)

    # --- how its records read ---------------------------------------------------------------

    def series(self, record: Record) -> list[Series]:
        """Forward (the client sent) or reverse (``-R``); a ``--bidir`` test both; UDP against
        the rate it asked (``kinds.iperf3.udp``), or the path's UDP maximum when it asked
        for none (``bitrate: 0``)."""
        params, path = record.get("params") or {}, record.get("path") or {}
        first = "reverse" if params.get("reverse") and not params.get("bidir") else "forward"
        found = single(record, first)
        theoretical = found.theoretical_bits_per_second
        if _udp(record):
            asked = udp.asked_bits_per_second(params)
            theoretical = asked if asked is not None else _udp_maximum(path)
            found = dataclasses.replace(
                found,
                efficiency=efficiency(found.summary.get("median"), theoretical),
                theoretical_bits_per_second=theoretical,
                limit_name=RATE_ASKED if asked is not None else UDP_MAXIMUM,
                hard_limit=asked is None,
            )
        bidir = bool(params.get("bidir"))
        back = by_direction(record, None, "reverse_bits_per_second") if bidir else []
        if not back:
            return [found]
        summary = summarize(back, "reverse_bits_per_second")
        reverse = Series(
            "reverse",
            "reverse_bits_per_second",
            back,
            summary,
            efficiency(summary["median"], theoretical),
            theoretical,
            found.limit_name,
            found.hard_limit,
        )
        return [found, reverse]

    def group(self, record: Record) -> str:
        return self.groups[1] if _udp(record) else self.groups[0]

    def phrase_of(self, record: Record) -> str:
        return "UDP throughput with iperf3" if _udp(record) else self.phrase

    def measured(self, record: Record, series: Series | None) -> str:
        params, udp = record.get("params") or {}, _udp(record)
        streams = params.get("parallel") or 1
        text = f"iperf3 {'UDP' if udp else 'TCP'}, {streams} stream{'s' * (streams != 1)}"
        if udp and params.get("udp_bitrate_bits_per_second"):
            text += f" at {format_bits_per_second(params['udp_bitrate_bits_per_second'])}"
            text += " a stream" if streams != 1 else ""
        elif udp and params.get("udp_bitrate_bits_per_second") is None:
            text += " at iperf3's default 1 Mbit/s a stream"
        elif udp:
            text += " as fast as it can (bitrate 0)"
        if params.get("length_bytes"):
            length = _length_text(int(params["length_bytes"]), True)
            text += f", {length} {'datagrams' if udp else 'writes'}"
        if params.get("congestion"):
            text += f", {params['congestion']}"
        if params.get("bidir") and series is not None:
            text += f", --bidir {series.direction}"
        if params.get("clients"):
            text += f", {len(params['clients'])} clients at once"
        return text

    def also(self, record: Record, series: Series) -> str:
        shared = ((record.get("together") or {}).get(series.direction or "forward")) or {}
        verdict = ((record.get("together_verdict") or {}).get(series.direction or "forward")) or {}
        if shared:
            said = together.fairness_text(shared, series.metric)
            return "; ".join(p for p in (str(verdict.get("verdict") or ""), said) if p) or DASH
        reps = self.ok_repetitions(record, series.direction)
        if _udp(record):
            per_packet = bool((record.get("params") or {}).get("length_bytes"))
            return _udp_also(reps, per_packet) or DASH
        if series.metric != "bits_per_second":
            return DASH
        retransmits = [r["retransmits"] for r in reps if r.get("retransmits") is not None]
        cpu = [_median_of(reps, f"cpu_{side}_percent") for side in ("client", "server")]
        parts = [f"retransmits {sum(retransmits)}" if retransmits else None]
        parts.append(_under_load_also(record))
        if any(c is not None for c in cpu):
            shown = [DASH if c is None else f"{c:.1f} %" for c in cpu]
            parts.append(f"CPU client / server {shown[0]} / {shown[1]}")
        return "; ".join(p for p in parts if p) or DASH

    def detail_text(self, record: Record) -> str:
        """The options asked (``_options``) and what iperf3 said it used: the sender's
        congestion control, the bytes a write or datagram carried, the client's address."""
        params = record.get("params") or {}
        reps = [r for r in record.get("repetitions") or [] if r.get("status") == "ok"]
        used = []
        if congestion := _used(reps, "congestion"):
            used.append(f"congestion control {' / '.join(congestion)}")
        if blocks := _used(reps, "block_bytes"):
            what = "datagram" if _udp(record) else "write"
            used.append(f"{' / '.join(_length_text(int(b)) for b in blocks)} a {what}")
        local = _used(reps, "local_address")
        if local and (params.get("bind_address") or params.get("ip_version")):
            used.append(f"from {' / '.join(local)}")
        text = "".join(f"; {o}" for o in _options(params))
        text += f"; iperf3 used {', '.join(used)}" if used else ""
        if params.get("latency_under_load"):
            found = record.get("latency_under_load")
            said = loaded_ping.text(found) if found else "no ping replies (or not measured)"
            text += f"; round-trip time {said}"
        return text

    def tells_also(self, record: Record) -> bool:
        return _udp(record)

    def timeline_limit(self, record: Record) -> tuple[float, str] | None:
        """The TCP maximum; a UDP test's rate asked (or its UDP maximum, asked for none)."""
        if not _udp(record):
            return super().timeline_limit(record)
        (first, *_) = self.series(record)
        limit = first.theoretical_bits_per_second
        return (float(limit), first.limit_name) if limit else None

    def caveats(self, record: Record) -> list[Caveat]:
        """A UDP test's loss, jitter, shortfall and a rate asked over the path's UDP maximum
        (``nasplan.measure.kinds.iperf3.udp``'s thresholds); none for TCP."""
        if not _udp(record):
            return []
        params = record.get("params") or {}
        reps = self.ok_repetitions(record, None)
        asked = udp.asked_bits_per_second(params)
        return udp.caveats(reps, asked, _udp_maximum(record.get("path") or {}))

    def short_durations(self, record: Record, direction: str | None = None) -> list[float]:
        """None when the test omits its first seconds (``-O``): slow start is then left out."""
        if ((record.get("params") or {}).get("omit_s") or 0) >= 1:
            return []
        return super().short_durations(record, direction)

    def short_advice(self, record: Record, direction: str | None) -> str:
        return f"set `duration_s` to {MIN_TRUSTED_S:g} or more"

    def capacities(self, record: Record) -> list[Capacity]:
        """What its TCP median says the network from client to server carries."""
        params = record.get("params") or {}
        median = (record.get("summary") or {}).get("median")
        if params.get("bidir") or params.get("clients") or not isinstance(median, (int, float)):
            return []
        direction = "read" if params.get("reverse") else "write"
        server, client = str(params.get("server")), str(params.get("client"))
        address = params.get("address")
        return [Capacity(NETWORK, server, direction, float(median), client, address)]

    def annotated(self, record: Record, evidence: Evidence) -> dict[str, Any]:
        """Clients at once: what limited the whole (the NAS's link, each client's, its CPU)."""
        out = dict(record)
        if (record.get("params") or {}).get("clients"):
            out["together_verdict"] = _together_verdict(record)
        return out

    def core_advice(self, record: Record, host: str, load: Mapping[str, Any]) -> str:
        """iperf3's own process figure, its version's threading and its streams say why."""
        params = record.get("params") or {}
        process = load.get("iperf3_process_percent")
        if process is not None and process < CPU_BOUND_PERCENT:
            return (
                f"not iperf3 (its process at {process:.0f} % of one core): another program or "
                f"the NIC's interrupts on {host} held that core"
            )
        version = load.get("iperf3_version")
        parallel = int(params.get("parallel") or 1)
        processes = params.get("parallel_mode") == "processes"
        if parallel > 1 and iperf3.single_threaded(version) and not processes:
            return (
                f"single-threaded iperf3 {version}: its {parallel} streams share one thread; "
                f"use 3.16+ or `parallel` as processes (one iperf3 a stream)"
            )
        if parallel == 1:
            named = f"iperf3 {version}" if version else "iperf3"
            return (
                f"one stream of {named} is one thread: `parallel: 2` or more spreads the "
                f"streams over cores (one process each before 3.16)"
            )
        return f"{parallel} streams and still one core at its limit: interrupts, or the NIC's queue"

    def causes(self, run: Record, one_core: OneCore) -> list[dict[str, Any]]:
        """A stream held by its window, and 1 vs N streams of one path (``streams``)."""
        return streams.findings(run, one_core)

    def streams_comparable(self, record: Record) -> bool:
        """An ok TCP test with a median, one way at a time."""
        params = record.get("params") or {}
        median = (record.get("summary") or {}).get("median")
        return (
            record.get("status") == "ok"
            and params.get("protocol", "tcp") == "tcp"
            and not params.get("bidir")
            and isinstance(median, (int, float))
            and median > 0
        )


KIND = Iperf3()
