"""In the lab: the report's Diagnosis names where the speed drops, with its numbers.

A workstation reaches the NAS's second port through a router host (a lab host that forwards
between two links): the path is routed (the router's address, one hop by the reply's TTL, the
trace), and the TCP maximum is the slower end's, not the NAS's. A NAS port that negotiated
1 Gbit/s on a 2.5G link is named with both speeds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[2]
ROUTED_LAB = {
    "name": "dg-route",
    "lan": {"prefix": "198.19.230.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"routes": [{"to": "198.19.231.0/30", "via": "198.19.231.5"}]},
        "rt": {"forward": True},
        "ws": {"routes": [{"to": "198.19.231.4/30", "via": "198.19.231.2"}]},
    },
    "links": [
        {
            "name": "front",
            "rate": "1G",
            "a": {"host": "ws", "interface": "dgf0", "address": "198.19.231.1/30"},
            "b": {"host": "rt", "interface": "dgf1", "address": "198.19.231.2/30"},
        },
        {
            "name": "back",
            "rate": "2.5G",
            "a": {"host": "rt", "interface": "dgb0", "address": "198.19.231.5/30"},
            "b": {"host": "nas", "interface": "dgb1", "address": "198.19.231.6/30"},
        },
    ],
}
# The NAS's replies to the workstation's front address take a side cable straight back, while
# the workstation's traffic goes through the router: an asymmetric path.
ASYMMETRIC_LAB = {
    "name": "dg-asym",
    "lan": {"prefix": "198.19.234.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"routes": [{"to": "198.19.235.0/30", "via": "198.19.235.9"}]},
        "rt": {"forward": True},
        "ws": {"routes": [{"to": "198.19.235.4/30", "via": "198.19.235.2"}]},
    },
    "links": [
        {"name": "front", "rate": "1G",
         "a": {"host": "ws", "interface": "dga0", "address": "198.19.235.1/30"},
         "b": {"host": "rt", "interface": "dga1", "address": "198.19.235.2/30"}},
        {"name": "back", "rate": "1G",
         "a": {"host": "rt", "interface": "dga2", "address": "198.19.235.5/30"},
         "b": {"host": "nas", "interface": "dga3", "address": "198.19.235.6/30"}},
        {"name": "side", "rate": "1G",
         "a": {"host": "ws", "interface": "dga4", "address": "198.19.235.9/30"},
         "b": {"host": "nas", "interface": "dga5", "address": "198.19.235.10/30"}},
    ],
}  # fmt: skip
SLOW_LAB = {
    "name": "dg-nego",
    "lan": {"prefix": "198.19.232.0/24", "rate": "1G"},
    "hosts": {"nas": {}, "ws": {}},
    "links": [
        {
            "name": "p2p",
            "rate": "2.5G",
            "a": {"host": "nas", "interface": "dgn1", "address": "198.19.233.1/30",
                  "negotiated": "1G"},
            "b": {"host": "ws", "interface": "dgn2", "address": "198.19.233.2/30"},
        }
    ],
}  # fmt: skip


def _apply(state: Any, work: Path, name: str, target: str) -> dict[str, Any]:
    plan = {
        "name": name,
        "inventory": str(state.inventory_path),
        "tests": [
            {"id": "to-nas", "kind": "iperf3", "server": "nas", "client": "ws",
             "target": target, "duration_s": 1, "repetitions": 1},
        ],
    }  # fmt: skip
    plan_file = work / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(work / "run")],
        capture_output=True, text=True, cwd=ROOT, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = load_run(work / "run")  # validated against the run schema
    return {"run": run, "report": (work / "run" / "report.md").read_text()}


@pytest.fixture(scope="module")
def routed(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with running_lab(ROUTED_LAB) as state:
        return _apply(state, tmp_path_factory.mktemp("dg-route"), "dg-route", "nas.back")


def _diagnosis(report: str) -> str:
    return report.split("## Diagnosis", 1)[1].split("\n## ", 1)[0]


def test_a_routed_path_is_named_with_its_router_hops_and_interfaces(
    routed: dict[str, Any],
) -> None:
    diagnosis = _diagnosis(routed["report"])
    assert "**routed-path** (to-nas)" in diagnosis
    line = next(x for x in diagnosis.splitlines() if "routed-path" in x)
    assert "ws dgf0 reaches 198.19.231.6 (nas dgb1) through a router" in line
    assert "gateway 198.19.231.2 (rt dgf1)" in line
    assert "1 router hop by the reply's TTL 63" in line
    assert "tracepath 198.19.231.2 → 198.19.231.6" in line
    # the client's end is known (never "?"), and the report's path says so
    assert "Path: ws dgf0 → nas dgb1, 1 Gbit/s" in routed["report"]
    assert "?" not in line
    # the warning too
    warnings = routed["report"].split("## Warnings", 1)[1].split("\n## ", 1)[0]
    assert "to-nas: ws dgf0 reaches 198.19.231.6" in warnings


def test_the_tcp_maximum_is_the_slower_links_not_the_servers(routed: dict[str, Any]) -> None:
    test = routed["run"]["tests"][0]
    path = test["path"]
    # the NAS's port is 2.5G, the workstation's and the router's front port 1G
    assert path["speed_bits_per_second"] == 1_000_000_000
    assert path["client_interface"] == "dgf0" and path["server_interface"] == "dgb1"
    route = path["route"]
    assert route["to"]["gateway"] == "198.19.231.2" and route["to"]["hops"] == 1
    assert route["back"]["interface"] == "dgb1" and route["back"]["gateway"] == "198.19.231.5"
    assert [link["interface"] for link in route["links"]] == ["dgf1", "dgb0"]
    # run.json carries the same diagnosis as the report; the path is not asymmetric, and no
    # NIC or bus is named (the other modules' findings, the CPU's, are not this test's)
    causes = [f["cause"] for f in routed["run"]["diagnosis"]]
    mine = [c for c in causes if c in ("routed-path", "asymmetric-path", "nic-speed", "usb-bus")]
    assert mine == ["routed-path"], json.dumps(routed["run"]["diagnosis"], indent=1)
    for found in routed["run"]["diagnosis"]:
        assert f"**{found['cause']}**" in _diagnosis(routed["report"])


def _estimates(state: Any, work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--list-tests``' and ``--check``'s estimates of a 256 MiB rsync each way over the p2p
    link (--check connects and reads the facts; whatever it finds missing, it estimates)."""
    plan = {
        "name": "dg-nego-est",
        "inventory": str(state.inventory_path),
        "tests": [{"id": "copy", "kind": "transfer", "method": "rsync", "server": "nas",
                   "client": "ws", "target": "nas.p2p", "path": "/tmp", "size": "256MiB",
                   "repetitions": 1}],
    }  # fmt: skip
    plan_file = work / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
    found = []
    for how in ("--list-tests", "--check"):
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), how, "--format", "json"],
            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
        )  # fmt: skip
        assert proc.stdout.strip(), proc.stderr
        found.append(json.loads(proc.stdout)["estimate"])
    return found[0], found[1]


def test_a_nic_that_negotiated_less_than_the_inventory_says_is_named(
    running_lab: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with running_lab(SLOW_LAB) as state:
        # the host sees the negotiated speed; the machine's own sysfs is untouched
        seen = subprocess.run(
            ["nsenter", f"--target={state.hosts['nas'].sshd_pid}", "--mount", "--net", "--",
             "cat", "/sys/class/net/dgn1/speed"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert seen == "1000"
        done = _apply(state, tmp_path_factory.mktemp("dg-nego"), "dg-nego", "nas.p2p")
        listed, checked = _estimates(state, tmp_path_factory.mktemp("dg-nego-est"))
    # --list-tests has the inventory's 2.5G; --check the 1G the NAS's port negotiated: a copy of
    # 256 MiB each way takes longer at 1G, and the estimate says where its speeds come from
    assert any("link speeds: the inventory's" in a for a in listed["assumptions"])
    assert (
        "interface speeds lowered to what the hosts negotiated, where less (their facts)"
        in (checked["assumptions"])
    )
    at_1g, at_2g5 = 2 * 256 * 2**20 / (1e9 * 0.94 / 8), 2 * 256 * 2**20 / (2.5e9 * 0.94 / 8)
    assert checked["seconds"] - listed["seconds"] == pytest.approx(at_1g - at_2g5, abs=0.2)
    diagnosis = _diagnosis(done["report"])
    assert "**nic-speed** (to-nas)" in diagnosis
    assert "nas dgn1 negotiated 1000 Mb/s, inventory says 2.5 Gbit/s" in diagnosis
    path = done["run"]["tests"][0]["path"]
    assert path["speed_bits_per_second"] == 1_000_000_000  # the negotiated speed, not 2.5G
    median = done["run"]["tests"][0]["summary"]["median"]
    assert median < 1_000_000_000  # the link was shaped to what the NIC negotiated


def test_a_reply_that_leaves_by_another_nic_is_an_asymmetric_path(
    running_lab: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with running_lab(ASYMMETRIC_LAB) as state:
        done = _apply(state, tmp_path_factory.mktemp("dg-asym"), "dg-asym", "nas.back")
    diagnosis = _diagnosis(done["report"])
    line = next(x for x in diagnosis.splitlines() if "asymmetric-path" in x)
    assert line == (
        "- **asymmetric-path** (to-nas): nas's replies to 198.19.235.1 leave by dga5 via "
        "198.19.235.9, while ws's traffic arrives on dga3 through 198.19.235.2: the path is "
        "asymmetric."
    )
    assert "**routed-path** (to-nas)" in diagnosis
    back = done["run"]["tests"][0]["path"]["route"]["back"]
    assert (back["interface"], back["gateway"]) == ("dga5", "198.19.235.9")
