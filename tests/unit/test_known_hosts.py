"""known_hosts read strictly (nasplan.input.known_hosts) and matched as OpenSSH matches it
(nasplan.remote.host_keys): the keys paramiko is given for a name, and the ones it never is."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
from pathlib import Path

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nasplan.errors import HostError, InputError
from nasplan.input.known_hosts import parse_known_hosts
from nasplan.remote import host_keys


def new_key() -> str:
    """``ssh-ed25519 AAAA...``: a fresh public key line's type and base64."""
    public = Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


def pkey(line: str) -> paramiko.PKey:
    key_type, encoded = line.split()[:2]
    return paramiko.PKey.from_type_string(key_type, base64.b64decode(encoded))


def hashed(name: str) -> str:
    salt = os.urandom(20)
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def blob(*fields: bytes) -> str:
    """A public key blob of length-prefixed ``fields``, in base64."""
    return base64.b64encode(b"".join(struct.pack(">I", len(f)) + f for f in fields)).decode()


def known(tmp_path: Path, text: str) -> host_keys.KnownHosts:
    path = tmp_path / "known_hosts"
    path.write_text(text)
    return host_keys.load([path], "nas")


def names_known(found: host_keys.KnownHosts, name: str) -> list[str]:
    """The key types paramiko is given for ``name``."""
    keys = paramiko.HostKeys()
    found.add_to(keys, name)
    entry = keys.lookup(name)
    return sorted(entry.keys()) if entry is not None else []


def test_host_patterns_match_as_in_openssh(tmp_path: Path) -> None:
    key = new_key()
    found = known(
        tmp_path,
        f"198.19.80.*,!198.19.80.9 {key}\n[nas.lab]:2222 {key}\n{hashed('hidden')} {key}\n"
        f"NAS.Example {key}\n",
    )
    assert names_known(found, "198.19.80.3") == ["ssh-ed25519"]
    assert names_known(found, "198.19.80.9") == []  # negated
    assert names_known(found, "198.19.81.3") == []
    assert names_known(found, "[nas.lab]:2222") == ["ssh-ed25519"]
    assert names_known(found, "nas.lab") == []  # the key is for port 2222 only
    assert names_known(found, "hidden") == ["ssh-ed25519"]
    assert names_known(found, "nas.example") == ["ssh-ed25519"]
    assert host_keys.key_name("nas", 22) == "nas" and host_keys.key_name("nas", 2222) == (
        "[nas]:2222"
    )


def test_a_revoked_key_is_never_given_to_paramiko_and_is_named(tmp_path: Path) -> None:
    revoked, other = new_key(), new_key()
    found = known(tmp_path, f"nas {revoked}\nws {other}\n@revoked * {revoked}\n")
    assert names_known(found, "nas") == []
    assert names_known(found, "ws") == ["ssh-ed25519"]
    assert found.revoked(pkey(revoked)) and not found.revoked(pkey(other))
    policy = host_keys.RefuseUnknownHostKey(found)
    with pytest.raises(host_keys.RevokedHostKeyError, match="host key for nas is REVOKED"):
        policy.missing_host_key(paramiko.SSHClient(), "nas", pkey(revoked))
    with pytest.raises(host_keys.UnknownHostKeyError, match=r"is not known \(ssh-ed25519 SHA256:"):
        policy.missing_host_key(paramiko.SSHClient(), "nas", pkey(other))


def test_cert_authorities_and_types_paramiko_does_not_know_are_left_aside(tmp_path: Path) -> None:
    key = new_key()
    security_key = "sk-ssh-ed25519@openssh.com " + blob(
        b"sk-ssh-ed25519@openssh.com", bytes(32), b"ssh:"
    )
    found = known(tmp_path, f"@cert-authority * {key}\nnas {security_key}\n")
    assert [k.marker for k in found.keys] == ["@cert-authority", None]
    assert names_known(found, "nas") == []


@pytest.mark.parametrize(
    ("line", "column", "said"),
    [
        ("nas ssh-ed25519 AAAA!!", 17, "the ssh-ed25519 key is not valid base64"),
        ("nas ssh-ed25519", 5, "expected HOSTS KEY-TYPE BASE64-KEY"),
        ("nas", 1, "expected HOSTS KEY-TYPE BASE64-KEY"),
        ("@revoked nas", 10, "expected HOSTS KEY-TYPE BASE64-KEY"),
        ("@trusted nas ssh-ed25519 AAAA", 1, "unknown marker @trusted"),
        ("nas,,ws ssh-ed25519 AAAA", 1, "an empty host name"),
        ("|1|bad|salt ssh-ed25519 AAAA", 1, "a hashed host name (|1|SALT|HASH) that is damaged"),
        ("nas ssh;rm AAAA", 5, "'ssh;rm' is not a key type"),
        (f"nas ssh-ed25519 {blob(b'ssh-ed25519', bytes(32))[:-8]}", 17, "key is cut short"),
        (f"nas ssh-rsa {blob(b'ssh-ed25519', bytes(32))}", 13,
         "the key is a 'ssh-ed25519' key, the line says ssh-rsa"),
        (f"nas ssh-ed25519 {blob(b'ssh-ed25519', bytes(31))}", 17,
         "the ssh-ed25519 key is damaged (not 32 bytes)"),
        (f"nas ssh-ed25519 {blob(b'ssh-ed25519')}", 17,
         "the ssh-ed25519 key is damaged (1 fields)"),
    ],
)  # fmt: skip
def test_a_damaged_line_is_named_at_its_line_and_column(line: str, column: int, said: str) -> None:
    path = Path("/etc/known")
    text = f"# first\nok {new_key()}\n{line}\n"
    with pytest.raises(InputError) as refused:
        parse_known_hosts(path, text)
    assert refused.value.messages == [
        f"{path}:3:{column}: known_hosts: {refused.value.messages[0].split(': known_hosts: ')[1]}"
    ]
    assert said in refused.value.messages[0]


def test_many_damaged_lines_are_named_five_at_most(tmp_path: Path) -> None:
    with pytest.raises(InputError) as refused:
        parse_known_hosts(tmp_path, "".join(f"host{n} ssh-ed25519\n" for n in range(40)))
    assert len(refused.value.messages) == 5
    assert refused.value.messages[-1].endswith("(and 35 more damaged lines after it)")


def test_a_file_that_is_not_known_hosts_is_a_host_error_at_connect(tmp_path: Path) -> None:
    """What ssh_config or ~/.ssh names is only read when connecting: exit 3, one line."""
    path = tmp_path / "known_hosts"
    path.write_bytes(b"\x00\x01binary\xff")
    with pytest.raises(HostError, match=rf"^nas: {path}:1:9: not UTF-8 text"):
        host_keys.load([path], "nas")
    assert host_keys.load([tmp_path / "missing"], "nas").keys == ()
