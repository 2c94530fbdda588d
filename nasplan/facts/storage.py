"""A host's storage layout from the facts round trip: md RAID, ZFS pools, disks, filesystems.

Pure parsers of ``/proc/mdstat``, ``zpool list -H -p`` / ``zpool status``, the ``disk`` lines
the facts script prints from ``/sys/block`` (readable without root) and ``/proc/mounts``; and
the one-line summaries a compare lists in its environment diff.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SECTOR_BYTES = 512  # /sys/block/*/size counts 512-byte sectors whatever the disk's own sector
_MD_HEAD = re.compile(r"^(md\w+)\s*:\s*(active|inactive)\b(.*)$")
_MD_MEMBER = re.compile(r"^([\w.-]+)\[(\d+)\]((?:\([A-Za-z]\))*)$")
_MD_BLOCKS = re.compile(r"^\s*(\d+) blocks\b")
_MD_STATUS = re.compile(r"\[(\d+)/(\d+)\]\s+\[([U_]+)\]")
_MD_PROGRESS = re.compile(r"\b(recovery|resync|check|reshape)\s*=\s*([\d.]+)%")
_VDEV_GROUP = re.compile(r"^(mirror|raidz[123]?|draid[123]?\S*|replacing|spare)-\d+$")
_ZPOOL_SECTIONS = ("logs", "cache", "spares", "special", "dedup")
_REAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs"})


def parse_mdstat(text: str) -> list[dict[str, Any]]:
    """md arrays: ``[{"name": "md2", "state": "active", "level": "raid6", "devices": [...],
    "failed": [...], "spares": [...], "size_bytes": ..., "raid_disks": 8, "up_disks": 8,
    "health": "UUUUUUUU", "sync": "recovery 8.5%" | None}]`` (mdstat blocks are KiB)."""
    arrays: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        head = _MD_HEAD.match(line.strip())
        if head:
            current = _md_array(head.group(1), head.group(2), head.group(3).split())
            arrays.append(current)
            continue
        if current is None:
            continue
        blocks = _MD_BLOCKS.match(line)
        if blocks and current["size_bytes"] is None:
            current["size_bytes"] = int(blocks.group(1)) * 1024
        status = _MD_STATUS.search(line)
        if status:
            current.update(
                raid_disks=int(status.group(1)),
                up_disks=int(status.group(2)),
                health=status.group(3),
            )
        progress = _MD_PROGRESS.search(line)
        if progress:
            current["sync"] = f"{progress.group(1)} {progress.group(2)}%"
    return arrays


def _md_array(name: str, state: str, words: list[str]) -> dict[str, Any]:
    words = [w for w in words if not (w.startswith("(") and w.endswith(")"))]
    level = words.pop(0) if words and _MD_MEMBER.match(words[0]) is None else None
    devices: list[str] = []
    failed: list[str] = []
    spares: list[str] = []
    for word in words:
        member = _MD_MEMBER.match(word)
        if member is None:
            continue
        flags = member.group(3)
        target = failed if "(F)" in flags else spares if "(S)" in flags else devices
        target.append(member.group(1))
    return {
        "name": name,
        "state": state,
        "level": level,
        "devices": sorted(devices),
        "failed": sorted(failed),
        "spares": sorted(spares),
        "size_bytes": None,
        "raid_disks": None,
        "up_disks": None,
        "health": None,
        "sync": None,
    }


def parse_zpool_list(text: str) -> dict[str, dict[str, Any]]:
    """``zpool list -H -p -o name,size,health`` -> ``{"tank": {"size_bytes", "health"}}``."""
    pools: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and fields[1].isdigit():
            pools[fields[0]] = {"size_bytes": int(fields[1]), "health": fields[2].strip()}
    return pools


def parse_zpool_status(text: str) -> list[dict[str, Any]]:
    """Pools and their vdevs: ``[{"name": "tank", "state": "ONLINE", "vdevs": [{"type":
    "raidz2", "devices": [...]}], "logs": [...], "cache": [...], "spares": [...],
    "faulted": [...]}]``; a disk straight under the pool is a ``disk`` vdev (a stripe)."""
    pools: list[dict[str, Any]] = []
    pool: dict[str, Any] | None = None
    in_config = False
    rows: list[tuple[int, str, str]] = []
    for line in [*text.splitlines(), "  pool: "]:  # the last pool ends at a sentinel
        stripped = line.strip()
        if stripped.startswith("pool:"):
            if pool is not None:
                _fill_vdevs(pool, rows)
                pools.append(pool)
            pool, in_config, rows = {"name": stripped[5:].strip(), "state": None}, False, []
            continue
        if pool is None:
            continue
        if stripped.startswith("state:") and not in_config:
            pool["state"] = stripped[6:].strip()
        elif stripped.startswith("NAME") and "STATE" in stripped:
            in_config = True
        elif stripped.startswith("errors:"):
            in_config = False
        elif in_config and stripped:
            parts = stripped.split()
            indent = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())
            rows.append((indent, parts[0], parts[1] if len(parts) > 1 else ""))
    return pools


def _fill_vdevs(pool: dict[str, Any], rows: Sequence[tuple[int, str, str]]) -> None:
    pool.update(vdevs=[], logs=[], cache=[], spares=[], faulted=[])
    if not rows:
        return
    top = rows[0][0]
    section = "vdevs"
    group: dict[str, Any] | None = None
    group_indent = top
    for indent, name, state in rows[1:]:
        if state in ("FAULTED", "UNAVAIL", "REMOVED", "OFFLINE", "DEGRADED") and not (
            _VDEV_GROUP.match(name)
        ):
            pool["faulted"].append(name)
        if indent == top:
            section = name if name in _ZPOOL_SECTIONS else "vdevs"
            group = None
            continue
        if section != "vdevs":
            members: list[str] = pool.setdefault(section, [])
            members.append(name)
            continue
        match = _VDEV_GROUP.match(name)
        if match:
            group = {"type": match.group(1), "devices": []}
            pool["vdevs"].append(group)
            group_indent = indent
        elif group is not None and indent > group_indent:
            group["devices"].append(name)
        else:
            group = None
            pool["vdevs"].append({"type": "disk", "devices": [name]})


def parse_disks(blocks: Iterable[Mapping[str, str]]) -> list[dict[str, Any]]:
    """``disk`` sections (name, model, vendor, size, rotational from /sys/block) -> disks."""
    disks = []
    for values in blocks:
        sectors = values.get("size", "")
        rotational = values.get("rotational", "")
        disks.append(
            {
                "name": values.get("name", ""),
                "model": " ".join(values.get("model", "").split()) or None,
                "vendor": " ".join(values.get("vendor", "").split()) or None,
                "size_bytes": int(sectors) * SECTOR_BYTES if sectors.isdigit() else None,
                "rotational": {"1": True, "0": False}.get(rotational),
            }
        )
    return sorted(disks, key=lambda d: str(d["name"]))


def parse_mounts(text: str) -> list[dict[str, str]]:
    """``/proc/mounts`` -> ``[{"source", "mountpoint", "fstype"}]``: disk filesystems, first
    mount of each source."""
    mounts: list[dict[str, str]] = []
    seen: set[str] = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        source, mountpoint, fstype = fields[0], _unescape(fields[1]), fields[2]
        # Bind mounts repeat their source; each ZFS dataset is a source of its own.
        if source in seen:
            continue
        if fstype in _REAL_FS or source.startswith("/dev/"):
            seen.add(source)
            mounts.append({"source": source, "mountpoint": mountpoint, "fstype": fstype})
    return mounts


def _unescape(path: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def filesystem_of(path: str, mounts: Sequence[Mapping[str, str]]) -> Mapping[str, str] | None:
    """The mount holding ``path`` (longest mountpoint prefix), or None."""
    best: Mapping[str, str] | None = None
    for mount in mounts:
        point = mount["mountpoint"].rstrip("/") or "/"
        inside = path == point or path.startswith(point.rstrip("/") + "/") or point == "/"
        if inside and (best is None or len(point) > len(best["mountpoint"])):
            best = mount
    return best


def size_text(size_bytes: Any) -> str:
    """``1.2 TiB``, ``96.0 MiB``; ``?`` for an unknown size."""
    if not isinstance(size_bytes, int):
        return "?"
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB")):
        if size_bytes >= 1024**power:
            return f"{size_bytes / 1024**power:.1f} {unit}"
    return f"{size_bytes} bytes"


def md_summary(array: Mapping[str, Any]) -> str:
    """``md2 raid6 of 8 (sda5 .. sdh5), 16.3 TiB [UUUUUUUU]``; degraded and syncing named."""
    devices = list(array.get("devices") or [])
    level = array.get("level") or array.get("state")
    text = f"{array['name']} {level} of {len(devices)} ({' '.join(devices)}), "
    text += size_text(array.get("size_bytes"))
    if array.get("health"):
        text += f" [{array['health']}]"
    if array.get("failed"):
        text += f" failed: {' '.join(array['failed'])}"
    if array.get("sync"):
        text += f" ({array['sync']})"
    return text


def pool_summary(pool: Mapping[str, Any], size_bytes: int | None = None) -> str:
    """``tank: raidz2 (4 disks)``, ``zroot: mirror (2 disks), 1.8 TiB, FAULTED ada0p3``."""
    vdevs = pool.get("vdevs") or []
    stripes = [v for v in vdevs if v["type"] == "disk"]
    parts = [f"{v['type']} ({len(v['devices'])} disks)" for v in vdevs if v["type"] != "disk"]
    if stripes:
        parts.append(f"stripe ({len(stripes)} disks)")
    text = f"{pool['name']}: {' + '.join(parts) or 'no vdevs'}"
    for section in ("logs", "cache", "spares"):
        if pool.get(section):
            text += f" + {section} ({len(pool[section])})"
    if size_bytes is not None:
        text += f", {size_text(size_bytes)}"
    if pool.get("state") and pool["state"] != "ONLINE":
        text += f", {pool['state']}"
    if pool.get("faulted"):
        text += f", not online: {' '.join(pool['faulted'])}"
    return text


def aspects(storage: Mapping[str, Any]) -> dict[str, str]:
    """Environment-diff lines ``RAID``, ``ZFS``, ``disks``, ``filesystems`` (absent: left out)."""
    found: dict[str, str] = {}
    arrays = storage.get("md_arrays") or []
    if arrays:
        found["RAID"] = "; ".join(md_summary(a) for a in arrays)
    pools = storage.get("zfs_pools") or []
    if pools:
        sizes = storage.get("zfs_sizes") or {}
        found["ZFS"] = "; ".join(
            pool_summary(p, (sizes.get(p["name"]) or {}).get("size_bytes")) for p in pools
        )
    disks = storage.get("disks") or []
    if disks:
        found["disks"] = "; ".join(
            f"{d['name']} {d.get('model') or 'unknown model'} {size_text(d.get('size_bytes'))}"
            + {True: " HDD", False: " SSD", None: ""}[d.get("rotational")]
            for d in disks
        )
    mounts = storage.get("mounts") or []
    if mounts:
        found["filesystems"] = "; ".join(
            f"{m['mountpoint']} {m['fstype']} on {m['source']}" for m in mounts
        )
    return found
