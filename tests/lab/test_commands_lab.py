"""Every command kept, for real: the iperf3 server and client commands a repetition kept in
run.json (``repetitions[].commands``), run again by hand on the same hosts, give the same rate
within noise (the lab's link is shaped, so the rate is the link's); a ping sweep's too."""

from __future__ import annotations

import json
import shlex
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
                   "repetitions": 2, "duration_s": 2},
                  {"kind": "ping-sweep", "id": "mtu", "server": "cmnas", "client": "cmws",
                   "sizes_bytes": [1500, 1600], "count": 2, "interval_s": 0.2}],
    }  # fmt: skip
    plan_path = tmp_path / "cmds.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    outcome = apply(RunRequest(load_plan(plan_path), out=tmp_path / "run"), PlainProgress())
    assert outcome.exit_code == EXIT_OK
    run = load_run(tmp_path / "run")
    test, sweep = run["tests"]
    rep = test["repetitions"][0]
    served, kept = rep["commands"]
    assert kept["host"] == "cmws" and Path(kept["argv"][0]).name == "iperf3"
    assert kept["argv"][1:3] == ["-J", "-c"]
    port = kept["argv"][kept["argv"].index("-p") + 1]
    # its one-off server on the other host, first, on the client's port
    assert served["host"] == "cmnas" and served["server"] is True
    assert served["argv"][1:5] == ["-s", "-1", "-p", port]
    # the report lists them whole, as run.json keeps them
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "cmws: " + " ".join(kept["argv"]) in report
    assert "cmnas: " + " ".join(served["argv"]) + " (server, started first)" in report
    # the ping sweep's: one a size, each in the report
    pings = sweep["repetitions"][0]["commands"]
    assert [p["argv"][p["argv"].index("-s") + 1] for p in pings] == ["1472", "1572"]
    assert all("cmws: " + " ".join(p["argv"]) in report for p in pings)

    hosts = load_inventory(lab.inventory_path).hosts
    server, client = connect(hosts["cmnas"]), connect(hosts["cmws"])
    try:
        # the kept server command as it is (a launched one says when it listens)
        launched = server.start_until(
            shlex.join(served["argv"]), ["Server listening"], timeout_s=15
        )
        assert launched is not None and launched.ended is None, launched
        again = client.run(kept["argv"], timeout_s=30)
        launched.close()
        pinged = client.run(pings[0]["argv"], timeout_s=30)
    finally:
        client.close()
        server.close()
    assert again.ok, again.stderr
    by_hand = json.loads(again.stdout)["end"]["sum_received"]["bits_per_second"]
    measured = rep["bits_per_second"]
    assert abs(by_hand - measured) <= 0.1 * measured, (by_hand, measured)
    assert 0.8 * 300e6 < by_hand < 300e6  # the shaped link's rate, not something else
    # the sweep's 1500-byte DF pings again: answered, as in the run
    assert pinged.ok and " 0% packet loss" in pinged.stdout, pinged.stdout
    assert sweep["repetitions"][0]["sweep"][0]["received"] == 2
