"""diskspd (Microsoft DiskSpd, Windows): sequential write/read argv and a pure parser of -Rtext.

The Windows counterpart of ``fio``: 1 MiB blocks, one thread, sequential, ``-Sh`` (software
cache and hardware write cache off: the disk, not RAM). diskspd's ``MiB/s`` is 2^20 bytes, its
sizes' K/M/G suffixes binary (``-c1024M`` is 2^30 bytes); its latencies are milliseconds, the
percentiles (``-L``) those of each request's whole time, read, write and both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nasplan.errors import ToolError

MIB = 2**20
BLOCK_BYTES = MIB
_TOTAL = re.compile(
    r"^total:\s+(?P<bytes>\d+)\s*\|\s*(?P<ios>\d+)\s*\|\s*(?P<mib_s>[\d.]+)\s*\|\s*"
    r"(?P<iops>[\d.]+)\s*\|\s*(?P<lat_ms>[\d.]+|N/A)",
    re.MULTILINE,
)
_SECTION = re.compile(r"^(Total|Read|Write) IO$", re.MULTILINE)
_TEST_TIME = re.compile(r"^actual test time:\s+([\d.]+)s", re.MULTILINE)
_CPU_AVG = re.compile(r"avg\.\|\s*([\d.]+)%", re.MULTILINE)
# a row of -L's table: ``  50th |      0.232 |      1.833 |      0.297`` (N/A: no such request)
_PERCENTILE_ROW = re.compile(
    r"^\s*(?P<name>[\w-]+)\s*\|\s*(?P<read>[\d.]+|N/A)\s*\|\s*(?P<write>[\d.]+|N/A)\s*\|"
    r"\s*(?P<total>[\d.]+|N/A)\s*$"
)
# the rows kept, by the names nasplan gives them (fio's: latency_p50_us ...)
PERCENTILES = {"50th": "p50", "99th": "p99", "3-nines": "p999"}


class DiskspdError(ToolError):
    """diskspd printed no result; the message is its own last line."""


@dataclass(frozen=True)
class DiskspdParams:
    """One diskspd run: ``rw`` write|read, a ``size_bytes`` file, ``duration_s`` seconds."""

    rw: str
    size_bytes: int
    duration_s: int = 10

    def __post_init__(self) -> None:
        if self.rw not in ("write", "read"):
            raise ValueError(f"diskspd rw must be write or read, not {self.rw!r}")
        if self.size_bytes < BLOCK_BYTES or self.duration_s < 1:
            raise ValueError("diskspd needs size_bytes >= 1 MiB and duration_s >= 1")


def diskspd_argv(diskspd_path: str, filename: str, params: DiskspdParams) -> list[str]:
    """``[diskspd, -c<size>, -b1M, -d<s>, -o1, -t1, -w100|-w0, -Sh, -L, -Rtext, file]``."""
    size_mib = params.size_bytes // MIB
    return [
        diskspd_path,
        f"-c{size_mib}M",
        f"-b{BLOCK_BYTES // MIB}M",
        f"-d{params.duration_s}",
        "-o1",
        "-t1",
        "-w100" if params.rw == "write" else "-w0",
        "-Sh",
        "-L",
        "-Rtext",
        filename,
    ]


def _section_totals(text: str) -> dict[str, re.Match[str]]:
    totals: dict[str, re.Match[str]] = {}
    sections = list(_SECTION.finditer(text))
    for index, section in enumerate(sections):
        end = sections[index + 1].start() if index + 1 < len(sections) else len(text)
        match = _TOTAL.search(text, section.end(), end)
        if match:
            totals[section.group(1).lower()] = match
    return totals


def _percentiles(text: str) -> dict[str, dict[str, float | None]]:
    """-L's table (``%-ile | Read (ms) | Write (ms) | Total (ms)``) -> ``{"read": {"p50": us,
    ...}, "write": ..., "total": ...}`` in microseconds (None: N/A); empty without a table."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("%-ile")), None)
    if start is None:
        return {}
    found: dict[str, dict[str, float | None]] = {"read": {}, "write": {}, "total": {}}
    for line in lines[start + 2 :]:
        row = _PERCENTILE_ROW.match(line)
        if row is None:
            break
        if row.group("name") in PERCENTILES:
            for side in found:
                ms = row.group(side)
                found[side][PERCENTILES[row.group("name")]] = (
                    None if ms == "N/A" else round(float(ms) * 1000, 3)
                )
    return found


def parse(text: str) -> dict[str, Any]:
    """``-Rtext`` output -> ``{duration_s, cpu_busy_percent, total, read, write}``.

    Each of total/read/write: ``{bytes, ios, bytes_per_second, iops, latency_mean_us,
    latency_p50_us, latency_p99_us, latency_p999_us}``; the rate is bytes over the actual test
    time (diskspd's own MiB/s when the time is missing); latencies in microseconds, None where
    diskspd says N/A or measured none (no ``-L``). Raises DiskspdError when there is no
    ``Total IO`` result.
    """
    totals = _section_totals(text)
    if "total" not in totals:
        last = (text.strip().splitlines() or ["(no output)"])[-1].strip()
        raise DiskspdError(f"diskspd printed no result: {last}")
    time_match = _TEST_TIME.search(text)
    duration_s = float(time_match.group(1)) if time_match else None
    cpu = _CPU_AVG.search(text)
    percentiles = _percentiles(text)

    def one(name: str, match: re.Match[str]) -> dict[str, Any]:
        size = int(match.group("bytes"))
        rate = size / duration_s if duration_s else float(match.group("mib_s")) * MIB
        latency = match.group("lat_ms")
        mean = None if latency == "N/A" or not size else round(float(latency) * 1000, 3)
        found = {
            "bytes": size,
            "ios": int(match.group("ios")),
            "bytes_per_second": rate,
            "iops": float(match.group("iops")),
            "latency_mean_us": mean,
        }
        for key in PERCENTILES.values():
            found[f"latency_{key}_us"] = percentiles.get(name, {}).get(key) if size else None
        return found

    return {
        "duration_s": duration_s,
        "cpu_busy_percent": float(cpu.group(1)) if cpu else None,
        **{name: one(name, match) for name, match in totals.items()},
    }
