"""``method: copy``: dd to and from a path where the client mounts the NAS (NFS, SMB, any)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from nasplan.errors import CannotStart
from nasplan.measure import probes
from nasplan.measure.methods.base import DISCARD, SETUP_TIMEOUT_S, TransferMethod, join
from nasplan.measure.tools import transfer, transfer_sets

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Probe
    from nasplan.measure.methods.base import Command, Parsed, Transfer, TransferSettings
    from nasplan.remote.runner import Runner


class Copy(TransferMethod):
    """dd through the client's own mount of the NAS (``mounted_path``)."""

    name = "copy"
    label = "copy"
    many_files = True
    # what the plan gives instead of a mounted path, when the method has another way
    instead = ""

    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        if not s.mounted_path:
            raise CannotStart(
                f"method {self.name} needs {self.instead}mounted_path (where the client "
                "mounts the NAS)"
            )
        return dataclasses.replace(base, mounted_path=s.mounted_path)

    def tool(self, xfer: Transfer) -> str:
        return "dd"

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        mounted = join(xfer.mounted_path, xfer.remote_name)
        if xfer.groups and direction == "write":
            source = f"{local_dir}/{xfer.remote_name}"
            return transfer_sets.cp_argv(source, join(xfer.mounted_path, "")), []
        if xfer.groups:  # the client's page cache still holds what it wrote through the mount
            before = [
                transfer_sets.fresh_read_dir_argv(local_dir),
                transfer_sets.drop_tree_cache_argv(mounted),
            ]
            read = f"{local_dir}/{transfer_sets.READ_DIR}/"
            return transfer_sets.cp_argv(mounted, read), before
        if direction == "write":
            return transfer.dd_write_argv(f"{local_dir}/{transfer.SOURCE_NAME}", mounted), []
        # The client's page cache still holds what it just wrote through the mount.
        before = [
            transfer.remove_argv(f"{local_dir}/{transfer.READ_NAME}"),
            transfer.drop_file_cache_argv(mounted),
        ]
        return transfer.dd_read_argv(mounted, DISCARD), before

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        if xfer.groups:  # cp says nothing when it copied all: its exit status tells
            said = output.strip().splitlines()
            if said:
                raise transfer.TransferParseError(said[-1])
            return {"tool_bytes_per_second": None, "bytes": None, "files": xfer.files}
        return transfer.parse_dd(output)

    def client_copies(self, xfer: Transfer) -> list[str]:
        """Through the client's mount: the copies' paths there."""
        if xfer.mounted_path is None or xfer.export is not None:
            return []
        paths = [join(xfer.mounted_path, copy.remote_name) for copy in self.copies(xfer)]
        return [p for p in paths if p.startswith("/")]

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The client's mount of the NAS, written into."""
        assert xfer.mounted_path is not None
        return [probes.writable_directory(test.client, xfer.mounted_path, "the mounted path")]

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        path = join(xfer.mounted_path, xfer.remote_name)
        argv = ["rm", "-rf", "--", path] if xfer.groups else transfer.remove_argv(path)
        result = client.run(argv, timeout_s=SETUP_TIMEOUT_S)
        return [] if result.ok else [f"rm {path}: {result.stderr.strip()}"]
