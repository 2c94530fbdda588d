"""``method: rsync``: rsync over SSH to a directory of the NAS, host keys checked strictly."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from nasplan.errors import CannotStart
from nasplan.measure import probes
from nasplan.measure.methods.base import (
    Command,
    Parsed,
    Transfer,
    TransferMethod,
    TransferSettings,
    join,
    remove_on_nas,
)
from nasplan.measure.tools import transfer
from nasplan.remote.runner import Runner

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe


class Rsync(TransferMethod):
    """rsync of one file, always sent whole and uncompressed."""

    name = "rsync"
    label = "rsync"

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        return {test.client: ("rsync",), test.server: ("rsync",)}

    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        if not s.path:
            raise CannotStart("method rsync needs path (a directory on the NAS)")
        ssh = transfer.SshOptions(
            user=s.ssh_user or server.host.user,
            port=s.ssh_port or server.host.port,
            identity_file=s.ssh_identity,
            known_hosts=s.ssh_known_hosts,
        )
        return dataclasses.replace(base, remote_dir=s.path, ssh=ssh)

    def tool(self, xfer: Transfer) -> str:
        return "rsync"

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        remote = transfer.rsync_remote(xfer.ssh, address, join(xfer.remote_dir, xfer.remote_name))
        read_copy = f"{local_dir}/{transfer.READ_NAME}"
        if direction == "write":
            return transfer.rsync_argv(xfer.ssh, f"{local_dir}/{transfer.SOURCE_NAME}", remote), []
        return transfer.rsync_argv(xfer.ssh, remote, read_copy), [transfer.remove_argv(read_copy)]

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        return transfer.parse_rsync(output)

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The NAS's directory rsync writes into."""
        assert xfer.remote_dir is not None
        return [probes.writable_directory(test.server, xfer.remote_dir, "the rsync directory")]

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        return remove_on_nas(server, [join(xfer.remote_dir, xfer.remote_name)])
