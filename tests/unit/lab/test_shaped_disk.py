"""A lab disk with separate read and write rates and a write cache: its pacing on a test's own
clock, and its NBD server over a socket pair (the lab tests serve it to nbdfuse for real)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from nasplan import nbd_bridge as nbd
from nasplan.lab import shaped_disk
from nasplan.lab.disk_pacing import BURSTINESS_S, DiskShape, Pacer

MIB = 2**20


class FakeTime:
    """A clock that moves only when something sleeps."""

    def __init__(self) -> None:
        self.now = 100.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def pacer(shape: DiskShape) -> tuple[Pacer, FakeTime]:
    fake = FakeTime()
    return Pacer(shape, fake.clock, fake.sleep), fake


def test_reads_and_writes_each_go_at_their_own_rate() -> None:
    disk, fake = pacer(DiskShape(read_rate=550 * MIB, write_rate=200 * MIB))
    start = fake.now
    for _ in range(100):
        disk.write(2 * MIB)
    # 200 MiB at 200 MiB/s: a second
    assert fake.now - start == pytest.approx(1.0)
    start = fake.now
    for _ in range(275):
        disk.read(2 * MIB)
    # 550 MiB at 550 MiB/s, less the burst a disk idle for reads lets through at once
    assert fake.now - start == pytest.approx(1.0 - BURSTINESS_S)


def test_a_write_cache_is_fast_for_its_size_then_writes_slow_down_until_it_idles() -> None:
    shape = DiskShape(read_rate=500 * MIB, write_rate=50 * MIB, cache_bytes=64 * MIB,
                      cache_rate=400 * MIB)  # fmt: skip
    disk, fake = pacer(shape)
    assert disk.write_seconds(32 * MIB) == pytest.approx(32 / 400)
    # the write that fills the cache: its first 32 MiB fast, the rest at the write rate
    assert disk.write_seconds(64 * MIB) == pytest.approx(32 / 400 + 32 / 50)
    assert disk.write_seconds(50 * MIB) == pytest.approx(1.0)
    # no writes for a second past the burst: the cache empties at the write rate, 50 MiB of it
    fake.now += 1.0 + BURSTINESS_S
    assert disk.write_seconds(50 * MIB) == pytest.approx(50 / 400)


def serve_in_thread(size: int, shape: DiskShape) -> tuple[socket.socket, threading.Thread]:
    ours, theirs = socket.socketpair()

    def run() -> None:
        try:
            disk = shaped_disk.Disk(size, Pacer(shape))
            nbd.handshake(theirs, disk)
            nbd.serve(theirs, disk)
        except EOFError:
            pass
        finally:
            theirs.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return ours, thread


def go(conn: socket.socket) -> tuple[int, int]:
    """A client's fixed newstyle handshake with NBD_OPT_GO (after an option the server lacks):
    the export's size and transmission flags."""
    magic, opt, flags = struct.unpack(">QQH", nbd.recv_exact(conn, 18))
    assert (magic, opt) == (nbd.NBDMAGIC, nbd.IHAVEOPT) and flags & 1
    conn.sendall(struct.pack(">I", 3))
    conn.sendall(struct.pack(">QII", nbd.IHAVEOPT, 8, 0))  # structured replies
    _, option, reply, length = struct.unpack(">QIII", nbd.recv_exact(conn, 20))
    assert (option, reply, length) == (8, nbd.REP_ERR_UNSUP, 0)
    name = b""
    data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
    conn.sendall(struct.pack(">QII", nbd.IHAVEOPT, nbd.OPT_GO, len(data)) + data)
    _, _, reply, length = struct.unpack(">QIII", nbd.recv_exact(conn, 20))
    assert (reply, length) == (nbd.REP_INFO, 12)
    info, size, transmission = struct.unpack(">HQH", nbd.recv_exact(conn, 12))
    _, _, reply, _ = struct.unpack(">QIII", nbd.recv_exact(conn, 20))
    assert (info, reply) == (0, nbd.REP_ACK)  # NBD_INFO_EXPORT
    return size, transmission


def request(conn: socket.socket, command: int, offset: int, length: int, data: bytes = b"") -> int:
    conn.sendall(struct.pack(">IHHQQI", nbd.REQUEST_MAGIC, 0, command, 7, offset, length))
    conn.sendall(data)
    magic, error, cookie = struct.unpack(">IIQ", nbd.recv_exact(conn, 16))
    assert (magic, cookie) == (nbd.SIMPLE_REPLY_MAGIC, 7)
    return int(error)


def test_the_disk_serves_nbd_reads_writes_and_zeroes() -> None:
    conn, thread = serve_in_thread(8 * MIB, DiskShape(1000 * MIB, 500 * MIB))
    size, flags = go(conn)
    assert size == 8 * MIB and flags & 1 and flags & 32  # has flags; trims
    block = bytes(range(256)) * 4096
    assert request(conn, nbd.CMD_WRITE, 4096, len(block), block) == 0
    assert request(conn, nbd.CMD_READ, 4096, len(block)) == 0
    assert nbd.recv_exact(conn, len(block)) == block
    # zeroing a range that is not page-aligned zeroes it exactly
    assert request(conn, nbd.CMD_WRITE_ZEROES, 5000, 10000) == 0
    assert request(conn, nbd.CMD_READ, 4096, 16384) == 0
    expected = block[:904] + bytes(10000) + block[10904:16384]
    assert nbd.recv_exact(conn, 16384) == expected
    # past the end: EINVAL, and the connection goes on
    assert request(conn, nbd.CMD_READ, 8 * MIB - 512, 1024) == nbd.EINVAL
    assert request(conn, nbd.CMD_FLUSH, 0, 0) == 0
    conn.sendall(struct.pack(">IHHQQI", nbd.REQUEST_MAGIC, 0, nbd.CMD_DISC, 0, 0, 0))
    thread.join(timeout=5)
    assert not thread.is_alive()
    conn.close()
