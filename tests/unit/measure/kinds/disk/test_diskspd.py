"""diskspd: argv and the parser on real -Rtext output (tests/fixtures/diskspd/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.measure.tools.diskspd import DiskspdError, DiskspdParams, diskspd_argv, parse

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "diskspd"


def test_mixed_read_write_result_per_direction() -> None:
    parsed = parse((FIXTURES / "DiskSpdExample-ReadWrite.txt").read_text())
    assert parsed["duration_s"] == 30.01
    assert parsed["cpu_busy_percent"] == 0.82
    assert parsed["total"]["bytes"] == 146169856
    assert parsed["read"]["bytes"] == 102645760
    assert parsed["write"]["ios"] == 10626
    assert parsed["read"]["bytes_per_second"] == pytest.approx(102645760 / 30.01)
    # diskspd's own MiB/s agrees with bytes over time (to its two decimals)
    assert parsed["read"]["bytes_per_second"] / 2**20 == pytest.approx(3.26, abs=0.01)
    assert parsed["write"]["latency_mean_us"] == 2179.0
    # -L's table, in microseconds: each side's own and both together
    assert parsed["read"]["latency_p50_us"] == 232.0
    assert parsed["write"]["latency_p99_us"] == 6107.0
    assert parsed["total"]["latency_p999_us"] == 7432.0
    assert parsed["read"]["iops"] == 834.98 and parsed["write"]["iops"] == 354.05


def test_write_only_run_of_diskspd_2_2_has_no_read_latency() -> None:
    parsed = parse((FIXTURES / "DiskSpdExample-WriteOnly-v2.2.0.txt").read_text())
    assert parsed["duration_s"] == 900.0
    assert parsed["cpu_busy_percent"] == 98.59  # the 2.2 socket/node CPU table
    assert parsed["write"]["bytes"] == 8265251819520
    assert parsed["read"]["bytes"] == 0 and parsed["read"]["latency_mean_us"] is None
    # N/A in the read column: no read to time
    assert parsed["read"]["latency_p50_us"] is None
    assert parsed["write"]["latency_p50_us"] == 146.0
    assert parsed["write"]["latency_p999_us"] == 37418.0
    assert parsed["write"]["bytes_per_second"] / 2**20 == pytest.approx(8758.14, rel=1e-3)


def test_random_4k_eight_threads_of_eight_a_50_50_mix() -> None:
    # diskspd's output as printed in a README: -r -w50 -t8 -o8 -b4K -Sh -L
    parsed = parse((FIXTURES / "diskspd-containers-README-4K-random-Q8T8-mix50.txt").read_text())
    assert parsed["duration_s"] == 120.0
    assert parsed["total"]["iops"] == 48202.48
    assert parsed["read"]["bytes_per_second"] == pytest.approx(11837591552 / 120.0)
    assert parsed["write"]["bytes_per_second"] / 2**20 == pytest.approx(94.21, abs=0.01)
    assert (parsed["read"]["latency_p50_us"], parsed["read"]["latency_p99_us"]) == (1405.0, 4075.0)
    assert parsed["read"]["latency_p999_us"] == 7703.0
    assert parsed["write"]["latency_p50_us"] == 985.0
    assert parsed["total"]["latency_p99_us"] == 3779.0
    assert parsed["read"]["latency_mean_us"] == 1563.0


def test_random_4k_at_queue_depth_32_in_diskspd_2_2_s_words() -> None:
    # a SATA SSD, 4 threads of 32 requests in flight, 60/40: 2.2's "Total latency distribution:"
    # header, no CPU table
    text = (FIXTURES / "disk-test-README-4K-random-Q32T4-mix60-sata.txt").read_text()
    parsed = parse(text)
    assert parsed["duration_s"] == 30.01 and parsed["cpu_busy_percent"] is None
    assert (parsed["read"]["iops"], parsed["write"]["iops"]) == (52405.33, 34903.69)
    assert parsed["total"]["bytes_per_second"] == pytest.approx(10732634112 / 30.01)
    assert parsed["read"]["bytes_per_second"] / 2**20 == pytest.approx(204.71, abs=0.01)
    assert (parsed["read"]["latency_p50_us"], parsed["read"]["latency_p99_us"]) == (1470.0, 1806.0)
    assert parsed["read"]["latency_p999_us"] == 4417.0
    assert parsed["write"]["latency_p999_us"] == 2606.0
    assert parsed["total"]["latency_p50_us"] == 1447.0
    assert parsed["write"]["latency_mean_us"] == 1412.0


def test_no_latency_table_without_dash_l() -> None:
    text = (FIXTURES / "DiskSpdExample-ReadWrite.txt").read_text().split("\ntotal:\n  %-ile")[0]
    parsed = parse(text)
    assert parsed["read"]["bytes"] == 102645760
    assert parsed["read"]["latency_p50_us"] is None and parsed["total"]["latency_p99_us"] is None


def test_no_result_is_diskspd_s_own_last_line() -> None:
    # not diskspd's words: the parser only repeats whatever came last when no table came
    with pytest.raises(DiskspdError, match=r"printed no result: \(last line\)"):
        parse("\nfirst line\n(last line)\n")


def test_argv_is_sequential_one_mib_blocks_without_caches() -> None:
    argv = diskspd_argv(
        "C:\\Tools\\diskspd.exe", "D:\\nasplan\\t.dat", DiskspdParams("read", 2**30, 5)
    )
    assert argv == [
        "C:\\Tools\\diskspd.exe",
        "-c1024M",
        "-b1M",
        "-d5",
        "-o1",
        "-t1",
        "-w0",
        "-Sh",
        "-L",
        "-Rtext",
        "D:\\nasplan\\t.dat",
    ]
    with pytest.raises(ValueError):
        DiskspdParams("both", 2**30)
