"""Inventories: native form, Ansible form, precedence, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.input.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "inventory.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_native_example_resolves_precedence_and_interfaces() -> None:
    inventory = load_inventory(ROOT / "inventory/home.yaml")
    qnap, ws = inventory.hosts["qnap"], inventory.hosts["workstation"]
    assert qnap.user == "admin" and ws.user == "me"  # host over all-vars
    assert qnap.platform_hint == "qnap"  # from the group's vars
    assert ws.platform_hint == "ubuntu"
    assert qnap.interfaces["ten"].speed_bits_per_second == 10_000_000_000
    assert qnap.interfaces["lan"].speed_bits_per_second == 2_500_000_000
    assert qnap.interfaces["ten"].address == "198.18.2.109"
    assert qnap.interfaces["ten"].prefix_len == 24
    assert qnap.identity_file == Path("~/.ssh/id_ed25519").expanduser()
    assert inventory.groups["nas"] == ("qnap",)
    assert qnap.volumes["ssd"].share == "fast" and not ws.volumes


def test_precedence_host_over_host_vars_over_group_over_all(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
vars: {user: a, port: 22, colour: all}
groups:
  first: {hosts: [h], vars: {user: b, colour: first}}
  second: {hosts: [h], vars: {colour: second}}
hosts:
  h:
    port: 2222
    vars: {user: c}
  other: {}
""",
    )
    inventory = load_inventory(path)
    host = inventory.hosts["h"]
    assert host.user == "c"
    assert host.port == 2222
    assert host.vars["colour"] == "second"  # later group wins
    other = inventory.hosts["other"]
    assert (other.user, other.port, other.address) == ("a", 22, "other")


def test_relative_paths_are_relative_to_the_inventory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = write(tmp_path / "sub", "vars: {identity_file: key, known_hosts: kh}\nhosts: {h: {}}\n")
    host = load_inventory(path).hosts["h"]
    assert host.identity_file == tmp_path / "sub" / "key"
    assert host.known_hosts == tmp_path / "sub" / "kh"


def test_ansible_inventory_read_unchanged() -> None:
    inventory = load_inventory(ROOT / "inventory/ansible-hosts.yaml")
    syno, titan = inventory.hosts["syno"], inventory.hosts["titan"]
    assert syno.address == "198.18.129.3"
    assert syno.user == "admin"
    assert syno.platform_hint == "synology"
    assert syno.interfaces["p2p"].speed_bits_per_second == 10_000_000_000
    assert (titan.user, titan.port) == ("dan", 2222)
    assert titan.identity_file == Path("~/.ssh/id_ed25519").expanduser()
    assert titan.interfaces["p2p"].name == "enp4s0f4u1"
    assert set(inventory.groups) >= {"nas", "workstations"}
    assert syno.groups == ("nas",)


def test_unknown_key_is_an_error_with_line_and_path(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  nas:\n    adress: 198.18.0.10\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    (message,) = info.value.messages
    assert message.startswith(f"{path}:3:5: hosts.nas.adress: unknown key 'adress'")


def test_bad_platform_and_speed_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "hosts:\n  nas:\n    platform: amigaos\n    interfaces:\n"
        "      lan: {name: eth0, speed: fast}\n",
    )
    with pytest.raises(InputError) as info:
        load_inventory(path)
    text = "\n".join(info.value.messages)
    assert f"{path}:3:15: hosts.nas.platform:" in text
    assert "hosts.nas.interfaces.lan.speed" in text


def test_group_naming_an_unknown_host(tmp_path: Path) -> None:
    path = write(tmp_path, "groups:\n  nas: {hosts: [nas, ghost]}\nhosts:\n  nas: {}\n")
    with pytest.raises(InputError, match=r":2:\d+: groups.nas.hosts\[1\]: unknown host 'ghost'"):
        load_inventory(path)


def test_yaml_syntax_error_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  nas: {address: [\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    assert len(info.value.messages) == 1
    assert info.value.messages[0].startswith(f"{path}:")
    assert "YAML syntax error" in info.value.messages[0]


def test_duplicate_key_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  nas: {}\n  nas: {}\n")
    with pytest.raises(InputError, match="duplicate key 'nas'"):
        load_inventory(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_inventory(tmp_path / "nope.yaml")
