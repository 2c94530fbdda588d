"""fio's own JSON from fio 3.1 to 3.34, recorded by others on their disks (a floppy, Ceph, SATA
SSDs, a RAID 5; tests/fixtures/fio/README.md says where each came from): the rate, bytes and
time nasplan reads are fio's, and a failed job is told from O_DIRECT being refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.measure.tools.fio import FioError, parse

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "fio" / "fio-plot"


@pytest.mark.parametrize(
    ("name", "version", "rw", "bytes_per_second", "moved", "duration_s"),
    [
        # fio 3.1 has no bw_bytes (3.2 added it), only bw in whole KiB/s (12 here): the rate
        # is made as 3.2 makes bw_bytes, io_bytes * 1000 / runtime_ms
        ("fio-3.1-seq-read-direct.json", "3.1", "read", 12_917, 1_474_560, 114.153),
        ("fio-3.6-randread.json", "3.6-31-g4386", "read", 4_342_738, 260_612_096, 60.011),
        ("fio-3.6-randwrite.json", "3.6-31-g4386", "write", 369_782, 22_188_032, 60.003),
        ("fio-3.14-randread.json", "3.14-6-g97134", "read", 34_245_812, 2_054_782_976, 60.001),
        ("fio-3.16-randread.json", "3.16", "read", 466_797, 28_012_544, 60.01),
        # stopped with Ctrl-C ("fio: terminating on signal 2" before the JSON): what it did
        ("fio-3.34-interrupted.txt", "3.34", "read", 41_380_254, 114_540_544, 2.768),
    ],
)
def test_each_version_gives_the_rate_bytes_and_time(
    name: str, version: str, rw: str, bytes_per_second: int, moved: int, duration_s: float
) -> None:
    result = parse((FIXTURES / name).read_text())
    assert result["fio_version"] == version
    assert result["rw"] == rw and result["direct"] is True
    assert result["bytes_per_second"] == bytes_per_second
    assert result["bytes"] == moved
    assert result["duration_s"] == pytest.approx(duration_s)
    # the rate fio states is what it moved in the time it took, to within its rounding
    assert result["bytes_per_second"] == pytest.approx(moved / duration_s, rel=1e-3)


def test_a_job_that_failed_in_its_set_up_is_not_o_direct_refused() -> None:
    """fio 3.33, a job without a size: error 22 (EINVAL) with direct=1, but from sizing the file
    (func=total_file_size), not from an O_DIRECT read or write: nasplan must not retry it
    buffered as if the volume refused O_DIRECT."""
    with pytest.raises(FioError) as failed:
        parse((FIXTURES / "fio-3.33-job-error-22.txt").read_text())
    assert "time_based requires a runtime/timeout setting" in str(failed.value)
    assert "func=total_file_size" in str(failed.value)
    assert failed.value.direct_io_unsupported is False
    own = Path(__file__).resolve().parents[3] / "fixtures" / "fio" / "direct-io-error.txt"
    with pytest.raises(FioError) as refused:
        parse(own.read_text())
    assert refused.value.direct_io_unsupported is True  # func=io_u error: the I/O itself
