"""``nasplan inventory --graph`` and ``--host`` against ``ansible-inventory``'s own, run from the
same directory (its group_vars/ and host_vars/ count, as the playbook directory's), and what
``--host`` adds: the connection nasplan will make, and the file and line that set each part.
``--list`` is checked on the whole corpus in test_ansible_differential.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.inventory_view import hidden
from tests.unit.test_ansible_differential import BATCH, FIXTURES, ansible_environment, plain

CASES = ["guide/nested.yml", "guide/group-vars.ini", "rules/vars-dirs", "guide/groups"]


def nasplan(*args: str) -> tuple[int, str]:
    """Exit code and standard output (or, failing, the error lines)."""
    result = CliRunner().invoke(main, ["inventory", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout if result.exit_code == 0 else result.stderr


def ansible_inventory(cwd: Path, home: Path, argvs: list[list[str]]) -> list[str]:
    """What each ``ansible-inventory ARGV`` prints, run from ``cwd``."""
    jobs = [
        {
            "argv": ["ansible-inventory", *argv],
            "cwd": str(cwd),
            "out": str(home / f"out{i}"),
            "err": str(home / f"err{i}"),
        }
        for i, argv in enumerate(argvs)
    ]
    subprocess.run(
        [sys.executable, str(BATCH)],
        input=json.dumps(jobs),
        env=ansible_environment(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [Path(str(job["out"])).read_text() for job in jobs]


@pytest.mark.parametrize("source", CASES)
def test_graph_and_host_are_ansible_inventorys(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "playbook"
    home.mkdir()
    cwd.mkdir()
    # the playbook directory's vars count over the inventory's, for both
    (cwd / "group_vars").mkdir()
    (cwd / "group_vars" / "all.yml").write_text("from_playbook_dir: 1\nntp_server: pb.example\n")
    monkeypatch.chdir(cwd)
    path = str(FIXTURES / source)
    code, graph = nasplan("-i", path, "--graph")
    assert code == 0, graph
    code, listed = nasplan("-i", path, "--list")
    hosts = sorted(json.loads(listed)["_meta"]["hostvars"])
    expected = ansible_inventory(
        cwd, home, [["-i", path, "--graph"], *(["-i", path, "--host", h] for h in hosts)]
    )
    assert graph.strip() == expected[0].strip()
    for host, ansible_says in zip(hosts, expected[1:], strict=True):
        code, out = nasplan("-i", path, "--host", host)
        assert code == 0, out
        shown: dict[str, Any] = json.loads(out)
        shown.pop("nasplan"), shown.pop("sources", None), shown.pop("unusable", None)
        assert shown == hidden(plain(json.loads(ansible_says))), host
        assert shown["from_playbook_dir"] == 1


def test_host_says_what_nasplan_will_connect_to_and_where_each_part_was_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts").write_text(
        "[nas]\nnas1 ansible_host=198.18.252.1 ansible_ssh_port=2222 port=8080\n"
        "sw ansible_connection=network_cli\n"
    )
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "nas.yml").write_text(
        "ansible_user: root\nansible_ssh_private_key_file: keys/lab\n"
        "volumes: {pool: {path: /mnt/pool}}\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out = nasplan("-i", "inventory/hosts", "--host", "nas1")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["nasplan"] == {
        "address": "198.18.252.1",
        "port": 2222,
        "user": "root",
        "identity_file": str(tmp_path / "keys" / "lab"),
        "connection": "ssh",
        "platform": "auto",
        "volumes": {
            "pool": {
                "path": "/mnt/pool",
                "share": None,
                "export": None,
                "description": None,
                "bytes_per_second": None,
            }
        },
    }
    assert shown["port"] == 8080  # the application's, not the login's
    sources = shown["sources"]
    assert sources["address"].startswith("inventory/hosts:2:6: ")
    assert sources["port"].startswith("inventory/hosts:2:32: ")
    assert sources["user"].startswith(f"{tmp_path / 'group_vars' / 'nas.yml'}:1:15: ")
    assert sources["identity_file"].startswith(f"{tmp_path / 'group_vars' / 'nas.yml'}:2:31: ")
    code, out = nasplan("-i", "inventory/hosts", "--host", "sw")
    shown = json.loads(out)
    assert shown["nasplan"] is None and "'network_cli' is not supported" in shown["unusable"][0]


def test_one_view_is_asked_for_and_a_missing_host_is_named(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("nas1\n")
    code, out = nasplan("-i", str(tmp_path / "hosts"))
    assert code == 2 and "give one of --list, --graph [GROUP], --host NAME" in out
    code, out = nasplan("-i", str(tmp_path / "hosts"), "--host", "nope")
    assert code == 2 and "no host 'nope' (hosts: nas1)" in out


def test_the_default_inventory_is_ansibles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "hosts").write_text("[nas]\nfrom-cfg\n")
    (tmp_path / "ansible.cfg").write_text("[defaults]\ninventory = inv/hosts ; a comment\n")
    (tmp_path / "env-hosts").write_text("from-env\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANSIBLE_INVENTORY", raising=False)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    code, out = nasplan("--graph")
    assert code == 0 and "from-cfg" in out, out
    monkeypatch.setenv("ANSIBLE_INVENTORY", str(tmp_path / "env-hosts"))
    code, out = nasplan("--graph")
    assert code == 0 and "from-env" in out and "from-cfg" not in out, out


def test_apply_list_hosts_names_where_each_host_is_reached(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text(
        "[nas]\nnas1 ansible_host=198.18.252.1 ansible_user=root ansible_ssh_port=2222\n"
        "ws1 ansible_host=198.18.252.2\nspare ansible_host=198.18.252.3\n"
        "sw ansible_connection=network_cli\n"
    )
    (tmp_path / "plan.yaml").write_text(
        "name: p\ninventory: hosts\ntests:\n"
        "  - {id: a, kind: iperf3, server: nas1, client: ws1}\n"
        "  - {id: b, kind: disk, host: ws1, path: /tmp}\n"
    )
    result = CliRunner().invoke(main, ["apply", str(tmp_path / "plan.yaml"), "--list-hosts"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "  plan p: hosts (2):",
        "    nas1  root@198.18.252.1:2222",
        "    ws1  198.18.252.2",
    ]
    assert "leaves host 'sw' out" in result.stderr
    result = CliRunner().invoke(
        main, ["apply", str(tmp_path / "plan.yaml"), "--list-hosts", "--tests", "b"]
    )
    assert result.stdout.splitlines() == ["  plan p: hosts (1):", "    ws1  198.18.252.2"]
