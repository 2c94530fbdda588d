"""What every platform module shares: the ``Platform`` protocol and ``PlatformBase``'s defaults,
install ``Command``s, ``PlatformError``, vendor markers.

The network mechanisms are named here too, so that a platform can declare which one changes
its NICs without importing ``nasplan.network`` (which has one backend per name).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from nasplan.errors import NasplanError
from nasplan.remote import shell

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

# Any Linux: ``ip`` changes, undone by a detached ``setsid sh`` timer unless confirmed.
SETSID_TIMER = "setsid-timer"
# macOS, FreeBSD: ``ifconfig`` changes, undone by an ``sh`` timer detached with setsid, FreeBSD's
# ``daemon -f`` or ``nohup`` (whichever the host has, in that order) unless confirmed.
DETACHED_TIMER = "detached-timer"
# TrueNAS SCALE's middleware: ``interface.update`` + ``interface.commit`` with rollback.
TRUENAS_INTERFACE_COMMIT = "truenas-interface-commit"
# No change by nasplan (Windows): ``Platform.network_refusal`` says what to do.
MANUAL = "manual"


@dataclass(frozen=True)
class Command:
    """A shell script to run on a host; ``sudo`` when it needs root; a line for --check output."""

    script: str
    description: str
    sudo: bool = False


class PlatformError(NasplanError):
    """A platform cannot do what was asked; the message tells the user what to do instead."""


class Platform(Protocol):
    """One kind of host (Debian, QNAP, ...), recognised from its facts."""

    name: str

    @property
    def hints(self) -> frozenset[str]:
        """What an inventory's ``platform:`` may say for a host of this platform."""
        ...

    @property
    def posix_shell(self) -> bool:
        """Whether the host runs POSIX sh (False: Windows, whose facts come from PowerShell)."""
        ...

    @property
    def scripts(self) -> str:
        """The language of the scripts a host of this platform runs: ``sh`` (POSIX sh) or
        ``powershell``; a test's scripts for it are looked up by this name (the iperf3 server's
        launcher, a transfer's timed copy)."""
        ...

    def host_shell(self, default_shell: str | None) -> shell.HostShell:
        """Its shell layer: what SSH hands the exec string to (``default_shell``: the login
        shell the host's facts name, None: the platform's own) and its scripts' language."""
        ...

    def speaks(self, host_shell: shell.HostShell) -> bool:
        """True when a runner speaking ``host_shell`` speaks this platform's script language."""
        ...

    def equivalent(self, tool: str) -> str:
        """The tool this platform runs for the job of ``tool`` (a disk test asks for ``fio``;
        Windows runs ``diskspd``): ``tool`` itself unless it differs."""
        ...

    def matches(self, facts: HostFacts) -> bool:
        """True when ``facts`` come from a host of this platform."""
        ...

    def os_name(self, facts: HostFacts) -> str | None:
        """The system as its vendor names it, e.g. ``DSM 7.2.1-69057 Update 5``, ``QTS 5.1.0``."""
        ...

    def tool_path(self, facts: HostFacts, tool: str) -> str | None:
        """Full path of ``tool`` (e.g. ``iperf3``) on this host, or None when it is missing."""
        ...

    def install_commands(self, facts: HostFacts, packages: Sequence[str]) -> list[Command]:
        """Commands that make ``packages`` available; their last output line is each tool's path.

        Raises PlatformError when this platform cannot install them (with what the user should do).
        """
        ...

    def network_mechanism(self, facts: HostFacts) -> str:
        """The network backend that changes this host's NICs, by name (``SETSID_TIMER``)."""
        ...

    def network_refusal(self, facts: HostFacts) -> str | None:
        """Why nasplan will not change this host's network (what to do by hand); None: it will."""
        ...

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """How this host drops what its cache holds of ``path`` (None: a path it does not know),
        for a cold read; or why it cannot, in words."""
        ...


# $1: the file or directory a cold read is about to read, or empty. Its files' pages
# (posix_fadvise DONTNEED through GNU dd, after sync: dirty pages stay) where dd can; else the
# whole page cache (BusyBox's dd, as on QTS and DSM, has no iflag=nocache). Says which.
_LINUX_DROP = """\
sync
nocache() {
  find "$1" -type f | {
    ok=0
    while IFS= read -r f; do dd if="$f" iflag=nocache count=0 status=none 2>/dev/null || ok=1; done
    exit "$ok"
  }
}
if [ -n "$1" ] && [ -e "$1" ] && nocache "$1"; then
  echo "nasplan: dropped the page cache of $1"
  exit 0
fi
echo 3 > /proc/sys/vm/drop_caches && echo "nasplan: dropped the whole page cache"
"""


class PlatformBase(Platform):
    """The defaults of a Linux host with ``ip``: a platform sets ``name``, writes ``matches`` and
    ``install_missing``, and overrides only what differs."""

    # Other names an inventory's ``platform:`` may give it (``ubuntu`` for Debian).
    aliases: frozenset[str] = frozenset()
    posix_shell = True
    scripts = "sh"
    # The tool that does another's job here, by the name a test kind asks for ({"fio": ...}).
    equivalents: Mapping[str, str] = MappingProxyType({})

    @property
    def hints(self) -> frozenset[str]:
        return frozenset({self.name}) | self.aliases

    def host_shell(self, default_shell: str | None) -> shell.HostShell:
        """POSIX sh both for the exec string and the scripts (``default_shell`` unused)."""
        return shell.POSIX

    def speaks(self, host_shell: shell.HostShell) -> bool:
        """Whether ``host_shell``'s scripts are this platform's (its ``host_shell``'s)."""
        return type(host_shell.scripts) is type(self.host_shell(None).scripts)

    def equivalent(self, tool: str) -> str:
        """``equivalents``' tool for ``tool``, else ``tool`` itself."""
        return self.equivalents.get(tool, tool)

    def os_name(self, facts: HostFacts) -> str | None:
        """``/etc/os-release``'s PRETTY_NAME, else its ID and VERSION_ID."""
        return facts.os_pretty or " ".join(p for p in (facts.os_id, facts.os_version) if p) or None

    def tool_path(self, facts: HostFacts, tool: str) -> str | None:
        """Where the facts found ``tool``."""
        return facts.tool(tool)

    def install_commands(self, facts: HostFacts, packages: Sequence[str]) -> list[Command]:
        """None when every tool of ``packages`` is there (``tool_path``), else the commands of
        ``install_missing``."""
        missing = [p for p in packages if not self.tool_path(facts, p)]
        return self.install_missing(facts, missing) if missing else []

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        """Commands that install the ``missing`` tools, their last output line each tool's path;
        PlatformError with what the user should do when this platform cannot."""
        raise NotImplementedError

    def network_mechanism(self, facts: HostFacts) -> str:
        """``ip`` changes under a ``setsid`` timer that undoes them unless confirmed."""
        return SETSID_TIMER

    def network_refusal(self, facts: HostFacts) -> str | None:
        """None: nasplan changes this host's network itself (``network_mechanism``)."""
        return None

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """Linux: the file's pages (``dd iflag=nocache``), else the whole page cache (root)."""
        script = f"set -- {shlex.quote(path or '')}\n" + _LINUX_DROP
        return Command(script, "drop the page cache before a cold read", sudo=True)


def marker_values(text: str, separator: str = "=") -> dict[str, str]:
    """``key="value"`` / ``Key = value`` lines of a vendor file -> dict (quotes stripped)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(separator)
        if sep and key.strip() and not key.lstrip().startswith(("#", "[")):
            values[key.strip()] = value.strip().strip('"')
    return values


def installer_path(facts: HostFacts, missing: Sequence[str], installer: str, advice: str) -> str:
    """The full path of the package manager ``installer``; without it ``PlatformError``:
    ``<missing> not found and <advice>; nothing was changed on this host``."""
    path = facts.tool(installer)
    if path is None:
        raise PlatformError(
            f"{' '.join(missing)} not found and {advice}; nothing was changed on this host"
        )
    return path


def print_installed_paths(bin_dir: str, tools: Sequence[str]) -> list[str]:
    """Shell lines that print each tool's full path in ``bin_dir`` once it is there: the paths
    nasplan uses from then on (a package manager's directory is often off the SSH PATH)."""
    lines = []
    for tool in tools:
        path = shlex.quote(posixpath.join(bin_dir, tool))
        lines.append(f"[ -x {path} ] && printf '%s\\n' {path}")
    return lines


def not_shipped(missing: Sequence[str], why_not_installed: str) -> PlatformError:
    """The refusal of an appliance whose tools come with it: the ``missing`` ones named, and
    ``why_not_installed`` (nasplan never installs packages there)."""
    return PlatformError(f"{' '.join(missing)} not found, though {why_not_installed}")
