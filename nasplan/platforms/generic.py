"""Any other Linux: use the tools that are there, never guess a package manager."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nasplan.platforms.base import SETSID_TIMER, Command, PlatformError

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts


class GenericLinux:
    """Fallback for hosts no other platform recognises."""

    name = "linux"

    def matches(self, facts: HostFacts) -> bool:
        return True

    def os_name(self, facts: HostFacts) -> str | None:
        return facts.os_pretty or " ".join(p for p in (facts.os_id, facts.os_version) if p) or None

    def tool_path(self, facts: HostFacts, tool: str) -> str | None:
        return facts.tool(tool)

    def install_commands(self, facts: HostFacts, packages: Sequence[str]) -> list[Command]:
        missing = [p for p in packages if not facts.tool(p)]
        if missing:
            os_name = facts.os_pretty or facts.os_id or "this host's OS"
            raise PlatformError(
                f"{', '.join(missing)} not found and nasplan does not know how to install "
                f"packages on {os_name}; install {' '.join(missing)} by hand"
            )
        return []

    def network_mechanism(self, facts: HostFacts) -> str:
        """``ip`` changes under a ``setsid`` timer that undoes them unless confirmed."""
        return SETSID_TIMER

    def network_refusal(self, facts: HostFacts) -> str | None:
        """None: nasplan changes this host's network itself (``network_mechanism``)."""
        return None
