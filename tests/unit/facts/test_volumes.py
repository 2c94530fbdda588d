"""What a volume is, from real facts captures: filesystem, layers, RAID level, disks, space."""

from __future__ import annotations

from pathlib import Path

from nasplan.facts.gather import parse_facts
from nasplan.facts.storage import parse_mdstat, parse_mounts, parse_zpool_status
from nasplan.facts.volumes import (
    describe,
    parse_df,
    parse_memory_limit,
)
from nasplan.sections import split_sections

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LAB = FIXTURES / "facts" / "qnap-lab-volumes.txt"


def _layers(text: str) -> dict[str, dict[str, object]]:
    """The ``layer`` sections of a facts output, parsed as the facts parser does."""
    return dict(parse_facts(text).storage.get("layers") or {})


def test_a_lab_nas_volumes_and_its_memory_limit_from_the_real_script() -> None:
    facts = parse_facts(LAB.read_text())
    # the lab file gave the NAS 96 MiB: its cache holds that, not the machine's RAM
    assert facts.memory_limit_bytes == 96 * 2**20
    assert facts.cache_bytes == 96 * 2**20 < (facts.memory_bytes or 0)
    hdd = describe("/share/HDD", facts.storage)
    assert (hdd["filesystem"], hdd["disks"], hdd["raid"]) == ("ext4", ["loop0"], None)
    assert hdd["disk_files"]["loop0"].endswith("/volumes/hdd/disk0/nbd")
    assert hdd["free_bytes"] == 462180 * 1024 and hdd["size_bytes"] == 498900 * 1024
    ssd = describe("/srv/ssd/projects", facts.storage)
    assert (ssd["filesystem"], ssd["raid"], ssd["disks"]) == ("btrfs", "raid1", ["loop1", "loop2"])
    assert ssd["summary"].startswith("btrfs raid1 on loop1, loop2")
    assert "451.8 MiB free of 512.0 MiB" in ssd["summary"]


def test_an_lvm_volume_and_md_arrays_from_captured_sysfs() -> None:
    layers = _layers((FIXTURES / "storage" / "sysfs-layers-procfs.txt").read_text())
    mounts = parse_mounts(
        "/dev/mapper/vg0--lv_root / ext4 rw,relatime 0 0\n/dev/md1 /srv/data xfs rw 0 0\n"
    )
    storage = {"layers": layers, "mounts": mounts}
    root = describe("/home", storage)
    # "--" is a "-" inside one name: this capture's LV is named as one piece
    assert root["layers"] == ["LVM vg0-lv_root"] and root["disks"] == ["sda"]
    # QNAP's and Synology's usual naming: VG vg1, LV lv1 (dm name vg1-lv1), /dev/VG/LV mounted
    layers["dm-0"] = {**layers["dm-0"], "dm_name": "vg1-lv1"}
    qts = describe("/share/CACHEDEV1_DATA", {"layers": layers, "mounts": parse_mounts(
        "/dev/vg1/lv1 /share/CACHEDEV1_DATA ext4 rw 0 0\n")})  # fmt: skip
    assert qts["layers"] == ["LVM vg1/lv1"] and qts["disks"] == ["sda"]
    data = describe("/srv/data/share", storage)
    assert (data["raid"], data["disks"]) == ("raid1", ["sdi", "sdj"])
    assert data["summary"] == "xfs on md1 raid1 of sdi, sdj"


def test_an_md_array_known_only_from_mdstat_a_synology_8_bay() -> None:
    mdstat = parse_mdstat((FIXTURES / "storage" / "mdstat-synology-8bay.txt").read_text())
    mounts = parse_mounts("/dev/md2 /volume1 btrfs rw,relatime 0 0\n")
    found = describe("/volume1/homes", {"md_arrays": mdstat, "mounts": mounts})
    assert found["raid"] == "raid6"
    assert found["disks"] == [f"sd{c}" for c in "abcdefgh"]


def test_a_zfs_dataset_s_pool_layout() -> None:
    text = (FIXTURES / "storage" / "zpool-status-openzfs-1079-raidz2.txt").read_text()
    pools = parse_zpool_status(text)
    name = pools[0]["name"]
    mounts = [{"source": f"{name}/share", "mountpoint": "/mnt/share", "fstype": "zfs"}]
    found = describe("/mnt/share/x", {"zfs_pools": pools, "mounts": mounts})
    assert found["raid"] == "raidz2" and len(found["disks"]) == 4
    assert found["layers"] == [f"ZFS pool {name}"]


def test_df_keeps_a_mountpoint_with_blanks_and_leaves_headers_out() -> None:
    sections = split_sections(LAB.read_text())
    df = parse_df(sections["df"])
    assert df["/share/HDD"]["source"] == "/dev/loop0"
    text = "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
    text += "/dev/sdb1 100 40 60 40% /mnt/my disk\n"
    assert parse_df(text)["/mnt/my disk"]["free_bytes"] == 60 * 1024


def test_an_unlimited_group_is_no_memory_limit() -> None:
    # cgroup v2's "max", and v1's near-2^63 of a group without a limit
    lines = [
        "/sys/fs/cgroup/x/memory.max=max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes=9223372036854771712",
    ]
    assert parse_memory_limit(lines, 8 * 2**30) is None
    assert parse_memory_limit(["/sys/fs/cgroup/a/memory.max=1073741824"], 8 * 2**30) == 2**30


def test_a_truenas_core_dataset_known_only_from_df_and_zpool() -> None:
    # FreeBSD has no /proc/mounts: df's Filesystem column names the dataset
    text = (FIXTURES / "storage" / "zpool-status-freebsd-mirror-faulted.txt").read_text()
    pools = parse_zpool_status(text)
    name = pools[0]["name"]
    df = parse_df(
        "Filesystem 1024-blocks Used Avail Capacity Mounted on\n"
        f"{name}/media 1000 400 600 40% /mnt/{name}/media\n"
    )
    found = describe(f"/mnt/{name}/media/films", {"zfs_pools": pools, "df": df})
    assert (found["filesystem"], found["raid"]) == ("zfs", "mirror")
    assert found["free_bytes"] == 600 * 1024
