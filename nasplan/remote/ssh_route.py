"""Where a host's SSH connection goes, worked out before anything opens: its ssh_config read and
checked, its ProxyJump hops resolved as OpenSSH resolves them, each hop and the host itself an
unopened Fabric ``Connection`` whose host keys and login keys are checked.
``nasplan.remote.ssh`` opens them, first hop first, each through the one before (paramiko's
``direct-tcpip`` channel).

A hop is looked up in the ssh_config like any host (its HostName, User, Port, IdentityFile,
UserKnownHostsFile), what ``user@host:port`` gives wins; the first hop's own ProxyJump there is
followed, as ``ssh -J`` does. Every hop's key is checked in the host's known_hosts (the
inventory's, else the hop's UserKnownHostsFile, else ~/.ssh/known_hosts) under its own name, and
the host's under its own, as OpenSSH checks each.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko
from fabric import Config, Connection
from paramiko.pkey import PublicBlob

from nasplan.errors import HostError, InputError
from nasplan.input.inventory import Host
from nasplan.input.localfile import MAX_KEY_FILE_BYTES, private_file_problem, read_bytes_bounded
from nasplan.input.proxy_jump import MAX_HOPS, Hop, parse_hops
from nasplan.input.ssh_config import DEFAULT_SSH_CONFIGS, read_ssh_config
from nasplan.input.ssh_keys import KeyFileError, read_private_key
from nasplan.remote import host_keys


@dataclass(frozen=True)
class Route:
    """The jump hosts (first hop first), then the host; nothing opened yet. ``known``: the
    known_hosts each of them is checked against, hops first, the host's last."""

    hops: tuple[Connection, ...]
    target: Connection
    known: tuple[host_keys.KnownHosts, ...]

    @property
    def through(self) -> str:
        """``through root@198.19.0.10:22`` (several hops joined by commas), "" without a jump."""
        if not self.hops:
            return ""
        return "through " + ",".join(label(hop) for hop in self.hops)


def label(connection: Connection) -> str:
    """``user@host:port`` of a connection."""
    return f"{connection.user}@{connection.host}:{connection.port}"


def route(host: Host, connect_kwargs: Mapping[str, Any], timeout_s: float) -> Route:
    """The way to ``host``: each hop and the host as a Connection, keys checked, policies set.

    ``connect_kwargs``: paramiko's connect arguments for every hop and the host (timeouts,
    transport, the host's identity_file). HostError naming the ssh_config, the hop or the file
    for anything that cannot be used.
    """
    config = Config(ssh_config=_ssh_config(host))
    try:
        options = config.base_ssh_config.lookup(host.address)
        hops = _hops(host, config, options)
        known = _KnownHostsCache(host)
        connections: list[Connection] = []
        checked: list[host_keys.KnownHosts] = []
        gateway: Connection | str | bool = False
        for hop in hops:
            where = f"{host.name}: jump host {hop}"
            made = _connection(hop, config, gateway, connect_kwargs, timeout_s)
            checked.append(_check(made, known, where))
            connections.append(made)
            gateway = made
        if not hops and options.get("proxycommand"):
            gateway = str(options["proxycommand"])  # the user's own ssh_config asks for it
        to_host = Hop(host.user, host.address, host.port)
        target = _connection(to_host, config, gateway, connect_kwargs, timeout_s)
        checked.append(_check(target, known, host.name, host_keys.aliases(host)))
    except (paramiko.SSHException, ValueError, OSError) as exc:
        # what the ssh_config leads paramiko or Fabric into: Match exec, canonicalisation, ...
        raise HostError(f"{host.name}: ssh_config {_config_names(host)}: {exc}") from None
    return Route(tuple(connections), target, tuple(checked))


def _ssh_config(host: Host) -> paramiko.SSHConfig:
    """The ssh_config the host names, else the user's and the system's, read and checked."""
    named = host.ssh_config is not None
    paths = [host.ssh_config] if host.ssh_config is not None else DEFAULT_SSH_CONFIGS
    config = paramiko.SSHConfig()
    for path in paths:
        path = path.expanduser()
        if not named and not path.exists():
            continue
        problem = private_file_problem(path, secret=False, required=named)
        if problem:
            raise HostError(f"{host.name}: ssh_config {path}: {problem}")
        try:
            text = read_ssh_config(path, named=named)
            config.parse(io.StringIO(text))
        except InputError as exc:
            raise HostError(f"{host.name}: {'; '.join(exc.messages)}") from None
        except paramiko.SSHException as exc:
            raise HostError(f"{host.name}: ssh_config {path}: {exc}") from None
    return config


def _config_names(host: Host) -> str:
    if host.ssh_config is not None:
        return str(host.ssh_config)
    return " and ".join(str(p) for p in DEFAULT_SSH_CONFIGS)


def _hops(host: Host, config: Config, options: Mapping[str, Any]) -> tuple[Hop, ...]:
    """The hops to ``host``: the inventory's ProxyJump, else its ssh_config's; the first hop's
    own ProxyJump in ssh_config before it. HostError for a loop or a chain past MAX_HOPS."""
    given = host.proxy_jump if host.proxy_jump is not None else options.get("proxyjump")
    hops = _parsed(host, given)
    seen = {host.address}
    while hops:
        first = hops[0]
        own = _parsed(host, config.base_ssh_config.lookup(first.host).get("proxyjump"))
        if not own or any(hop.host == first.host for hop in own):
            break  # a hop is not its own jump (``Host *`` with a ProxyJump matches it too)
        if first.host in seen:
            raise HostError(f"{host.name}: ssh_config's ProxyJump hops loop at {first.host}")
        seen.add(first.host)
        hops = own + hops
        if len(hops) > MAX_HOPS:
            break
    if len(hops) > MAX_HOPS:
        raise HostError(f"{host.name}: more than {MAX_HOPS} jump hosts to reach it")
    return hops


def _parsed(host: Host, value: Any) -> tuple[Hop, ...]:
    if value is None:
        return ()
    try:
        return parse_hops(str(value))
    except ValueError as exc:
        raise HostError(f"{host.name}: ProxyJump: {exc}") from None


def _connection(
    to: Hop,
    config: Config,
    gateway: Connection | str | bool,
    connect_kwargs: Mapping[str, Any],
    timeout_s: float,
) -> Connection:
    """An unopened Connection to ``to`` (what it leaves out from ssh_config); ``gateway``
    False: none (ssh_config's ProxyJump is resolved here, not by Fabric)."""
    kwargs = dict(connect_kwargs)
    kwargs["key_filename"] = list(kwargs.get("key_filename", []))
    made = Connection(
        to.host,
        user=to.user,
        port=to.port,
        config=config,
        gateway=gateway,
        connect_timeout=timeout_s,
        connect_kwargs=kwargs,
    )
    # OpenSSH skips an IdentityFile that is not there; paramiko would fail the whole login.
    names = made.connect_kwargs.get("key_filename") or []
    made.connect_kwargs["key_filename"] = [n for n in names if Path(n).expanduser().exists()]
    return made


class _KnownHostsCache:
    """Each set of known_hosts files read once per connect (the hops and the host often share
    one)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.read: dict[tuple[Path, ...], host_keys.KnownHosts] = {}

    def for_connection(self, connection: Connection, where: str) -> host_keys.KnownHosts:
        files = tuple(host_keys.known_hosts_files(self.host.known_hosts, connection.ssh_config))
        if files not in self.read:
            self.read[files] = host_keys.load(files, where)
        return self.read[files]


def _check(
    connection: Connection, known: _KnownHostsCache, where: str, aliases: Sequence[str] = ()
) -> host_keys.KnownHosts:
    """Host keys for this connection's name and the refusal of any other (but the key
    known_hosts holds for one of ``aliases``, the host's other names); its login keys.
    Returns the known_hosts it is checked against."""
    found = known.for_connection(connection, where)
    name = host_keys.key_name(connection.host, connection.port)
    found.add_to(connection.client.get_host_keys(), name)
    policy = host_keys.RefuseUnknownHostKey(found, aliases)
    connection.client.set_missing_host_key_policy(policy)
    own = known.host.identity_file
    for key_file in connection.connect_kwargs.get("key_filename") or []:
        path = Path(key_file).expanduser()
        named = f"identity_file {path}" if path == own else f"IdentityFile {path} (ssh_config)"
        _check_key_file(path, f"{where}: {named}")
    return found


def _check_key_file(path: Path, named: str) -> None:
    """A key the connection would log in with (``named``: ``nas: identity_file PATH``): a
    private key file nasplan may use, which paramiko reads, or one an ssh-agent holds when a
    passphrase encrypts it."""
    problem = private_file_problem(path, secret=True)
    if problem:
        raise HostError(f"{named}: {problem}")
    try:
        key = read_private_key(read_bytes_bounded(path, MAX_KEY_FILE_BYTES, "private key"))
    except InputError as exc:
        raise HostError(f"{named}: {'; '.join(exc.messages)}") from None
    except KeyFileError as exc:
        raise HostError(f"{named}: {exc}") from None
    if key.encrypted:
        if not _agent_holds(key.public_blob, path):
            raise HostError(
                f"{named}: is encrypted with a passphrase and no ssh-agent holds it: add it "
                "(`ssh-add FILE`); nasplan never asks for a passphrase"
            )
        return
    try:
        paramiko.PKey.from_path(path)
    except (paramiko.SSHException, ValueError, TypeError, AssertionError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise HostError(f"{named}: paramiko cannot use it: {reason}") from None


def _agent_holds(public_blob: bytes | None, path: Path) -> bool:
    """Whether the ssh-agent holds the key (its public half from the file, else FILE.pub)."""
    if not os.environ.get("SSH_AUTH_SOCK"):
        return False
    if public_blob is None:
        try:
            public_blob = PublicBlob.from_file(f"{path}.pub").key_blob
        except (OSError, ValueError, paramiko.SSHException):
            return True  # nothing to compare with: the login itself will tell
    agent = paramiko.Agent()
    try:
        held = agent.get_keys()
    except (paramiko.SSHException, OSError):
        return False
    finally:
        agent.close()
    return any(key.asbytes() == public_blob for key in held)
