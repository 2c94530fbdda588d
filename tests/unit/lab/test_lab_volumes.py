"""A lab NAS's volumes and memory limit, from the lab file to what `lab up` would run and write
(the lab tests bring them up for real)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nasplan.errors import InputError, LabError
from nasplan.input.inventory import load_inventory
from nasplan.lab import cgroups, hostfs, iscsi, volumes
from nasplan.lab.model import LabVolume, WriteCache, load_lab
from nasplan.lab.preview import preview_inventory
from nasplan.measure import capacity

LAB = """\
name: vol
lan: {prefix: 198.18.165.0/24, rate: 1G}
hosts:
  nas:
    personality: qnap
    services: [smb, nfs]
    memory: 256MiB
    volumes:
      hdd: {rate: 180MiB/s, size: 512MiB, path: /share/HDD}
      ssd: {rate: 0.9GiB/s, filesystem: btrfs, disks: 2, raid: raid1}
  pc: {}
"""


def lab_file(tmp_path: Path, text: str = LAB) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


def test_volumes_and_memory_from_the_lab_file(tmp_path: Path) -> None:
    nas = load_lab(lab_file(tmp_path)).host("nas")
    assert nas.memory_bytes == 256 * 2**20
    hdd, ssd = nas.volumes
    assert (hdd.path, hdd.bytes_per_second, hdd.size_bytes) == ("/share/HDD", 180 * 2**20, 2**29)
    assert (ssd.path, ssd.disks, ssd.filesystem) == ("/srv/ssd", 2, "btrfs")
    assert ssd.bytes_per_second == int(0.9 * 2**30) and ssd.size_bytes == 2**30


def test_several_disks_need_btrfs_to_make_the_raid(tmp_path: Path) -> None:
    path = lab_file(tmp_path, LAB.replace("filesystem: btrfs, ", ""))
    with pytest.raises(InputError) as info:
        load_lab(path)
    (message,) = info.value.messages
    assert message.startswith(f"{path}:10:")
    assert message.endswith("hosts.nas.volumes.ssd.disks: 2 disks need filesystem btrfs "
                            "(it makes the RAID), not ext4")  # fmt: skip


def test_each_disk_is_nbdkit_s_rate_filter_and_the_raid_is_btrfs_s(tmp_path: Path) -> None:
    ssd = load_lab(lab_file(tmp_path)).host("nas").volumes[1]
    argv = volumes.disk_argv(tmp_path / "disk0", ssd)
    # nbdfuse serves the disk as a file; nbdkit's rate filter takes bits per second
    assert argv[:4] == ["nbdfuse", str(tmp_path / "disk0"), "--command", "nbdkit"]
    assert "--filter=rate" in argv and f"rate={ssd.bytes_per_second * 8}" in argv
    assert argv[argv.index("memory") + 1] == str(2**30)
    mkfs = volumes.mkfs_argv(ssd, ["/dev/loop7", "/dev/loop8"])
    assert mkfs[0] == "mkfs.btrfs" and mkfs[-2:] == ["/dev/loop7", "/dev/loop8"]
    assert mkfs[mkfs.index("-d") + 1] == "raid1" and mkfs[mkfs.index("-m") + 1] == "raid1"


def test_the_inventory_lists_each_volume_with_its_share_and_export(tmp_path: Path) -> None:
    data = preview_inventory(lab_file(tmp_path), tmp_path / ".lab" / "vol")
    hdd = data["hosts"]["nas"]["volumes"]["hdd"]
    assert hdd == {
        "path": "/share/HDD",
        "description": "lab volume: ext4 on 1 disk of 180 MiB/s each",
        "rate": "180MiB/s",
        "share": "hdd",
        "export": "/hdd",
    }
    assert "volumes" not in data["hosts"]["pc"]
    # what lab up writes is a valid inventory: the plan's volume: ssd finds it, with its rate
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(data))
    inventory = load_inventory(tmp_path / "inventory.yaml")
    assert inventory.hosts["nas"].volumes["ssd"].share == "ssd"
    assert inventory.hosts["nas"].volumes["hdd"].bytes_per_second == 180 * 2**20


@pytest.mark.parametrize(
    ("disks", "raid", "rate"), [(1, "raid1", 180), (2, "raid1", 180), (2, "raid0", 360),
                                (4, "raid10", 360), (3, "raid0", 540)],
)  # fmt: skip
def test_a_volume_s_stated_rate_follows_its_raid(disks: int, raid: str, rate: int) -> None:
    volume = LabVolume("hdd", "/share/HDD", 180 * 2**20, 2**30, "btrfs", disks, raid)
    assert volumes.stated_rate(volume) == rate * 2**20
    assert volumes.inventory_entry(volume, ())["rate"] == f"{rate}MiB/s"


def test_the_memory_controller_of_either_cgroup_layout(tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    assert cgroups.layout(v2) == cgroups.Layout(v2, "memory.max")
    v1 = tmp_path / "v1"
    (v1 / "memory").mkdir(parents=True)
    (v1 / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroups.layout(v1) == cgroups.Layout(v1 / "memory", "memory.limit_in_bytes")
    with pytest.raises(LabError, match="no cgroup memory controller"):
        cgroups.layout(tmp_path / "none")


def test_a_limited_host_sees_its_cgroup_as_a_system_does() -> None:
    # ip netns exec mounts a /sys of its own: the host mounts the hierarchy again in its namespace
    assert hostfs.cgroup_commands(Path("/sys/fs/cgroup")) == [
        ["mount", "-t", "cgroup2", "nasplan-cgroup", "/sys/fs/cgroup"]
    ]
    v1 = hostfs.cgroup_commands(Path("/sys/fs/cgroup/memory"))
    assert v1[-1] == ["mount", "-t", "cgroup", "-o", "memory", "nasplan-cgroup-memory",
                      "/sys/fs/cgroup/memory"]  # fmt: skip
    # a daemon joins the group before it execs: the PID is still the daemon's own
    assert cgroups.join_argv(Path("/sys/fs/cgroup/g"))[:3] == ["sh", "-c", cgroups.JOIN_SCRIPT]


SHAPED = """\
name: vol
lan: {prefix: 198.18.165.0/24, rate: 1G}
hosts:
  nas:
    services: [smb]
    volumes:
      ssd:
        read: 550MiB/s
        write: 200MiB/s
        write_cache: {size: 4GiB, rate: 1500MiB/s}
      mirror: {rate: 180MiB/s, write: 90MiB/s, filesystem: btrfs, disks: 2}
"""


def test_a_volume_reads_and_writes_at_rates_of_their_own_behind_a_write_cache(
    tmp_path: Path,
) -> None:
    ssd, mirror = load_lab(lab_file(tmp_path, SHAPED)).host("nas").volumes
    assert (ssd.read_rate, ssd.write_rate) == (550 * 2**20, 200 * 2**20)
    assert ssd.write_cache == WriteCache(4 * 2**30, 1500 * 2**20)
    assert (mirror.read_rate, mirror.write_rate, mirror.write_cache) == (
        180 * 2**20, 90 * 2**20, None)  # fmt: skip
    # such a disk is the shaped disk's, each rate and the cache on its command line
    argv = volumes.disk_argv(tmp_path / "disk0", ssd)
    assert argv[argv.index("--command") + 2 : argv.index("--command") + 4] == [
        "-m", "nasplan.lab.shaped_disk"]  # fmt: skip
    assert f"--write-rate={200 * 2**20}" in argv and f"--cache-bytes={4 * 2**30}" in argv
    # a plain volume stays nbdkit's
    plain = load_lab(lab_file(tmp_path)).host("nas").volumes[0]
    assert "nbdkit" in volumes.disk_argv(tmp_path / "disk0", plain)


def test_the_inventory_states_each_way_s_rate_of_a_volume_whose_reads_and_writes_differ(
    tmp_path: Path,
) -> None:
    data = preview_inventory(lab_file(tmp_path, SHAPED), tmp_path / ".lab" / "vol")
    ssd = data["hosts"]["nas"]["volumes"]["ssd"]
    assert ssd["description"] == (
        "lab volume: ext4 on 1 disk of reads 550 MiB/s, writes 200 MiB/s, "
        "the first 4 GiB written at 1500 MiB/s each"
    )
    assert (ssd["rate"], ssd["read_rate"], ssd["write_rate"]) == (
        "200MiB/s", "550MiB/s", "200MiB/s")  # fmt: skip
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(data))
    loaded = load_inventory(tmp_path / "inventory.yaml").hosts["nas"].volumes
    assert (loaded["ssd"].rate("read"), loaded["ssd"].rate("write")) == (550 * 2**20, 200 * 2**20)
    # a RAID 1's writes: one disk's write rate
    assert loaded["mirror"].rate("write") == 90 * 2**20
    # a copy is judged against the rate of its own direction
    host = load_inventory(tmp_path / "inventory.yaml").hosts["nas"]
    stated = {(c.volume, c.direction): c.value for c in capacity.stated_volumes([host])}
    assert stated[("ssd", "read")] == 550 * 2**20 and stated[("ssd", "write")] == 200 * 2**20


def test_a_volume_without_a_rate_each_way_is_one_line_naming_it(tmp_path: Path) -> None:
    path = lab_file(tmp_path, SHAPED.replace("        read: 550MiB/s\n", ""))
    with pytest.raises(InputError) as info:
        load_lab(path)
    (message,) = info.value.messages
    assert message.startswith(f"{path}:") and "hosts.nas.volumes.ssd: no read rate" in message


def test_an_iscsi_lun_on_a_volume_is_a_file_at_its_root_and_names_one_of_the_host_s(
    tmp_path: Path,
) -> None:
    text = LAB.replace("services: [smb, nfs]", "services: [smb, iscsi]\n    iscsi: {volume: hdd}")
    data = preview_inventory(lab_file(tmp_path, text), tmp_path / ".lab" / "vol")
    assert data["hosts"]["nas"]["vars"]["iscsi"]["volume"] == "hdd"
    files = iscsi.iscsi_files(tmp_path)
    settings = iscsi.target_settings("nas", {"volume": "hdd"})
    assert iscsi.lun_path(files, settings, {"hdd": "/share/HDD"}) == (
        f"/share/HDD/{iscsi.VOLUME_LUN_NAME}")  # fmt: skip
    assert iscsi.lun_path(files, iscsi.target_settings("nas", {}), {}) == str(files.lun_path)
    path = lab_file(tmp_path, text.replace("{volume: hdd}", "{volume: nvme}"))
    with pytest.raises(InputError) as info:
        load_lab(path)
    (message,) = info.value.messages
    assert message.endswith("hosts.nas.iscsi.volume: 'nvme' is not a volume of nas "
                            "(its volumes: hdd, ssd)")  # fmt: skip
