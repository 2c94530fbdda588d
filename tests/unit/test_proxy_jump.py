"""ProxyJump as OpenSSH writes it, from nasplan's own key, an Ansible inventory's ssh arguments and
an ssh_config; the hops nasplan.remote.ssh_route opens, first hop first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from keyfiles import write_private_key

from nasplan.cli import main
from nasplan.errors import HostError
from nasplan.input.inventory import Host, load_inventory
from nasplan.input.proxy_jump import PATTERN, Hop, jump_of_ssh_args, parse_hops
from nasplan.remote import ssh_route

SCHEMA = Path(__file__).resolve().parents[2] / "nasplan" / "schemas" / "inventory.schema.json"


@pytest.mark.parametrize(
    ("text", "hops"),
    [
        ("gw", (Hop(None, "gw", None),)),
        ("admin@198.19.80.1:2222", (Hop("admin", "198.19.80.1", 2222),)),
        ("a,root@b:22", (Hop(None, "a", None), Hop("root", "b", 22))),
        ("ssh://admin@nas-gw", (Hop("admin", "nas-gw", None),)),
        ("[fe80::1%eth0]:22", (Hop(None, "fe80::1%eth0", 22),)),
        ("user@corp.example@gw", (Hop("user@corp.example", "gw", None),)),  # OpenSSH: last @
        ("none", ()),
    ],
)
def test_hops_as_openssh_reads_them(text: str, hops: tuple[Hop, ...]) -> None:
    assert parse_hops(text) == hops


@pytest.mark.parametrize(
    "text", ["", "-oProxyCommand=id", "gw:0", "gw:65536", "gw,", "a b", "gw;id", ",".join("h" * 9)]
)
def test_what_is_not_a_proxy_jump(text: str) -> None:
    with pytest.raises(ValueError, match="is not a ProxyJump"):
        parse_hops(text)


def test_the_schema_refuses_what_the_parser_refuses() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["connection"]["proxy_jump"]["pattern"] == PATTERN


@pytest.mark.parametrize(
    ("args", "jump"),
    [
        ("-o ProxyJump=root@gw:22", "root@gw:22"),
        ("-oProxyJump=a,b", "a,b"),
        ("-o 'ProxyJump gw'", "gw"),
        ("-o proxyjump=gw", "gw"),
        ("-J admin@gw", "admin@gw"),
        ("-Jgw", "gw"),
        ("-J first -o ProxyJump=second", "first"),  # ssh takes an option's first value
        ("", None),
        # host-key options: never used (nasplan keeps strict checking; a warning says so)
        ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -J gw", "gw"),
        ("-o StrictHostKeyChecking=no", None),
    ],
)
def test_the_jump_in_ansible_ssh_arguments(args: str, jump: str | None) -> None:
    assert jump_of_ssh_args(args) == jump


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ("-o ForwardAgent=yes", "not '-o ForwardAgent=yes'"),
        ("-o ProxyJump=gw -C", "not '-C'"),
        ('-o ProxyCommand="ssh -W %h:%p gw"', "nasplan runs no local command"),
        ("-J", "-J without a value"),
        ("-o 'ProxyJump=gw", "cannot split"),
    ],
)
def test_other_ssh_arguments_are_refused_by_name(args: str, said: str) -> None:
    with pytest.raises(ValueError) as raised:
        jump_of_ssh_args(args)
    assert said in str(raised.value)


def test_an_ansible_inventory_jump_is_the_hosts_proxy_jump(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts"
    inventory.write_text(
        "[all:vars]\nansible_ssh_common_args='-o ProxyJump=admin@198.19.80.1:2222'\n"
        "[nas]\nnas ansible_host=198.19.81.2\n"
        "ws ansible_host=198.19.80.3 ansible_ssh_common_args=''\n"
    )
    hosts = load_inventory(inventory).hosts
    assert hosts["nas"].proxy_jump == "admin@198.19.80.1:2222"
    assert hosts["ws"].proxy_jump is None


def test_a_native_proxy_jump_that_is_none_is_refused_at_its_line(tmp_path: Path) -> None:
    write_private_key(tmp_path / "key")
    (tmp_path / "inventory.yaml").write_text(
        "vars: {identity_file: key}\nhosts:\n  nas: {proxy_jump: 'gw;reboot'}\n  ws: {}\n"
    )
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: p\ninventory: inventory.yaml\n"
        "tests:\n  - {id: t, kind: iperf3, server: nas, client: ws, target: 198.19.81.2}\n"
    )
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exit_code == 2
    assert result.output.startswith(f"{tmp_path / 'inventory.yaml'}:3:21: hosts.nas.proxy_jump: ")
    assert "'gw;reboot' is not valid: expected OpenSSH's ProxyJump" in result.output


def config(tmp_path: Path, text: str) -> Path:
    """An ssh_config, and an empty known_hosts beside it (``known``)."""
    (tmp_path / "known_hosts").write_text("")
    path = tmp_path / "ssh_config"
    path.write_text(text)
    path.chmod(0o600)
    return path


def known(tmp_path: Path) -> Path:
    return tmp_path / "known_hosts"


def test_route_resolves_hops_through_ssh_config(tmp_path: Path) -> None:
    """A hop is looked up like any host; the first hop's own ProxyJump comes before it; a
    ``Host *`` ProxyJump that matches the jump host itself is not its own jump."""
    ssh_config = config(
        tmp_path,
        "Host inner\n  HostName 198.19.80.5\n  User admin\n  Port 2200\n  ProxyJump outer\n"
        "Host outer\n  HostName 198.19.80.4\n"
        "Host *\n  ProxyJump outer\n  User ops\n",
    )
    host = Host("nas", "198.19.81.2", ssh_config=ssh_config, known_hosts=known(tmp_path))
    way = ssh_route.route(host, {}, 5)
    assert [ssh_route.label(c) for c in way.hops] == ["ops@198.19.80.4:22"]
    inner = Host(
        "nas",
        "198.19.81.2",
        ssh_config=ssh_config,
        proxy_jump="root@inner",
        known_hosts=known(tmp_path),
    )
    way = ssh_route.route(inner, {}, 5)
    assert [ssh_route.label(c) for c in way.hops] == [
        "ops@198.19.80.4:22",
        "root@198.19.80.5:2200",  # user@ wins over ssh_config's User
    ]
    assert way.through == "through ops@198.19.80.4:22,root@198.19.80.5:2200"
    assert ssh_route.label(way.target) == "ops@198.19.81.2:22"
    assert way.hops[1].gateway is way.hops[0] and way.target.gateway is way.hops[1]
    direct = Host(
        "nas", "198.19.81.2", ssh_config=ssh_config, proxy_jump="none", known_hosts=known(tmp_path)
    )
    assert ssh_route.route(direct, {}, 5).hops == ()


def test_a_proxy_jump_loop_in_ssh_config_is_refused(tmp_path: Path) -> None:
    ssh_config = config(
        tmp_path, "Host a\n  ProxyJump b\nHost b\n  ProxyJump c\nHost c\n  ProxyJump a\n"
    )
    looping = Host(
        "nas", "198.19.81.2", ssh_config=ssh_config, proxy_jump="a", known_hosts=known(tmp_path)
    )
    with pytest.raises(HostError, match=r"^nas: ssh_config's ProxyJump hops loop at a$"):
        ssh_route.route(looping, {}, 5)


def test_each_hop_logs_in_with_keys_that_can_be_used(tmp_path: Path) -> None:
    """An ssh_config IdentityFile that is not there is skipped, as OpenSSH does; one that is a
    public key is refused, naming the hop."""
    write_private_key(tmp_path / "id_nas")
    (tmp_path / "id_pub_only").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0Sd\n")
    (tmp_path / "id_pub_only").chmod(0o600)
    ssh_config = config(
        tmp_path,
        f"Host gw\n  IdentityFile {tmp_path / 'id_pub_only'}\n"
        f"Host *\n  IdentityFile {tmp_path / 'not-there'}\n",
    )
    host = Host(
        "nas",
        "198.19.81.2",
        ssh_config=ssh_config,
        identity_file=tmp_path / "id_nas",
        known_hosts=known(tmp_path),
    )
    way = ssh_route.route(host, {"key_filename": [str(tmp_path / "id_nas")]}, 5)
    assert way.target.connect_kwargs["key_filename"] == [str(tmp_path / "id_nas")]
    with pytest.raises(HostError) as refused:
        ssh_route.route(
            Host(
                "nas",
                "198.19.81.2",
                ssh_config=ssh_config,
                proxy_jump="root@gw",
                known_hosts=known(tmp_path),
            ),
            {},
            5,
        )
    assert str(refused.value) == (
        f"nas: jump host root@gw: IdentityFile {tmp_path / 'id_pub_only'} (ssh_config): "
        "is a public key: identity_file names the private key (the same name without .pub)"
    )
