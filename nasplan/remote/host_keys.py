"""Host keys checked as OpenSSH's ``StrictHostKeyChecking yes`` checks them: known_hosts read by
``nasplan.input.known_hosts``, the keys for the one name a connection asks about handed to
paramiko, an unknown key refused with its fingerprint, a revoked one refused whatever else
known_hosts says.

Host patterns match as in OpenSSH: names and ``[name]:port``, ``*`` and ``?``, ``!negated``,
hashed ``|1|salt|hash``. ``@cert-authority`` lines are left aside (paramiko checks no host
certificates: the key a server shows is compared as a plain key); a key in an ``@revoked`` line
is refused for every host.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko
from paramiko.pkey import UnknownKeyType

from nasplan.errors import HostError, InputError
from nasplan.input.inventory import Host
from nasplan.input.known_hosts import KnownKey, read_known_hosts
from nasplan.input.localfile import private_file_problem

DEFAULT_SSH_PORT = 22


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style fingerprint, e.g. ``ssh-ed25519 SHA256:Xk1...``."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return f"{key.get_name()} SHA256:{base64.b64encode(digest).decode().rstrip('=')}"


class UnknownHostKeyError(paramiko.SSHException):
    """The server's key is not in known_hosts: refused, with its fingerprint for the user."""


class RevokedHostKeyError(paramiko.SSHException):
    """The server's key is in an ``@revoked`` line of known_hosts: refused."""


def known_hosts_files(known_hosts: Path | None, ssh_config: dict[str, object]) -> list[Path]:
    """Known_hosts files checked for a host: the inventory's, else ssh_config's
    UserKnownHostsFile, else ~/.ssh/known_hosts."""
    if known_hosts is not None:
        return [known_hosts]
    configured = ssh_config.get("userknownhostsfile")
    if configured:
        names = configured if isinstance(configured, list) else str(configured).split()
        return [Path(str(n)).expanduser() for n in names]
    return [Path("~/.ssh/known_hosts").expanduser()]


@dataclass(frozen=True)
class KnownHosts:
    """Every key line of some known_hosts files, and the files (named in refusals)."""

    files: tuple[Path, ...]
    keys: tuple[KnownKey, ...]

    @property
    def shown(self) -> str:
        return ", ".join(str(p) for p in self.files) or "no known_hosts file"

    def revoked(self, key: paramiko.PKey) -> bool:
        """Whether ``key`` is in an ``@revoked`` line (for any host)."""
        blob = key.asbytes()
        return any(k.marker == "@revoked" and k.blob == blob for k in self.keys)

    def vouches(self, key: paramiko.PKey, names: Iterable[str]) -> bool:
        """Whether a line holds ``key`` (not revoked) for one of ``names``: another name of the
        same host (its cable's address) that known_hosts has verified it under."""
        blob = key.asbytes()
        return not self.revoked(key) and any(
            known.marker is None and known.blob == blob and _matches(known.patterns, name)
            for known in self.keys
            for name in names
        )

    def add_to(self, keys: paramiko.HostKeys, name: str) -> None:
        """Put into ``keys`` (a client's) the keys known for ``name`` (``host`` or
        ``[host]:port``): what paramiko compares the server's with; none revoked."""
        for known in self.keys:
            if known.marker is not None or not _matches(known.patterns, name):
                continue
            key = self._pkey(known)
            if key is not None and not self.revoked(key):
                keys.add(name, known.key_type, key)

    def _pkey(self, known: KnownKey) -> paramiko.PKey | None:
        """The key of a known_hosts line as paramiko's, None for a type paramiko does not know
        (OpenSSH's security-key types): a host cannot offer such a key to paramiko anyway."""
        try:
            return paramiko.PKey.from_type_string(known.key_type, known.blob)
        except UnknownKeyType:
            return None
        except (paramiko.SSHException, ValueError, TypeError) as exc:
            raise HostError(
                f"{self.shown}: line {known.line}: paramiko cannot read its key: {exc}"
            ) from None


def load(files: Sequence[Path], where: str) -> KnownHosts:
    """The known_hosts ``files`` (missing ones are empty); HostError naming the file, its line
    and ``where`` (what needs it: ``nas``, ``jump host root@gw:22 of nas``) for one that cannot
    be used."""
    keys: list[KnownKey] = []
    for path in files:
        problem = private_file_problem(path, secret=False)
        if problem:
            raise HostError(f"{where}: known_hosts file {path}: {problem}")
        if not path.exists():
            continue
        try:
            keys += read_known_hosts(path)
        except InputError as exc:
            raise HostError(f"{where}: {'; '.join(exc.messages)}") from None
    return KnownHosts(tuple(files), tuple(keys))


def key_name(host: str, port: int) -> str:
    """The name known_hosts holds a host's key under: ``host``, or ``[host]:port`` off port 22."""
    return host if port == DEFAULT_SSH_PORT else f"[{host}]:{port}"


def aliases(host: Host) -> list[str]:
    """Other names the inventory gives ``host``: its name, its address, its interfaces'
    addresses (a known_hosts line under any of them vouches for its key)."""
    found = [host.name, host.address]
    found += [i.address for i in host.interfaces.values() if i.address]
    return list(dict.fromkeys(found))


class RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    """Refuse a host whose key known_hosts does not hold (Fabric's default would accept it),
    unless known_hosts holds that very key under another name the inventory gives the same host
    (``aliases``: its name, its interfaces' addresses): a cable's address is then trusted with
    the host's verified key, for this connection only (nothing is written)."""

    def __init__(self, known: KnownHosts, aliases: Sequence[str] = ()) -> None:
        self.known = known
        self.aliases = aliases

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self.known.revoked(key):
            raise RevokedHostKeyError(revoked_message(hostname, key, self.known))
        port = int(hostname.rpartition("]:")[2]) if hostname.startswith("[") else DEFAULT_SSH_PORT
        if self.known.vouches(key, [key_name(alias, port) for alias in self.aliases]):
            client.get_host_keys().add(hostname, key.get_name(), key)
            return
        raise UnknownHostKeyError(
            f"host key for {hostname} is not known ({fingerprint(key)}); "
            f"not in {self.known.shown}. Verify the fingerprint on the host "
            f"(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) and add it with ssh-keyscan"
        )


def revoked_message(hostname: str, key: paramiko.PKey, known: KnownHosts) -> str:
    """Why a revoked key is refused, with its fingerprint."""
    return (
        f"host key for {hostname} is REVOKED ({fingerprint(key)} is in an @revoked line of "
        f"{known.shown}); refusing to connect"
    )


def _matches(patterns: Iterable[str], name: str) -> bool:
    """OpenSSH's match of a known_hosts line's host patterns: any positive one matches and no
    negated one does; hostnames without regard to case."""
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        bare = pattern[1:] if negated else pattern
        if bare.startswith("|1|"):
            hit = _hashed_matches(bare, name)
        else:
            hit = fnmatch.fnmatchcase(name.lower(), bare.lower().replace("[", "[[]"))
        if hit and negated:
            return False
        matched = matched or hit
    return matched


def _hashed_matches(pattern: str, name: str) -> bool:
    """``|1|salt|hash`` (HMAC-SHA1 of the name, keyed by the salt; checked when read)."""
    _, _, salt, digest = pattern.split("|")
    mac = hmac.new(base64.b64decode(salt), name.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(mac, base64.b64decode(digest))
