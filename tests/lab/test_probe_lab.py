"""``nasplan probe`` against every lab personality: the host's state read back before and after
is the same, no secret is written, and the directory parses back to what nasplan derived live.

``NASPLAN_RECORD_PROBES=1`` copies each probe directory to ``tests/fixtures/probe/lab-NAME/``
(how the recorded ones there were made).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.lab import LabState
from nasplan.probe import rederive

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "probe"
PREFIX = "198.19.228"
LAB = {
    "name": "probe-lab",
    "lan": {"prefix": f"{PREFIX}.0/24", "rate": "1G"},
    "hosts": {
        "deb": {"personality": "debian"},
        "nas": {"personality": "qnap"},
        "syno": {"personality": "synology", "personality_options": {"ssh_user": "admin"}},
        "tn": {"personality": "truenas"},
    },
}
PERSONALITIES = {"deb": "debian", "nas": "qnap", "syno": "synology", "tn": "truenas"}
# What the host is, read as root over the lab's own ssh_config: its NICs and routes (its own
# namespace), and the files where a run, a lock or an install would write: nasplan's files in
# /tmp and /var/tmp, the vendor roots (Entware's /opt, QTS's /etc/config, DSM's /etc.defaults
# and /usr/syno, SCALE's /data) and the login users' homes. /tmp itself and the process table are
# the machine's, shared with whatever else runs on it, so they are not compared whole.
STATE = (
    "ip -j addr show; ip -j route show table all; ip -j link show; "
    "find /tmp /var/tmp -maxdepth 1 -name 'nasplan*' 2>/dev/null | sort; "
    "find /opt /etc/config /etc.defaults /usr/syno /data /home /var/services/homes -xdev "
    "-printf '%p %s %m %T@\\n' 2>/dev/null | sort"
)


@pytest.fixture(scope="module")
def probe_lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def host_state(state: LabState, host: str) -> str:
    argv = ["ssh", "-F", str(state.ssh_config_path), "-o", "BatchMode=yes", host, STATE]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def secrets_of(state: LabState, host: str) -> list[str]:
    """What must never be in a probe directory: passwords, the private key, the host key."""
    inventory = yaml.safe_load(state.inventory_path.read_text())
    found = []
    for path in state.host_dir(host).glob("*password*"):
        found.append(path.read_text().strip())
    identity = inventory.get("vars", {}).get("identity_file") or ""
    key_path = (state.inventory_path.parent / identity) if identity else None
    if key_path and key_path.is_file():
        found += [line for line in key_path.read_text().splitlines() if len(line) > 40][:3]
    known_hosts = inventory.get("vars", {}).get("known_hosts")
    if known_hosts:
        text = (state.inventory_path.parent / known_hosts).read_text()
        found += [line.split()[-1] for line in text.splitlines() if line.strip()]
    return [s for s in found if len(s) >= 8]


def run_probe(
    state: LabState, host: str, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    password = state.host_dir(host) / "become_password"
    if password.exists():
        env["NASPLAN_LAB_BECOME_PASSWORD"] = password.read_text().strip()
    argv = [sys.executable, "-m", "nasplan", "probe", host, "-i", str(state.inventory_path)]
    return subprocess.run(
        [*argv, "--out", str(out), *extra],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("host", sorted(PERSONALITIES))
def test_probe_changes_nothing_writes_no_secret_and_parses_back(
    probe_lab: LabState, host: str, tmp_path: Path
) -> None:
    before = host_state(probe_lab, host)
    out = tmp_path / f"probe-{host}"
    proc = run_probe(probe_lab, host, out)
    assert proc.returncode == 0, proc.stderr
    assert host_state(probe_lab, host) == before
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    for secret in secrets_of(probe_lab, host):
        assert secret not in written
    derived = json.loads((out / "derived.json").read_text())
    assert "error" not in derived and derived["platform"] == PERSONALITIES[host]
    assert rederive(out) == derived
    states = derived["states"]
    assert states and all("error" not in s for s in states.values()), states
    nics = {nic["name"] for nic in derived["facts"]["interfaces"]}
    assert all(set(s) >= nics - {"lo"} or set(s) >= nics for s in states.values())
    readme = (out / "README.md").read_text()
    assert "SHA256:" in readme and PERSONALITIES[host] in readme
    if host == "syno":  # logged in as admin: sudo's rules read without a password prompt
        assert (out / "sudo" / "sudo-n-l.txt").exists()
    if os.environ.get("NASPLAN_RECORD_PROBES"):
        target = RECORDED / f"lab-{PERSONALITIES[host]}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(out, target)


def test_masked_probe_holds_no_lab_address(probe_lab: LabState, tmp_path: Path) -> None:
    out = tmp_path / "masked"
    proc = run_probe(probe_lab, "deb", out, "--mask-addresses")
    assert proc.returncode == 0, proc.stderr
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert PREFIX not in written
    derived = json.loads((out / "derived.json").read_text())
    assert rederive(out) == derived
    lan = [a for nic in derived["facts"]["interfaces"] for a in nic["addresses"]]
    assert any(a.startswith("10.") for a in lan), lan
    # what identifies the machine: the kernel's boot id (lab hosts share this machine's) and
    # the host key's fingerprint, masked as the addresses are
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert boot_id not in written and derived["facts"]["boot_id"].startswith("00000000-")
    assert re.search(r"SHA256:(?!masked)[A-Za-z0-9+/]{20,}", written) is None
    assert "SHA256:masked" in (out / "README.md").read_text()
