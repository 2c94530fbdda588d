"""Before/after in the lab: the same plan over a p2p link shaped to 1G, then to 10G, compared."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.lab import LabState
from nasplan.report import mermaid

ROOT = Path(__file__).resolve().parents[2]

LAB = {
    "name": "cmp-lab",
    "lan": {"prefix": "198.18.36.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "1G",
            "mtu": 1500,
            "a": {"host": "nas", "interface": "eth1", "address": "198.18.37.1/30"},
            "b": {"host": "ws", "interface": "eth1", "address": "198.18.37.2/30"},
        }
    ],
}

PLAN = {
    "name": "cmp-upgrade",
    "description": "ws to nas over the p2p link, before and after it was upgraded.",
    "tests": [
        {
            "id": "p2p-single",
            "name": "P2P, one stream",
            "kind": "iperf3",
            "server": "nas",
            "client": "ws",
            "target": "nas.p2p",
            "duration_s": 1,
            "repetitions": 5,  # the fewest per side from which compare gives a verdict
        }
    ],
}


def nasplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def apply(state: LabState, plan_file: Path, out: Path) -> None:
    proc = nasplan("apply", str(plan_file), "-i", str(state.inventory_path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr


def test_ten_gig_after_one_gig_is_better_by_a_sane_ratio(
    make_lab: Callable[[dict[str, Any]], LabState], tmp_path: Path
) -> None:
    state = make_lab(LAB)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump({**PLAN, "inventory": str(state.inventory_path)}))
    apply(state, plan_file, tmp_path / "run-1g")
    lab.reshape(state.state_dir, "p2p", "10G")
    apply(state, plan_file, tmp_path / "run-10g")

    base = ["compare", str(tmp_path / "run-1g"), str(tmp_path / "run-10g")]
    labels = ["--label", "link=1G", "--label", "link=10G"]
    as_json = nasplan(*base, *labels, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    comparison = json.loads(as_json.stdout)
    versus = comparison["tests"][0]["versus_first"][1]
    assert versus["verdict"] == "better", versus
    assert 3 <= versus["ratio"] <= 11, versus
    changed = {c["aspect"]: c["values"] for c in comparison["environment"]["changed"]}
    assert changed["nas.p2p: nominal speed"] == ["1 Gbit/s", "10 Gbit/s"]
    assert changed["path of p2p-single"][1].startswith("10 Gbit/s, MTU 1500")

    out = tmp_path / "compare.md"
    as_markdown = nasplan(*base, *labels, "--out", str(out))
    assert as_markdown.returncode == 0, as_markdown.stderr
    text = out.read_text()
    assert "Headline: p2p-single is **better** in link=10G" in text
    assert all(mermaid.validate(b) == [] for b in mermaid.blocks(text))
    report = (tmp_path / "run-10g" / "report.md").read_text()
    assert all(mermaid.validate(b) == [] for b in mermaid.blocks(report))
    assert "p2p: 10 Gbit/s · MTU 1500" in report
