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


def test_a_test_that_does_not_fit_is_named_with_both_numbers(
    fake_runner: Callable[[str], Any],
) -> None:
    nas, ws = fake_runner("nas"), fake_runner("ws")
    nas.expect("df -P -k", ROOMY)
    ws.expect("df -P -k", FULL)
    needs = [
        space.Need("ws", space.CLIENT_TMP, 2**20, "its source file"),
        space.Need("ws", space.CLIENT_TMP, 2**20, "a read's copy"),
        space.Need("nas", "/srv/v1", 8 * 2**20, "the copies"),
    ]

    said = space.shortfalls(needs, {"nas": nas, "ws": ws})

    assert said == [
        "ws: /tmp has 0 B free, the test writes 2.0 MiB there (its source file and a read's "
        "copy); nothing was made"
    ]  # the volume's 12 MiB hold the 8 MiB of copies


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
