"""A lab disk with a shape: an NBD server on its standard input, in memory, paced by
``nasplan.lab.disk_pacing`` (reads and writes at rates of their own, a write cache).

nbdkit's rate filter holds reads and writes to one rate; a disk whose writes are slower than
its reads (an SSD's uploads, a RAID 1's writes) or fast for a few GiB and then slow (an SLC
cache) needs this one. ``nbdfuse --command python3 -m nasplan.lab.shaped_disk SIZE ...``
serves it as a file (``nasplan.lab.volumes``), one request at a time, with the NBD server of
``nasplan.nbd_bridge`` (read, write, flush, trim, write zeroes). Its storage is an anonymous
mapping: only what is written takes the machine's memory, and a trim gives it back.
"""

from __future__ import annotations

import argparse
import mmap
import socket
import sys

from nasplan.lab.disk_pacing import DiskShape, Pacer
from nasplan.nbd_bridge import handshake, serve


class Disk:
    """The disk's bytes (``size``) and its pacing, as ``nasplan.nbd_bridge.serve`` asks them."""

    def __init__(self, size: int, pacer: Pacer) -> None:
        self.size = size
        self.data = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.view = memoryview(self.data)
        self.pacer = pacer

    def read(self, offset: int, length: int) -> memoryview:
        self.pacer.read(length)
        return self.view[offset : offset + length]

    def write(self, offset: int, data: bytes | bytearray) -> None:
        self.view[offset : offset + len(data)] = data
        self.pacer.write(len(data))

    def flush(self) -> None:
        """Nothing to do: its bytes are in memory."""

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
        disk = Disk(size, Pacer(shape))
        handshake(conn, disk)
        serve(conn, disk)
    except (EOFError, ConnectionError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
