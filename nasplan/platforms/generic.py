"""Any other Linux: use the tools that are there, never guess a package manager."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasplan.platforms.base import Command, PlatformBase, PlatformError

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts


class GenericLinux(PlatformBase):
    """Fallback for hosts no other platform recognises."""

    name = "linux"

    @property
    def hints(self) -> frozenset[str]:
        """None: an inventory names a platform nasplan knows, never the fallback."""
        return frozenset()

    def matches(self, facts: HostFacts) -> bool:
        return True

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        os_name = facts.os_pretty or facts.os_id or "this host's OS"
        raise PlatformError(
            f"{', '.join(missing)} not found and nasplan does not know how to install "
            f"packages on {os_name}; install {' '.join(missing)} by hand"
        )
