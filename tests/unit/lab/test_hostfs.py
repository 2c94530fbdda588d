"""A lab host's private /tmp: the mount commands its sshd wrapper and a vendor root run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nasplan.errors import LabError
from nasplan.lab import hostfs, sshd
from nasplan.lab.personalities import get


def test_private_tmp_is_a_tmpfs_moved_onto_tmp_with_the_state_dir_bound_back() -> None:
    host_dir = Path("/tmp/pytest-of-root/p0/state/hosts/nas")
    stage = "/tmp/pytest-of-root/p0/state/hosts/nas/tmp-stage"
    assert hostfs.private_tmp_commands(host_dir) == [
        ["mkdir", "-p", stage],
        ["mount", "-t", "tmpfs", "-o", "mode=1777", "nasplan-tmp", stage],
        ["mkdir", "-p", f"{stage}/pytest-of-root/p0/state"],
        ["mount", "--bind", "/tmp/pytest-of-root/p0/state", f"{stage}/pytest-of-root/p0/state"],
        ["mount", "--move", stage, "/tmp"],
    ]


def test_a_state_dir_outside_tmp_is_not_bound_in() -> None:
    host_dir = Path("/srv/lab/.lab/nas-lab/hosts/nas")
    commands = hostfs.private_tmp_commands(host_dir)
    assert [c[:2] for c in commands] == [["mkdir", "-p"], ["mount", "-t"], ["mount", "--move"]]
    root = Path("/srv/lab/.lab/nas-lab/hosts/nas/root-layer/root")
    assert hostfs.chroot_tmp_commands(host_dir, root) == [
        ["mount", "--bind", "/tmp", f"{root}/tmp"]
    ]


def test_a_vendor_root_gets_the_same_tmp_and_the_state_dir_it_lies_in() -> None:
    host_dir = Path("/tmp/t/state/hosts/nas")
    root = host_dir / "root-layer/root"
    assert hostfs.chroot_tmp_commands(host_dir, root) == [
        ["mount", "--bind", "/tmp", f"{root}/tmp"],
        ["mount", "--bind", "/tmp/t/state", f"{root}/tmp/t/state"],
    ]


@pytest.mark.parametrize("personality", ["debian", "qnap", "truenas"])
def test_every_host_wrapper_makes_tmp_private_before_the_personality_and_sshd(
    tmp_path: Path, personality: str
) -> None:
    host_dir = tmp_path / "state" / "hosts" / "nas"
    (tmp_path / "state" / "authorized_keys").parent.mkdir(parents=True)
    wrapper, _ = sshd.write_host_files(
        host_dir, tmp_path / "state" / "authorized_keys", get(personality)
    )
    lines = wrapper.read_text().splitlines()
    move = next(i for i, line in enumerate(lines) if line.startswith("mount --move"))
    assert lines[move].endswith(" /tmp")
    assert move < len(lines) - 2 and lines[-1].startswith("exec ")
    if personality != "debian":
        outside = (host_dir / "personality-outside.sh").read_text()
        assert f"mount --bind /tmp {host_dir}/root-layer/root/tmp" in outside
        assert outside.index("root/tmp") < outside.index("chroot ")


def test_host_path_reaches_a_host_through_its_sshd_root() -> None:
    pid = os.getpid()  # any live process: the path is the same
    assert hostfs.host_path(pid, "/tmp/x") == Path(f"/proc/{pid}/root/tmp/x")
    with pytest.raises(LabError, match="not running"):
        hostfs.host_path(None, "/tmp/x")
