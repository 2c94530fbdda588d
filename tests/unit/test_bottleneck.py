"""Bottleneck attribution and cache warnings on synthetic inputs: every verdict."""

from __future__ import annotations

from typing import Any

import pytest

from nasplan.analysis import TransferFigures, cache_influence
from nasplan.measure.verdicts import annotated

MIB = 2**20
GIB = 2**30


def verdict(**overrides: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "label": "SMB write",
        "direction": "write",
        "transfer_bytes_per_second": 131 * MIB,
        "network_bits_per_second": 9.4e9,
        "path_speed_bits_per_second": 10e9,
        "disk_bytes_per_second": 134 * MIB,
        "cpu_busy_percent": {"nas": 30.0, "pc": 10.0},
    }
    return TransferFigures(**{**inputs, **overrides}).attribute_bottleneck()


def test_disk_bound_like_the_issue_example() -> None:
    result = verdict()
    assert result["verdict"] == "disk-bound"
    assert result["text"].startswith(
        "SMB write 131 MiB/s = 12 % of the 10G path (iperf3 9.4 Gbit/s) and 98 % of the NAS's "
        "local sequential write (134 MiB/s)"
    )
    assert result["evidence"]["disk_ratio"] == pytest.approx(131 / 134)


def test_network_bound_on_a_1g_path() -> None:
    result = verdict(
        transfer_bytes_per_second=112 * MIB,
        network_bits_per_second=941e6,
        path_speed_bits_per_second=1e9,
        disk_bytes_per_second=400 * MIB,
    )
    assert result["verdict"] == "network-bound"
    assert "100 % of the 1G path" in result["text"]


def test_the_tighter_limit_wins_when_both_are_reached() -> None:
    result = verdict(
        transfer_bytes_per_second=110 * MIB,
        network_bits_per_second=941e6,
        disk_bytes_per_second=115 * MIB,
    )
    assert result["verdict"] == "network-bound"  # 98 % of the network, 96 % of the disk


def test_cpu_bound_when_a_host_is_saturated_below_other_limits() -> None:
    result = verdict(disk_bytes_per_second=1000 * MIB, cpu_busy_percent={"nas": 97.0})
    assert result["verdict"] == "cpu-bound"
    assert "CPU nas 97 % busy" in result["text"]


def test_protocol_bound_when_well_under_every_limit() -> None:
    result = verdict(disk_bytes_per_second=1000 * MIB)
    assert result["verdict"] == "protocol-bound"


def test_unknown_without_network_or_disk_numbers() -> None:
    result = verdict(network_bits_per_second=None, disk_bytes_per_second=None)
    assert result["verdict"] == "unknown"


def test_a_theoretical_network_figure_is_named_as_such() -> None:
    result = verdict(
        network_source="theoretical",
        disk_bytes_per_second=None,
        transfer_bytes_per_second=1100 * MIB,
    )
    assert result["verdict"] == "network-bound"
    assert "TCP maximum" in result["text"]


def test_small_file_is_cache_influenced_with_a_suggested_size() -> None:
    warning = cache_influence(1 * GIB, 4 * GIB)
    assert warning is not None
    assert warning["reasons"] == ["small_file"]
    assert warning["suggested_bytes"] == 8 * GIB


def test_buffered_disk_test_is_cache_influenced_whatever_its_size() -> None:
    warning = cache_influence(64 * GIB, 4 * GIB, direct_io=False)
    assert warning is not None and warning["reasons"] == ["buffered_io"]


def test_large_file_with_direct_io_is_not_cache_influenced() -> None:
    assert cache_influence(8 * GIB, 4 * GIB, direct_io=True) is None
    assert cache_influence(8 * GIB, None) is None


def _summary(median: float) -> dict[str, Any]:
    return {"metric": "x", "median": median}


def test_annotate_transfers_uses_the_plans_own_network_and_disk_results() -> None:
    tests: list[dict[str, Any]] = [
        {
            "kind": "transfer",
            "params": {
                "server": "nas",
                "client": "pc",
                "address": "198.18.5.10",
                "method": "smb",
                "size_bytes": GIB,
            },
            "path": {"theoretical_bits_per_second": 9.9e9, "speed_bits_per_second": 10e9},
            "directions": {"write": _summary(131 * MIB), "read": _summary(300 * MIB)},
            "resources": {"nas": {"cpu_busy_percent_median": 20.0}},
        },
        {
            "kind": "iperf3",
            "params": {"server": "nas", "client": "pc", "address": "198.18.5.10", "reverse": False},
            "summary": _summary(9.4e9),
        },
        {
            "kind": "iperf3",
            "params": {"server": "nas", "client": "pc", "address": "198.18.5.99", "reverse": False},
            "summary": _summary(0.9e9),
        },
        {
            "kind": "disk",
            "params": {"host": "nas"},
            "directions": {"write": _summary(134 * MIB), "read": _summary(2000 * MIB)},
        },
    ]
    record = annotated(tests, {"nas": 4 * GIB})[0]
    assert record["bottleneck"]["write"]["verdict"] == "disk-bound"
    assert record["bottleneck"]["write"]["evidence"]["network_bits_per_second"] == 9.4e9
    # no reverse iperf3 test: the read is compared with the path's TCP maximum
    assert record["bottleneck"]["read"]["evidence"]["network_source"] == "theoretical"
    assert record["bottleneck"]["read"]["verdict"] == "protocol-bound"
    assert record["cache_warning"]["suggested_bytes"] == 8 * GIB


def test_one_saturated_core_is_cpu_bound_though_the_machine_looks_idle() -> None:
    # a 4-core NAS whose SMB daemon holds one core: the average alone read "protocol-bound"
    result = verdict(
        transfer_bytes_per_second=300 * MIB,
        disk_bytes_per_second=1000 * MIB,
        cpu_busy_percent={"nas": 27.0, "pc": 10.0},
        cpu_cores={"nas": (100.0, 4), "pc": (35.0, 8)},
    )
    assert result["verdict"] == "cpu-bound"
    assert "one core of nas at 100 % (average 27 % of 4)" in result["text"]
    assert result["evidence"]["cpu_busiest_core_percent"] == {"nas": 100.0, "pc": 35.0}


def test_a_busy_core_on_a_busy_machine_is_the_machine_s_figure() -> None:
    result = verdict(
        transfer_bytes_per_second=300 * MIB,
        disk_bytes_per_second=1000 * MIB,
        cpu_busy_percent={"nas": 95.0},
        cpu_cores={"nas": (100.0, 4)},
    )
    assert result["verdict"] == "cpu-bound"
    assert "CPU nas 95 % busy" in result["text"] and "one core" not in result["text"]


def test_protocol_bound_names_only_the_limits_the_run_measured() -> None:
    without_disk = verdict(transfer_bytes_per_second=300 * MIB, disk_bytes_per_second=None)
    assert without_disk["verdict"] == "protocol-bound"
    text = without_disk["text"]
    assert "well under the network and the CPU limits" in text
    assert "the disk limits" not in text and "the disk and" not in text
    assert "no disk test of this NAS in the run, so its disks are not ruled out" in text
    measured = verdict(transfer_bytes_per_second=300 * MIB, disk_bytes_per_second=1000 * MIB)
    assert "well under the network, the disk and the CPU limits" in measured["text"]
    bare = verdict(
        transfer_bytes_per_second=300 * MIB, disk_bytes_per_second=None, cpu_busy_percent=None
    )
    assert "(well under the network limit: the protocol or client; no disk test" in bare["text"]


def test_annotate_transfers_reads_each_host_s_busiest_core_from_its_resources() -> None:
    smb = {
        "kind": "transfer",
        "params": {"server": "nas", "client": "pc", "address": "198.18.5.10", "method": "smb"},
        "path": {"theoretical_bits_per_second": 9.9e9, "speed_bits_per_second": 10e9},
        "directions": {"read": _summary(300 * MIB)},
        "resources": {
            "nas": {"cpu_busy_percent_median": 27.0, "cpu_busiest_core_percent_median": 99.0,
                    "cpu_cores": 4},
            "pc": None,
        },
    }  # fmt: skip
    (smb,) = annotated([smb], {"nas": 64 * GIB})
    read = smb["bottleneck"]["read"]
    assert read["verdict"] == "cpu-bound"
    assert read["text"] == (
        "SMB read 300 MiB/s = 25 % of the 10G path (TCP maximum 9.9 Gbit/s) and one core of nas "
        "at 99 % (average 27 % of 4): cpu-bound"
    )


def test_a_busy_core_of_a_shared_kernel_is_not_the_host_s_own() -> None:
    # lab hosts share one kernel: its busiest core may be any host's program
    result = verdict(
        transfer_bytes_per_second=300 * MIB,
        disk_bytes_per_second=1000 * MIB,
        cpu_busy_percent={"nas": 55.0},
        cpu_cores={"nas": (100.0, 2)},
        cpu_shared_with={"nas": ["ws"]},
    )
    assert result["verdict"] == "protocol-bound"
    assert "one core" not in result["text"]
