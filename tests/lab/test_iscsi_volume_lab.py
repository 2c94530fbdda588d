"""In the lab: an iSCSI LUN on a NAS volume, the same disks as the volume's SMB share. The LUN
is a file at the volume's root, and an iSCSI write (its SYNCHRONIZE CACHE included) lands on
the volume's shaped disk: it goes at the disk's write rate, well below the 1G LAN's."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from conftest import LabContext

from nasplan.input.plan import load_plan
from nasplan.lab import iscsi, netns, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

MIB = 2**20
LAB = {
    "name": "l45-lunvol",
    "lan": {"prefix": "198.18.106.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"services": ["smb", "iscsi"],
                "iscsi": {"lun_size": "128MiB", "chap": False, "volume": "hdd"},
                "volumes": {"hdd": {"read": "120MiB/s", "write": "40MiB/s", "size": "512MiB",
                                    "path": "/share/HDD"}}},
        "ws": {},
    },
}  # fmt: skip


def test_an_iscsi_lun_on_a_volume_writes_at_the_volume_s_disk_rate(
    running_lab: LabContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_lab(LAB) as state:
        inventory = yaml.safe_load(state.inventory_path.read_text())
        assert inventory["hosts"]["nas"]["vars"]["iscsi"]["volume"] == "hdd"
        listed = netns.run(["nsenter", f"--target={state.hosts['nas'].sshd_pid}", "--mount",
                            "--", "ls", "-ls", f"/share/HDD/{iscsi.VOLUME_LUN_NAME}"])  # fmt: skip
        assert str(128 * MIB) in listed.split()  # the sparse LUN file, on the volume
        password = services.read_password(state.host_dir("nas")) or ""
        monkeypatch.setenv(services.SMB_PASSWORD_ENV, password)
        tests = [
            {"kind": "iscsi", "id": "lun", "server": "nas", "client": "ws", "lun": 1,
             "iqn": "{{ hosts.nas.iscsi.iqn }}", "scratch": True, "size": "48MiB",
             "direction": "write", "repetitions": 1},
            {"kind": "transfer", "id": "smb", "method": "smb", "server": "nas", "client": "ws",
             "volume": "hdd", "size": "48MiB", "direction": "write", "repetitions": 1,
             "user": "{{ hosts.nas.smb.user }}",
             "password_env": "{{ hosts.nas.smb.password_env }}"},
        ]  # fmt: skip
        plan = {"name": "lun-on-volume", "inventory": str(state.inventory_path), "tests": tests}
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(plan, sort_keys=False))
        outcome = apply(
            RunRequest(load_plan(path), out=tmp_path / "run"), make_progress(io.StringIO())
        )
    run = load_run(tmp_path / "run")
    assert outcome.exit_code == EXIT_OK, [(t["id"], t["error"]) for t in run["tests"]]
    records = {t["id"]: t for t in run["tests"]}
    lun_write = records["lun"]["directions"]["write"]["median"]
    # the volume's disk writes 40 MiB/s; the LAN would carry about 110
    assert 20 * MIB < lun_write < 52 * MIB, lun_write / MIB
    assert records["smb"]["params"]["share"] == "hdd"
