"""Plans: Jinja over the inventory, schema checks after resolution, reference checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.input.plan import load_plan
from nasplan.measure import kinds
from nasplan.measure.kinds import iperf3 as iperf3_kind

INVENTORY = """
vars: {user: root, framing: tc}
hosts:
  nas:
    address: 198.18.0.10
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.0.10/24}
      p2p: {name: eth1, role: test, speed: 10G}
  ws:
    address: 198.18.0.11
"""


def make(tmp_path: Path, plan: str) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(plan)
    return path


BASE = """name: demo
inventory: inventory.yaml
vars: {secs: 2}
tests:
  - id: lan
    kind: iperf3
    server: nas
    client: ws
    target: nas.lan
    duration_s: "{{ vars.secs }}"
    repetitions: 2
"""


def test_plan_loads_with_jinja_resolved_to_native_types(tmp_path: Path) -> None:
    plan = load_plan(make(tmp_path, BASE))
    (test,) = plan.tests
    assert test.settings["duration_s"] == 2  # an int, not "2"
    assert test.target.label() == "nas.lan"
    assert test.repetitions == 2
    assert plan.host_names == ("nas", "ws")
    assert plan.inventory.hosts["nas"].framing == "tc"


def test_jinja_over_inventory_hosts(tmp_path: Path) -> None:
    text = BASE.replace("target: nas.lan", 'target: "{{ hosts.nas.interfaces.lan.address }}"')
    (test,) = load_plan(make(tmp_path, text)).tests
    assert test.target.address == "198.18.0.10"


def test_undefined_jinja_variable_names_the_line(tmp_path: Path) -> None:
    path = make(tmp_path, BASE.replace("vars.secs", "vars.nope"))
    with pytest.raises(InputError) as info:
        load_plan(path)
    (message,) = info.value.messages
    assert message.startswith(f"{path}:10:17: tests[0].duration_s: template")
    assert "nope" in message


def test_schema_checked_after_resolution(tmp_path: Path) -> None:
    path = make(tmp_path, BASE.replace("secs: 2", "secs: 0"))
    with pytest.raises(InputError, match=r"tests\[0\]\.duration_s: 0 is less than the minimum"):
        load_plan(path)


def test_unknown_key_in_a_test(tmp_path: Path) -> None:
    path = make(tmp_path, BASE.replace("    repetitions: 2", "    repetition: 2"))
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert info.value.messages == [
        f"{path}:11:5: tests[0].repetition: unknown key 'repetition' (did you mean "
        "'repetitions'? known keys: bidir, bind, bitrate, bytes, client, clients, congestion, "
        "dscp, duration_s, id, ip_version, kind, latency_under_load, length, matrix, "
        "mss, name, omit_s, parallel, port, protocol, repetitions, reverse, server, target, "
        "window, zerocopy)"
    ]
    path = make(tmp_path, BASE.replace("    repetitions: 2", "    colour: blue"))
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert "unknown key 'colour' (known keys: " in info.value.messages[0]  # nothing near


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("    duration_s: 10s", "tests[0].duration_s: '10s' is not a number: duration_s is in "
         "seconds by its name, so write the number alone (duration_s: 10)"),
        ("    protocol: udp\n    bitrate: 500Mbps", None),
        ("    protocol: udp\n    bitrate: 500MB/s", "tests[0].bitrate: '500MB/s' is not valid: "
         "expected a UDP rate a stream (iperf3's -b), e.g. 500M"),
        # the kinds as the registry names them, in its (and the schema's) order
        ("    kind: smb", f"tests[0].kind: 'smb' is not one of {list(kinds.MODULES)}: SMB is a "
         "method of the transfer kind: write `kind: transfer` and `method: smb`"),
    ],
)  # fmt: skip
def test_what_people_write_gets_a_line_that_says_what_to_write(
    tmp_path: Path, line: str, said: str | None
) -> None:
    text = BASE.replace('    duration_s: "{{ vars.secs }}"\n', "")
    text = text.replace("    kind: iperf3", line) if "kind:" in line else text + line + "\n"
    path = make(tmp_path, text)
    if said is None:
        (test,) = load_plan(path).tests
        assert iperf3_kind.KIND.settings(test).udp_bitrate_bits_per_second == 500_000_000
        return
    with pytest.raises(InputError) as info:
        load_plan(path)
    (message,) = info.value.messages
    assert said in message and message.startswith(f"{path}:")


def test_a_matrix_takes_its_values_from_a_variable(tmp_path: Path) -> None:
    text = BASE.replace("vars: {secs: 2}", "vars: {secs: 2, streams: [1, 2, 4]}")
    text += '    matrix: {parallel: "{{ vars.streams }}"}\n'
    tests = load_plan(make(tmp_path, text)).tests
    assert [(t.id, t.settings["parallel"]) for t in tests] == [
        ("lan[parallel=1]", 1),
        ("lan[parallel=2]", 2),
        ("lan[parallel=4]", 4),
    ]


def test_unknown_host_and_interface(tmp_path: Path) -> None:
    path = make(tmp_path, BASE.replace("client: ws", "client: wz"))
    with pytest.raises(InputError, match=r"plan.yaml:8:13: tests\[0\]\.client: unknown host 'wz'"):
        load_plan(path)
    path = make(tmp_path, BASE.replace("target: nas.lan", "target: nas.ten"))
    with pytest.raises(InputError, match=r"tests\[0\]\.target: host 'nas' has no interface 'ten'"):
        load_plan(path)
    path = make(tmp_path, BASE.replace("target: nas.lan", "target: ws.lan"))
    with pytest.raises(InputError, match="not an interface of the server host 'nas'"):
        load_plan(path)


def test_missing_inventory_points_at_the_plan_line(tmp_path: Path) -> None:
    path = make(tmp_path, BASE.replace("inventory.yaml", "nowhere.yaml"))
    with pytest.raises(InputError, match=r"plan.yaml:2:\d+: inventory: inventory file not found"):
        load_plan(path)


def test_duplicate_test_ids(tmp_path: Path) -> None:
    second = BASE.split("tests:\n")[1]
    path = make(tmp_path, BASE + second)
    with pytest.raises(InputError, match=r"duplicate test id 'lan' \(also tests\[0\]\)"):
        load_plan(path)


def test_default_ports_are_distinct(tmp_path: Path) -> None:
    second = BASE.split("tests:\n")[1].replace("id: lan", "id: lan2")
    plan = load_plan(make(tmp_path, BASE + second))
    ports = [iperf3_kind.KIND.settings(test).port for test in plan.tests]
    assert ports == [5201, 5202]


def test_an_iscsi_size_in_decimal_mb_is_refused_at_validation(tmp_path: Path) -> None:
    """100MB is 10^8 bytes, not whole 512-byte blocks: told by validate, not by the run."""
    iscsi = """name: blocks
inventory: inventory.yaml
tests:
  - id: blk
    kind: iscsi
    server: nas
    client: ws
    target: nas.lan
    iqn: iqn.2026-12.lab:nas
    lun: 0
    scratch: true
    size: SIZE
"""
    path = make(tmp_path, iscsi.replace("SIZE", "100MB"))
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert info.value.messages == [
        f"{path}:12:11: tests[0].size: 100MB = 100000000 bytes is not a whole number of 512-byte "
        "blocks, which a iscsi test reads and writes: give it in MiB (MB is 10^6 bytes) or as "
        "99999744 bytes"
    ]
    (test,) = load_plan(make(tmp_path, iscsi.replace("SIZE", "96MiB"))).tests
    assert test.settings["size"] == "96MiB"
