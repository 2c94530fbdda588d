"""Windows 10/11 workstations over the built-in OpenSSH server: tools are never installed.

iperf3.exe comes from where the inventory says (``tools: {iperf3: 'C:\\iperf3\\iperf3.exe'}``)
or from PATH; when it is missing the message says how to get it on this very host.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from nasplan.platforms.base import MANUAL, Command, PlatformBase, PlatformError
from nasplan.remote import shell
from nasplan.remote.shell import PowerShell, ShellQuoteError

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

IPERF3_DOWNLOAD_PAGE = "https://iperf.fr/iperf-download.php"
# Package ids as the two package managers name them.
WINGET_IDS = {"iperf3": "ar51an.iPerf3", "diskspd": "Microsoft.DiskSpd"}
CHOCO_IDS = {"iperf3": "iperf3", "diskspd": "diskspd"}
DOWNLOAD_PAGES = {
    "iperf3": IPERF3_DOWNLOAD_PAGE,
    "diskspd": "https://github.com/microsoft/diskspd/releases",
}


# Tools Windows has built in, by the name a test kind asks for: an SMB transfer needs no
# smbclient (nasplan times New-SmbMapping + Copy-Item, nasplan/measure/tools/transfer_windows.py).
BUILTIN = {"smbclient": "builtin: Windows SMB client (New-SmbMapping, Copy-Item)"}
# The Windows tool that does a Linux tool's job: a disk test asks for fio, Windows runs diskspd.
EQUIVALENTS = {"fio": "diskspd"}


class Windows(PlatformBase):
    """Windows, recognised by the PowerShell facts (``uname-s`` section says ``Windows``)."""

    name = "windows"
    posix_shell = False
    scripts = "powershell"
    equivalents = MappingProxyType(EQUIVALENTS)

    def host_shell(self, default_shell: str | None) -> shell.HostShell:
        """The OpenSSH ``DefaultShell`` (None: cmd.exe) as login shell, PowerShell scripts."""
        return shell.windows(default_shell)

    def matches(self, facts: HostFacts) -> bool:
        return facts.kernel_name == "Windows"

    def os_name(self, facts: HostFacts) -> str | None:
        caption = (facts.os_pretty or "Windows").removeprefix("Microsoft ")
        return f"{caption} (build {facts.kernel})" if facts.kernel else caption

    def tool_path(self, facts: HostFacts, tool: str) -> str | None:
        return BUILTIN.get(tool) or facts.tool(self.equivalent(tool))

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        raise PlatformError(" ".join(how_to_get(facts, self.equivalent(tool)) for tool in missing))

    def network_mechanism(self, facts: HostFacts) -> str:
        """No mechanism: nasplan does not change this host's network (``network_refusal``)."""
        return MANUAL

    def network_refusal(self, facts: HostFacts) -> str | None:
        """Why nasplan will not change this host's network, and the commands that do it by hand."""
        return network_refusal_text(facts)

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """Windows has no command of its own that empties its file cache."""
        return (
            "Windows has no built-in command that empties its file cache: the cold read was not "
            "measured"
        )


def how_to_get(facts: HostFacts, tool: str) -> str:
    """One sentence: ``tool`` is missing on this host, and the command that gets it here."""
    where = "not found where the inventory's tools: says nor on PATH"
    if tool in WINGET_IDS and facts.tool("winget"):
        advice = f"run `winget install --id {WINGET_IDS[tool]} -e` on it"
    elif tool in CHOCO_IDS and facts.tool("choco"):
        advice = f"run `choco install {CHOCO_IDS[tool]} -y` in an administrator shell on it"
    elif tool in DOWNLOAD_PAGES:
        advice = f"download it from {DOWNLOAD_PAGES[tool]}"
    else:
        advice = "install it by hand"
    return (
        f"{tool}.exe {where}; {advice}, then set `tools: {{{tool}: 'C:\\path\\to\\{tool}.exe'}}` "
        f"for this host in the inventory (nasplan never installs software on Windows)."
    )


def refusal_commands(adapter: str) -> list[str]:
    """The PowerShell lines that set jumbo frames on ``adapter`` by hand, then undo them.

    ``netsh`` is a native program, to which Windows PowerShell 5.1 cannot pass a ``"``; an
    adapter named with one gets the MTU through ``Set-NetIPInterface`` (a cmdlet) instead.
    """
    quote = PowerShell().quote
    frame = f"Set-NetAdapterAdvancedProperty -Name {quote(adapter)} -RegistryKeyword '*JumboPacket'"
    commands = [f"{frame} -RegistryValue 9014"]
    try:
        PowerShell().join(["netsh", adapter])  # refuses what 5.1 cannot pass to a program
        netsh = f"netsh interface ipv4 set subinterface {quote(adapter)}"
        commands += [f"{netsh} mtu=9000 store=active", f"{frame} -RegistryValue 1514"]
        commands.append(f"{netsh} mtu=1500 store=active")
    except ShellQuoteError:
        mtu = f"Set-NetIPInterface -InterfaceAlias {quote(adapter)} -PolicyStore ActiveStore"
        commands += [f"{mtu} -NlMtuBytes 9000", f"{frame} -RegistryValue 1514"]
        commands.append(f"{mtu} -NlMtuBytes 1500")
    return commands


def network_refusal_text(facts: HostFacts) -> str:
    """One line: why a Windows host's network is left alone, and the commands that change it.

    A revert nasplan arms must outlive a cut-off SSH session and be proven here; on Windows that
    is a scheduled task running as SYSTEM, which no host available to this project could run.
    So nasplan refuses and says exactly what to type instead (with this host's adapters).
    """
    adapters = [n for n in facts.interfaces if not n.name.lower().startswith("loopback")]
    seen = ", ".join(f"{n.name} (MTU {n.mtu_bytes or '?'})" for n in adapters)
    frame, mtu, *_ = refusal_commands(adapters[0].name if len(adapters) == 1 else "Ethernet 2")
    undo_mtu = "mtu=1500" if mtu.startswith("netsh") else "-NlMtuBytes 1500"
    return (
        "nasplan does not change a Windows host's network (no revert it could arm and prove "
        "here); in an administrator PowerShell set the NIC's frame size, a driver setting that "
        f"stays: `{frame}`, then the IP MTU until the next reboot: `{mtu}`; undo with "
        f"-RegistryValue 1514 and {undo_mtu}; then run the plan without its network: section"
        + (f" (adapters seen: {seen})" if seen else "")
    )
