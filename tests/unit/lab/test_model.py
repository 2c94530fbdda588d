"""The lab file model: validation with file positions, derived names, generated inventory files."""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest
import yaml

from nasplan.errors import InputError
from nasplan.input.inventory import load_inventory
from nasplan.lab import inventory_out, shaping, sshd
from nasplan.lab.model import Names, load_lab
from nasplan.lab.personalities import Plain
from nasplan.lab.preview import preview_inventory
from nasplan.lab.state import HostState, LabState, LinkState

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "plans/examples/lab.yaml"

VALID = """\
name: t
lan: {prefix: 198.18.20.0/24, rate: 1G}
hosts:
  a: {personality: qnap}
  b: {}
links:
  - name: fast
    rate: 10G
    a: {host: a, interface: eth1, address: 198.18.21.1/30}
    b: {host: b, interface: eth1}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


def errors_of(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(InputError) as excinfo:
        load_lab(write(tmp_path, text))
    return excinfo.value.messages


def test_example_lab_addresses_hosts_in_file_order() -> None:
    lab = load_lab(EXAMPLE)
    assert lab.name == "nas-lab"
    assert lab.control_address == "198.18.0.1/24"
    assert [(h.name, h.lan_address, h.personality) for h in lab.hosts] == [
        ("nas", "198.18.0.10/24", "synology"),
        ("ws", "198.18.0.11/24", "debian"),
    ]
    (p2p,) = lab.links
    assert (p2p.name, p2p.rate, p2p.bits_per_second, p2p.mtu_bytes) == (
        "p2p",
        "10G",
        10_000_000_000,
        1500,
    )
    assert (p2p.a.host, p2p.a.interface, p2p.a.address) == ("nas", "eth1", "198.18.1.1/30")
    assert lab.host("ws").namespace == "npl-nas-lab-ws"


def test_link_address_is_optional_and_personality_defaults_to_debian(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, VALID))
    assert lab.host("b").personality == "debian"
    assert lab.links[0].b.address is None


def test_prefix_outside_lab_range_is_refused_with_its_position(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, VALID.replace("198.18.20.0/24", "192.168.1.0/24"))
    assert errors == [
        f"{tmp_path / 'lab.yaml'}:2:15: lan.prefix: 192.168.1.0/24 is outside the lab range "
        "198.18.0.0/15"
    ]


def test_link_address_outside_lab_range_is_refused(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, VALID.replace("198.18.21.1/30", "10.0.0.1/30"))
    assert len(errors) == 1
    assert ":9:" in errors[0] and "links[0].a.address" in errors[0] and "outside" in errors[0]


def test_unknown_host_in_link_names_the_known_hosts(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, VALID.replace("{host: b,", "{host: nope,"))
    assert errors == [
        f"{tmp_path / 'lab.yaml'}:10:15: links[0].b.host: unknown host 'nope' (hosts: a, b)"
    ]


def test_unknown_key_is_an_error(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, VALID.replace("  b: {}", "  b: {personalty: qnap}"))
    assert len(errors) == 1
    assert ":5:7: hosts.b.personalty: unknown key 'personalty'" in errors[0]


def test_eth0_is_reserved_and_interfaces_are_unique_per_host(tmp_path: Path) -> None:
    text = VALID.replace("{host: b, interface: eth1}", "{host: b, interface: eth0}")
    text += "  - name: second\n    rate: 1G\n"
    text += "    a: {host: a, interface: eth1}\n    b: {host: b, interface: eth2}\n"
    errors = errors_of(tmp_path, text)
    assert any("links[0].b.interface: eth0 is reserved for the LAN" in e for e in errors)
    assert any("links[1].a.interface: host a already has an interface eth1" in e for e in errors)


def test_link_ends_in_different_subnets_are_refused(tmp_path: Path) -> None:
    text = VALID.replace(
        "{host: b, interface: eth1}", "{host: b, interface: eth1, address: 198.18.22.2/30}"
    )
    assert any("different subnets" in e for e in errors_of(tmp_path, text))


def test_derived_interface_names_fit_the_kernel_limit() -> None:
    names = Names("a" * 20)
    longest = [names.bridge, names.lan_root_side(999), names.link_end(999, "b")]
    assert all(len(name) <= 15 for name in longest), longest
    assert all(name.startswith(names.link_prefix) for name in longest)
    assert Names("lab-one").link_prefix != Names("lab-two").link_prefix


def test_tbf_bucket_holds_one_millisecond_and_at_least_one_gso_packet() -> None:
    assert shaping.burst_bytes(10_000_000_000) == 1_250_000
    assert shaping.burst_bytes(1_000_000_000) == 125_000
    assert shaping.burst_bytes(100_000_000) == 65_536
    argv = shaping.tbf_argv("eth1", 2_500_000_000)
    assert argv[argv.index("rate") + 1] == "2500000000bit"


def _state(tmp_path: Path) -> LabState:
    state = LabState(
        state_dir=tmp_path,
        lab_name="t",
        lab_file=str(tmp_path / "lab.yaml"),
        bridge="nplxbr",
        control_address="198.18.20.1/24",
        link_prefix="nplx",
        namespace_prefix="npl-t-",
    )
    state.links["lan"] = LinkState("lan", "1G", 1500, [])
    state.links["fast"] = LinkState("fast", "2.5G", 9000, [])
    state.hosts["a"] = HostState(
        name="a",
        namespace="npl-t-a",
        address="198.18.20.10/24",
        personality="qnap",
        lan_root_side="nplxh0",
        interfaces={
            "lan": {"name": "eth0", "role": "lan", "address": "198.18.20.10/24"},
            "fast": {"name": "eth1", "role": "test"},
        },
    )
    return state


def test_generated_inventory_is_a_valid_native_inventory(tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.inventory_path.write_text(inventory_out.render_inventory(state))
    host = load_inventory(state.inventory_path).hosts["a"]
    assert (host.address, host.user, host.platform_hint, host.framing) == (
        "198.18.20.10",
        "root",
        "qnap",
        "tc",
    )
    assert host.identity_file is not None and host.identity_file.name == "id_ed25519"
    assert host.interfaces["fast"].speed_bits_per_second == 2_500_000_000
    assert host.interfaces["fast"].address is None
    assert host.interfaces["lan"].prefix_len == 24
    data = yaml.safe_load(state.inventory_path.read_text())
    assert data["groups"] == {"qnap": {"hosts": ["a"]}}


def test_known_hosts_lines_are_read_by_paramiko(tmp_path: Path) -> None:
    pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEL9AGDG6cxc635BT86Gso1DxfLA1bdGI4RZp09xut7a c"
    path = tmp_path / "known_hosts"
    path.write_text(inventory_out.render_known_hosts({"198.18.20.10": pub}))
    keys = paramiko.HostKeys(str(path))
    assert keys.lookup("198.18.20.10")["ssh-ed25519"].get_base64() == pub.split()[1]


def test_ssh_config_points_at_the_lab_files(tmp_path: Path) -> None:
    text = inventory_out.render_ssh_config(_state(tmp_path))
    assert "Host a\n  HostName 198.18.20.10\n  User root\n" in text
    assert f'UserKnownHostsFile "{tmp_path}/known_hosts"' in text
    assert "StrictHostKeyChecking yes" in text and "IdentitiesOnly yes" in text


def test_sshd_config_is_key_only_and_wrapper_runs_personality_setup_first(tmp_path: Path) -> None:
    config = sshd.render_config(tmp_path, tmp_path / "authorized_keys")
    for line in (
        "ListenAddress 0.0.0.0",  # every address: LAN and cables, also those a plan adds
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        f'PidFile "{tmp_path}/sshd.pid"',
    ):
        assert line in config.splitlines()
    setup = [["mount", "--bind", "/x y", "/etc.defaults/VERSION"]]
    wrapper = sshd.render_wrapper("a", tmp_path / "sshd_config", setup)
    lines = wrapper.splitlines()
    assert lines.index("mount --bind '/x y' /etc.defaults/VERSION") < len(lines) - 1
    assert lines[-1] == f"exec /usr/sbin/sshd -D -e -f {tmp_path}/sshd_config"
    assert Plain("debian").setup_commands(tmp_path) == []


def test_link_address_must_be_a_host_address(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, VALID.replace("198.18.21.1/30", "198.18.21.3/30"))
    assert any("198.18.21.3 is not a host address of 198.18.21.0/30" in e for e in errors)


def test_busybox_net_tools_are_an_option_of_the_vendor_nas_personalities_only(
    tmp_path: Path,
) -> None:
    text = VALID.replace(
        "a: {personality: qnap}",
        "a: {personality: qnap, personality_options: {net_tools: busybox}}",
    )
    assert load_lab(write(tmp_path, text)).host("a").personality_options == {"net_tools": "busybox"}
    wrong = VALID.replace("b: {}", "b: {personality_options: {net_tools: busybox}}")
    (error,) = errors_of(tmp_path, wrong)
    assert error.endswith(
        "hosts.b.personality_options.net_tools: busybox is for the qnap and synology "
        "personalities, not debian"
    )
    assert ":5:" in error
    unknown = VALID.replace(
        "a: {personality: qnap}", "a: {personality: qnap, personality_options: {net_tools: toybox}}"
    )
    assert "hosts.a.personality_options.net_tools" in errors_of(tmp_path, unknown)[0]


def test_busybox_net_tools_remove_iproute2_and_link_busybox_first_on_path(tmp_path: Path) -> None:
    from nasplan.lab.personalities import vendor

    lines = vendor.net_tools_inside("busybox")
    assert "rm -f /usr/bin/ip /usr/sbin/ip /usr/sbin/ifconfig /usr/sbin/route" in lines
    assert "ln -sf /usr/bin/busybox /usr/local/bin/ip" in lines
    assert not any(
        "/usr/local/bin/ip" in line for line in vendor.net_tools_inside("busybox-ifconfig")
    )
    assert vendor.net_tools_inside("iproute2") == []


HIDDEN = """\
name: t
lan: {prefix: 198.18.20.0/24, rate: 1G}
hosts:
  gw: {}
  nas: {jump: gw}
links:
  - name: back
    rate: 1G
    a: {host: gw, interface: eth1, address: 198.18.21.1/30}
    b: {host: nas, interface: eth1, address: 198.18.21.2/30}
"""


def test_a_host_behind_a_jump_host_is_reached_at_its_link_address(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, HIDDEN))
    assert (lab.host("nas").jump, lab.host("nas").address) == ("gw", "198.18.21.2/30")
    assert (lab.host("gw").jump, lab.host("gw").address) == (None, "198.18.20.10/24")
    previewed = preview_inventory(write(tmp_path, HIDDEN), tmp_path / ".lab" / "t")
    nas = previewed["hosts"]["nas"]
    assert (nas["address"], nas["proxy_jump"]) == ("198.18.21.2", "root@198.18.20.10:22")
    assert list(nas["interfaces"]) == ["back"]  # no LAN port
    assert load_inventory(write_inventory(tmp_path, previewed)).hosts["nas"].proxy_jump == (
        "root@198.18.20.10:22"
    )


def write_inventory(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("nas: {jump: gw}", "nas: {jump: ghost}"), "'ghost' is not a lab host on the LAN"),
        (("nas: {jump: gw}", "nas: {jump: nas}"), "'nas' is not a lab host on the LAN"),
        (("gw: {}", "gw: {jump: nas}"), "'nas' is not a lab host on the LAN"),
        (("eth1, address: 198.18.21.2/30", "eth1"), "no link joins nas (with an address"),
    ],
)
def test_a_jump_host_must_be_a_lan_host_linked_to_it(
    tmp_path: Path, change: tuple[str, str], said: str
) -> None:
    errors = errors_of(tmp_path, HIDDEN.replace(*change))
    assert any(said in e and ".jump: " in e for e in errors), errors
