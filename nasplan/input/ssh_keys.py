"""Private key files (``identity_file``) looked at before any connection: what ssh-keygen
writes (OpenSSH's own format, PEM) or one clear reason it is not one.

``identity_problem(data)`` -> None for a whole private key, else e.g. ``"is a public key: name
the private key (the same name without .pub)"``. No cryptography here: the key's structure only
(armour, base64, the lengths its format states), which tells an empty, binary, cut-short,
public or encrypted file from a usable one; paramiko reads the key itself when it logs in.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass

OPENSSH_MAGIC = b"openssh-key-v1\0"
_BEGIN = re.compile(r"^-----BEGIN (?P<label>[A-Z0-9 ]+)-----\s*$")
_PUBLIC = re.compile(r"^(ssh-|ecdsa-|sk-)[A-Za-z0-9@._-]+\s+AAAA[A-Za-z0-9+/=]+")
_HEADER = re.compile(r"^[A-Za-z-]+:")


@dataclass(frozen=True)
class PrivateKey:
    """A private key file's structure: its format, whether a passphrase encrypts it, and its
    public key blob where the format keeps one in clear (OpenSSH's does)."""

    format: str  # "openssh" or the PEM label ("RSA PRIVATE KEY", "PRIVATE KEY", ...)
    encrypted: bool
    public_blob: bytes | None


class KeyFileError(ValueError):
    """Why a file is not a private key nasplan can use (the message reads after its name)."""


def read_private_key(data: bytes) -> PrivateKey:
    """The structure of a private key file's bytes; KeyFileError saying what it is instead."""
    if not data.strip():
        raise KeyFileError("is empty, expected a private key (ssh-keygen -t ed25519 writes one)")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise KeyFileError(
            "is not a private key: binary data (nasplan reads OpenSSH and PEM private keys, as "
            "ssh-keygen writes them)"
        ) from None
    lines = text.splitlines()
    first = next(line.strip() for line in lines if line.strip())
    if _PUBLIC.match(first) or first.startswith("---- BEGIN SSH2 PUBLIC KEY"):
        raise KeyFileError(
            "is a public key: identity_file names the private key (the same name without .pub)"
        )
    if first.startswith("PuTTY-User-Key-File-"):
        raise KeyFileError(
            "is a PuTTY key: convert it with `puttygen KEY.ppk -O private-openssh -o KEY`"
        )
    begin = _BEGIN.match(first)
    if begin is None:
        raise KeyFileError(
            "is not a private key: no -----BEGIN ... PRIVATE KEY----- line (nasplan reads "
            "OpenSSH and PEM private keys)"
        )
    label = begin["label"]
    if not label.endswith("PRIVATE KEY"):
        raise KeyFileError(f"is a PEM {label.lower()}, not a private key")
    start = next(i for i, line in enumerate(lines) if line.strip() == first)
    end_line = f"-----END {label}-----"
    try:
        end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == end_line)
    except StopIteration:
        raise KeyFileError(f"is cut short: it has no {end_line} line (truncated?)") from None
    body = lines[start + 1 : end]
    headers = [line for line in body if _HEADER.match(line)]
    encoded = "".join(line.strip() for line in body if not _HEADER.match(line))
    try:
        der = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise KeyFileError("is damaged: its body is not base64") from None
    if label == "OPENSSH PRIVATE KEY":
        return _openssh(der)
    if any("ENCRYPTED" in header for header in headers):
        return PrivateKey(label, True, None)  # the whole body is ciphertext (legacy PEM)
    _check_der_length(der)
    return PrivateKey(label, label == "ENCRYPTED PRIVATE KEY", None)


def identity_problem(data: bytes, environ: Mapping[str, str]) -> str | None:
    """Why the key file ``data`` cannot log in (None when it can, or may through an agent):
    not a private key (see ``read_private_key``), or encrypted with no ssh-agent to hold it
    (nasplan never asks for a passphrase)."""
    try:
        key = read_private_key(data)
    except KeyFileError as exc:
        return str(exc)
    if key.encrypted and not environ.get("SSH_AUTH_SOCK"):
        return (
            "is encrypted with a passphrase and no ssh-agent runs (SSH_AUTH_SOCK is not set): "
            "add the key to an agent (`eval $(ssh-agent)`, `ssh-add FILE`); nasplan never asks "
            "for a passphrase"
        )
    return None


def _strings(data: bytes, count: int) -> tuple[list[bytes], bytes]:
    """``count`` length-prefixed strings from the start of ``data``, and what follows them."""
    found = []
    offset = 0
    for _ in range(count):
        if offset + 4 > len(data):
            raise KeyFileError("is cut short or damaged (its lengths run past its end)")
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        offset += 4
        if offset + length > len(data):
            raise KeyFileError("is cut short or damaged (its lengths run past its end)")
        found.append(data[offset : offset + length])
        offset += length
    return found, data[offset:]


def _openssh(blob: bytes) -> PrivateKey:
    """OpenSSH's format (PROTOCOL.key): magic, cipher, kdf, kdf options, key count, the public
    keys, then the (maybe encrypted) private part, which must end the blob exactly."""
    if not blob.startswith(OPENSSH_MAGIC):
        raise KeyFileError("is damaged: not OpenSSH's private key format inside its armour")
    (cipher, _kdf, _options), rest = _strings(blob[len(OPENSSH_MAGIC) :], 3)
    if len(rest) < 4:
        raise KeyFileError("is cut short or damaged (its lengths run past its end)")
    (count,) = struct.unpack(">I", rest[:4])
    if count != 1:
        raise KeyFileError(f"holds {count} keys; OpenSSH writes (and reads) one per file")
    (public, private), tail = _strings(rest[4:], 2)
    if tail:
        raise KeyFileError("is damaged: bytes after its private part")
    encrypted = cipher != b"none"
    if not encrypted:
        _check_unencrypted(private)
    return PrivateKey("openssh", encrypted, public)


def _check_unencrypted(private: bytes) -> None:
    """An unencrypted private part starts with two equal check numbers (a wrong passphrase or a
    damaged file makes them differ)."""
    if len(private) < 8 or private[:4] != private[4:8]:
        raise KeyFileError("is damaged: its private part does not check")


def _check_der_length(der: bytes) -> None:
    """A PEM key's DER is one SEQUENCE whose stated length is the rest of it."""
    if len(der) < 2 or der[0] != 0x30:
        raise KeyFileError("is damaged: its body is not a DER sequence")
    first = der[1]
    if first < 0x80:
        length, header = first, 2
    else:
        width = first & 0x7F
        if width == 0 or width > 4 or len(der) < 2 + width:
            raise KeyFileError("is damaged: its body is not a DER sequence")
        length, header = int.from_bytes(der[2 : 2 + width], "big"), 2 + width
    if header + length != len(der):
        raise KeyFileError(
            f"is cut short or damaged: it states {header + length} bytes and holds {len(der)}"
        )
