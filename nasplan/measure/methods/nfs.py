"""``method: nfs``: libnfs's nfs-cp straight to an export (``export``: no mount, no root), or
dd through the client's own NFS mount (``mounted_path``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from nasplan.measure import probes
from nasplan.measure.methods.base import SETUP_TIMEOUT_S, join, remove_on_nas
from nasplan.measure.methods.copy import Copy
from nasplan.measure.tools import transfer, transfer_sets

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe
    from nasplan.measure.methods.base import Command, Parsed, Transfer, TransferSettings
    from nasplan.remote.runner import Runner


class Nfs(Copy):
    """NFS: nfs-cp with an ``export``, else a copy through the client's mount."""

    name = "nfs"
    label = "NFS"
    instead = "export (nfs-cp) or "

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        # a set goes through libnfs in one mount (nfs_files.py, python3): nfs-cp's package
        return {c: ("nfs-cp",) for c in test.clients} if s.export else {}

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
        if xfer.export is not None and xfer.groups:
            return "python3"
        return "nfs-cp" if xfer.export is not None else super().tool(xfer)

    def client_files(self, xfer: Transfer) -> list[tuple[str, str]]:
        """nfs_files.py for a set to an export (one mount for every file)."""
        if xfer.export is None or not xfer.groups:
            return []
        return [(transfer_sets.HELPER_NAME, transfer_sets.helper_text())]

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        if xfer.export is None:
            return super().command(xfer, direction, local_dir, address)
        if xfer.groups:
            mode = "write" if direction == "write" else "read"
            argv = self._files_argv(xfer, local_dir, address, mode)
            return argv, []
        url = transfer.nfs_url(address, xfer.export, xfer.remote_name, xfer.nfs_version)
        if direction == "write":
            return transfer.nfs_cp_argv(f"{local_dir}/{transfer.SOURCE_NAME}", url), []
        # nfs-cp cannot write to /dev/null (it creates its destination exclusively).
        read_copy = f"{local_dir}/{transfer.READ_NAME}"
        return transfer.nfs_cp_argv(url, read_copy), [transfer.remove_argv(read_copy)]

    def _files_argv(self, xfer: Transfer, local_dir: str, address: str, mode: str) -> list[str]:
        assert xfer.export is not None
        local = f"{local_dir}/{xfer.remote_name}"
        return transfer_sets.nfs_files_argv(
            local_dir, address, xfer.export, xfer.remote_name, local, mode, xfer.nfs_version
        )

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        if xfer.export is None:
            return super().parse(xfer, output)
        if xfer.groups:
            return transfer_sets.parse_nfs_files(output)
        return transfer.parse_nfs_cp(output)

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The export, listed from the client (nfs-cp's way); through a mount: the mount."""
        if xfer.export is None:
            return super().probes(xfer, test, address)
        return [probes.nfs_export(test.client, address, xfer.export, xfer.nfs_version)]

    def write_target(self, xfer: Transfer, index: int) -> Transfer:
        """nfs-cp never overwrites: each write makes a file of its own (a set's files are
        truncated and written again)."""
        if xfer.export is None or xfer.groups:
            return xfer
        stem, dot, suffix = xfer.remote_name.rpartition(".")
        return dataclasses.replace(xfer, remote_name=f"{stem}-{index}{dot}{suffix}")

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        if xfer.export is None:
            return super().remove_copy(xfer, client, server, local_dir, address)
        if xfer.groups:
            argv = self._files_argv(xfer, local_dir, address, "remove")
            result = client.run(argv, timeout_s=SETUP_TIMEOUT_S + xfer.files * 0.1)
            try:
                transfer_sets.parse_nfs_files(result.stdout)
            except transfer.TransferParseError as exc:
                return [f"the set {xfer.remote_name} on the NAS: {exc}"]
            return []
        # libnfs-utils has no nfs-rm: the NAS removes every file the writes may have made.
        paths = [
            join(xfer.server_path, self.write_target(xfer, index).remote_name)
            for index in (0, *xfer.indices)
        ]
        return remove_on_nas(server, paths)
