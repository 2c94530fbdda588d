"""Ansible inventories: INI, ``ansible-inventory --list`` JSON, host_vars/ and group_vars/,
checked against what real ansible-core printed for the same files (tests/fixtures/ansible/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.input.ansible_ini import parse_value
from nasplan.input.ansible_patterns import expand_range, split_port
from nasplan.input.inventory import Inventory, load_inventory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ansible"
# (the inventory Ansible read, the JSON it printed)
CASES = [
    ("guide/basic.ini", "guide/basic.list.json"),
    ("guide/ranges-and-vars.ini", "guide/ranges-and-vars.list.json"),
    ("guide/groups/hosts", "guide/groups.list.json"),
]
CONNECTION = {"ansible_host", "ansible_port", "ansible_user", "ansible_connection"}


def ansible_groups(listing: dict[str, Any]) -> dict[str, set[str]]:
    """Each group of a --list output -> its hosts, its children's included (as Ansible's)."""

    def hosts(name: str) -> set[str]:
        group = listing.get(name, {})
        found = set(group.get("hosts", []))
        for child in group.get("children", []):
            found |= hosts(child)
        return found

    return {name: hosts(name) for name in listing if name not in ("_meta", "all")}


def assert_as_ansible(inventory: Inventory, listing: dict[str, Any]) -> None:
    hostvars = listing["_meta"]["hostvars"]
    expected_hosts = set(hostvars) | set().union(*ansible_groups(listing).values())
    assert set(inventory.hosts) == expected_hosts
    for name, host in inventory.hosts.items():
        vars_ = hostvars.get(name, {})
        assert host.address == vars_.get("ansible_host", name)
        assert host.port == vars_.get("ansible_port")
        assert host.user == vars_.get("ansible_user")
        assert dict(host.vars) == {k: v for k, v in vars_.items() if k not in CONNECTION}
    for group, members in ansible_groups(listing).items():
        assert set(inventory.groups[group]) == members, group


@pytest.mark.parametrize(("source", "listing"), CASES)
def test_ini_inventory_reads_as_ansible_reads_it(source: str, listing: str) -> None:
    expected = json.loads((FIXTURES / listing).read_text())
    assert_as_ansible(load_inventory(FIXTURES / source), expected)


@pytest.mark.parametrize(("source", "listing"), CASES)
def test_ansible_inventory_list_json_reads_the_same(source: str, listing: str) -> None:
    expected = json.loads((FIXTURES / listing).read_text())
    assert_as_ansible(load_inventory(FIXTURES / listing), expected)


def test_export_json_with_group_vars_resolves_by_precedence() -> None:
    expected = json.loads((FIXTURES / "guide/groups.list.json").read_text())
    inventory = load_inventory(FIXTURES / "guide/groups.export.json")
    host2 = inventory.hosts["host2"]
    # southeast's escape_pods=2 over all's 1; raleigh's file and host2's own files on top
    assert host2.vars["escape_pods"] == 2
    assert host2.vars["halon_system_timeout"] == 30  # a :vars value read as a literal
    assert host2.groups == ("usa", "southeast", "atlanta", "raleigh")
    assert inventory.hosts["host4"].vars["escape_pods"] == 1
    assert set(inventory.groups["usa"]) == ansible_groups(expected)["usa"]


def test_host_vars_directory_and_group_vars_files_beside_an_ini_inventory() -> None:
    inventory = load_inventory(FIXTURES / "guide/groups/hosts")
    host2, host3 = inventory.hosts["host2"], inventory.hosts["host3"]
    assert host2.vars["ntp_server"] == "host2.ntp.example.org"  # host_vars/host2/ over groups
    assert host2.port == 2222 and host2.user == "deploy"  # host_vars, group_vars/all.yaml
    assert host3.vars["ntp_server"] == "acme.example.org"  # group_vars/raleigh over all:vars
    assert inventory.hosts["host1"].vars["ntp_server"] == "ntp.example.com"


def test_ranges_ports_and_literals() -> None:
    assert expand_range("www[01:03].lan") == ["www01.lan", "www02.lan", "www03.lan"]
    assert expand_range("db-[a:c]") == ["db-a", "db-b", "db-c"]
    assert expand_range("h[1:5:2]x[a:b]") == ["h1xa", "h1xb", "h3xa", "h3xb", "h5xa", "h5xb"]
    with pytest.raises(ValueError, match="equal-length"):
        expand_range("h[01:100]")
    with pytest.raises(ValueError, match="more than"):
        expand_range("h[0:99999999]")
    assert split_port("nas:2222") == ("nas", 2222)
    assert split_port("[fe80::1]:22") == ("fe80::1", 22)
    assert split_port("fe80::1") == ("fe80::1", None)
    assert split_port("www[01:50].lan") == ("www[01:50].lan", None)
    assert parse_value("22") == 22 and parse_value("'22'") == "22"
    assert parse_value("FALSE") == "FALSE" and parse_value("False") is False
    assert parse_value("[1, (2, 3)]") == [1, [2, 3]] and parse_value("a b") == "a b"


def write(tmp_path: Path, text: str, name: str = "hosts") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[web]\nh1 port\n", ":2:4: expected key=value", "got: port"),
        ("[web\nh1\n", ":1:1: ", ""),
        ("[web group]\nh1\n", ":1:1: invalid section", ""),
        ("[web:hostz]\nh1\n", ":1:1: section [web:hostz] has unknown type", ""),
        ("[web:vars]\nx=1\n", ":1:1: [web:vars] names undefined group 'web'", ""),
        ("[all:children]\nnowhere\n", ":2:1: [all:children] includes undefined group", ""),
        ("[web]\nh1 x='unclosed\n", ":2:1: cannot split the host line", ""),
        ("[web]\nh1:\n", ":2:1: host 'h1:' ends in ':'", ""),
        ("h1:\n", ":1:1: (root): the Ansible inventory lists no hosts", ""),
        ("[web]\nh[0:99999999]\n", ":2:1: host range", "more than 10000 hosts"),
    ],
)
def test_a_bad_ini_line_is_refused_at_its_line(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_inventory(write(tmp_path, text))
    assert where in str(caught.value) and message in str(caught.value)


def validate(tmp_path: Path, inventory: str, name: str = "hosts") -> tuple[int, str]:
    write(tmp_path, inventory, name)
    plan = tmp_path / "plan.yaml"
    test = "{id: t, kind: iperf3, server: nas, client: ws}"
    plan.write_text(f"name: p\ninventory: {name}\ntests:\n  - {test}\n")
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("line", "where", "words"),
    [
        ("ansible_become_password=s3cret", ":2:21: ", "never takes a secret"),
        ("ansible_ssh_pass=s3cret", ":2:21: ", "log in with a key"),
        ("ansible_connection=docker", ":2:21: ", "'docker' is not supported"),
        ("ansible_connection=winrm", ":2:21: ", "'winrm' is not supported"),
        (
            "ansible_ssh_common_args='-o ForwardAgent=yes -o ProxyJump=x'",
            ":2:21: ",
            "not '-o ForwardAgent=yes': put it in an ssh_config",
        ),
        (
            "ansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p j\"'",
            ":2:21: ",
            "use -o ProxyJump=[user@]jump[:port]",
        ),
        ("ansible_ssh_common_args='-o ProxyJump=-oProxyCommand=id'", ":2:21: ", "not a ProxyJump"),
        ("ansible_ssh_extra_args=-v", ":2:21: ", "takes only a jump host from ssh's arguments"),
        ("ansible_ssh_args='-o ProxyJump=x'", ":2:21: ", "nasplan cannot pass options to ssh"),
        ("ansible_become_method=su", ":2:21: ", "sudo only"),
        ('ansible_host="a;b"', ":2:21: _meta.hostvars.nas.ansible_host", "is not valid"),
        ("ansible_host=-oProxyCommand=id", ":2:21: ", "is not valid: expected"),
        ("ansible_user='root;id'", ":2:21: _meta.hostvars.nas.ansible_user", "is not valid"),
    ],
)
def test_ansible_vars_nasplan_cannot_honour_are_refused_by_name_at_their_line(
    tmp_path: Path, line: str, where: str, words: str
) -> None:
    code, out = validate(tmp_path, f"[nas]\nnas ansible_port=22 {line}\nws\n")
    assert code == 2, out
    key = line.split("=", 1)[0]
    assert f"hosts{where}" in out and f"_meta.hostvars.nas.{key}: " in out and words in out, out
    assert "s3cret" not in out


def test_a_secret_in_group_vars_is_refused_at_its_file(tmp_path: Path) -> None:
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "nas.yml").write_text("ok: 1\nansible_become_pass: x\n")
    code, out = validate(tmp_path, "[nas]\nnas\nws\n")
    assert code == 2
    assert "group_vars/nas.yml:2:22: ansible_become_pass: nasplan never takes a secret" in out


def test_ignored_ansible_vars_are_warned_about_by_name(tmp_path: Path) -> None:
    inventory = (
        "[nas]\nnas ansible_python_interpreter=/usr/bin/python3 ansible_connection=ssh\nws\n"
        "[all:vars]\nansible_become=true\nansible_foo=1\n"
    )
    code, out = validate(tmp_path, inventory)
    assert code == 0, out
    assert "warning: " in out and "hosts:2:5: " in out
    assert "_meta.hostvars.nas.ansible_python_interpreter: ignored: nasplan runs no Python" in out
    assert "hosts:5:1: all.vars.ansible_become: ignored: nasplan uses sudo" in out
    assert (
        "all.vars.ansible_foo: ignored: nasplan does not use it" in out
        and "ansible_connection" not in out
    )
    assert out.strip().splitlines()[-1] == "ok"


def test_yaml_inventory_group_vars_and_precedence(tmp_path: Path) -> None:
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("ansible_user: base\ncolour: all\n")
    (tmp_path / "group_vars" / "b.yml").write_text("colour: b-file\n")
    (tmp_path / "host_vars" / "h.json").write_text('{"ansible_port": 2200}')
    inventory = write(
        tmp_path,
        "all:\n  children:\n    b: {hosts: {h: {}}, vars: {colour: b}}\n"
        "    a: {hosts: {h: {}}, vars: {colour: a}}\n    c: {hosts: {other: {}}}\n",
        "inventory.yaml",
    )
    loaded = load_inventory(inventory)
    host = loaded.hosts["h"]
    assert host.vars["colour"] == "b-file" and host.user == "base" and host.port == 2200
    assert loaded.hosts["other"].vars["colour"] == "all"


def test_a_yaml_inventory_with_a_syntax_error_stays_a_yaml_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="YAML syntax error"):
        load_inventory(write(tmp_path, "all:\n  hosts: [\n", "inventory.yaml"))


def test_hosts_directly_under_all_validate_as_in_ansibles_guide(tmp_path: Path) -> None:
    """The first form of Ansible's inventory guide: hosts under ``all: hosts:`` (no group)."""
    inventory = (
        "all:\n  hosts:\n    nas: {ansible_host: 198.18.120.10}\n"
        "    ws: {ansible_host: 198.18.120.11}\n"
    )
    code, out = validate(tmp_path, inventory, "inv.yaml")
    assert (code, out.strip()) == (0, "ok")
    loaded = load_inventory(tmp_path / "inv.yaml")
    assert loaded.hosts["nas"].address == "198.18.120.10"
    assert loaded.groups["ungrouped"] == ("nas", "ws")
