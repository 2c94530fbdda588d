"""``apply --list-tests``, ``--limit`` and ``--tests`` through the command line: what a user
sees, the exit codes, nothing connected; run.json's ``subset`` and the report's line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.plan import load_plan
from nasplan.input.subset import choose
from nasplan.measure.estimate import duration_text
from nasplan.progress import PlainProgress
from nasplan.report.render import render_report
from nasplan.results import run_errors
from nasplan.run import check as check_module

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# nothing listens at these addresses: a command that connected would fail, not hang long
INVENTORY = """\
vars: {user: root}
groups: {macs: {hosts: [mac]}}
hosts:
  nas:
    address: 198.18.93.2
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.93.2/24}
      p2p10: {name: eth2, role: test, speed: 10G}
  pc: {address: 198.18.93.3}
  mac: {address: 198.18.93.4, interfaces: {p2p: {name: en5, role: test}}}
"""
PLAN = """\
name: subset
inventory: inventory.yaml
links:
  - {name: mp, a: {host: nas, interface: eth3}, b: {host: mac, interface: p2p},
     prefix: 198.18.94.0/30}
interfaces:
  - {host: pc, interface: eth1, mtu: 9000}
tests:
  - id: tcp
    kind: iperf3
    server: nas
    client: "{{ matrix.client }}"
    duration_s: 2
    omit_s: 1
    repetitions: 2
    matrix: {client: [pc, mac], parallel: [1, 2]}
  - {id: smb, kind: transfer, method: rsync, path: /tmp, server: nas, client: pc,
     target: nas.p2p10, size: 1GiB, direction: write, repetitions: 1}
  - {id: lat, kind: latency, server: nas, client: mac, target: "link:mp@nas", repetitions: 1}
"""
ALL_IDS = [
    "tcp[client=pc,parallel=1]",
    "tcp[client=pc,parallel=2]",
    "tcp[client=mac,parallel=1]",
    "tcp[client=mac,parallel=2]",
    "smb",
    "lat",
]


def write(tmp_path: Path) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "plan.yaml").write_text(PLAN)
    return tmp_path / "plan.yaml"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {result.exception!r}")
    return result.exit_code, result.stdout, result.stderr


def test_list_tests_prints_every_cell_with_kind_hosts_repetitions_and_an_estimate(
    tmp_path: Path,
) -> None:
    code, out, err = invoke("apply", str(write(tmp_path)), "--list-tests")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "plan subset:"
    assert [line.split()[0] for line in lines[1:-1]] == ALL_IDS
    assert lines[1].split()[1:] == ["iperf3", "pc,", "nas", "2", "reps"]
    assert lines[5].split()[1:] == ["transfer", "pc,", "nas", "1", "rep"]
    # iperf3: 4 cells x (2 parts x 0.05 s + (2 + 1 + 0.05) s x 2 reps) = 24.8 s; rsync: the
    # 1 GiB source at 300 MiB/s and its copy at 400 MiB/s (a 10G path's share is more) + 0.15 s
    # = 6.1 s; pings: 10 x 0.2 s + 0.3 s; the run's own 1.5 s: 34.7 s
    assert lines[-1].startswith("6 tests (4 matrix cells); about 35 s (an estimate: ")
    assert "copies at the path's nominal rate, at most 400 MiB/s" in lines[-1]


def test_list_tests_as_json(tmp_path: Path) -> None:
    code, out, _ = invoke("apply", str(write(tmp_path)), "--list-tests", "--format", "json")
    listed = json.loads(out)
    assert code == 0 and listed["count"] == 6 and listed["matrix_cells"] == 4
    assert [t["id"] for t in listed["tests"]] == ALL_IDS
    assert listed["tests"][2] == {
        "id": "tcp[client=mac,parallel=1]",
        "base_id": "tcp",
        "cell": {"client": "mac", "parallel": 1},
        "kind": "iperf3",
        "hosts": ["mac", "nas"],
        "repetitions": 2,
        "estimate_s": 6.2,  # 2 parts x 0.05 s + (2 s + 1 s omitted + 0.05 s) x 2
    }
    assert listed["subset"] is None and listed["estimate"]["seconds"] > 30


def test_tests_patterns_choose_cells_and_base_ids(tmp_path: Path) -> None:
    plan = str(write(tmp_path))
    code, out, _ = invoke("apply", plan, "--list-tests", "--tests", "tcp[client=mac*,smb")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == [
        "tcp[client=mac,parallel=1]",
        "tcp[client=mac,parallel=2]",
        "smb",
    ]
    assert out.splitlines()[-1].startswith("3 tests (2 matrix cells), of 6 in the plan; about")
    code, out, _ = invoke("apply", plan, "--list-tests", "--tests", "tcp", "--tests", "l?t")
    assert code == 0 and len(out.splitlines()) == 1 + 5 + 1


def test_a_pattern_that_matches_nothing_exits_2_naming_it_and_some_ids(tmp_path: Path) -> None:
    for extra in ([], ["--check"], ["--list-tests"]):
        code, out, err = invoke("apply", str(write(tmp_path)), *extra, "--tests", "tcp,nfs*")
        assert (code, out) == (2, "")
        assert err == (
            "nasplan: --tests nfs*: matches no test of the plan (its ids: tcp[client=pc,parallel=1]"
            ", tcp[client=pc,parallel=2], tcp[client=mac,parallel=1], tcp[client=mac,parallel=2], "
            "smb and 1 more)\n"
        )


def test_a_limit_naming_no_host_exits_2(tmp_path: Path) -> None:
    for extra in ([], ["--check"], ["--list-tests"]):
        code, out, err = invoke("apply", str(write(tmp_path)), *extra, "--limit", "nas,nope*")
        assert (code, out) == (2, "")
        assert err == (
            f"nasplan: --limit nope*: no host or group of {tmp_path}/inventory.yaml matches it "
            "(hosts: mac, nas, pc)\n"
        )


def test_a_limit_leaves_out_tests_and_network_changes_beyond_it_saying_so_once(
    tmp_path: Path,
) -> None:
    code, out, err = invoke("apply", str(write(tmp_path)), "--list-tests", "-l", "n*", "-l", "pc")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == [
        "tcp[client=pc,parallel=1]",
        "tcp[client=pc,parallel=2]",
        "smb",
    ]
    assert err.splitlines() == [
        "warning: --limit n*,pc: 3 tests left out, they need mac: tcp[client=mac,parallel=1], "
        "tcp[client=mac,parallel=2], lat",
        "warning: --limit n*,pc: network changes left out on hosts outside it: link mp (nas-mac)",
    ]
    # a group, and ! to leave a host out
    code, out, _ = invoke("apply", str(write(tmp_path)), "--list-tests", "-l", "nas,macs")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:-1]] == [
        "tcp[client=mac,parallel=1]",
        "tcp[client=mac,parallel=2]",
        "lat",
    ]
    code, out, err = invoke("apply", str(write(tmp_path)), "--list-tests", "-l", "!pc")
    assert code == 0 and "smb" not in out and "pc" in err
    assert "MTU 9000 on pc eth1" in err


def test_limit_and_tests_leaving_nothing_exit_2(tmp_path: Path) -> None:
    code, _, err = invoke(
        "apply", str(write(tmp_path)), "--list-tests", "-l", "nas,pc", "--tests", "lat"
    )
    assert code == 2 and "no test of the plan is left" in err


def test_check_says_the_count_and_the_estimate_of_a_subset(tmp_path: Path) -> None:
    plan, subset = choose(load_plan(write(tmp_path)), ["nas,mac"], ["tcp*"])
    assert plan.host_names == ("mac", "nas") and not plan.network.interfaces
    assert subset.to_dict() == {"limit": ["nas", "mac"], "tests": ["tcp*"], "selected": 2, "of": 6}

    def unreachable(host: object) -> object:
        from nasplan.errors import HostError

        raise HostError("no hosts in the unit suite")

    class Null:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    checked = check_module.check(plan, PlainProgress(Null()), unreachable, say=False)  # type: ignore[arg-type]
    assert [t["id"] for t in checked.tests] == [
        "tcp[client=mac,parallel=1]",
        "tcp[client=mac,parallel=2]",
    ]
    assert checked.summary == (
        "2 tests (2 matrix cells), of 6 in the plan; about 14 s (an estimate: about 1.5 s to "
        "connect, check tools and report; installing tools not counted)"
    )
    assert checked.summary in checked.lines()
    assert checked.to_dict()["estimate"] == {
        "seconds": 13.9,
        "assumptions": [
            "about 1.5 s to connect, check tools and report",
            "installing tools not counted",
        ],
        "tests": 2,
    }
    assert duration_text(7300) == "2 h 1 min" and duration_text(75) == "1 min 15 s"


def test_run_json_says_a_subset_and_the_report_says_it_in_its_header(tmp_path: Path) -> None:
    run = json.loads((FIXTURES / "runs" / "sample" / "run.json").read_text())
    assert not [e for e in run_errors(run) if "subset" in e]
    run["subset"] = {"limit": ["nas", "ws"], "tests": ["p2p*"], "selected": 2, "of": 4}
    assert run_errors(run) == []
    report = render_report(run)
    status = next(line for line in report.splitlines() if line.startswith("Run status:"))
    assert status.endswith("; subset of the plan: 2 of 4 tests (`--limit nas,ws` `--tests p2p*`).")
    run["subset"]["extra"] = 1
    assert run_errors(run)


def listed_ids(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:-1]]


def test_ansible_patterns_in_tests_and_limit(tmp_path: Path) -> None:
    """``!x``, ``a:b`` and ``a:&b``, as Ansible users write host patterns."""
    plan = str(write(tmp_path))
    code, out, _ = invoke("apply", plan, "--list-tests", "--tests", "!tcp")
    assert code == 0 and listed_ids(out) == ["smb", "lat"], out
    code, out, _ = invoke("apply", plan, "--list-tests", "--tests", "smb:lat")
    assert code == 0 and listed_ids(out) == ["smb", "lat"], out
    code, out, _ = invoke("apply", plan, "--list-tests", "--tests", "tcp:&*mac*:!*parallel=2*")
    assert code == 0 and listed_ids(out) == ["tcp[client=mac,parallel=1]"], out
    code, out, _ = invoke("apply", plan, "--list-hosts", "--limit", "all:!macs")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["nas", "pc"]
    code, out, _ = invoke("apply", plan, "--list-hosts", "--limit", "nas,mac:pc:!pc")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["mac", "nas"]
    # Ansible's order: the plain terms' union, then &: only mac is left, and no test runs on it
    code, _, err = invoke("apply", plan, "--list-hosts", "--limit", "nas:mac:&macs")
    assert code == 2 and "no test of the plan is left" in err
    code, _, err = invoke("apply", plan, "--list-tests", "--tests", "tcp:&nothing*")
    assert code == 2 and "--tests nothing*: matches no test of the plan" in err
