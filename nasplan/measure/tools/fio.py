"""fio: sequential read/write argv on a path of the volume, a defensive parser of its JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nasplan.errors import NasplanError
from nasplan.measure.tools.jsondoc import find_object, number
from nasplan.remote.runner import Runner
from nasplan.units import MIB_BYTES

DEFAULT_BLOCK_BYTES = MIB_BYTES
# Slowest disk a repetition may take before it is killed: 1 MB/s (10^6 bytes/s), plus set-up.
_SLOWEST_BYTES_PER_SECOND = 1_000_000
_TIMEOUT_MARGIN_S = 60
_BW_LOG_TIMEOUT_S = 30.0
# fio's own words when O_DIRECT is refused (tmpfs before Linux 6.6, some FUSE and NAS volumes)
_DIRECT_IO_MARKERS = ("direct io errored", "does not support direct", "o_direct")
_EINVAL = 22
# fio's bandwidth log: one averaged line per second ("msec, KiB/s, direction, bs, offset[, prio]").
BW_LOG_AVG_MS = 1000
BW_LOG_KIB_BYTES = 1024
_BW_LOG_DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
_BW_LOG_LINE = re.compile(r"^\s*(\d+),\s*(\d+),\s*(\d+),", re.MULTILINE)
_FIO_SAFE_CHAR = re.compile(r"[A-Za-z0-9_.,+@=%/ -]")
_FIO_SAFE = re.compile(r"^/[A-Za-z0-9_.,+@=%/ -]*$")


class FioError(NasplanError):
    """fio failed; ``direct_io_unsupported`` when the file system refused O_DIRECT."""

    def __init__(
        self, message: str, raw: str | None = None, *, direct_io_unsupported: bool = False
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.direct_io_unsupported = direct_io_unsupported


@dataclass(frozen=True, kw_only=True)
class FioParams:
    """One sequential fio job: ``rw`` is ``write`` or ``read``; 1 MiB blocks, O_DIRECT."""

    rw: str
    size_bytes: int
    block_bytes: int = DEFAULT_BLOCK_BYTES
    direct: bool = True

    def __post_init__(self) -> None:
        if self.rw not in ("write", "read"):
            raise ValueError(f"fio rw must be write or read, not {self.rw!r}")
        if self.size_bytes < self.block_bytes or self.block_bytes < 512:
            raise ValueError("fio needs size >= block size >= 512 bytes")

    @property
    def timeout_s(self) -> float:
        # a read lays the file out first (an untimed write), so allow twice the size
        return _TIMEOUT_MARGIN_S + 2 * self.size_bytes / _SLOWEST_BYTES_PER_SECOND


def check_filename(filename: str) -> str:
    """``filename`` if fio reads it as one absolute file name, else ValueError saying why.

    fio splits ``filename=`` at ``:`` (several files), cuts it at ``;`` and expands ``$jobname``
    and friends, so a path holding them would make fio write somewhere else; only plain path
    characters pass.
    """
    if not _FIO_SAFE.match(filename):
        bad = sorted({c for c in filename if not _FIO_SAFE_CHAR.match(c)})
        shown = " ".join(repr(c) for c in bad) or "a relative path"
        raise ValueError(f"fio would not read {filename!r} as one file name ({shown})")
    return filename


def fio_argv(
    fio_path: str, filename: str, params: FioParams, bw_log_prefix: str | None = None
) -> list[str]:
    """``[fio, --name=nasplan-seq-write, --filename=F, --rw=write, --bs=1048576, ...]``.

    Writes end with an fsync (``end_fsync=1``) so the time includes getting data to disk.
    ``bw_log_prefix``: fio also writes its per-second bandwidth to ``bw_log_file(prefix)``.
    ValueError when fio would not read ``filename`` as one file (``check_filename``).
    """
    check_filename(filename)
    argv = [
        fio_path,
        f"--name=nasplan-seq-{params.rw}",
        f"--filename={filename}",
        f"--rw={params.rw}",
        f"--bs={params.block_bytes}",
        f"--size={params.size_bytes}",
        f"--direct={1 if params.direct else 0}",
        "--ioengine=psync",
        "--numjobs=1",
        "--output-format=json",
    ]
    if params.rw == "write":
        argv.append("--end_fsync=1")
    if bw_log_prefix is not None:
        argv += [f"--write_bw_log={bw_log_prefix}", f"--log_avg_msec={BW_LOG_AVG_MS}"]
    return argv


def bw_log_file(prefix: str) -> str:
    """The file fio 3 writes ``--write_bw_log=PREFIX`` of its one job to: ``PREFIX_bw.1.log``."""
    return f"{prefix}_bw.1.log"


def parse_bw_log(text: str) -> list[tuple[float, float, str]]:
    """fio's bandwidth log -> ``[(seconds since the job started, bytes/s, "write"), ...]``.

    With ``--log_avg_msec`` each line averages the period before its time; the rate column is
    in KiB/s (2^10 bytes/s). A job shorter than one period logs nothing.
    """
    return [
        (int(ms) / 1000, int(kib) * BW_LOG_KIB_BYTES, _BW_LOG_DIRECTIONS.get(int(rw), rw))
        for ms, kib, rw in _BW_LOG_LINE.findall(text)
    ]


def _find_document(raw: str) -> dict[str, Any] | None:
    """fio's result object, skipping text it printed before it (notes, ``fio: ...`` errors)."""
    return find_object(raw, lambda obj: isinstance(obj.get("jobs"), list), at_line_start=True)


def _text_lines(raw: str) -> list[str]:
    """The non-JSON lines fio printed (before or after its JSON)."""
    return [line.strip() for line in raw.splitlines() if line.startswith(("fio:", "note:", "fio "))]


def parse(raw: str) -> dict[str, Any]:
    """fio ``--output-format=json`` output -> ``{"rw", "bytes_per_second", "bytes", "duration_s",
    "iops", "direct", "fio_version", "notes"}``.

    Raises FioError with fio's own message when there is no result or the job failed;
    ``direct_io_unsupported`` is set when the failure is O_DIRECT being refused.
    """
    lines = _text_lines(raw)
    doc = _find_document(raw)
    direct_refused = any(m in line.lower() for line in lines for m in _DIRECT_IO_MARKERS)
    if doc is None or not doc["jobs"]:
        text = "; ".join(lines) or " ".join(raw.split())[:200] or "(empty)"
        raise FioError(
            f"no fio JSON result: {text}", raw or None, direct_io_unsupported=direct_refused
        )
    job = doc["jobs"][0]
    options = job.get("job options") or {}
    direct = str(options.get("direct", "0")) == "1"
    rw = str(options.get("rw", "read"))
    error = job.get("error") or 0
    if error:
        errors = [line for line in lines if line.startswith("fio:")]
        message = "; ".join(errors) or f"fio job failed with error {error}"
        # EINVAL is O_DIRECT refused only when the I/O itself failed, not the job's set-up
        # (fio names where: "func=io_u error" against e.g. "func=total_file_size")
        in_setup = any("func=" in line and "func=io_u" not in line for line in errors)
        refused = direct_refused or (direct and error == _EINVAL and not in_setup)
        raise FioError(message, raw, direct_io_unsupported=refused)
    side = job.get("write" if rw.endswith("write") else "read") or {}
    runtime_ms = number(side, "runtime")
    io_bytes = side.get("io_bytes")
    return {
        "rw": "write" if rw.endswith("write") else "read",
        "bytes_per_second": _bytes_per_second(side),
        "bytes": int(io_bytes) if isinstance(io_bytes, int) else None,
        "duration_s": runtime_ms / 1000 if runtime_ms is not None else None,
        "iops": number(side, "iops"),
        "direct": direct,
        "fio_version": str(doc.get("fio version") or "").removeprefix("fio-") or None,
        "notes": [line for line in lines if not line.startswith("fio:")],
    }


def _bytes_per_second(side: dict[str, Any]) -> float | None:
    """The job's rate in bytes/s: ``bw_bytes`` (fio 3.2+); fio 3.0 and 3.1 give only ``bw`` in
    whole KiB/s, so the rate is made as 3.2 makes ``bw_bytes``: io_bytes * 1000 / runtime_ms."""
    found = number(side, "bw_bytes")
    if found is not None:
        return found
    io_bytes, runtime_ms = number(side, "io_bytes"), number(side, "runtime")
    if io_bytes is not None and runtime_ms:
        return float(int(io_bytes * 1000 // runtime_ms))
    kib = number(side, "bw")
    return kib * 1024 if kib is not None else None


def run_job(
    runner: Runner,
    fio_path: str,
    filename: str,
    params: FioParams,
    bw_log_prefix: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run one fio job on ``runner``: ``(raw output, parse() result)``; raises FioError.

    With ``bw_log_prefix`` the result has ``bw_log``: parse_bw_log() of the job's log ([] when
    fio wrote none), read back and removed after the job.
    """
    argv = fio_argv(fio_path, filename, params, bw_log_prefix)
    result = runner.run(argv, timeout_s=params.timeout_s)
    raw = result.stdout + (f"\n{result.stderr}" if result.stderr.strip() else "")
    parsed = parse(raw)
    if bw_log_prefix is not None:
        log = bw_log_file(bw_log_prefix)
        script = 'cat -- "$1" 2>/dev/null; rm -f -- "$1"'
        read = runner.run(["sh", "-c", script, "sh", log], timeout_s=_BW_LOG_TIMEOUT_S)
        parsed["bw_log"] = parse_bw_log(read.stdout)
    return raw, parsed
