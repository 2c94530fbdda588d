"""Several clients at once, pure: a repetition's parts combined, Jain's index, the verdict of
the whole; and what limited a copy faster than its volume's disk: the NAS's cache."""

from __future__ import annotations

import pytest

from nasplan.analysis import TransferFigures
from nasplan.measure import together
from nasplan.measure.capacity import DISK, Capacity, best


def test_jain_s_index_is_one_for_equal_shares_and_one_over_n_for_one_taker() -> None:
    assert together.jain([300.0, 300.0, 300.0]) == pytest.approx(1.0)
    assert together.jain([900.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert together.jain([]) is None and together.jain([0.0, 0.0]) is None


def test_copies_of_a_fixed_size_are_judged_over_the_whole_time_they_took() -> None:
    parts = {
        "pc": {"status": "ok", "bytes": 100, "bytes_per_second": 50.0, "started_s": 0.0,
               "ended_s": 2.0},
        "mac": {"status": "ok", "bytes": 100, "bytes_per_second": 25.0, "started_s": 0.1,
                "ended_s": 4.1},
    }  # fmt: skip
    rep = together.combined(3, parts, "bytes_per_second", span=True)
    # 200 bytes from the first start (0.0) to the last end (4.1): not the sum of the rates
    assert rep["bytes_per_second"] == pytest.approx(200 / 4.1)
    assert rep["start_spread_s"] == pytest.approx(0.1)
    assert rep["fairness"] == pytest.approx(75.0**2 / (2 * (50.0**2 + 25.0**2)))
    iperf = together.combined(1, parts, "bytes_per_second", span=False)
    assert iperf["bytes_per_second"] == 75.0  # iperf3's clients end together: their sum


def test_a_client_that_failed_fails_the_repetition_and_leaves_no_aggregate() -> None:
    parts = {
        "pc": {"status": "ok", "bits_per_second": 9e8},
        "mac": {"status": "failed", "error": "connection refused"},
    }
    rep = together.combined(1, parts, "bits_per_second", span=False)
    assert (rep["status"], rep["bits_per_second"]) == ("failed", None)
    assert rep["error"] == "mac: connection refused"


def test_the_nas_link_limits_three_clients_that_fill_it() -> None:
    found = together.verdict(
        what="SMB write",
        aggregate_bits_per_second=2.3e9,
        nas_link_bits_per_second=2.37e9,
        nas_link_name="eth1",
        clients={"pc": (0.8e9, 0.94e9), "mac": (0.75e9, 0.94e9), "laptop": (0.75e9, 0.94e9)},
    )
    assert found["verdict"] == "nas-link"
    assert found["text"].startswith("SMB write of 3 clients together 2.30 Gbit/s = 97 %")


def test_each_client_s_own_link_when_the_nas_has_room_left() -> None:
    found = together.verdict(
        what="iperf3 forward",
        aggregate_bits_per_second=1.88e9,
        nas_link_bits_per_second=9.4e9,
        nas_link_name="eth2",
        clients={"pc": (0.94e9, 0.95e9), "mac": (0.94e9, 0.95e9)},
    )
    assert found["verdict"] == "client-links"


def test_the_volume_s_disks_and_then_the_cpu() -> None:
    disk = together.verdict(
        what="SMB write",
        aggregate_bits_per_second=8 * 170 * 2**20,
        nas_link_bits_per_second=9.4e9,
        nas_link_name="eth2",
        clients={"pc": (0.7e9, 9.4e9), "mac": (0.7e9, 9.4e9)},
        disk_bytes_per_second=180 * 2**20,
        disk_name="volume hdd's disks",
    )
    assert disk["verdict"] == "nas-disk" and "of volume hdd's disks" in disk["text"]
    cpu = together.verdict(
        what="SMB write",
        aggregate_bits_per_second=2e9,
        nas_link_bits_per_second=9.4e9,
        nas_link_name="eth2",
        clients={"pc": (1e9, 9.4e9), "mac": (1e9, 9.4e9)},
        nas_cpu_percent=97.0,
    )
    assert cpu["verdict"] == "nas-cpu"


def test_a_read_faster_than_its_volume_s_disk_is_served_from_the_nas_s_cache() -> None:
    found = TransferFigures(
        label="SMB read",
        direction="read",
        transfer_bytes_per_second=280 * 2**20,
        network_bits_per_second=2.37e9,
        disk_bytes_per_second=180 * 2**20,
        disk_name="volume hdd's",
    ).attribute_bottleneck()
    assert found["verdict"] == "cache-served"
    assert "of volume hdd's sequential read (180 MiB/s)" in found["text"]
    assert found["text"].endswith("served from the NAS's cache)")
    write = TransferFigures(
        label="SMB write",
        direction="write",
        transfer_bytes_per_second=280 * 2**20,
        network_bits_per_second=2.37e9,
        disk_bytes_per_second=180 * 2**20,
    ).attribute_bottleneck()
    assert "took the file into its RAM" in write["text"]


def test_a_disk_capacity_belongs_to_its_volume() -> None:
    found = [
        Capacity(DISK, "nas", "write", 180.0, volume="hdd"),
        Capacity(DISK, "nas", "write", 900.0, volume="ssd"),
        Capacity(DISK, "nas", "write", 500.0),
    ]
    assert best(found, DISK, "nas", "write", volume="hdd") == 180.0
    assert best(found, DISK, "nas", "write", volume="ssd") == 900.0
    assert best(found, DISK, "nas", "write") == 500.0  # a test on no named volume
    assert best(found, DISK, "nas", "write", volume="nvme") is None
