"""fio argv and the defensive JSON parser, on real fio 3.33 output (tests/fixtures/fio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.measure.tools import fio

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "fio"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_sequential_write_with_direct_io() -> None:
    parsed = fio.parse(fixture("seq-write-direct.json"))
    assert parsed["rw"] == "write"
    assert parsed["bytes_per_second"] == 1398101333
    assert parsed["bytes"] == 64 * 2**20
    assert parsed["direct"] is True
    assert parsed["fio_version"] == "3.33"


def test_sequential_read() -> None:
    parsed = fio.parse(fixture("seq-read-direct.json"))
    assert parsed["rw"] == "read"
    assert parsed["bytes_per_second"] == 1560671255
    assert parsed["duration_s"] == pytest.approx(0.043)


def test_buffered_run_says_it_was_not_direct() -> None:
    assert fio.parse(fixture("seq-write-buffered.json"))["direct"] is False


def test_text_before_json_is_skipped_and_kept_as_a_note() -> None:
    parsed = fio.parse(fixture("text-before-json-iodepth-note.txt"))
    assert parsed["bytes_per_second"] == 1398101333
    assert parsed["notes"][0].startswith("note: both iodepth")


def test_refused_direct_io_is_recognised() -> None:
    with pytest.raises(fio.FioError, match="first direct IO errored") as caught:
        fio.parse(fixture("direct-io-error.txt"))
    assert caught.value.direct_io_unsupported is True


def test_output_without_json_raises_with_fios_message() -> None:
    with pytest.raises(fio.FioError, match="io_u error") as caught:
        fio.parse(fixture("io-error-stderr-only.txt"))
    assert caught.value.direct_io_unsupported is False


def test_argv_sequential_1mib_direct_with_end_fsync_for_writes() -> None:
    write = fio.fio_argv(
        "/usr/bin/fio", "/vol/x/f.bin", fio.FioParams(rw="write", size_bytes=2**26)
    )
    assert "--bs=1048576" in write and "--direct=1" in write and "--end_fsync=1" in write
    assert "--output-format=json" in write
    read = fio.fio_argv(
        "fio", "/vol/x/f.bin", fio.FioParams(rw="read", size_bytes=2**26, direct=False)
    )
    assert "--rw=read" in read and "--direct=0" in read and "--end_fsync=1" not in read


def test_params_refuse_a_size_below_one_block() -> None:
    with pytest.raises(ValueError):
        fio.FioParams(rw="write", size_bytes=1000)
