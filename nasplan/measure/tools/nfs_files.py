"""Many files to or from an NFS export through libnfs, in one mount, run on the client.

nasplan copies this file to the client and runs it with the client's ``python3``; it needs only
the standard library and libnfs's shared library (``libnfs.so.13`` or later: Debian's
``libnfs13``, which ``libnfs-utils`` with its ``nfs-cp`` pulls in). ``nfs-cp`` copies one file
a process, each with a mount of its own; a copy of many files from a user's NFS mount shares
one mount and its connection, as this does. No kernel NFS client, no mount on the client.

``write``: each regular file of ``--local`` (sorted by name) into ``--dir`` of the export (made
when missing), truncated first; ``read``: the same names back, their bytes counted and dropped;
``remove``: those files and the directory. Output: one JSON line on stdout, e.g.
``{"mode": "write", "files": 1000, "bytes": 1048576000}`` or ``{"error": "...", "stage":
"mount"}`` with exit status 3.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import sys
from typing import Any

EXIT_FAILED = 3
CHUNK_BYTES = 1 << 20
# libnfs before 6.0 (sonames 13 and 14) takes (count, buf) in nfs_read/nfs_write; 6.0 (16)
# turned them round to (buf, count)
SONAMES = (("libnfs.so.16", True), ("libnfs.so.14", False), ("libnfs.so.13", False))


# Not a NasplanError: this script runs alone on the client (stdlib only); it reports as JSON.
class Failed(Exception):
    """A step failed; ``stage`` says which (load, mount, mkdir, write, read, remove)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


class Nfs:
    """One mount of an export through libnfs's synchronous calls."""

    def __init__(self, server: str, export: str, version: int | None) -> None:
        self.lib, self.buf_first = _load()
        self.context = self.lib.nfs_init_context()
        if not self.context:
            raise Failed("mount", "nfs_init_context failed")
        if version and self.lib.nfs_set_version(self.context, version) != 0:
            raise Failed("mount", f"NFS version {version}: {self.error()}")
        if self.lib.nfs_mount(self.context, server.encode(), export.encode()) != 0:
            raise Failed("mount", f"mount {server}:{export}: {self.error()}")

    def error(self) -> str:
        said = self.lib.nfs_get_error(self.context)
        return said.decode(errors="replace") if said else "unknown error"

    def close(self) -> None:
        self.lib.nfs_destroy_context(self.context)

    def mkdir(self, path: str) -> None:
        if self.lib.nfs_mkdir(self.context, path.encode()) != 0 and "EXIST" not in self.error():
            raise Failed("mkdir", f"mkdir {path}: {self.error()}")

    def write(self, path: str, local: str) -> int:
        handle = ctypes.c_void_p()
        flags = os.O_WRONLY | os.O_TRUNC
        if self.lib.nfs_create(self.context, path.encode(), flags, 0o644, ctypes.byref(handle)):
            raise Failed("write", f"create {path}: {self.error()}")
        total = 0
        try:
            with open(local, "rb") as source:
                while chunk := source.read(CHUNK_BYTES):
                    total += self._write_all(handle, chunk, path)
        finally:
            self.lib.nfs_close(self.context, handle)
        return total

    def _write_all(self, handle: ctypes.c_void_p, chunk: bytes, path: str) -> int:
        done = 0
        while done < len(chunk):
            part = chunk[done:]
            args = (part, len(part)) if self.buf_first else (len(part), part)
            wrote = self.lib.nfs_write(self.context, handle, *args)
            if wrote <= 0:
                raise Failed("write", f"write {path}: {self.error()}")
            done += wrote
        return done

    def read(self, path: str) -> int:
        handle = ctypes.c_void_p()
        if self.lib.nfs_open(self.context, path.encode(), os.O_RDONLY, ctypes.byref(handle)):
            raise Failed("read", f"open {path}: {self.error()}")
        buffer = ctypes.create_string_buffer(CHUNK_BYTES)
        total = 0
        try:
            while True:
                args = (buffer, CHUNK_BYTES) if self.buf_first else (CHUNK_BYTES, buffer)
                got = self.lib.nfs_read(self.context, handle, *args)
                if got < 0:
                    raise Failed("read", f"read {path}: {self.error()}")
                if got == 0:
                    return total
                total += got
        finally:
            self.lib.nfs_close(self.context, handle)

    def remove(self, path: str, directory: bool = False) -> None:
        call = self.lib.nfs_rmdir if directory else self.lib.nfs_unlink
        if call(self.context, path.encode()) != 0 and "NOENT" not in self.error():
            raise Failed("remove", f"remove {path}: {self.error()}")


def _load() -> tuple[Any, bool]:
    """libnfs with the prototypes this script calls, and whether read/write take buf first."""
    lib, buf_first = None, False
    for name, order in SONAMES:
        try:
            lib, buf_first = ctypes.CDLL(name), order
            break
        except OSError:
            continue
    if lib is None:
        raise Failed("load", "libnfs is not installed: apt-get install libnfs-utils")
    voidp, charp, size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64
    lib.nfs_init_context.restype = voidp
    lib.nfs_get_error.restype = charp
    lib.nfs_get_error.argtypes = [voidp]
    lib.nfs_destroy_context.argtypes = [voidp]
    lib.nfs_set_version.argtypes = [voidp, ctypes.c_int]
    lib.nfs_mount.argtypes = [voidp, charp, charp]
    lib.nfs_mkdir.argtypes = [voidp, charp]
    lib.nfs_unlink.argtypes = [voidp, charp]
    lib.nfs_rmdir.argtypes = [voidp, charp]
    lib.nfs_create.argtypes = [voidp, charp, ctypes.c_int, ctypes.c_int, ctypes.POINTER(voidp)]
    lib.nfs_open.argtypes = [voidp, charp, ctypes.c_int, ctypes.POINTER(voidp)]
    lib.nfs_close.argtypes = [voidp, voidp]
    data: list[Any] = [voidp, size] if buf_first else [size, voidp]
    lib.nfs_write.argtypes = [voidp, voidp, *data]
    lib.nfs_read.argtypes = [voidp, voidp, *data]
    return lib, buf_first


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--export", required=True)
    parser.add_argument("--dir", required=True, help="the set's directory in the export")
    parser.add_argument("--local", required=True, help="the client's directory of the set")
    parser.add_argument("--mode", choices=("write", "read", "remove"), required=True)
    parser.add_argument("--version", type=int, choices=(3, 4))
    args = parser.parse_args(argv)
    names = sorted(n for n in os.listdir(args.local) if os.path.isfile(f"{args.local}/{n}"))
    nfs = None
    try:
        nfs = Nfs(args.server, args.export, args.version)
        total = 0
        if args.mode == "write":
            nfs.mkdir(args.dir)
        for name in names:
            path = f"{args.dir}/{name}"
            if args.mode == "write":
                total += nfs.write(path, f"{args.local}/{name}")
            elif args.mode == "read":
                total += nfs.read(path)
            else:
                nfs.remove(path)
        if args.mode == "remove":
            nfs.remove(args.dir, directory=True)
    except Failed as exc:
        print(json.dumps({"error": str(exc), "stage": exc.stage}))
        return EXIT_FAILED
    finally:
        if nfs is not None:
            nfs.close()
    print(json.dumps({"mode": args.mode, "files": len(names), "bytes": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
