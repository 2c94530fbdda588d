"""Private key files told apart by their structure (nasplan.input.ssh_keys): every format
ssh-keygen and the cryptography package write reads as a key; what is not one says why."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from nasplan.input.ssh_config import ssh_config_errors
from nasplan.input.ssh_keys import KeyFileError, identity_problem, read_private_key

PASS = b"a long passphrase"
RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC = ec.generate_private_key(ec.SECP256R1())
ED = ed25519.Ed25519PrivateKey.generate()


def written(
    key: object, fmt: serialization.PrivateFormat, passphrase: bytes | None = None
) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase
        else serialization.NoEncryption()
    )
    return key.private_bytes(serialization.Encoding.PEM, fmt, encryption)  # type: ignore[attr-defined]


def cut_der(pem: bytes, cut: int) -> bytes:
    """A PEM file whose DER lost its last ``cut`` bytes, armour and base64 whole again."""
    lines = pem.decode().splitlines()
    der = base64.b64decode("".join(lines[1:-1]))[:-cut]
    return "\n".join([lines[0], base64.b64encode(der).decode(), lines[-1], ""]).encode()


OPENSSH = serialization.PrivateFormat.OpenSSH
TRADITIONAL = serialization.PrivateFormat.TraditionalOpenSSL
PKCS8 = serialization.PrivateFormat.PKCS8


@pytest.mark.parametrize(
    ("data", "label", "encrypted"),
    [
        (written(ED, OPENSSH), "openssh", False),
        (written(RSA, OPENSSH), "openssh", False),
        (written(EC, OPENSSH, PASS), "openssh", True),
        (written(RSA, TRADITIONAL), "RSA PRIVATE KEY", False),
        (written(EC, TRADITIONAL), "EC PRIVATE KEY", False),
        (written(RSA, TRADITIONAL, PASS), "RSA PRIVATE KEY", True),
        (written(ED, PKCS8), "PRIVATE KEY", False),
        (written(RSA, PKCS8, PASS), "ENCRYPTED PRIVATE KEY", True),
    ],
)
def test_every_private_key_format_reads(data: bytes, label: str, encrypted: bool) -> None:
    key = read_private_key(data)
    assert (key.format, key.encrypted) == (label, encrypted)
    assert (key.public_blob is not None) == (label == "openssh")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"", "is empty"),
        (b"\n \n", "is empty"),
        (bytes(range(256)), "is not a private key: binary data"),
        (b"hello\n", "no -----BEGIN ... PRIVATE KEY----- line"),
        (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "a PEM certificate"),
        (written(ED, OPENSSH)[:-40], "it has no -----END OPENSSH PRIVATE KEY----- line"),
        (cut_der(written(RSA, TRADITIONAL), 50), "is cut short or damaged: it states"),
        (written(ED, OPENSSH).replace(b"b3BlbnNzaC1rZXktdjE", b"b3BlbnNzaC1rZXktdjF"),
         "not OpenSSH's private key format"),
        (written(ED, OPENSSH).replace(b"AAAA", b"AA!A", 1), "its body is not base64"),
        (b"---- BEGIN SSH2 PUBLIC KEY ----\nAAAA\n", "is a public key"),
        (b"PuTTY-User-Key-File-3: ssh-ed25519\n", "is a PuTTY key"),
    ],
)  # fmt: skip
def test_what_is_not_a_private_key_says_what_it_is(data: bytes, said: str) -> None:
    with pytest.raises(KeyFileError, match=said.replace("(", r"\(").replace(")", r"\)")):
        read_private_key(data)


def test_an_encrypted_key_needs_an_agent() -> None:
    data = written(ED, OPENSSH, PASS)
    assert "no ssh-agent runs (SSH_AUTH_SOCK is not set)" in str(identity_problem(data, {}))
    assert identity_problem(data, {"SSH_AUTH_SOCK": "/run/agent"}) is None
    assert identity_problem(written(ED, OPENSSH), {}) is None


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Match host nas exec", "Match exec without its argument"),
        ("Match all host nas", "Match all mixed with criteria other than canonical"),
        ("Match all canonical", "Match all before canonical"),
        ("Match canonical all", None),
        ('Match !host nas,ws exec "test -f x"', None),
        ("Host nas 'unclosed", "No closing quotation"),
        ("Port=2222", None),
        ("Port 0", "Port '0' is not a number from 1 to 65535"),
        ("ConnectTimeout soon", "ConnectTimeout 'soon' is not a number"),
        ("ProxyJump none", None),
        ("ProxyJump a,b:2222", None),
        ("Include other", "Include is not followed"),
        ('IdentityFile "~/.ssh/id ed25519"', None),
    ],
)
def test_ssh_config_lines_paramiko_would_refuse(line: str, said: str | None) -> None:
    errors = ssh_config_errors(Path("cfg"), f"# c\n\nHost *\n  {line}\n", named=True)
    if said is None:
        assert errors == []
    else:
        assert len(errors) == 1 and errors[0].startswith("cfg:4:3: ssh_config: ")
        assert said in errors[0]
    assert (
        ssh_config_errors(Path("cfg"), "Include /etc/ssh/ssh_config.d/*.conf\n", named=False) == []
    )
