"""``through:`` of a test that works in a directory of the NAS (``kind: disk-profile``): run on a
client through the NAS's share instead of on the NAS, the share mounted there by nasplan for
the test and unmounted on every way out (``nasplan.measure.mounts``).

``through: {method: smb, client: ws, share: data, user: ann, password_env: NAS_PW}``,
``{method: nfs, client: ws, export: /volume1/data}`` (``path``: a directory inside the share)
or ``{method: iscsi, client: ws, target: IQN, lun: 0, scratch: true}`` (the LUN itself: fio on
its block device, or on the bridge's file). Where the client has no kernel client for NFS or
iSCSI (or no root), the user-space bridge serves ONE file of the export, or the LUN, as a file
on FUSE (``nasplan.nbd_bridge``): fio runs on it, one request at a time at the NAS. An SMB share
or NFS export is mounted from the NAS's address, or from ``target: nas.p2p10`` (one of its
addresses, as a transfer's ``target``: ``PlanTest.target``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest
from nasplan.measure import mounts
from nasplan.measure.kind import RunContext
from nasplan.measure.pair import target_address
from nasplan.measure.record import warn
from nasplan.remote.runner import Runner

# writing the test file once, at 0.5 MB/s at worst
_LAYOUT_BYTES_PER_SECOND = 500_000
_LAYOUT_MARGIN_S = 60


@dataclass(frozen=True)
class Through:
    """Where a test runs instead of on the NAS: ``client``, through the NAS's share."""

    method: str
    client: str
    share: str  # the SMB share or the NFS export
    path: str = ""  # a directory inside the share
    user: str | None = None
    password_env: str | None = None
    domain: str | None = None
    version: str | None = None
    how: str = "auto"
    lun: int = 0  # iscsi: the LUN, its portal's port, whether it may be written
    port: int = mounts.ISCSI_PORT
    scratch: bool = False
    target: str | None = None  # smb, nfs: the NAS's address name mounted from (nas.p2p10)
    server: str = ""  # that address, once the run knows it (``at``)

    def params(self) -> dict[str, Any]:
        """What run.json's params say of it (no secret: the variable's name only)."""
        return {
            "method": self.method,
            "client": self.client,
            "share": self.share,
            "path": self.path or None,
            "user": self.user,
            "mount": self.how,
            **({} if self.on_lun else {"target": self.target, "address": self.server or None}),
            **({"lun": self.lun, "scratch": self.scratch} if self.on_lun else {}),
        }

    @property
    def on_lun(self) -> bool:
        """Through an iSCSI LUN: what fio writes destroys what the LUN holds."""
        return self.method == mounts.ISCSI


def through_of(settings: Mapping[str, Any]) -> Through | None:
    """The test's ``through:`` (schema-checked), None without one."""
    given = settings.get("through")
    if not given:
        return None
    # (the schema allows one name of each: the method's)
    method = str(given["method"])
    share = given.get("share") or given.get("export") or given.get("target")
    version = given.get("version")
    return Through(
        method=method,
        client=str(given["client"]),
        share=str(share),
        path=str(given.get("path") or "").strip("/"),
        user=given.get("user") or given.get("chap_user"),
        password_env=given.get("password_env") or given.get("chap_secret_env"),
        domain=given.get("domain"),
        version=None if version is None else str(version),
        how=str(given.get("mount", "auto")),
        lun=int(given.get("lun", 0)),
        port=int(given.get("port", mounts.ISCSI_PORT)),
        scratch=bool(given.get("scratch", False)),
        target=None if method == mounts.ISCSI else given.get("target"),
    )


def at(through: Through, test: PlanTest, ctx: RunContext, nas: str) -> Through:
    """``through`` with the address it mounts from: its ``target``'s (the test's), else the
    NAS's; CannotStart when that interface has no address."""
    return replace(through, server=target_address(test, ctx.plan, ctx.sessions[nas]))


def share_of(through: Through, ctx: RunContext, size_bytes: int) -> mounts.Share:
    """The share to mount from ``through.server`` (``at``); its password from the control
    node's environment (masked in every file the run writes); CannotStart when it is unset.
    ``size_bytes``: the bridge's file on an NFS export."""
    password = None
    if through.password_env:
        password = os.environ.get(through.password_env)
        if not password:
            raise CannotStart(
                f"the environment variable {through.password_env} (through's password_env) "
                "is not set on this machine"
            )
        ctx.mask(password)
    return mounts.Share(
        protocol=through.method,
        server=through.server,
        name=through.share,
        user=through.user,
        password=password,
        domain=through.domain,
        version=through.version,
        how=through.how,
        lun=through.lun,
        port=through.port,
        path=through.path,
        size_bytes=size_bytes,
    )


@contextmanager
def client_place(
    ctx: RunContext, through: Through, token: str, record: dict[str, Any], size_bytes: int,
) -> Iterator[tuple[HostSession, str, mounts.Mounted]]:  # fmt: skip
    """The client's session, the share's directory there (``through.path`` inside it; the
    file or device itself through the bridge or an iSCSI login) and the mount, in place for the
    ``with`` block; said in the record's params (``through.mounted``, ``through.bridge``); an
    unmount that failed is a warning of the test. CannotStart when it cannot be mounted."""
    session = ctx.sessions[through.client]
    if session.runner is None:
        raise CannotStart(f"{through.client}: not reachable to mount the share")
    problems: list[str] = []
    share = share_of(through, ctx, size_bytes)
    try:
        with mounts.mounted(session.runner, share, token, problems, through.path) as found:
            record["params"]["through"]["mounted"] = found.describe()
            record["params"]["through"]["bridge"] = found.bridged
            inside = found.plain and through.path
            yield session, "/".join(p for p in (found.path, inside) if p), found
    finally:
        for problem in problems:
            warn(record, f"{problem} (the next run's clean-up of {through.client} unmounts it)")


def lay_out(runner: Runner, fio_path: str, filename: str, size_bytes: int) -> str | None:
    """Write the test file in full before the grid runs (CrystalDiskMark's preparation): fio
    lays a missing file out with ftruncate, which smbnetfs refuses (EIO); a file already its
    size is used as it is. None when done, else what fio said."""
    argv = [
        fio_path, "--name=nasplan-layout", f"--filename={filename}", "--rw=write",
        "--bs=1048576", f"--size={size_bytes}", "--ioengine=psync", "--end_fsync=1",
        "--output-format=json",
    ]  # fmt: skip
    timeout = size_bytes / _LAYOUT_BYTES_PER_SECOND + _LAYOUT_MARGIN_S
    result = runner.run(argv, timeout_s=timeout)
    if result.ok:
        return None
    return f"fio could not write the test file {filename}: {result.stderr.strip()[-300:]}"
