"""OpenSSH's ProxyJump: ``[user@]host[:port]`` hops, comma-separated, and the ssh options an
Ansible inventory may carry it in (``-J HOPS``, ``-o ProxyJump=HOPS``).

Pure text, no connection: ``nasplan.remote.ssh`` opens the hops.
``parse_hops("admin@jump:2222,nas-gw")`` -> ``(Hop("admin", "jump", 2222), Hop(None, "nas-gw",
None))``; ``none`` is no jump, as in ssh_config.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# A jump chain longer than this is a mistake (or a loop through ssh_config), not a network.
MAX_HOPS = 8
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
_USER = r"[A-Za-z0-9_][A-Za-z0-9_.@-]*"
_HOST = r"(?:[A-Za-z0-9_][A-Za-z0-9_.%-]*|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\])"
_HOP = rf"(?:ssh://)?(?:{_USER}@)?{_HOST}(?::{_PORT})?"
# The inventory schema's pattern for proxy_jump is this one (a test checks they agree).
PATTERN = rf"^(?:none|{_HOP}(?:,{_HOP}){{0,{MAX_HOPS - 1}}})$"
_HOP_PARTS = re.compile(
    rf"^(?:ssh://)?(?:(?P<user>{_USER})@)?(?P<host>{_HOST})(?::(?P<port>\d+))?$"
)
# ssh's own options for a jump; every other option is refused by name (nasplan passes none on).
_JUMP_OPTION = re.compile(r"^proxyjump\s*(?:=\s*|\s+)(?P<hops>\S.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Hop:
    """One jump host as the user wrote it; what is not given comes from ssh_config or defaults."""

    user: str | None
    host: str
    port: int | None

    def __str__(self) -> str:
        host = self.host
        user = f"{self.user}@" if self.user else ""
        return f"{user}{host}:{self.port}" if self.port else f"{user}{host}"


def parse_hops(text: str) -> tuple[Hop, ...]:
    """The hops of a ProxyJump value, first hop first (``()`` for ``none``); ValueError saying
    what is wrong with it."""
    value = text.strip()
    if not re.match(PATTERN, value):
        raise ValueError(
            f"{text!r} is not a ProxyJump: expected [user@]host[:port], several joined by commas "
            f"(at most {MAX_HOPS}), or none"
        )
    if value == "none":
        return ()
    hops = []
    for part in value.split(","):
        match = _HOP_PARTS.match(part)
        assert match is not None  # PATTERN matched every hop already
        host = match["host"]
        port = match["port"]
        hops.append(
            Hop(
                match["user"],
                host[1:-1] if host.startswith("[") else host,
                int(port) if port else None,
            )
        )
    return tuple(hops)


# ssh options that only loosen host-key checking: nasplan never does, and says it ignores them
HOST_KEY_OPTIONS = ("stricthostkeychecking", "userknownhostsfile", "checkhostip")


def _option_name(option: str) -> str:
    """``StrictHostKeyChecking=no`` -> ``stricthostkeychecking`` (ssh's names are caseless)."""
    return re.split(r"[=\s]", option.strip(), maxsplit=1)[0].lower()


def host_key_options(args: str) -> list[str]:
    """The ``-o`` options of ssh's arguments ``args`` about host keys, as written
    (``StrictHostKeyChecking=no``); none where ``args`` cannot be split."""
    try:
        words = shlex.split(str(args))
    except ValueError:
        return []
    found = []
    for index, word in enumerate(words):
        option = word[2:] if word.startswith("-o") and len(word) > 2 else None
        if word == "-o" and index + 1 < len(words):
            option = words[index + 1]
        if option is not None and _option_name(option) in HOST_KEY_OPTIONS:
            found.append(option)
    return found


def jump_of_ssh_args(args: str) -> str | None:
    """The ProxyJump an Ansible ``ansible_ssh_common_args`` / ``ansible_ssh_extra_args`` value
    gives (``-J HOPS``, ``-o ProxyJump=HOPS``), None when it gives none; ValueError naming any
    other option (nasplan passes no option to ssh: ssh_config is the place for them)."""
    try:
        words = shlex.split(str(args))
    except ValueError as exc:
        raise ValueError(f"cannot split {args!r} as ssh's arguments: {exc}") from None
    jumps: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        flag, attached = word[:2], word[2:]
        if flag in ("-o", "-J") and not attached:
            if index + 1 == len(words):
                raise ValueError(f"{word} without a value")
            attached, index = words[index + 1], index + 1
        index += 1
        if flag == "-J":
            jumps.append(attached)
            continue
        if flag == "-o" and _option_name(attached) in HOST_KEY_OPTIONS:
            continue  # host_key_options names it: nasplan keeps strict checking
        option = _JUMP_OPTION.match(attached) if flag == "-o" else None
        if option is not None:
            jumps.append(option["hops"])
            continue
        shown = f"{flag} {attached}" if flag in ("-o", "-J") else word
        advice = (
            "use -o ProxyJump=[user@]jump[:port]: nasplan runs no local command to connect"
            if attached.lower().startswith("proxycommand")
            else "put it in an ssh_config file named with nasplan_ssh_config: FILE"
        )
        raise ValueError(
            f"nasplan takes only a jump host from ssh's arguments (-J HOPS, -o ProxyJump=HOPS), "
            f"not {shown!r}: {advice}"
        )
    if not jumps:
        return None
    # ssh takes the first value an option is given
    parse_hops(jumps[0])
    return jumps[0].strip()
