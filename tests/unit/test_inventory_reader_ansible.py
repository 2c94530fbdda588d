"""``--inventory-reader ansible`` (and a plan's ``inventory_reader: ansible``): the inventory as
``ansible-inventory --list`` gives it, so what nasplan's own reader refuses by name (a vault-
encrypted vars file, an inventory plugin, a script) works; without ansible-core, exit 2 saying
so. Runs the real ansible-inventory (ansible-core is a test dependency)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ansible"
BIN = Path(sys.executable).parent


@pytest.fixture
def ansible_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Ansible with its defaults only, its state under tmp_path, run from tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "ansible.cfg").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANSIBLE_CONFIG", str(home / "ansible.cfg"))
    monkeypatch.setenv("ANSIBLE_LOCAL_TEMP", str(home / "tmp"))
    monkeypatch.chdir(tmp_path)
    return home


def plan(directory: Path, inventory: str = "hosts", extra: str = "") -> Path:
    path = directory / "plan.yaml"
    test = "{id: t, kind: iperf3, server: nas1, client: ws1}"
    path.write_text(f"name: p\ninventory: {inventory}\n{extra}tests:\n  - {test}\n")
    return path


def validate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_a_vault_encrypted_vars_file_is_read_through_ansible(
    tmp_path: Path, ansible_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hosts").write_text("[nas]\nnas1\n[ws]\nws1 ansible_host=198.18.121.11\n")
    (tmp_path / "group_vars").mkdir()
    secret = tmp_path / "group_vars" / "nas.yml"
    secret.write_text("ansible_host: 198.18.121.10\nansible_user: backup\n")
    password = ansible_home / "vault-password"
    password.write_text("correct horse\n")
    vault = [str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(password)]
    subprocess.run(
        [*vault, str(secret)],
        check=True,
        capture_output=True,
    )
    assert secret.read_text().startswith("$ANSIBLE_VAULT;")
    code, out = validate(str(plan(tmp_path)))
    assert code == 2
    assert f"{secret}:1:1: encrypted with ansible-vault" in out
    assert "--inventory-reader ansible" in out
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(password))
    code, out = validate("--inventory-reader", "ansible", str(plan(tmp_path)))
    assert (code, out.strip()) == (0, "ok")
    # the plan may ask for it itself; the command line still wins
    code, out = validate(str(plan(tmp_path, extra="inventory_reader: ansible\n")))
    assert (code, out.strip()) == (0, "ok")
    code, out = validate(
        "--inventory-reader", "nasplan", str(plan(tmp_path, extra="inventory_reader: ansible\n"))
    )
    assert code == 2 and "encrypted with ansible-vault" in out
    # an inline !vault value (the password from the environment, as above): Ansible prints it
    # still encrypted, so neither reader can use it
    inline = subprocess.run(
        [str(BIN / "ansible-vault"), "encrypt_string", "backup", "--name", "ansible_user"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (tmp_path / "inline.yml").write_text(
        "all:\n  hosts:\n    nas1:\n      ansible_host: 198.18.121.10\n"
        + "".join(f"      {line}\n" for line in inline.splitlines())
        + "    ws1: {ansible_host: 198.18.121.11}\n"
    )
    code, out = validate(str(plan(tmp_path, inventory="inline.yml")))
    assert code == 2 and "inline.yml:5:21: YAML syntax error: a value encrypted with" in out
    code, out = validate(
        "--inventory-reader", "ansible", str(plan(tmp_path, inventory="inline.yml"))
    )
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"ansible-inventory -i {tmp_path / 'inline.yml'} --list:" in out
    assert "_meta.hostvars.nas1.ansible_user: an inline !vault value" in out
    assert "backup" not in out


def test_an_inventory_plugin_and_a_script_are_read_through_ansible(
    tmp_path: Path, ansible_home: Path
) -> None:
    (tmp_path / "hosts").write_text(
        "nas1 ansible_host=198.18.121.10\nws1 ansible_host=198.18.121.11\n"
    )
    constructed = tmp_path / "constructed.yml"
    constructed.write_text(
        "plugin: ansible.builtin.constructed\n"
        "groups:\n  storage: inventory_hostname.startswith('nas')\n"
    )
    args = ["-i", str(tmp_path / "hosts"), "-i", str(constructed), str(plan(tmp_path))]
    code, out = validate(*args)
    assert code == 2 and f"{constructed}:1:9: plugin: an inventory plugin's configuration" in out
    listed = ["apply", "--list-tests", "--inventory-reader", "ansible"]
    # the group the plugin made is one --limit knows: nas1 is in it, ws1 is not
    result = CliRunner().invoke(main, [*listed, "-l", "storage,ws1", *args])
    assert result.exit_code == 0 and "t" in result.output.split(), result.output
    result = CliRunner().invoke(main, [*listed, "-l", "storage", *args])
    assert result.exit_code == 2 and "no test of the plan is left" in result.output
    # Ansible's own script inventory (its integration test's), run where its JSON lies
    script_dir = FIXTURES / "integration" / "inventory_script"
    os.chdir(script_dir)
    script_plan = plan(tmp_path, inventory=str(script_dir / "inventory.sh"))
    code, out = validate(str(script_plan))
    assert code == 2 and "an inventory script (executable): nasplan does not run it" in out
    code, out = validate("--inventory-reader", "ansible", str(script_plan))
    assert code == 2 and "unknown host 'nas1'" in out  # read: its hosts are VMware's
    assert "DC0_H0_VM0_265104de-1472-547c-b873-6dc7883fb6cb" in out


def test_without_ansible_core_the_reader_is_refused_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hosts").write_text("nas1\nws1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python3"))
    code, out = validate("--inventory-reader", "ansible", str(plan(tmp_path)))
    assert code == 2
    assert out.startswith("nasplan: --inventory-reader ansible: ansible-inventory is not installed")
    assert len(out.strip().splitlines()) == 1


def test_what_ansible_cannot_read_is_one_line_with_its_error(
    tmp_path: Path, ansible_home: Path
) -> None:
    (tmp_path / "hosts").write_text("[web\nnas1\n")
    code, out = validate("--inventory-reader", "ansible", str(plan(tmp_path)))
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    shown = f"ansible-inventory -i {tmp_path / 'hosts'} --playbook-dir {tmp_path} --list: exit "
    assert out.startswith(f"nasplan: {shown}"), out
    assert "ERROR" in out


def test_a_vault_encrypted_inventory_file_is_named_as_such(
    tmp_path: Path, ansible_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("[nas]\nnas1 ansible_host=198.18.121.10\nws1 ansible_host=198.18.121.11\n")
    password = ansible_home / "vault-password"
    password.write_text("correct horse\n")
    subprocess.run(
        [str(BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(password), str(hosts)],
        check=True,
        capture_output=True,
    )
    code, out = validate(str(plan(tmp_path)))
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"{hosts}:1:1: an inventory encrypted with ansible-vault" in out
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(password))
    code, out = validate("--inventory-reader", "ansible", str(plan(tmp_path)))
    assert (code, out.strip()) == (0, "ok")


def test_a_problem_read_through_ansible_names_the_file_that_set_it(
    tmp_path: Path, ansible_home: Path
) -> None:
    (tmp_path / "hosts").write_text("[nas]\nnas1 ansible_host=198.18.121.10\nws1\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "nas.yml").write_text("ansible_port: 22\nansible_user: 'a b'\n")
    code, out = validate("--inventory-reader", "ansible", str(plan(tmp_path)))
    assert code == 2, out
    assert f"{tmp_path / 'group_vars' / 'nas.yml'}:2:15: ansible_user: 'a b' is not valid" in out
    assert "--list:" not in out
