"""Copies of many files: the tools' real output parsed (smbclient mput/mget/deltree, rsync of a
directory, libnfs through nfs_files.py), the set's making, each platform's cache drop."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nasplan.facts.gather import HostFacts
from nasplan.measure.tools import transfer, transfer_sets
from nasplan.platforms import Command
from nasplan.platforms.debian import Debian
from nasplan.platforms.freebsd import TrueNasCore
from nasplan.platforms.macos import MacOs
from nasplan.platforms.truenas import TrueNas

TRANSFER = Path(__file__).resolve().parents[3] / "fixtures" / "transfer"
SET_BYTES = 3 * 2**20 + 64 * 2**10  # what the captures moved: 3 files of 1 MiB, one of 64 KiB


def fixture(name: str) -> str:
    return (TRANSFER / name).read_text()


def test_smbclient_mput_and_mget_count_each_file() -> None:
    put = transfer_sets.parse_smbclient_set(fixture("smbclient-4.17-mput.txt"))
    got = transfer_sets.parse_smbclient_set(fixture("smbclient-4.17-mget.txt"))
    assert (put["files"], put["bytes"]) == (4, None)  # mput does not say sizes
    assert (got["files"], got["bytes"]) == (4, SET_BYTES)


def test_an_mget_of_a_set_that_is_not_there_names_smbclient_s_status() -> None:
    with pytest.raises(transfer.TransferParseError, match="NT_STATUS_NO_SUCH_FILE"):
        transfer_sets.parse_smbclient_set(fixture("smbclient-4.17-mget-missing.txt"))


def test_rsync_of_a_directory_counts_its_regular_files() -> None:
    for name in ("rsync-3.5-push-dir.txt", "rsync-3.5-pull-dir.txt"):
        text = fixture(name)
        assert transfer_sets.parse_rsync_files(text) == 4
        assert transfer.parse_rsync(text)["bytes"] == SET_BYTES


def test_nfs_files_py_reports_files_and_bytes_or_its_failure() -> None:
    for mode in ("write", "read"):
        found = transfer_sets.parse_nfs_files(fixture(f"nfs-files-libnfs-4.0-{mode}.txt"))
        assert (found["files"], found["bytes"]) == (4, SET_BYTES)
    with pytest.raises(transfer.TransferParseError, match=r"nfs \(mount\).*MNT3ERR_ACCES"):
        transfer_sets.parse_nfs_files(fixture("nfs-files-libnfs-4.0-denied.txt"))
    argv = transfer_sets.nfs_files_argv(
        "/tmp/d", "198.18.0.10", "/hdd", "s.set", "/tmp/d/s.set", "read", 3
    )
    assert argv[:2] == ["python3", "/tmp/d/nfs_files.py"] and argv[-2:] == ["--version", "3"]


def test_a_thousand_files_are_made_by_one_head_and_one_split() -> None:
    lines = transfer_sets.make_set_lines("nasplan-x.set", [(1000, 1024), (3, 2**20)])
    assert lines == [
        'mkdir "$dir"/nasplan-x.set',
        'head -c 1024000 /dev/urandom | split -b 1024 -a 3 - "$dir"/nasplan-x.set/g0-',
        'head -c 3145728 /dev/urandom | split -b 1048576 -a 2 - "$dir"/nasplan-x.set/g1-',
    ]


def test_each_platform_drops_its_cache_its_own_way_or_says_why_not() -> None:
    facts = HostFacts()
    linux = Debian().drop_cache(facts, "/share/HDD/f.bin")
    assert isinstance(linux, Command) and linux.sudo
    assert linux.script.startswith("set -- /share/HDD/f.bin\n")
    assert "iflag=nocache" in linux.script and "drop_caches" in linux.script
    mac = MacOs().drop_cache(facts, None)
    assert isinstance(mac, Command) and "purge" in mac.script
    for platform in (TrueNas(), TrueNasCore()):
        said = platform.drop_cache(facts, "/mnt/tank/f.bin")
        assert isinstance(said, str) and "cold read was not measured" in said


def test_the_linux_drop_evicts_the_file_s_pages_with_the_real_dd(tmp_path: Path) -> None:

    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "a").write_bytes(b"x" * 4096)
    drop = Debian().drop_cache(HostFacts(), str(tmp_path / "set"))
    assert isinstance(drop, Command)
    done = subprocess.run(["sh", "-c", drop.script], capture_output=True, text=True, check=False)
    # GNU dd's iflag=nocache: no root needed, nothing but this file's pages dropped
    assert done.stdout == f"nasplan: dropped the page cache of {tmp_path / 'set'}\n"
