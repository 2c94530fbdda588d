"""The NAS drops its cache of a file before a cold read, the way its platform can
(``Platform.drop_cache``: a Linux NAS evicts the file's pages, or its whole page cache; TrueNAS
and FreeBSD cannot drop ZFS's ARC or their buffer cache, and say so)."""

from __future__ import annotations

from nasplan.hosts.session import HostSession
from nasplan.platforms import Command

DROP_TIMEOUT_S = 60.0


def how(server: HostSession, path: str | None) -> Command | str:
    """The command that drops the NAS's cache of ``path``, or why it cannot."""
    if server.platform is None or server.facts is None:
        return f"{server.host.name} was not reached"
    return server.platform.drop_cache(server.facts, path)


def drop(server: HostSession, path: str | None) -> str:
    """Drop the NAS's cache of ``path`` (None: it does not know where the copy lies on the NAS);
    what happened, in words: ``dropped the page cache of /share/HDD/x.bin``, or why not."""
    command = how(server, path)
    if isinstance(command, str):
        return f"not dropped: {command}"
    assert server.runner is not None
    result = server.runner.run_script(command.script, sudo=command.sudo, timeout_s=DROP_TIMEOUT_S)
    said = [line for line in result.stdout.splitlines() if line.startswith("nasplan: ")]
    if not result.ok or not said:
        cause = (result.stderr.strip().splitlines() or [f"exit {result.exited}"])[-1]
        return f"not dropped: {cause}"
    return said[-1].removeprefix("nasplan: ")
