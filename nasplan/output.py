"""The one way nasplan writes a file or a progress line: through a Redactor that knows every
secret of the run, atomically (temporary file + rename), a full disk as a clear error.

A unit test checks that no other module of nasplan (the lab apart) opens a file for writing.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import RunDirBusy, RunDirError

REDACTED = "********"
# Secrets shorter than this are not masked: "1" or "ab" would shred every number and word.
MIN_SECRET_CHARS = 3
# Free bytes the run directory needs before a run starts (run.json, raw outputs, report).
MIN_FREE_BYTES = 10 * 10**6


@dataclass
class Redactor:
    """Every secret of one run; ``text`` masks them all (longest first)."""

    secrets: set[str] = field(default_factory=set)

    def add(self, *values: str | None) -> None:
        """Remember more secrets (values shorter than MIN_SECRET_CHARS are ignored)."""
        self.secrets.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by ``********``."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text


def redactor_of(secrets: Iterable[str]) -> Redactor:
    """A Redactor knowing ``secrets``."""
    redactor = Redactor()
    redactor.add(*secrets)
    return redactor


def env_names(value: Any) -> list[str]:
    """Every value of a ``*_env`` key in a nested plan/inventory structure: environment variable
    names that hold secrets (``become_password_env``, ``password_env``, ``chap_secret_env``)."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key.endswith("_env") and isinstance(item, str):
                found.append(item)
            else:
                found += env_names(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found += env_names(item)
    return found


def secrets_from_environ(structures: Iterable[Any], environ: Mapping[str, str]) -> list[str]:
    """The values of every environment variable the plan or inventory names as a secret."""
    names = {name for structure in structures for name in env_names(structure)}
    return sorted(environ[name] for name in names if environ.get(name))


def _full(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _temp_file_beside(path: Path) -> tuple[int, str]:
    """A new temporary file in ``path``'s directory, made only when missing (a file's first
    write: run.json is written again after every test, its directory there)."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


def _overwrite_in_place(path: Path, data: bytes) -> bool:
    """``data`` over ``path``'s own blocks, on a disk too full for a temporary file; only when
    they hold it all (nothing to allocate, so the write cannot fail half-way). True if done."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        if len(data) > os.fstat(fd).st_blocks * 512:
            return False
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def write_text(
    path: Path,
    text: str,
    redactor: Redactor,
    *,
    durable: bool = True,
    in_place_when_full: bool = False,
) -> Path:
    """Write ``text`` (secrets masked) through a temporary file, then rename over ``path``.

    ``durable``: on disk (fsync) before the rename; False for what a run writes while it
    measures (its checkpoints of run.json, raw outputs), synced at its end (``sync_files``):
    an fsync there would wait on the disk between two measurements, at times for long.
    Raises RunDirError (one line, no traceback) when the disk is full or not writable; the
    previous version of ``path``, if any, stays whole. ``in_place_when_full``: on a full disk,
    write over ``path``'s own blocks when they hold the new text (run.json's last save, which
    says how the hosts were put back, barely longer than the one before it).
    """
    try:
        fd, temp_name = _temp_file_beside(path)
    except OSError as exc:
        raise RunDirError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(redactor.text(text))
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except OSError as exc:
        Path(temp_name).unlink(missing_ok=True)
        data = redactor.text(text).encode("utf-8")
        if _full(exc) and in_place_when_full and _overwrite_in_place(path, data):
            return path
        what = "the disk is full" if _full(exc) else (exc.strerror or str(exc))
        raise RunDirError(f"{path}: cannot write: {what}") from None
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path


def hold_space(path: Path, size_bytes: int) -> bool:
    """Hold ``size_bytes`` of ``path``'s disk in that file (random bytes: a compressing
    filesystem would hold nothing for zeros), so that a file the run must write at its end
    still fits once the disk filled up (``let_go`` frees it). False when the disk cannot give
    that much now (what it held before stays held)."""
    chunk = 1 << 16
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        held = os.fstat(fd).st_size
        os.lseek(fd, held, os.SEEK_SET)
        while held < size_bytes:
            held += os.write(fd, os.urandom(min(chunk, size_bytes - held)))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def let_go(path: Path) -> None:
    """Free the space ``hold_space`` held in ``path``."""
    path.unlink(missing_ok=True)


def sync_files(paths: Iterable[Path], root: Path) -> None:
    """Put files written under ``root`` with ``durable=False`` on disk, and the directories
    naming them up to ``root`` (a raw output's test directory was new too).

    Raises RunDirError naming the first file the disk would not take.
    """
    files = [path for path in dict.fromkeys(paths) if path.is_file()]
    directories: dict[Path, None] = {}
    for path in files:
        for parent in path.parents:
            if not parent.is_relative_to(root):
                break
            directories[parent] = None
    for path in [*files, *directories]:
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise RunDirError(f"{path}: cannot write: {exc.strerror or exc}") from None


class HeldRunDir:
    """This process's hold on a run directory: an exclusive lock on the directory itself (no file
    is written for it), so that one nasplan at a time writes into it; let go of by ``release``
    or when the process ends, however it ends.

    Raises RunDirBusy when another process holds it (a run, its ``--resume``, a ``restore``).
    """

    def __init__(self, run_dir: Path) -> None:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunDirBusy(
                f"{run_dir}: in use by another nasplan process (a run, its --resume or a restore "
                "of it); nothing written into it: run again once that one has ended"
            ) from None
        self._fd: int | None = fd

    def release(self) -> None:
        """Let go of the run directory (another process may write into it from now on)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def free_bytes(directory: Path) -> int:
    """Free bytes for an unprivileged writer on the filesystem of ``directory`` (or its parent)."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    stats = os.statvfs(probe)
    return stats.f_bavail * stats.f_frsize


def require_free_space(directory: Path, min_bytes: int | None = None) -> None:
    """RunDirError before a run starts when ``directory`` has less than ``min_bytes`` free.

    ``min_bytes`` defaults to ``NASPLAN_MIN_FREE_BYTES`` from the environment, else 10 MB.
    """
    if min_bytes is None:
        text = os.environ.get("NASPLAN_MIN_FREE_BYTES", "")
        min_bytes = int(text) if text.isdigit() else MIN_FREE_BYTES
    free = free_bytes(directory)
    if free < min_bytes:
        raise RunDirError(
            f"{directory}: only {free / 1e6:.1f} MB free, a run needs at least "
            f"{min_bytes / 1e6:.1f} MB (run.json, raw outputs, report); free some space or "
            "choose another directory with --out"
        )


_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w]|\.\d)")
_MAC = re.compile(
    r"(?<![\w:-])([0-9A-Fa-f]{2}([:-]))(?:[0-9A-Fa-f]{2}\2){4}[0-9A-Fa-f]{2}(?![\w:-])"
)
_IPV6 = re.compile(r"(?<![\w:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?![\w:])")
_PROC_ROUTE_HEX = re.compile(r"(?m)^(\S+\t)([0-9A-F]{8})(\t)([0-9A-F]{8})(?=\t)")
# What identifies a machine beside its addresses: UUIDs (the kernel's boot_id, filesystem and
# device-mapper UUIDs), host key fingerprints, disks' by-id names (model_SERIAL, WWNs) and
# values named serial.
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"
)
_FINGERPRINT = re.compile(
    r"\b(SHA256|SHA1|MD5):([A-Za-z0-9+/=]{16,}|(?:[0-9a-f]{2}:){15}[0-9a-f]{2})"
)
_DISK_ID = re.compile(
    r"\b(?:(ata|nvme|scsi|sata|usb|mmc)-([^\s/\"',]*_[^\s/\"',]*?)|wwn-(0x[0-9A-Fa-f]+))"
    r"(?=-part\d|[\s/\"',]|$)"
)
_SERIAL = re.compile(r"(?i)\b(serial(?:[ _-]?(?:number|no))?\s*[:=]\s*)([^\s,;\"']+)")
# A secret a command may print on a line of its own (`password=...`, `token: ...`).
_SECRET_LINE = re.compile(
    r"(?im)\b((?:password|passwd|secret|token|api[_-]?key|private[_-]?key)\w*\s*[=:]\s*)(\S+)"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S
)


def redact_secret_lines(text: str) -> str:
    """``text`` with values after ``password=``-like keys and private key blocks masked."""
    return _SECRET_LINE.sub(rf"\1{REDACTED}", _PRIVATE_KEY.sub(REDACTED, text))


@dataclass
class AddressMask:
    """Replaces IPv4, IPv6 and MAC addresses consistently (the same address, the same
    placeholder, in every file given to one mask), keeping what parsers compute on: an IPv4
    address keeps its last octet and its first three map to one 10.x.y network (so a /24 and
    its addresses stay together), link-local IPv6 stays link-local (fe80::N), others become
    2001:db8::N, MACs 02:00:00:00:xx:yy; loopback, netmasks, multicast and 0.0.0.0 stay.
    What else identifies a machine is masked the same way: UUIDs (the boot_id: hosts that share
    one still do) become 00000000-0000-0000-0000-00000000000N, host key fingerprints
    SHA256:maskedN, disks' by-id names ata-diskN (WWNs wwn-0xN), a value named serial
    maskedN."""

    networks: dict[str, str] = field(default_factory=dict)
    ipv6: dict[str, str] = field(default_factory=dict)
    macs: dict[str, str] = field(default_factory=dict)
    identifiers: dict[str, str] = field(default_factory=dict)

    def text(self, text: str) -> str:
        """``text`` with every address and identifier masked (``/proc/net/route``'s hex
        addresses too)."""
        text = _UUID.sub(lambda m: self._identifier(m.group(0).lower(), "uuid"), text)
        text = _FINGERPRINT.sub(
            lambda m: f"{m.group(1)}:{self._identifier(m.group(0), 'masked')}", text
        )
        text = _DISK_ID.sub(self._disk, text)
        text = _SERIAL.sub(lambda m: m.group(1) + self._identifier(m.group(2), "masked"), text)
        text = _PROC_ROUTE_HEX.sub(self._hex_route, text)
        text = _MAC.sub(self._mac, text)
        text = _IPV6.sub(self._v6, text)
        return _IPV4.sub(lambda m: self.v4(m.group(1)), text)

    def _identifier(self, value: str, form: str) -> str:
        """The placeholder of ``value``: the same value, the same placeholder."""
        if value not in self.identifiers:
            index = len(self.identifiers) + 1
            self.identifiers[value] = (
                f"00000000-0000-0000-0000-{index:012d}" if form == "uuid" else f"{form}{index}"
            )
        return self.identifiers[value]

    def _disk(self, match: re.Match[str]) -> str:
        if match.group(3):
            return "wwn-0x" + self._identifier(match.group(0), "")
        return f"{match.group(1)}-" + self._identifier(match.group(0), "disk")

    def v4(self, address: str) -> str:
        octets = address.split(".")
        if any(int(o) > 255 for o in octets) or int(octets[0]) in (0, 127) or int(octets[0]) >= 224:
            return address
        network = ".".join(octets[:3])
        if network not in self.networks:
            index = len(self.networks) + 1
            self.networks[network] = f"10.{index // 256}.{index % 256}"
        return f"{self.networks[network]}.{octets[3]}"

    def _hex_route(self, match: re.Match[str]) -> str:
        def one(value: str) -> str:
            dotted = ".".join(str(b) for b in reversed(bytes.fromhex(value)))
            return bytes(reversed([int(o) for o in self.v4(dotted).split(".")])).hex().upper()

        return match.group(1) + one(match.group(2)) + match.group(3) + one(match.group(4))

    def _mac(self, match: re.Match[str]) -> str:
        raw, separator = match.group(0), match.group(2)
        key = raw.lower().replace("-", ":")
        if key in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"):
            return raw
        if key not in self.macs:
            index = len(self.macs) + 1
            self.macs[key] = f"02:00:00:00:{index // 256:02x}:{index % 256:02x}"
        masked = self.macs[key].replace(":", separator)
        return masked.upper() if raw.isupper() else masked

    def _v6(self, match: re.Match[str]) -> str:
        raw = match.group(1)
        try:
            address = ipaddress.IPv6Address(raw)
        except ValueError:
            return raw
        if address.is_loopback or address.is_unspecified or address.is_multicast:
            return raw
        key = str(address)
        if key not in self.ipv6:
            index = len(self.ipv6) + 1
            prefix = "fe80::" if address.is_link_local else "2001:db8::"
            self.ipv6[key] = str(ipaddress.IPv6Address(prefix) + index)
        return self.ipv6[key]
