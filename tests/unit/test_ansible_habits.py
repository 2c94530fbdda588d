"""Habits Ansible users bring: a plan's ``vars_files:`` read as a play's, a warning for an
``-e`` var no template uses (a typo would otherwise pass in silence)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from keyfiles import write_private_key

from nasplan.cli import main
from nasplan.input.plan import load_plan

PLAN = """\
name: habits
inventory: hosts
vars: {secs: 1, size: 1MiB}
VARS_FILES
tests:
  - {id: t, kind: iperf3, server: nas1, client: ws1, duration_s: "{{ vars.secs }}"}
"""


def write(tmp_path: Path, vars_files: str = "") -> Path:
    (tmp_path / "hosts").write_text(
        "nas1 ansible_host=198.18.254.11\nws1 ansible_host=198.18.254.12\n"
    )
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("VARS_FILES\n", vars_files))
    return plan


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_vars_files_are_read_over_the_plans_vars_and_under_e(tmp_path: Path) -> None:
    (tmp_path / "vars").mkdir()
    (tmp_path / "vars" / "a.yml").write_text("secs: 3\n")
    (tmp_path / "vars" / "b.json").write_text('{"secs": 4}')
    plan = write(tmp_path, "vars_files: [vars/a.yml, vars/b.json]\n")
    assert load_plan(plan).resolved["tests"][0]["duration_s"] == 4
    assert load_plan(plan, extra_vars={"secs": 2}).resolved["tests"][0]["duration_s"] == 2
    code, out, _ = invoke("validate", str(plan))
    assert (code, out.strip()) == (0, "ok")


def test_a_missing_vars_file_is_named_at_its_line(tmp_path: Path) -> None:
    plan = write(tmp_path, "vars_files:\n  - nowhere.yml\n")
    code, _, err = invoke("validate", str(plan))
    assert code == 2
    assert f"{plan}:5:5: vars_files[0]: " in err and "nowhere.yml: no such file" in err


def test_an_extra_var_no_template_uses_is_warned_about(tmp_path: Path) -> None:
    plan = write(tmp_path)
    code, out, err = invoke("validate", str(plan), "-e", "sec=2", "-e", "secs=2")
    assert code == 0
    said = [line for line in (out + err).splitlines() if line.startswith("warning: -e")]
    assert said == ["warning: -e sec: no template of the plan uses vars.sec (did you mean secs?)"]
    code, out, err = invoke("validate", str(plan), "-e", "secs=2")
    assert "warning: -e" not in out + err
    # a shared vars file holds vars for other plays too: not warned about
    (tmp_path / "shared.yml").write_text("sec: 2\nbackup_dir: /srv\n")
    code, out, err = invoke("validate", str(plan), "-e", f"@{tmp_path / 'shared.yml'}")
    assert code == 0 and "warning: -e" not in out + err


def test_user_and_private_key_are_the_login_where_the_inventory_sets_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Ansible's -u and --private-key: under the inventory's ansible_user and key."""
    (tmp_path / "hosts").write_text(
        "nas1 ansible_host=198.18.254.11 ansible_user=admin\nws1 ansible_host=198.18.254.12\n"
    )
    key = tmp_path / "id_lab"
    write_private_key(key)
    monkeypatch.chdir(tmp_path)
    given = ("-i", "hosts", "-u", "ops", "--private-key", str(key))
    code, out, err = invoke("inventory", *given, "--host", "ws1")
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["nasplan"]["user"], shown["nasplan"]["identity_file"]) == ("ops", str(key))
    assert (shown["sources"]["user"], shown["sources"]["identity_file"]) == (
        "-u",
        "--private-key",
    )
    code, out, err = invoke("inventory", *given, "--host", "nas1")
    assert json.loads(out)["nasplan"]["user"] == "admin"  # the inventory's wins
    code, out, err = invoke("inventory", "-i", "hosts", "-u", "-oProxyCommand=id", "--list")
    assert code == 2 and "-u: '-oProxyCommand=id' is not valid" in err


def test_ansibles_own_login_defaults_apply_to_an_ansible_inventory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hosts").write_text("nas1 ansible_host=198.18.254.11\n")
    (tmp_path / "ansible.cfg").write_text("[defaults]\nremote_user = deploy\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.delenv("ANSIBLE_REMOTE_USER", raising=False)
    code, out, _ = invoke("inventory", "-i", "hosts", "--host", "nas1")
    assert code == 0
    assert json.loads(out)["nasplan"]["user"] == "deploy"
    assert json.loads(out)["sources"]["user"].endswith("ansible.cfg: [defaults] remote_user")
    monkeypatch.setenv("ANSIBLE_REMOTE_USER", "envuser")
    _, out, _ = invoke("inventory", "-i", "hosts", "--host", "nas1")
    assert json.loads(out)["nasplan"]["user"] == "envuser"
    _, out, _ = invoke("inventory", "-i", "hosts", "-u", "cli", "--host", "nas1")
    assert json.loads(out)["nasplan"]["user"] == "cli"


def test_a_plan_without_inventory_takes_ansibles_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = write(tmp_path)
    plan.write_text(plan.read_text().replace("inventory: hosts\n", ""))
    monkeypatch.setenv("ANSIBLE_INVENTORY", str(tmp_path / "hosts"))
    code, out, err = invoke("validate", str(plan))
    assert (code, out.strip()) == (0, "ok"), err
    monkeypatch.delenv("ANSIBLE_INVENTORY")
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("validate", str(plan))
    assert code == 2 and "inventory is required (or -i FILE, ANSIBLE_INVENTORY" in err
