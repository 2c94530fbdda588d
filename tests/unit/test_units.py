"""Units: rates and sizes parsed from plan text, and formatted with their unit named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nasplan.units import (
    RATE_PATTERN,
    format_bits_per_second,
    format_rate_short,
    parse_rate,
    parse_size,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "nasplan" / "schemas"


@pytest.mark.parametrize(
    ("text", "bits_per_second"),
    [
        ("1G", 1_000_000_000),
        ("2.5G", 2_500_000_000),
        ("100M", 100_000_000),
        ("10g", 10_000_000_000),
        ("1Gbit/s", 1_000_000_000),
        ("100 Mbps", 100_000_000),
        ("1.2T", 1_200_000_000_000),
        ("64k", 64_000),
        ("1500", 1500),
        ("2.01G", 2_010_000_000),  # float arithmetic would give 2_009_999_999
        (1_000_000_000, 1_000_000_000),
    ],
)
def test_parse_rate(text: str | int, bits_per_second: int) -> None:
    assert parse_rate(text) == bits_per_second


def test_parse_rate_is_exact_for_every_two_decimal_gigabit_rate() -> None:
    wrong = [
        f"{i / 100:.2f}G" for i in range(1, 1000) if parse_rate(f"{i / 100:.2f}G") != i * 10**7
    ]
    assert wrong == []


@pytest.mark.parametrize("text", ["1GB", "1e9", "", "fast", "-1G", "1 G B", "1.G"])
def test_parse_rate_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a rate"):
        parse_rate(text)


def test_parse_rate_rejects_a_boolean() -> None:
    with pytest.raises(ValueError):
        parse_rate(True)


@pytest.mark.parametrize(
    ("text", "size_bytes"),
    [
        ("1GiB", 2**30),
        ("512MiB", 512 * 2**20),
        ("10GB", 10 * 10**9),
        ("1.5KiB", 1536),
        ("4k", 4000),
        ("100", 100),
        ("0.3MB", 300_000),
        (4096, 4096),
    ],
)
def test_parse_size(text: str | int, size_bytes: int) -> None:
    assert parse_size(text) == size_bytes


@pytest.mark.parametrize("text", ["1 gibibyte", "GiB", "-1MB", "1.5.2GB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_parse_size_rejects_a_boolean() -> None:
    with pytest.raises(ValueError):
        parse_size(False)


@pytest.mark.parametrize(
    ("bits_per_second", "text"),
    [
        (9_411_000_000, "9.41 Gbit/s"),
        (941_482_444.7, "941.5 Mbit/s"),
        (1_000_000_000, "1.00 Gbit/s"),
        (99_947_141.9, "99.9 Mbit/s"),
        (64_000, "64.0 kbit/s"),
        (12, "12 bit/s"),
    ],
)
def test_format_bits_per_second(bits_per_second: float, text: str) -> None:
    assert format_bits_per_second(bits_per_second) == text


@pytest.mark.parametrize(
    ("bits_per_second", "text"),
    [(10**10, "10G"), (2_500_000_000, "2.5G"), (100_000_000, "100M"), (10**9, "1G"), (5_000, "5k")],
)
def test_format_rate_short(bits_per_second: float, text: str) -> None:
    assert format_rate_short(bits_per_second) == text


@pytest.mark.parametrize("text", ["1G", "2.5G", "100M", "10G", "25G"])
def test_format_rate_short_round_trips_plan_rates(text: str) -> None:
    assert format_rate_short(parse_rate(text)) == text


@pytest.mark.parametrize("schema", ["plan", "inventory", "lab"])
def test_a_rate_is_one_grammar_in_every_schema_and_the_parser(schema: str) -> None:
    """What validates as a rate parses as one, and what the parser refuses the schema refuses:
    a plan's ``bitrate: 500Mbps`` as an inventory's ``speed: 10Gbps``."""
    rate = json.loads((SCHEMAS / f"{schema}.schema.json").read_text())["$defs"]["rate"]
    (text,) = [one for one in rate["oneOf"] if one["type"] == "string"]
    assert text["pattern"] == RATE_PATTERN
    assert rate["description"].startswith("a rate, e.g. 500M")
    for good in ("500M", "500Mbps", "500Mbit/s", "2.5G", "10Gbps", "100 Mbps", "1500", "64k"):
        assert re.search(text["pattern"], good), good
        assert parse_rate(good) > 0
    for bad in ("1GB", "fast", "-1G", "1 G B", "1.G", "500 MB/s", "1e9"):
        assert not re.search(text["pattern"], bad), bad
        with pytest.raises(ValueError, match=r"expected a rate, e\.g\. 500M"):
            parse_rate(bad)


def test_seconds_in_messages_are_rounded_as_a_person_writes_them() -> None:
    from nasplan.units import format_seconds

    assert format_seconds(24.975259855999866) == "25 s"
    assert format_seconds(2.5) == "2.5 s"
    assert format_seconds(3.0) == "3 s"
    assert format_seconds(0.04) == "0 s"
    assert format_seconds(None) == "? s"


def test_free_space_is_said_as_a_person_says_it() -> None:
    from nasplan.units import format_free

    assert [format_free(n) for n in (0, 512, 4096, 96 * 2**20 + 2**19, 2**40)] == [
        "0 B",
        "512 B",
        "4 KiB",
        "96.5 MiB",
        "1.0 TiB",
    ]


def test_a_stopped_test_of_two_directions_counts_each_directions_repetitions() -> None:
    from nasplan.measure.record import stopped_record

    reps = [
        {"index": i, "direction": d, "status": "ok", "error": None}
        for d in ("write", "read")
        for i in (1, 2, 3)
    ]
    said = stopped_record({"repetitions": reps}, 3)["error"]
    assert said == (
        "interrupted: the run was stopped after 3 of 3 repetitions (write), 3 of 3 (read)"
    )
    one = stopped_record({"repetitions": reps[:2]}, 3)["error"]
    assert one == "interrupted: the run was stopped after 2 of 3 repetitions (write)"


@pytest.mark.parametrize(
    ("run", "said"),
    [
        # Ctrl-C in the first repetition of a 4 × 3 grid: its first job's three modes and the
        # second's read and write measured (not "1 of 3 (mix)", as if a third of it had run)
        ("interrupted", "5 of the grid's 12 cells (job × mode) in repetition 1 of 3"),
        # just after the grid's first repetition (it said the same as the run above before)
        ("interrupted-early", "1 of 3 repetitions of the grid (12 cells, job × mode)"),
    ],
)
def test_a_disk_profile_stopped_mid_grid_counts_the_grids_cells(run: str, said: str) -> None:
    """Real runs (tests/fixtures/runs/disk-profile-lab, README.md): their ``cdm`` record as the
    run stopped it, its message made again."""
    from nasplan.measure.record import stopped_record

    path = Path(__file__).parent.parent / "fixtures/runs/disk-profile-lab" / run / "run.json"
    (record,) = [t for t in json.loads(path.read_text())["tests"] if t["id"] == "cdm"]
    assert record["status"] == "interrupted"
    stopped = stopped_record({**record, "status": "failed", "error": None}, 3)
    assert stopped["status"] == "interrupted"
    assert stopped["error"] == f"interrupted: the run was stopped after {said}"


def test_a_slow_rate_is_never_shown_as_0() -> None:
    """A dying disk's random writes (40 KB/s, 0.004 IOPS of 1 MiB): two significant figures
    where the usual decimals would round them to 0; 0 itself stays 0."""
    from nasplan.units import decimals, format_bytes_per_second, format_metric

    assert format_bytes_per_second(40_000) == "0.038 MiB/s"
    assert format_bytes_per_second(1_000_000) == "1.0 MiB/s"
    assert format_bytes_per_second(0) == "0.0 MiB/s"
    assert format_metric(0.0038, "iops") == "0.0038 iops"
    assert format_metric(4.58, "files_per_second") == "4.58 files/s"
    assert decimals(0.004, 2) == "0.0040" and decimals(219.15, 2) == "219.15"
