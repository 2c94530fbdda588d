"""A Synology-style NAS as admin, NFS and rsync over cables, MTUs set two ways: what the run
does on the hosts and what its report, compare and console say about it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.compare import compare_runs, render
from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.lab.personalities.synology import PASSWORD_ENV, PASSWORD_FILE
from nasplan.lab.preview import preview_inventory
from nasplan.progress import make_progress
from nasplan.report import mermaid
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

from .conftest import LabContext

LAB = {
    "name": "rt-truth",
    "lan": {"prefix": "198.19.120.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"personality": "synology", "personality_options": {"ssh_user": "admin"},
                "services": ["nfs"]},
        "pc": {"personality": "debian"},
    },
    "links": [
        {"name": "p2p", "rate": "10G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth1", "address": "198.19.121.1/30"},
         "b": {"host": "pc", "interface": "eth1", "address": "198.19.121.2/30"}},
        {"name": "cable", "rate": "10G",
         "a": {"host": "nas", "interface": "eth2"}, "b": {"host": "pc", "interface": "eth2"}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def state(running_lab: LabContext) -> Iterator[LabState]:
    with running_lab(LAB) as running:
        yield running


@pytest.fixture(scope="module")
def outcome(
    state: LabState, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    """One run of the plan: (run directory, what the console showed)."""
    work = tmp_path_factory.mktemp("rt-truth-run")
    iperf3 = {"kind": "iperf3", "server": "nas", "client": "pc", "duration_s": 1, "repetitions": 5}
    common = {
        "kind": "transfer",
        "server": "nas",
        "client": "pc",
        "target": "nas.p2p",
        "size": "4MiB",
        "repetitions": 2,
    }
    plan = {
        "name": "rt-truth",
        "inventory": str(state.inventory_path),
        "network": {"confirm_timeout_s": 60},
        "links": [{"name": "cable", "a": {"host": "nas", "interface": "cable"},
                   "b": {"host": "pc", "interface": "cable"}, "prefix": "198.19.122.0/30",
                   "mtu": 9000}],
        "interfaces": [{"host": "nas", "interface": "p2p", "mtu": 9000},
                       {"host": "pc", "interface": "p2p", "mtu": 9000}],
        "tests": [
            {**iperf3, "id": "lan"},  # no target: the NAS's own address
            {**iperf3, "id": "p2p-bidir", "target": "nas.p2p", "bidir": True},
            {**iperf3, "id": "cable", "target": "link:cable@nas"},
            {**common, "id": "nfs", "method": "nfs", "export": "{{ hosts.nas.nfs.export }}",
             "server_path": "{{ hosts.nas.nfs.server_path }}"},
            {**common, "id": "rsync", "method": "rsync", "path": "/var/tmp",
             "ssh_identity": str(state.identity_path),
             "ssh_known_hosts": str(state.known_hosts_path)},
        ],
    }  # fmt: skip
    plan_path = work / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False))
    password = (state.host_dir("nas") / PASSWORD_FILE).read_text().strip()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PASSWORD_ENV, password)  # what `apply --check` looks for
        console = io.StringIO()
        result = apply(
            RunRequest(load_plan(plan_path), out=work / "run", become_passwords={"nas": password}),
            make_progress(console),
        )
    assert result.exit_code == EXIT_OK, console.getvalue()
    yield work / "run", console.getvalue()


def records_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in load_run(run_dir)["tests"]}


def test_rsync_over_a_cable_reaches_the_nas_s_sshd(
    state: LabState, outcome: tuple[Path, str]
) -> None:
    rsync = records_of(outcome[0])["rsync"]
    assert rsync["status"] == "ok", rsync["error"]  # was: Connection refused
    assert rsync["params"]["address"] == "198.19.121.1"
    known = state.known_hosts_path.read_text()
    assert "198.19.121.1 ssh-ed25519 " in known and "198.19.121.2 ssh-ed25519 " in known


def test_nfs_files_are_gone_from_the_nas_logged_in_as_admin(
    state: LabState, outcome: tuple[Path, str]
) -> None:
    nfs = records_of(outcome[0])["nfs"]
    assert nfs["status"] == "ok", nfs["error"]
    export = Path(nfs["params"]["server_path"])
    assert export.is_dir() and list(export.iterdir()) == []  # as the NFS server sees it
    assert load_run(outcome[0])["warnings"] == []


def test_an_mtu_set_through_interfaces_is_checked_with_a_df_ping(
    outcome: tuple[Path, str],
) -> None:
    checks = load_run(outcome[0])["network"]["checks"]
    pings = {(c["host"], c["interface"]) for c in checks if c["check"] == "df-ping" and c["ok"]}
    assert {("nas", "eth1"), ("pc", "eth1"), ("nas", "eth2"), ("pc", "eth2")} <= pings
    detail = next(c["detail"] for c in checks if c["check"] == "df-ping" and
                  c["interface"] == "eth1" and c["host"] == "nas")  # fmt: skip
    assert "DF ping of 8972 bytes (MTU 9000) from nas eth1 to pc eth1 198.19.121.2" in detail


def test_report_shows_the_network_in_force_and_names_every_path(
    outcome: tuple[Path, str],
) -> None:
    report = (outcome[0] / "report.md").read_text()
    assert [mermaid.validate(b) for b in mermaid.blocks(report)] == [
        [] for _ in mermaid.blocks(report)
    ]
    nas = report.split("### nas network interfaces")[1].split("###")[0]
    assert "| eth1 | p2p (test) | 9000 † |" in nas
    assert "| eth2 | cable (test) | 9000 † |" in nas and "198.19.122.1/30 †" in nas
    topology = mermaid.blocks(report)[0]
    assert "cable: 10 Gbit/s · MTU 9000<br/>198.19.122.1 ↔ 198.19.122.2" in topology
    lan = next(line for line in report.splitlines() if line.startswith("| lan |"))
    assert "pc → nas.lan (198.19.120.10)" in lan
    assert "| p2p-bidir (reverse) |" in report
    assert "| nas | eth1 | MTU 1500, 198.19.121.1/30 | MTU 9000, 198.19.121.1/30 |" in report


def test_console_and_compare_speak_per_direction(outcome: tuple[Path, str]) -> None:
    run_dir, console = outcome
    assert "test nfs: write, repetition 2/2" in console
    assert "repetition 3/" not in console.split("test nfs:")[1]  # copies are not repetitions
    assert "(~0 s in all)" not in console
    assert "test nfs: ok write median " in console and " MiB/s, read median " in console
    assert "test p2p-bidir: ok forward median " in console
    run = load_run(run_dir)
    comparison = compare_runs([run, json.loads(json.dumps(run))])
    labels = [t["label"] for t in comparison["tests"]]
    assert {"nfs (write)", "nfs (read)", "p2p-bidir (forward)", "p2p-bidir (reverse)"} <= set(
        labels
    )
    # a run against itself: every row within noise, and the headline says so
    assert "Headline: **no difference**" in render(comparison).split("\n## ")[0]


def test_validate_before_lab_up_sees_the_inventory_lab_up_writes(state: LabState) -> None:
    generated = yaml.safe_load(state.inventory_path.read_text())
    assert preview_inventory(Path(state.lab_file), state.state_dir) == generated
