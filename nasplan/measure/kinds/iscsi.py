"""The ``iscsi`` test kind: sequential write and read of N bytes on an iSCSI LUN, from the client.

The client logs in to the NAS's portal with a user-space initiator (libiscsi through
nasplan/measure/tools/iscsi_rw.py): no kernel module, no mount, nothing to log out of after a
failure. Writes destroy what the LUN holds, so they go only to a LUN the plan marks
``scratch: true`` (the plan schema refuses the rest before anything runs). The CHAP secret
comes from the environment variable the plan names, reaches the client on stdin and is masked
in every file written.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from typing import Any

from nasplan.errors import CannotStart
from nasplan.input.plan import PlanTest
from nasplan.measure import sampling, timeline
from nasplan.measure.kind import (
    Kind,
    Needs,
    RunContext,
    finish,
    finish_directions,
    new_record,
    open_pair,
    path_params,
    summarize_directions,
    target_label,
)
from nasplan.measure.tools import iscsi
from nasplan.runner import Runner
from nasplan.units import parse_size

DIRECTIONS = ("write", "read")
SETUP_TIMEOUT_S = 60.0
# Slowest rate a repetition may take before it is killed: 0.5 MB/s (10^6 bytes/s).
SLOWEST_BYTES_PER_SECOND = 500_000
_LOGIN_HINTS = {
    "Target not found": "no target with this IQN behind the portal "
    "(`iscsi-ls iscsi://{portal}` lists the portal's targets)",
    "Authentication failure": "the target refused the CHAP user or secret",
    "reconnect": "no iSCSI target answers on {portal}: address, port or a firewall",
}


@dataclass(frozen=True)
class IscsiSettings:
    """An iscsi test's settings as the plan gives them, each default stated here once."""

    iqn: str
    lun: int
    scratch: bool = False
    direction: str = "both"
    size: str | int = "64MiB"
    request_size: str | int = "1MiB"
    queue_depth: int = 8
    port: int = iscsi.DEFAULT_PORT
    chap_user: str | None = None
    chap_secret_env: str | None = None

    @property
    def directions(self) -> tuple[str, ...]:
        return DIRECTIONS if self.direction == "both" else (self.direction,)

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)

    @property
    def request_bytes(self) -> int:
        return parse_size(self.request_size)

    @property
    def timeout_s(self) -> float:
        return SETUP_TIMEOUT_S + self.size_bytes / SLOWEST_BYTES_PER_SECOND


def settings(test: PlanTest) -> IscsiSettings:
    """Plan settings (``iqn`` and ``lun`` required) -> IscsiSettings with the defaults above."""
    s = test.settings
    keys = ("scratch", "direction", "size", "request_size", "queue_depth", "port", "chap_user",
            "chap_secret_env")  # fmt: skip
    return IscsiSettings(iqn=str(s["iqn"]), lun=int(s["lun"]), **{k: s[k] for k in keys if k in s})


def needs(test: PlanTest, s: IscsiSettings) -> Needs:
    """Nothing nasplan installs: the client's python3 and libiscsi are checked when it runs."""
    return {}


def describe(test: PlanTest, s: IscsiSettings) -> str:
    """One line for ``apply --check``."""
    return (
        f"iscsi {test.client} -> {target_label(test)} {s.iqn} LUN {s.lun}"
        f"{' (scratch)' if s.scratch else ''}, {s.direction}, {s.size} x {test.repetitions_text}"
    )


def run(test: PlanTest, s: IscsiSettings, ctx: RunContext) -> dict[str, Any]:
    """Run every repetition of one iSCSI test; failures are recorded, never raised."""
    params: dict[str, Any] = {
        **path_params(test, target_label(test)),
        "method": "iscsi",
        "iqn": s.iqn,
        "lun": s.lun,
        "port": s.port,
        "scratch": s.scratch,
        "direction": s.direction,
        "size_bytes": s.size_bytes,
        "request_bytes": s.request_bytes,
        "queue_depth": s.queue_depth,
        "chap_user": s.chap_user,
        "chap_secret_env": s.chap_secret_env,
    }
    record = new_record(test, params, "bits_per_second")
    record["directions"] = {}
    if "write" in s.directions and not s.scratch:
        record["error"] = (
            f"refusing to write to {s.iqn} LUN {s.lun}: it is not marked scratch: true "
            "(a write destroys what the LUN holds)"
        )
        return record
    try:
        pair = open_pair(test, ctx, needs(test, s))
        secret = _secret(s, ctx)
    except CannotStart as exc:
        record["error"] = str(exc)
        return record
    record["params"]["address"] = pair.address
    record["path"] = pair.path
    target = iscsi.Target(pair.address, s.iqn, s.lun, s.port, s.chap_user)
    client = pair.client
    assert client.runner is not None
    directory, error = _install(client.runner, client.host.name)
    if directory is None:
        record["error"] = error
        return record
    errors: list[str] = []
    token = secrets.token_hex(4)
    try:
        with sampling.sampling(ctx.sessions, test.hosts, token, ctx.tasks) as resources:
            clock = timeline.Clock()
            _repetitions(
                test, s, ctx, client.runner, directory, target, secret, record, errors, clock
            )
        record["resources"] = resources
        # per second: the client's NIC towards the portal, as for a file transfer
        record["timeline"] = timeline.timeline(timeline.transfer_series(record, resources))
    finally:
        removed = client.runner.run(iscsi.cleanup_argv(directory), timeout_s=SETUP_TIMEOUT_S)
        if not removed.ok:
            ctx.warnings.append(f"{test.id}: cleanup: rm -rf {directory}: {removed.stderr}")
    summarize_directions(record, s.directions)
    return finish(record, errors)


def _secret(s: IscsiSettings, ctx: RunContext) -> str | None:
    """The CHAP secret from the environment (masked from now on), None without CHAP."""
    if not s.chap_user:
        return None
    if not s.chap_secret_env:
        raise CannotStart("chap_user needs chap_secret_env (the variable holding the secret)")
    secret = os.environ.get(s.chap_secret_env)
    if not secret:
        raise CannotStart(f"environment variable {s.chap_secret_env} (CHAP secret) is not set")
    ctx.mask(secret)
    return secret


def _install(runner: Runner, host: str) -> tuple[str | None, str | None]:
    """Copy the initiator to a temp dir of the client and load libiscsi: (dir, error)."""
    if not runner.run(["sh", "-c", "command -v python3"]).ok:
        return None, f"python3 is not installed on {host} (the iSCSI initiator runs with it)"
    made = runner.run(iscsi.install_argv(), stdin=iscsi.SCRIPT, timeout_s=SETUP_TIMEOUT_S)
    directory = (made.stdout.strip().splitlines() or [""])[-1]
    if not made.ok or not directory.startswith("/"):
        return None, f"cannot copy the iSCSI initiator to {host}: {made.stderr.strip()}"
    probe = runner.run(iscsi.probe_argv("python3", directory), timeout_s=SETUP_TIMEOUT_S)
    if not probe.ok:
        runner.run(iscsi.cleanup_argv(directory), timeout_s=SETUP_TIMEOUT_S)
        detail = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"libiscsi cannot be loaded on {host} ({detail}); on Debian/Ubuntu: " + (
            "apt-get install libiscsi-bin"
        )
    return directory, None


def _repetitions(
    test: PlanTest,
    s: IscsiSettings,
    ctx: RunContext,
    runner: Runner,
    directory: str,
    target: iscsi.Target,
    secret: str | None,
    record: dict[str, Any],
    errors: list[str],
    clock: timeline.Clock,
) -> None:
    total = test.repetitions * len(s.directions)
    speed = (record["path"] or {}).get("speed_bits_per_second")
    total_s = total * s.size_bytes * 8 / speed if speed else 0.0
    for direction in s.directions:
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, total_s, direction)
            rep: dict[str, Any] = {"index": index, "direction": direction, "status": "failed"}
            rep.update(error=None, raw_file=None)
            record["repetitions"].append(rep)
            name = f"raw/{test.dir_name}/{direction}-{index}.txt"
            rep["started_s"] = clock.now_s()
            try:
                raw, parsed = iscsi.run_once(
                    runner, "python3", directory, target, direction, s.size_bytes,
                    s.request_bytes, s.queue_depth, secret, s.timeout_s,
                )  # fmt: skip
            except iscsi.IscsiError as exc:
                rep["ended_s"] = clock.now_s()
                rep["error"] = _explain(exc, target)
                rep["raw_file"] = ctx.save_raw(name, f"{exc.stage}: {exc}\n")
                errors.append(f"{direction} {index}: {rep['error']}")
                ctx.checkpoint(record)
                if exc.stage in ("load", "login", "capacity"):
                    return  # every further repetition would fail the same way
                continue
            rep["ended_s"] = clock.now_s()
            rate = parsed["bytes"] / parsed["duration_s"]
            rep.update(
                status="ok",
                raw_file=ctx.save_raw(name, raw),
                bytes=parsed["bytes"],
                duration_s=parsed["duration_s"],
                bytes_per_second=rate,
                bits_per_second=rate * 8,
                login_s=parsed.get("login_s"),
                lun_capacity_bytes=parsed.get("lun_capacity_bytes"),
            )
            ctx.checkpoint(record)


def _explain(exc: iscsi.IscsiError, target: iscsi.Target) -> str:
    """The initiator's message with what it means for this target."""
    if exc.stage != "login":
        return f"{exc.stage}: {exc}"
    hints = [h.format(portal=target.portal) for key, h in _LOGIN_HINTS.items() if key in str(exc)]
    return f"iSCSI login to {target.url} failed: {exc}" + (f" ({hints[0]})" if hints else "")


def _summarize(record: dict[str, Any], s: IscsiSettings) -> dict[str, Any]:
    """The record's summaries per direction and its status, from its repetitions."""
    return finish_directions(record, s.directions)


KIND = Kind(
    name="iscsi",
    settings=settings,
    needs=needs,
    describe=describe,
    run=run,
    summarize=_summarize,
)
