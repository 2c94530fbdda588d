"""fio jobs of a disk profile: CrystalDiskMark's and KDiskMark's grid (SEQ1M Q8T1, SEQ1M Q1T1,
RND4K Q32T1, RND4K Q1T1; read, write, mix) or a job of the plan's own; their argv and a pure
parser of fio's JSON: MB/s, IOPS and completion-latency percentiles, read and write apart.

Sizes are fio's: ``--size`` and ``--bs`` are given in bytes, so no ``4G`` is left to read (fio
reads that as 4 GiB, nasplan's sizes as 4x10^9 bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan.measure.tools.fio import FioError, check_filename
from nasplan.measure.tools.jsondoc import find_object, number

KIB = 1024
MIB = 1024 * KIB
# a mix's share of reads when the plan gives none: KDiskMark's and CrystalDiskMark's 70/30
MIX_READ_PERCENT = 70
MODES = ("read", "write", "mix")
# the percentiles kept of fio's completion latency, as fio names them
PERCENTILES = {"50.000000": "p50", "99.000000": "p99", "99.900000": "p999"}
_TIMEOUT_MARGIN_S = 120


@dataclass(frozen=True)
class Job:
    """One job of a profile: its block size, queue depth (``--iodepth``), threads
    (``--numjobs``) and pattern; named as the benchmarks name it (``RND4K Q32T1``)."""

    block_bytes: int
    queue_depth: int = 1
    threads: int = 1
    random: bool = False

    @property
    def name(self) -> str:
        size = (
            f"{self.block_bytes // MIB}M"
            if self.block_bytes % MIB == 0
            else (
                f"{self.block_bytes // KIB}K"
                if self.block_bytes % KIB == 0
                else f"{self.block_bytes}B"
            )
        )
        return f"{'RND' if self.random else 'SEQ'}{size} Q{self.queue_depth}T{self.threads}"


# CrystalDiskMark 8's default and KDiskMark's (the same four rows)
GRID = (
    Job(MIB, 8, 1),
    Job(MIB, 1, 1),
    Job(4 * KIB, 32, 1, random=True),
    Job(4 * KIB, 1, 1, random=True),
)
PROFILES: dict[str, tuple[Job, ...]] = {"crystaldiskmark": GRID, "kdiskmark": GRID}


def fio_rw(job: Job, mode: str) -> str:
    """fio's ``--rw`` of ``job`` in ``mode``: read, write, randread, randwrite, rw, randrw."""
    if mode not in MODES:
        raise ValueError(f"a profile's mode is read, write or mix, not {mode!r}")
    plain = {"read": "read", "write": "write", "mix": "rw"}[mode]
    return f"rand{plain}" if job.random else plain


def job_argv(
    fio_path: str,
    filename: str,
    job: Job,
    mode: str,
    *,
    size_bytes: int,
    duration_s: int,
    read_percent: int = MIX_READ_PERCENT,
    direct: bool = True,
    total_latency: bool = False,
) -> list[str]:
    """One fio run of ``job`` in ``mode`` on ``filename`` for ``duration_s`` seconds (time
    based: the file of ``size_bytes`` is laid out first, untimed), JSON out. ``total_latency``:
    percentiles of each request's whole latency too (submission and completion: a file system
    that finishes a request while fio submits it, FUSE's, leaves completion latency near 0)."""
    argv = [
        fio_path,
        f"--name=nasplan-{job.name.replace(' ', '-').lower()}-{mode}",
        f"--filename={check_filename(filename)}",
        f"--rw={fio_rw(job, mode)}",
        f"--bs={job.block_bytes}",
        f"--iodepth={job.queue_depth}",
        f"--numjobs={job.threads}",
        f"--size={size_bytes}",
        f"--runtime={duration_s}",
        "--time_based",
        "--ioengine=libaio",
        f"--direct={1 if direct else 0}",
        "--group_reporting",
        "--randrepeat=0",
        "--output-format=json",
    ]
    if mode == "mix":
        argv.append(f"--rwmixread={read_percent}")
    if total_latency:
        argv.append("--lat_percentiles=1")
    return argv


def timeout_s(size_bytes: int, duration_s: int) -> float:
    """How long one run may take: its time, laying its file out at 1 MB/s at worst, margin."""
    return duration_s + size_bytes / 1_000_000 + _TIMEOUT_MARGIN_S


def _side(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One side (read or write) of fio's job: None when it moved nothing. Its latency is the
    whole request's where fio gave its percentiles (``--lat_percentiles``), else completion's."""
    if not isinstance(section, Mapping) or not section.get("io_bytes"):
        return None
    total: Mapping[str, Any] = section.get("lat_ns") or {}
    clat: Mapping[str, Any] = total if total.get("percentile") else section.get("clat_ns") or {}
    percentiles: Mapping[str, Any] = clat.get("percentile") or {}
    found = {
        "bytes_per_second": number(section, "bw_bytes"),
        "iops": number(section, "iops"),
        "latency_mean_us": _us(number(clat, "mean")),
    }
    for key, name in PERCENTILES.items():
        found[f"latency_{name}_us"] = _us(number(percentiles, key))
    return found


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1000, 3)


def repetition(
    job: Job, mode: str, raw: str, sides: Mapping[str, Any] | None, error: str | None = None,
    tool: str = "fio",
) -> dict[str, Any]:  # fmt: skip
    """One run of ``job`` in ``mode`` as the record keeps it, from its tool's ``sides``
    (``{"read": side, "write": side}`` as ``parse`` gives them, fio's or diskspd's): MB/s and
    IOPS of both sides, the latency of the mode's own (a mix's: its reads', as fio's), a mix's
    sides apart; failed with ``error`` (or when the mode's side moved nothing)."""
    rep: dict[str, Any] = {"status": "failed", "error": error, "profile_job": job.name}
    rep.update(direction=mode, raw=raw)
    if sides is None:
        return rep
    read, write = sides["read"] or {}, sides["write"] or {}
    main = write if mode == "write" else read
    if not main:
        rep["error"] = f"{tool} moved nothing in {mode}"
        return rep
    total = (read.get("bytes_per_second") or 0) + (write.get("bytes_per_second") or 0)
    rep.update(
        status="ok",
        bytes_per_second=total,
        iops=(read.get("iops") or 0) + (write.get("iops") or 0),
        **{k: main.get(k) for k in ("latency_mean_us", "latency_p50_us", "latency_p99_us",
                                     "latency_p999_us")},
    )  # fmt: skip
    if mode == "mix":
        rep.update(
            read_bytes_per_second=read.get("bytes_per_second"),
            write_bytes_per_second=write.get("bytes_per_second"),
        )
    return rep


def parse(raw: str) -> dict[str, Any]:
    """fio's JSON (text before it skipped) -> ``{"read": side, "write": side}``, each side
    ``{bytes_per_second, iops, latency_mean_us, latency_p50_us, latency_p99_us,
    latency_p999_us}`` or None when the run moved nothing that way. FioError with fio's own
    error when the job failed, or when there is no JSON."""
    doc = find_object(raw, lambda obj: isinstance(obj.get("jobs"), list))
    if doc is None or not doc["jobs"]:
        said = " ".join(raw.split())[:200] or "(no output)"
        raise FioError(f"fio printed no JSON result: {said}", raw or None)
    job = doc["jobs"][0]
    if job.get("error"):
        raise FioError(f"fio job failed with error {job['error']}", raw)
    return {"read": _side(job.get("read")), "write": _side(job.get("write"))}
