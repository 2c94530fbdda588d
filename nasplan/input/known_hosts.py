"""known_hosts files as OpenSSH writes them, read strictly: each line a host key, or an error
naming the file, line and column.

OpenSSH skips a line it cannot read (``ssh -v`` says "parse error in hostkeys file"); nasplan
refuses the file instead, at that line: a damaged line may be the very key meant for the host, or
an ``@revoked`` line that skipped would let a revoked key in again. What OpenSSH reads and
paramiko cannot check is kept as it is: ``@cert-authority`` lines and key types paramiko does
not know (security keys) are read and left aside, never an error.

``parse_known_hosts(path, "nas ssh-ed25519 AAAAC3...\\n")`` ->
``[KnownKey(line=1, marker=None, patterns=("nas",), key_type="ssh-ed25519", blob=b"...")]``.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from nasplan.errors import InputError
from nasplan.input.localfile import MAX_KEY_FILE_BYTES, read_text_bounded

MARKERS = ("@cert-authority", "@revoked")
# Length-prefixed fields of each key type's public blob (RFC 4253, 5656, 8709; OpenSSH's
# PROTOCOL.u2f for the security-key types), the type name included.
FIELDS = {
    "ssh-ed25519": 2,
    "ssh-rsa": 3,
    "ssh-dss": 5,
    "ecdsa-sha2-nistp256": 3,
    "ecdsa-sha2-nistp384": 3,
    "ecdsa-sha2-nistp521": 3,
    "sk-ssh-ed25519@openssh.com": 3,
    "sk-ecdsa-sha2-nistp256@openssh.com": 4,
}
ED25519_KEY_BYTES = 32
# Lines named in one error: a file of nothing but bad lines says so without pages of them.
MAX_LISTED = 5
_FIELD = re.compile(r"\S+")
_HASHED = re.compile(r"^\|1\|(?P<salt>[^|]+)\|(?P<hash>[^|]+)$")
SHA1_BYTES = 20


@dataclass(frozen=True)
class KnownKey:
    """One key line: its marker (``@revoked``, ``@cert-authority`` or None), host patterns
    (names, ``[name]:port``, ``|1|salt|hash``), key type and decoded public blob."""

    line: int
    marker: str | None
    patterns: tuple[str, ...]
    key_type: str
    blob: bytes


def read_known_hosts(path: Path) -> list[KnownKey]:
    """The keys of the known_hosts file ``path``; InputError with ``FILE:LINE:COL: known_hosts:
    what is wrong`` for a file that is not one (binary, a device, a damaged line)."""
    text = read_text_bounded(path, MAX_KEY_FILE_BYTES, "known_hosts file")
    return parse_known_hosts(path, text)


def parse_known_hosts(path: Path, text: str) -> list[KnownKey]:
    """The keys of known_hosts text (see ``read_known_hosts``)."""
    keys: list[KnownKey] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            key = _parse_line(number, line)
        except _LineError as exc:
            errors.append(f"{path}:{number}:{exc.column}: known_hosts: {exc}")
            continue
        if key is not None:
            keys.append(key)
    if errors:
        more = len(errors) - MAX_LISTED
        listed = errors[:MAX_LISTED]
        if more > 0:
            listed[-1] += f" (and {more} more damaged lines after it)"
        raise InputError(listed)
    return keys


class _LineError(ValueError):
    def __init__(self, column: int, message: str) -> None:
        self.column = column
        super().__init__(message)


def _parse_line(number: int, line: str) -> KnownKey | None:
    fields = [(m.start() + 1, m.group()) for m in _FIELD.finditer(line)]
    if not fields or fields[0][1].startswith("#"):
        return None
    marker = None
    if fields[0][1].startswith("@"):
        column, marker = fields.pop(0)
        if marker not in MARKERS:
            raise _LineError(column, f"unknown marker {marker} (OpenSSH has {', '.join(MARKERS)})")
    if len(fields) < 3:
        column = fields[-1][0] if fields else 1
        raise _LineError(
            column, "expected HOSTS KEY-TYPE BASE64-KEY (a line cut short, or not a known_hosts)"
        )
    (hosts_column, hosts), (type_column, key_type), (key_column, encoded) = fields[:3]
    patterns = tuple(hosts.split(","))
    for pattern in patterns:
        _check_pattern(hosts_column, pattern)
    if not re.fullmatch(r"[A-Za-z0-9@._-]+", key_type):
        raise _LineError(type_column, f"{key_type[:40]!r} is not a key type")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _LineError(key_column, f"the {key_type} key is not valid base64 ({exc})") from None
    _check_blob(key_column, key_type, blob)
    return KnownKey(number, marker, patterns, key_type, blob)


def _check_pattern(column: int, pattern: str) -> None:
    if not pattern:
        raise _LineError(column, "an empty host name in the list of hosts")
    if pattern.startswith("|"):
        hashed = _HASHED.match(pattern)
        parts = [hashed["salt"], hashed["hash"]] if hashed else []
        try:
            decoded = [base64.b64decode(part, validate=True) for part in parts]
        except (binascii.Error, ValueError):
            decoded = []
        if len(decoded) != 2 or any(len(d) != SHA1_BYTES for d in decoded):
            raise _LineError(column, "a hashed host name (|1|SALT|HASH) that is damaged")


def _check_blob(column: int, key_type: str, blob: bytes) -> None:
    """The blob is whole: length-prefixed fields to its end, the first naming ``key_type``."""
    fields: list[bytes] = []
    offset = 0
    while offset < len(blob):
        if offset + 4 > len(blob):
            raise _LineError(column, f"the {key_type} key is cut short (truncated or damaged)")
        (length,) = struct.unpack(">I", blob[offset : offset + 4])
        offset += 4
        if offset + length > len(blob):
            raise _LineError(column, f"the {key_type} key is cut short (truncated or damaged)")
        fields.append(blob[offset : offset + length])
        offset += length
    if not fields:
        raise _LineError(column, f"the {key_type} key is empty")
    named = fields[0].decode("ascii", errors="replace")
    if named != key_type:
        raise _LineError(column, f"the key is a {named[:40]!r} key, the line says {key_type}")
    expected = FIELDS.get(key_type)
    if expected is not None and len(fields) != expected:
        raise _LineError(column, f"the {key_type} key is damaged ({len(fields)} fields)")
    if key_type.endswith("ed25519") and len(fields[1]) != ED25519_KEY_BYTES:
        raise _LineError(column, f"the {key_type} key is damaged (not {ED25519_KEY_BYTES} bytes)")
