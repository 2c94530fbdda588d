"""The connection nasplan makes against the one Ansible's ssh connection makes, for the same
inventory run from the same playbook directory.

The oracle is Ansible itself: ``ansible HOSTS -m ping`` is run here with its ssh executable
replaced by a script that writes down the argv Ansible gives ssh and fails the connection; the
address, ``-o User=``, ``-o Port=`` and ``-o IdentityFile=`` of each argv must be what nasplan's
Host holds (a key as a path relative to the directory Ansible ran in). Each case runs from a
playbook directory of its own with ``group_vars/`` and ``host_vars/`` beside it, as a plan's.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nasplan.input.inventory import load_inventory
from tests.unit.test_ansible_differential import ansible_environment

ANSIBLE = Path(sys.executable).parent / "ansible"
FAKE_SSH = """#!/bin/sh
printf '%s\\n' "$@" > "{out}/argv.$$"
exit 255
"""

Connection = tuple[str, str | None, int | None, str | None]  # address, user, port, key


@dataclass(frozen=True)
class Layout:
    """Files of one case (relative path -> text), the inventory among them, and where
    ``ansible`` runs (the playbook directory, a plan's)."""

    files: dict[str, str]
    inventory: str
    playbook_dir: str = "."


CASES = {
    "old and new names both set: the ssh_ ones": Layout(
        {
            "hosts": (
                "[nas]\n"
                "nas1 ansible_host=198.18.250.1 ansible_ssh_host=198.18.250.2 ansible_user=new "
                "ansible_ssh_user=old ansible_port=1111 ansible_ssh_port=2222 "
                "ansible_private_key_file=/keys/new ansible_ssh_private_key_file=/keys/old\n"
                "nas2 ansible_ssh_host=198.18.250.3 ansible_user=host-level\n"
                "[nas:vars]\nansible_ssh_user=group-level\nansible_port=2200\n"
            )
        },
        "hosts",
    ),
    "plain port= user= address= are an application's": Layout(
        {
            "hosts": (
                "[web]\nweb1 ansible_host=198.18.250.4 port=8080 user=app address=app.example\n"
                "web2 port=9090 user=www\n"
            )
        },
        "hosts",
    ),
    "Jinja in connection vars": Layout(
        {
            "hosts": (
                "[nas]\nnas1 ansible_host='{{ net }}.5' ansible_user='{{ who }}' "
                "ansible_port='{{ base_port + 1 }}'\n"
                "[all:vars]\nnet='{{ prefix }}.250'\nprefix=198.18\nwho=admin\nbase_port=2200\n"
            )
        },
        "hosts",
    ),
    "group_vars and host_vars beside the playbook, over the inventory's": Layout(
        {
            "inventory/hosts": "[nas]\nnas1 ansible_host=198.18.250.6\nnas2\n",
            "inventory/group_vars/all.yml": "ansible_user: inv\nansible_port: 2201\n",
            "inventory/group_vars/nas.yml": "ansible_ssh_private_key_file: keys/inv\n",
            "plans/group_vars/all.yml": "ansible_user: root\n",
            "plans/group_vars/nas.yml": "ansible_ssh_private_key_file: keys/lab\n",
            "plans/host_vars/nas2.yml": "ansible_host: 198.18.250.7\nansible_port: 2202\n",
        },
        "../inventory/hosts",
        "plans",
    ),
    "a YAML inventory with both names in group_vars and the host": Layout(
        {
            "site.yml": (
                "all:\n  children:\n    storage:\n      hosts:\n        nas1:\n"
                "          ansible_host: 198.18.250.8\n"
                "          ansible_ssh_port: 2203\n"
            ),
            "group_vars/storage.yml": "ansible_ssh_user: ops\nansible_user: other\n",
        },
        "site.yml",
    ),
}


def write_layout(root: Path, layout: Layout) -> Path:
    for name, text in layout.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    playbook_dir = root / layout.playbook_dir
    playbook_dir.mkdir(parents=True, exist_ok=True)
    return playbook_dir


def _option(argv: list[str], name: str) -> str | None:
    for index, word in enumerate(argv[:-1]):
        if word == "-o" and argv[index + 1].startswith(f"{name}="):
            return argv[index + 1].split("=", 1)[1].strip('"')
    return None


def ansible_connections(playbook_dir: Path, inventory: str, home: Path) -> set[Connection]:
    """What Ansible's ssh connection is given for every host, run from ``playbook_dir``."""
    out = home / "argv"
    out.mkdir()
    fake = home / "fake-ssh"
    fake.write_text(FAKE_SSH.format(out=out))
    fake.chmod(0o755)
    environment = {**ansible_environment(home), "ANSIBLE_SSH_EXECUTABLE": str(fake)}
    subprocess.run(
        [str(ANSIBLE), "-i", inventory, "all", "-m", "ping", "--forks", "1"],
        cwd=playbook_dir,
        env=environment,
        capture_output=True,
        timeout=120,
        check=False,
    )
    found: set[Connection] = set()
    for path in out.iterdir():
        argv = path.read_text().splitlines()
        # ssh [options] HOST "/bin/sh -c '...'": the host is the word before the command
        command = next(i for i, word in enumerate(argv) if word.startswith("/bin/sh"))
        address = argv[command - 1]
        port = _option(argv, "Port")
        key = _option(argv, "IdentityFile")
        resolved = str((playbook_dir / key).resolve()) if key else None
        found.add((address, _option(argv, "User"), int(port) if port else None, resolved))
    return found


def nasplan_connections(playbook_dir: Path, inventory: str) -> set[Connection]:
    loaded = load_inventory(
        (playbook_dir / inventory,), playbook_dir=playbook_dir.resolve()
    ).hosts.values()
    return {
        (
            h.address,
            h.user,
            h.port,
            str(h.identity_file.resolve()) if h.identity_file else None,
        )
        for h in loaded
    }


@pytest.mark.parametrize("name", list(CASES))
def test_the_connection_is_what_ansibles_ssh_uses(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert ANSIBLE.exists(), "ansible-core is a test dependency: pip install -e '.[test]'"
    root = tmp_path_factory.mktemp("layout")
    playbook_dir = write_layout(root, CASES[name])
    expected = ansible_connections(
        playbook_dir, CASES[name].inventory, tmp_path_factory.mktemp("home")
    )
    assert expected, "Ansible tried no connection"
    assert nasplan_connections(playbook_dir, CASES[name].inventory) == expected


def test_the_oracle_sees_what_ansible_is_given(tmp_path: Path) -> None:
    """The fake ssh records what it is given (the oracle cannot agree with anything)."""
    line = "h1 ansible_host=198.18.250.9 ansible_user=u ansible_port=2\n"
    playbook_dir = write_layout(tmp_path / "root", Layout({"hosts": line}, "hosts"))
    home = tmp_path / "home"
    home.mkdir()
    assert ansible_connections(playbook_dir, "hosts", home) == {("198.18.250.9", "u", 2, None)}


REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "ansible" / "realworld"


@pytest.mark.parametrize(
    ("playbook_dir", "inventory"),
    [
        ("k8s-cluster", "inventory.ini"),
        ("terraform-k3s", "inventory.ini"),
        ("homelab", "inventory/hosts.yml"),
        ("lab-template", "inventory.yml"),
    ],
)
def test_real_projects_connect_as_ansible_connects(
    playbook_dir: str, inventory: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real-world corpus (tests/fixtures/ansible/realworld/), each run from its playbook
    directory: every host nasplan reaches over SSH, reached as Ansible's ssh connection is
    (``~`` in a key is the same home for both)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    where = REALWORLD / playbook_dir
    expected = ansible_connections(where, inventory, home)
    loaded = load_inventory((where / inventory,), playbook_dir=where)
    found = {
        (h.address, h.user, h.port, str(h.identity_file.resolve()) if h.identity_file else None)
        for h in loaded.hosts.values()
        if not h.is_local
    }
    assert expected
    assert found == expected
