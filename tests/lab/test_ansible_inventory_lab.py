"""Ansible inventories as users have them, end to end in the lab: hosts directly under
``all: hosts:`` (the first form of Ansible's guide), an inventory directory (``hosts`` and
``group_vars/``, Ansible's usual layout) and two ``-i`` merged in order; each one validated,
checked (``apply --check``) and applied (a short iperf3 run), and run.json naming every source;
the last through ``--inventory-reader ansible`` (ansible-inventory, a test dependency)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "ansinv-lab",
    "lan": {"prefix": "198.19.164.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
}
PLAN = (
    "name: ansible-inventories\n"
    "tests:\n"
    "  - {id: lan, kind: iperf3, server: nas, client: ws, duration_s: 1, repetitions: 1}\n"
)


def nasplan(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def connection_vars(state: LabState) -> str:
    """The lab's login as Ansible vars (nasplan's own keys beside them: known_hosts, framing)."""
    return (
        "ansible_user: root\n"
        f"ansible_ssh_private_key_file: {state.identity_path}\n"
        f"known_hosts: {state.known_hosts_path}\n"
        "framing: tc\n"
    )


def write_inventories(state: LabState, directory: Path) -> dict[str, list[str]]:
    """The three forms, each as the ``-i`` arguments that name it."""
    nas, ws = state.hosts["nas"].ip, state.hosts["ws"].ip
    indented = "".join(f"    {line}\n" for line in connection_vars(state).splitlines())
    (directory / "all-hosts.yml").write_text(
        f"all:\n  hosts:\n    nas:\n      ansible_host: {nas}\n    ws:\n      ansible_host: {ws}\n"
        f"  vars:\n{indented}"
    )
    inventory_dir = directory / "inventory"
    (inventory_dir / "group_vars").mkdir(parents=True)
    (inventory_dir / "hosts").write_text(
        f"[storage]\nnas ansible_host={nas}\n\n[clients]\nws ansible_host={ws}\n"
    )
    (inventory_dir / "group_vars" / "all.yml").write_text(connection_vars(state))
    (directory / "storage.ini").write_text(f"[storage]\nnas ansible_host={nas}\n")
    (directory / "clients.yml").write_text(
        f"all:\n  vars:\n{indented}  children:\n    clients:\n      hosts:\n"
        f"        ws: {{ansible_host: {ws}}}\n"
    )
    return {
        "all: hosts:": ["-i", "all-hosts.yml"],
        "inventory directory": ["-i", "inventory"],
        "two -i": ["-i", "storage.ini", "-i", "clients.yml"],
        "two -i through ansible-inventory": ["-i", "storage.ini", "-i", "clients.yml"],
    }


@pytest.mark.parametrize(
    "form", ["all: hosts:", "inventory directory", "two -i", "two -i through ansible-inventory"]
)
def test_an_ansible_inventory_validates_checks_and_runs(
    make_lab: Callable[[dict[str, Any]], LabState], tmp_path: Path, form: str
) -> None:
    state = make_lab(LAB)
    (tmp_path / "plan.yaml").write_text(PLAN.replace("tests:", "inventory: unused.yml\ntests:"))
    given = write_inventories(state, tmp_path)[form]
    reader = "ansible" if "ansible-inventory" in form else "nasplan"
    given = [*given, "--inventory-reader", reader]

    validated = nasplan("validate", *given, "plan.yaml", cwd=tmp_path)
    assert (validated.returncode, validated.stdout.strip()) == (0, "ok"), validated.stderr

    checked = nasplan("apply", "--check", "--format", "json", *given, "plan.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout)
    assert not found["problems"], found["problems"]
    assert sorted(found["hosts"]) == ["nas", "ws"], found["hosts"]

    ran = nasplan("apply", *given, "plan.yaml", "--out", "run", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["tests"][0]["status"] == "ok", run["tests"][0]
    assert run["tests"][0]["summary"]["median"] > 0.5e9, run["tests"][0]["summary"]  # 1G LAN
    named = [str((tmp_path / p).resolve()) for p in given[1:-2:2]]
    assert (run["inventory_files"], run["inventory_reader"]) == (named, reader)
    assert run["hosts"]["nas"]["address"] == state.hosts["nas"].ip
    assert run["hosts"]["nas"]["facts"]["hostname"] == "nas"
    # --resume reads the same sources the same way again (a host left out would differ)
    resumed = nasplan("apply", "--resume", "run", cwd=tmp_path)
    said = "nothing to do: every repetition of every test in run ended ok"
    assert (resumed.returncode, resumed.stdout.strip()) == (0, said), resumed.stderr
