"""A lab NAS's services shared by tests and hosts: removed NFS files give their space back while
ganesha still holds them open, and one SMB password serves every host of a lab."""

from __future__ import annotations

import os
from pathlib import Path

from nasplan.lab import nfs, nfs_release, services


def test_a_removed_file_still_held_open_is_emptied_and_others_are_left_alone(
    tmp_path: Path,
) -> None:
    export, elsewhere = tmp_path / "export", tmp_path / "elsewhere"
    export.mkdir()
    elsewhere.mkdir()
    held = {}
    for name, where in (("removed", export), ("kept", export), ("outside", elsewhere)):
        path = where / f"{name}.bin"
        path.write_bytes(b"x" * 65536)
        held[name] = os.open(path, os.O_RDONLY)
    (export / "removed.bin").unlink()
    (elsewhere / "outside.bin").unlink()
    try:
        assert nfs_release.release(os.getpid(), [str(export)]) == 1
        sizes = {name: os.fstat(fd).st_size for name, fd in held.items()}
        # only the removed file under the export: the kept one and one outside stay whole
        assert sizes == {"removed": 0, "kept": 65536, "outside": 65536}
        assert nfs_release.release(os.getpid(), [str(export)]) == 0
    finally:
        for fd in held.values():
            os.close(fd)


def test_the_server_s_releaser_watches_its_exports() -> None:
    argv = nfs.release_argv(4242, ["/srv/hdd", "/lab/nfs/export"])
    assert argv[1:] == ["-m", "nasplan.lab.nfs_release", "4242", "/srv/hdd", "/lab/nfs/export"]


def test_a_lab_s_hosts_share_one_smb_password_as_the_inventory_names_one_variable(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "hosts" / "nas1", tmp_path / "hosts" / "nas2"
    second.mkdir(parents=True)
    fresh = services.lab_password(first)
    assert len(fresh) >= 24
    services.smb_files(first).root.mkdir(parents=True)
    services.smb_files(first).password_path.write_text(fresh + "\n")
    assert services.lab_password(second) == fresh
