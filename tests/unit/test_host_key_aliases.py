"""A host's verified key trusted for the other addresses the inventory gives the same host (its
cable's), strict checking kept: another key, or an address of no host, is still refused."""

from __future__ import annotations

import paramiko
import pytest

from nasplan.input.inventory import Host, Interface
from nasplan.remote.ssh import UnknownHostKeyError, _RefuseUnknownHostKey, host_aliases

NAS = Host(
    "nas",
    "198.18.166.10",
    interfaces={
        "lan": Interface("lan", "eth0", "lan", address="198.18.166.10"),
        "p2p": Interface("p2p", "eth1", "test", address="198.18.167.1"),
    },
)


def client_knowing(name: str, key: paramiko.PKey) -> paramiko.SSHClient:
    """A client whose known_hosts (in memory, as loaded from a file) has ``key`` for ``name``."""
    client = paramiko.SSHClient()
    client.get_host_keys().add(name, key.get_name(), key)
    return client


def test_the_cable_address_is_trusted_with_the_key_verified_for_the_lan_address() -> None:
    key = paramiko.RSAKey.generate(1024)
    client = client_knowing("198.18.166.10", key)
    policy = _RefuseUnknownHostKey([], host_aliases(NAS))

    policy.missing_host_key(client, "198.18.167.1", key)

    # for this connection only, in memory: the next check finds it
    assert client.get_host_keys().lookup("198.18.167.1")[key.get_name()] == key


def test_another_key_at_the_cable_address_is_refused() -> None:
    known, other = paramiko.RSAKey.generate(1024), paramiko.RSAKey.generate(1024)
    client = client_knowing("198.18.166.10", known)
    policy = _RefuseUnknownHostKey([], host_aliases(NAS))
    with pytest.raises(UnknownHostKeyError, match=r"host key for 198\.18\.167\.1 is not known"):
        policy.missing_host_key(client, "198.18.167.1", other)


def test_a_key_known_only_for_another_host_vouches_for_nothing() -> None:
    key = paramiko.RSAKey.generate(1024)
    client = client_knowing("198.18.166.11", key)  # the workstation's line, not the NAS's
    policy = _RefuseUnknownHostKey([], host_aliases(NAS))
    with pytest.raises(UnknownHostKeyError):
        policy.missing_host_key(client, "198.18.167.1", key)


def test_a_port_other_than_22_is_looked_up_as_known_hosts_writes_it() -> None:
    key = paramiko.RSAKey.generate(1024)
    client = client_knowing("[198.18.166.10]:2222", key)
    policy = _RefuseUnknownHostKey([], host_aliases(NAS))
    policy.missing_host_key(client, "[198.18.167.1]:2222", key)
    assert host_aliases(NAS) == ["nas", "198.18.166.10", "198.18.167.1"]
