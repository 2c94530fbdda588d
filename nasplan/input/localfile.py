"""Reading the control node's own files boundedly: regular files only, a size limit, no hang.

Every file nasplan reads (plan, inventory, lab file, run.json, snapshots, identity and
known_hosts files, ssh_config) goes through here, so ``/dev/zero``, a FIFO or a directory is
refused at once instead of being read forever.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from nasplan.errors import InputError

MIB = 2**20
# Plans, inventories and lab files: the largest real one is a few KiB; 512 KiB (some 3000
# generated tests) leaves room for generated plans and keeps their validation short.
MAX_YAML_BYTES = 512 * 2**10
# run.json with per-second series of a long run stays well below this.
MAX_RUN_JSON_BYTES = 64 * MIB
# Private keys, known_hosts and ssh_config files.
MAX_KEY_FILE_BYTES = 1 * MIB
_READ_CHUNK_BYTES = 65536
# read-only; non-blocking so that opening a FIFO with no writer returns at once
_READ_ONLY_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _a(what: str) -> str:
    """``a YAML file``, ``an inventory file``."""
    return f"{'an' if what[:1].lower() in 'aeio' else 'a'} {what}"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes_bounded(path: Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; InputError otherwise.

    Opened non-blocking so a FIFO without a writer cannot hang the open; the size is checked
    before and while reading (a file that grows past the limit is refused too).
    """
    try:
        fd = os.open(path, flags=_READ_ONLY_FLAGS)
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected {_a(what)}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: is {_kind(info.st_mode)}, expected {_a(what)}")
        if info.st_size > max_bytes:
            raise InputError(
                f"{path}: {info.st_size} bytes is larger than the {max_bytes} bytes "
                f"({max_bytes / MIB:g} MiB) nasplan reads as {_a(what)}"
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, _READ_CHUNK_BYTES)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise InputError(
                    f"{path}: grew past the {max_bytes} bytes nasplan reads as {_a(what)}"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text_bounded(path: Path, max_bytes: int, what: str = "file") -> str:
    """``read_bytes_bounded`` decoded as UTF-8; undecodable bytes are an InputError."""
    return text_of(path, read_bytes_bounded(path, max_bytes, what))


def text_of(path: Path, data: bytes) -> str:
    """``data`` read from ``path`` as UTF-8 text; InputError at the first undecodable byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"{path}:{line}:{col}: not UTF-8 text ({exc.reason})") from None


def parse_json(path: Path, text: str) -> Any:
    """``json.loads`` whose errors, nesting too deep included, are one-line InputErrors."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{path}:1:1: invalid JSON: nested too deeply") from None


def read_json_bounded(path: Path, max_bytes: int, what: str) -> Any:
    """A bounded regular JSON file, parsed; every problem a one-line InputError."""
    return parse_json(path, read_text_bounded(path, max_bytes, what))


def private_file_problem(path: Path, *, secret: bool, required: bool = False) -> str | None:
    """Why ``path`` must not be used as an SSH file (None when it is fine, or does not exist
    and is not ``required``).

    It must be a regular file owned by the user running nasplan (or root), not writable by
    others; a private key (``secret``) not readable by others either, as ssh itself demands.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        if required and secret:
            return "file not found (the private key to log in with: `ssh-keygen -t ed25519`)"
        return "file not found" if required else None
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"is {_kind(info.st_mode)}, expected a regular file"
    if info.st_size > MAX_KEY_FILE_BYTES:
        return f"{info.st_size} bytes is larger than the {MAX_KEY_FILE_BYTES} bytes allowed"
    if info.st_uid not in (os.getuid(), 0):
        return f"is owned by uid {info.st_uid}, not by you (uid {os.getuid()}) or root"
    if info.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(info.st_mode):04o})"
    if secret and info.st_mode & 0o077:
        return (
            f"permissions {stat.S_IMODE(info.st_mode):04o} are too open for a private key "
            "(chmod 600, as ssh requires)"
        )
    return None
