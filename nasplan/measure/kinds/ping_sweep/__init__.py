"""The ``ping-sweep`` test kind: don't-fragment pings at a list of packet sizes find the path MTU.

Each repetition sends ``count`` DF pings of every size in ``sizes_bytes`` (whole IPv4 packets:
ICMP payload + 28 header bytes), smallest first, from the client to the target. The path MTU
of the repetition is the largest size that got a reply; a size the sending NIC cannot send at
all is named by the kernel (``local_mtu_bytes``). With ``expect_mtu_bytes`` the test fails when
the median path MTU is another: a hop that drops jumbo frames shows up here before it slows a
transfer down.
"""

from __future__ import annotations

from typing import Any

from nasplan.analysis import summarize
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure.commands import command
from nasplan.measure.estimate import Estimate
from nasplan.measure.kind import DASH, Kind, Record, RunContext
from nasplan.measure.kinds.ping_sweep.settings import SweepSettings
from nasplan.measure.pair import open_client_tool, target_label
from nasplan.measure.record import finish, new_record, path_params
from nasplan.measure.series import Series
from nasplan.measure.tools import ping
from nasplan.remote.runner import Runner

METRIC = "path_mtu_bytes"
# a repetition's own start and end besides its pings: one command on the client per size
STEP_S = 0.3


def _params(s: SweepSettings, size_bytes: int) -> ping.PingParams:
    """DF pings of one whole IPv4 packet size."""
    return ping.PingParams(
        count=s.count,
        interval_s=s.interval_s,
        payload_bytes=size_bytes - ping.ICMP_IPV4_HEADER_BYTES,
        dont_fragment=True,
    )


def _probe(
    runner: Runner, ping_path: str, address: str, s: SweepSettings, size_bytes: int
) -> tuple[str, dict[str, Any]]:
    """DF pings of one size: ``(raw output under a header line, the size's sweep entry)``."""
    params = _params(s, size_bytes)
    header = f"=== nasplan ping-sweep: {size_bytes} bytes: "
    header += " ".join(ping.ping_argv(ping_path, address, params)) + " ===\n"
    raw, parsed = ping.run_ping(runner, ping_path, address, params)
    entry = {
        "size_bytes": size_bytes,
        "packets": parsed["packets"],
        "received": parsed["received"],
        "rtt_avg_ms": parsed["rtt_avg_ms"],
        "local_mtu_bytes": parsed["local_mtu_bytes"],
    }
    return header + raw, entry


def _repetition(
    test: PlanTest,
    s: SweepSettings,
    ctx: RunContext,
    runner: Runner,
    ping_path: str,
    address: str,
    index: int,
) -> dict[str, Any]:
    rep: dict[str, Any] = {"index": index, "status": "failed", "error": None, "raw_file": None}
    rep.update(path_mtu_bytes=None, sweep=[], commands=[])
    raws: list[str] = []
    try:
        for size_bytes in s.sizes_bytes:
            # the argv _probe runs (ping_argv is pure)
            argv = ping.ping_argv(ping_path, address, _params(s, size_bytes))
            rep["commands"].append(command(runner.name, argv))
            raw, entry = _probe(runner, ping_path, address, s, size_bytes)
            raws.append(raw)
            rep["sweep"].append(entry)
    except ping.PingError as exc:
        rep["error"] = str(exc)
    if raws:
        rep["raw_file"] = ctx.save_raw(f"raw/{test.dir_name}/rep-{index}.txt", "\n".join(raws))
    passed = [entry["size_bytes"] for entry in rep["sweep"] if entry["received"] > 0]
    rep["path_mtu_bytes"] = max(passed) if passed else None
    if rep["error"] is None and not passed:
        rep["error"] = f"no size got a reply from {address} (does it answer ping?)"
    rep["status"] = "ok" if rep["error"] is None else "failed"
    return rep


class PingSweep(Kind[SweepSettings]):
    """``kind: ping-sweep``: the largest packet the path carries unfragmented."""

    name = "ping-sweep"
    phrase = "the path MTU with a DF ping sweep"
    groups = ("Path MTU",)
    metric = METRIC

    def settings(self, test: PlanTest) -> SweepSettings:
        """Sizes sorted, each once; the defaults of SweepSettings."""
        s, default = test.settings, SweepSettings()
        sizes = s.get("sizes_bytes", default.sizes_bytes)
        expect = s.get("expect_mtu_bytes")
        return SweepSettings(
            sizes_bytes=tuple(sorted({int(size) for size in sizes})),
            count=int(s.get("count", default.count)),
            interval_s=float(s.get("interval_s", default.interval_s)),
            expect_mtu_bytes=None if expect is None else int(expect),
        )

    def describe(self, test: PlanTest, s: SweepSettings) -> str:
        sizes = ", ".join(str(size) for size in s.sizes_bytes)
        return (
            f"DF ping sweep {test.client} -> {target_label(test)} at {sizes} bytes, "
            f"{s.count} pings each x {test.repetitions_text}"
        )

    def estimate(self, test: PlanTest, s: SweepSettings, plan: Plan) -> Estimate:
        per_size_s = s.count * s.interval_s + STEP_S
        return Estimate(per_size_s * len(s.sizes_bytes) * test.repetitions)

    def run(self, test: PlanTest, s: SweepSettings, ctx: RunContext) -> dict[str, Any]:
        """Sweep every repetition; a failure is recorded, never raised."""
        params = {
            **path_params(test, target_label(test)),
            "sizes_bytes": list(s.sizes_bytes),
            "count": s.count,
            "interval_s": s.interval_s,
            "expect_mtu_bytes": s.expect_mtu_bytes,
        }
        record = new_record(test, params, METRIC)
        opened = open_client_tool(test, ctx, record, "ping")
        if opened is None:
            return record
        pair, ping_path = opened
        assert pair.client.runner is not None
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, 0.0)
            rep = _repetition(test, s, ctx, pair.client.runner, ping_path, pair.address, index)
            record["repetitions"].append(rep)
            ctx.checkpoint(record)
        return self.summarize(record, s)

    def summarize(self, record: dict[str, Any], s: SweepSettings) -> dict[str, Any]:
        """The median path MTU; failed when it is not the one expected."""
        reps = record["repetitions"]
        errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
        found = [r[METRIC] for r in reps if r["status"] == "ok"]
        record["summary"] = summarize(found, METRIC)
        median = record["summary"]["median"]
        if s.expect_mtu_bytes is not None and median is not None and median != s.expect_mtu_bytes:
            errors.append(f"path MTU {median:.0f} bytes, expected {s.expect_mtu_bytes}")
        return finish(record, errors)

    def measured(self, record: Record, series: Series | None) -> str:
        return "path MTU (DF ping sweep)"

    def also(self, record: Record, series: Series) -> str:
        expected = (record.get("params") or {}).get("expect_mtu_bytes")
        return f"expected {expected} bytes" if expected else DASH


KIND = PingSweep()
