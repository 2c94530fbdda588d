"""The ``transfer`` test kind: copy a generated incompressible file to and from the NAS, timed.

One source file per test, made on the client (``head -c SIZE /dev/urandom``); each write
repetition sends it to the NAS, each read repetition fetches the NAS's copy back. The NAS's
copy and the client's temp dir are removed in ``finally``, also after a failure.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from dataclasses import dataclass
from typing import Any

from nasplan.errors import CannotStart
from nasplan.hosts import shell
from nasplan.hosts.session import HostSession
from nasplan.input.matrix import file_stem
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
from nasplan.measure.tools import transfer, transfer_windows
from nasplan.runner import Runner
from nasplan.units import parse_size

TOOLS = {"smb": "smbclient", "rsync": "rsync", "copy": "dd", "nfs": "dd"}
# Reads go to /dev/null where the tool allows it, so the client's own disk is not measured;
# rsync needs a real file and writes into the client's temp dir.
DISCARD = "/dev/null"
SETUP_TIMEOUT_S = 60.0
# Slowest rate a repetition may take before it is killed: 0.5 MB/s (10^6 bytes/s).
SLOWEST_BYTES_PER_SECOND = 500_000


@dataclass(frozen=True)
class Transfer:
    """One test's settings, checked: method, directions, size, where the NAS's copy goes."""

    method: str
    directions: tuple[str, ...]
    size_bytes: int
    remote_name: str
    # the repetitions' numbers (nfs-cp writes a file of its own for each)
    indices: range = range(1, 2)
    share: str | None = None
    smb_user: str | None = None
    password_env: str | None = None
    remote_dir: str | None = None
    mounted_path: str | None = None
    export: str | None = None
    nfs_version: int | None = None
    server_path: str | None = None
    ssh: transfer.SshOptions = dataclasses.field(default_factory=transfer.SshOptions)

    @property
    def timeout_s(self) -> float:
        return 60.0 + self.size_bytes / SLOWEST_BYTES_PER_SECOND


@dataclass(frozen=True)
class TransferSettings:
    """A transfer test's settings as the plan gives them, each default stated here once."""

    method: str = "smb"
    direction: str = "both"
    size: str | int = "1GiB"
    share: str | None = None
    user: str | None = None
    password_env: str | None = None
    path: str | None = None
    mounted_path: str | None = None
    export: str | None = None
    nfs_version: int | None = None
    server_path: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_identity: str | None = None
    ssh_known_hosts: str | None = None


def settings(test: PlanTest) -> TransferSettings:
    """Plan settings -> a TransferSettings (keys the plan schema allows for a transfer)."""
    known = TransferSettings.__dataclass_fields__
    return TransferSettings(**{k: v for k, v in test.settings.items() if k in known})


def transfer_for(s: TransferSettings, test: PlanTest, server: HostSession, token: str) -> Transfer:
    """The settings made concrete for one run; CannotStart naming what the method misses."""
    directions = transfer.DIRECTIONS if s.direction == "both" else (s.direction,)
    name = f"nasplan-{file_stem(test.id)}-{token}.bin"
    base = Transfer(s.method, directions, parse_size(s.size), name, test.indices)
    if s.method == "smb":
        if not s.share or not s.password_env:
            raise CannotStart(f"method smb needs {'share' if not s.share else 'password_env'}")
        return dataclasses.replace(
            base,
            share=s.share,
            password_env=s.password_env,
            smb_user=str(s.user or server.host.user or "guest"),
            remote_dir=s.path,
        )
    if s.method == "rsync":
        if not s.path:
            raise CannotStart("method rsync needs path (a directory on the NAS)")
        ssh = transfer.SshOptions(
            user=s.ssh_user or server.host.user,
            port=s.ssh_port or server.host.port,
            identity_file=s.ssh_identity,
            known_hosts=s.ssh_known_hosts,
        )
        return dataclasses.replace(base, remote_dir=s.path, ssh=ssh)
    if s.method == "nfs" and s.export:
        return dataclasses.replace(
            base,
            export=str(s.export),
            nfs_version=s.nfs_version,
            server_path=str(s.server_path or s.export),
        )
    if not s.mounted_path:
        needed = "export (nfs-cp) or mounted_path" if s.method == "nfs" else "mounted_path"
        raise CannotStart(f"method {s.method} needs {needed} (where the client mounts the NAS)")
    return dataclasses.replace(base, mounted_path=s.mounted_path)


def _write_target(xfer: Transfer, index: int) -> Transfer:
    """The Transfer of write ``index`` (0: the untimed seed): nfs-cp needs a new file each time."""
    if xfer.export is None:
        return xfer
    stem, dot, suffix = xfer.remote_name.rpartition(".")
    return dataclasses.replace(xfer, remote_name=f"{stem}-{index}{dot}{suffix}")


def _join(directory: str | None, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}" if directory else name


def _command(
    xfer: Transfer, direction: str, local_dir: str, address: str
) -> tuple[list[str], list[list[str]]]:
    """(timed argv, untimed argv run just before) for one repetition."""
    source = f"{local_dir}/{transfer.SOURCE_NAME}"
    read_copy = f"{local_dir}/{transfer.READ_NAME}"
    before = [transfer.remove_argv(read_copy)] if direction == "read" else []
    if xfer.method == "smb":
        assert xfer.share is not None
        command = (
            transfer.smb_put(source, xfer.remote_name)
            if direction == "write"
            else transfer.smb_get(xfer.remote_name, DISCARD)
        )
        auth = f"{local_dir}/{transfer.AUTH_NAME}"
        argv = transfer.smbclient_argv(
            address, xfer.share, auth, command, directory=xfer.remote_dir
        )
        return argv, before
    if xfer.method == "rsync":
        remote = transfer.rsync_remote(xfer.ssh, address, _join(xfer.remote_dir, xfer.remote_name))
        if direction == "write":
            return transfer.rsync_argv(xfer.ssh, source, remote), before
        return transfer.rsync_argv(xfer.ssh, remote, read_copy), before
    if xfer.export is not None:
        url = transfer.nfs_url(address, xfer.export, xfer.remote_name, xfer.nfs_version)
        if direction == "write":
            return transfer.nfs_cp_argv(source, url), before
        # nfs-cp cannot write to /dev/null (it creates its destination exclusively).
        return transfer.nfs_cp_argv(url, read_copy), before
    mounted = _join(xfer.mounted_path, xfer.remote_name)
    if direction == "write":
        return transfer.dd_write_argv(source, mounted), before
    # The client's page cache still holds what it just wrote through the mount.
    return transfer.dd_read_argv(mounted, DISCARD), [
        *before,
        transfer.drop_file_cache_argv(mounted),
    ]


def _tool(xfer: Transfer) -> str:
    return "nfs-cp" if xfer.export is not None else TOOLS[xfer.method]


def _windows_paths(xfer: Transfer, address: str) -> tuple[str, str]:
    """(``\\\\NAS\\share``, the NAS copy's UNC path) for a Windows client."""
    assert xfer.share is not None
    return transfer_windows.share_paths(address, xfer.share, xfer.remote_dir, xfer.remote_name)


def _smb_password(xfer: Transfer) -> str:
    """The SMB password line for a Windows script's stdin (checked in ``prepare_client``)."""
    return os.environ.get(xfer.password_env or "", "") + "\n"


def _parse_tool(xfer: Transfer, output: str) -> dict[str, float | int | None]:
    method = xfer.method
    if xfer.export is not None:
        return transfer.parse_nfs_cp(output)
    if method == "smb":
        return transfer.parse_smbclient(output)
    if method == "rsync":
        return transfer.parse_rsync(output)
    return transfer.parse_dd(output)


def repetition(
    client: Runner, xfer: Transfer, direction: str, local_dir: str, address: str
) -> tuple[dict[str, Any], str]:
    """Run one timed transfer; return (repetition fields, raw output). Never raises."""
    rep: dict[str, Any] = {"direction": direction, "status": "failed", "error": None}
    if shell.of(client).is_windows:
        argv = ["Copy-Item" if direction == "write" else "FileStream.CopyTo"]
        share, remote = _windows_paths(xfer, address)
        assert xfer.smb_user is not None
        script = transfer_windows.timed_copy_script(
            share, remote, local_dir, direction, xfer.smb_user
        )
        result = client.run_script(script, stdin=_smb_password(xfer), timeout_s=xfer.timeout_s)
    else:
        argv, before = _command(xfer, direction, local_dir, address)
        result = client.run_script(transfer.timed_script(argv, before), timeout_s=xfer.timeout_s)
    raw = result.stdout + result.stderr
    try:
        duration_s, exited, output = transfer.parse_timed(result.stdout.replace("\r\n", "\n"))
        if shell.of(client).is_windows:  # timed by the script itself: no tool rate to read
            tool: dict[str, float | int | None] = {"tool_bytes_per_second": None}
        else:
            tool = _parse_tool(xfer, output)
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
        _command(xfer, direction, "/nasplan-check", address)
        _command(_write_target(xfer, 0), direction, "/nasplan-check", address)


def _remove_on_nas(server: Runner, paths: list[str]) -> list[str]:
    """``rm -f`` the NAS's copies as the login user, then as root when that is refused (files an
    NFS server wrote belong to root or its anonymous user, not to a DSM admin); [] when gone,
    else one problem naming every path."""
    argv = ["rm", "-f", "--", *paths]
    result = server.run(argv, timeout_s=SETUP_TIMEOUT_S)
    if not result.ok:
        result = server.run(argv, timeout_s=SETUP_TIMEOUT_S, sudo=True)
    if result.ok:
        return []
    cause = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exited}"]
    return [f"files left on the NAS: {' '.join(paths)} (rm, also with sudo: {cause[0]})"]


def _cleanup(
    xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
) -> list[str]:
    """Remove the NAS's copy and the client's temp dir; return what could not be removed.

    The client's temp dir (with the SMB authentication file) is removed whatever happens.
    """
    if shell.of(client).is_windows:  # one PowerShell script removes both copies
        return _remove_windows_copies(xfer, client, local_dir, address)
    try:
        problems = _remove_remote_copy(xfer, client, server, local_dir, address)
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


def _remove_remote_copy(
    xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
) -> list[str]:
    """Remove the file the test put on the NAS; return what could not be removed."""
    problems: list[str] = []
    if xfer.method == "smb":
        assert xfer.share is not None
        argv = transfer.smbclient_argv(
            address,
            xfer.share,
            f"{local_dir}/{transfer.AUTH_NAME}",
            transfer.smb_del(xfer.remote_name),
            directory=xfer.remote_dir,
        )
        result = client.run(argv, timeout_s=SETUP_TIMEOUT_S)
        gone = "NT_STATUS_OBJECT_NAME_NOT_FOUND" in result.stdout + result.stderr
        if not result.ok and not gone:
            problems.append(f"smbclient del {xfer.remote_name}: {result.stdout.strip()}")
    elif xfer.method == "rsync":
        path = _join(xfer.remote_dir, xfer.remote_name)
        problems += _remove_on_nas(server, [path])
    elif xfer.export is not None:
        # libnfs-utils has no nfs-rm: the NAS removes every file the writes may have made.
        paths = [
            _join(xfer.server_path, _write_target(xfer, index).remote_name)
            for index in (0, *xfer.indices)
        ]
        problems += _remove_on_nas(server, paths)
    else:
        path = _join(xfer.mounted_path, xfer.remote_name)
        result = client.run(transfer.remove_argv(path), timeout_s=SETUP_TIMEOUT_S)
        if not result.ok:
            problems.append(f"rm {path}: {result.stderr.strip()}")
    return problems


def prepare_client(
    xfer: Transfer, client: HostSession, ctx: RunContext
) -> tuple[str | None, str | None]:
    """Check the tool, make the temp dir and source file; return (local dir, error)."""
    assert client.runner is not None
    if shell.of(client.runner).is_windows:
        return _prepare_windows_client(xfer, client, ctx)
    tool = _tool(xfer)
    if not client.runner.run(["sh", "-c", 'command -v "$1"', "sh", tool]).ok:
        return None, f"{tool} is not installed on {client.host.name}"
    stdin = None
    if xfer.method == "smb":
        assert xfer.password_env is not None and xfer.smb_user is not None
        password = os.environ.get(xfer.password_env)
        if not password:
            return None, f"environment variable {xfer.password_env} (SMB password) is not set"
        ctx.mask(password)
        stdin = transfer.smb_auth_file(xfer.smb_user, password)
    timeout_s = SETUP_TIMEOUT_S + xfer.size_bytes / SLOWEST_BYTES_PER_SECOND
    result = client.runner.run_script(
        transfer.setup_script(xfer.size_bytes, with_auth=stdin is not None),
        stdin=stdin,
        timeout_s=timeout_s,
    )
    local_dir = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    if not result.ok or not local_dir.startswith("/"):
        return None, f"cannot create the source file on {client.host.name}: {result.stderr.strip()}"
    return local_dir, None


def _prepare_windows_client(
    xfer: Transfer, client: HostSession, ctx: RunContext
) -> tuple[str | None, str | None]:
    """Windows: only SMB (its built-in client), the source file in a private %TEMP% dir."""
    assert client.runner is not None
    if xfer.method != "smb":
        return None, transfer_windows.only_smb(client.host.name, xfer.method)
    password = os.environ.get(xfer.password_env or "")
    if not password:
        return None, f"environment variable {xfer.password_env} (SMB password) is not set"
    ctx.mask(password)
    timeout_s = SETUP_TIMEOUT_S + xfer.size_bytes / SLOWEST_BYTES_PER_SECOND
    return transfer_windows.make_source(client.runner, xfer.size_bytes, timeout_s)


def run(test: PlanTest, s: TransferSettings, ctx: RunContext) -> dict[str, Any]:
    """Run every repetition of one transfer test; failures are recorded, never raised."""
    record = new_record(
        test, {**path_params(test, target_label(test)), **test.settings}, "bits_per_second"
    )
    record["directions"] = {}
    token = secrets.token_hex(4)
    try:
        pair = open_pair(test, ctx, needs(test, s))
        xfer = transfer_for(s, test, pair.server, token)
        if not shell.of(pair.client.runner).is_windows:
            check_commands(xfer, pair.address)
        elif xfer.method == "smb":  # Windows copies to a UNC path: no smbclient syntax
            _windows_paths(xfer, pair.address)  # ValueError for a name a share cannot hold
    except (CannotStart, ValueError) as exc:
        record["error"] = str(exc)
        return record
    server, client, address = pair.server, pair.client, pair.address
    assert server.runner is not None and client.runner is not None
    record["params"].update(address=address, size_bytes=xfer.size_bytes, method=xfer.method)
    record["params"]["direction"] = "both" if len(xfer.directions) == 2 else xfer.directions[0]
    record["path"] = pair.path
    local_dir, error = prepare_client(xfer, client, ctx)
    if local_dir is None:
        record["error"] = error
        return record
    errors: list[str] = []
    try:
        # bottleneck and cache_warning come later, from analysis.annotate_transfers over the run.
        with sampling.sampling(ctx.sessions, test.hosts, token, ctx.tasks) as resources:
            clock = timeline.Clock()
            _run_directions(
                test, xfer, client.runner, local_dir, address, ctx, record, errors, clock
            )
        record["resources"] = resources
        record["timeline"] = timeline.timeline(timeline.transfer_series(record, resources))
    finally:
        problems = _cleanup(xfer, client.runner, server.runner, local_dir, address)
        ctx.warnings += [f"{test.id}: cleanup: {p}" for p in problems]
        # A file the run made and could not remove fails the test, its paths in the error.
        errors += [f"cleanup: {p}" for p in problems]
    summarize_directions(record, xfer.directions)
    return finish(record, errors)


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
            on_nas = _write_target(xfer, 0)
            seed, raw = repetition(client, on_nas, "write", local_dir, address)
            first = test.first_repetition  # a later part of the test seeds a file of its own
            ctx.save_raw(f"raw/{test.dir_name}/seed{'' if first == 1 else f'-{first}'}.txt", raw)
            if seed["status"] != "ok":
                errors.append(f"could not place the file on the NAS for reading: {seed['error']}")
                return
        for index in test.indices:
            ctx.progress.test(test.id, index, test.repetitions, total_s, direction)
            target = _write_target(xfer, index) if direction == "write" else on_nas or xfer
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


def describe(test: PlanTest, s: TransferSettings) -> str:
    """One line for ``apply --check``."""
    return (
        f"transfer {s.method} {test.client} <-> {target_label(test)}, "
        f"{s.direction}, {s.size} x {test.repetitions_text}"
    )


def needs(test: PlanTest, s: TransferSettings) -> Needs:
    """The client's tool for the method (rsync on both ends); a copy needs only the shell."""
    if s.method == "smb":
        return {test.client: ("smbclient",)}
    if s.method == "rsync":
        return {test.client: ("rsync",), test.server: ("rsync",)}
    if s.method == "nfs" and s.export:
        return {test.client: ("nfs-cp",)}
    return {}


def _summarize(record: dict[str, Any], s: TransferSettings) -> dict[str, Any]:
    """The record's summaries per direction and its status, from its repetitions."""
    directions = transfer.DIRECTIONS if s.direction == "both" else (s.direction,)
    return finish_directions(record, directions)


KIND = Kind(
    name="transfer",
    settings=settings,
    needs=needs,
    describe=describe,
    run=run,
    summarize=_summarize,
)
