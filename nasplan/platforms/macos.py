"""macOS (Remote Login): tools from Homebrew, whose directories SSH sessions leave off PATH."""

from __future__ import annotations

import posixpath
import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import (
    DETACHED_TIMER,
    Command,
    PlatformBase,
    installer_path,
    print_installed_paths,
)

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

BREW_HOWTO = "https://brew.sh"
# Homebrew's package names for nasplan's tools (others are named as the tool).
PACKAGES = {"nfs-cp": "libnfs"}


class MacOs(PlatformBase):
    """macOS, recognised by ``uname -s`` = Darwin."""

    name = "macos"

    def matches(self, facts: HostFacts) -> bool:
        return facts.kernel_name == "Darwin"

    def os_name(self, facts: HostFacts) -> str | None:
        return facts.os_pretty or "macOS"

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        brew = installer_path(
            facts,
            missing,
            "brew",
            f"Homebrew is not installed (no brew in /opt/homebrew/bin or /usr/local/bin); "
            f"install Homebrew ({BREW_HOWTO}), then "
            f"`brew install {' '.join(PACKAGES.get(p, p) for p in missing)}`",
        )
        bin_dir = posixpath.dirname(brew)
        names = sorted({PACKAGES.get(p, p) for p in missing})
        # Homebrew refuses to run as root: install as the login user, never through sudo.
        lines = [
            "set -e",
            f"HOMEBREW_NO_AUTO_UPDATE=1 {shlex.join([brew, 'install', *names])} >/dev/null",
        ]
        lines += print_installed_paths(bin_dir, missing)
        return [Command("\n".join(lines), f"brew install {' '.join(names)}", sudo=False)]

    def network_mechanism(self, facts: HostFacts) -> str:
        """``ifconfig`` changes (gone at reboot) under a revert timer detached with nohup."""
        return DETACHED_TIMER

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """``purge``: macOS's own flush of its whole disk cache (root)."""
        return Command("sync && purge", "drop the disk cache before a cold read", sudo=True)
