"""report.md's Diagnosis: run.json's findings, or a run's own computed when it has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasplan.report import render_report
from nasplan.results import load_run

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


@pytest.fixture()
def run() -> dict[str, Any]:
    return load_run(SAMPLE)


def _diagnosis(report: str) -> str:
    return report.split("## Diagnosis\n", 1)[1].split("\n## ", 1)[0].strip()


def test_a_run_with_no_finding_says_no_limit_was_found_beyond_the_link(
    run: dict[str, Any],
) -> None:
    run["diagnosis"] = []
    assert _diagnosis(render_report(run)) == "No limit found beyond the link."


def test_each_finding_of_run_json_is_a_line_with_its_cause_and_test_or_host(
    run: dict[str, Any],
) -> None:
    run["diagnosis"] = [
        {"cause": "routed-path", "test": "lan", "host": "ws", "text": "ws eth0 reaches ...",
         "evidence": {}},
        {"cause": "usb-bus", "test": None, "host": "nas", "text": "nas eth1 is a USB NIC ...",
         "evidence": {}},
    ]  # fmt: skip
    assert _diagnosis(render_report(run)).splitlines() == [
        "- **routed-path** (lan): ws eth0 reaches ...",
        "- **usb-bus** (nas): nas eth1 is a USB NIC ...",
    ]


def test_a_finding_computed_for_an_old_run_names_what_its_facts_say(
    run: dict[str, Any],
) -> None:
    """No ``diagnosis`` key: the report diagnoses run.json itself (a NIC slower than the
    inventory's speed, from the facts the run kept)."""
    assert "diagnosis" not in run  # a run from before there was one
    host = next(h for h in run["hosts"].values() if h["facts"] and h["interfaces"])
    declared = next(iter(host["interfaces"].values()))
    declared["speed_bits_per_second"] = 10_000_000_000
    nic = next(n for n in host["facts"]["interfaces"] if n["name"] == declared["name"])
    nic["speed_mbps"] = 1000
    line = _diagnosis(render_report(run))
    assert f"{declared['name']} negotiated 1000 Mb/s, inventory says 10 Gbit/s" in line
