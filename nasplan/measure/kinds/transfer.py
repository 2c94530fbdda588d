"""The ``transfer`` test kind: copy a generated incompressible file to and from the NAS, timed.

One source file per test, made on the client (``head -c SIZE /dev/urandom``); each write
repetition sends it to the NAS, each read repetition fetches the NAS's copy back, the way its
method copies (``nasplan.measure.methods``). The NAS's copy and the client's temp dir are
removed in ``finally``, also after a failure.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.input.matrix import file_stem
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import methods, sampling, timeline
from nasplan.measure.estimate import Estimate, copy_rate, parts
from nasplan.measure.kind import Kind, Needs, Probe, Record, RunContext
from nasplan.measure.methods.base import (
    SETUP_TIMEOUT_S,
    SLOWEST_BYTES_PER_SECOND,
    Transfer,
    TransferSettings,
)
from nasplan.measure.pair import open_pair, target_address, target_label
from nasplan.measure.record import (
    finish,
    finish_directions,
    new_record,
    path_params,
    summarize_directions,
    warn,
)
from nasplan.measure.series import Series, directions_asked
from nasplan.measure.tools import transfer, transfer_windows
from nasplan.quantities import BYTES
from nasplan.remote import shell
from nasplan.remote.runner import Runner
from nasplan.units import format_size, parse_size

# a repetition's own start and end besides its data: a connection, a login, the file opened
STEP_S = 0.05
# a part's own start and end besides its repetitions: the tool checked, the copies removed
PART_S = 0.1
# how fast the client makes its source file (``head -c`` from /dev/urandom)
SOURCE_BYTES_PER_SECOND = 300 * 2**20


def transfer_for(s: TransferSettings, test: PlanTest, server: HostSession, token: str) -> Transfer:
    """The settings made concrete for one run; CannotStart naming what the method misses."""
    name = f"nasplan-{file_stem(test.id)}-{token}.bin"
    way = methods.method(s.method)
    base = Transfer(way, directions_asked(s.direction), parse_size(s.size), name, test.indices)
    return way.concrete(s, base, server)


def repetition(
    client: Runner, xfer: Transfer, direction: str, local_dir: str, address: str
) -> tuple[dict[str, Any], str]:
    """Run one timed transfer; return (repetition fields, raw output). Never raises."""
    rep: dict[str, Any] = {"direction": direction, "status": "failed", "error": None}
    windows = shell.of(client).is_windows
    if windows:
        argv = ["Copy-Item" if direction == "write" else "FileStream.CopyTo"]
        share, remote = _windows_paths(xfer, address)
        assert xfer.smb_user is not None
        script = transfer_windows.timed_copy_script(
            share, remote, local_dir, direction, xfer.smb_user
        )
        result = client.run_script(script, stdin=_smb_password(xfer), timeout_s=xfer.timeout_s)
    else:
        argv, before = xfer.command(direction, local_dir, address)
        result = client.run_script(transfer.timed_script(argv, before), timeout_s=xfer.timeout_s)
    raw = result.stdout + result.stderr
    try:
        duration_s, exited, output = transfer.parse_timed(result.stdout.replace("\r\n", "\n"))
        # a Windows copy is timed by its script itself: no tool rate to read
        tool = {"tool_bytes_per_second": None} if windows else xfer.method.parse(xfer, output)
    except transfer.TransferParseError as exc:
        detail = (result.stdout.strip().splitlines() or [""])[-1]
        rep["error"] = f"{exc} (exit {result.exited})" + (f": {detail}" if detail else "")
        return rep, raw
    if exited != 0:
        said = (output.strip().splitlines() or [""])[-1]
        rep["error"] = f"{argv[0]} exited {exited}" + (f": {said}" if said else "")
        return rep, raw
    rate = xfer.size_bytes / duration_s if duration_s > 0 else None
    rep.update(
        status="ok",
        bytes=xfer.size_bytes,
        duration_s=duration_s,
        bytes_per_second=rate,
        bits_per_second=rate * 8 if rate else None,
        tool_bytes_per_second=tool["tool_bytes_per_second"],
    )
    return rep, raw


def check_commands(xfer: Transfer, address: str) -> None:
    """Build every command the test will run; ValueError when a value breaks a tool's syntax.

    Called before anything is made on a host, so a refused value leaves nothing behind.
    """
    for direction in xfer.directions:
        xfer.command(direction, "/nasplan-check", address)
        xfer.method.write_target(xfer, 0).command(direction, "/nasplan-check", address)


def _windows_paths(xfer: Transfer, address: str) -> tuple[str, str]:
    """(``\\\\NAS\\share``, the NAS copy's UNC path) for a Windows client."""
    assert xfer.share is not None
    return transfer_windows.share_paths(address, xfer.share, xfer.remote_dir, xfer.remote_name)


def _smb_password(xfer: Transfer) -> str:
    """The SMB password line for a Windows script's stdin (checked in ``prepare_client``)."""
    secret, _ = xfer.method.credentials(xfer)
    return (secret or "") + "\n"


def _cleanup(
    xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
) -> list[str]:
    """Remove the NAS's copy and the client's temp dir; return what could not be removed.

    The client's temp dir (with the SMB authentication file) is removed whatever happens.
    """
    if shell.of(client).is_windows:  # one PowerShell script removes both copies
        return _remove_windows_copies(xfer, client, local_dir, address)
    try:
        problems = xfer.method.remove_copy(xfer, client, server, local_dir, address)
    except ValueError as exc:
        problems = [f"the copy on the NAS: {exc}"]
    finally:
        result = client.run(transfer.cleanup_argv(local_dir), timeout_s=SETUP_TIMEOUT_S)
    if not result.ok:
        problems.append(f"rm -rf {local_dir}: {result.stderr.strip()}")
    return problems


def _remove_windows_copies(
    xfer: Transfer, client: Runner, local_dir: str, address: str
) -> list[str]:
    """A Windows client: the share's copy and the %TEMP% dir; what could not be removed."""
    share, remote = _windows_paths(xfer, address)
    assert xfer.smb_user is not None
    script = transfer_windows.cleanup_script(share, remote, local_dir, xfer.smb_user)
    result = client.run_script(script, stdin=_smb_password(xfer), timeout_s=SETUP_TIMEOUT_S)
    said = [line.strip() for line in result.stdout.splitlines() if line.startswith("nasplan:")]
    return said + ([] if result.ok else [f"cleanup exited {result.exited}"])


def prepare_client(
    xfer: Transfer, client: HostSession, ctx: RunContext
) -> tuple[str | None, str | None]:
    """Check the tool, make the temp dir and source file; return (local dir, error)."""
    assert client.runner is not None
    way = xfer.method
    windows = shell.of(client.runner).is_windows
    if windows and not way.windows:
        return None, transfer_windows.only_smb(client.host.name, way.name)
    if not windows:
        tool = way.tool(xfer)
        if not client.runner.run(["sh", "-c", 'command -v "$1"', "sh", tool]).ok:
            return None, f"{tool} is not installed on {client.host.name}"
    secret, error = way.credentials(xfer)
    if error is not None:
        return None, error
    stdin = None
    if secret is not None:
        ctx.mask(secret)
        stdin = way.auth_stdin(xfer, secret)
    timeout_s = SETUP_TIMEOUT_S + xfer.size_bytes / SLOWEST_BYTES_PER_SECOND
    if windows:
        return transfer_windows.make_source(client.runner, xfer.size_bytes, timeout_s)
    result = client.runner.run_script(
        transfer.setup_script(xfer.size_bytes, with_auth=stdin is not None),
        stdin=stdin,
        timeout_s=timeout_s,
    )
    local_dir = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    if not result.ok or not local_dir.startswith("/"):
        return None, f"cannot create the source file on {client.host.name}: {result.stderr.strip()}"
    return local_dir, None


def _run_directions(
    test: PlanTest,
    xfer: Transfer,
    client: Runner,
    local_dir: str,
    address: str,
    ctx: RunContext,
    record: dict[str, Any],
    errors: list[str],
    clock: timeline.Clock,
) -> None:
    total = test.repetitions * len(xfer.directions)
    speed = (record["path"] or {}).get("speed_bits_per_second")
    total_s = total * xfer.size_bytes * 8 / speed if speed else 0.0
    on_nas: Transfer | None = None  # the last write that put the file on the NAS
    for direction in xfer.directions:
        if direction == "read" and on_nas is None:
            # A read needs the file on the NAS: put it there once, untimed.
            on_nas = xfer.method.write_target(xfer, 0)
            seed, raw = repetition(client, on_nas, "write", local_dir, address)
            first = test.first_repetition  # a later part of the test seeds a file of its own
            ctx.save_raw(f"raw/{test.dir_name}/seed{'' if first == 1 else f'-{first}'}.txt", raw)
            if seed["status"] != "ok":
                errors.append(f"could not place the file on the NAS for reading: {seed['error']}")
                return
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, total_s, direction)
            written = xfer.method.write_target(xfer, index)
            target = written if direction == "write" else on_nas or xfer
            started_s = clock.now_s()
            rep, raw = repetition(client, target, direction, local_dir, address)
            rep.update(started_s=started_s, ended_s=clock.now_s())
            if direction == "write" and rep["status"] == "ok":
                on_nas = target
            name = f"raw/{test.dir_name}/{direction}-{index}.txt"
            raw_file = ctx.save_raw(name, raw)
            record["repetitions"].append({"index": index, **rep, "raw_file": raw_file})
            ctx.checkpoint(record)
            if rep["error"]:
                errors.append(f"{direction} {index}: {rep['error']}")


class FileTransfer(Kind[TransferSettings]):
    """``kind: transfer``: file copies between a client and the NAS, in MiB/s, each direction
    judged against the run's network and disk measurements."""

    name = "transfer"
    phrase = "file transfers"
    groups = ("File transfers",)
    metric = "bytes_per_second"
    timeline_quantity = BYTES
    directed = True
    path_rate = True
    short_start = "start-up (the connection, a login, TCP slow start)"
    section = "transfers"

    def settings(self, test: PlanTest) -> TransferSettings:
        """The keys the plan schema allows for a transfer."""
        known = TransferSettings.__dataclass_fields__
        return TransferSettings(**{k: v for k, v in test.settings.items() if k in known})

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        """The client's tool for the method (rsync on both ends); a copy needs only the shell."""
        return methods.method(s.method).needs(test, s)

    def describe(self, test: PlanTest, s: TransferSettings) -> str:
        return (
            f"transfer {s.method} {test.client} <-> {target_label(test)}, "
            f"{s.direction}, {s.size} x {test.repetitions_text}"
        )

    def estimate(self, test: PlanTest, s: TransferSettings, plan: Plan) -> Estimate:
        """Each part makes its source file (and puts a copy on the NAS first when it only
        reads); each repetition copies the file each way at the path's rate."""
        rate, said = copy_rate(plan, test)
        size_bytes = parse_size(s.size)
        copy_s = size_bytes / rate + STEP_S
        seed_s = copy_s if s.direction == "read" else 0.0
        part_s = PART_S + size_bytes / SOURCE_BYTES_PER_SECOND + seed_s
        directions = len(directions_asked(s.direction))
        seconds = parts(plan, test) * part_s + copy_s * directions * test.repetitions
        return Estimate(seconds, (said,))

    def probes(
        self,
        test: PlanTest,
        s: TransferSettings,
        plan: Plan,
        sessions: Mapping[str, HostSession],
    ) -> list[Probe]:
        """What its method reads (the share, the export, the NAS's or the mount's directory);
        CannotStart (or ValueError) for what the run could not start with."""
        server = sessions.get(test.server)
        if server is None or server.facts is None:
            return []
        xfer = transfer_for(s, test, server, "check")
        return xfer.method.probes(xfer, test, target_address(test, plan, server))

    def run(self, test: PlanTest, s: TransferSettings, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one transfer test; failures are recorded, never raised."""
        record = new_record(
            test, {**path_params(test, target_label(test)), **test.settings}, "bits_per_second"
        )
        record["directions"] = {}
        token = secrets.token_hex(4)
        try:
            pair = open_pair(test, ctx, self.needs(test, s))
            xfer = transfer_for(s, test, pair.server, token)
            if not shell.of(pair.client.runner).is_windows:
                check_commands(xfer, pair.address)
            elif xfer.method.windows:  # Windows copies to a UNC path: no smbclient syntax
                _windows_paths(xfer, pair.address)  # ValueError for a name a share cannot hold
        except (CannotStart, ValueError) as exc:
            record["error"] = str(exc)
            return record
        server, client, address = pair.server, pair.client, pair.address
        assert server.runner is not None and client.runner is not None
        record["params"].update(address=address, size_bytes=xfer.size_bytes, method=s.method)
        record["params"]["direction"] = "both" if len(xfer.directions) == 2 else xfer.directions[0]
        record["path"] = pair.path
        local_dir, error = prepare_client(xfer, client, ctx)
        if local_dir is None:
            record["error"] = error
            return record
        errors: list[str] = []
        try:
            # bottleneck and cache_warning come later, from the run's verdicts (``annotated``)
            with sampling.sampling(ctx.sessions, test.hosts, token, ctx.tasks) as resources:
                clock = timeline.Clock()
                _run_directions(
                    test, xfer, client.runner, local_dir, address, ctx, record, errors, clock
                )
            record["resources"] = resources
            record["timeline"] = timeline.timeline(timeline.transfer_series(record, resources))
        finally:
            problems = _cleanup(xfer, client.runner, server.runner, local_dir, address)
            for problem in problems:
                warn(record, f"cleanup: {problem}")
            # A file the run made and could not remove fails the test, its paths in the error.
            errors += [f"cleanup: {p}" for p in problems]
        summarize_directions(record, xfer.directions)
        return finish(record, errors)

    def summarize(self, record: dict[str, Any], s: TransferSettings) -> dict[str, Any]:
        """Summaries per direction and the status, from its repetitions."""
        return finish_directions(record, directions_asked(s.direction))

    def measured(self, record: Record, series: Series | None) -> str:
        method = str((record.get("params") or {}).get("method") or "?")
        return f"{methods.label(method)} {series.direction if series else ''}".strip()

    def detail_text(self, record: Record) -> str:
        return f", file {format_size((record.get('params') or {}).get('size_bytes'))}"

    def copy_label(self, record: Record) -> str | None:
        return methods.label(str((record.get("params") or {}).get("method") or "transfer"))


KIND = FileTransfer()
