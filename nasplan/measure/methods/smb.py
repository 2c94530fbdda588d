"""``method: smb``: smbclient puts the file on a share and gets it back (a Windows client: its
own SMB client, ``methods/smb_windows.py``); the password from the environment, on stdin."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from nasplan.measure import probes
from nasplan.measure.methods import smb_windows
from nasplan.measure.methods.base import (
    DISCARD,
    SETUP_TIMEOUT_S,
    ClientCopy,
    TransferMethod,
    join,
    needs_setting,
)
from nasplan.measure.tools import transfer, transfer_sets

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe
    from nasplan.measure.methods.base import Command, Parsed, Transfer, TransferSettings
    from nasplan.platforms import Platform
    from nasplan.remote.runner import Runner


# what smbclient says of a name that is not on the share: a missing file in a directory that
# is there (``del``: ``NT_STATUS_NO_SUCH_FILE listing \\NAME``), a missing name or directory
NOT_THERE = (
    "NT_STATUS_NO_SUCH_FILE",
    "NT_STATUS_OBJECT_NAME_NOT_FOUND",
    "NT_STATUS_OBJECT_PATH_NOT_FOUND",
)


class Smb(TransferMethod):
    """SMB to a share of the NAS."""

    name = "smb"
    label = "SMB"
    many_files = True

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        return {test.client: ("smbclient",)}

    def own_copy(self, platform: Platform) -> ClientCopy | None:
        """A client whose scripts are PowerShell copies with Windows' own SMB client."""
        return smb_windows.OWN_COPIES.get(platform.scripts)

    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        if not s.share or not s.password_env:
            raise needs_setting(self.name, "share" if not s.share else "password_env")
        return dataclasses.replace(
            base,
            share=s.share,
            password_env=s.password_env,
            smb_user=str(s.user or server.host.user or "guest"),
            remote_dir=s.path,
        )

    def tool(self, xfer: Transfer) -> str:
        return "smbclient"

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        assert xfer.share is not None
        source = f"{local_dir}/{transfer.SOURCE_NAME}"
        before = [transfer.remove_argv(f"{local_dir}/{transfer.READ_NAME}")]
        if xfer.groups and direction == "write":
            command, before = transfer_sets.smb_mput(local_dir, xfer.remote_name), []
        elif xfer.groups:  # a set comes back into read/ (smbclient has no /dev/null for it)
            command = transfer_sets.smb_mget(local_dir, xfer.remote_name)
            before = [transfer_sets.fresh_read_dir_argv(local_dir)]
        elif direction == "write":
            command, before = transfer.smb_put(source, xfer.remote_name), []
        else:
            command = transfer.smb_get(xfer.remote_name, DISCARD)
        auth = f"{local_dir}/{transfer.AUTH_NAME}"
        argv = transfer.smbclient_argv(
            address, xfer.share, auth, command, directory=xfer.remote_dir
        )
        return argv, before

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        if xfer.groups:
            return transfer_sets.parse_smbclient_set(output)
        return transfer.parse_smbclient(output)

    def nas_path(self, xfer: Transfer) -> str | None:
        """The share's directory on the NAS (``server_path``, its volume's) and ``path`` in it."""
        if not xfer.server_path:
            return None
        directory = join(xfer.server_path, xfer.remote_dir) if xfer.remote_dir else xfer.server_path
        return join(directory, xfer.remote_name)

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        assert xfer.share is not None
        argv = transfer.smbclient_argv(
            address,
            xfer.share,
            f"{local_dir}/{transfer.AUTH_NAME}",
            transfer_sets.smb_deltree(xfer.remote_name)
            if xfer.groups
            else transfer.smb_del(xfer.remote_name),
            directory=xfer.remote_dir,
        )
        result = client.run(argv, timeout_s=SETUP_TIMEOUT_S)
        said = result.stdout + result.stderr
        # never made (a set's write that failed on a full volume before its one-file twin):
        # nothing to remove, nothing to say
        gone = any(status in said for status in NOT_THERE)
        if not result.ok and not gone:
            return [f"smbclient del {xfer.remote_name}: {result.stdout.strip()}"]
        return []

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """The share (and its ``path``) listed from the client with the test's login; none
        without the password (its variable not set is a problem of its own)."""
        secret, _ = self.credentials(xfer)
        if secret is None or xfer.share is None or xfer.smb_user is None:
            return []
        return [
            probes.smb_share(test.client, address, xfer.share, xfer.remote_dir,
                             xfer.smb_user, secret)
        ]  # fmt: skip

    def credentials(self, xfer: Transfer) -> tuple[str | None, str | None]:
        password = os.environ.get(xfer.password_env or "")
        if not password:
            return None, f"environment variable {xfer.password_env} (SMB password) is not set"
        return password, None

    def auth_stdin(self, xfer: Transfer, secret: str) -> str | None:
        assert xfer.smb_user is not None
        return transfer.smb_auth_file(xfer.smb_user, secret)
