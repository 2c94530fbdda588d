"""TrueNAS network backend: midclt argv and JSON, and what its scripts call in each situation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nasplan.facts import HostFacts, parse_facts
from nasplan.network.backends import SetsidTimer, by_mechanism, for_platform
from nasplan.network.model import NicChange
from nasplan.network.state import NicState, split_sections
from nasplan.network.truenas import TrueNasCommit, restore_update_argvs, update_argvs
from nasplan.platforms import detect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CHANGES = (
    NicChange("eth1", 9000, ("198.18.42.1/30",)),
    NicChange("eth2", None, ("fd00::1/64",)),
)
BEFORE = {
    "eth1": NicState("eth1", 1500, True, ("198.18.41.7/24",)),
    "eth2": NicState("eth2", 1500, True, ()),
}
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
else:
    print("null")
"""


def facts(name: str) -> HostFacts:
    return parse_facts((FIXTURES / "facts" / name).read_text())


def test_update_sends_the_mtu_and_the_whole_alias_list_with_the_additions() -> None:
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
    assert json.loads(argvs[1][4]) == {
        "aliases": [{"type": "INET6", "address": "fd00::1", "netmask": 64}]
    }


def test_restore_updates_put_back_the_snapshot_mtu_and_aliases() -> None:
    argvs = restore_update_argvs(CHANGES, BEFORE)
    assert [json.loads(a[4]) for a in argvs] == [
        {"mtu": 1500, "aliases": [{"type": "INET", "address": "198.18.41.7", "netmask": 24}]},
        {"mtu": 1500, "aliases": []},
    ]


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


def test_an_mtu_only_change_restores_the_mtu_and_leaves_the_alias_list_alone() -> None:
    # The read-back shows a DHCP address as any other: sent back as an alias it would turn static.
    before = {"eth0": NicState("eth0", 1500, True, ("198.18.41.7/24",))}
    (argv,) = restore_update_argvs([NicChange("eth0", 9000, ())], before)
    assert json.loads(argv[4]) == {"mtu": 1500}
    (forward,) = update_argvs([NicChange("eth0", 9000, ())], before)
    assert json.loads(forward[4]) == {"mtu": 9000}
