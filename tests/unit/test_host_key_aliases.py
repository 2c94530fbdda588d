"""A host's verified key trusted for the other addresses the inventory gives the same host (its
cable's), strict checking kept: another key, a revoked one, or an address of no host, is still
refused."""

from __future__ import annotations

import base64
from pathlib import Path

import paramiko
import pytest

from nasplan.input.inventory import Host, Interface
from nasplan.remote import host_keys

NAS = Host(
    "nas",
    "198.18.166.10",
    interfaces={
        "lan": Interface("lan", "eth0", "lan", address="198.18.166.10"),
        "p2p": Interface("p2p", "eth1", "test", address="198.18.167.1"),
    },
)


def known(tmp_path: Path, *lines: tuple[str, paramiko.PKey]) -> host_keys.KnownHosts:
    """A known_hosts file of ``name key`` lines, read as a connection reads it."""
    path = tmp_path / "known_hosts"
    path.write_text("".join(f"{name} {key.get_name()} {key.get_base64()}\n" for name, key in lines))
    path.chmod(0o600)
    return host_keys.load([path], "nas")


def policy_for(found: host_keys.KnownHosts) -> host_keys.RefuseUnknownHostKey:
    return host_keys.RefuseUnknownHostKey(found, host_keys.aliases(NAS))


def test_the_cable_address_is_trusted_with_the_key_verified_for_the_lan_address(
    tmp_path: Path,
) -> None:
    key = paramiko.RSAKey.generate(1024)
    client = paramiko.SSHClient()
    policy_for(known(tmp_path, ("198.18.166.10", key))).missing_host_key(
        client, "198.18.167.1", key
    )
    # for this connection only, in memory: the next check finds it
    assert client.get_host_keys().lookup("198.18.167.1")[key.get_name()] == key


def test_another_key_at_the_cable_address_is_refused(tmp_path: Path) -> None:
    key, other = paramiko.RSAKey.generate(1024), paramiko.RSAKey.generate(1024)
    policy = policy_for(known(tmp_path, ("198.18.166.10", key)))
    with pytest.raises(host_keys.UnknownHostKeyError, match=r"host key for 198\.18\.167\.1 is"):
        policy.missing_host_key(paramiko.SSHClient(), "198.18.167.1", other)


def test_a_key_known_only_for_another_host_vouches_for_nothing(tmp_path: Path) -> None:
    key = paramiko.RSAKey.generate(1024)
    policy = policy_for(known(tmp_path, ("198.18.166.11", key)))  # the workstation's line
    with pytest.raises(host_keys.UnknownHostKeyError):
        policy.missing_host_key(paramiko.SSHClient(), "198.18.167.1", key)


def test_a_revoked_key_vouches_for_nothing(tmp_path: Path) -> None:
    key = paramiko.RSAKey.generate(1024)
    found = known(tmp_path, ("198.18.166.10", key))
    path = found.files[0]
    blob = base64.b64encode(key.asbytes()).decode()
    path.write_text(path.read_text() + f"@revoked * {key.get_name()} {blob}\n")
    with pytest.raises(host_keys.RevokedHostKeyError):
        policy_for(host_keys.load([path], "nas")).missing_host_key(
            paramiko.SSHClient(), "198.18.167.1", key
        )


def test_a_port_other_than_22_is_looked_up_as_known_hosts_writes_it(tmp_path: Path) -> None:
    key = paramiko.RSAKey.generate(1024)
    policy = policy_for(known(tmp_path, ("[198.18.166.10]:2222", key)))
    policy.missing_host_key(paramiko.SSHClient(), "[198.18.167.1]:2222", key)
    assert host_keys.aliases(NAS) == ["nas", "198.18.166.10", "198.18.167.1"]
