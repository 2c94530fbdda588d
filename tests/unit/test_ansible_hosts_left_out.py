"""An Ansible inventory's hosts nasplan cannot use are left out with one warning each, and refused
only where a plan names one; strict host-key checking is kept whatever ssh's arguments say."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.inventory import load_inventory

INVENTORY = """\
[nas]
nas ansible_host=198.18.251.1
ws ansible_host=198.18.251.2 ansible_ssh_common_args='-o StrictHostKeyChecking=no'
[network]
sw1 ansible_connection=network_cli ansible_network_os=ios
[windows]
win1 ansible_connection=winrm ansible_password=s3cret
bad ansible_host='{{ nowhere }}'
"""


def validate(tmp_path: Path, server: str) -> tuple[int, str]:
    (tmp_path / "hosts").write_text(INVENTORY)
    plan = tmp_path / "plan.yaml"
    test = f"{{id: t, kind: iperf3, server: {server}, client: ws}}"
    plan.write_text(f"name: p\ninventory: hosts\ntests:\n  - {test}\n")
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_hosts_the_plan_does_not_name_are_no_reason_to_refuse(tmp_path: Path) -> None:
    code, out = validate(tmp_path, "nas")
    assert code == 0, out
    for host, why in (
        ("sw1", "'network_cli' is not supported"),
        ("win1", "'winrm' is not supported"),
        ("bad", "'nowhere' is not defined"),
    ):
        lines = [line for line in out.splitlines() if f"leaves host {host!r} out" in line]
        assert len(lines) == 1 and why in lines[0] and "hosts:" in lines[0], out
    assert "s3cret" not in out


def test_a_plan_naming_an_unusable_host_is_refused_with_why(tmp_path: Path) -> None:
    code, out = validate(tmp_path, "sw1")
    assert code == 2, out
    assert "hosts:5:5: _meta.hostvars.sw1.ansible_connection: 'network_cli' is not supported" in out
    assert "unknown host" not in out


def test_strict_host_key_checking_is_kept_and_said(tmp_path: Path) -> None:
    code, out = validate(tmp_path, "nas")
    assert code == 0, out
    assert "ws.ansible_ssh_common_args: ignored: nasplan keeps strict host-key checking" in out
    assert "StrictHostKeyChecking=no not used" in out


def test_a_jinja_loop_or_undefined_var_leaves_the_host_out(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text(
        "a ansible_host='{{ x }}' x='{{ y }}' y='{{ x }}'\nb ansible_user='{{ 1 + }}'\nc\n"
    )
    inventory = load_inventory(tmp_path / "hosts")
    assert set(inventory.hosts) == {"c"}
    assert "refers to itself" in inventory.unusable["a"][0]
    assert "cannot render" in inventory.unusable["b"][0]


def test_plain_connection_names_are_the_users_vars(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text(
        "web ansible_host=198.18.251.3 port=8080 user=app address=app.example\n"
        "db nasplan_port=2222 nasplan_user=ops ansible_user=other\n"
    )
    hosts = load_inventory(tmp_path / "hosts").hosts
    assert (hosts["web"].address, hosts["web"].port, hosts["web"].user) == (
        "198.18.251.3",
        None,
        None,
    )
    assert hosts["web"].vars == {"port": 8080, "user": "app", "address": "app.example"}
    assert (hosts["db"].port, hosts["db"].user) == (2222, "ops")  # nasplan's own name wins


def test_a_network_change_on_an_unusable_host_says_why(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text(INVENTORY)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: p\ninventory: hosts\ninterfaces:\n  - {host: sw1, interface: eth1, mtu: 9000}\n"
        "tests:\n  - {id: t, kind: iperf3, server: nas, client: ws}\n"
    )
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exit_code == 2, result.output
    assert "_meta.hostvars.sw1.ansible_connection: 'network_cli' is not supported" in result.output
    assert "unknown host" not in result.output
