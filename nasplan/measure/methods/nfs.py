"""``method: nfs``: libnfs's nfs-cp straight to an export (``export``: no mount, no root), or
dd through the client's own NFS mount (``mounted_path``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from nasplan.measure import probes
from nasplan.measure.methods.base import (
    Command,
    Parsed,
    Transfer,
    TransferSettings,
    join,
    remove_on_nas,
)
from nasplan.measure.methods.copy import Copy
from nasplan.measure.tools import transfer
from nasplan.remote.runner import Runner

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe


class Nfs(Copy):
    """NFS: nfs-cp with an ``export``, else a copy through the client's mount."""

    name = "nfs"
    label = "NFS"
    instead = "export (nfs-cp) or "

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        return {test.client: ("nfs-cp",)} if s.export else {}

    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        if not s.export:
            return super().concrete(s, base, server)
        return dataclasses.replace(
            base,
            export=str(s.export),
            nfs_version=s.nfs_version,
            server_path=str(s.server_path or s.export),
        )

    def tool(self, xfer: Transfer) -> str:
        return "nfs-cp" if xfer.export is not None else super().tool(xfer)

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        if xfer.export is None:
            return super().command(xfer, direction, local_dir, address)
        url = transfer.nfs_url(address, xfer.export, xfer.remote_name, xfer.nfs_version)
        if direction == "write":
            return transfer.nfs_cp_argv(f"{local_dir}/{transfer.SOURCE_NAME}", url), []
        # nfs-cp cannot write to /dev/null (it creates its destination exclusively).
        read_copy = f"{local_dir}/{transfer.READ_NAME}"
        return transfer.nfs_cp_argv(url, read_copy), [transfer.remove_argv(read_copy)]

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        if xfer.export is None:
            return super().parse(xfer, output)
        return transfer.parse_nfs_cp(output)

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The export, listed from the client (nfs-cp's way); through a mount: the mount."""
        if xfer.export is None:
            return super().probes(xfer, test, address)
        return [probes.nfs_export(test.client, address, xfer.export, xfer.nfs_version)]

    def write_target(self, xfer: Transfer, index: int) -> Transfer:
        """nfs-cp never overwrites: each write makes a file of its own."""
        if xfer.export is None:
            return xfer
        stem, dot, suffix = xfer.remote_name.rpartition(".")
        return dataclasses.replace(xfer, remote_name=f"{stem}-{index}{dot}{suffix}")

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        if xfer.export is None:
            return super().remove_copy(xfer, client, server, local_dir, address)
        # libnfs-utils has no nfs-rm: the NAS removes every file the writes may have made.
        paths = [
            join(xfer.server_path, self.write_target(xfer, index).remote_name)
            for index in (0, *xfer.indices)
        ]
        return remove_on_nas(server, paths)
