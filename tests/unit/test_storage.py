"""Storage-layout parsers on real captures (tests/fixtures/storage/README.md names each source)."""

from __future__ import annotations

from pathlib import Path

from nasplan.compare.envdiff import environment_diff
from nasplan.facts import storage
from nasplan.facts.gather import parse_facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _read(name: str) -> str:
    return (FIXTURES / "storage" / name).read_text()


def test_synology_mdstat_gives_raid6_data_and_raid1_system_arrays() -> None:
    arrays = storage.parse_mdstat(_read("mdstat-synology-8bay.txt"))
    assert [(a["name"], a["level"], len(a["devices"])) for a in arrays] == [
        ("md3", "raid6", 8),
        ("md2", "raid6", 8),
        ("md1", "raid1", 8),
        ("md0", "raid1", 8),
    ]
    md2 = arrays[1]
    assert md2["devices"][:2] == ["sda5", "sdb5"]
    assert md2["size_bytes"] == 17552612736 * 1024  # mdstat blocks are KiB
    assert (md2["raid_disks"], md2["up_disks"], md2["health"]) == (8, 8, "UUUUUUUU")
    assert storage.md_summary(md2) == (
        "md2 raid6 of 8 (sda5 sdb5 sdc5 sdd5 sde5 sdf5 sdg5 sdh5), 16.3 TiB [UUUUUUUU]"
    )


def test_mdstat_collection_raid0_degraded_spares_inactive_and_rebuilds() -> None:
    arrays = {a["name"]: a for a in storage.parse_mdstat(_read("mdstat-procfs-collection.txt"))}
    assert len(arrays) == 18
    assert arrays["md12"]["level"] == "raid0"
    assert arrays["md12"]["devices"] == ["sdc2", "sdd2"]
    assert arrays["md12"]["health"] is None  # raid0 has no [n/m] [UU]
    md6 = arrays["md6"]
    assert (md6["devices"], md6["failed"], md6["spares"]) == (["sda2"], ["sdb2"], ["sdc"])
    assert (md6["health"], md6["sync"]) == ("U_", "recovery 8.5%")
    assert "failed: sdb2" in storage.md_summary(md6)
    assert arrays["md11"]["level"] == "raid1"  # "active (auto-read-only) raid1"
    assert arrays["md219"]["state"] == "inactive" and arrays["md219"]["level"] is None
    assert arrays["md219"]["spares"] == ["sda", "sdb", "sdc"]
    assert arrays["md42"]["sync"] == "reshape 56.1%"
    assert arrays["md120"]["level"] == "linear"


def test_zpool_status_raidz2_mirror_with_cache_and_a_faulted_member() -> None:
    (tank,) = storage.parse_zpool_status(_read("zpool-status-openzfs-1079-raidz2.txt"))
    assert tank["state"] == "ONLINE"
    assert [v["type"] for v in tank["vdevs"]] == ["raidz2"]
    assert len(tank["vdevs"][0]["devices"]) == 4
    assert storage.pool_summary(tank, 12 * 10**12) == "tank: raidz2 (4 disks), 10.9 TiB"

    (pool,) = storage.parse_zpool_status(_read("zpool-status-openzfs-1391-mirror-cache.txt"))
    assert pool["vdevs"] == [
        {
            "type": "mirror",
            "devices": [
                "ata-WDC_WD10EAVS-00D7B1_WD-WCAU48198447-part1",
                "ata-ST1000DM003-9YN162_Z1D1PT33",
            ],
        }
    ]
    assert pool["cache"] == ["VolGroup00-l2arc"]
    assert storage.pool_summary(pool) == "atmaweapon: mirror (2 disks) + cache (1)"

    (zroot,) = storage.parse_zpool_status(_read("zpool-status-freebsd-mirror-faulted.txt"))
    assert zroot["faulted"] == ["ada0p3"]
    assert storage.pool_summary(zroot) == "zroot: mirror (2 disks), not online: ada0p3"


def test_zpool_list_parsable_sizes() -> None:
    # Not a capture (no ZFS pool on the build machine): the layout zpool-list(8) documents for
    # -H (tab-separated, no header) and -p (exact bytes) with -o name,size,health.
    assert storage.parse_zpool_list("tank\t11991548690432\tONLINE\n") == {
        "tank": {"size_bytes": 11991548690432, "health": "ONLINE"}
    }


def test_facts_capture_reads_disks_and_filesystems_without_root() -> None:
    facts = parse_facts((FIXTURES / "facts" / "debian12-netns-storage.txt").read_text())
    assert facts.storage["disks"] == [
        {"name": "vda", "model": None, "vendor": "0x1af4", "size_bytes": 536870912 * 512,
         "rotational": True}
    ]  # fmt: skip
    # The bind mount of the same device (/run/netns) is not listed again.
    assert facts.storage["mounts"] == [{"source": "/dev/vda", "mountpoint": "/", "fstype": "ext4"}]
    assert "md_arrays" not in facts.storage and "zfs_pools" not in facts.storage
    assert storage.filesystem_of("/srv/data", facts.storage["mounts"]) == {
        "source": "/dev/vda", "mountpoint": "/", "fstype": "ext4"
    }  # fmt: skip
    assert type(facts).from_dict(facts.to_dict()).storage == facts.storage


def test_compare_lists_raid_level_and_filesystem_changes() -> None:
    raid1 = {"md_arrays": storage.parse_mdstat(_read("mdstat-synology-8bay.txt"))[3:]}
    raid6 = {
        "md_arrays": storage.parse_mdstat(_read("mdstat-synology-8bay.txt"))[1:2],
        "mounts": [{"source": "/dev/md2", "mountpoint": "/volume1", "fstype": "btrfs"}],
    }

    def run(layout: dict[str, object], memory_bytes: int) -> dict[str, object]:
        facts = {"memory_bytes": memory_bytes, "storage": layout}
        disk_test = {"id": "nas-disk", "kind": "disk", "params": {"host": "nas",
                     "path": "/volume1/scratch"}}  # fmt: skip
        return {"hosts": {"nas": {"facts": facts}}, "tests": [disk_test]}

    changes, _same = environment_diff([run(raid1, 2**30), run(raid6, 4 * 2**30)])
    changed = {c.aspect: c.values for c in changes}
    assert changed["nas: RAID"] == [
        "md0 raid1 of 8 (sda1 sdb1 sdc1 sdd1 sde1 sdf1 sdg1 sdh1), 2.4 GiB [UUUUUUUU]",
        "md2 raid6 of 8 (sda5 sdb5 sdc5 sdd5 sde5 sdf5 sdg5 sdh5), 16.3 TiB [UUUUUUUU]",
    ]
    assert changed["nas: RAM"] == ["1.0 GiB", "4.0 GiB"]
    assert changed["filesystem of nas-disk"] == ["–", "btrfs on /dev/md2 (/volume1)"]
