"""Free space where a test writes (nasplan/measure/space.py), from df -P -k's real line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasplan.measure import space

# df -P -k of a full tmpfs (a QNAP's 64 MiB /tmp), and of a roomy volume
FULL = "/tmp\nFilesystem 1024-blocks Used Available Capacity Mounted on\n"
FULL += "tmpfs 65536 65536 0 100% /tmp\n"
ROOMY = "/srv/v1\nFilesystem 1024-blocks Used Available Capacity Mounted on\n"
ROOMY += "/dev/loop3 325632 13 12288 1% /srv/v1\n"


def test_a_test_that_does_not_fit_is_named_with_both_numbers() -> None:
    """fit_lines run by a real sh on this machine's df: a place far too small is named with
    what df said and what the test writes; one that fits, and one df cannot read, pass."""
    import subprocess

    needs = [
        space.Need("ws", "/", 2**50, "its source file"),
        space.Need("ws", "/", 2**50, "a read's copy"),
        space.Need("ws", "/no/such/dir/at/all", 1, "the copies"),  # df of / (its parent)
    ]
    said = subprocess.run(["sh", "-c", space.fit_lines(needs) + "echo made"],
                          capture_output=True, text=True)  # fmt: skip
    assert said.returncode == 1 and "made" not in said.stdout, said
    (line,) = space.said_short(needs, said.stdout)
    assert line.startswith("ws: / has ") and line.endswith(
        " free, the test writes 2048.0 TiB there (its source file and a read's copy); "
        "nothing was made"
    ), line
    fits = subprocess.run(["sh", "-c", space.fit_lines(needs[2:]) + "echo made"],
                          capture_output=True, text=True)  # fmt: skip
    assert fits.stdout == "made\n" and space.said_short(needs[2:], fits.stdout) == []
    assert space.fit_lines([]) == ""


def test_what_df_says_of_a_full_tmp_reads_as_a_person_writes_it() -> None:
    needs = [space.Need("ws", space.CLIENT_TMP, 24 * 2**20, "its source file")]
    said = space.said_short(needs, "NASPLAN_SHORT=0 12288 /tmp\n")
    assert said == [
        "ws: /tmp has 12.0 MiB free, the test writes 24.0 MiB there (its source file); "
        "nothing was made"
    ]


def test_a_full_disk_is_named_with_what_is_left(fake_runner: Callable[[str], Any]) -> None:
    nas = fake_runner("nas").expect("df -P -k", FULL).expect("df -P -k", ROOMY)
    assert space.full_disk(nas, "nas", "/tmp") == "nas: /tmp is full (0 B free)"
    assert space.full_disk(nas, "nas", "/srv/v1") is None
    assert space.directory_of("/srv/v1/nasplan-x.bin") == "/srv/v1"


def test_the_check_probe_compares_df_with_what_the_test_writes() -> None:
    import subprocess

    small, huge = space.probes(  # in host order
        [space.Need("ws", "/", 10**18, "its source file"), space.Need("nas", "/tmp", 1, "x")]
    )
    said = subprocess.run(["sh", "-c", huge.script], capture_output=True, text=True)
    assert said.returncode == 1 and said.stdout.strip().endswith(" KiB free"), said
    assert huge.missing.startswith("ws: the test writes ") and "(its source file)" in huge.missing
    assert subprocess.run(["sh", "-c", small.script]).returncode == 0
