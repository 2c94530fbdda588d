"""What a host's volumes are, from the facts round trip: filesystem, free space, the layers
under it (LVM, md RAID, Btrfs RAID, ZFS vdevs, a loop device's file) and the disks at the
bottom; and the memory a login may use when a cgroup limits it.

Pure parsers of ``df -P -k``, the ``layer`` sections the facts script prints from
``/sys/block/{dm-*,md*,loop*}`` (``dm/name``, ``dm/uuid``, ``md/level``, ``loop/backing_file``,
``slaves/``), the ``btrfs`` sections from ``/sys/fs/btrfs/UUID`` and the ``memory-limit`` lines
(``memory.max``, ``memory.limit_in_bytes``); and ``describe``, which walks one volume's path
down to its disks with the rest of the storage facts (``nasplan.facts.storage``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nasplan.facts.storage import filesystem_of, size_text

KIB_BYTES = 1024
# a partition's name -> its disk's: sda3 -> sda, nvme0n1p2 -> nvme0n1, mmcblk0p1 -> mmcblk0
_PARTITION = re.compile(
    r"^(?P<disk>(?:nvme\d+n\d+|mmcblk\d+))p\d+$|^(?P<plain>(?:sd|hd|vd|xvd)[a-z]+)\d+$"
)


def parse_df(text: str) -> dict[str, dict[str, Any]]:
    """``df -P -k`` -> mountpoint -> ``{"source", "size_bytes", "free_bytes"}`` (a mountpoint
    with blanks keeps them: it is everything after the fifth column)."""
    found: dict[str, dict[str, Any]] = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 6 or not fields[1].isdigit() or not fields[3].isdigit():
            continue
        mountpoint = line.split(None, 5)[5].strip()
        found[mountpoint] = {
            "source": fields[0],
            "size_bytes": int(fields[1]) * KIB_BYTES,
            "free_bytes": int(fields[3]) * KIB_BYTES,
        }
    return found


def parse_layers(blocks: Iterable[Mapping[str, str]]) -> dict[str, dict[str, Any]]:
    """``layer`` sections -> block device -> ``{"dm_name", "dm_uuid", "md_level",
    "backing_file", "slaves"}`` (absent values None, slaves a list)."""
    return {
        values["name"]: {
            "dm_name": values.get("dm_name") or None,
            "dm_uuid": values.get("dm_uuid") or None,
            "md_level": values.get("md_level") or None,
            "backing_file": values.get("loop_backing_file") or None,
            "slaves": values.get("slaves", "").split(),
        }
        for values in blocks
        if values.get("name")
    }


def parse_btrfs(blocks: Iterable[Mapping[str, str]]) -> list[dict[str, Any]]:
    """``btrfs`` sections -> ``[{"uuid", "label", "devices": [...], "profile"}]`` (the data
    profile: ``raid1``, ``single``, ...; several when a balance is under way)."""
    return [
        {
            "uuid": values.get("uuid", ""),
            "label": values.get("label") or None,
            "devices": values.get("devices", "").split(),
            "profile": " ".join(values.get("data", "").split()) or None,
        }
        for values in blocks
    ]


def parse_memory_limit(lines: Sequence[str], memory_bytes: int | None) -> int | None:
    """The lowest cgroup memory limit among the ``memory-limit`` lines below the host's RAM
    (``max`` and the near-2^63 of an unlimited v1 group are none); None without one."""
    limits = []
    for line in lines:
        value = line.rpartition("=")[2].strip()
        if value.isdigit():
            limits.append(int(value))
    below = [v for v in limits if memory_bytes is None or v < memory_bytes]
    return min(below) if below else None


def _device(source: str, layers: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The block device (``dm-0``, ``md2``, ``sda3``) a mount's source names: ``/dev/md2``,
    ``/dev/mapper/vg1-lv1`` and ``/dev/vg1/lv1`` (by their device-mapper name)."""
    if not source.startswith("/dev/"):
        return None
    name = source.rsplit("/", 1)[-1]
    wanted = {name}
    parts = source.split("/")
    if len(parts) == 4 and parts[2] != "mapper":  # /dev/VG/LV
        wanted.add(f"{parts[2].replace('-', '--')}-{parts[3].replace('-', '--')}")
    for device, layer in layers.items():
        if layer.get("dm_name") in wanted:
            return device
    return name


def _disk_of(device: str) -> str:
    """The disk a partition is on (``sda3`` -> ``sda``); a whole disk as it is."""
    match = _PARTITION.match(device)
    if match is None:
        return device
    return match.group("disk") or match.group("plain")


def _layer_text(device: str, layer: Mapping[str, Any]) -> str | None:
    """``LVM vg1/lv1``, ``md2 raid1``, ``dm-3 (crypt)``; None for a disk (a loop device too)."""
    uuid, name = layer.get("dm_uuid") or "", layer.get("dm_name")
    if uuid.startswith("LVM-") and name:
        # device-mapper joins VG and LV with "-" and doubles a "-" inside either name
        vg, _, lv = name.replace("--", "\0").partition("-")
        vg, lv = vg.replace("\0", "-"), lv.replace("\0", "-")
        return f"LVM {vg}/{lv}" if lv else f"LVM {vg}"
    if name:
        return f"{device} ({name})"
    if layer.get("md_level"):
        return f"{device} {layer['md_level']}"
    return None


def _walk(
    device: str, layers: Mapping[str, Mapping[str, Any]], said: list[str], raid: list[str]
) -> list[str]:
    """The disks under ``device``, the layers on the way into ``said`` and RAID levels into
    ``raid``, top first (``layers``: sysfs's, with mdstat's arrays where sysfs said nothing)."""
    layer = layers.get(device)
    if layer is None or layer.get("backing_file"):  # a loop device is its volume's disk
        return [_disk_of(device)]
    text = _layer_text(device, layer)
    if text and text not in said:
        said.append(text)
    if layer.get("md_level") and layer["md_level"] not in raid:
        raid.append(str(layer["md_level"]))
    below = layer.get("slaves") or []
    if not below:
        return [device]
    return [disk for slave in below for disk in _walk(slave, layers, said, raid)]


def describe(path: str, storage: Mapping[str, Any]) -> dict[str, Any]:
    """What the volume at ``path`` is, from a host's storage facts: ``{"mountpoint",
    "filesystem", "source", "layers", "raid", "disks", "rotational", "size_bytes",
    "free_bytes", "summary"}`` (unknown parts None or empty)."""
    mount = filesystem_of(path, storage.get("mounts") or [])
    df = storage.get("df") or {}
    space = df.get(mount["mountpoint"]) if mount else _df_of(path, df)
    if mount is None and space and _zfs_pool(str(space["source"]).split("/")[0], storage):
        # FreeBSD (TrueNAS CORE) has no /proc/mounts: df names the dataset, zpool its pool
        mount = {"mountpoint": space["mountpoint"], "source": space["source"], "fstype": "zfs"}
    found: dict[str, Any] = {
        "mountpoint": mount["mountpoint"] if mount else (space or {}).get("mountpoint"),
        "filesystem": mount["fstype"] if mount else None,
        "source": mount["source"] if mount else (space or {}).get("source"),
        "layers": [],
        "raid": None,
        "disks": [],
        "rotational": None,
        "size_bytes": (space or {}).get("size_bytes"),
        "free_bytes": (space or {}).get("free_bytes"),
    }
    if mount is not None:
        _layout(found, mount, storage)
    found["summary"] = summary(found)
    return found


def _df_of(path: str, df: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The df line of the filesystem holding ``path`` (a host whose mounts were not read)."""
    mounts = [{"mountpoint": m, "source": v["source"], "fstype": ""} for m, v in df.items()]
    best = filesystem_of(path, mounts)
    return {**df[best["mountpoint"]], "mountpoint": best["mountpoint"]} if best else None


def _layout(found: dict[str, Any], mount: Mapping[str, str], storage: Mapping[str, Any]) -> None:
    """The layers, RAID level and disks under ``mount`` into ``found``."""
    layers = {**_md_layers(storage), **(storage.get("layers") or {})}
    said: list[str] = []
    raid: list[str] = []
    if mount["fstype"] == "zfs":
        pool = _zfs_pool(mount["source"].split("/")[0], storage)
        said.append(f"ZFS pool {mount['source'].split('/')[0]}")
        raid += [v["type"] for v in (pool or {}).get("vdevs") or [] if v["type"] != "disk"]
        disks = [_disk_of(d) for v in (pool or {}).get("vdevs") or [] for d in v["devices"]]
    else:
        device = _device(mount["source"], layers)
        disks = _walk(device, layers, said, raid) if device else []
        btrfs = _btrfs_of(device, storage) if mount["fstype"] == "btrfs" else None
        if btrfs is not None:
            members = [m for m in btrfs["devices"] if m != device]
            disks += [d for m in members for d in _walk(m, layers, said, raid)]
            if btrfs.get("profile"):
                raid.append(str(btrfs["profile"]))
    md = {a["name"]: a for a in storage.get("md_arrays") or []}
    for text in said:
        name = text.split()[0]
        if name in md and md[name].get("level") and md[name]["level"] not in raid:
            raid.append(md[name]["level"])
    found["layers"] = said
    found["raid"] = " + ".join(raid) or None
    found["disks"] = sorted(dict.fromkeys(disks))
    files = {
        d: layers[d]["backing_file"]
        for d in found["disks"]
        if (layers.get(d) or {}).get("backing_file")
    }
    if files:
        found["disk_files"] = files
    kinds = {d["name"]: d.get("rotational") for d in storage.get("disks") or []}
    spinning = {kinds.get(d) for d in found["disks"] if d in kinds}
    found["rotational"] = spinning.pop() if len(spinning) == 1 else None


def _md_layers(storage: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """mdstat's arrays as layers (a host whose sysfs layers were not read, or older facts)."""
    return {
        str(array["name"]): {
            "md_level": array.get("level"),
            "slaves": list(array.get("devices") or []),
            "dm_name": None,
            "dm_uuid": None,
            "backing_file": None,
        }
        for array in storage.get("md_arrays") or []
    }


def _zfs_pool(name: str, storage: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((p for p in storage.get("zfs_pools") or [] if p.get("name") == name), None)


def _btrfs_of(device: str | None, storage: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((b for b in storage.get("btrfs") or [] if device in b.get("devices", [])), None)


def summary(found: Mapping[str, Any]) -> str:
    """``btrfs on LVM vg1/lv1 on md2 raid1 (sda, sdb: HDD), 1.2 TiB free of 3.6 TiB``."""
    parts = [str(found.get("filesystem") or "a filesystem")]
    if found.get("layers"):
        parts.append("on " + " on ".join(found["layers"]))
    disks = found.get("disks") or []
    kind = {True: " (HDD)", False: " (SSD)", None: ""}[found.get("rotational")]
    if found.get("disk_files"):
        kind = " (loop devices on files)"
    if disks:
        parts.append(f"{'of' if found.get('layers') else 'on'} {', '.join(disks)}{kind}")
    if found.get("raid") and found["raid"] not in " ".join(found.get("layers") or []):
        parts[0] += f" {found['raid']}"
    text = " ".join(parts)
    if found.get("size_bytes") is not None:
        text += f", {size_text(found.get('free_bytes'))} free of {size_text(found['size_bytes'])}"
    return text


def describe_all(paths: Mapping[str, str], storage: Mapping[str, Any]) -> dict[str, str]:
    """Volume name -> ``PATH: SUMMARY`` for each of a host's volumes (``--check``'s lines)."""
    return {name: f"{path}: {describe(path, storage)['summary']}" for name, path in paths.items()}


def aspects(host: Mapping[str, Any]) -> dict[str, str]:
    """run.json ``hosts.<name>``'s volumes and memory limit as lines for the report's storage and
    compare's environment diff: ``volume hdd`` -> ``/share/HDD: ext4 on md1 raid1 of sda, sdb,
    1.2 TiB free of 3.6 TiB``, ``memory limit`` -> ``96 MiB (of 23.5 GiB RAM)``."""
    found: dict[str, str] = {}
    limit = (host.get("facts") or {}).get("memory_limit_bytes")
    ram = (host.get("facts") or {}).get("memory_bytes")
    if isinstance(limit, int):
        of = f" (of {size_text(ram)} RAM)" if ram else ""
        found["memory limit"] = f"{size_text(limit)}{of}"
    for name, volume in sorted((host.get("volumes") or {}).items()):
        said = (volume.get("found") or {}).get("summary") or "not found on the host"
        words = f" ({volume['description']})" if volume.get("description") else ""
        found[f"volume {name}"] = f"{volume.get('path')}: {said}{words}"
    return found
