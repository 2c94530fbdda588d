"""Real SSH key files for tests (on the import path through pytest's ``pythonpath``): made with
the cryptography package paramiko itself uses, in OpenSSH's format, as ssh-keygen writes them."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def write_private_key(path: Path, passphrase: bytes | None = None) -> Path:
    """A new ed25519 private key at ``path`` (mode 0600; encrypted with ``passphrase`` if given)
    and its public key at ``path.pub``; returns ``path``."""
    key = Ed25519PrivateKey.generate()
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase
        else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption
        )
    )
    path.chmod(0o600)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    path.with_name(path.name + ".pub").write_bytes(public + b" nasplan-test\n")
    return path
