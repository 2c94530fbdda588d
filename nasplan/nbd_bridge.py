"""A user-space bridge from a client to the NAS: an NBD server on standard input whose disk is
ONE file on an NFS export (libnfs) or an iSCSI LUN (libiscsi), for a client whose kernel has
no NFS or iSCSI client, or a login user who may not mount.

``nbdfuse DIR --command python3 nbd_bridge.py nfs SERVER EXPORT FILE SIZE`` serves it as the
file ``DIR/nbd``; every read and write of it crosses the network to the real server. nasplan
copies this file to the client (with ``iscsi_rw.py`` beside it for an iSCSI LUN) and runs it
with the client's ``python3``: the standard library and the shared library only, nothing of
nasplan installed there.

- ``nfs SERVER EXPORT FILE SIZE``: FILE (a path inside EXPORT) made new (it must not exist),
  SIZE bytes, removed again when the bridge ends.
- ``iscsi PORTAL IQN LUN``: the LUN as it is (READ16, WRITE16, flush: SYNCHRONIZE CACHE16); a
  CHAP user and secret come from the file ``--chap-file`` (two lines; removed once read).

It answers one request at a time: whatever queue depth fio asks for, the NAS sees one request
in flight. It ends, removing its NFS file or logging out of the LUN, when nbdfuse disconnects
(the FUSE mount undone), on SIGTERM or SIGHUP; then it removes ``--running FILE``. Errors go to
stderr (nbdfuse's log). Its NBD server (``handshake``, ``serve``: the fixed newstyle handshake,
``NBD_OPT_GO`` or else ``NBD_OPT_EXPORT_NAME``, and simple replies) serves the lab's shaped disks
too (``nasplan.lab.shaped_disk``), whose disk can also zero a range (trim, write zeroes).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import os
import select
import signal
import socket
import struct
import sys
from typing import Any

NBDMAGIC, IHAVEOPT = 0x4E42444D41474943, 0x49484156454F5054
REPLY_MAGIC, REQUEST_MAGIC, SIMPLE_REPLY_MAGIC = 0x3E889045565A9, 0x25609513, 0x67446698
OPT_EXPORT_NAME, OPT_ABORT, OPT_GO = 1, 2, 7
REP_ACK, REP_INFO, REP_ERR_UNSUP = 1, 3, 2**31 + 1
TRANSMISSION_FLAGS = 1 | 4  # has flags, flush
ZERO_FLAGS = 32 | 64  # trim, write zeroes: a disk with ``zero(offset, length)``
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
_RANGED = (CMD_READ, CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES)
EIO, EINVAL = 5, 22
_REQUEST = struct.Struct(">IHHQQI")
O_RDWR, O_CREAT, O_EXCL = 0o2, 0o100, 0o200


class Stop(Exception):
    """The bridge is asked to end (SIGTERM, SIGHUP)."""


def recv_exact(conn: socket.socket, length: int) -> bytearray:
    """``length`` bytes from ``conn``; EOFError when it closes first."""
    data = bytearray(length)
    view, got = memoryview(data), 0
    while got < length:
        n = conn.recv_into(view[got:])
        if n == 0:
            raise EOFError
        got += n
    return data


def handshake(conn: socket.socket, disk: Any) -> None:
    """The fixed newstyle handshake up to transmission (``NBD_OPT_GO`` or ``EXPORT_NAME``) of
    ``disk`` (its ``size``; trim and write zeroes when it can ``zero``); EOFError when the
    client leaves."""
    conn.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, 1 | 2))
    (client_flags,) = struct.unpack(">I", recv_exact(conn, 4))
    flags = TRANSMISSION_FLAGS | (ZERO_FLAGS if hasattr(disk, "zero") else 0)
    export = struct.pack(">QH", disk.size, flags)
    while True:
        magic, option, length = struct.unpack(">QII", recv_exact(conn, 16))
        recv_exact(conn, length)
        if magic != IHAVEOPT:
            raise EOFError
        if option == OPT_EXPORT_NAME:
            conn.sendall(export + (b"" if client_flags & 2 else bytes(124)))
            return
        replies = {
            OPT_GO: [(REP_INFO, struct.pack(">H", 0) + export), (REP_ACK, b"")],
            OPT_ABORT: [(REP_ACK, b"")],
        }.get(option, [(REP_ERR_UNSUP, b"")])
        for reply, data in replies:
            conn.sendall(struct.pack(">QIII", REPLY_MAGIC, option, reply, len(data)) + data)
        if option == OPT_ABORT:
            raise EOFError
        if option == OPT_GO:
            return


def serve(conn: socket.socket, disk: Any) -> None:
    """Answer requests one at a time until the client disconnects: ``disk``'s ``read(offset,
    length)``, ``write(offset, data)``, ``flush()`` and ``zero(offset, length)`` (trim, write
    zeroes) where it has one; a range past its ``size`` fails with EINVAL."""
    while True:
        magic, _flags, command, cookie, offset, length = _REQUEST.unpack(
            recv_exact(conn, _REQUEST.size)
        )
        if magic != REQUEST_MAGIC or command == CMD_DISC:
            return
        error, data = 0, b""
        payload = recv_exact(conn, length) if command == CMD_WRITE else None
        try:
            if command in _RANGED and offset + length > disk.size:
                error = EINVAL
            elif command == CMD_READ:
                data = disk.read(offset, length)
            elif command == CMD_WRITE:
                disk.write(offset, payload)
            elif command == CMD_FLUSH:
                disk.flush()
            elif command in (CMD_TRIM, CMD_WRITE_ZEROES) and hasattr(disk, "zero"):
                disk.zero(offset, length)
            else:
                error = EINVAL
        except OSError as exc:
            print(f"nbd_bridge: {exc}", file=sys.stderr)
            error = exc.errno or EIO
        conn.sendmsg([struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, cookie), data])


class NfsFile:
    """One new file on an NFS export through libnfs (``libnfs.so.13``), removed on close."""

    def __init__(self, server: str, export: str, path: str, size: int) -> None:
        try:
            lib = ctypes.CDLL("libnfs.so.13")
        except OSError as exc:
            raise SystemExit(f"libnfs is not installed ({exc}): apt-get install libnfs13") from exc
        vp, u64 = ctypes.c_void_p, ctypes.c_uint64
        for name, restype, args in (
            ("nfs_init_context", vp, []), ("nfs_destroy_context", None, [vp]),
            ("nfs_get_error", ctypes.c_char_p, [vp]),
            ("nfs_mount", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p]),
            ("nfs_open", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_int, vp]),
            ("nfs_create", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, vp]),
            ("nfs_pread", ctypes.c_int, [vp, vp, u64, u64, vp]),
            ("nfs_pwrite", ctypes.c_int, [vp, vp, u64, u64, ctypes.c_char_p]),
            ("nfs_ftruncate", ctypes.c_int, [vp, vp, u64]),
            ("nfs_fsync", ctypes.c_int, [vp, vp]), ("nfs_close", ctypes.c_int, [vp, vp]),
            ("nfs_unlink", ctypes.c_int, [vp, ctypes.c_char_p]),
        ):  # fmt: skip
            getattr(lib, name).restype, getattr(lib, name).argtypes = restype, args
        self.lib, self.size, self.path, self.made = lib, size, path.encode(), False
        self.nfs, self.fh = lib.nfs_init_context(), ctypes.c_void_p()
        self.buffer = ctypes.create_string_buffer(1 << 20)
        try:
            self.check(lib.nfs_mount(self.nfs, server.encode(), export.encode()), "mount")
            handle = ctypes.byref(self.fh)
            made = lib.nfs_create(self.nfs, self.path, O_RDWR | O_CREAT | O_EXCL, 0o600, handle)
            self.made = self.check(made, "create") == 0
            self.check(lib.nfs_ftruncate(self.nfs, self.fh, size), "truncate")
        except OSError:
            self.close()
            raise

    def check(self, status: int, what: str) -> int:
        if status < 0:
            said = (self.lib.nfs_get_error(self.nfs) or b"").decode(errors="replace")
            raise OSError(-status, f"NFS {what} {self.path.decode()}: {said}")
        return status

    def read(self, offset: int, length: int) -> bytes:
        if length > len(self.buffer):
            self.buffer = ctypes.create_string_buffer(length)
        got = self.check(self.lib.nfs_pread(self.nfs, self.fh, offset, length, self.buffer), "read")
        return ctypes.string_at(self.buffer, got) + bytes(length - got)

    def write(self, offset: int, data: bytes) -> None:
        done = 0
        while done < len(data):
            n = self.lib.nfs_pwrite(self.nfs, self.fh, offset + done, len(data) - done,
                                    bytes(data[done:]))  # fmt: skip
            done += self.check(n, "write") or 1

    def flush(self) -> None:
        self.check(self.lib.nfs_fsync(self.nfs, self.fh), "fsync")

    def close(self) -> None:
        if self.fh:
            self.lib.nfs_close(self.nfs, self.fh)
        if self.made:
            self.lib.nfs_unlink(self.nfs, self.path)
        self.lib.nfs_destroy_context(self.nfs)


class IscsiLun:
    """An iSCSI LUN through libiscsi (``iscsi_rw.py``'s session), logged out on close."""

    def __init__(self, portal: str, iqn: str, lun: int, chap_file: str | None) -> None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        iscsi_rw: Any = importlib.import_module("iscsi_rw")  # shipped beside this file

        if chap_file:
            with open(chap_file) as given:
                user, secret = [*given.read().split("\n"), "", ""][:2]
            os.remove(chap_file)
            os.environ["LIBISCSI_CHAP_USERNAME"], os.environ["LIBISCSI_CHAP_PASSWORD"] = (
                user,
                secret,
            )
        self.m = iscsi_rw
        try:
            self.lib = iscsi_rw.load_library()
            initiator = "iqn.2026-12.dev.nasplan:bridge"
            self.session = iscsi_rw.Session(
                self.lib, initiator, f"iscsi://{portal}/{iqn}/{lun}", lun
            )
            self.block, blocks = self.session.capacity()
        except iscsi_rw.Failed as exc:
            raise SystemExit(f"iSCSI {exc.stage}: {exc}") from exc
        self.size = self.block * blocks
        self.lib.scsi_task_add_data_in_buffer.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                          ctypes.c_void_p]  # fmt: skip
        self.buffer = ctypes.create_string_buffer(1 << 20)

    def _run(self, make: Any) -> None:
        """Queue the task ``make(callback)`` makes and service the session until it is done."""
        state = {"status": -1, "done": False}

        def done(_context: int, status: int, task: int, _private: int) -> None:
            state.update(status=status, done=True)
            self.lib.scsi_free_scsi_task(task)

        callback = self.m.CALLBACK(done)
        context = self.session.context
        if not make(callback):
            raise OSError(EIO, f"cannot queue the request: {self.session.error()}")
        while not state["done"]:
            poller = select.poll()
            poller.register(self.lib.iscsi_get_fd(context), self.lib.iscsi_which_events(context))
            for _fd, events in poller.poll(1000):
                if self.lib.iscsi_service(context, events) < 0:
                    raise OSError(EIO, f"iscsi_service: {self.session.error()}")
        if state["status"] != self.m.SCSI_STATUS_GOOD:
            raise OSError(EIO, f"SCSI status {state['status']}: {self.session.error()}")

    def read(self, offset: int, length: int) -> bytes:
        if length > len(self.buffer):
            self.buffer = ctypes.create_string_buffer(length)
        lib, s, lba = self.lib, self.session, offset // self.block

        def make(callback: Any) -> int:
            task = lib.iscsi_read16_task(s.context, s.lun, lba, length, self.block,
                                         0, 0, 0, 0, 0, callback, None)  # fmt: skip
            if task:
                lib.scsi_task_add_data_in_buffer(task, length, self.buffer)
            return int(task or 0)

        self._run(make)
        return ctypes.string_at(self.buffer, length)

    def write(self, offset: int, data: bytes) -> None:
        data = bytes(data)
        lib, s, lba = self.lib, self.session, offset // self.block
        self._run(lambda cb: lib.iscsi_write16_task(
            s.context, s.lun, lba, data, len(data), self.block, 0, 0, 0, 0, 0, cb, None
        ))  # fmt: skip

    def flush(self) -> None:
        self.session.synchronize()

    def close(self) -> None:
        self.session.close()


def _stop(_signal: int, _frame: Any) -> None:
    raise Stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nbd_bridge.py", description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=("nfs", "iscsi"))
    parser.add_argument(
        "where", nargs="+", help="nfs: SERVER EXPORT FILE SIZE; iscsi: PORTAL IQN LUN"
    )
    parser.add_argument("--chap-file")
    parser.add_argument("--running", help="a file removed once the bridge has cleaned up")
    args = parser.parse_args(argv)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _stop)
    disk: Any = None
    try:
        if args.backend == "nfs":
            server, export, path, size = args.where
            disk = NfsFile(server, export, path, int(size))
        else:
            portal, iqn, lun = args.where
            disk = IscsiLun(portal, iqn, int(lun), args.chap_file)
        conn = socket.socket(fileno=sys.stdin.fileno())
        handshake(conn, disk)
        serve(conn, disk)
    except (EOFError, ConnectionError, Stop):
        pass
    except OSError as exc:
        print(f"nbd_bridge: {exc}", file=sys.stderr)
        return 1
    finally:
        if disk is not None:
            disk.close()
        if args.running:
            with contextlib.suppress(OSError):  # (its directory removed meanwhile)
                os.remove(args.running)
    return 0


if __name__ == "__main__":
    sys.exit(main())
