"""A lab disk with a shape: an NBD server on its standard input, in memory, paced by
``nasplan.lab.disk_pacing`` (reads and writes at rates of their own, a write cache).

nbdkit's rate filter holds reads and writes to one rate; a disk whose writes are slower than
its reads (an SSD's uploads, a RAID 1's writes) or fast for a few GiB and then slow (an SLC
cache) needs this one. ``nbdfuse --command python3 -m nasplan.lab.shaped_disk SIZE ...``
serves it as a file (``nasplan.lab.volumes``), one request at a time. Its storage is an
anonymous mapping: only what is written takes the machine's memory, and a trim gives it back.
It speaks the fixed newstyle handshake (``NBD_OPT_GO``, else ``NBD_OPT_EXPORT_NAME``) and
simple replies: read, write, flush, trim, write zeroes, disconnect.
"""

from __future__ import annotations

import argparse
import mmap
import socket
import struct
import sys

from nasplan.lab.disk_pacing import DiskShape, Pacer

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2
OPT_EXPORT_NAME, OPT_ABORT, OPT_GO = 1, 2, 7
REP_ACK, REP_INFO, REP_ERR_UNSUP = 1, 3, 2**31 + 1
INFO_EXPORT = 0
# has flags, flush, trim, write zeroes
TRANSMISSION_FLAGS = 1 | 4 | 32 | 64
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
EINVAL = 22
_REQUEST = struct.Struct(">IHHQQI")


class Disk:
    """The disk's bytes (``size``) and its pacing; requests outside it fail with EINVAL."""

    def __init__(self, size: int, pacer: Pacer) -> None:
        self.size = size
        self.data = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.view = memoryview(self.data)
        self.pacer = pacer

    def fits(self, offset: int, length: int) -> bool:
        return offset + length <= self.size

    def zero(self, offset: int, length: int) -> None:
        """Zero a range; whole pages in it go back to the machine."""
        page = mmap.PAGESIZE
        start, end = -(-offset // page) * page, (offset + length) // page * page
        if end > start:
            self.data.madvise(mmap.MADV_DONTNEED, start, end - start)
            self.view[offset:start] = bytes(start - offset)
            self.view[end : offset + length] = bytes(offset + length - end)
        else:
            self.view[offset : offset + length] = bytes(length)


def recv_exact(conn: socket.socket, length: int) -> bytes:
    """``length`` bytes from ``conn``; EOFError when it closes first."""
    data = bytearray(length)
    recv_into(conn, memoryview(data))
    return bytes(data)


def handshake(conn: socket.socket, size: int) -> None:
    """The fixed newstyle handshake up to transmission; EOFError when the client leaves."""
    conn.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    (client_flags,) = struct.unpack(">I", recv_exact(conn, 4))
    export = struct.pack(">QH", size, TRANSMISSION_FLAGS)
    while True:
        magic, option, length = struct.unpack(">QII", recv_exact(conn, 16))
        recv_exact(conn, length)
        if magic != IHAVEOPT:
            raise EOFError
        if option == OPT_EXPORT_NAME:
            zeroes = b"" if client_flags & FLAG_NO_ZEROES else bytes(124)
            conn.sendall(export + zeroes)
            return
        if option == OPT_ABORT:
            _option_reply(conn, option, REP_ACK)
            raise EOFError
        if option == OPT_GO:
            _option_reply(conn, option, REP_INFO, struct.pack(">H", INFO_EXPORT) + export)
            _option_reply(conn, option, REP_ACK)
            return
        _option_reply(conn, option, REP_ERR_UNSUP)


def _option_reply(conn: socket.socket, option: int, reply: int, data: bytes = b"") -> None:
    conn.sendall(struct.pack(">QIII", REPLY_MAGIC, option, reply, len(data)) + data)


def serve(conn: socket.socket, disk: Disk) -> None:
    """Answer requests one at a time until the client disconnects or leaves."""
    while True:
        magic, _flags, command, cookie, offset, length = _REQUEST.unpack(
            recv_exact(conn, _REQUEST.size)
        )
        if magic != REQUEST_MAGIC or command == CMD_DISC:
            return
        ok = disk.fits(offset, length)
        if command == CMD_WRITE:
            if ok:
                recv_into(conn, disk.view[offset : offset + length])
                disk.pacer.write(length)
            else:
                recv_exact(conn, length)
        elif command in (CMD_TRIM, CMD_WRITE_ZEROES) and ok:
            disk.zero(offset, length)
        header = struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, 0 if ok else EINVAL, cookie)
        if command == CMD_READ and ok:
            disk.pacer.read(length)
            conn.sendmsg([header, disk.view[offset : offset + length]])
        else:
            conn.sendall(header)


def recv_into(conn: socket.socket, view: memoryview) -> None:
    """Fill ``view`` from ``conn``; EOFError when it closes first."""
    got = 0
    while got < len(view):
        n = conn.recv_into(view[got:])
        if n == 0:
            raise EOFError
        got += n


def parse_args(argv: list[str]) -> tuple[int, DiskShape]:
    parser = argparse.ArgumentParser(prog="python3 -m nasplan.lab.shaped_disk")
    parser.add_argument("size", type=int, help="bytes")
    parser.add_argument("--read-rate", type=int, required=True, help="bytes per second")
    parser.add_argument("--write-rate", type=int, required=True, help="bytes per second")
    parser.add_argument("--cache-bytes", type=int, default=0, help="the write cache's size")
    parser.add_argument("--cache-rate", type=int, default=0, help="its rate, bytes per second")
    args = parser.parse_args(argv)
    shape = DiskShape(args.read_rate, args.write_rate, args.cache_bytes, args.cache_rate)
    return args.size, shape


def main(argv: list[str] | None = None) -> int:
    """Serve the disk on standard input (a socket, as nbdfuse --command gives it)."""
    size, shape = parse_args(sys.argv[1:] if argv is None else argv)
    conn = socket.socket(fileno=sys.stdin.fileno())
    try:
        handshake(conn, size)
        serve(conn, Disk(size, Pacer(shape)))
    except (EOFError, ConnectionError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
