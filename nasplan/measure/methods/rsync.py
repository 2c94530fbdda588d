"""``method: rsync``: rsync over SSH to a directory of the NAS, host keys checked strictly."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from nasplan.errors import CannotStart
from nasplan.measure import probes
from nasplan.measure.methods.base import TransferMethod, join, remove_on_nas
from nasplan.measure.tools import transfer, transfer_sets

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe
    from nasplan.measure.methods.base import Command, Parsed, Transfer, TransferSettings
    from nasplan.remote.runner import Runner


# the known_hosts nasplan writes in the client's temp dir for rsync's ssh
KNOWN_HOSTS_NAME = "known_hosts"


class Rsync(TransferMethod):
    """rsync of one file, always sent whole and uncompressed."""

    name = "rsync"
    label = "rsync"
    many_files = True

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

    def client_files(self, xfer: Transfer) -> list[tuple[str, str]]:
        """A known_hosts of the NAS's verified key under each of its addresses (the cable's
        too), when the plan names no ``ssh_known_hosts``: checked as strictly, made by hand by
        no one."""
        if xfer.ssh.known_hosts or not xfer.nas_key:
            return []
        port = xfer.ssh.port
        names = [f"[{n}]:{port}" if port and port != 22 else n for n in xfer.nas_names]
        return [(KNOWN_HOSTS_NAME, "".join(f"{n} {xfer.nas_key}\n" for n in names))]

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        if not xfer.ssh.known_hosts and xfer.nas_key:
            ssh = dataclasses.replace(xfer.ssh, known_hosts=f"{local_dir}/{KNOWN_HOSTS_NAME}")
            xfer = dataclasses.replace(xfer, ssh=ssh)
        remote = transfer.rsync_remote(xfer.ssh, address, join(xfer.remote_dir, xfer.remote_name))
        if xfer.groups:
            return self._set_command(xfer, direction, local_dir, address, remote)
        read_copy = f"{local_dir}/{transfer.READ_NAME}"
        if direction == "write":
            source = f"{local_dir}/{transfer.SOURCE_NAME}"
            (scratch,) = self.nas_scratch(xfer)
            return transfer.rsync_argv(xfer.ssh, source, remote, temp_dir=scratch), []
        return transfer.rsync_argv(xfer.ssh, remote, read_copy), [transfer.remove_argv(read_copy)]

    def _set_command(
        self, xfer: Transfer, direction: str, local_dir: str, address: str, remote: str
    ) -> Command:
        """A set's directory into the NAS's directory, or back into read/."""
        if direction == "write":
            into = transfer.rsync_remote(xfer.ssh, address, join(xfer.remote_dir, ""))
            source = f"{local_dir}/{xfer.remote_name}"
            return transfer.rsync_argv(xfer.ssh, source, into, recursive=True), []
        read = f"{local_dir}/{transfer_sets.READ_DIR}/"
        before = [transfer_sets.fresh_read_dir_argv(local_dir)]
        return transfer.rsync_argv(xfer.ssh, remote, read, recursive=True), before

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        parsed = transfer.parse_rsync(output)
        return (
            {**parsed, "files": transfer_sets.parse_rsync_files(output)} if xfer.groups else parsed
        )

    def nas_scratch(self, xfer: Transfer) -> list[str]:
        """A file's write: the directory rsync writes its temp file in (``--temp-dir``), beside
        the copy on the same file system (renamed into place as without it: the same work is
        measured), named ``nasplan-*`` so that the lock's clean-up removes what a killed copy
        left there. A set's temp files are inside its own recorded directory already."""
        return [] if xfer.groups else [join(xfer.remote_dir, f"{xfer.remote_name}.tmp")]

    def nas_path(self, xfer: Transfer) -> str | None:
        """rsync's ``path`` is the NAS's own."""
        return join(xfer.remote_dir, xfer.remote_name)

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The NAS's directory rsync writes into."""
        assert xfer.remote_dir is not None
        return [probes.writable_directory(test.server, xfer.remote_dir, "the rsync directory")]

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        paths = [join(xfer.remote_dir, xfer.remote_name), *self.nas_scratch(xfer)]
        return remove_on_nas(server, paths, recursive=True)
