"""NAS platforms in the lab: iperf3 installed through each vendor's own path, then measured."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
QNAP_PLAN = ROOT / "plans/examples/qnap-10g.yaml"
WRONG_PASSWORD = "not-the-admin-password-7361"
LAB = {
    "name": "plat-test",
    "lan": {"prefix": "198.18.30.0/25", "rate": "1G"},
    "hosts": {
        "nas": {"personality": "qnap"},
        "bare": {"personality": "qnap", "personality_options": {"entware": False}},
        "syno": {"personality": "synology", "personality_options": {"ssh_user": "admin"}},
        "tn": {"personality": "truenas"},
        "ws": {"personality": "debian"},
    },
    "links": [
        {"name": "tengig", "rate": "10G",
         "a": {"host": "nas", "interface": "eth1", "address": "198.18.31.1/30"},
         "b": {"host": "ws", "interface": "eth1", "address": "198.18.31.2/30"}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def platform_lab(running_lab: Any) -> Iterator[LabState]:
    """One lab for every test here: a QNAP with and one without Entware, DSM, SCALE, Debian."""
    with running_lab(LAB) as state:
        yield state


def password(state: LabState) -> str:
    return (state.host_dir("syno") / "become_password").read_text().strip()


def host_sh(state: LabState, host: str, command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as root on a lab host (the lab's ssh_config logs in as root)."""
    argv = ["ssh", "-F", str(state.ssh_config_path), "-o", "BatchMode=yes", host, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def plan_for(tmp_path: Path, server: str, parallel: int = 1) -> Path:
    plan = {
        "name": f"on-{server}",
        "inventory": "unused.yaml",  # -i names the lab's
        "tests": [{"id": "lan", "kind": "iperf3", "server": server, "client": "ws",
                   "target": f"{server}.lan", "duration_s": 1, "repetitions": 1,
                   "parallel": parallel}],
    }  # fmt: skip
    path = tmp_path / f"{server}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def apply(
    state: LabState, plan: Path, out: Path, *extra: str, become_password: str | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {"PATH": "/usr/bin:/bin"}
    if become_password is not None:
        env["NASPLAN_LAB_BECOME_PASSWORD"] = become_password
    argv = [sys.executable, "-m", "nasplan", "apply", str(plan), "-i", str(state.inventory_path)]
    proc = subprocess.run(
        [*argv, *extra, "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert (out / "run.json").exists(), proc.stderr
    return proc, json.loads((out / "run.json").read_text())


def test_qnap_gets_iperf3_from_entware_and_measures_with_it(
    platform_lab: LabState, tmp_path: Path
) -> None:
    assert host_sh(platform_lab, "nas", "command -v iperf3").stdout == ""  # hidden, as on QTS
    extra = ("-e", "duration_s=1", "-e", "repetitions=1")
    proc, run = apply(platform_lab, QNAP_PLAN, tmp_path / "first", *extra)
    assert proc.returncode == 0, proc.stderr
    nas = run["hosts"]["nas"]
    assert (nas["platform"], nas["actions"]) == ("qnap", ["opkg install iperf3"])
    assert nas["tools"]["iperf3"] == "/opt/bin/iperf3"
    assert nas["facts"]["iperf3_version"]
    tests = {t["id"]: t for t in run["tests"]}
    assert (
        tests["tengig-single"]["summary"]["median"] > tests["lan-2g5-single"]["summary"]["median"]
    )
    # iperf3 before 3.16 is single-threaded: the two streams ran as two processes, and it says so.
    assert tests["tengig-two-streams"]["params"]["parallel_mode"] == "processes"
    assert any("single-threaded" in w for w in tests["tengig-two-streams"]["warnings"])
    assert any("tengig-two-streams: iperf3" in w for w in run["warnings"])
    # /opt/bin stays off PATH: the next run finds iperf3 by full path and installs nothing.
    proc, again = apply(platform_lab, QNAP_PLAN, tmp_path / "second", *extra)
    assert proc.returncode == 0, proc.stderr
    assert again["hosts"]["nas"]["actions"] == []
    assert again["hosts"]["nas"]["tools"]["iperf3"] == "/opt/bin/iperf3"


def test_qnap_without_entware_says_how_to_get_it_and_changes_nothing(
    platform_lab: LabState, tmp_path: Path
) -> None:
    proc, run = apply(platform_lab, plan_for(tmp_path, "bare"), tmp_path / "run")
    # The host answers; only the tests that need iperf3 there fail, with what to do about it.
    assert proc.returncode == 1
    error = run["hosts"]["bare"]["tool_errors"]["iperf3"]
    assert "Entware" in error and "https://qnapclub.eu/en/howto/1" in error
    assert run["tests"][0]["error"] == error
    assert run["hosts"]["bare"]["actions"] == []
    assert run["tests"][0]["status"] == "failed"
    assert host_sh(platform_lab, "bare", "ls -A /opt").stdout == ""


def test_synology_installs_with_sudo_synogear_and_never_writes_the_password(
    platform_lab: LabState, tmp_path: Path
) -> None:
    host_sh(platform_lab, "syno", "/usr/syno/bin/synogear remove")
    secret = password(platform_lab)
    out = tmp_path / "run"
    proc, run = apply(platform_lab, plan_for(tmp_path, "syno"), out, become_password=secret)
    assert proc.returncode == 0, proc.stderr
    syno = run["hosts"]["syno"]
    assert syno["platform"] == "synology" and syno["facts"]["is_root"] is False
    assert syno["actions"] == ["synogear install (iperf3)"]
    assert syno["tools"]["iperf3"] == "/var/packages/DiagnosisTool/target/tool/iperf3"
    assert run["tests"][0]["status"] == "ok" and run["tests"][0]["summary"]["median"] > 0
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 3
    assert [p for p in files if secret in p.read_text(errors="replace")] == []
    assert secret not in proc.stdout + proc.stderr


def test_synology_wrong_sudo_password_is_a_clear_host_error(
    platform_lab: LabState, tmp_path: Path
) -> None:
    host_sh(platform_lab, "syno", "/usr/syno/bin/synogear remove")
    plan = plan_for(tmp_path, "syno")
    proc, run = apply(platform_lab, plan, tmp_path / "run", become_password=WRONG_PASSWORD)
    assert proc.returncode == 3
    assert run["hosts"]["syno"]["error"] == "syno: sudo: wrong password for admin on syno"
    assert run["status"] == "unreachable"
    assert host_sh(platform_lab, "syno", "/usr/syno/bin/synogear list").returncode != 0


def test_truenas_uses_its_own_iperf3_and_never_apt(platform_lab: LabState, tmp_path: Path) -> None:
    proc, run = apply(platform_lab, plan_for(tmp_path, "tn"), tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    tn = run["hosts"]["tn"]
    assert (tn["platform"], tn["actions"], tn["tools"]["iperf3"]) == (
        "truenas",
        [],
        "/usr/bin/iperf3",
    )
    assert run["tests"][0]["status"] == "ok"
