"""The user-space bridge's NBD side, as nbdfuse speaks it (the fixed newstyle handshake,
``NBD_OPT_GO``, simple replies), over a socket pair, on a disk in memory; the bridge's NFS and
iSCSI disks against the lab's real servers are in tests/lab/test_disk_profile_bridge_lab.py."""

from __future__ import annotations

import socket
import struct
import threading

from nasplan import nbd_bridge as nbd


class Memory:
    """A disk of 1 MiB in memory; flushes counted."""

    size = 1 << 20

    def __init__(self) -> None:
        self.data = bytearray(self.size)
        self.flushes = 0

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.data[offset : offset + length])

    def write(self, offset: int, data: bytes) -> None:
        self.data[offset : offset + len(data)] = data

    def flush(self) -> None:
        self.flushes += 1


def request(conn: socket.socket, command: int, offset: int, length: int, cookie: int) -> None:
    conn.sendall(struct.pack(">IHHQQI", nbd.REQUEST_MAGIC, 0, command, cookie, offset, length))


def reply(conn: socket.socket, length: int = 0) -> tuple[int, int, bytes]:
    magic, error, cookie = struct.unpack(">IIQ", nbd.recv_exact(conn, 16))
    assert magic == nbd.SIMPLE_REPLY_MAGIC
    return error, cookie, bytes(nbd.recv_exact(conn, length)) if not error else b""


def test_the_bridge_answers_nbdfuse_s_handshake_reads_writes_and_flushes() -> None:
    client, server = socket.socketpair()
    disk = Memory()

    def run() -> None:
        nbd.handshake(server, disk)
        nbd.serve(server, disk)

    thread = threading.Thread(target=run)
    thread.start()
    magic, opt, flags = struct.unpack(">QQH", nbd.recv_exact(client, 18))
    assert (magic, opt, flags & 1) == (nbd.NBDMAGIC, nbd.IHAVEOPT, 1)
    client.sendall(struct.pack(">I", 3))
    client.sendall(struct.pack(">QII", nbd.IHAVEOPT, nbd.OPT_GO, 6) + bytes(6))
    _, _, kind, length = struct.unpack(">QIII", nbd.recv_exact(client, 20))
    size, transmission = struct.unpack(">HQH", nbd.recv_exact(client, length))[1:]
    assert (kind, size, transmission & 4) == (nbd.REP_INFO, 1 << 20, 4)  # (flush offered)
    assert struct.unpack(">QIII", nbd.recv_exact(client, 20))[2] == nbd.REP_ACK

    request(client, nbd.CMD_WRITE, 4096, 5, cookie=7)
    client.sendall(b"hello")
    assert reply(client) == (0, 7, b"")
    request(client, nbd.CMD_READ, 4094, 8, cookie=8)
    assert reply(client, 8) == (0, 8, b"\0\0hello\0")
    request(client, nbd.CMD_FLUSH, 0, 0, cookie=9)
    assert reply(client) == (0, 9, b"")
    request(client, nbd.CMD_READ, (1 << 20) - 4, 8, cookie=10)  # beyond its end
    assert reply(client) == (nbd.EINVAL, 10, b"")
    request(client, nbd.CMD_DISC, 0, 0, cookie=11)
    thread.join(5)
    assert not thread.is_alive() and disk.flushes == 1
    client.close()
    server.close()
