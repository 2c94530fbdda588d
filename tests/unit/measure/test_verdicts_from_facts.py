"""Verdicts the facts contradict no more: a rate above the disk's is cache-served only when the
bytes fit in what could cache them (the NAS's RAM, or its memory limit), and a volume's rate
the inventory states stands in for a disk test the run did not have. The records are shaped as
the TS-253D lab's run.json holds them (an SMB copy on volume hdd, a NAS with a 128 MiB limit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nasplan.analysis import BOUND_RATIO, VERDICTS, TransferFigures, cache_explains
from nasplan.input.inventory import Host, Volume
from nasplan.measure.capacity import stated_volumes
from nasplan.measure.verdicts import annotated

ROOT = Path(__file__).resolve().parents[3]
MIB = 2**20
GIB = 2**30
LIMIT = 128 * MIB


def smb_record(
    size: int, write: float, read: float, *, volume: str | None = "hdd", limit: bool = True
) -> dict[str, Any]:
    """An SMB test's record as a run on the lab's NAS writes it (the fields verdicts read)."""
    return {
        "id": "smb[link=p2p10,volume=hdd]",
        "kind": "transfer",
        "status": "ok",
        "params": {"server": "nas", "client": "pc", "method": "smb", "address": "198.18.169.5",
                   "volume": volume, "size_bytes": size},
        "path": {"speed_bits_per_second": 10e9, "theoretical_bits_per_second": 9.41e9,
                 "server_interface": "eth2", "client_interface": "eth2"},
        "directions": {"write": {"median": write, "n": 2}, "read": {"median": read, "n": 2}},
        "resources": {"nas": {"cpu_busy_percent_median": 41.0},
                      "pc": {"cpu_busy_percent_median": 35.0}},
        "cache": {"file_bytes": size, "server_memory_bytes": 19 * GIB,
                  "server_memory_limit_bytes": LIMIT if limit else None,
                  "server_cache_bytes": LIMIT if limit else 19 * GIB},
    }  # fmt: skip


def nas(rates: dict[str, int | None]) -> Host:
    """The lab NAS as its inventory names it, with each volume's ``rate``."""
    volumes = {
        name: Volume(name, f"/share/{name.upper()}", share=name, bytes_per_second=rate)
        for name, rate in rates.items()
    }
    return Host(name="nas", address="198.18.168.2", volumes=volumes)


def disk_record(write: float, read: float, volume: str = "hdd") -> dict[str, Any]:
    return {
        "id": f"disk[volume={volume}]",
        "kind": "disk",
        "status": "ok",
        "params": {"host": "nas", "volume": volume},
        "directions": {"write": {"median": write, "n": 1}, "read": {"median": read, "n": 1}},
    }


def test_a_read_of_more_than_the_memory_limit_is_not_cache_served() -> None:
    # 640 MiB read at 927 MiB/s off a volume fio found at 180 MiB/s, on a NAS limited to 128 MiB
    tests = [disk_record(175 * MIB, 180 * MIB), smb_record(640 * MIB, 170 * MIB, 927 * MIB)]
    record = annotated(tests, {"nas": LIMIT})[1]
    read = record["bottleneck"]["read"]
    assert read["verdict"] == "faster-than-disk"
    assert read["text"].startswith(
        "SMB read 927 MiB/s = 83 % of the 10G path (TCP maximum 9.4 Gbit/s) and 515 % of "
        "volume hdd's sequential read (180 MiB/s)"
    )
    assert (
        "faster than the disk can read, yet not from the NAS's cache: the 640 MiB moved do not "
        "fit in the NAS's 128 MiB memory limit" in read["text"]
    )
    assert read["evidence"]["moved_bytes"] == 640 * MIB
    assert read["evidence"]["cache_bytes"] == LIMIT
    # the write at the disk's rate stays disk-bound
    assert record["bottleneck"]["write"]["verdict"] == "disk-bound"


def test_the_same_read_that_fits_in_the_memory_is_cache_served() -> None:
    tests = [disk_record(175 * MIB, 180 * MIB), smb_record(64 * MIB, 170 * MIB, 927 * MIB)]
    record = annotated(tests, {"nas": LIMIT})[1]
    read = record["bottleneck"]["read"]
    assert read["verdict"] == "cache-served"
    assert "served from the NAS's cache" in read["text"]
    # the cache warning names the memory limit for what it is, in MiB
    assert record["cache_warning"]["text"].startswith(
        "cache-influenced: the file (64 MiB) is smaller than twice the host's memory limit "
        "(128 MiB): use at least"
    )


def test_a_nas_without_a_limit_names_its_ram() -> None:
    tests = [
        disk_record(175 * MIB, 180 * MIB),
        smb_record(8 * GIB, 170 * MIB, 927 * MIB, limit=False),
    ]
    read = annotated(tests, {"nas": 4 * GIB})[1]["bottleneck"]["read"]
    assert read["verdict"] == "faster-than-disk"
    assert "the 8192 MiB moved do not fit in the NAS's 4096 MiB RAM" in read["text"]


def test_without_a_disk_test_the_inventory_s_volume_rate_judges_the_copy() -> None:
    # the case: no fio test, a 927 MiB/s read of a volume rated 180 MiB/s
    pc = Host(name="pc", address="198.18.168.3")
    stated = stated_volumes([nas({"hdd": 180 * MIB, "ssd": 900 * MIB}), pc])
    tests = [smb_record(640 * MIB, 178 * MIB, 927 * MIB)]
    before = annotated(tests, {"nas": LIMIT})[0]["bottleneck"]
    assert before["read"]["verdict"] == "protocol-bound"  # what it said without the rate
    found = annotated(tests, {"nas": LIMIT}, stated=stated)[0]["bottleneck"]
    assert found["read"]["verdict"] == "faster-than-disk"
    assert (
        "515 % of volume hdd's sequential read (180 MiB/s, the inventory's rate)"
        in found["read"]["text"]
    )
    assert found["read"]["evidence"]["disk_source"] == "the inventory's rate"
    # a copy at the volume's rate is disk-bound, by the inventory's figure
    assert found["write"]["verdict"] == "disk-bound"
    assert (
        "99 % of volume hdd's sequential write (180 MiB/s, the inventory's rate)"
        in (found["write"]["text"])
    )


def test_a_measured_disk_is_taken_before_the_inventory_s_rate() -> None:
    stated = stated_volumes([nas({"hdd": 180 * MIB})])
    tests = [disk_record(120 * MIB, 125 * MIB), smb_record(640 * MIB, 118 * MIB, 123 * MIB)]
    found = annotated(tests, {"nas": LIMIT}, stated=stated)[1]["bottleneck"]
    assert found["read"]["evidence"]["disk_bytes_per_second"] == 125 * MIB
    assert "(125 MiB/s)" in found["read"]["text"] and "inventory" not in found["read"]["text"]


def test_a_volume_without_a_rate_states_nothing() -> None:
    assert stated_volumes([nas({"hdd": None})]) == []


@given(
    rate=st.floats(1 * MIB, 5000 * MIB),
    disk=st.floats(10 * MIB, 2000 * MIB),
    moved=st.integers(1 * MIB, 64 * GIB),
    cache=st.integers(16 * MIB, 64 * GIB),
    dropped=st.booleans(),
)
def test_cache_served_only_when_the_cache_can_explain_the_rate(
    rate: float, disk: float, moved: int, cache: int, dropped: bool
) -> None:
    found = TransferFigures(
        label="SMB read",
        direction="read",
        transfer_bytes_per_second=rate,
        network_bits_per_second=None,
        disk_bytes_per_second=disk,
        moved_bytes=moved,
        cache_bytes=cache,
        cache_dropped=dropped,
    ).attribute_bottleneck()
    assert found["verdict"] in VERDICTS
    if found["verdict"] == "cache-served":
        # the bytes fit, or the part beyond the cache at the disk's rate allows this rate
        assert moved <= cache or rate * (moved - cache) / moved <= disk / BOUND_RATIO * 1.0001
    if found["verdict"] == "faster-than-disk":
        assert moved > cache and not cache_explains(rate, disk, moved, cache)
        assert f"{moved / MIB:.0f} MiB moved do not fit" in found["text"]
    if rate <= disk * 0.8:
        assert found["verdict"] not in ("cache-served", "faster-than-disk")


def test_run_json_s_schema_knows_every_verdict() -> None:
    schema = json.loads((ROOT / "nasplan" / "schemas" / "run.schema.json").read_text())
    found = schema["$defs"]["test"]["properties"]["bottleneck"]["additionalProperties"]
    assert found["properties"]["verdict"]["enum"] == list(VERDICTS)
