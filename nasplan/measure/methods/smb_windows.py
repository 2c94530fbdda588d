"""``method: smb`` from a Windows client: its built-in SMB client (``New-SmbMapping``, a timed
``Copy-Item`` to ``\\\\NAS\\share`` and a stream back), the scripts of
``tools/transfer_windows.py``; the password on the scripts' stdin."""

from __future__ import annotations

from nasplan.measure.methods.base import SETUP_TIMEOUT_S, ClientCopy, Transfer
from nasplan.measure.tools import transfer_windows
from nasplan.remote.runner import Runner


class WindowsShareCopy(ClientCopy):
    """The copy of ``method: smb`` on a client whose scripts are PowerShell."""

    def check(self, xfer: Transfer, address: str) -> None:
        share_paths(xfer, address)  # ValueError for a name a share cannot hold

    def refusal(self, host: str, method: str) -> str:
        return transfer_windows.only_smb(host, method)

    def prepare(
        self, xfer: Transfer, client: Runner, timeout_s: float
    ) -> tuple[str | None, str | None]:
        return transfer_windows.make_source(client, xfer.size_bytes, timeout_s)

    def timed(
        self, xfer: Transfer, way: str, local_dir: str, address: str
    ) -> tuple[str, str, str | None]:
        share, remote = share_paths(xfer, address)
        assert xfer.smb_user is not None
        script = transfer_windows.timed_copy_script(share, remote, local_dir, way, xfer.smb_user)
        return ("Copy-Item" if way == "write" else "FileStream.CopyTo"), script, password(xfer)

    def cleanup(self, xfer: Transfer, client: Runner, local_dir: str, address: str) -> list[str]:
        """One PowerShell script removes the share's copy and the %TEMP% dir."""
        share, remote = share_paths(xfer, address)
        assert xfer.smb_user is not None
        script = transfer_windows.cleanup_script(share, remote, local_dir, xfer.smb_user)
        result = client.run_script(script, stdin=password(xfer), timeout_s=SETUP_TIMEOUT_S)
        said = [line.strip() for line in result.stdout.splitlines() if line.startswith("nasplan:")]
        return said + ([] if result.ok else [f"cleanup exited {result.exited}"])


# by the language of the client's scripts (``Platform.scripts``)
OWN_COPIES: dict[str, ClientCopy] = {"powershell": WindowsShareCopy()}


def share_paths(xfer: Transfer, address: str) -> tuple[str, str]:
    """(``\\\\NAS\\share``, the NAS copy's UNC path)."""
    assert xfer.share is not None
    return transfer_windows.share_paths(address, xfer.share, xfer.remote_dir, xfer.remote_name)


def password(xfer: Transfer) -> str:
    """The SMB password line for a script's stdin (checked in ``prepare_client``)."""
    secret, _ = xfer.method.credentials(xfer)
    return (secret or "") + "\n"
