"""Per-second series: fio's bandwidth log, the rate-fall analysis, series on a test's clock."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from nasplan.analysis import rate_fall
from nasplan.measure import timeline
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.tools import fio
from nasplan.remote.runner import LocalRunner, Result

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BW_LOGS = FIXTURES / "fio" / "bwlog"
MIB = 2**20


def bw_log(name: str) -> list[tuple[float, float, str]]:
    return fio.parse_bw_log((BW_LOGS / name).read_text())


def test_fio_bw_log_is_kib_per_second_per_second_of_the_job() -> None:
    rows = bw_log("buffered-write-cache-then-disk_bw.1.log")
    assert len(rows) == 14
    assert rows[0] == (1.0, 62464 * 1024, "write")
    assert rows[-1] == (14.004, 21504 * 1024, "write")
    assert {rw for _, _, rw in bw_log("direct-read_bw.1.log")} == {"read"}
    # a job shorter than one averaging period logs nothing
    assert bw_log("short-job-empty_bw.1.log") == []


def test_fio_argv_asks_for_a_one_second_bandwidth_log() -> None:
    params = fio.FioParams(rw="write", size_bytes=64 * MIB)
    argv = fio.fio_argv("/usr/bin/fio", "/vol/f.bin", params, "/vol/f.bin.bw")
    assert argv[-2:] == ["--write_bw_log=/vol/f.bin.bw", "--log_avg_msec=1000"]
    assert fio.bw_log_file("/vol/f.bin.bw") == "/vol/f.bin.bw_bw.1.log"
    assert not any("bw_log" in a for a in fio.fio_argv("/usr/bin/fio", "/vol/f.bin", params))


def test_a_buffered_write_into_a_throttled_disk_falls_after_4_s() -> None:
    # fio at 60 MiB/s into a page cache limited to 200 MiB for a disk throttled to 25 MB/s.
    rows = bw_log("buffered-write-cache-then-disk_bw.1.log")
    fall = rate_fall([t for t, _, _ in rows], [rate for _, rate, _ in rows])
    assert fall is not None
    assert fall["fell_at_s"] == 4.0
    assert fall["before"] / MIB == pytest.approx(60.0, abs=1)
    assert fall["after"] / MIB == pytest.approx(22.0, abs=1)
    assert fall["after"] < 25e6  # the throttle, in bytes/s


@pytest.mark.parametrize("name", ["direct-write-steady_bw.1.log", "direct-read_bw.1.log"])
def test_a_steady_rate_does_not_fall(name: str) -> None:
    rows = bw_log(name)
    assert rate_fall([t for t, _, _ in rows], [rate for _, rate, _ in rows]) is None


def test_iperf3_intervals_do_not_fall() -> None:
    raw = (FIXTURES / "iperf3" / "3.12" / "tcp-retransmits.json").read_text()
    rates = [row["bits_per_second"] for row in iperf3.parse(raw)["intervals"]]
    assert len(rates) >= 2
    assert rate_fall(list(range(1, len(rates) + 1)), rates) is None


@pytest.mark.parametrize(
    ("values", "fell"),
    [
        ([100, 100, 30, 30], 2),  # the least each side needs: two seconds
        ([100, 100, 100], None),
        ([100, 30, 30, 30], None),  # fell within the first second: not after the first seconds
        ([100, 100, 30], None),  # one low second at the end: a tail, not a new rate
        ([10, 100, 100, 100, 100], None),  # a slow start is no fall
        ([100, 100, 70, 70], None),  # 70 %: above the 2/3 a fall needs
        ([100, None, 100, 40, None, 40], 3),  # unknown seconds are skipped
    ],
)
def test_rate_fall_edges(values: Sequence[float | None], fell: float | None) -> None:
    found = rate_fall([float(t) for t in range(1, len(values) + 1)], values)
    assert (found and found["fell_at_s"]) == fell


def test_series_counts_the_fall_from_the_repetition_start() -> None:
    rows = bw_log("buffered-write-cache-then-disk_bw.1.log")
    t_s, rates = timeline.fio_points(rows, 12.5, "write")
    assert t_s[0] == 13.5 and rates[0] == 62464 * 1024 * 8
    made = timeline.series(
        repetition=2, direction="write", source="fio", t_s=t_s, bits_per_second=rates,
        started_s=12.5, detect_fall=True,
    )  # fmt: skip
    assert made is not None and made["fall"] is not None
    assert made["fall"]["after_s"] == 4.0
    assert made["fall"]["before_bits_per_second"] > 2.5 * made["fall"]["after_bits_per_second"]
    assert timeline.fio_points(rows, 0.0, "read") == ([], [])


def test_iperf3_intervals_are_placed_after_the_omitted_seconds() -> None:
    t_s, rates = timeline.iperf3_points([9.4e8, 9.5e8], started_s=3.2, omit_s=1)
    assert t_s == [5.2, 6.2] and rates == [9.4e8, 9.5e8]


class RateLimitedFio(LocalRunner):
    """This machine, with fio held to 12 MiB/s so that a 24 MiB job lasts two logged seconds."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        if argv[0].endswith("fio"):
            argv = [*argv, "--rate=12m"]
        return super().run(argv, timeout_s=timeout_s, stdin=stdin, sudo=sudo)


def test_real_fio_log_is_read_back_and_removed(tmp_path: Path) -> None:
    filename = str(tmp_path / "fio.bin")
    params = fio.FioParams(rw="write", size_bytes=24 * MIB, direct=False)
    raw, parsed = fio.run_job(
        RateLimitedFio(), "fio", filename, params, bw_log_prefix=f"{filename}.bw"
    )
    assert json.loads(raw[raw.index("{") :])["jobs"]
    log = parsed["bw_log"]
    assert [round(t) for t, _, _ in log][:1] == [1] and len(log) >= 1
    assert all(rw == "write" for _, _, rw in log)
    assert all(10 * MIB < rate < 14 * MIB for _, rate, _ in log), log
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fio.bin"]


def test_a_transfer_is_the_client_nic_per_second_inside_its_repetition() -> None:
    from nasplan.measure import sampler

    text = (FIXTURES / "sampler" / "netns-iperf3-1g-then-dd-dash.txt").read_text()
    resources = {"ws": sampler.parse(text), "nas": None}
    record = {
        "params": {"client": "ws", "server": "nas"},
        "path": {"client_interface": "tlcap1"},
        "repetitions": [
            {"index": 1, "status": "ok", "direction": "write", "started_s": 1.0, "ended_s": 4.1},
            {"index": 1, "status": "ok", "direction": "read", "started_s": 4.2, "ended_s": 5.1},
            {"index": 2, "status": "failed", "direction": "read"},
        ],
    }
    write, read = timeline.transfer_series(record, resources)
    assert write["t_s"] == [2.01, 3.02, 4.02]
    assert [round(v / 1e6) for v in write["bits_per_second"]] == [766, 947, 962]
    assert (write["source"], write["host"], write["nic"]) == ("nic", "ws", "tlcap1")
    assert write["fall"] is None
    # the read: what the client received in its one second, the peer's ACKs here
    assert read["t_s"] == [5.03] and read["bits_per_second"][0] < 1e6
    assert timeline.transfer_series(record, {"ws": None}) == []
    assert timeline.transfer_series({**record, "path": None}, resources) == []


def test_the_jobs_one_rate_hides_the_cache_the_series_shows() -> None:
    summary = fio.parse((BW_LOGS / "buffered-write-cache-then-disk.json").read_text())
    assert (summary["rw"], summary["direct"], summary["bytes"]) == ("write", False, 480 * MIB)
    rows = bw_log("buffered-write-cache-then-disk_bw.1.log")
    fall = rate_fall([t for t, _, _ in rows], [rate for _, rate, _ in rows])
    assert fall is not None
    # 480 MiB in 22 s (the final fsync included): close to the disk, far from the first seconds
    assert summary["bytes_per_second"] == pytest.approx(fall["after"], rel=0.05)
    assert fall["before"] > 2.5 * summary["bytes_per_second"]
