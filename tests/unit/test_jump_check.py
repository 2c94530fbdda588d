"""Jump hosts checked at validate (nasplan/input/jump_check.py): exit 2's one line, before
anything connects, for a host that is its own jump host, hops that loop through the named
ssh_config, and a ProxyCommand nasplan would not use beside a jump host."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nasplan.errors import InputError
from nasplan.input.plan import load_plan

SSH_CONFIG = """\
Host jump
  HostName 198.18.44.30
  ProxyJump gw
Host gw
  ProxyJump jump
Host far
  ProxyJump edge
Host nas2
  ProxyCommand nc %h %p
"""


def _validate(tmp_path: Path, nas: dict[str, object]) -> list[str]:
    (tmp_path / "sshc").write_text(SSH_CONFIG)
    (tmp_path / "sshc").chmod(0o600)
    hosts = {"nas": {"address": "198.18.44.10", **nas}, "ws": {"address": "198.18.44.20"}}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump({"hosts": hosts}))
    test = {"id": "t", "kind": "iperf3", "server": "nas", "client": "ws"}
    plan = {"name": "j", "inventory": "inv.yaml", "tests": [test]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    try:
        load_plan(tmp_path / "plan.yaml")
    except InputError as exc:
        return exc.messages
    return []


@pytest.mark.parametrize(
    ("nas", "said"),
    [
        ({"proxy_jump": "nas"}, "inv.yaml:3:5: hosts.nas.proxy_jump: nas is its own jump host"),
        (
            {"proxy_jump": "root@198.18.44.10:22"},
            "hosts.nas.proxy_jump: nas is its own jump host (root@198.18.44.10:22)",
        ),
        (
            {"proxy_jump": "jump", "ssh_config": "sshc"},
            "hosts.nas.proxy_jump: the jump hosts to nas loop at gw (ssh_config)",
        ),
        (
            {"address": "nas2", "proxy_jump": "admin@198.18.44.40", "ssh_config": "sshc"},
            "sshc:9:3: ssh_config: nas: ProxyCommand is not used: nasplan goes through the "
            "jump host (admin@198.18.44.40)",
        ),
    ],
)
def test_a_way_in_that_cannot_work_is_refused_at_validate(
    tmp_path: Path, nas: dict[str, object], said: str
) -> None:
    (line,) = _validate(tmp_path, nas)
    assert said in line, line


def test_a_chain_that_ends_validates(tmp_path: Path) -> None:
    assert _validate(tmp_path, {"proxy_jump": "far", "ssh_config": "sshc"}) == []
    assert _validate(tmp_path, {"address": "nas2", "ssh_config": "sshc"}) == []  # its own way


def test_the_user_s_own_ssh_config_is_read_as_the_connection_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ssh_config named: the loop in ~/.ssh/config is found at validate, at its line."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh/config").write_text(SSH_CONFIG)
    monkeypatch.setenv("HOME", str(home))
    (line,) = _validate(tmp_path, {"proxy_jump": "jump"})
    assert "hosts.nas.proxy_jump: the jump hosts to nas loop at gw (ssh_config)" in line, line
    (line,) = _validate(tmp_path, {"address": "nas2", "proxy_jump": "admin@198.18.44.40"})
    assert line.startswith(f"{home}/.ssh/config:9:3: ssh_config: nas: ProxyCommand is not used")


@pytest.mark.parametrize("broken", ["directory", "cut short", "binary"])
def test_a_user_s_ssh_config_that_cannot_be_read_never_fails_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    config = home / ".ssh/config"
    if broken == "directory":
        config.mkdir()
    else:
        config.write_bytes(b"Host\n" if broken == "cut short" else b"\x00\xff\xfe" * 100)
    monkeypatch.setenv("HOME", str(home))
    assert _validate(tmp_path, {"proxy_jump": "jump"}) == []
    (said,) = load_plan(tmp_path / "plan.yaml").inventory.warnings  # one line, a warning
    assert said.startswith(f"{config}") and said.endswith(" (jump hosts not checked against it)")
    assert "\n" not in said and len(said) <= 300
