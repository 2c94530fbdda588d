"""``nasplan inventory --host`` against a real ``ansible -m ping`` on the same lab host, from
the same playbook directory: the address, port, user and key nasplan says it will use are the
ones Ansible's ssh connection used to log in (its ``-vvv`` lines), and nasplan then connects with
them (``apply --check``). The inventory sets both the old and the new names (Ansible logs in
with the ``ansible_ssh_`` ones), an application's plain ``port=``, and its login in the
playbook directory's ``group_vars/``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.lab import LabState

LAB = {
    "name": "invhost-lab",
    "lan": {"prefix": "198.19.226.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
}
PLAN = (
    "name: inventory-host\n"
    "inventory: inventory/hosts\n"
    "tests:\n"
    "  - {id: lan, kind: iperf3, server: nas, client: ws, duration_s: 1, repetitions: 1}\n"
)
ANSIBLE = Path(sys.executable).parent / "ansible"


def write_layout(state: LabState, directory: Path) -> None:
    nas, ws = state.hosts["nas"].ip, state.hosts["ws"].ip
    (directory / "inventory").mkdir()
    (directory / "inventory" / "hosts").write_text(
        f"[storage]\nnas ansible_host={nas} ansible_ssh_port=22 ansible_port=2222 port=8080\n"
        f"[clients]\nws ansible_host={ws}\n"
    )
    (directory / "group_vars").mkdir()
    (directory / "group_vars" / "all.yml").write_text(
        "ansible_user: nobody\n"
        "ansible_ssh_user: root\n"
        f"ansible_ssh_private_key_file: {state.identity_path}\n"
        f"ansible_ssh_common_args: -o UserKnownHostsFile={state.known_hosts_path}\n"
        f"known_hosts: {state.known_hosts_path}\n"
        "framing: tc\n"
        "ansible_python_interpreter: /usr/bin/python3\n"
    )
    (directory / "plan.yaml").write_text(PLAN)


def run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False
    )


def ansible_login(cwd: Path, home: Path) -> dict[str, Any]:
    """What ``ansible nas -m ping -vvv`` logged in with, from its own ``-vvv`` lines."""
    (home / "ansible.cfg").write_text("")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANSIBLE_CONFIG": str(home / "ansible.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "LC_ALL": "C.UTF-8",
    }
    done = run([str(ANSIBLE), "-i", "inventory/hosts", "nas", "-m", "ping", "-vvv"], cwd, env)
    assert done.returncode == 0 and '"ping": "pong"' in done.stdout, done.stdout + done.stderr
    user = re.search(r"ESTABLISH SSH CONNECTION FOR USER: (\S+)", done.stdout)
    command = next(line for line in done.stdout.splitlines() if "SSH: EXEC ssh" in line)
    port = re.search(r"-o Port=(\d+)", command)
    key = re.search(r"IdentityFile=\"([^\"]+)\"", command)
    address = re.search(r" (\S+) '/bin/sh -c", command)
    assert user and port and key and address, command
    return {
        "user": user.group(1),
        "port": int(port.group(1)),
        "identity_file": key.group(1),
        "address": address.group(1),
    }


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is a test dependency")
def test_inventory_host_is_what_ansible_logs_in_with_and_nasplan_connects_with_it(
    make_lab: Callable[[dict[str, Any]], LabState], tmp_path: Path
) -> None:
    state = make_lab(LAB)
    write_layout(state, tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    logged_in = ansible_login(tmp_path, home)
    assert logged_in["user"] == "root" and logged_in["port"] == 22  # the ssh_ names won

    shown = run(
        [sys.executable, "-m", "nasplan", "inventory", "-i", "inventory/hosts", "--host", "nas"],
        tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    host = json.loads(shown.stdout)
    said = {k: host["nasplan"][k] for k in ("address", "port", "user", "identity_file")}
    assert said == logged_in
    assert host["port"] == 8080  # the application's var, shown, not used
    assert host["sources"]["user"].startswith(f"{tmp_path / 'group_vars' / 'all.yml'}:2:")
    assert "keeps strict host-key checking" in shown.stderr

    checked = run(
        [sys.executable, "-m", "nasplan", "apply", "--check", "--format", "json", "plan.yaml"],
        tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout)
    assert not found["problems"], found["problems"]
    assert sorted(found["hosts"]) == ["nas", "ws"]
