"""End to end in the lab: the example plan over real SSH and real iperf3, the hosts left clean."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import testinfra
import yaml

from nasplan.input.inventory import load_inventory
from nasplan.input.loader import load_schema
from nasplan.remote.ssh import connect

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "plans/examples/nas-upgrade.yaml"
GBIT = 1e9


def nasplan(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=600,
        check=False,
    )


_OWN_IPERF3 = r"""
self=$(readlink /proc/self/ns/net)
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$self" ] || continue
  [ "$(cat "$p/comm" 2>/dev/null)" = iperf3 ] || continue
  state=$(awk '{print $3}' "$p/stat" 2>/dev/null)
  [ "$state" = Z ] || echo "$state iperf3"
done
"""


def host_state(lab: Any, name: str) -> dict[str, Any]:
    """What a user would check on a host: addresses, MTUs, iperf3 processes, nasplan temp files."""
    host = testinfra.get_host(f"ssh://{name}", ssh_config=str(lab.ssh_config_path))
    return {
        "links": host.check_output("ip -o link show | sed 's/^[0-9]*: //' | cut -d' ' -f1-5"),
        "addresses": host.check_output("ip -o addr show | awk '{print $2, $4}'"),
        # Zombies are not running: the lab's init reaps daemonized servers a moment later. Only
        # this host's own (its network namespace): another lab's may run beside it.
        "iperf3": host.check_output(_OWN_IPERF3),
        "tmp": sorted(p.name for p in lab.host_path(name, "/tmp").glob("nasplan*")),  # its own
    }


@pytest.fixture(scope="module")
def example_run(example_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    before = {name: host_state(example_lab, name) for name in ("nas", "ws")}
    out = tmp_path_factory.mktemp("run") / "run"
    proc = nasplan(
        "apply",
        str(PLAN),
        "-i",
        str(example_lab.inventory_path),
        "-e",
        "duration_s=2",
        "-e",
        "repetitions=2",
        "--out",
        str(out),
    )
    after = {name: host_state(example_lab, name) for name in ("nas", "ws")}
    return {"proc": proc, "out": out, "before": before, "after": after}


def test_apply_succeeds_and_reports_where(example_run: dict[str, Any]) -> None:
    proc = example_run["proc"]
    assert proc.returncode == 0, proc.stderr
    assert f"report: {example_run['out'] / 'report.md'}" in proc.stdout


def test_run_json_matches_its_schema_and_keeps_raw_outputs(example_run: dict[str, Any]) -> None:
    out: Path = example_run["out"]
    run = json.loads((out / "run.json").read_text())
    jsonschema.validate(run, load_schema("run"))
    assert [t["id"] for t in run["tests"]] == [
        "lan-single",
        "p2p-single",
        "p2p-two-streams",
        "p2p-reverse",
    ]
    for test in run["tests"]:
        assert test["status"] == "ok", test["error"]
        assert len(test["repetitions"]) == 2
        for rep in test["repetitions"]:
            text = (out / rep["raw_file"]).read_text()
            if rep["raw_file"].endswith(".json"):
                docs = [json.loads(text)]
            else:  # iperf3 < 3.16 with -P: one process per stream, each JSON under a marker
                docs = [
                    json.loads(part) for part in re.split(r"^=== .* ===$", text, flags=re.M)[1:]
                ]
                assert len(docs) == test["params"]["parallel"]
            received = sum(doc["end"]["sum_received"]["bits_per_second"] for doc in docs)
            assert received == pytest.approx(rep["bits_per_second"])
    facts = run["hosts"]["nas"]["facts"]
    assert facts["iperf3_version"]
    assert {nic["name"] for nic in facts["interfaces"]} >= {"eth0", "eth1"}


def test_numbers_are_within_the_shaped_rates(example_run: dict[str, Any]) -> None:
    run = json.loads((example_run["out"] / "run.json").read_text())
    tests = {t["id"]: t for t in run["tests"]}
    lan = tests["lan-single"]
    assert lan["path"]["speed_bits_per_second"] == 1_000_000_000
    assert lan["path"]["framing"] == "tc"
    # 1G shaped by tc, MTU 1500: TCP maximum 964 Mbit/s; tbf delivers a little under it.
    assert 0.75 * GBIT < lan["summary"]["median"] <= 1.0 * GBIT
    assert 0.75 < lan["efficiency"] <= 1.04
    p2p = tests["p2p-single"]
    assert p2p["path"]["speed_bits_per_second"] == 10_000_000_000
    # The p2p link is shaped to 10G; on a 2-core machine the CPU caps it lower, but it must
    # clearly beat the LAN and never exceed the shaped rate.
    assert 2 * lan["summary"]["median"] < p2p["summary"]["median"] <= 10 * GBIT
    assert tests["p2p-reverse"]["params"]["reverse"] is True
    assert tests["p2p-two-streams"]["params"]["parallel"] == 2


def test_hosts_are_left_as_they_were(example_run: dict[str, Any]) -> None:
    before, after = example_run["before"], example_run["after"]
    for name in ("nas", "ws"):
        assert after[name]["links"] == before[name]["links"]
        assert after[name]["addresses"] == before[name]["addresses"]
        assert after[name]["iperf3"] == "", f"iperf3 left running on {name}"
        assert after[name]["tmp"] == before[name]["tmp"], "temporary files left behind"


def test_report_rerenders_byte_identical(example_run: dict[str, Any], tmp_path: Path) -> None:
    out: Path = example_run["out"]
    first = (out / "report.md").read_bytes()
    assert b"nas-upgrade" in first and b"Gbit/s" in first
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "report.md").unlink()
    proc = nasplan("report", str(copy))
    assert proc.returncode == 0, proc.stderr
    assert (copy / "report.md").read_bytes() == first


def test_check_changes_nothing(example_lab: Any, tmp_path: Path) -> None:
    before = {name: host_state(example_lab, name) for name in ("nas", "ws")}
    proc = nasplan(
        "apply", str(PLAN), "-i", str(example_lab.inventory_path), "--check", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    # The example NAS is Synology-like: iperf3 comes through synogear (done by an earlier run).
    assert re.search(r"nas \(synology\): (would synogear install|nothing to install)", proc.stderr)
    assert "ws (debian): nothing to install" in proc.stderr
    assert "test p2p-single: would run iperf3 TCP ws -> nas.p2p" in proc.stderr
    assert list(tmp_path.iterdir()) == [], "--check must not create a run directory"
    assert {name: host_state(example_lab, name) for name in ("nas", "ws")} == before


def test_unknown_host_key_is_refused_with_its_fingerprint(example_lab: Any, tmp_path: Path) -> None:
    inventory = example_lab.inventory_path.read_text()
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    copy = tmp_path / "inventory.yaml"
    copy.write_text(
        inventory.replace("known_hosts: known_hosts", f"known_hosts: {empty}").replace(
            "identity_file: id_ed25519", f"identity_file: {example_lab.identity_path}"
        )
    )
    proc = nasplan("apply", str(PLAN), "-i", str(copy), "--out", str(tmp_path / "run"))
    assert proc.returncode == 3
    nas_ip = example_lab.hosts["nas"].ip
    assert f"host key for {nas_ip} is not known (ssh-ed25519 SHA256:" in proc.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "unreachable"
    assert all(t["status"] == "failed" for t in run["tests"])


def test_unreachable_host_fails_its_tests_not_the_run(example_lab: Any, tmp_path: Path) -> None:
    inventory = yaml.safe_load(example_lab.inventory_path.read_text())
    inventory["hosts"]["ghost"] = {"address": "198.18.10.99"}  # in the lab LAN, nobody there
    copy = example_lab.inventory_path.parent / "inventory-ghost.yaml"
    copy.write_text(yaml.safe_dump(inventory))
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"name: ghosts\ninventory: {copy}\ntests:\n"
        "  - {id: real, kind: iperf3, server: nas, client: ws, duration_s: 1, repetitions: 1}\n"
        "  - {id: ghostly, kind: iperf3, server: ghost, client: ws, duration_s: 1,"
        " repetitions: 1}\n"
    )
    try:
        proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"))
    finally:
        copy.unlink()
    assert proc.returncode == 3, proc.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    statuses = {t["id"]: t["status"] for t in run["tests"]}
    assert statuses == {"real": "ok", "ghostly": "failed"}
    assert run["hosts"]["ghost"]["reachable"] is False


def test_ssh_config_alias_and_proxyjump_are_honoured(example_lab: Any, tmp_path: Path) -> None:
    """An inventory that names hosts only by ssh_config aliases; the NAS behind a ProxyJump."""
    nas_ip = example_lab.hosts["nas"].ip
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(
        example_lab.ssh_config_path.read_text()
        + f"\nHost nas-behind-ws\n  HostName {nas_ip}\n  User root\n"
        f"  IdentityFile {example_lab.identity_path}\n"
        f"  UserKnownHostsFile {example_lab.known_hosts_path}\n  ProxyJump ws\n"
    )
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        f"vars: {{ssh_config: {ssh_config}, framing: tc}}\n"
        "hosts:\n  nas: {address: nas-behind-ws}\n  ws: {}\n"
    )
    host = load_inventory(inventory).hosts["nas"]
    runner = connect(host)
    try:
        assert [jump.host for jump in runner.jumps] == [example_lab.hosts["ws"].ip]
        assert runner.jumps[0].client.get_transport().is_active()  # the NAS rides through ws
        assert runner.run(["hostname"]).stdout.strip() == "nas"
    finally:
        runner.close()
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"name: jump\ninventory: {inventory}\ntests:\n"
        f"  - {{id: via-jump, kind: iperf3, server: nas, client: ws, target: {nas_ip},"
        " duration_s: 1, repetitions: 1}\n"
    )
    proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["hosts"]["nas"]["facts"]["hostname"] == "nas"
    assert run["tests"][0]["status"] == "ok"
