"""TrueNAS network backend: midclt argv and JSON, and what its scripts call in each situation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nasplan.facts.gather import HostFacts, parse_facts
from nasplan.input.network import NicChange
from nasplan.network import restore
from nasplan.network.backends import SetsidTimer, by_mechanism, for_platform
from nasplan.network.state import NicConfig, NicState
from nasplan.network.truenas import (
    TrueNasCommit,
    parse_interface_query,
    restore_update_argvs,
    update_argvs,
)
from nasplan.platforms import detect
from nasplan.sections import split_sections

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CHANGES = (
    NicChange("eth1", 9000, ("198.18.42.1/30",)),
    NicChange("eth2", None, ("fd00::1/64",)),
)
# eth1: a configured alias and, with DHCP on, the lease's address (live only: not configured).
BEFORE = {
    "eth1": NicState(
        "eth1", 1500, True, ("198.18.41.7/24", "198.18.41.200/24"),
        configured=NicConfig(("198.18.41.7/24",), ipv4_dhcp=True, ipv6_auto=False, mtu_bytes=None),
    ),
    "eth2": NicState(
        "eth2", 1500, True, ("2001:db8::5/64",),
        configured=NicConfig((), ipv4_dhcp=False, ipv6_auto=True, mtu_bytes=1500),
    ),
}  # fmt: skip
# A snapshot file written before nasplan read the middleware's configuration.
OLD_BEFORE = {n: NicState(n, s.mtu_bytes, s.up, s.addresses) for n, s in BEFORE.items()}
# A midclt stand-in: logs each call's argv as JSON; answers come from the environment.
STUB = """#!/usr/bin/python3
import json, os, sys
with open(os.environ["MIDCLT_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
method = sys.argv[2]
if method == "interface.checkin_waiting":
    print(os.environ.get("MIDCLT_WAITING", "null"))
elif method == "interface.has_pending_changes":
    print(os.environ.get("MIDCLT_PENDING", "False"))
elif method in os.environ.get("MIDCLT_FAIL", "").split():
    sys.exit(1)
elif method == "interface.query":
    print(os.environ.get("MIDCLT_QUERY", "[]"))
else:
    print("null")
"""


def facts(name: str) -> HostFacts:
    return parse_facts((FIXTURES / "facts" / name).read_text())


def test_update_sends_the_configured_aliases_with_the_additions_never_a_dhcp_address() -> None:
    argvs = update_argvs(CHANGES, BEFORE)
    assert [a[:4] for a in argvs] == [
        ["midclt", "call", "interface.update", "eth1"],
        ["midclt", "call", "interface.update", "eth2"],
    ]
    assert json.loads(argvs[0][4]) == {
        "mtu": 9000,
        "aliases": [
            {"type": "INET", "address": "198.18.41.7", "netmask": 24},
            {"type": "INET", "address": "198.18.42.1", "netmask": 30},
        ],
    }
    # eth2's address came from autoconf: only nasplan's goes into the list
    assert json.loads(argvs[1][4]) == {
        "aliases": [{"type": "INET6", "address": "fd00::1", "netmask": 64}]
    }


def test_restore_puts_the_configuration_back_exactly() -> None:
    argvs = restore_update_argvs(CHANGES, BEFORE)
    assert [json.loads(a[4]) for a in argvs] == [
        {
            "aliases": [{"type": "INET", "address": "198.18.41.7", "netmask": 24}],
            "ipv4_dhcp": True,
            "ipv6_auto": False,
            "mtu": None,  # the default: the middleware sets 1500
        },
        {"aliases": [], "ipv4_dhcp": False, "ipv6_auto": True, "mtu": 1500},
    ]


def test_a_snapshot_without_the_configuration_restores_as_before() -> None:
    (forward, _) = update_argvs(CHANGES, OLD_BEFORE)
    assert [a["address"] for a in json.loads(forward[4])["aliases"]] == [
        "198.18.41.7", "198.18.41.200", "198.18.42.1"
    ]  # fmt: skip
    argvs = restore_update_argvs(CHANGES, OLD_BEFORE)
    assert json.loads(argvs[1][4]) == {
        "mtu": 1500,
        "aliases": [{"type": "INET6", "address": "2001:db8::5", "netmask": 64}],
    }


# One interface.query entry as the middleware builds it (truenas/middleware
# src/middlewared/middlewared/plugins/network.py, InterfaceService.query and iface_extend, SCALE
# 24.04.2 7ae91f2c9eea2bc19bf9ed774304a39c26fe4a5c): configured `aliases` at the top, the live
# addresses (DHCP's too) in `state.aliases`. No recorded output was found in public sources.
ENTRY = {
    "id": "enp1s0",
    "name": "enp1s0",
    "fake": False,
    "type": "PHYSICAL",
    "state": {
        "name": "enp1s0",
        "mtu": 1500,
        "link_state": "LINK_STATE_UP",
        "aliases": [
            {"type": "LINK", "address": "52:54:00:12:34:56"},
            {"type": "INET", "address": "198.18.41.7", "netmask": 24, "broadcast": "198.18.41.255"},
            {"type": "INET", "address": "198.18.41.200", "netmask": 24},
        ],
    },
    "aliases": [{"type": "INET", "address": "198.18.41.7", "netmask": 24}],
    "ipv4_dhcp": True,
    "ipv6_auto": False,
    "description": "",
    "mtu": None,
}


def test_the_query_gives_the_configuration_not_the_live_addresses() -> None:
    unconfigured = {**ENTRY, "id": "enp2s0", "name": "enp2s0", "aliases": [], "mtu": 9000,
                    "ipv4_dhcp": False}  # fmt: skip
    # SCALE's schema names netmask a string: a digit string reads the same
    as_string = {**ENTRY, "id": "enp3s0", "aliases": [{**ENTRY["aliases"][0], "netmask": "24"}]}
    assert parse_interface_query(json.dumps([ENTRY, unconfigured, as_string])) == {
        "enp1s0": NicConfig(("198.18.41.7/24",), True, False, None),
        "enp2s0": NicConfig((), False, False, 9000),
        "enp3s0": NicConfig(("198.18.41.7/24",), True, False, None),
    }


@pytest.mark.parametrize(
    "text",
    ["null", "{}", "[1]", '[{"id": "x"}]', json.dumps([{**ENTRY, "aliases": [
        {"type": "INET", "address": "198.18.41.7", "netmask": "255.255.255.0"}]}])],
)  # fmt: skip
def test_a_query_answer_of_another_shape_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interface_query(text)


def test_snapshot_reads_the_live_state_and_the_configuration(tmp_path: Path) -> None:
    # lo: read with the real `ip -j` here; its configuration from the midclt stand-in
    backend = TrueNasCommit()
    assert backend.snapshot_as_root
    script = backend.snapshot_script(["lo"])
    query = json.dumps([{**ENTRY, "id": "lo", "name": "lo", "mtu": 65536}])
    done, calls = run_script(tmp_path, script, query=query)
    assert done.returncode == 0, done.stderr
    assert calls == [["interface.query", '[["id", "in", ["lo"]]]']]
    states = backend.parse_snapshot(done.stdout)
    assert "127.0.0.1/8" in states["lo"].addresses
    assert states["lo"].configured == NicConfig(("198.18.41.7/24",), True, False, 65536)
    # the snapshot file keeps it for `nasplan restore`
    restore.save_snapshots(tmp_path, "inv.yaml", None, {"nas": ("/tmp/d", (), states)})
    saved = restore.load_snapshots(tmp_path)["hosts"]["nas"]["before"]["lo"]
    assert NicState.from_dict(saved) == states["lo"]


def test_a_nic_the_query_does_not_list_fails_the_snapshot(tmp_path: Path) -> None:
    backend = TrueNasCommit()
    done, _ = run_script(tmp_path, backend.snapshot_script(["lo"]), query="[]")
    assert backend.parse_snapshot(done.stdout) == {}
    done, _ = run_script(tmp_path, backend.snapshot_script(["lo"]), fail="interface.query")
    assert done.returncode != 0 and backend.parse_snapshot(done.stdout) == {}


def test_truenas_hosts_get_the_middleware_backend_others_the_setsid_timer() -> None:
    truenas = facts("truenas-scale-lab.txt")
    assert for_platform(detect(truenas), truenas).mechanism == "truenas-interface-commit"
    debian = facts("debian12-root.txt")
    assert for_platform(detect(debian), debian).mechanism == "setsid-timer"
    assert isinstance(for_platform(None, None), SetsidTimer)
    assert by_mechanism("truenas-interface-commit").mechanism == "truenas-interface-commit"
    assert by_mechanism(None).mechanism == "setsid-timer"


def run_script(
    tmp_path: Path, script: str, **answers: str
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "midclt").write_text(STUB)
    (bin_dir / "midclt").chmod(0o755)
    log = tmp_path / "calls.jsonl"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "MIDCLT_LOG": str(log)}
    env.update({f"MIDCLT_{k.upper()}": v for k, v in answers.items()})
    done = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, env=env, check=False
    )
    calls = [json.loads(line)[1:] for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def test_apply_stages_updates_then_commits_with_rollback_and_reports_armed(tmp_path: Path) -> None:
    d = str(tmp_path / "revert")
    done, calls = run_script(
        tmp_path, TrueNasCommit().arm_and_apply_script(d, 7, CHANGES, BEFORE), waiting="6"
    )
    assert done.returncode == 0, done.stderr
    assert [c[0] for c in calls] == [
        "interface.has_pending_changes",
        "interface.update",
        "interface.update",
        "interface.commit",
        "interface.checkin_waiting",
    ]
    assert json.loads(calls[3][1]) == {"rollback": True, "checkin_timeout": 7}
    assert split_sections(done.stdout)["armed"] == "6"
    assert "addr" in split_sections(done.stdout)


def test_apply_refuses_when_someone_else_has_changes_pending(tmp_path: Path) -> None:
    script = TrueNasCommit().arm_and_apply_script(str(tmp_path / "r"), 7, CHANGES, BEFORE)
    done, calls = run_script(tmp_path, script, pending="True")
    assert done.returncode == 91 and "already pending" in done.stderr
    assert [c[0] for c in calls] == ["interface.has_pending_changes"]


def test_a_refused_update_rolls_the_staged_ones_back_and_commits_nothing(tmp_path: Path) -> None:
    script = TrueNasCommit().arm_and_apply_script(str(tmp_path / "r"), 7, CHANGES, BEFORE)
    done, calls = run_script(tmp_path, script, fail="interface.update")
    assert done.returncode == 91
    assert "interface.commit" not in [c[0] for c in calls]
    assert calls[-1] == ["interface.rollback"]


@pytest.mark.parametrize(
    ("waiting", "armed", "said"), [("5", True, "confirmed"), ("null", True, "fired"),
                                   ("null", False, "missing")],
)  # fmt: skip
def test_confirm_checks_in_only_while_the_rollback_waits(
    tmp_path: Path, waiting: str, armed: bool, said: str
) -> None:
    d = tmp_path / "revert"
    d.mkdir()
    if armed:
        (d / "armed").touch()
    done, calls = run_script(tmp_path, TrueNasCommit().confirm_script(str(d)), waiting=waiting)
    assert done.stdout.strip() == said
    assert (["interface.checkin"] in calls) == (said == "confirmed")


@pytest.mark.parametrize(
    ("waiting", "files", "outcome", "methods"),
    [
        ("4", ["armed"], "restored", ["interface.rollback"]),
        ("null", ["armed"], "reverted-by-host", []),
        ("null", ["armed", "confirmed"], "restored",
         ["interface.update", "interface.update", "interface.commit", "interface.checkin"]),
    ],
)  # fmt: skip
def test_restore_rolls_back_or_finds_the_host_reverted_or_updates_back(
    tmp_path: Path, waiting: str, files: list[str], outcome: str, methods: list[str]
) -> None:
    d = tmp_path / "revert"
    d.mkdir()
    for name in files:
        (d / name).touch()
    script = TrueNasCommit().restore_script(str(d), CHANGES, BEFORE, force=False)
    done, calls = run_script(tmp_path, script, waiting=waiting)
    assert split_sections(done.stdout)["outcome"] == outcome
    assert [c[0] for c in calls[1:]] == methods
    assert not d.exists()


def test_an_mtu_only_change_sends_no_aliases_and_restores_the_configured_ones() -> None:
    (forward,) = update_argvs([NicChange("eth1", 9000, ())], BEFORE)
    assert json.loads(forward[4]) == {"mtu": 9000}
    (back,) = restore_update_argvs([NicChange("eth1", 9000, ())], BEFORE)
    assert json.loads(back[4])["aliases"] == [
        {"type": "INET", "address": "198.18.41.7", "netmask": 24}
    ]
    # an old snapshot: the live list (DHCP's address in it) is not sent back
    (old,) = restore_update_argvs([NicChange("eth1", 9000, ())], OLD_BEFORE)
    assert json.loads(old[4]) == {"mtu": 1500}
