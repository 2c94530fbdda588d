"""Sequential write or read of N bytes to an iSCSI LUN through libiscsi, run on the client.

nasplan copies this file to the client and runs it with the client's ``python3``; it needs only
the standard library and libiscsi's shared library (``libiscsi.so.7``, Debian's ``libiscsi7``,
which ``libiscsi-bin`` pulls in). No kernel initiator, no mount, nothing to log out of.

The CHAP secret comes on standard input (first line) and is handed to libiscsi through
``LIBISCSI_CHAP_PASSWORD`` in this process's own environment, which ``iscsi_parse_full_url``
reads; it never appears in argv. Output: one JSON line on stdout, e.g.
``{"direction": "write", "bytes": 67108864, "duration_s": 0.41, ...}`` or
``{"error": "...", "stage": "login"}`` with exit status 3.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import select
import sys
import time
from typing import Any

SCSI_STATUS_GOOD = 0
ISCSI_SESSION_NORMAL = 2
ISCSI_HEADER_DIGEST_NONE_CRC32C = 2
# Random data the writes cycle through, so a compressing or deduplicating target sees no
# pattern it could shortcut.
POOL_BYTES = 8 * 2**20
EXIT_FAILED = 3

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class ReadCapacity16(ctypes.Structure):
    """The head of libiscsi's ``struct scsi_readcapacity16``."""

    _fields_ = [("returned_lba", ctypes.c_uint64), ("block_length", ctypes.c_uint32)]


# Not a NasplanError: this script runs alone on the client (stdlib only); it reports as JSON.
class Failed(Exception):
    """A step failed; ``stage`` says which (load, login, capacity, write, read, sync)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def load_library() -> Any:
    """libiscsi with the prototypes this script calls; Failed("load") when it is missing."""
    name = ctypes.util.find_library("iscsi") or "libiscsi.so.7"
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise Failed(
            "load", f"libiscsi is not installed ({exc}): apt-get install libiscsi7"
        ) from exc
    vp, c_int, u64, u32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32
    prototypes: dict[str, tuple[Any, list[Any]]] = {
        "iscsi_create_context": (vp, [ctypes.c_char_p]),
        "iscsi_destroy_context": (c_int, [vp]),
        "iscsi_parse_full_url": (vp, [vp, ctypes.c_char_p]),
        "iscsi_destroy_url": (None, [vp]),
        "iscsi_set_targetname": (c_int, [vp, ctypes.c_char_p]),
        "iscsi_set_session_type": (c_int, [vp, c_int]),
        "iscsi_set_header_digest": (c_int, [vp, c_int]),
        "iscsi_set_initiator_username_pwd": (c_int, [vp, ctypes.c_char_p, ctypes.c_char_p]),
        "iscsi_full_connect_sync": (c_int, [vp, ctypes.c_char_p, c_int]),
        "iscsi_logout_sync": (c_int, [vp]),
        "iscsi_get_error": (ctypes.c_char_p, [vp]),
        "iscsi_get_fd": (c_int, [vp]),
        "iscsi_which_events": (c_int, [vp]),
        "iscsi_service": (c_int, [vp, c_int]),
        "iscsi_readcapacity16_sync": (vp, [vp, c_int]),
        "iscsi_synchronizecache16_sync": (vp, [vp, c_int, u64, u32, c_int, c_int]),
        "scsi_datain_unmarshall": (vp, [vp]),
        "scsi_free_scsi_task": (None, [vp]),
        "iscsi_write16_task": (
            vp,
            [vp, c_int, u64, vp, u32, c_int, c_int, c_int, c_int, c_int, c_int, CALLBACK, vp],
        ),
        "iscsi_read16_task": (
            vp,
            [vp, c_int, u64, u32, c_int, c_int, c_int, c_int, c_int, c_int, CALLBACK, vp],
        ),
    }
    for symbol, (restype, argtypes) in prototypes.items():
        function = getattr(lib, symbol)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def task_status(task: int) -> int:
    """``task->status``: the first member of libiscsi's ``struct scsi_task``."""
    return int(ctypes.cast(task, ctypes.POINTER(ctypes.c_int))[0])


class Session:
    """One logged-in iSCSI session to one LUN."""

    def __init__(self, lib: Any, initiator: str, url: str, lun: int) -> None:
        self.lib = lib
        self.lun = lun
        self.context = lib.iscsi_create_context(initiator.encode())
        if not self.context:
            raise Failed("login", "cannot create an iSCSI context")
        parsed = lib.iscsi_parse_full_url(self.context, url.encode())
        if not parsed:
            raise Failed("login", self.error())
        lib.iscsi_destroy_url(parsed)
        # The URL carries no user or password: libiscsi took them from LIBISCSI_CHAP_*.
        target = url.split("/", 3)[3].rsplit("/", 1)[0]
        portal = url.split("/", 3)[2]
        lib.iscsi_set_targetname(self.context, target.encode())
        lib.iscsi_set_session_type(self.context, ISCSI_SESSION_NORMAL)
        lib.iscsi_set_header_digest(self.context, ISCSI_HEADER_DIGEST_NONE_CRC32C)
        user = os.environ.get("LIBISCSI_CHAP_USERNAME")
        if user:
            password = os.environ.get("LIBISCSI_CHAP_PASSWORD", "")
            lib.iscsi_set_initiator_username_pwd(self.context, user.encode(), password.encode())
        if lib.iscsi_full_connect_sync(self.context, portal.encode(), lun) != 0:
            raise Failed("login", self.error())

    def error(self) -> str:
        text = self.lib.iscsi_get_error(self.context)
        return text.decode(errors="replace") if text else "unknown libiscsi error"

    def capacity(self) -> tuple[int, int]:
        """(block size in bytes, number of blocks) of the LUN."""
        task = self.lib.iscsi_readcapacity16_sync(self.context, self.lun)
        if not task or task_status(task) != SCSI_STATUS_GOOD:
            raise Failed("capacity", f"READ CAPACITY(16) failed: {self.error()}")
        data = self.lib.scsi_datain_unmarshall(task)
        if not data:
            raise Failed("capacity", "READ CAPACITY(16) returned no data")
        rc16 = ReadCapacity16.from_address(data)
        block_bytes, blocks = int(rc16.block_length), int(rc16.returned_lba) + 1
        self.lib.scsi_free_scsi_task(task)
        return block_bytes, blocks

    def synchronize(self) -> None:
        """SYNCHRONIZE CACHE(16) over the whole LUN: the target puts what it holds on disk."""
        task = self.lib.iscsi_synchronizecache16_sync(self.context, self.lun, 0, 0, 0, 0)
        if not task or task_status(task) != SCSI_STATUS_GOOD:
            raise Failed("sync", f"SYNCHRONIZE CACHE(16) failed: {self.error()}")
        self.lib.scsi_free_scsi_task(task)

    def close(self) -> None:
        self.lib.iscsi_logout_sync(self.context)
        self.lib.iscsi_destroy_context(self.context)


class Progress:
    """Where a stream stands: next byte offset to queue, requests in flight, first error."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.in_flight = 0
        self.error = ""


def stream(
    session: Session,
    direction: str,
    size_bytes: int,
    request_bytes: int,
    depth: int,
    lba_bytes: int,
) -> None:
    """Write or read ``size_bytes`` from LBA 0 on, ``depth`` requests in flight at once."""
    lib, pool = session.lib, ctypes.create_string_buffer(os.urandom(POOL_BYTES + request_bytes))
    progress = Progress()

    def queue() -> None:
        while progress.in_flight < depth and progress.next_offset < size_bytes:
            offset = progress.next_offset
            length = min(request_bytes, size_bytes - offset)
            lba = offset // lba_bytes
            if direction == "write":
                data = ctypes.addressof(pool) + offset % POOL_BYTES
                task = lib.iscsi_write16_task(
                    session.context, session.lun, lba, data, length, lba_bytes,
                    0, 0, 0, 0, 0, callback, None,
                )  # fmt: skip
            else:
                task = lib.iscsi_read16_task(
                    session.context, session.lun, lba, length, lba_bytes,
                    0, 0, 0, 0, 0, callback, None,
                )  # fmt: skip
            if not task:
                progress.error = f"cannot queue a {direction}: {session.error()}"
                return
            progress.next_offset = offset + length
            progress.in_flight += 1

    def done(_context: int, status: int, task: int, _private: int) -> None:
        progress.in_flight -= 1
        if status != SCSI_STATUS_GOOD and not progress.error:
            progress.error = f"{direction} failed (SCSI status {status}): {session.error()}"
        lib.scsi_free_scsi_task(task)
        if not progress.error:
            queue()

    callback = CALLBACK(done)
    queue()
    while progress.in_flight > 0 and not progress.error:
        poller = select.poll()
        poller.register(lib.iscsi_get_fd(session.context), lib.iscsi_which_events(session.context))
        for _fd, events in poller.poll(1000):
            if lib.iscsi_service(session.context, events) < 0:
                raise Failed(direction, f"iscsi_service: {session.error()}")
    if progress.error:
        raise Failed(direction, progress.error)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Log in, check the LUN is large enough, time the write or read; the result line."""
    lib = load_library()
    url = f"iscsi://{args.portal}/{args.iqn}/{args.lun}"
    started = time.monotonic()
    session = Session(lib, args.initiator, url, args.lun)
    login_s = time.monotonic() - started
    try:
        block_bytes, blocks = session.capacity()
        capacity_bytes = block_bytes * blocks
        if args.size_bytes > capacity_bytes:
            raise Failed(
                "capacity",
                f"the LUN holds {capacity_bytes} bytes, less than the {args.size_bytes} to move",
            )
        if args.request_bytes % block_bytes or args.size_bytes % block_bytes:
            raise Failed("capacity", f"sizes must be whole {block_bytes}-byte blocks of the LUN")
        started = time.monotonic()
        stream(
            session, args.direction, args.size_bytes, args.request_bytes, args.depth, block_bytes
        )
        if args.direction == "write":
            session.synchronize()
        duration_s = time.monotonic() - started
    finally:
        session.close()
    return {
        "direction": args.direction,
        "bytes": args.size_bytes,
        "duration_s": round(duration_s, 6),
        "login_s": round(login_s, 6),
        "request_bytes": args.request_bytes,
        "queue_depth": args.depth,
        "lun_block_bytes": block_bytes,
        "lun_capacity_bytes": capacity_bytes,
        "synchronized": args.direction == "write",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--portal", required=True, help="ADDRESS:PORT")
    parser.add_argument("--iqn", required=True)
    parser.add_argument("--lun", type=int, required=True)
    parser.add_argument("--direction", choices=("write", "read"), required=True)
    parser.add_argument("--size-bytes", type=int, required=True)
    parser.add_argument("--request-bytes", type=int, default=2**20)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--initiator", default="iqn.2026-12.dev.nasplan:initiator")
    parser.add_argument("--chap-user", help="CHAP user; the secret is read from stdin")
    args = parser.parse_args()
    if args.chap_user:
        os.environ["LIBISCSI_CHAP_USERNAME"] = args.chap_user
        os.environ["LIBISCSI_CHAP_PASSWORD"] = sys.stdin.readline().rstrip("\n")
    try:
        print(json.dumps(measure(args)))
    except Failed as exc:
        print(json.dumps({"error": str(exc), "stage": exc.stage, "direction": args.direction}))
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
