"""Every command kept, for real: the iperf3 client command a repetition kept in run.json
(``repetitions[].commands``), run again by hand on the same hosts against a one-off server,
gives the same rate within noise (the lab's link is shaped, so the rate is the link's)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.input.inventory import load_inventory
from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.progress import PlainProgress
from nasplan.remote.ssh import connect
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

LAB = {
    "name": "cmds-lab",
    "lan": {"prefix": "198.19.218.0/24", "rate": "300M"},
    "hosts": {"cmnas": {}, "cmws": {}},
}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def test_a_kept_iperf3_command_run_again_by_hand_gives_the_same_rate(
    lab: LabState, tmp_path: Path
) -> None:
    plan = {
        "name": "cmds",
        "inventory": str(lab.inventory_path),
        "tests": [{"kind": "iperf3", "id": "up", "server": "cmnas", "client": "cmws",
                   "repetitions": 2, "duration_s": 2}],
    }  # fmt: skip
    plan_path = tmp_path / "cmds.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    outcome = apply(RunRequest(load_plan(plan_path), out=tmp_path / "run"), PlainProgress())
    assert outcome.exit_code == EXIT_OK
    run = load_run(tmp_path / "run")
    (test,) = run["tests"]
    rep = test["repetitions"][0]
    (kept,) = rep["commands"]
    assert kept["host"] == "cmws" and Path(kept["argv"][0]).name == "iperf3"
    assert kept["argv"][1:3] == ["-J", "-c"]
    port = kept["argv"][kept["argv"].index("-p") + 1]
    # the report lists it whole, as run.json keeps it
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "cmws: " + " ".join(kept["argv"]) in report

    hosts = load_inventory(lab.inventory_path).hosts
    server, client = connect(hosts["cmnas"]), connect(hosts["cmws"])
    try:
        launched = server.start_until(
            f"iperf3 -s -1 -p {port} --forceflush", ["Server listening"], timeout_s=15
        )
        assert launched is not None and launched.ended is None, launched
        again = client.run(kept["argv"], timeout_s=30)
        launched.close()
    finally:
        client.close()
        server.close()
    assert again.ok, again.stderr
    by_hand = json.loads(again.stdout)["end"]["sum_received"]["bits_per_second"]
    measured = rep["bits_per_second"]
    assert abs(by_hand - measured) <= 0.1 * measured, (by_hand, measured)
    assert 0.8 * 300e6 < by_hand < 300e6  # the shaped link's rate, not something else
