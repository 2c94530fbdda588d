"""What nasplan prints and checks before and around a run: targets named, password variables
noticed, install lines, validate before the lab is up, lab commands outside a checkout, MTU
probes, rsync's own cause, progress in the plan's terms, CPU figures of shared kernels."""

from __future__ import annotations

import dataclasses
import io
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.analysis import TransferFigures, shared_kernels
from nasplan.cli import main
from nasplan.facts.gather import parse_facts, split_also
from nasplan.hosts.session import HostSession, planned_installs
from nasplan.input.inventory import Host
from nasplan.input.network import MtuSpec
from nasplan.input.plan import load_plan
from nasplan.measure import kinds
from nasplan.measure.tools import transfer
from nasplan.network.checks import mtu_probes
from nasplan.network.state import NicState
from nasplan.platforms.qnap import Qnap
from nasplan.progress import PlainProgress, step_text
from nasplan.remote.runner import Result, RunnerBase
from nasplan.run.check import check
from nasplan.run.planned import EXIT_INPUT, unset_variables

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

INVENTORY = """
vars: {user: root, framing: tc}
hosts:
  nas:
    address: 198.18.0.10
    become_password_env: NASPLAN_TEST_SUDO
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.0.10/24}
      p2p: {name: eth1, role: test, speed: 10G, address: 198.18.1.1/30}
  ws:
    address: 198.18.0.11
"""
PLAN = """name: demo
inventory: inventory.yaml
tests:
  - {id: lan, kind: iperf3, server: nas, client: ws, repetitions: 5}
  - {id: smb, kind: transfer, method: smb, server: nas, client: ws, share: data, user: u,
     password_env: NASPLAN_TEST_SMB, repetitions: 5}
"""


def make_plan(tmp_path: Path, plan: str = PLAN) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(plan)
    return path


def test_a_test_without_target_is_named_by_the_interface_holding_the_address(
    tmp_path: Path,
) -> None:
    plan = load_plan(make_plan(tmp_path))
    assert plan.tests[0].target.label() == "nas.lan"  # was "?"
    stream = io.StringIO()
    outcome = check(plan, PlainProgress(stream), connector=_unreachable, environ={})
    assert "test lan: would run iperf3 TCP ws -> nas.lan, 5 x 10 s" in stream.getvalue()
    assert "-> ?" not in stream.getvalue()
    assert outcome.exit_code == 3  # the fake hosts cannot be reached


def _unreachable(host: Host) -> NoRunner:
    from nasplan.errors import HostError

    raise HostError(f"{host.name}: not reachable in this test")


class NoRunner(RunnerBase):
    name = "none"

    def run(self, argv: Sequence[str], **_: object) -> Result:
        raise AssertionError(f"unexpected command {argv}")

    def run_script(self, script: str, **_: object) -> Result:
        raise AssertionError("unexpected script")


def test_check_names_every_unset_password_variable(tmp_path: Path) -> None:
    plan = load_plan(make_plan(tmp_path))
    assert unset_variables(plan, {"NASPLAN_TEST_SUDO": "x", "NASPLAN_TEST_SMB": "y"}) == []
    problems = unset_variables(plan, {})
    assert problems == [
        "nas: the sudo password comes from $NASPLAN_TEST_SUDO, which is not set "
        "(export it, or pass -K to apply)",
        "test smb: the SMB password comes from $NASPLAN_TEST_SMB, which is not set: "
        "the test would fail",
    ]
    stream = io.StringIO()
    outcome = check(plan, PlainProgress(stream), connector=_reached, environ={})
    assert outcome.exit_code == EXIT_INPUT
    assert f"problem: {problems[1]}" in stream.getvalue()


def _reached(host: Host) -> Fixed:
    return Fixed((FIXTURES / "facts" / "debian12-root.txt").read_text())


class Fixed(RunnerBase):
    """Answers the facts script with a captured Debian output; fails on anything else."""

    name = "fixed"

    def __init__(self, facts: str) -> None:
        self.facts = facts

    def run(self, argv: Sequence[str], **_: object) -> Result:
        raise AssertionError(f"unexpected command {argv}")

    def run_script(self, script: str, **_: object) -> Result:
        return Result("facts", self.facts, "", 0)


def test_an_install_the_platform_cannot_do_is_not_a_would(tmp_path: Path) -> None:
    facts = parse_facts((FIXTURES / "facts" / "qnap-lab-busybox-ifconfig.txt").read_text())
    facts = dataclasses.replace(facts, tools={**facts.tools, "opkg": None, "iperf3": None})
    session = HostSession(Host("nas", "198.18.0.10"), NoRunner(), facts, Qnap())
    lines = planned_installs(session, ["iperf3"])
    assert lines and lines[0].startswith("cannot install iperf3: ")
    assert not any(line.startswith("would cannot") for line in lines)


def test_validate_checks_an_example_plan_before_its_lab_is_up(tmp_path: Path) -> None:
    for name in ("lab.yaml", "nas-upgrade.yaml"):
        shutil.copy(ROOT / "plans" / "examples" / name, tmp_path / name)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nas-upgrade.yaml")])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "ok"
    assert "is not there yet (the lab is not up)" in result.stderr
    assert f"nasplan lab up {tmp_path / 'lab.yaml'}" in result.stderr
    # still a real check: a host the lab will not have is an error
    plan = (tmp_path / "nas-upgrade.yaml").read_text().replace("client: ws", "client: pc", 1)
    (tmp_path / "nas-upgrade.yaml").write_text(plan)
    bad = CliRunner().invoke(main, ["validate", str(tmp_path / "nas-upgrade.yaml")])
    assert bad.exit_code == 2 and "'pc'" in bad.output
    lab = CliRunner().invoke(main, ["validate", str(tmp_path / "lab.yaml")])
    assert lab.exit_code == 0 and lab.stdout.startswith("ok (a lab file")


def test_lab_commands_outside_a_checkout_ask_which_lab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["lab", "status"])
    assert result.exit_code == 2
    assert "which lab? give its file" in result.output
    assert "plans/examples" not in result.output  # nothing the user did not give


def test_mtu_set_through_interfaces_gets_a_df_probe_to_each_neighbour() -> None:
    own = {"eth1": NicState("eth1", 9000, True, ("198.18.1.1/30",))}
    neighbours = {
        "nas": {"eth1": ("198.18.1.1/30",)},
        "ws": {"eth0": ("198.18.0.11/24",), "eth1": ("198.18.1.2/30",)},
    }
    spec = [MtuSpec("nas", "eth1", "p2p", 9000)]
    (probe,) = mtu_probes(spec, "nas", own, neighbours)
    assert (probe.nic, probe.peer_host, probe.peer_nic, probe.peer_ip) == (
        "eth1", "ws", "eth1", "198.18.1.2"
    )  # fmt: skip
    assert probe.payload_bytes == 8972
    assert mtu_probes(spec, "ws", own, neighbours) == []


def test_rsync_failure_shows_ssh_s_own_cause() -> None:
    raw = (FIXTURES / "transfer" / "timed-rsync-ssh-refused.txt").read_text()
    _, exited, output = transfer.parse_timed(raw)
    assert exited == 255
    with pytest.raises(transfer.TransferParseError) as error:
        transfer.parse_rsync(output)
    assert str(error.value).startswith(
        "ssh: connect to host 198.19.113.1 port 22: Connection refused; "
        "rsync: connection unexpectedly closed"
    )


def test_progress_counts_the_plan_s_repetitions_per_direction() -> None:
    assert step_text(2, 5, 12.4, "write") == "write, repetition 2/5 (~12 s in all)"
    assert step_text(3, 3, 0.0, "read") == "read, repetition 3/3"  # no "(~0 s in all)"
    record = {
        "kind": "transfer",
        "repetitions": [],
        "summary": {"metric": "bits_per_second", "median": 2.36e9},
        "directions": {
            "write": {"metric": "bytes_per_second", "median": 281.25 * 2**20, "n": 5},
            "read": {"metric": "bytes_per_second", "median": 374.5 * 2**20, "n": 5},
        },
    }
    assert kinds.readout(record).result_text(record) == (
        "write median 281.2 MiB/s, read median 374.5 MiB/s"
    )
    iperf3 = {"kind": "iperf3", "params": {}, "summary": {"metric": "bits_per_second",
              "median": 9.41e9}}  # fmt: skip
    assert kinds.readout(iperf3).result_text(iperf3) == "median 9.41 Gbit/s"
    # the last repetition on the console: in the unit of the kind's results, not bit/s
    rep = {"status": "ok", "bytes_per_second": 281.25 * 2**20, "bits_per_second": 2.36e9}
    assert kinds.readout(record).repetition_text(rep) == "281.2 MiB/s"
    assert kinds.readout(iperf3).repetition_text({"status": "ok", "bits_per_second": 9.41e9}) == (
        "9.41 Gbit/s"
    )


def test_a_cpu_bound_verdict_says_when_the_cpu_figure_is_the_whole_machine_s() -> None:
    shared = shared_kernels({"nas": "b1", "ws": "b1", "real": "b2"}, "b1")
    assert shared == {
        "nas": ["ws", "the machine running nasplan"],
        "ws": ["nas", "the machine running nasplan"],
    }
    verdict = TransferFigures(
        label="SMB write",
        direction="write",
        transfer_bytes_per_second=50e6,
        network_bits_per_second=9e9,
        cpu_busy_percent={"nas": 97.0, "ws": 40.0},
        cpu_shared_with=shared,
    ).attribute_bottleneck()
    assert verdict["verdict"] == "cpu-bound"
    assert "CPU nas is the whole machine's, not nas's own" in verdict["text"]
    assert verdict["evidence"]["cpu_whole_machine"] == ["nas", "ws"]
    own = TransferFigures(
        label="SMB write", direction="write", transfer_bytes_per_second=50e6,
        network_bits_per_second=9e9, cpu_busy_percent={"real": 97.0}, cpu_shared_with=shared,
    ).attribute_bottleneck()  # fmt: skip
    assert "whole machine" not in own["text"]


def test_check_does_not_list_an_mtu_the_nic_already_has_as_a_change() -> None:
    from types import SimpleNamespace

    from nasplan.input.network import NicChange
    from nasplan.run.host_network import describe_changes

    fields = {f: None for f in NicChange.__dataclass_fields__}
    same = NicChange(**{**fields, "nic": "eth0", "mtu_bytes": 1500, "add_addresses": ()})
    jumbo = NicChange(**{**fields, "nic": "eth1", "mtu_bytes": 9000, "add_addresses": ()})
    before = {"eth0": SimpleNamespace(mtu_bytes=1500), "eth1": SimpleNamespace(mtu_bytes=1500)}
    assert describe_changes((same, jumbo), before) == ["eth1: MTU 1500 -> 9000"]


class Here(RunnerBase):
    """The captured Debian facts for the facts script; any other script run by this machine's
    own sh (a probe of ``--check``), as the host would run it."""

    name = "here"

    def __init__(self, facts: str) -> None:
        self.facts = facts
        self.scripts: list[tuple[str, str | None]] = []

    def run(self, argv: Sequence[str], **_: object) -> Result:
        raise AssertionError(f"unexpected command {argv}")

    def run_script(self, script: str, *, stdin: str | None = None, **_: object) -> Result:
        import subprocess

        if "nasplan_section" in script:  # what rides with the facts runs here too
            done = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
            _, also = split_also(Result("facts", done.stdout, done.stderr, done.returncode))
            with_also = (
                ""
                if also is None
                else (f"\n@@nasplan:also@@\n{also.stdout}\n@@nasplan:also-exit@@\n{also.exited}\n")
            )
            return Result("facts", self.facts + with_also, "", 0)
        self.scripts.append((script, stdin))
        if "smbclient" in script:  # no network in a unit test: the lab's share says the rest
            said = "tree connect failed: NT_STATUS_BAD_NETWORK_NAME\n"
            return Result("probe", said, "", 1)
        done = subprocess.run(["sh", "-c", script], input=stdin, capture_output=True, text=True)
        return Result("probe", done.stdout, done.stderr, done.returncode)


def test_check_reads_what_each_test_needs_and_fails_where_the_run_would(tmp_path: Path) -> None:
    there = tmp_path / "volume1"
    there.mkdir()
    plan_text = f"""name: demo
inventory: inventory.yaml
matrix: {{size: [1MiB, 2MiB]}}
tests:
  - {{id: disk, kind: disk, host: nas, path: "{there}"}}
  - {{id: gone, kind: disk, host: nas, path: "{tmp_path / "volume2"}"}}
  - {{id: sync, kind: transfer, method: rsync, server: nas, client: ws, path: "{there}/none"}}
  - {{id: smb, kind: transfer, method: smb, server: nas, client: ws, share: data, user: u,
     password_env: NASPLAN_TEST_SMB}}
"""
    plan = load_plan(make_plan(tmp_path, plan_text))
    before = sorted(tmp_path.rglob("*"))
    runners: dict[str, Here] = {}

    def here(host: Host) -> Here:
        runners[host.name] = Here((FIXTURES / "facts" / "debian12-root.txt").read_text())
        return runners[host.name]

    stream = io.StringIO()
    environ = {"NASPLAN_TEST_SUDO": "x", "NASPLAN_TEST_SMB": "y"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NASPLAN_TEST_SMB", "s3cret")
        outcome = check(plan, PlainProgress(stream), connector=here, environ=environ)
    said = stream.getvalue()
    # each distinct look once (the matrix's two cells share theirs), for the tests that need it
    assert (
        f"nas: the disk test's path {there} (a writable directory): there "
        "(for disk[size=1MiB], disk[size=2MiB])" in said
    )
    gone = tmp_path / "volume2"
    assert f"problem: the disk test's path on nas: {gone} does not exist" in said
    assert f"problem: the rsync directory on nas: {there}/none does not exist" in said
    assert outcome.exit_code == 1  # a test would fail: not an input error, not unreachable
    # the share was looked at from the client with the test's login on stdin, never in argv
    ((script, stdin),) = [s for s in runners["ws"].scripts if "smbclient" in s[0]]
    assert "s3cret" not in script and stdin == "username = u\npassword = s3cret\n"
    assert (
        "problem: SMB share //198.18.0.10/data from ws: tree connect failed: "
        "NT_STATUS_BAD_NETWORK_NAME" in said
    )
    looks = [one for one in outcome.looked if not one["what"].startswith("free space in ")]
    assert [one["found"] for one in looks] == ["yes", "no", "no", "no"]
    # each transfer's bytes against the client's temp dir's free space (df, nothing written)
    space = [one for one in outcome.looked if one["what"].startswith("free space in ")]
    assert {(one["host"], one["what"], one["found"]) for one in space} >= {
        ("ws", "free space in /tmp for 4.0 MiB", "yes"),  # the larger cell's source and read
        ("nas", f"free space in {there}/none for 2.0 MiB", "yes"),  # rsync's copy there
    }
    assert sorted(tmp_path.rglob("*")) == before  # nothing written
