"""Generated inventories fed to both readers: Ansible's (``ansible-inventory --list``, from a
playbook directory with its own group_vars/) and nasplan's must give the same hosts and vars,
and nasplan's connection (address, user, port) must be what Ansible's ssh connection takes from
those vars: the ``ansible_ssh_`` names over the new ones, never a plain ``port=`` or ``user=``.

Invariants over every generated inventory: the reader's vars equal Ansible's; every host either
is usable with the connection Ansible would make, or is left out with a located reason; the
groups hold exactly the usable hosts Ansible puts in them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nasplan.input.inventory import load_inventory
from nasplan.input.loader import located
from tests.unit.test_ansible_differential import (
    BATCH,
    ansible_environment,
    ansible_groups,
    ansible_hosts,
    expected_host,
    nasplan_host,
    plain,
    reader_view,
)

NAMES = st.sampled_from(["nas", "ws", "pc", "mac", "sw", "db"])
GROUPS = st.sampled_from(["storage", "clients", "lab", "office"])
CONNECTION_VARS = {
    "ansible_host": st.sampled_from(["198.18.254.1", "198.18.254.2", "nas.lan"]),
    "ansible_ssh_host": st.sampled_from(["198.18.254.3", "old.lan"]),
    "ansible_user": st.sampled_from(["root", "admin"]),
    "ansible_ssh_user": st.sampled_from(["ops", "backup"]),
    "ansible_port": st.integers(1, 65535),
    "ansible_ssh_port": st.integers(1, 65535),
    "ansible_connection": st.sampled_from(["ssh", "paramiko", "network_cli", "winrm"]),
    "port": st.integers(1, 65535),
    "user": st.sampled_from(["app", "www"]),
    "address": st.sampled_from(["app.example"]),
    "color": st.sampled_from(["red", "blue"]),
}
VARS = st.dictionaries(st.sampled_from(sorted(CONNECTION_VARS)), st.just(None), max_size=4).flatmap(
    lambda keys: st.fixed_dictionaries({k: CONNECTION_VARS[k] for k in keys})
)


@dataclass(frozen=True)
class Generated:
    """One INI inventory, and the playbook directory's group_vars/all vars."""

    ini: str
    playbook_vars: dict[str, Any]


@st.composite
def inventories(draw: st.DrawFn) -> Generated:
    lines: list[str] = []
    hosts = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    groups = draw(st.lists(GROUPS, min_size=1, max_size=3, unique=True))
    for group in groups:
        lines.append(f"[{group}]")
        for host in draw(st.lists(st.sampled_from(hosts), max_size=3, unique=True)):
            host_vars = draw(VARS)
            lines.append(" ".join([host, *(f"{k}={v}" for k, v in host_vars.items())]))
        group_vars = draw(VARS)
        if group_vars:
            lines.append(f"[{group}:vars]")
            lines += [f"{k}={v}" for k, v in group_vars.items()]
    if len(groups) > 1 and draw(st.booleans()):
        lines += [f"[{groups[0]}:children]", groups[1]]
    lines += ["[all:vars]", *(f"{k}={v}" for k, v in draw(VARS).items())]
    # hosts with no group at all come first, in ungrouped
    ungrouped = [h for h in hosts if not any(line.split(" ")[0] == h for line in lines)]
    return Generated("\n".join([*ungrouped, *lines]) + "\n", draw(VARS))


class Ansible:
    """One ``ansible_batch.py --stream`` worker: ``ansible-inventory --list`` per inventory."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.count = 0
        self.worker = subprocess.Popen(
            [sys.executable, str(BATCH), "--stream"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=ansible_environment(home),
            text=True,
        )

    def listing(self, inventory: Path, cwd: Path) -> dict[str, Any] | None:
        self.count += 1
        out, err = self.home / f"out{self.count}", self.home / f"err{self.count}"
        job = {
            "argv": ["ansible-inventory", "-i", str(inventory), "--list"],
            "cwd": str(cwd),
            "out": str(out),
            "err": str(err),
        }
        assert self.worker.stdin is not None and self.worker.stdout is not None
        self.worker.stdin.write(json.dumps(job) + "\n")
        self.worker.stdin.flush()
        code = int(self.worker.stdout.readline())
        return plain(json.loads(out.read_text())) if code == 0 else None

    def close(self) -> None:
        assert self.worker.stdin is not None
        self.worker.stdin.close()
        self.worker.wait(timeout=30)


@pytest.fixture(scope="module")
def ansible(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ansible]:
    worker = Ansible(tmp_path_factory.mktemp("ansible-home"))
    yield worker
    worker.close()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(generated=inventories())
def test_both_readers_agree_and_nasplan_connects_as_ansible(
    generated: Generated, ansible: Ansible, tmp_path_factory: pytest.TempPathFactory
) -> None:
    playbook = tmp_path_factory.mktemp("playbook")
    (playbook / "group_vars").mkdir()
    (playbook / "group_vars" / "all.yml").write_text(json.dumps(generated.playbook_vars))
    (playbook / "inventory").mkdir()
    path = playbook / "inventory" / "hosts"
    path.write_text(generated.ini)
    listing = ansible.listing(path, playbook)
    assert listing is not None, generated.ini
    hostvars, groups = reader_view([path], playbook)
    assert set(hostvars) == ansible_hosts(listing)
    for name, found in hostvars.items():
        assert found == listing["_meta"]["hostvars"].get(name, {}), name
    assert {g: m for g, m in groups.items() if g != "all"} == ansible_groups(listing)
    inventory = load_inventory((path,), playbook_dir=playbook)
    left_out = set(inventory.unusable)
    assert set(inventory.hosts) | left_out == ansible_hosts(listing)
    for name, lines in inventory.unusable.items():
        assert lines and all(located(line) for line in lines), name
        connection = listing["_meta"]["hostvars"][name].get("ansible_connection")
        assert connection in ("network_cli", "winrm"), (name, lines)
    for name in inventory.hosts:
        expected = expected_host(name, listing["_meta"]["hostvars"].get(name, {}))
        assert nasplan_host(inventory, name) == expected, name
    usable = {g: m - left_out for g, m in ansible_groups(listing).items()}
    assert {g: set(m) for g, m in inventory.groups.items() if m} == {
        g: m for g, m in usable.items() if m
    }
