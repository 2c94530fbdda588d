"""A NAS's volumes in the inventory, and tests on them: ``volume: ssd`` in disk and transfer
tests, found from a path, share or export too, a matrix over ``volume``, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.input.inventory import load_inventory
from nasplan.input.plan import load_plan

INVENTORY = """
vars: {user: root}
hosts:
  nas:
    address: 198.18.164.10
    volumes:
      hdd: {path: /share/HDD, share: hdd, export: /hdd, description: 2 x 4 TB RAID 1}
      ssd: {path: /share/SSD, share: ssd}
  pc:
    address: 198.18.164.11
"""

PLAN = """name: volumes
inventory: inventory.yaml
matrix:
  volume: [hdd, ssd]
tests:
  - {id: disk, kind: disk, host: nas, size: 64MiB}
  - id: smb
    kind: transfer
    method: smb
    server: nas
    client: pc
    password_env: SMB_PASSWORD
  - {id: net, kind: iperf3, server: nas, client: pc}
"""


def write(tmp_path: Path, plan: str, inventory: str = INVENTORY) -> Path:
    (tmp_path / "inventory.yaml").write_text(inventory)
    (tmp_path / "plan.yaml").write_text(plan)
    return tmp_path / "plan.yaml"


def test_the_inventory_names_a_host_s_volumes(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    hdd = load_inventory(path).hosts["nas"].volumes["hdd"]
    assert (hdd.path, hdd.share, hdd.export) == ("/share/HDD", "hdd", "/hdd")
    assert hdd.description == "2 x 4 TB RAID 1"


def test_an_ansible_inventory_names_them_in_its_vars(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n  hosts:\n    nas:\n      ansible_host: 198.18.164.10\n"
        "      nasplan_volumes: {ssd: {path: /volume2, share: fast}}\n"
    )
    assert load_inventory(path).hosts["nas"].volumes["ssd"].share == "fast"


def test_a_matrix_over_volume_puts_each_test_on_each_volume(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, PLAN))
    found = {t.id: dict(t.settings) for t in plan.tests}
    assert found["disk[volume=ssd]"]["path"] == "/share/SSD"
    assert found["smb[volume=hdd]"]["share"] == "hdd"
    assert found["smb[volume=hdd]"]["server_path"] == "/share/HDD"
    # iperf3 has no volume: the dimension runs it once per cell, as it is
    assert "volume" not in found["net[volume=ssd]"]


def test_a_test_on_a_volume_s_path_or_share_is_on_that_volume(tmp_path: Path) -> None:
    text = """name: found
inventory: inventory.yaml
tests:
  - {id: fio, kind: disk, host: nas, path: /share/SSD/bench}
  - {id: rsync, kind: transfer, method: rsync, server: nas, client: pc, path: /share/HDD/in}
  - {id: smb, kind: transfer, method: smb, server: nas, client: pc, share: ssd,
     password_env: P}
  - {id: other, kind: disk, host: nas, path: /var/tmp}
"""
    found = {t.id: t.settings.get("volume") for t in load_plan(write(tmp_path, text)).tests}
    assert found == {"fio": "ssd", "rsync": "hdd", "smb": "ssd", "other": None}


def test_an_unknown_volume_is_named_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN.replace("[hdd, ssd]", "[hdd, nvme]"))
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert any(
        m.startswith(f"{path}:")
        and "host 'nas' has no volume 'nvme'" in m
        and "(has: hdd, ssd)" in m
        for m in info.value.messages
    ), info.value.messages


def test_a_volume_without_what_the_method_needs(tmp_path: Path) -> None:
    text = """name: nfs
inventory: inventory.yaml
tests:
  - {id: nfs, kind: transfer, method: nfs, server: nas, client: pc, volume: ssd}
"""
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_plan(path)
    (message,) = info.value.messages
    assert message == (
        f"{path}:4:77: tests[0].volume: volume 'ssd' of nas has no export for method nfs"
    )
