"""The ``iscsi`` test kind: sequential write and read of N bytes on an iSCSI LUN, from the client.

The client logs in to the NAS's portal with a user-space initiator (libiscsi through
nasplan/measure/kinds/iscsi/iscsi_rw.py): no kernel module, no mount, nothing to log out of after a
failure. Writes destroy what the LUN holds, so they go only to a LUN the plan marks
``scratch: true`` (the plan schema refuses the rest before anything runs). The CHAP secret
comes from the environment variable the plan names, reaches the client on stdin and is masked
in every file written.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from nasplan.errors import CannotStart
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import sampling, timeline
from nasplan.measure.commands import command
from nasplan.measure.estimate import Estimate, copy_rate, parts
from nasplan.measure.kind import Kind, Record, RunContext
from nasplan.measure.kinds.iscsi import initiator as iscsi
from nasplan.measure.kinds.iscsi.settings import SETUP_TIMEOUT_S, IscsiSettings
from nasplan.measure.kinds.transfer import view as transfer_view
from nasplan.measure.pair import open_pair, target_label
from nasplan.measure.record import (
    finish,
    finish_directions,
    new_record,
    path_params,
    summarize_directions,
    warn,
)
from nasplan.measure.series import Series
from nasplan.quantities import BYTES
from nasplan.remote.runner import Runner
from nasplan.units import format_size

# a repetition's own start and end besides its data: the initiator started, its login
STEP_S = 0.5
# a part's own start and end besides its repetitions: the initiator copied to the client, loaded
PART_S = 0.5
_LOGIN_HINTS = {
    "Target not found": "no target with this IQN behind the portal "
    "(`iscsi-ls iscsi://{portal}` lists the portal's targets)",
    "Authentication failure": "the target refused the CHAP user or secret",
    "reconnect": "no iSCSI target answers on {portal}: address, port or a firewall",
}


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
    made = runner.run(iscsi.install_argv(), stdin=iscsi.SCRIPT, timeout_s=SETUP_TIMEOUT_S)
    if made.stdout.strip() == iscsi.NO_PYTHON:
        return None, f"python3 is not installed on {host} (the iSCSI initiator runs with it)"
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
        for index in (i for i in test.indices if test.wants(i, direction)):
            ctx.progress.test(test.id, index, test.repetitions, total_s, direction)
            rep: dict[str, Any] = {"index": index, "direction": direction, "status": "failed"}
            rep.update(error=None, raw_file=None)
            record["repetitions"].append(rep)
            name = f"raw/{test.dir_name}/{direction}-{index}.txt"
            # the initiator logs in, then times the write or read: one command (rw_argv is pure;
            # the CHAP secret goes on its stdin, never in argv)
            argv = iscsi.rw_argv(
                "python3", directory, target, direction, s.size_bytes, s.request_bytes,
                s.queue_depth,
            )  # fmt: skip
            rep["commands"] = [command(runner.name, argv)]
            rep["started_s"] = clock.now_s()
            try:
                raw, parsed = iscsi.run_once(runner, argv, secret, s.timeout_s)
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


class Iscsi(Kind[IscsiSettings]):
    """``kind: iscsi``: block writes and reads over the network, judged like file copies."""

    name = "iscsi"
    phrase = "iSCSI block transfers"
    groups = ("iSCSI",)
    metric = "bytes_per_second"
    timeline_quantity = BYTES
    directed = True
    path_rate = True
    short_start = "start-up (the first requests, TCP slow start)"
    section = transfer_view.SECTION
    section_note = (
        "iSCSI (block storage): the client's user-space initiator (libiscsi) writes or reads "
        "the size from LBA 0 of the LUN, several requests in flight; the time starts after the "
        "login and a write's ends when the target has confirmed SYNCHRONIZE CACHE."
    )

    def settings(self, test: PlanTest) -> IscsiSettings:
        """``iqn`` and ``lun`` required; the defaults of IscsiSettings."""
        s = test.settings
        given = test.given("scratch", "direction", "size", "request_size", "queue_depth", "port",
                           "chap_user", "chap_secret_env")  # fmt: skip
        return IscsiSettings(iqn=str(s["iqn"]), lun=int(s["lun"]), **given)

    def describe(self, test: PlanTest, s: IscsiSettings) -> str:
        scratch = " (scratch)" if s.scratch else ""
        return (
            f"iscsi {test.client} -> {target_label(test)} {s.iqn} LUN {s.lun}{scratch}, "
            f"{s.direction}, {s.size} x {test.repetitions_text}"
        )

    def estimate(self, test: PlanTest, s: IscsiSettings, plan: Plan) -> Estimate:
        rate, said = copy_rate(plan, test)
        each_s = s.size_bytes / rate + STEP_S
        seconds = parts(plan, test) * PART_S + each_s * len(s.directions) * test.repetitions
        return Estimate(seconds, said)

    def run(self, test: PlanTest, s: IscsiSettings, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one iSCSI test; failures are recorded, never raised."""
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
            pair = open_pair(test, ctx, self.needs(test, s))
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
                warn(record, f"cleanup: rm -rf {directory}: {removed.stderr}")
        summarize_directions(record, s.directions)
        return finish(record, errors)

    def summarize(self, record: dict[str, Any], s: IscsiSettings) -> dict[str, Any]:
        """Summaries per direction and the status, from its repetitions."""
        return finish_directions(record, s.directions)

    def measured(self, record: Record, series: Series | None) -> str:
        return f"iSCSI {series.direction if series else ''}".strip()

    def detail_text(self, record: Record) -> str:
        p = record.get("params") or {}
        text = f", {p.get('iqn')} LUN {p.get('lun')}{' (scratch)' if p.get('scratch') else ''}"
        text += f", {format_size(p.get('request_bytes'))} requests"
        text += f", {p.get('queue_depth')} in flight"
        text += f", CHAP user {p['chap_user']}" if p.get("chap_user") else ""
        return f"{text}, size {format_size(p.get('size_bytes'))}"

    def copy_label(self, record: Record) -> str | None:
        return "iSCSI"


KIND = Iscsi()
