"""The ``latency`` test kind: ping RTT from the client to the target, and a path-MTU probe."""

from __future__ import annotations

import secrets
from typing import Any

from nasplan.analysis import summarize
from nasplan.context import RunContext
from nasplan.measure import TestKind, latency, sampler
from nasplan.measure.common import new_record, not_ready, path_params, target_address
from nasplan.paths import describe_path, nic_holding, nic_towards, path_end
from nasplan.plan import TestSpec
from nasplan.results import save_raw

METRIC = "rtt_avg_ms"


def params_of(test: TestSpec) -> latency.PingParams:
    """Plan settings -> one ping run's parameters."""
    s = test.settings
    return latency.PingParams(
        count=int(s.get("count", 10)), interval_s=float(s.get("interval_s", 0.2))
    )


def run(test: TestSpec, ctx: RunContext) -> dict[str, Any]:
    """Run every repetition (one ping run each) and the MTU probe; failures are recorded."""
    params = params_of(test)
    record = new_record(
        test,
        {
            **path_params(test),
            "count": params.count,
            "interval_s": params.interval_s,
            "mtu_probe": bool(test.settings.get("mtu_probe", True)),
        },
        METRIC,
    )
    record["mtu_probe"] = None
    reason = not_ready(test, ctx)
    if reason:
        record["error"] = reason
        return record
    server, client = ctx.sessions[test.server], ctx.sessions[test.client]
    assert server.facts is not None and client.facts is not None and client.runner is not None
    ping_path = client.tools.get("ping") or client.facts.tool("ping")
    if not ping_path:
        record["error"] = f"ping is not installed on {client.host.name}"
        return record
    try:
        address = target_address(test, ctx.plan, server)
    except ValueError as exc:
        record["error"] = str(exc)
        return record
    record["params"]["address"] = address
    record["path"] = describe_path(
        path_end(server.host, nic_holding(server.facts, address)),
        path_end(client.host, nic_towards(client.facts, address)),
    )
    errors: list[str] = []
    with sampler.sampling(ctx.sessions, test.hosts, secrets.token_hex(4)) as resources:
        for index in range(1, test.repetitions + 1):
            total_s = test.repetitions * params.count * (params.interval_s or 1.0)
            ctx.progress.test(test.id, index, test.repetitions, total_s)
            rep: dict[str, Any] = {"index": index, "status": "failed", "error": None}
            rep["raw_file"] = None
            try:
                raw, parsed = latency.run_ping(client.runner, ping_path, address, params)
            except latency.PingError as exc:
                rep["error"] = str(exc)
                errors.append(f"repetition {index}: {exc}")
                record["repetitions"].append(rep)
                continue
            rep["raw_file"] = save_raw(ctx.run_dir, f"raw/{test.id}/rep-{index}.txt", raw)
            rep.update({k: parsed[k] for k in ("packets", "lost_percent", *_RTT_KEYS)})
            rep["lost_packets"] = parsed["packets"] - parsed["received"]
            if parsed["received"] == 0:
                rep["error"] = f"no reply from {address} ({parsed['packets']} sent)"
                errors.append(f"repetition {index}: {rep['error']}")
            else:
                rep["status"] = "ok"
            record["repetitions"].append(rep)
        mtu = (record["path"] or {}).get("mtu_bytes")
        if record["params"]["mtu_probe"] and mtu:
            try:
                record["mtu_probe"] = latency.probe_path_mtu(client.runner, ping_path, address, mtu)
            except latency.PingError as exc:
                ctx.warnings.append(f"{test.id}: path MTU probe not possible: {exc}")
    record["resources"] = resources
    values = [
        r[METRIC] for r in record["repetitions"] if r["status"] == "ok" and r[METRIC] is not None
    ]
    record["summary"] = summarize(values, METRIC)
    probe = record["mtu_probe"]
    if probe is not None and not probe["ok"]:
        errors.append(
            f"path MTU {probe['path_mtu_bytes']} bytes, expected {probe['expected_mtu_bytes']}"
            " (a hop drops or cannot pass full-size packets)"
        )
    record["status"] = "failed" if errors else "ok"
    record["error"] = "; ".join(errors) or None
    return record


_RTT_KEYS = ("rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms")


def describe(test: TestSpec) -> str:
    """One line for ``apply --check``."""
    params = params_of(test)
    probe = ", path-MTU probe" if test.settings.get("mtu_probe", True) else ""
    return (
        f"ping {test.client} -> {test.target.label()}, {params.count} packets x "
        f"{test.repetitions}{probe}"
    )


def needs(test: TestSpec) -> dict[str, tuple[str, ...]]:
    """Nothing to install: ping is part of every system nasplan knows."""
    return {}


KIND = TestKind(name="latency", needs=needs, run=run, describe=describe)
