"""Jump hosts checked at validate, before anything connects: a host that is its own jump host,
ProxyJump hops that loop (the inventory's, and through a named ssh_config's ProxyJump lines as
OpenSSH follows a first hop's own), a chain past ``MAX_HOPS``, and an ssh_config
``ProxyCommand`` nasplan will not use beside a jump host (it goes through the ProxyJump hops).

Each problem is one line at the inventory's host (``FILE:LINE:COL: hosts.nas.proxy_jump: ...``)
or at the ssh_config's line. The ssh_config read is the one the connection will read: the one
the inventory names, else the user's (``~/.ssh/config``) and the system's; one of those two that
cannot be read or parsed is left out here (the connection says what is wrong with it).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import paramiko

from nasplan.errors import InputError
from nasplan.input.inventory import Host
from nasplan.input.proxy_jump import MAX_HOPS, parse_hops
from nasplan.input.ssh_config import DEFAULT_SSH_CONFIGS, read_ssh_config

# an ssh_config parsed, with the (path, text) of each file read into it (for a line's place)
Parsed = tuple[paramiko.SSHConfig, tuple[tuple[Path, str], ...]]


def jump_errors(hosts: Iterable[Host], notes: list[str] | None = None) -> list[str]:
    """One line per problem of each host's way in (see the module); ``notes`` gets one line for
    each default ssh_config that could not be read for these checks (a warning, never an error)."""
    errors: list[str] = []
    configs: dict[tuple[Path, ...], Parsed | None] = {}
    for host in hosts:
        if host.is_local:
            continue
        problem = _problem(host, _config(host.ssh_config, configs, notes))
        if problem:
            errors.append(problem)
    return errors


def _config(
    named: Path | None, read: dict[tuple[Path, ...], Parsed | None], notes: list[str] | None
) -> Parsed | None:
    """The ssh_config the connection reads, parsed once: the named file, else the user's and the
    system's; None when there is none. A named file that is not there or is broken: None (the
    inventory's own ssh file checks say it); a default one that cannot be read or parsed is left
    out, said in ``notes`` (never a validate failure of its own: the connection says it)."""
    paths = (named,) if named is not None else tuple(p.expanduser() for p in DEFAULT_SSH_CONFIGS)
    if paths not in read:
        parsed, texts = paramiko.SSHConfig(), []
        for path in paths:
            try:
                if not path.exists():
                    continue
                if not path.is_file():
                    raise OSError(f"{path}: not a file")
                text = read_ssh_config(path, named=named is not None)
                parsed.parse(io.StringIO(text))
            except (InputError, paramiko.SSHException, ValueError, OSError) as exc:
                if named is not None:
                    break
                if notes is not None:
                    why = exc.messages[0] if isinstance(exc, InputError) else str(exc)
                    why = why if why.startswith(str(path)) else f"{path}: {why}"
                    notes.append(f"{why[:240]} (jump hosts not checked against it)")
                continue
            texts.append((path, text))
        whole = len(texts) == len(paths) if named is not None else bool(texts)
        read[paths] = (parsed, tuple(texts)) if whole else None
    return read[paths]


def _problem(host: Host, config: Parsed | None) -> str | None:
    where = f"{host.origin}.proxy_jump" if host.origin else host.name

    def lookup(name: str) -> Mapping[str, Any]:
        return config[0].lookup(name) if config else {}

    options = lookup(host.address)
    given = host.proxy_jump if host.proxy_jump is not None else options.get("proxyjump")
    if given is None:
        return None
    if host.proxy_jump is None and config:
        where = _line_of(config, "proxyjump", host)
    try:
        hops = parse_hops(str(given))
    except ValueError:
        return None  # the schema and the ssh_config's own checks say it
    own_names = {host.name, host.address}
    if any(hop.host in own_names for hop in hops):
        return f"{where}: {host.name} is its own jump host ({given}): it cannot be reached so"
    seen = set(own_names)
    while hops and config:
        first = hops[0]
        try:
            further = parse_hops(str(lookup(first.host).get("proxyjump") or "none"))
        except ValueError:
            break
        if not further or any(hop.host == first.host for hop in further):
            break  # a hop is not its own jump (``Host *`` with a ProxyJump matches it too)
        if first.host in seen or any(hop.host in seen for hop in further):
            return f"{where}: the jump hosts to {host.name} loop at {first.host} (ssh_config)"
        seen.add(first.host)
        hops = further + hops
        if len(hops) > MAX_HOPS:
            return f"{where}: more than {MAX_HOPS} jump hosts to reach {host.name}"
    command = str(options.get("proxycommand") or "none")
    if hops and command.lower() != "none" and config:
        return (
            f"{_line_of(config, 'proxycommand', host)}: {host.name}: ProxyCommand is not used: "
            f"nasplan goes through the jump host ({given}); remove one of them"
        )
    return None


def _line_of(config: Parsed, keyword: str, host: Host) -> str:
    """``FILE:LINE:COL: ssh_config`` of the first ``keyword`` line (what names the setting)."""
    pattern = re.compile(rf"^\s*{keyword}\b", re.IGNORECASE)
    for path, text in config[1]:
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.match(line):
                column = len(line) - len(line.lstrip()) + 1
                return f"{path}:{number}:{column}: ssh_config"
    return f"{config[1][0][0]}: ssh_config"
