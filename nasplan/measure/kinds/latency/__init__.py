"""The ``latency`` test kind: ping RTT from the client to the target, and a path-MTU probe."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import summarize
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import sampling
from nasplan.measure.commands import command
from nasplan.measure.estimate import Estimate
from nasplan.measure.kind import DASH, Kind, Record, RunContext, Section, target_text
from nasplan.measure.kinds.latency.settings import LatencySettings
from nasplan.measure.pair import open_client_tool
from nasplan.measure.record import finish, new_record, path_params, warn
from nasplan.measure.series import Series
from nasplan.measure.tools import ping
from nasplan.remote.runner import Runner

METRIC = "rtt_avg_ms"
# a repetition's own start and end besides its pings: one command on the client
STEP_S = 0.3
_RTT_KEYS = ("rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms")


@dataclass(frozen=True)
class _Pinger:
    """Pings from the client to the target address."""

    runner: Runner
    ping_path: str
    address: str
    params: ping.PingParams

    def repetition(self, index: int, ctx: RunContext, raw_name: str) -> dict[str, Any]:
        """One ping run's run.json entry, its output saved as ``raw_name``."""
        rep: dict[str, Any] = {"index": index, "status": "failed", "error": None}
        rep["raw_file"] = None
        # the argv run_ping runs (ping_argv is pure)
        argv = ping.ping_argv(self.ping_path, self.address, self.params)
        rep["commands"] = [command(self.runner.name, argv)]
        try:
            raw, parsed = ping.run_ping(self.runner, self.ping_path, self.address, self.params)
        except ping.PingError as exc:
            rep["error"] = str(exc)
            return rep
        rep["raw_file"] = ctx.save_raw(raw_name, raw)
        rep.update({k: parsed[k] for k in ("packets", "lost_percent", *_RTT_KEYS)})
        rep["lost_packets"] = parsed["packets"] - parsed["received"]
        if parsed["received"] == 0:
            rep["error"] = f"no reply from {self.address} ({parsed['packets']} sent)"
        else:
            rep["status"] = "ok"
        return rep

    def probe(self, mtu_bytes: int) -> dict[str, Any]:
        """The path-MTU probe (ping.probe_path_mtu); PingError when it cannot run."""
        return ping.probe_path_mtu(self.runner, self.ping_path, self.address, mtu_bytes)


class Latency(Kind[LatencySettings]):
    """``kind: latency``: round-trip times (lower is better) and whether full-size packets pass."""

    name = "latency"
    phrase = "latency with ping"
    groups = ("Latency",)
    lower_is_better = True
    metric = METRIC
    section = Section(__name__)

    def settings(self, test: PlanTest) -> LatencySettings:
        """The defaults of PingParams (10 pings 0.2 s apart) and LatencySettings (MTU probe on)."""
        given = test.given("count", "interval_s")
        if "interval_s" in given:  # ``interval_s: 1`` (an int once read) is recorded as 1.0
            given["interval_s"] = float(given["interval_s"])
        return LatencySettings(ping.PingParams(**given), **test.given("mtu_probe"))

    def describe(self, test: PlanTest, s: LatencySettings) -> str:
        probe = ", path-MTU probe" if s.mtu_probe else ""
        return (
            f"ping {test.client} -> {test.target.label()}, {s.params.count} packets x "
            f"{test.repetitions_text}{probe}"
        )

    def estimate(self, test: PlanTest, s: LatencySettings, plan: Plan) -> Estimate:
        pings_s = s.params.count * (s.params.interval_s or 1.0)
        return Estimate((pings_s + STEP_S) * test.repetitions)

    def run(self, test: PlanTest, s: LatencySettings, ctx: RunContext) -> dict[str, Any]:
        """Every repetition (one ping run each) and the MTU probe; failures are recorded."""
        params = s.params
        record = new_record(
            test,
            {
                **path_params(test),
                "count": params.count,
                "interval_s": params.interval_s,
                "mtu_probe": s.mtu_probe,
            },
            METRIC,
        )
        record["mtu_probe"] = None
        opened = open_client_tool(test, ctx, record, "ping")
        if opened is None:
            return record
        pair, ping_path = opened
        assert pair.client.runner is not None
        pinger = _Pinger(pair.client.runner, ping_path, pair.address, params)
        total_s = test.repetitions * params.count * (params.interval_s or 1.0)
        token = secrets.token_hex(4)
        with sampling.sampling(ctx.sessions, test.hosts, token, ctx.tasks) as resources:
            for index in test.indices:
                ctx.progress.test(test.id, index, test.repetitions, total_s)
                rep = pinger.repetition(index, ctx, f"raw/{test.dir_name}/rep-{index}.txt")
                record["repetitions"].append(rep)
                ctx.checkpoint(record)
            mtu = (record["path"] or {}).get("mtu_bytes")
            if s.mtu_probe and mtu:
                try:
                    record["mtu_probe"] = pinger.probe(mtu)
                except ping.PingError as exc:
                    warn(record, f"path MTU probe not possible: {exc}")
        record["resources"] = resources
        return self.summarize(record, s)

    def summarize(self, record: dict[str, Any], s: LatencySettings) -> dict[str, Any]:
        """The summary, status and error (a failed MTU probe is one)."""
        reps = record["repetitions"]
        values = [r[METRIC] for r in reps if r["status"] == "ok" and r[METRIC] is not None]
        record["summary"] = summarize(values, METRIC)
        errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
        probe = record["mtu_probe"]
        if probe is not None and not probe["ok"]:
            errors.append(
                f"path MTU {probe['path_mtu_bytes']} bytes, expected "
                f"{probe['expected_mtu_bytes']} (a hop drops or cannot pass full-size packets)"
            )
        return finish(record, errors)

    def flow(self, record: Record, direction: str | None) -> str:
        params = record.get("params") or {}
        target = target_text(params, record.get("path") or {})
        client = params.get("client")
        return f"{client} ↔ {target}" if client else target

    def measured(self, record: Record, series: Series | None) -> str:
        return "ping round trip"

    def also(self, record: Record, series: Series) -> str:
        reps = self.ok_repetitions(record, series.direction)
        lost = [r["lost_percent"] for r in reps if r.get("lost_percent") is not None]
        probe = record.get("mtu_probe") or {}
        parts = [f"loss {max(lost):g} %" if lost else None]
        if probe:
            mark = "" if probe.get("ok") else " ⚠"
            expected = probe.get("expected_mtu_bytes")
            parts.append(f"path MTU {probe.get('path_mtu_bytes')} of {expected}{mark}")
        return "; ".join(p for p in parts if p) or DASH


KIND = Latency()
